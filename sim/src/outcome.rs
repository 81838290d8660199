//! What a simulation found: samples of the lag over time, throughput and freshness, and how
//! busy each shared resource was.

/// A sample taken at each supervisor pass (`pass_secs` > 0) and every 5 s on AWS.
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct Sample {
    /// Seconds since the start.
    pub t: f64,
    /// Records behind the high watermarks.
    pub lag: f64,
    /// Duration of the pass that starts here.
    pub pass_secs: f64,
    /// Lambda executions running.
    pub running: usize,
}

/// How busy each shared resource was: 1.0 is saturated.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Utilisation {
    /// Longest supervisor pass over the period.
    pub supervisor_pass: f64,
    /// Lambda executions over the concurrency limit, on average while producing (the peak is
    /// in `peak_running`).
    pub lambda_concurrency: f64,
    /// DynamoDB write units per second over the per-partition-key limit (mean over production).
    pub dynamodb_partition: f64,
    /// S3 PUTs per second over the per-prefix limit (mean over production).
    pub s3_prefix: f64,
    /// Longest task run over Lambda's time limit.
    pub task_time_limit: f64,
}

/// What a simulation found.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Outcome {
    /// Samples at each pass (and every 5 s on AWS).
    pub samples: Vec<Sample>,
    /// Rows published.
    pub published: f64,
    /// Time of the last publish.
    pub last_publish: f64,
    /// Rows/s published, first produce to last publish.
    pub throughput: f64,
    /// Mean lag while producing.
    pub mean_lag: f64,
    /// Mean seconds from a row's produce to the publish that makes it queryable.
    pub mean_freshness: f64,
    /// Worst lag.
    pub max_lag: f64,
    /// Mean lag in the last quarter of production over the second quarter.
    pub lag_growth: f64,
    /// Cold starts.
    pub cold_starts: u64,
    /// Most Lambda executions at once.
    pub peak_running: usize,
    /// Seconds jobs waited for Lambda concurrency.
    pub throttled_secs: f64,
    /// Seconds of DynamoDB throttling.
    pub dynamodb_throttled_secs: f64,
    /// Mergers that found their predecessor unpublished.
    pub merges_waiting: u64,
    /// Tasks planned.
    pub tasks: usize,
    /// Resource utilisation.
    pub utilisation: Utilisation,
    /// The autoscaler's `taskCount` changes.
    pub scaling: Vec<crate::autoscale::ScaleEvent>,
    /// What the run spent.
    pub spend: Spend,
}

/// What a run spent at list prices (`query::prices`, arm64 Lambda): indexer and merger
/// duration at 1,024 MB, the supervisor's at 512 MB, requests, DynamoDB writes, S3 PUTs.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Spend {
    /// Lambda GB-seconds.
    pub lambda_gb_secs: f64,
    /// Lambda invocations.
    pub invocations: u64,
    /// DynamoDB write units.
    pub write_units: f64,
    /// S3 PUTs.
    pub s3_puts: f64,
    /// Dollars.
    pub dollars: f64,
}

impl Spend {
    /// The spend of these amounts.
    pub fn of(lambda_gb_secs: f64, invocations: u64, write_units: f64, s3_puts: f64) -> Self {
        use crate::prices;
        let dollars = lambda_gb_secs * prices::LAMBDA_GB_SECOND
            + invocations as f64 * prices::LAMBDA_REQUEST
            + write_units * prices::DYNAMODB_WRITE_UNIT
            + s3_puts * prices::S3_PUT;
        Spend { lambda_gb_secs, invocations, write_units, s3_puts, dollars }
    }
}

impl Outcome {
    /// The most loaded resource and its utilisation.
    pub fn bottleneck(&self) -> (&'static str, f64) {
        let u = &self.utilisation;
        [
            ("supervisor pass time vs period", u.supervisor_pass),
            ("Lambda concurrency", u.lambda_concurrency),
            ("DynamoDB writes on the busiest partition key", u.dynamodb_partition),
            ("S3 PUTs per prefix", u.s3_prefix),
            ("Lambda time limit per task", u.task_time_limit),
        ]
        .into_iter()
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .unwrap_or(("none", 0.0))
    }
}
