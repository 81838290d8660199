//! Pieces of the indexing task (Druid's SeekableStreamIndexTaskRunner): the row ingestion
//! meters with their parse exceptions, and the message-time window that throws rows away.
//! The task loop itself (read, index, persist, checkpoint, resume) is not built yet.

mod meters;
mod window;

pub use meters::{ParseException, RowMeters, TooManyParseExceptions};
pub use window::MessageWindow;
