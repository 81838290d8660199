//! What a replace writes beside its items: the version of its segments, newer than any it
//! replaces or sits beside, and, when it will not publish, its abandon and its segments gone.

use super::{abandon, Begun};
use crate::timeline::{discard, SegmentRecord};
use sluice_format::time::{format_iso, now_ms};
use sluice_store::metadata::MetadataStore;
use sluice_store::storage::ObjectStore;

/// A version above every one of `versions`: now, or just after the newest of them.
pub fn newer_version<'a>(now_ms: i64, versions: impl Iterator<Item = &'a str>) -> String {
    let now = format_iso(now_ms);
    match versions.max() {
        Some(top) if top >= now.as_str() => {
            let top_ms = sluice_format::time::parse_iso_instant(top).unwrap_or(now_ms);
            format_iso(top_ms.max(now_ms) + 1)
        }
        _ => now,
    }
}

/// Abandons a replace that will not publish and deletes the segments it wrote (cleanup
/// finishes if this fails).
pub async fn give_up(
    meta: &dyn MetadataStore,
    store: &dyn ObjectStore,
    datasource: &str,
    begun: &Begun,
    written: &[SegmentRecord],
) {
    match abandon(meta, datasource, &begun.item, begun.version, now_ms()).await {
        Ok(Some(_)) => discard(meta, store, datasource, written).await,
        Ok(None) => {}
        Err(e) => {
            tracing::warn!(datasource, replace = begun.item.id, error = %e, "could not abandon a replace; cleanup will")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compacted_versions_are_newer_than_what_they_replace() {
        let now = 1_000_000;
        let older = format_iso(now - 5);
        assert_eq!(newer_version(now, [older.as_str()].into_iter()), format_iso(now));
        let ahead = format_iso(now + 60_000);
        assert_eq!(newer_version(now, [ahead.as_str()].into_iter()), format_iso(now + 60_001), "a clock behind");
        let this_pass = format_iso(now);
        assert_eq!(newer_version(now, [this_pass.as_str()].into_iter()), format_iso(now + 1), "a second part");
    }
}
