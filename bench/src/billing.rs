//! What the benchmark's stores cost: a [`Meter`] that adds each call through the metered stores
//! to [`Meters`] as AWS bills it (S3 requests, DynamoDB capacity units) with the time spent
//! waiting. The pipeline benchmark reads it around each job to split time per stage and to feed
//! the cost model.

use sluice_report::Meters;
use sluice_store::meter::{Call, Meter};
use std::sync::Mutex;
use std::time::Duration;

/// The running total of the calls through the benchmark's stores.
#[derive(Debug, Default)]
pub struct Billing(Mutex<Meters>);

impl Billing {
    /// The total now.
    pub fn read(&self) -> Meters {
        *self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// DynamoDB's units for `bytes`: one per started `unit`, at least one.
fn units(bytes: usize, unit: usize) -> f64 {
    bytes.div_ceil(unit).max(1) as f64
}

impl Meter for Billing {
    fn record(&self, call: Call, took: Duration) {
        let m = &mut *self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let secs = took.as_secs_f64();
        if matches!(call, Call::MetaRead { .. } | Call::MetaPut { .. } | Call::MetaDelete | Call::MetaTransact { .. }) {
            m.meta_requests += 1;
            m.meta_secs += secs;
        } else {
            m.store_secs += secs;
        }
        match call {
            Call::MetaRead { bytes, .. } => m.read_units += units(bytes, 4096),
            Call::MetaPut { bytes } => {
                m.write_units += units(bytes, 1024);
                m.meta_bytes += bytes as u64;
            }
            Call::MetaDelete => m.write_units += 1.0,
            Call::MetaTransact { puts, others } => {
                // A transaction bills two units per 1 KB of each item it writes or checks.
                m.write_units += puts.iter().map(|&b| 2.0 * units(b, 1024)).sum::<f64>() + 2.0 * others as f64;
                m.meta_bytes += puts.iter().sum::<usize>() as u64;
            }
            Call::ObjectPut { bytes } => {
                m.s3_puts += 1;
                m.bytes_put += bytes;
            }
            // LIST is billed as a PUT; DELETE requests are free.
            Call::ObjectList => m.s3_puts += 1,
            Call::ObjectGet { .. } | Call::ObjectHead => m.s3_gets += 1,
            Call::ObjectDelete => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_are_billed_as_dynamodb_and_s3_bill_them() {
        let billing = Billing::default();
        let ms = Duration::from_millis(1);
        billing.record(Call::MetaRead { bytes: 4097, items: 1 }, ms);
        billing.record(Call::MetaPut { bytes: 1500 }, ms);
        billing.record(Call::MetaTransact { puts: vec![1500, 100], others: 1 }, ms);
        billing.record(Call::MetaDelete, ms);
        billing.record(Call::ObjectPut { bytes: 10 }, ms);
        billing.record(Call::ObjectList, ms);
        billing.record(Call::ObjectGet { bytes: 99 }, ms);
        billing.record(Call::ObjectHead, ms);
        billing.record(Call::ObjectDelete, ms);
        let m = billing.read();
        assert_eq!((m.read_units, m.write_units), (2.0, 2.0 + (4.0 + 2.0 + 2.0) + 1.0));
        assert_eq!((m.meta_requests, m.meta_bytes), (4, 1500 + 1600));
        assert_eq!((m.s3_puts, m.s3_gets, m.bytes_put), (2, 2, 10));
        assert!((m.meta_secs - 0.004).abs() < 1e-9 && (m.store_secs - 0.005).abs() < 1e-9, "{m:?}");
    }
}
