//! The indexing task (Druid's SeekableStreamIndexTaskRunner): read an exact offset range,
//! parse and index it per time chunk, persist hydrants, checkpoint, resume. [`run_task`] runs
//! one attempt; the row meters and the message-time window are its parts.

mod failure;
mod handover;
mod ingest;
mod lease;
mod outcome;
mod realtime;
mod run;
mod spill;
#[cfg(test)]
pub(crate) mod test_hydrants;

pub use ingest::{Ingester, IngesterError};
pub use outcome::{IndexerError, StageTimes, TaskOptions, TaskOutcome, TaskReport, LEASE};
pub use run::run_task;
pub use sluice_format::meters::{MeterTotals, ParseException, RowMeters, TooManyParseExceptions};
pub use sluice_format::window::MessageWindow;
pub use spill::{remove_stale_spills, spill_bound, SPILL_BYTES};
