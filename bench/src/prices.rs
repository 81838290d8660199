//! Public AWS prices the cost model uses: region us-east-1 (N. Virginia), on-demand, as
//! published on AWS's pricing pages in November 2025 (Lambda at arm64, the template's default
//! architecture). Change them here; the cost tables of `docs/benchmarks.md` are recomputed
//! from them by tests.

/// Where and when the prices were read.
pub const SOURCE: &str = "us-east-1, on-demand list prices as published by AWS in November 2025, Lambda on arm64";

/// Lambda, x86_64: per GB-second of duration.
pub const LAMBDA_X86_64_GB_SECOND: f64 = 0.000_016_666_7;
/// Lambda, arm64 (Graviton): per GB-second of duration, 20% below x86_64.
pub const LAMBDA_ARM64_GB_SECOND: f64 = 0.000_013_333_4;
/// Lambda at the template's default architecture (arm64), per GB-second. The model's
/// per-row seconds are measured on x86_64: Graviton's speed is not measured here.
pub const LAMBDA_GB_SECOND: f64 = LAMBDA_ARM64_GB_SECOND;
/// Lambda: per million requests.
pub const LAMBDA_MILLION_REQUESTS: f64 = 0.20;
/// Lambda allocates one vCPU per 1,769 MB of memory.
pub const LAMBDA_MB_PER_VCPU: f64 = 1769.0;
/// DynamoDB on-demand: per million write request units.
pub const DYNAMODB_MILLION_WRITES: f64 = 0.625;
/// DynamoDB on-demand: per million read request units.
pub const DYNAMODB_MILLION_READS: f64 = 0.125;
/// S3 Standard: per 1,000 PUT, COPY, POST or LIST requests.
pub const S3_THOUSAND_PUTS: f64 = 0.005;
/// S3 Standard: per 1,000 GET and other requests.
pub const S3_THOUSAND_GETS: f64 = 0.0004;
/// EC2 m5.2xlarge (8 vCPU, 32 GiB), Linux: per hour.
pub const M5_2XLARGE_HOUR: f64 = 0.384;
/// EC2 i3.4xlarge (16 vCPU, 122 GiB, 2 x 1.9 TB NVMe), Linux: per hour.
pub const I3_4XLARGE_HOUR: f64 = 1.248;
/// RDS for PostgreSQL db.t3.medium, single-AZ: per hour.
pub const RDS_T3_MEDIUM_HOUR: f64 = 0.072;
/// The same, Multi-AZ: twice single-AZ (an assumption, `docs/druid-cluster.md`).
pub const RDS_T3_MEDIUM_MULTI_AZ_HOUR: f64 = 2.0 * RDS_T3_MEDIUM_HOUR;
/// S3 Standard storage, first 50 TB: per GB-month.
pub const S3_GB_MONTH: f64 = 0.023;
/// Hours in a month, as AWS's calculator counts them.
pub const HOURS_PER_MONTH: f64 = 730.0;
