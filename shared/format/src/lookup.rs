//! Tables read by key at query time: a Druid lookup's map (`k` -> `v`) and the right side of a
//! join (rows keyed by the column its condition names). Keys are compared as strings, as
//! Druid's lookups compare them: `7`, `7` as text and `"7"` are one key, a null key matches
//! nothing.

use crate::value::Value;
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::Arc;

/// Most rows a keyed table holds: Druid's `maxSubqueryRows` bounds a join's right side the
/// same way.
pub const MAX_KEYED_ROWS: usize = 1_000_000;

/// Why a keyed table cannot be built.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum KeyedError {
    /// Two rows hold the same key.
    #[error("{table}: key {key:?} is held by more than one row (a join's right side must hold each key once)")]
    DuplicateKey {
        /// The table.
        table: String,
        /// The key, cut.
        key: String,
    },
    /// The key column is not one of the table's columns.
    #[error("{table}: no column {column:?} to key by (columns: {columns})")]
    NoKeyColumn {
        /// The table.
        table: String,
        /// The column asked for.
        column: String,
        /// The columns it has.
        columns: String,
    },
    /// More rows than [`MAX_KEYED_ROWS`].
    #[error("{table}: more than {MAX_KEYED_ROWS} rows")]
    TooManyRows {
        /// The table.
        table: String,
    },
    /// A row holds another number of values than the table has columns.
    #[error("{table}: row {row} holds {found} values for {expected} columns")]
    RowWidth {
        /// The table.
        table: String,
        /// The row's index.
        row: usize,
        /// Values it holds.
        found: usize,
        /// Columns of the table.
        expected: usize,
    },
}

/// Rows by key: the key of each is one of its columns.
pub struct KeyedTable {
    name: String,
    version: String,
    columns: Vec<String>,
    rows: HashMap<String, Box<[Value]>>,
}

impl KeyedTable {
    /// A lookup's map as a table of columns `k` and `v`, keyed by `k`.
    pub fn lookup(name: &str, version: &str, map: impl IntoIterator<Item = (String, String)>) -> Arc<Self> {
        let rows = map
            .into_iter()
            .map(|(k, v)| {
                let row: Box<[Value]> = Box::new([Value::String(k.clone()), Value::String(v)]);
                (k, row)
            })
            .collect();
        Arc::new(Self { name: name.into(), version: version.into(), columns: vec!["k".into(), "v".into()], rows })
    }

    /// `rows` of `columns` keyed by column `key`: a row with a null key is dropped (it can
    /// match nothing); a key held twice is refused. The version names the content, so that
    /// equal tables compare equal and different ones do not.
    pub fn from_rows(
        name: &str,
        columns: Vec<String>,
        key: &str,
        rows: Vec<Vec<Value>>,
    ) -> Result<Arc<Self>, KeyedError> {
        let Some(at) = columns.iter().position(|c| c == key) else {
            return Err(KeyedError::NoKeyColumn {
                table: name.into(),
                column: crate::text::excerpt(key, 80).into_owned(),
                columns: crate::text::excerpt(&columns.join(", "), 200).into_owned(),
            });
        };
        if rows.len() > MAX_KEYED_ROWS {
            return Err(KeyedError::TooManyRows { table: name.into() });
        }
        let mut hasher = std::hash::DefaultHasher::new();
        let mut keyed = HashMap::with_capacity(rows.len());
        for (i, row) in rows.into_iter().enumerate() {
            if row.len() != columns.len() {
                return Err(KeyedError::RowWidth {
                    table: name.into(),
                    row: i,
                    found: row.len(),
                    expected: columns.len(),
                });
            }
            let Some(k) = row[at].as_str().map(|k| k.into_owned()) else {
                continue;
            };
            std::hash::Hash::hash(&k, &mut hasher);
            for v in &row {
                // Debug names the type too: 1 and "1", null and "null" differ.
                std::hash::Hash::hash(&format!("{v:?}"), &mut hasher);
            }
            if keyed.contains_key(&k) {
                return Err(KeyedError::DuplicateKey {
                    table: name.into(),
                    key: crate::text::excerpt(&k, 80).into_owned(),
                });
            }
            keyed.insert(k, row.into_boxed_slice());
        }
        let version = format!("{:016x}", std::hash::Hasher::finish(&hasher));
        Ok(Arc::new(Self { name: name.into(), version, columns, rows: keyed }))
    }

    /// The table's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The version of its content.
    pub fn version(&self) -> &str {
        &self.version
    }

    /// Its columns.
    pub fn columns(&self) -> &[String] {
        &self.columns
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Whether it holds no key.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The row holding `key`, if any (a null key matches nothing).
    pub fn row(&self, key: &Value) -> Option<&[Value]> {
        self.rows.get(key.as_str()?.as_ref()).map(|r| &r[..])
    }

    /// The rows, in no order.
    pub fn rows(&self) -> impl Iterator<Item = &[Value]> {
        self.rows.values().map(|r| &r[..])
    }

    /// A lookup's value for `key`, if it holds one.
    pub fn value(&self, key: &Value, column: usize) -> Option<&Value> {
        self.row(key).and_then(|r| r.get(column))
    }
}

impl fmt::Debug for KeyedTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "KeyedTable({:?}@{}, {} keys)", self.name, self.version, self.rows.len())
    }
}

impl PartialEq for KeyedTable {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name && self.version == other.version && self.columns == other.columns
    }
}

/// Lookups by name, each at one version: what one query reads.
pub type Lookups = BTreeMap<String, Arc<KeyedTable>>;

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &str) -> Value {
        Value::String(v.into())
    }

    #[test]
    fn keys_compare_as_strings_and_null_matches_nothing() {
        let t = KeyedTable::from_rows(
            "t",
            vec!["id".into(), "name".into()],
            "id",
            vec![vec![Value::Long(7), s("seven")], vec![Value::Null, s("none")]],
        )
        .expect("built");
        assert_eq!(t.value(&s("7"), 1), Some(&s("seven")));
        assert_eq!(t.value(&Value::Long(7), 1), Some(&s("seven")));
        assert_eq!(t.row(&Value::Null), None);
        assert_eq!(t.len(), 1);
    }

    #[test]
    fn a_key_held_twice_is_refused_naming_it() {
        let e =
            KeyedTable::from_rows("t", vec!["k".into()], "k", vec![vec![s("a")], vec![s("a")]]).expect_err("refused");
        assert_eq!(e, KeyedError::DuplicateKey { table: "t".into(), key: "a".into() });
    }

    #[test]
    fn the_version_names_the_content() {
        let a = KeyedTable::from_rows("t", vec!["k".into()], "k", vec![vec![s("a")]]).expect("built");
        let b = KeyedTable::from_rows("t", vec!["k".into()], "k", vec![vec![s("b")]]).expect("built");
        let a2 = KeyedTable::from_rows("t", vec!["k".into()], "k", vec![vec![s("a")]]).expect("built");
        assert_ne!(a, b);
        assert_eq!(a, a2);
    }
}
