//! Druid's lookups: `map` lookups by tier and name, each an item in the metadata store naming
//! its version and the object in deep storage that holds its map.
//!
//! ```text
//!  write   read the item -> the version must be greater (compared as strings, as Druid does)
//!          -> put the map as a new object (never overwritten) -> put the item on the
//!          condition that it is still what was read
//!  read    one query of the lookups' items (a query sees each lookup at one version)
//!          -> each map's object, cached by key (an object never changes under its key)
//! ```
//!
//! A query that fans out hands its workers the lookups' object keys ([`LookupRef`]), so that
//! they read the same versions.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use sluice_format::lookup::{KeyedTable, Lookups};
use sluice_layout::keys::{lookup_key, lookup_sk, LOOKUPS_PK, LOOKUP_PREFIX};
pub use sluice_layout::lookup::LookupItem;
use sluice_store::metadata::{Condition, Item, MetaError, MetadataStore, TxOp};
use sluice_store::storage::{ObjectStore, StorageError};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex, PoisonError};

/// The tier queries read: Druid's `druid.lookup.lookupTier` default.
pub const DEFAULT_TIER: &str = "__default";
/// Most entries of one lookup's map.
pub const MAX_ENTRIES: usize = 1_000_000;
/// Most bytes of one lookup's JSON.
pub const MAX_LOOKUP_BYTES: usize = 64 << 20;
/// Longest tier or lookup name, in bytes.
pub const MAX_NAME_BYTES: usize = 256;
/// Most lookups in the metadata store.
pub const MAX_LOOKUPS: usize = 10_000;
/// Bytes of maps a [`LookupCache`] keeps (their keys and values, and [`ENTRY_BYTES`] an entry).
pub const CACHED_BYTES: usize = 512 << 20;
/// Most bytes of the maps one query reads, counted as [`CACHED_BYTES`] are.
pub const MAX_QUERY_LOOKUP_BYTES: usize = 256 << 20;
/// Bytes an entry of a map held in memory takes besides its key and value.
pub const ENTRY_BYTES: usize = 112;

/// Errors of lookup operations.
#[derive(Debug, thiserror::Error)]
pub enum LookupError {
    /// The lookup's JSON is not a lookup Sluice serves.
    #[error("lookup {tier}/{name}: {reason}")]
    Invalid {
        /// The tier.
        tier: String,
        /// The lookup.
        name: String,
        /// Why.
        reason: String,
    },
    /// The version is not greater than the current one.
    #[error("given update for lookup [{tier}]:[{name}] can't replace existing spec: version {given:?} is not greater than {current:?}")]
    NotNewer {
        /// The tier.
        tier: String,
        /// The lookup.
        name: String,
        /// The version given.
        given: String,
        /// The version held.
        current: String,
    },
    /// Another write changed the lookup meanwhile.
    #[error("lookup [{tier}]:[{name}] changed while it was written: read it again")]
    Conflict {
        /// The tier.
        tier: String,
        /// The lookup.
        name: String,
    },
    /// An item or object read back is not what this module writes.
    #[error("lookup {at}: {reason}")]
    Damaged {
        /// The item or object.
        at: String,
        /// Why.
        reason: String,
    },
    /// The lookups a query names hold more than it may read.
    #[error("the lookups the query names ({names}) hold more than {max} bytes in memory: name fewer")]
    TooLarge {
        /// The lookups read, in order, up to the one past the bound.
        names: String,
        /// The bound.
        max: usize,
    },
    /// The metadata store failed.
    #[error(transparent)]
    Metadata(#[from] MetaError),
    /// Deep storage failed.
    #[error(transparent)]
    Storage(#[from] StorageError),
}

/// What a query's workers need to read a lookup at the version the query sees.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LookupRef {
    /// Its name.
    pub name: String,
    /// The object holding its spec.
    pub key: String,
}

/// A `map` lookup as Druid's API takes it: `{"version": ..., "lookupExtractorFactory":
/// {"type": "map", "map": {...}, "isOneToOne": ...}}`.
#[derive(Debug, Clone, PartialEq)]
pub struct LookupSpec {
    /// The version.
    pub version: String,
    /// Keys to values.
    pub map: BTreeMap<String, String>,
    /// Whether no two keys share a value (Druid's `isOneToOne`).
    pub one_to_one: bool,
}

impl LookupSpec {
    /// Reads Druid's JSON for lookup `tier`/`name`.
    pub fn parse(tier: &str, name: &str, value: &Value) -> Result<Self, LookupError> {
        let invalid = |reason: String| LookupError::Invalid { tier: tier.into(), name: name.into(), reason };
        let version = match value.get("version") {
            Some(Value::String(v)) if !v.is_empty() && v.len() <= MAX_NAME_BYTES => v.clone(),
            _ => return Err(invalid(format!("\"version\" must be a string of 1 to {MAX_NAME_BYTES} bytes"))),
        };
        let factory =
            value.get("lookupExtractorFactory").ok_or_else(|| invalid("needs a lookupExtractorFactory".into()))?;
        match factory.get("type").and_then(Value::as_str) {
            Some("map") => {}
            Some(other) => {
                return Err(invalid(format!(
                    "lookupExtractorFactory type {:?} is not supported: only \"map\" lookups are served",
                    sluice_format::text::excerpt(other, 40)
                )))
            }
            None => return Err(invalid("lookupExtractorFactory needs a \"type\"".into())),
        }
        let Some(Value::Object(entries)) = factory.get("map") else {
            return Err(invalid("a map lookup needs \"map\": an object of strings".into()));
        };
        if entries.len() > MAX_ENTRIES {
            return Err(invalid(format!("more than {MAX_ENTRIES} entries")));
        }
        let mut map = BTreeMap::new();
        for (k, v) in entries {
            match v {
                Value::String(v) => map.insert(k.clone(), v.clone()),
                _ => {
                    let k = sluice_format::text::excerpt(k, 80);
                    return Err(invalid(format!("the value of key {k:?} is not a string")));
                }
            };
        }
        let one_to_one = factory.get("isOneToOne").and_then(Value::as_bool).unwrap_or(false);
        Ok(Self { version, map, one_to_one })
    }

    /// The lookup as Druid's API answers it.
    pub fn to_json(&self) -> Value {
        json!({"version": self.version, "lookupExtractorFactory": {"type": "map", "map": self.map, "isOneToOne": self.one_to_one}})
    }
}

/// A tier or lookup name that cannot name one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what} name must be 1 to {MAX_NAME_BYTES} bytes without control characters")]
pub struct BadName {
    /// What it names: `tier` or `lookup`.
    pub what: &'static str,
}

/// Refuses a tier or lookup name that cannot name one (empty, too long, control characters).
pub fn check_name(what: &'static str, name: &str) -> Result<(), BadName> {
    if name.is_empty() || name.len() > MAX_NAME_BYTES || name.chars().any(char::is_control) {
        return Err(BadName { what });
    }
    Ok(())
}

/// Every lookup's item, by tier then name.
pub async fn list(meta: &dyn MetadataStore) -> Result<Vec<LookupItem>, LookupError> {
    let items = meta.query(LOOKUPS_PK, LOOKUP_PREFIX).await?;
    items.iter().map(item_body).collect()
}

fn item_body(item: &Item) -> Result<LookupItem, LookupError> {
    serde_json::from_value(item.body.clone())
        .map_err(|e| LookupError::Damaged { at: format!("item {}/{}", item.pk, item.sk), reason: e.to_string() })
}

/// Lookup `tier`/`name`'s item and its store version, if it exists.
pub async fn item(meta: &dyn MetadataStore, tier: &str, name: &str) -> Result<Option<(LookupItem, u64)>, LookupError> {
    // No tier holds '#': its key would be another lookup's.
    if tier.contains('#') {
        return Ok(None);
    }
    match meta.get(LOOKUPS_PK, &lookup_sk(tier, name)).await? {
        Some(item) => Ok(Some((item_body(&item)?, item.version))),
        None => Ok(None),
    }
}

/// Lookup `tier`/`name` as Druid's API answers it, if it exists.
pub async fn read(
    meta: &dyn MetadataStore,
    store: &dyn ObjectStore,
    tier: &str,
    name: &str,
) -> Result<Option<LookupSpec>, LookupError> {
    match item(meta, tier, name).await? {
        Some((item, _)) => Ok(Some(read_object(store, &item.key, Some(&item)).await?.1)),
        None => Ok(None),
    }
}

/// Creates or replaces lookup `tier`/`name` with `spec`, whose version must be greater than
/// the one it replaces.
pub async fn put(
    meta: &dyn MetadataStore,
    store: &dyn ObjectStore,
    tier: &str,
    name: &str,
    spec: &LookupSpec,
) -> Result<(), LookupError> {
    put_all(meta, store, &[(tier.to_string(), name.to_string(), spec.clone())]).await
}

/// Most lookups one update writes: the metadata store's transaction limit.
pub const MAX_UPDATE: usize = sluice_store::metadata::MAX_TRANSACTION_ACTIONS;

/// Creates or replaces every lookup of `updates` (tier, name, spec) at once, as Druid's bulk
/// update does: all or none, each version greater than the one it replaces.
pub async fn put_all(
    meta: &dyn MetadataStore,
    store: &dyn ObjectStore,
    updates: &[(String, String, LookupSpec)],
) -> Result<(), LookupError> {
    if updates.len() > MAX_UPDATE {
        let (tier, name, _) = &updates[0];
        let reason = format!("one update writes at most {MAX_UPDATE} lookups");
        return Err(LookupError::Invalid { tier: tier.clone(), name: name.clone(), reason });
    }
    let held = list(meta).await?;
    let mut ops = Vec::with_capacity(updates.len());
    let mut written = Vec::with_capacity(updates.len());
    let mut new = 0;
    for (tier, name, spec) in updates {
        let invalid = |reason: String| LookupError::Invalid { tier: tier.clone(), name: name.clone(), reason };
        check_name("tier", tier).map_err(|e| invalid(e.to_string()))?;
        if tier.contains('#') {
            return Err(invalid("a tier name may not hold '#'".into()));
        }
        check_name("lookup", name).map_err(|e| invalid(e.to_string()))?;
        let condition = match item(meta, tier, name).await? {
            Some((current, _)) if spec.version <= current.version => {
                return Err(LookupError::NotNewer {
                    tier: tier.clone(),
                    name: name.clone(),
                    given: spec.version.clone(),
                    current: current.version,
                })
            }
            Some((_, version)) => Condition::Version(version),
            None => {
                new += 1;
                Condition::Absent
            }
        };
        if held.len() + new > MAX_LOOKUPS {
            return Err(invalid(format!("no more than {MAX_LOOKUPS} lookups may be defined")));
        }
        let body = json!({"tier": tier, "name": name, "spec": spec.to_json()}).to_string();
        if body.len() > MAX_LOOKUP_BYTES {
            return Err(invalid(format!("more than {MAX_LOOKUP_BYTES} bytes of JSON")));
        }
        let entry = LookupItem {
            tier: tier.clone(),
            name: name.clone(),
            version: spec.version.clone(),
            key: lookup_key(name_digest(tier, name), write_digest(tier, name, &spec.version)),
            num_entries: spec.map.len() as u64,
        };
        let item_body = serde_json::to_value(&entry).map_err(|e| invalid(e.to_string()))?;
        ops.push(TxOp::Put { item: Item::new(LOOKUPS_PK, lookup_sk(tier, name), item_body), condition });
        written.push((entry, body));
    }
    for (entry, body) in &written {
        store.put_if_absent(&entry.key, bytes::Bytes::from(body.clone())).await?;
    }
    match meta.transact(ops).await {
        // A map it replaced stays until no query can be reading it: a janitor's work.
        Ok(()) => Ok(()),
        Err(MetaError::TransactionFailed { index, .. }) => {
            // Nothing points at the objects written for this attempt.
            for (entry, _) in &written {
                let _ = store.delete(&entry.key).await;
            }
            let (tier, name) = written.get(index).map(|(e, _)| (e.tier.clone(), e.name.clone())).unwrap_or_default();
            Err(LookupError::Conflict { tier, name })
        }
        Err(e) => Err(e.into()),
    }
}

/// Deletes lookup `tier`/`name`; false when it did not exist.
pub async fn remove(meta: &dyn MetadataStore, tier: &str, name: &str) -> Result<bool, LookupError> {
    if tier.contains('#') {
        return Ok(false);
    }
    match meta.delete(LOOKUPS_PK, &lookup_sk(tier, name), Condition::Exists).await {
        Ok(()) => Ok(true),
        Err(MetaError::ConditionFailed { .. }) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

fn name_digest(tier: &str, name: &str) -> u64 {
    let mut h = xxhash_rust::xxh64::Xxh64::new(0);
    h.update(tier.as_bytes());
    h.update(b"\0");
    h.update(name.as_bytes());
    h.digest()
}

fn write_digest(tier: &str, name: &str, version: &str) -> u64 {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    let mut h = xxhash_rust::xxh64::Xxh64::new(u64::from(std::process::id()));
    for part in [tier.as_bytes(), name.as_bytes(), version.as_bytes(), &now.to_le_bytes()] {
        h.update(part);
        h.update(b"\0");
    }
    h.digest()
}

/// The spec in object `key`, checked to be the one `item` names when given.
async fn read_object(
    store: &dyn ObjectStore,
    key: &str,
    item: Option<&LookupItem>,
) -> Result<(String, LookupSpec), LookupError> {
    let bytes = store.get(key).await?;
    let damaged = |reason: String| LookupError::Damaged { at: format!("object {key:?}"), reason };
    let value: Value = serde_json::from_slice(&bytes).map_err(|e| damaged(e.to_string()))?;
    let (Some(tier), Some(name), Some(spec)) =
        (value.get("tier").and_then(Value::as_str), value.get("name").and_then(Value::as_str), value.get("spec"))
    else {
        return Err(damaged("expected {\"tier\", \"name\", \"spec\"}".into()));
    };
    let spec = LookupSpec::parse(tier, name, spec).map_err(|e| damaged(e.to_string()))?;
    if let Some(item) = item {
        if (item.tier.as_str(), item.name.as_str(), item.version.as_str()) != (tier, name, spec.version.as_str()) {
            return Err(damaged(format!("holds {tier}/{name} version {:?}, not the item's", spec.version)));
        }
    }
    Ok((name.to_string(), spec))
}

/// Maps read from deep storage by object key, each with the bytes it holds, kept while they
/// hold at most [`CACHED_BYTES`] together (past it, emptied; a map larger than that is read for
/// its query and not kept).
#[derive(Debug)]
pub struct LookupCache {
    tables: Mutex<HashMap<String, (Arc<KeyedTable>, usize)>>,
    capacity: usize,
}

impl Default for LookupCache {
    fn default() -> Self {
        Self::with_capacity(CACHED_BYTES)
    }
}

impl LookupCache {
    /// A cache keeping maps of at most `capacity` bytes together.
    pub fn with_capacity(capacity: usize) -> Self {
        Self { tables: Mutex::default(), capacity }
    }

    /// Bytes of the maps kept.
    pub fn num_bytes(&self) -> usize {
        self.tables.lock().unwrap_or_else(PoisonError::into_inner).values().map(|(_, n)| n).sum()
    }

    /// The map in object `key` and the bytes it holds.
    async fn table(
        &self,
        store: &dyn ObjectStore,
        key: &str,
        item: Option<&LookupItem>,
    ) -> Result<(Arc<KeyedTable>, usize), LookupError> {
        if let Some(hit) = self.tables.lock().unwrap_or_else(PoisonError::into_inner).get(key) {
            return Ok(hit.clone());
        }
        let (name, spec) = read_object(store, key, item).await?;
        let num_bytes = spec.map.iter().map(|(k, v)| k.len() + v.len() + ENTRY_BYTES).sum::<usize>();
        // Versioned by its object, unique per write: a lookup deleted and written again at the
        // same version is another map, and cached partials must not mistake one for the other.
        let table = KeyedTable::lookup(&name, key, spec.map);
        let mut tables = self.tables.lock().unwrap_or_else(PoisonError::into_inner);
        if tables.values().map(|(_, n)| n).sum::<usize>() + num_bytes > self.capacity {
            tables.clear();
        }
        if num_bytes <= self.capacity {
            tables.insert(key.to_string(), (table.clone(), num_bytes));
        }
        Ok((table, num_bytes))
    }
}

/// The lookups a query reads, counted against a bound ([`MAX_QUERY_LOOKUP_BYTES`]) as they
/// are added.
struct Read {
    lookups: Lookups,
    num_bytes: usize,
    names: Vec<String>,
    max: usize,
}

impl Read {
    fn within(max: usize) -> Self {
        Self { lookups: Lookups::new(), num_bytes: 0, names: Vec::new(), max }
    }

    fn add(&mut self, name: String, (table, num_bytes): (Arc<KeyedTable>, usize)) -> Result<(), LookupError> {
        self.num_bytes = self.num_bytes.saturating_add(num_bytes);
        self.names.push(name.clone());
        if self.num_bytes > self.max {
            let names = self.names.iter().map(|n| format!("{:?}", sluice_format::text::excerpt(n, 64)));
            return Err(LookupError::TooLarge { names: names.collect::<Vec<_>>().join(", "), max: self.max });
        }
        self.lookups.insert(name, table);
        Ok(())
    }
}

/// The lookups of `tier` named in `names` (what a query's text could name a lookup with: see
/// [`names_in_json`]), as the query sees them now, and their refs for its workers: a query
/// reads only a lookup whose whole name it holds, and at most [`MAX_QUERY_LOOKUP_BYTES`].
pub async fn load(
    meta: &dyn MetadataStore,
    store: &dyn ObjectStore,
    cache: &LookupCache,
    tier: &str,
    names: &BTreeSet<String>,
) -> Result<(Arc<Lookups>, Vec<LookupRef>), LookupError> {
    let mut read = Read::within(MAX_QUERY_LOOKUP_BYTES);
    let mut refs = Vec::new();
    if names.is_empty() {
        return Ok((Arc::new(read.lookups), refs));
    }
    for item in list(meta).await?.into_iter().filter(|i| i.tier == tier && names.contains(&i.name)) {
        let table = cache.table(store, &item.key, Some(&item)).await?;
        refs.push(LookupRef { name: item.name.clone(), key: item.key.clone() });
        read.add(item.name, table)?;
    }
    Ok((Arc::new(read.lookups), refs))
}

/// The names a native query's JSON could read a lookup by: each of its strings whole (a
/// `registeredLookup`, a lookup datasource or dimension spec) and each single-quoted literal
/// inside one (an expression's `lookup(x, 'name')`).
pub fn names_in_json(value: &Value) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut stack = vec![value];
    while let Some(v) = stack.pop() {
        match v {
            Value::String(s) => {
                names.extend(s.split('\'').skip(1).step_by(2).map(str::to_string));
                names.insert(s.clone());
            }
            Value::Array(items) => stack.extend(items),
            Value::Object(fields) => stack.extend(fields.values()),
            _ => {}
        }
    }
    names
}

/// The lookups `refs` name, as the query that handed them over sees them, at most
/// [`MAX_QUERY_LOOKUP_BYTES`].
pub async fn load_refs(
    store: &dyn ObjectStore,
    cache: &LookupCache,
    refs: &[LookupRef],
) -> Result<Arc<Lookups>, LookupError> {
    let mut read = Read::within(MAX_QUERY_LOOKUP_BYTES);
    for r in refs.iter().take(MAX_LOOKUPS) {
        let table = cache.table(store, &r.key, None).await?;
        if table.0.name() != r.name {
            return Err(LookupError::Damaged {
                at: format!("object {:?}", r.key),
                reason: format!("holds lookup {:?}, not {:?}", table.0.name(), r.name),
            });
        }
        read.add(r.name.clone(), table)?;
    }
    Ok(Arc::new(read.lookups))
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_store::metadata::open_metadata;
    use sluice_store::storage::open_store;

    async fn stores(dir: &std::path::Path) -> (Arc<dyn MetadataStore>, Arc<dyn ObjectStore>) {
        let meta = open_metadata(&format!("file://{}/meta", dir.display())).await.expect("metadata");
        let store = open_store(&format!("file://{}/objects", dir.display())).await.expect("storage");
        (meta, store)
    }

    fn spec(version: &str, entries: &[(&str, &str)]) -> LookupSpec {
        let map: serde_json::Map<String, Value> = entries.iter().map(|(k, v)| (k.to_string(), json!(v))).collect();
        LookupSpec::parse("t", "n", &json!({"version": version, "lookupExtractorFactory": {"type": "map", "map": map}}))
            .expect("a map lookup")
    }

    #[tokio::test]
    async fn a_lookup_is_replaced_only_by_a_greater_version_and_read_at_the_one_it_has() {
        let dir = tempfile::tempdir().expect("dir");
        let (meta, store) = stores(dir.path()).await;
        let (meta, store) = (meta.as_ref(), store.as_ref());
        put(meta, store, DEFAULT_TIER, "codes", &spec("v1", &[("US", "United States")])).await.expect("created");
        let e = put(meta, store, DEFAULT_TIER, "codes", &spec("v1", &[("US", "USA")])).await.expect_err("same version");
        assert!(matches!(e, LookupError::NotNewer { .. }), "{e}");
        let e = put(meta, store, DEFAULT_TIER, "codes", &spec("v0", &[])).await.expect_err("older");
        assert!(e.to_string().contains("\"v0\" is not greater than \"v1\""), "{e}");
        put(meta, store, DEFAULT_TIER, "codes", &spec("v2", &[("US", "USA")])).await.expect("replaced");
        put(meta, store, "other", "codes", &spec("a", &[("US", "elsewhere")])).await.expect("another tier");
        let read_back = read(meta, store, DEFAULT_TIER, "codes").await.expect("reads").expect("exists");
        assert_eq!(read_back, spec("v2", &[("US", "USA")]));
        let cache = LookupCache::default();
        let (lookups, refs) = load(meta, store, &cache, DEFAULT_TIER, &names(&["codes"])).await.expect("loads");
        let us = sluice_format::value::Value::String("US".into());
        assert_eq!(lookups["codes"].value(&us, 1), Some(&sluice_format::value::Value::String("USA".into())));
        assert_eq!(lookups.len(), 1, "one tier's lookups");
        let again = load_refs(store, &LookupCache::default(), &refs).await.expect("the same versions");
        assert_eq!(again["codes"].version(), refs[0].key, "versioned by the object of its write");
        assert!(remove(meta, DEFAULT_TIER, "codes").await.expect("removes"));
        assert!(!remove(meta, DEFAULT_TIER, "codes").await.expect("nothing to remove"));
        assert!(read(meta, store, DEFAULT_TIER, "codes").await.expect("reads").is_none());
    }

    #[tokio::test]
    async fn what_is_not_a_map_lookup_is_refused_and_a_damaged_object_is_named() {
        let parse = |v: Value| LookupSpec::parse("t", "n", &v).expect_err("refused").to_string();
        let cached = json!({"version": "v0", "lookupExtractorFactory": {"type": "cachedNamespace"}});
        assert!(parse(cached).contains("type \"cachedNamespace\" is not supported"));
        let number = json!({"version": "v0", "lookupExtractorFactory": {"type": "map", "map": {"a": 1}}});
        assert!(parse(number).contains("the value of key \"a\" is not a string"));
        assert!(parse(json!({"lookupExtractorFactory": {"type": "map", "map": {}}})).contains("\"version\""));
        let dir = tempfile::tempdir().expect("dir");
        let (meta, store) = stores(dir.path()).await;
        let hashed = put(meta.as_ref(), store.as_ref(), "a#b", "c", &spec("v1", &[])).await.expect_err("refused");
        assert!(hashed.to_string().contains("may not hold '#'"), "{hashed}");
        let dir = tempfile::tempdir().expect("dir");
        let (meta, store) = stores(dir.path()).await;
        put(meta.as_ref(), store.as_ref(), DEFAULT_TIER, "codes", &spec("v1", &[])).await.expect("created");
        let (item, _) = item(meta.as_ref(), DEFAULT_TIER, "codes").await.expect("reads").expect("exists");
        store.put(&item.key, bytes::Bytes::from_static(b"{not json")).await.expect("overwritten");
        let e = load(meta.as_ref(), store.as_ref(), &LookupCache::default(), DEFAULT_TIER, &names(&["codes"]))
            .await
            .expect_err("damaged");
        assert!(e.to_string().contains(&item.key), "{e}");
    }

    fn names(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|n| n.to_string()).collect()
    }

    #[tokio::test]
    async fn a_query_loads_the_lookups_it_names_whole_within_its_bytes() {
        let dir = tempfile::tempdir().expect("dir");
        let (meta, store) = stores(dir.path()).await;
        let (meta, store) = (meta.as_ref(), store.as_ref());
        let big: Vec<(String, String)> = (0..100).map(|i| (format!("k{i}"), "v".repeat(100))).collect();
        let big: Vec<(&str, &str)> = big.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        for name in ["a", "codes", "countries"] {
            put(meta, store, DEFAULT_TIER, name, &spec("v1", &big)).await.expect("created");
        }
        // A query whose text holds the letter `a` and the word `countries` nowhere whole names
        // only the lookup it reads.
        let query = json!({"queryType": "scan", "dataSource": "pages_and_countries", "virtualColumns": [
            {"type": "expression", "name": "v", "expression": "lookup(page, 'codes')"}]});
        let named = names_in_json(&query);
        assert!(named.contains("codes") && !named.contains("a") && !named.contains("countries"), "{named:?}");
        let cache = LookupCache::default();
        let (lookups, refs) = load(meta, store, &cache, DEFAULT_TIER, &named).await.expect("loads");
        assert_eq!((lookups.len(), refs.len()), (1, 1));
        assert!(lookups.get("codes").is_some());
        // Each map holds 100 entries of 4 + 100 bytes and 112 besides: 21,500 bytes or so.
        let one = cache.num_bytes();
        assert!((20_000..23_000).contains(&one), "{one}");
        let mut read = Read::within(one * 2);
        read.add("a".into(), cache.table(store, &refs[0].key, None).await.expect("cached")).expect("one");
        read.add("b".into(), cache.table(store, &refs[0].key, None).await.expect("cached")).expect("two");
        let e = read.add("c".into(), cache.table(store, &refs[0].key, None).await.expect("cached")).expect_err("three");
        assert!(e.to_string().contains("(\"a\", \"b\", \"c\") hold more than"), "{e}");
        // The cache keeps maps by their bytes: a second map past its capacity empties it.
        let small = LookupCache::with_capacity(one + one / 2);
        let all = names(&["a", "codes", "countries"]);
        let (lookups, _) = load(meta, store, &small, DEFAULT_TIER, &all).await.expect("loads");
        assert_eq!(lookups.len(), 3);
        assert_eq!(small.num_bytes(), one, "only the last map kept");
    }
}
