//! The embedded metadata store for local runs: one SQLite file (WAL journal, full sync), so a
//! write either happened or not, also across a `kill -9`. Transactions take SQLite's write
//! lock (`BEGIN IMMEDIATE`), check every condition, then apply every action.

use super::{check_item, check_transaction, holds, Condition, Item, MetaError, MetadataStore, SkRange, TxOp};
use async_trait::async_trait;
use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};
use std::path::Path;
use std::sync::{Arc, Mutex};

/// File name of the database inside the store's folder.
pub const DB_FILE: &str = "metadata.sqlite";

/// A metadata store in a local SQLite file.
#[derive(Debug, Clone)]
pub struct EmbeddedStore {
    url: String,
    conn: Arc<Mutex<Connection>>,
}

impl EmbeddedStore {
    /// Opens (creating when needed) the store in folder `dir`.
    pub fn open(url: &str, dir: &Path) -> Result<Self, MetaError> {
        let unavailable = |reason: String| MetaError::Unavailable { url: url.into(), reason };
        std::fs::create_dir_all(dir).map_err(|e| unavailable(format!("cannot create {}: {e}", dir.display())))?;
        let conn = Connection::open(dir.join(DB_FILE))
            .map_err(|e| unavailable(format!("cannot open {}: {e}", dir.join(DB_FILE).display())))?;
        conn.busy_timeout(std::time::Duration::from_secs(10)).map_err(|e| unavailable(e.to_string()))?;
        conn.execute_batch(
            "PRAGMA journal_mode = WAL;
             PRAGMA synchronous = FULL;
             CREATE TABLE IF NOT EXISTS items (
                 pk TEXT NOT NULL, sk TEXT NOT NULL, version INTEGER NOT NULL,
                 body TEXT NOT NULL, expires_at INTEGER,
                 PRIMARY KEY (pk, sk)) WITHOUT ROWID;",
        )
        .map_err(|e| unavailable(format!("cannot initialise {}: {e}", dir.join(DB_FILE).display())))?;
        Ok(Self { url: url.into(), conn: Arc::new(Mutex::new(conn)) })
    }

    fn failed(&self, operation: &'static str, e: impl std::fmt::Display) -> MetaError {
        MetaError::Failed { url: self.url.clone(), operation, message: e.to_string() }
    }

    async fn with<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Self, &mut Connection) -> Result<T, MetaError> + Send + 'static,
    ) -> Result<T, MetaError> {
        let this = self.clone();
        tokio::task::spawn_blocking(move || {
            let mut conn = this.conn.lock().map_err(|_| this.failed("lock", "a previous operation panicked"))?;
            f(&this, &mut conn)
        })
        .await
        .map_err(|e| self.failed("task", e))?
    }
}

fn read(conn: &Connection, pk: &str, sk: &str) -> rusqlite::Result<Option<Item>> {
    conn.query_row("SELECT version, body, expires_at FROM items WHERE pk = ?1 AND sk = ?2", params![pk, sk], |r| {
        let body: String = r.get(1)?;
        Ok(Item {
            pk: pk.into(),
            sk: sk.into(),
            version: r.get::<_, i64>(0)? as u64,
            body: serde_json::from_str(&body).unwrap_or(serde_json::Value::Null),
            expires_at: r.get(2)?,
        })
    })
    .optional()
}

fn write(conn: &Connection, item: &Item, version: u64) -> rusqlite::Result<()> {
    conn.execute(
        "INSERT INTO items (pk, sk, version, body, expires_at) VALUES (?1, ?2, ?3, ?4, ?5)
         ON CONFLICT (pk, sk) DO UPDATE SET version = excluded.version, body = excluded.body, expires_at = excluded.expires_at",
        params![item.pk, item.sk, version as i64, item.body.to_string(), item.expires_at],
    )?;
    Ok(())
}

#[async_trait]
impl MetadataStore for EmbeddedStore {
    fn url(&self) -> &str {
        &self.url
    }

    async fn get(&self, pk: &str, sk: &str) -> Result<Option<Item>, MetaError> {
        let (pk, sk) = (pk.to_string(), sk.to_string());
        self.with(move |s, c| read(c, &pk, &sk).map_err(|e| s.failed("get", e))).await
    }

    async fn query(&self, pk: &str, sk_prefix: &str) -> Result<Vec<Item>, MetaError> {
        self.query_range(pk, &SkRange::prefix(sk_prefix)).await
    }

    async fn query_range(&self, pk: &str, range: &SkRange) -> Result<Vec<Item>, MetaError> {
        if range.is_empty() {
            return Ok(Vec::new());
        }
        let (pk, range) = (pk.to_string(), range.clone());
        self.with(move |s, c| {
            // The primary key's index serves `pk = ? AND sk >= ? AND sk < ?` in either order.
            let order = if range.descending { "DESC" } else { "ASC" };
            let sql = format!(
                "SELECT sk, version, body, expires_at FROM items WHERE pk = ?1 AND sk >= ?2 AND sk < ?3 \
                 ORDER BY sk {order} LIMIT ?4"
            );
            let limit = range.limit.map_or(-1, |n| i64::try_from(n).unwrap_or(i64::MAX));
            let mut stmt = c.prepare_cached(&sql).map_err(|e| s.failed("query", e))?;
            let rows = stmt
                .query_map(params![pk, range.from, range.to, limit], |r| {
                    let body: String = r.get(2)?;
                    Ok(Item {
                        pk: pk.clone(),
                        sk: r.get(0)?,
                        version: r.get::<_, i64>(1)? as u64,
                        body: serde_json::from_str(&body).unwrap_or(serde_json::Value::Null),
                        expires_at: r.get(3)?,
                    })
                })
                .map_err(|e| s.failed("query", e))?;
            rows.collect::<Result<Vec<_>, _>>().map_err(|e| s.failed("query", e))
        })
        .await
    }

    async fn put(&self, item: Item, condition: Condition) -> Result<u64, MetaError> {
        check_item(&item)?;
        self.with(move |s, c| {
            let tx = c.transaction_with_behavior(TransactionBehavior::Immediate).map_err(|e| s.failed("put", e))?;
            let current = read(&tx, &item.pk, &item.sk).map_err(|e| s.failed("put", e))?;
            if !holds(condition, current.as_ref()) {
                return Err(MetaError::ConditionFailed {
                    pk: item.pk,
                    sk: item.sk,
                    condition,
                    current: current.map(Box::new),
                });
            }
            let version = current.map_or(1, |c| c.version + 1);
            write(&tx, &item, version).map_err(|e| s.failed("put", e))?;
            tx.commit().map_err(|e| s.failed("put", e))?;
            Ok(version)
        })
        .await
    }

    async fn delete(&self, pk: &str, sk: &str, condition: Condition) -> Result<(), MetaError> {
        let (pk, sk) = (pk.to_string(), sk.to_string());
        self.with(move |s, c| {
            let tx = c.transaction_with_behavior(TransactionBehavior::Immediate).map_err(|e| s.failed("delete", e))?;
            let current = read(&tx, &pk, &sk).map_err(|e| s.failed("delete", e))?;
            if !holds(condition, current.as_ref()) {
                return Err(MetaError::ConditionFailed { pk, sk, condition, current: current.map(Box::new) });
            }
            tx.execute("DELETE FROM items WHERE pk = ?1 AND sk = ?2", params![pk, sk])
                .map_err(|e| s.failed("delete", e))?;
            tx.commit().map_err(|e| s.failed("delete", e))
        })
        .await
    }

    async fn transact(&self, ops: Vec<TxOp>) -> Result<(), MetaError> {
        check_transaction(&ops)?;
        self.with(move |s, c| {
            let tx =
                c.transaction_with_behavior(TransactionBehavior::Immediate).map_err(|e| s.failed("transact", e))?;
            let mut versions = Vec::with_capacity(ops.len());
            for (index, op) in ops.iter().enumerate() {
                let (pk, sk) = op.key();
                let current = read(&tx, pk, sk).map_err(|e| s.failed("transact", e))?;
                if !holds(op.condition(), current.as_ref()) {
                    // Dropping `tx` rolls back: nothing was written yet anyway.
                    return Err(MetaError::transaction_failed(index, op, current));
                }
                versions.push(current.map_or(1, |c| c.version + 1));
            }
            for (op, version) in ops.iter().zip(versions) {
                match op {
                    TxOp::Put { item, .. } => write(&tx, item, version).map_err(|e| s.failed("transact", e))?,
                    TxOp::Delete { pk, sk, .. } => {
                        tx.execute("DELETE FROM items WHERE pk = ?1 AND sk = ?2", params![pk, sk])
                            .map_err(|e| s.failed("transact", e))?;
                    }
                    TxOp::Check { .. } => {}
                }
            }
            tx.commit().map_err(|e| s.failed("transact", e))
        })
        .await
    }
}
