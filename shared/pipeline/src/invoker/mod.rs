//! How the supervisor starts work: a [`TaskInvoker`] runs an indexer or a merger for a task,
//! asynchronously and at least once. On AWS it is an asynchronous Lambda invoke; locally an
//! in-process queue the local runner drains. Invoking the same job twice is harmless: a
//! second indexer finds the task busy or done, a second merger finds it published.

#[cfg(feature = "aws")]
mod lambda;

#[cfg(feature = "aws")]
pub use lambda::{LambdaInvoker, INDEXER_FUNCTION_ENV, MERGER_FUNCTION_ENV};

use crate::task::TaskId;
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::sync::Mutex;

/// One unit of work for a function.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "job", rename_all = "lowercase")]
pub enum Job {
    /// Run or continue the indexing task.
    Index {
        /// The task.
        task: TaskId,
    },
    /// Merge the completed task's hydrants and publish.
    Merge {
        /// The task.
        task: TaskId,
    },
    /// Index one split of a batch task (an indexer's job).
    #[serde(rename = "batch-index")]
    BatchIndex {
        /// The batch task's id.
        batch: String,
        /// The split.
        split: u32,
    },
    /// Publish a batch task whose splits are done (a merger's job).
    #[serde(rename = "batch-publish")]
    BatchPublish {
        /// The batch task's id.
        batch: String,
    },
}

impl Job {
    /// Whether an indexer runs it (a merger runs the others).
    pub fn for_indexer(&self) -> bool {
        matches!(self, Job::Index { .. } | Job::BatchIndex { .. })
    }
}

/// Why a job could not be handed over.
#[derive(Debug, thiserror::Error)]
#[error("cannot invoke {job:?}: {reason}")]
pub struct InvokeError {
    /// The job.
    pub job: Job,
    /// Why.
    pub reason: String,
}

/// Starts jobs asynchronously.
#[async_trait]
pub trait TaskInvoker: Send + Sync + std::fmt::Debug {
    /// Hands `job` over to run; returns once it is accepted, not once it ran.
    async fn invoke(&self, job: Job) -> Result<(), InvokeError>;
}

/// The local invoker: jobs queue in memory, in order, each at most once in the queue.
#[derive(Debug, Default)]
pub struct QueueInvoker {
    queue: Mutex<VecDeque<Job>>,
}

impl QueueInvoker {
    /// Takes the next job.
    pub fn pop(&self) -> Option<Job> {
        self.queue.lock().expect("queue lock").pop_front()
    }

    /// Jobs waiting.
    pub fn len(&self) -> usize {
        self.queue.lock().expect("queue lock").len()
    }

    /// Whether no job waits.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[async_trait]
impl TaskInvoker for QueueInvoker {
    async fn invoke(&self, job: Job) -> Result<(), InvokeError> {
        let mut queue = self.queue.lock().expect("queue lock");
        if !queue.contains(&job) {
            queue.push_back(job);
        }
        Ok(())
    }
}
