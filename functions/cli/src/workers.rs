//! `--workers N`: query workers as processes of this binary (`sluice query-worker`), run by
//! the local Lambda service as Lambda runs the deployment's query-worker function (each
//! process polls the Runtime API, takes one invocation at a time and keeps its own segment
//! cache, as an instance keeps its `/tmp`). The broker reaches them through the same
//! [`WorkerInvoker`] as it reaches Lambda.

use anyhow::{Context, Result};
use async_trait::async_trait;
use clap::Args;
use sluice_broker::{FanOut, InvokeError, WorkerInvoker};
use sluice_lambda_local::{Answer, FunctionConfig, LambdaService};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// The function name the worker processes serve under.
const FUNCTION: &str = "sluice-query-worker";

/// Options of the commands that can fan queries out.
#[derive(Args, Debug, Clone)]
pub struct WorkerArgs {
    /// Query workers: timeseries, topN and groupBy queries are split into this many batches
    /// of segments, each computed by a worker process (0: answered in this process).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u16).range(0..=256))]
    pub workers: u16,
    /// Threads of each worker (default: this machine's cores shared between the workers).
    #[arg(long)]
    pub worker_threads: Option<usize>,
    /// Queries over at most this many megabytes of segments are answered in this process.
    #[arg(long, default_value_t = 0)]
    pub fanout_min_mb: u64,
    /// Megabytes of partial results each worker keeps (its default when `None`).
    #[arg(skip)]
    pub partial_cache_mb: Option<u64>,
}

/// Worker processes behind the local Lambda service.
#[derive(Debug)]
pub struct LocalWorkers {
    service: LambdaService,
}

impl WorkerArgs {
    /// The fan-out `--workers` asks for, its processes started on `storage` with caches and
    /// logs under `dir` (beside the broker's cache, never in it: its eviction would delete
    /// them), `None` without `--workers`.
    pub async fn start(&self, storage: &str, dir: &Path) -> Result<Option<FanOut>> {
        if self.workers == 0 {
            return Ok(None);
        }
        let n = usize::from(self.workers);
        let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
        let threads = self.worker_threads.unwrap_or((cores / n).max(1));
        let logs = dir.join("worker-logs");
        std::fs::create_dir_all(&logs).with_context(|| format!("create {}", logs.display()))?;
        let mut service = LambdaService::new(&logs).await.context("start the local Lambda service")?;
        let binary = std::env::current_exe().context("this binary's path")?;
        for i in 0..n {
            let mut env = vec![
                ("SLUICE_STORAGE".to_string(), storage.to_string()),
                ("SLUICE_CACHE".to_string(), dir.join(format!("worker-{i}")).display().to_string()),
                ("RAYON_NUM_THREADS".to_string(), threads.to_string()),
                ("SLUICE_LOG".to_string(), std::env::var("SLUICE_LOG").unwrap_or_else(|_| "warn".into())),
            ];
            if let Some(mb) = self.partial_cache_mb {
                env.push((sluice_broker::runtime::PARTIAL_CACHE_ENV.to_string(), mb.to_string()));
            }
            let config = FunctionConfig {
                name: FUNCTION.into(),
                binary: binary.clone(),
                env,
                max_retries: 0,
                timeout: Duration::from_secs(900),
                memory_mb: 1769,
                args: vec!["query-worker".into()],
            };
            service.start(config).await.context("start a query worker")?;
        }
        let invoker: Arc<dyn WorkerInvoker> = Arc::new(LocalWorkers { service });
        let mut fanout = FanOut::new(invoker, n);
        fanout.min_bytes = self.fanout_min_mb << 20;
        // One batch per worker: the batch count is the workers', each invoked by the broker
        // (the local workers invoke none: no tree), a batch as large as the segments are.
        fanout.batch_bytes = 1;
        fanout.width = n;
        Ok(Some(fanout))
    }
}

/// The folder of the workers of a broker caching segments in `cache`: `CACHE-workers`.
pub fn beside(cache: &Path) -> std::path::PathBuf {
    let mut name = cache.file_name().map(|n| n.to_os_string()).unwrap_or_else(|| "cache".into());
    name.push("-workers");
    cache.with_file_name(name)
}

#[async_trait]
impl WorkerInvoker for LocalWorkers {
    fn name(&self) -> &str {
        FUNCTION
    }

    async fn invoke(&self, request: Vec<u8>, within: Duration) -> Result<Vec<u8>, InvokeError> {
        let answer = tokio::time::timeout(within, self.service.invoke(FUNCTION, request))
            .await
            .map_err(|_| InvokeError::TimedOut(within.as_millis() as u64))?;
        match answer {
            Some(Answer::Response(v)) => serde_json::to_vec(&v).map_err(|e| InvokeError::Failed(e.to_string())),
            Some(Answer::Error(e)) => {
                Err(InvokeError::Failed(sluice_format::text::excerpt(&e.to_string(), 300).into_owned()))
            }
            None => Err(InvokeError::Failed("the local Lambda service has no query-worker function".into())),
        }
    }
}
