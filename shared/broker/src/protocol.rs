//! What a broker sends a query worker and what the worker answers: JSON events, as Lambda
//! carries them. The request names the query (as the broker received it), the deadline and
//! the segments of one batch (or, for a node of an invocation tree, several batches); the
//! answer carries the batch's partial (the wire format of `sluice_query::wire`, compressed
//! with zstd, in base64) or the query error the worker met. A partial larger than a Lambda
//! response holds is left in deep storage under the request's digest instead, and the answer
//! names it; the caller reads it and deletes it. Both sides check what they read: sizes before
//! parsing, every key, interval and count after.

use base64::Engine;
use serde::{Deserialize, Serialize};
use sluice_format::text::excerpt;
use sluice_format::time::Interval;
use sluice_layout::keys::{query_partial_key, query_partials_prefix};
use sluice_metastore::lookups::LookupRef;
use sluice_query::{Partial, Query, QueryError};
use sluice_store::storage::ObjectStore;
use std::io::Read;

/// Version of the request and answer; a worker refuses any other.
pub const VERSION: u32 = 1;
/// Most bytes of a request a worker reads (Lambda's synchronous payload limit is 6 MB).
pub const MAX_REQUEST_BYTES: usize = 6 << 20;
/// Most bytes of an answer: Lambda's synchronous response limit (6 MB).
pub const MAX_ANSWER_BYTES: usize = 6_000_000;
/// Most bytes of a partial's text inside an answer; a larger partial goes through deep storage.
pub const MAX_INLINE_PARTIAL_BYTES: usize = MAX_ANSWER_BYTES - 1024;
/// Most segments one request names, over all its batches.
pub const MAX_REQUEST_SEGMENTS: usize = 50_000;
/// Most batches one request names (the width of an invocation tree's node).
pub const MAX_REQUEST_BATCHES: usize = 1_000;

/// One segment of a batch: what a worker needs to open it and name it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BatchSegment {
    /// Druid's segment id.
    pub id: String,
    /// The object key in deep storage.
    pub key: String,
    /// The object's size.
    pub num_bytes: u64,
    /// The segment's time chunk.
    pub interval: Interval,
}

/// A worker's invocation.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WorkerRequest {
    /// [`VERSION`].
    pub version: u32,
    /// The query's JSON text, as the broker received it.
    pub query: String,
    /// When the broker gives up, milliseconds since the epoch.
    pub deadline_ms: i64,
    /// The batches: one for a leaf; several for a node of an invocation tree, which invokes
    /// a worker per batch and merges their partials.
    pub batches: Vec<Vec<BatchSegment>>,
    /// The lookups the query sees, at the versions the broker bound.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lookups: Vec<LookupRef>,
}

/// A worker's answer.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WorkerAnswer {
    /// [`VERSION`].
    pub version: u32,
    /// The partial (zstd-compressed wire bytes, base64), absent when the query failed or the
    /// partial is stored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partial: Option<String>,
    /// The object in deep storage holding the partial (zstd-compressed wire bytes) when its
    /// text would not fit in a Lambda response; the caller deletes it once read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partial_key: Option<String>,
    /// Why the query failed in the worker (its own error, not the worker's crash).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<WorkerQueryError>,
    /// Segments the worker (or its subtree) computed.
    pub segments: u64,
    /// Of those, segments whose partials came from its partial cache.
    #[serde(default)]
    pub cached: u64,
    /// Invocations the worker made as a node of an invocation tree.
    #[serde(default)]
    pub invocations: u64,
    /// [`digest`] of the request answered: an answer to another query or batch (a mix-up,
    /// a stale or misrouted response) is refused even when its partial has the right shape.
    pub digest: String,
}

/// What binds an answer to its request: a hash of the query, the lookups' objects and the
/// batches' keys.
pub fn digest(query: &str, lookups: &[LookupRef], batches: &[Vec<BatchSegment>]) -> String {
    let mut hasher = xxhash_rust::xxh64::Xxh64::new(VERSION.into());
    hasher.update(query.as_bytes());
    for l in lookups {
        hasher.update(b"\n");
        hasher.update(l.key.as_bytes());
    }
    for batch in batches {
        hasher.update(b"\n");
        for s in batch {
            hasher.update(s.key.as_bytes());
            hasher.update(b"\0");
        }
    }
    format!("{:016x}", hasher.digest())
}

/// A query error as it crosses the wire: its kind decides whether the broker retries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase", deny_unknown_fields)]
pub enum WorkerQueryError {
    /// The query is invalid (the same for every worker: never retried).
    Invalid {
        /// The field at fault.
        field: String,
        /// What was expected.
        reason: String,
    },
    /// A feature Sluice does not implement (never retried).
    Unsupported {
        /// What.
        message: String,
    },
    /// The query's deadline passed in the worker (never retried).
    Timeout {
        /// The timeout the query named.
        timeout_ms: u64,
    },
    /// A segment could not be read or is damaged (retried once: storage may recover).
    Source {
        /// What failed, naming the object.
        message: String,
    },
}

impl From<&QueryError> for WorkerQueryError {
    fn from(e: &QueryError) -> Self {
        match e {
            QueryError::Invalid { field, reason } => Self::Invalid { field: field.clone(), reason: reason.clone() },
            QueryError::Unsupported(m) => Self::Unsupported { message: m.clone() },
            QueryError::Timeout(ms) => Self::Timeout { timeout_ms: *ms },
            QueryError::Segment(e) => Self::Source { message: e.to_string() },
            QueryError::Source(m) => Self::Source { message: m.clone() },
        }
    }
}

impl WorkerQueryError {
    /// The query error, for the broker's caller.
    pub fn into_query_error(self) -> QueryError {
        match self {
            Self::Invalid { field, reason } => QueryError::Invalid { field, reason },
            Self::Unsupported { message } => QueryError::Unsupported(message),
            Self::Timeout { timeout_ms } => QueryError::Timeout(timeout_ms),
            Self::Source { message } => QueryError::Source(message),
        }
    }

    /// Whether another attempt may succeed.
    pub fn is_transient(&self) -> bool {
        matches!(self, Self::Source { .. })
    }
}

impl WorkerRequest {
    /// Reads a request, refusing what a broker would never send: too large, another version,
    /// no batch or an empty one, too many segments, a key that leaves the store's root, a
    /// backward interval.
    pub fn from_slice(bytes: &[u8]) -> Result<Self, QueryError> {
        let bad = |reason: String| QueryError::invalid("(worker request)", reason);
        if bytes.len() > MAX_REQUEST_BYTES {
            return Err(bad(format!("{} bytes, more than {MAX_REQUEST_BYTES}", bytes.len())));
        }
        let request: Self = serde_json::from_slice(bytes).map_err(|e| bad(e.to_string()))?;
        if request.version != VERSION {
            return Err(bad(format!("version {}, this worker reads {VERSION}", request.version)));
        }
        if request.batches.is_empty() || request.batches.len() > MAX_REQUEST_BATCHES {
            return Err(bad(format!("{} batches: from 1 to {MAX_REQUEST_BATCHES}", request.batches.len())));
        }
        let segments: usize = request.batches.iter().map(Vec::len).sum();
        if segments > MAX_REQUEST_SEGMENTS {
            return Err(bad(format!("{segments} segments, more than {MAX_REQUEST_SEGMENTS}")));
        }
        for (i, batch) in request.batches.iter().enumerate() {
            if batch.is_empty() {
                return Err(bad(format!("batch {i} is empty")));
            }
            for s in batch {
                if !sluice_query::source::is_relative_key(&s.key) {
                    return Err(bad(format!("segment key {:?} is not a relative object key", s.key)));
                }
                if s.interval.start >= s.interval.end {
                    return Err(bad(format!("segment {}: interval ends before it starts", s.key)));
                }
            }
        }
        Ok(request)
    }
}

/// A partial packed for the wire: its wire bytes, compressed with zstd.
pub fn pack_partial(partial: &Partial) -> Result<Vec<u8>, QueryError> {
    let wire = partial.to_bytes()?;
    zstd::bulk::compress(&wire, 1).map_err(|e| QueryError::Source(format!("compress a partial: {e}")))
}

/// How an answer carries a partial.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Carried {
    /// In the answer, as base64 text.
    Inline(String),
    /// In deep storage, under this key.
    Stored(String),
}

/// Places a packed partial answering the request of `digest`: in the answer when its base64
/// text is at most `inline_limit` bytes, otherwise as an object of `store` under the request's
/// folder of `query-partials/`.
pub async fn carry_partial(
    store: &dyn ObjectStore,
    digest: &str,
    packed: Vec<u8>,
    inline_limit: usize,
) -> Result<Carried, QueryError> {
    if packed.len().div_ceil(3) * 4 <= inline_limit {
        return Ok(Carried::Inline(base64::engine::general_purpose::STANDARD.encode(packed)));
    }
    let key = query_partial_key(digest, &format!("{:016x}{:016x}", fastrand::u64(..), fastrand::u64(..)));
    let bytes = packed.len();
    store
        .put(&key, packed.into())
        .await
        .map_err(|e| QueryError::Source(format!("storing a partial of {bytes} bytes as {key}: {e}")))?;
    Ok(Carried::Stored(key))
}

/// Reads the stored partial `key` an answer to the request of `digest` names, and deletes it
/// (a failed delete is left to the bucket's expiry). The key must lie in the request's folder,
/// and the object hold at most `sluice_query::wire::MAX_PARTIAL_BYTES`.
pub async fn fetch_partial(store: &dyn ObjectStore, digest: &str, key: &str) -> Result<Vec<u8>, QueryError> {
    let bad = |reason: String| QueryError::Source(format!("unreadable stored partial {}: {reason}", excerpt(key, 120)));
    if !key.starts_with(&query_partials_prefix(digest)) || !sluice_query::source::is_relative_key(key) {
        return Err(bad("not an object of this request's partials".into()));
    }
    let limit = sluice_query::wire::MAX_PARTIAL_BYTES as u64;
    let size = store.head(key).await.map_err(|e| bad(e.to_string()))?.map(|m| m.size);
    match size {
        None => return Err(bad("not found".into())),
        Some(size) if size > limit => return Err(bad(format!("{size} bytes, more than {limit}"))),
        Some(_) => {}
    }
    let bytes = store.get(key).await.map_err(|e| bad(e.to_string()))?;
    if let Err(e) = store.delete(key).await {
        tracing::warn!(key, error = %e, "could not delete a stored partial; the bucket's expiry will");
    }
    if bytes.len() as u64 > limit {
        return Err(bad(format!("{} bytes, more than {limit}", bytes.len())));
    }
    Ok(bytes.to_vec())
}

/// Reads a partial of `query` from an answer's text, decompressing at most
/// `sluice_query::wire::MAX_PARTIAL_BYTES`.
pub fn decode_partial(query: &Query, text: &str) -> Result<Partial, QueryError> {
    let bad = |reason: String| QueryError::Source(format!("unreadable partial: {reason}"));
    if text.len() > MAX_ANSWER_BYTES {
        return Err(bad(format!("{} bytes of text, more than a Lambda response holds", text.len())));
    }
    let packed = base64::engine::general_purpose::STANDARD.decode(text).map_err(|e| bad(format!("base64: {e}")))?;
    unpack_partial(query, &packed)
}

/// Reads a packed partial of `query`, decompressing at most
/// `sluice_query::wire::MAX_PARTIAL_BYTES`.
pub fn unpack_partial(query: &Query, packed: &[u8]) -> Result<Partial, QueryError> {
    let bad = |reason: String| QueryError::Source(format!("unreadable partial: {reason}"));
    let limit = sluice_query::wire::MAX_PARTIAL_BYTES as u64;
    let mut wire = Vec::new();
    zstd::stream::read::Decoder::new(packed)
        .and_then(|d| d.take(limit + 1).read_to_end(&mut wire))
        .map_err(|e| bad(format!("zstd: {e}")))?;
    if wire.len() as u64 > limit {
        return Err(bad(format!("decompresses past {limit} bytes")));
    }
    Partial::from_bytes(query, &wire, "the partial")
}

/// Reads an answer's JSON, refusing one past [`MAX_ANSWER_BYTES`], of another version, or
/// answering another request than the one of `digest`.
pub fn read_answer(bytes: &[u8], digest: &str) -> Result<WorkerAnswer, QueryError> {
    let bad = |reason: String| QueryError::Source(format!("unreadable answer: {reason}"));
    if bytes.len() > MAX_ANSWER_BYTES {
        return Err(bad(format!("{} bytes, more than a Lambda response holds", bytes.len())));
    }
    let answer: WorkerAnswer = serde_json::from_slice(bytes)
        .map_err(|e| bad(format!("{e} in {}", excerpt(&String::from_utf8_lossy(bytes), 200))))?;
    if answer.version != VERSION {
        return Err(bad(format!("version {}, this broker reads {VERSION}", answer.version)));
    }
    // A worker that could not read the request answers its error without a digest: an error
    // adds no data to the answer, so it is taken as the query's.
    let unread_request = answer.digest.is_empty() && answer.error.is_some();
    if answer.digest != digest && !unread_request {
        return Err(bad(format!("it answers request {}, not {digest}", excerpt(&answer.digest, 40))));
    }
    let carried = [answer.partial.is_some(), answer.partial_key.is_some(), answer.error.is_some()];
    if carried.iter().filter(|c| **c).count() != 1 {
        return Err(bad("an answer carries exactly one of a partial, a stored partial's key and an error".into()));
    }
    Ok(answer)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(partial: Option<&str>, digest: &str) -> Vec<u8> {
        let error = partial.is_none().then(|| WorkerQueryError::Unsupported { message: "no".into() });
        let a = WorkerAnswer {
            version: VERSION,
            partial: partial.map(String::from),
            partial_key: None,
            error,
            segments: 0,
            cached: 0,
            invocations: 0,
            digest: digest.into(),
        };
        serde_json::to_vec(&a).expect("json")
    }

    #[test]
    fn an_answer_must_be_to_its_request_unless_it_is_an_error_to_an_unread_one() {
        assert!(read_answer(&answer(Some("AAAA"), "abc"), "abc").is_ok());
        let err = read_answer(&answer(Some("AAAA"), "other"), "abc").expect_err("another request's");
        assert!(err.to_string().contains("answers request other, not abc"), "{err}");
        assert!(read_answer(&answer(Some("AAAA"), ""), "abc").is_err(), "a partial always names its request");
        assert!(read_answer(&answer(None, ""), "abc").is_ok(), "the error of a request the worker could not read");
        assert!(read_answer(&answer(None, "other"), "abc").is_err());
    }
}
