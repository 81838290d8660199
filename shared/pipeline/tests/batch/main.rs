//! Batch tasks against the embedded metadata store and local deep storage: what a `local`
//! input may open and how far it is read, and how many splits run at once across the
//! deployment.

mod harness;
mod limits;
mod local_input;
