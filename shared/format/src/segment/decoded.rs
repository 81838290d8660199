//! What a segment's readers decode once and share while the segment stays open: its string
//! dictionaries and the first and last `__time`. A query over many small segments otherwise spends most of its time decoding
//! the dictionaries of the dimensions it groups by, again on every query; a segment is
//! immutable, so what was decoded from it stays true. Clones of an opened segment share one
//! memo; it goes with the last of them.

use super::StoredDictionary;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

/// Decoded dictionaries by column name, and the time range.
#[derive(Debug, Default)]
pub(super) struct Decoded {
    dictionaries: Mutex<HashMap<String, Arc<StoredDictionary>>>,
    /// The first and last `__time` (none without rows).
    time_range: OnceLock<Option<(i64, i64)>>,
}

impl Decoded {
    /// The dictionary of `column`, decoded by `decode` unless already held. Two readers
    /// asking at once may both decode it: the first kept wins, both answers are equal.
    pub(super) fn dictionary<E>(
        &self,
        column: &str,
        decode: impl FnOnce() -> Result<StoredDictionary, E>,
    ) -> Result<Arc<StoredDictionary>, E> {
        let held = |map: &HashMap<String, Arc<StoredDictionary>>| map.get(column).cloned();
        if let Some(d) = held(&self.lock()) {
            return Ok(d);
        }
        let decoded = Arc::new(decode()?);
        Ok(self.lock().entry(column.to_string()).or_insert(decoded).clone())
    }

    /// The time range, found by `find` unless already known.
    pub(super) fn time_range<E>(
        &self,
        find: impl FnOnce() -> Result<Option<(i64, i64)>, E>,
    ) -> Result<Option<(i64, i64)>, E> {
        if let Some(&range) = self.time_range.get() {
            return Ok(range);
        }
        let range = find()?;
        Ok(*self.time_range.get_or_init(|| range))
    }

    /// Bytes the decoded values hold.
    pub(super) fn bytes(&self) -> usize {
        self.lock().values().map(|d| d.bytes() + 4 * d.len()).sum()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<StoredDictionary>>> {
        self.dictionaries.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
