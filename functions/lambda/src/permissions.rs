//! What each function needs from its deployment: the binary, the environment variables it
//! reads, the IAM actions its AWS calls use, whether it reads Kafka and which functions it
//! invokes. `template.yaml` must grant exactly this; `tests/template.rs` checks it, and checks
//! these lists against the SDK calls in the code.

/// One function's needs.
#[derive(Debug, Clone, Copy)]
pub struct FunctionSpec {
    /// The function's logical id in the template.
    pub resource: &'static str,
    /// The cargo binary (`BuildProperties.Binary` in the template).
    pub binary: &'static str,
    /// Environment variables the function reads.
    pub env: &'static [&'static str],
    /// IAM actions its calls use.
    pub actions: &'static [&'static str],
    /// Whether it connects to Kafka, or checks specs against the deployment's Kafka connection
    /// (and so reads the Kafka secret when one is configured).
    pub reads_kafka: bool,
    /// The Amazon MSK IAM actions its Kafka requests need, granted when the template names an
    /// MSK cluster (`MskClusterArn`): on that cluster, and on the topics and consumer groups
    /// the template's patterns name.
    pub kafka_cluster: &'static [&'static str],
    /// Binaries of the functions it invokes.
    pub invokes: &'static [&'static str],
}

const STORES: [&str; 3] = ["SLUICE_METADATA", "SLUICE_STORAGE", "SLUICE_LOG"];

/// The supervisor: watermarks from Kafka, planning and cleanup in the stores, invokes.
pub const SUPERVISOR: FunctionSpec = FunctionSpec {
    resource: "SupervisorFunction",
    binary: "supervisor",
    env: &[
        STORES[0],
        STORES[1],
        STORES[2],
        "SLUICE_INDEXER_FUNCTION",
        "SLUICE_MERGER_FUNCTION",
        "SLUICE_KAFKA_SECRET_ARN",
        "SLUICE_KAFKA_BOOTSTRAP_SERVERS",
        // Batch splits handed over at once across the deployment (`BatchMaxConcurrentSplits`),
        // within the indexers' reservation (`IndexerReservedConcurrency`).
        "SLUICE_BATCH_MAX_SPLITS",
        "SLUICE_INDEXER_RESERVED_CONCURRENCY",
    ],
    actions: &[
        "dynamodb:DescribeTable",
        "dynamodb:GetItem",
        "dynamodb:Query",
        "dynamodb:UpdateItem",
        "dynamodb:DeleteItem",
        "dynamodb:TransactWriteItems",
        "s3:ListBucket",
        "s3:DeleteObject",
        "lambda:InvokeFunction",
        "secretsmanager:GetSecretValue",
    ],
    reads_kafka: true,
    // Metadata and watermarks (DescribeTopic), offsets committed to each datasource's group.
    kafka_cluster: &[
        "kafka-cluster:Connect",
        "kafka-cluster:DescribeCluster",
        "kafka-cluster:DescribeTopic",
        "kafka-cluster:DescribeGroup",
        "kafka-cluster:AlterGroup",
    ],
    invokes: &["indexer", "merger"],
};

/// The indexer: reads Kafka, writes hydrants and checkpoints, continues or hands over.
pub const INDEXER: FunctionSpec = FunctionSpec {
    resource: "IndexerFunction",
    binary: "indexer",
    env: &[
        STORES[0],
        STORES[1],
        STORES[2],
        "SLUICE_INDEXER_FUNCTION",
        "SLUICE_MERGER_FUNCTION",
        "SLUICE_KAFKA_SECRET_ARN",
        "SLUICE_KAFKA_BOOTSTRAP_SERVERS",
        "SLUICE_DESCRIPTOR_DIR",
        // The bucket batch tasks' s3 input sources may read (`BatchInputBucket`).
        "SLUICE_BATCH_S3_BUCKETS",
        // Batch splits in flight at once across the deployment, each holding a slot, within
        // the indexers' reservation.
        "SLUICE_BATCH_MAX_SPLITS",
        "SLUICE_INDEXER_RESERVED_CONCURRENCY",
    ],
    actions: &[
        "dynamodb:DescribeTable",
        "dynamodb:GetItem",
        "dynamodb:Query",
        "dynamodb:UpdateItem",
        "dynamodb:TransactWriteItems",
        // A batch split's input, in `BatchInputBucket` only.
        "s3:GetObject",
        "s3:ListBucket",
        "s3:PutObject",
        "s3:AbortMultipartUpload",
        "lambda:InvokeFunction",
        "secretsmanager:GetSecretValue",
        "sqs:SendMessage",
    ],
    reads_kafka: true,
    // Watermarks and fetches; the reader's group is looked up though it joins none.
    kafka_cluster: &[
        "kafka-cluster:Connect",
        "kafka-cluster:DescribeCluster",
        "kafka-cluster:DescribeTopic",
        "kafka-cluster:ReadData",
        "kafka-cluster:DescribeGroup",
    ],
    invokes: &["indexer", "merger"],
};

/// The merger: reads hydrants, writes segments, publishes, discards what a lost race wrote.
pub const MERGER: FunctionSpec = FunctionSpec {
    resource: "MergerFunction",
    binary: "merger",
    env: &[STORES[0], STORES[1], STORES[2], "SLUICE_INDEXER_FUNCTION", "SLUICE_MERGER_FUNCTION"],
    actions: &[
        "dynamodb:DescribeTable",
        "dynamodb:GetItem",
        "dynamodb:Query",
        "dynamodb:UpdateItem",
        "dynamodb:DeleteItem",
        "dynamodb:TransactWriteItems",
        "s3:GetObject",
        // Without it S3 answers 403, not 404, for a missing hydrant: see `MISSING_AS_404`.
        "s3:ListBucket",
        "s3:PutObject",
        "s3:AbortMultipartUpload",
        "s3:DeleteObject",
        "lambda:InvokeFunction",
        "sqs:SendMessage",
    ],
    reads_kafka: false,
    kafka_cluster: &[],
    invokes: &["merger"],
};

/// The compactor: reads segments, writes compacted ones, publishes replaces, deletes what
/// was replaced after the grace. No Kafka, no invocations.
pub const COMPACTOR: FunctionSpec = FunctionSpec {
    resource: "CompactorFunction",
    binary: "compactor",
    env: &[STORES[0], STORES[1], STORES[2]],
    actions: &[
        "dynamodb:DescribeTable",
        "dynamodb:GetItem",
        "dynamodb:Query",
        "dynamodb:UpdateItem",
        "dynamodb:DeleteItem",
        "dynamodb:TransactWriteItems",
        "s3:GetObject",
        // Without it S3 answers 403, not 404, for a missing segment: see `MISSING_AS_404`.
        "s3:ListBucket",
        "s3:PutObject",
        "s3:AbortMultipartUpload",
        "s3:DeleteObject",
    ],
    reads_kafka: false,
    kafka_cluster: &[],
    invokes: &[],
};

/// The api function serving reads (`SLUICE_API_ROUTES=reads`): queries segments, reads
/// supervisor specs and status; it can change nothing.
pub const API: FunctionSpec = FunctionSpec {
    resource: "ApiFunction",
    binary: "api",
    env: &[
        STORES[0],
        STORES[1],
        STORES[2],
        "SLUICE_CACHE",
        "SLUICE_API_ROUTES",
        "SLUICE_QUERY_WORKER_FUNCTION",
        "SLUICE_QUERY_MAX_WORKERS",
        // One query's workers within the query workers' reservation (`QueryWorkerReservedConcurrency`).
        "SLUICE_QUERY_WORKER_RESERVED_CONCURRENCY",
        "SLUICE_QUERY_FANOUT_MIN_BYTES",
        "SLUICE_QUERY_BATCH_BYTES",
    ],
    actions: &[
        "dynamodb:DescribeTable",
        "dynamodb:GetItem",
        "dynamodb:Query",
        "s3:GetObject",
        "s3:ListBucket",
        // The partials workers leave in deep storage when too large for a response, once read.
        "s3:DeleteObject",
        "lambda:InvokeFunction",
    ],
    reads_kafka: false,
    kafka_cluster: &[],
    invokes: &["query-worker"],
};

/// The query worker: one batch of a fanned-out query's segments, read and answered as a
/// partial. It reads segments (and hydrants, for real-time datasources), writes a partial too
/// large for a response under `query-partials/`, and nothing else; a node of an invocation
/// tree invokes the function itself and reads and deletes its workers' partials.
pub const QUERY_WORKER: FunctionSpec = FunctionSpec {
    resource: "QueryWorkerFunction",
    binary: "query-worker",
    env: &[STORES[1], STORES[2], "SLUICE_CACHE", "SLUICE_QUERY_PARTIAL_CACHE_MB", "SLUICE_QUERY_WORKER_FUNCTION"],
    actions: &[
        "s3:GetObject",
        "s3:ListBucket",
        "s3:PutObject",
        "s3:AbortMultipartUpload",
        "s3:DeleteObject",
        "lambda:InvokeFunction",
    ],
    reads_kafka: false,
    kafka_cluster: &[],
    invokes: &["query-worker"],
};

/// The api function serving writes (`SLUICE_API_ROUTES=writes`): submits specs (checked against
/// the deployment's Kafka connection), operates supervisors (suspend, resume, reset,
/// resetOffsets, terminate) and writes lookups (their maps under `lookups/`); it reads no
/// segment.
pub const OPERATIONS: FunctionSpec = FunctionSpec {
    resource: "OperationsFunction",
    binary: "api",
    env: &[
        STORES[0],
        STORES[1],
        STORES[2],
        "SLUICE_API_ROUTES",
        "SLUICE_KAFKA_SECRET_ARN",
        "SLUICE_KAFKA_BOOTSTRAP_SERVERS",
        "SLUICE_DESCRIPTOR_DIR",
        // A batch task's s3 input is listed when it is submitted.
        "SLUICE_BATCH_S3_BUCKETS",
    ],
    actions: &[
        "dynamodb:DescribeTable",
        "dynamodb:GetItem",
        "dynamodb:Query",
        "dynamodb:UpdateItem",
        "dynamodb:DeleteItem",
        "dynamodb:TransactWriteItems",
        "s3:GetObject",
        "s3:ListBucket",
        "s3:PutObject",
        "s3:DeleteObject",
        "secretsmanager:GetSecretValue",
    ],
    // A spec that sets a connection property the deployment's secret owns is refused at submit.
    reads_kafka: true,
    kafka_cluster: &[],
    invokes: &[],
};

/// Why every function that reads objects may also list the bucket: S3 answers a read of a
/// missing key with 404 only to a caller allowed `s3:ListBucket`, and with 403 (read as refused
/// credentials, retried) to any other, so a missing hydrant would stall its group instead of
/// failing its task.
pub const MISSING_AS_404: &str = "s3:GetObject needs s3:ListBucket for a missing object to read as 404";

/// Every function.
pub const FUNCTIONS: [FunctionSpec; 7] = [SUPERVISOR, INDEXER, MERGER, COMPACTOR, API, OPERATIONS, QUERY_WORKER];
