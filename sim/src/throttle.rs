//! DynamoDB's write limit per partition key (1,000 write units/s): a key's writes queue
//! behind each other once a second of burst is used, and the SDK's retries wait them out.
//! A datasource's key holds its plans, committed offsets and segment records; each group's
//! own key holds the group's tasks and checkpoints (`docs/metadata-layout.md`).

/// One partition key's write capacity and what was written to it.
#[derive(Debug, Clone, Copy)]
pub struct KeyThrottle {
    limit: f64,
    busy_until: f64,
    /// Write units charged so far.
    pub units: f64,
}

impl KeyThrottle {
    /// A key of `limit` write units per second (infinite: no limit).
    pub fn new(limit: f64) -> Self {
        Self { limit, busy_until: 0.0, units: 0.0 }
    }

    /// Charges `units` at `t`; returns how long the write waits.
    pub fn write(&mut self, t: f64, units: f64) -> f64 {
        self.units += units;
        if !self.limit.is_finite() {
            return 0.0;
        }
        self.busy_until = self.busy_until.max(t) + units / self.limit;
        (self.busy_until - t - 1.0).max(0.0)
    }

    /// The busiest of `keys` over `secs`, as a share of the limit.
    pub fn busiest<'a>(keys: impl IntoIterator<Item = &'a KeyThrottle>, secs: f64) -> f64 {
        keys.into_iter().map(|k| k.units / secs / k.limit).fold(0.0, f64::max)
    }
}

#[cfg(test)]
mod tests {
    use super::KeyThrottle;

    #[test]
    fn a_second_of_burst_then_writes_wait() {
        let mut key = KeyThrottle::new(1000.0);
        assert_eq!(key.write(0.0, 1000.0), 0.0, "a second's worth at once is absorbed");
        assert!((key.write(0.0, 500.0) - 0.5).abs() < 1e-9, "half a second more waits half a second");
        assert_eq!(key.write(10.0, 1.0), 0.0, "idle since: no wait");
        assert!((KeyThrottle::busiest([&key], 10.0) - 0.1501).abs() < 1e-9);
        assert_eq!(KeyThrottle::new(f64::INFINITY).write(0.0, 1e9), 0.0);
    }
}
