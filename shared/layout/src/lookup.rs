//! The body of a lookup's item (`lookups` partition key): the version it holds and the object
//! in deep storage that holds its map (`sluice-metastore`'s lookups read and write it).

use serde::{Deserialize, Serialize};

/// A lookup's item: where its map is and what it is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LookupItem {
    /// Its tier.
    pub tier: String,
    /// Its name.
    pub name: String,
    /// Its version, as given.
    pub version: String,
    /// The object holding its spec.
    pub key: String,
    /// Entries of its map.
    pub num_entries: u64,
}
