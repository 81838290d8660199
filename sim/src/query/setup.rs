//! What a query simulation runs: the query kinds with their scan rates measured by `sluice
//! bench query`, and every parameter of the broker, the workers, S3, DynamoDB and Lambda, each
//! with its default and where that default comes from.

/// One query kind, with its single-thread scan rate and two-thread speed-up measured by
/// `sluice bench query --rows 20000000 --rows-per-segment 200000 --threads 1,2 --repeat 5` on
/// this project's 2-core x86_64 machine (`bench/results/query-20m-threads.txt`: the engine that
/// keeps decoded dictionaries, folds segments per thread and a timeseries' time buckets by run).
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct QueryKind {
    /// Short name (`topN`, `timeseries`, `groupBy`).
    pub name: &'static str,
    /// What the benchmark's query computes.
    pub label: &'static str,
    /// Milliseconds over the benchmark's 20M rows on one thread.
    pub ms_one_thread: f64,
    /// Milliseconds over the same rows on two threads.
    pub ms_two_threads: f64,
    /// Bytes the query reads per row as a worker reads a large segment by its parts
    /// (`sluice_query::ranged`: the first 64 KiB, the parts the query reads, gaps under 1 MiB
    /// read through), measured by the same command with `--rows-per-segment 5000000` (20M rows
    /// in 260 segments of about 77,000 rows: segments of 5M rows would spread each dictionary
    /// over more rows and read fewer gaps through, so these are upper bounds).
    pub read_bytes_per_row: f64,
    /// Runs of adjacent parts the query reads in a segment (measured by the same command): the
    /// ranged GETs a 5M-row segment needs at least, beside its first GET.
    pub part_runs: f64,
    /// Groups in one worker's partial (distinct keys it sends to the broker).
    pub groups_per_partial: f64,
    /// Bytes of one group in a serialized partial (key and aggregator states).
    pub bytes_per_group: f64,
    /// Groups are time buckets: partials of different segments add up when merged, where
    /// dimension values repeat across segments and merge into the same groups.
    pub groups_by_time: bool,
}

/// Rows of the benchmark run the rates are measured on.
pub const BENCH_ROWS: f64 = 20_000_000.0;

impl QueryKind {
    /// Rows per second on one x86_64 core of the benchmark machine.
    pub fn rows_per_sec(&self) -> f64 {
        BENCH_ROWS / (self.ms_one_thread / 1000.0)
    }

    /// Speed-up of two threads over one on the benchmark machine.
    pub fn two_thread_speedup(&self) -> f64 {
        self.ms_one_thread / self.ms_two_threads
    }
}

/// The three query shapes of the benchmark. A topN partial keeps every value of its dimension
/// (topN stays exact): the filtered topN over pages of `#en.wikipedia` sends about ten thousand
/// pages per partial on the Wikipedia sample; an hourly timeseries sends the hours its segments
/// cover; a groupBy on channel and namespace a few hundred pairs.
pub const KINDS: [QueryKind; 3] = [
    QueryKind {
        name: "topN",
        read_bytes_per_row: 4.71,
        part_runs: 2.0,
        label: "filtered topN (top 10 pages of #en.wikipedia)",
        ms_one_thread: 289.53,
        ms_two_threads: 158.20,
        groups_per_partial: 10_000.0,
        bytes_per_group: 48.0,
        groups_by_time: false,
    },
    QueryKind {
        name: "timeseries",
        read_bytes_per_row: 2.71,
        part_runs: 2.0,
        label: "timeseries by hour (count, sum added)",
        ms_one_thread: 350.64,
        ms_two_threads: 178.91,
        groups_per_partial: 48.0,
        bytes_per_group: 40.0,
        groups_by_time: true,
    },
    QueryKind {
        name: "groupBy",
        read_bytes_per_row: 4.61,
        part_runs: 3.0,
        label: "groupBy channel, namespace (count, sum delta)",
        ms_one_thread: 429.26,
        ms_two_threads: 206.17,
        groups_per_partial: 500.0,
        bytes_per_group: 56.0,
        groups_by_time: false,
    },
];

/// Every parameter of the query model. Defaults: measured by this project where it could be,
/// published figures otherwise (`prices.rs` and `docs/benchmarks.md` cite them), and assumptions
/// where neither exists, said so here.
#[derive(Debug, Clone, serde::Serialize)]
pub struct QuerySetup {
    /// Rows per segment: Druid's `maxRowsPerSegment` default (5M), which compaction fills.
    pub rows_per_segment: f64,
    /// Bytes of a segment per row, all columns: 705.3 MB over 20M rows in the benchmark.
    pub segment_bytes_per_row: f64,
    /// Bytes a query reads per row: the query kind's measured columns
    /// (`QueryKind::read_bytes_per_row`, which [`QuerySetup::for_kind`] sets) unless
    /// `read_bytes_fixed`.
    pub read_bytes_per_row: f64,
    /// `read_bytes_per_row` was given (`--read-bytes-per-row`) and holds for every kind.
    pub read_bytes_fixed: bool,
    /// Largest segment a worker downloads whole into /tmp; a larger one is read by the
    /// columns the query names (`WHOLE_SEGMENT_BYTES` in `shared/broker/src/worker.rs`).
    pub whole_segment_max_bytes: f64,
    /// Runs of adjacent parts a query reads per segment (one ranged GET each at least): the
    /// query kind's measured `part_runs`, which [`QuerySetup::for_kind`] sets.
    pub part_runs: f64,
    /// Share of the datasource's segments inside the query intervals (time pruning).
    pub time_fraction: f64,
    /// Share of those left after pruning by the filter (1: no pruning).
    pub filter_fraction: f64,
    /// Bytes of one segment record in the catalog (assumed).
    pub catalog_item_bytes: f64,
    /// Seconds of one DynamoDB Query page of 1 MB, median (assumed: 8 ms of request plus 1 MB).
    pub catalog_page_secs: f64,
    /// Seconds of a small DynamoDB request (the replaces), median.
    pub catalog_small_secs: f64,
    /// Memory of the api function, the broker, MB (`template.yaml`).
    pub broker_mb: f64,
    /// Memory of the query-worker function, MB (`template.yaml`: one vCPU).
    pub worker_mb: f64,
    /// Threads of the query pool (two vCPUs are visible at 2,048 MB).
    pub threads: f64,
    /// Speed of a Lambda arm64 (Graviton2) core over a core of the benchmark machine
    /// (assumed 0.75: not measured).
    pub arm_core_factor: f64,
    /// Seconds of work one function should do: the broker splits the segments into batches of
    /// the bytes a worker downloads and scans in about this long.
    pub worker_secs: f64,
    /// Bytes of segments per batch, as the built broker sizes them (the template's
    /// `SLUICE_QUERY_BATCH_BYTES`, 512 MiB); `None`: by `worker_secs`.
    pub batch_segment_bytes_opt: Option<f64>,
    /// Bytes a worker downloads per batch instead, when set.
    pub bytes_per_worker_opt: Option<f64>,
    /// Most workers one query may run at once (the account's default concurrency, 1,000;
    /// Lambda adds at most 1,000 executions of a function every 10 s, so a cold query past
    /// 1,000 would wait, which the model does not simulate).
    pub max_workers: f64,
    /// Seconds from an Invoke to the handler and from its return to the caller, together,
    /// when warm (published: ~10–20 ms).
    pub invoke_rtt: f64,
    /// Seconds one invoker spends issuing each Invoke (signing, a connection; assumed).
    pub invoke_issue: f64,
    /// Seconds to create a sandbox and load the code before init (assumed).
    pub cold_sandbox: f64,
    /// Seconds of init: 43–71 ms measured by this project (SDK clients, warm page cache).
    pub cold_init: f64,
    /// S3 first-byte latency, median seconds (published: tens of ms for small objects).
    pub s3_first_byte: f64,
    /// Lognormal sigma of the first-byte latency.
    pub s3_first_byte_sigma: f64,
    /// MB/s of one GET stream (published: 85–90 MB/s per connection).
    pub s3_stream_mbps: f64,
    /// Concurrent ranged GETs one function keeps in flight.
    pub s3_streams: f64,
    /// MB/s one function's network reaches at most (assumed: several hundred).
    pub function_mbps: f64,
    /// Lognormal sigma of a function's throughput.
    pub throughput_sigma: f64,
    /// Largest byte range of one GET (published: 8–16 MB recommended; `RANGE_BYTES` in
    /// `shared/query/src/ranged.rs`).
    pub range_bytes: f64,
    /// Bytes of segments (whole) a worker computes at a time while the next chunk downloads
    /// (`sluice_broker::worker::CHUNK_BYTES`).
    pub chunk_bytes: f64,
    /// MB of a worker's /tmp kept as the segment cache.
    pub tmp_cache_mb: f64,
    /// Share of a warm worker's bytes already in its /tmp; by default the cache's share of the
    /// bytes the query reads, since Lambda routes an invocation to any idle sandbox.
    pub warm_hit_opt: Option<f64>,
    /// Chance that a worker straggles (a slow host or a slow GET).
    pub straggler_p: f64,
    /// How much slower a straggler downloads and scans.
    pub straggler_factor: f64,
    /// Chance that a worker invocation fails; it is retried once.
    pub failure_p: f64,
    /// A worker still running at this multiple of its expected time is invoked again and the
    /// first answer taken (hedging, as the broker does at 1.5 times the median answered batch:
    /// `shared/broker/src/hedge.rs`).
    pub hedge_opt: Option<f64>,
    /// Broker seconds to deserialize and merge one group of a partial (assumed).
    pub merge_secs_per_group: f64,
    /// Largest synchronous Invoke response, bytes (6 MB): larger partials go through S3.
    pub payload_limit: f64,
    /// MB/s of an Invoke response body (assumed).
    pub payload_mbps: f64,
    /// Queries simulated per setting.
    pub trials: usize,
    /// Seed of the simulation's random numbers.
    pub seed: u64,
}

impl Default for QuerySetup {
    fn default() -> Self {
        QuerySetup {
            rows_per_segment: 5_000_000.0,
            segment_bytes_per_row: 705.3e6 / BENCH_ROWS,
            read_bytes_per_row: KINDS[0].read_bytes_per_row,
            read_bytes_fixed: false,
            whole_segment_max_bytes: 16.0 * 1024.0 * 1024.0,
            part_runs: KINDS[0].part_runs,
            time_fraction: 1.0,
            filter_fraction: 1.0,
            catalog_item_bytes: 1_000.0,
            catalog_page_secs: 0.030,
            catalog_small_secs: 0.008,
            broker_mb: 2048.0,
            worker_mb: 1769.0,
            threads: 2.0,
            arm_core_factor: 0.75,
            worker_secs: 1.0,
            batch_segment_bytes_opt: Some(512.0 * 1024.0 * 1024.0),
            bytes_per_worker_opt: None,
            max_workers: 1000.0,
            invoke_rtt: 0.015,
            invoke_issue: 0.004,
            cold_sandbox: 0.150,
            cold_init: 0.060,
            s3_first_byte: 0.030,
            s3_first_byte_sigma: 0.5,
            s3_stream_mbps: 88.0,
            s3_streams: 8.0,
            function_mbps: 300.0,
            throughput_sigma: 0.25,
            range_bytes: 16.0 * 1024.0 * 1024.0,
            chunk_bytes: 64.0 * 1024.0 * 1024.0,
            tmp_cache_mb: 0.9 * 4096.0,
            warm_hit_opt: None,
            straggler_p: 0.02,
            straggler_factor: 3.0,
            failure_p: 0.002,
            hedge_opt: Some(1.5),
            merge_secs_per_group: 0.25e-6,
            payload_limit: 6.0 * 1024.0 * 1024.0,
            payload_mbps: 100.0,
            trials: 200,
            seed: 1,
        }
    }
}

/// Lambda gives one vCPU per 1,769 MB.
pub const MB_PER_VCPU: f64 = 1769.0;

impl QuerySetup {
    /// Cold start of one function: sandbox, then init.
    pub fn cold_start(&self) -> f64 {
        self.cold_sandbox + self.cold_init
    }

    /// Rows per second a function of `mb` scans for `kind`: the measured single-core rate on
    /// arm64, and the share of the second thread's measured speed-up its vCPUs allow.
    pub fn scan_rate(&self, kind: &QueryKind, mb: f64) -> f64 {
        let vcpu = mb / MB_PER_VCPU;
        let cores = if vcpu <= 1.0 {
            vcpu
        } else {
            let extra = (vcpu.min(self.threads) - 1.0).max(0.0);
            1.0 + extra * (kind.two_thread_speedup() - 1.0)
        };
        kind.rows_per_sec() * self.arm_core_factor * cores
    }

    /// This setup for queries of `kind`: its bytes read per row, unless fixed.
    pub fn for_kind(&self, kind: &QueryKind) -> QuerySetup {
        let mut s = self.clone();
        if !s.read_bytes_fixed {
            s.read_bytes_per_row = kind.read_bytes_per_row;
        }
        s.part_runs = kind.part_runs;
        s
    }

    /// Whether a worker downloads its segments whole (small ones) or by their columns.
    pub fn whole_segments(&self) -> bool {
        self.rows_per_segment * self.segment_bytes_per_row <= self.whole_segment_max_bytes
    }

    /// Bytes a worker downloads per row it scans: whole segments', or the columns read.
    pub fn download_bytes_per_row(&self) -> f64 {
        if self.whole_segments() {
            self.segment_bytes_per_row
        } else {
            self.read_bytes_per_row
        }
    }

    /// Bytes one worker downloads: `bytes_per_worker_opt`, or those of a batch of
    /// `batch_segment_bytes_opt` of segments, or what it downloads and scans in `worker_secs`
    /// (the slower of the two sets the pace).
    pub fn bytes_per_worker(&self, kind: &QueryKind) -> f64 {
        if let Some(bytes) = self.bytes_per_worker_opt {
            return bytes;
        }
        if let Some(segment_bytes) = self.batch_segment_bytes_opt {
            return segment_bytes / self.segment_bytes_per_row * self.download_bytes_per_row();
        }
        let pace = self.download_rate().min(self.scan_rate(kind, self.worker_mb) * self.download_bytes_per_row());
        self.worker_secs * pace
    }

    /// Bytes per second one function downloads from S3, median.
    pub fn download_rate(&self) -> f64 {
        (self.s3_streams * self.s3_stream_mbps).min(self.function_mbps) * 1e6
    }
}
