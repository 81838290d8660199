//! Published prices the simulations use (us-east-1, on-demand, as listed by AWS in 2025), and
//! the Druid cluster the same data would need: historicals holding the segments on local NVMe
//! with replication 2, and one broker.
//!
//! - Lambda (aws.amazon.com/lambda/pricing): arm64 $0.0000133334 per GB-second, $0.20 per
//!   million requests; a custom runtime's init is billed as duration.
//! - S3 Standard (aws.amazon.com/s3/pricing): GET $0.0004 and PUT $0.005 per 1,000 requests.
//! - DynamoDB on demand (aws.amazon.com/dynamodb/pricing/on-demand): $0.125 per million read
//!   request units and $0.625 per million write request units (since November 2024); a
//!   strongly consistent read of 4 KB is one unit.
//! - Athena (aws.amazon.com/athena/pricing): $5 per TB scanned, 10 MB minimum per query.
//! - EC2 Linux on demand (aws.amazon.com/ec2/pricing/on-demand): the instances below.

/// Lambda arm64, per GB-second.
pub const LAMBDA_GB_SECOND: f64 = 0.000_013_333_4;
/// Lambda, per request.
pub const LAMBDA_REQUEST: f64 = 0.20 / 1e6;
/// S3 GET, per request.
pub const S3_GET: f64 = 0.0004 / 1e3;
/// S3 PUT, per request.
pub const S3_PUT: f64 = 0.005 / 1e3;
/// DynamoDB on demand, per write request unit (since November 2024).
pub const DYNAMODB_WRITE_UNIT: f64 = 0.625 / 1e6;
/// DynamoDB on demand, per read request unit.
pub const DYNAMODB_READ_UNIT: f64 = 0.125 / 1e6;
/// Bytes of one strongly consistent read unit.
pub const READ_UNIT_BYTES: f64 = 4096.0;
/// Athena, per byte scanned (a TB taken as 2^40 bytes, as AWS bills storage).
pub const ATHENA_BYTE: f64 = 5.0 / 1_099_511_627_776.0;
/// Athena's minimum bytes per query.
pub const ATHENA_MIN_BYTES: f64 = 10.0 * 1024.0 * 1024.0;
/// Hours in a month, as AWS's calculator counts them.
pub const HOURS_PER_MONTH: f64 = 730.0;

/// An EC2 instance type a Druid process may run on.
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct Instance {
    /// Type name.
    pub name: &'static str,
    /// vCPUs.
    pub vcpu: f64,
    /// Local NVMe, GB.
    pub nvme_gb: f64,
    /// Dollars per hour.
    pub hourly: f64,
    /// Graviton (arm64): its cores scan at the model's arm64 share of the benchmark's x86 rate.
    pub arm64: bool,
}

impl Instance {
    /// Rows per second one of its vCPUs scans, given the x86 rate.
    pub fn core_rate(&self, x86_rate: f64, arm_factor: f64) -> f64 {
        if self.arm64 {
            x86_rate * arm_factor
        } else {
            x86_rate
        }
    }
}

/// Storage-optimised types for historicals (local NVMe).
pub const HISTORICALS: [Instance; 5] = [
    Instance { name: "i4i.xlarge", vcpu: 4.0, nvme_gb: 937.0, hourly: 0.343, arm64: false },
    Instance { name: "i4i.2xlarge", vcpu: 8.0, nvme_gb: 1875.0, hourly: 0.686, arm64: false },
    Instance { name: "i4i.4xlarge", vcpu: 16.0, nvme_gb: 3750.0, hourly: 1.373, arm64: false },
    Instance { name: "i4i.8xlarge", vcpu: 32.0, nvme_gb: 7500.0, hourly: 2.746, arm64: false },
    Instance { name: "r6gd.2xlarge", vcpu: 8.0, nvme_gb: 474.0, hourly: 0.4608, arm64: true },
];

/// The Druid broker's instance (the project's ingestion comparison uses the same type).
pub const DRUID_BROKER: Instance =
    Instance { name: "m5.2xlarge", vcpu: 8.0, nvme_gb: 0.0, hourly: 0.384, arm64: false };

/// Segment replicas Druid keeps (its tutorial's replication, and what survives one historical).
pub const DRUID_REPLICAS: f64 = 2.0;
/// Share of a historical's disk its segments may fill (`maxSize` below the disk).
pub const DRUID_DISK_FILL: f64 = 0.8;

/// A Druid cluster sized to hold the segments of a datasource.
#[derive(Debug, Clone, serde::Serialize)]
pub struct DruidCluster {
    /// Historical type.
    pub instance: Instance,
    /// Historicals.
    pub historicals: f64,
    /// Dollars per month, historicals and the broker.
    pub monthly: f64,
}

impl DruidCluster {
    /// The cheapest cluster of one historical type that holds `segment_bytes` with
    /// [`DRUID_REPLICAS`] on disks filled to [`DRUID_DISK_FILL`], at least one historical per
    /// replica.
    pub fn sized_for(segment_bytes: f64) -> Self {
        let need_gb = segment_bytes * DRUID_REPLICAS / 1e9;
        HISTORICALS
            .iter()
            .map(|i| {
                let n = (need_gb / (i.nvme_gb * DRUID_DISK_FILL)).ceil().max(DRUID_REPLICAS);
                let monthly = (n * i.hourly + DRUID_BROKER.hourly) * HOURS_PER_MONTH;
                DruidCluster { instance: *i, historicals: n, monthly }
            })
            .min_by(|a, b| a.monthly.total_cmp(&b.monthly))
            .unwrap_or(DruidCluster { instance: HISTORICALS[0], historicals: 0.0, monthly: 0.0 })
    }

    /// The cheapest cluster of one historical type that holds `segment_bytes` as
    /// [`sized_for`](Self::sized_for) does and has the vCPUs to scan `rows` in `secs` at
    /// `rate` rows per second per x86 vCPU (`arm_factor` of it on Graviton).
    pub fn sized_for_latency(segment_bytes: f64, rows: f64, rate: f64, arm_factor: f64, secs: f64) -> Self {
        let need_gb = segment_bytes * DRUID_REPLICAS / 1e9;
        HISTORICALS
            .iter()
            .map(|i| {
                let vcpus = rows / (i.core_rate(rate, arm_factor) * secs.max(f64::EPSILON));
                let by_disk = (need_gb / (i.nvme_gb * DRUID_DISK_FILL)).ceil();
                let n = by_disk.max((vcpus / i.vcpu).ceil()).max(DRUID_REPLICAS);
                let monthly = (n * i.hourly + DRUID_BROKER.hourly) * HOURS_PER_MONTH;
                DruidCluster { instance: *i, historicals: n, monthly }
            })
            .min_by(|a, b| a.monthly.total_cmp(&b.monthly))
            .unwrap_or(DruidCluster { instance: HISTORICALS[0], historicals: 0.0, monthly: 0.0 })
    }

    /// Dollars per query at `per_minute` queries a minute, all month.
    pub fn per_query(&self, per_minute: f64) -> f64 {
        self.monthly / (HOURS_PER_MONTH * 60.0 * per_minute)
    }

    /// Seconds its historicals take to scan `rows` on every vCPU at `rate` rows per second
    /// per x86 vCPU (`arm_factor` of it on Graviton).
    pub fn scan_secs(&self, rows: f64, rate: f64, arm_factor: f64) -> f64 {
        rows / (self.historicals * self.instance.vcpu * self.instance.core_rate(rate, arm_factor))
    }
}

/// Athena's price for scanning `bytes`.
pub fn athena(bytes: f64) -> f64 {
    bytes.max(ATHENA_MIN_BYTES) * ATHENA_BYTE
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn druid_keeps_two_replicas_on_separate_historicals() {
        let small = DruidCluster::sized_for(1e9);
        assert_eq!(small.historicals, 2.0, "{small:?}");
        assert_eq!(small.instance.name, "i4i.xlarge");
        let big = DruidCluster::sized_for(3.5e12);
        assert!(big.historicals * big.instance.nvme_gb * DRUID_DISK_FILL >= 7_000.0, "{big:?}");
        assert!(big.monthly > small.monthly);
        assert!((small.per_query(1.0) - small.monthly / 43_800.0).abs() < 1e-12);
        let fast = DruidCluster::sized_for_latency(3.5e11, 1e10, 27e6, 0.75, 2.0);
        assert!(fast.historicals * fast.instance.vcpu >= 1e10 / 27e6 / 2.0, "{fast:?}");
        assert!(fast.scan_secs(1e10, 27e6, 0.75) <= 2.0 && fast.monthly > DruidCluster::sized_for(3.5e11).monthly);
    }

    #[test]
    fn athena_charges_ten_megabytes_at_least() {
        assert_eq!(athena(1.0), athena(ATHENA_MIN_BYTES));
        assert!((athena(1_099_511_627_776.0) - 5.0).abs() < 1e-9);
    }
}
