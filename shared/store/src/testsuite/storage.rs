//! The `ObjectStore` conformance suite: one scenario per behaviour of the trait's contract.

use crate::storage::{ObjectStore, StorageError};
use bytes::Bytes;
use std::sync::Arc;

/// One conformance scenario; see its assertions.
pub async fn put_get_head_delete(store: Arc<dyn ObjectStore>) {
    let key = format!("{}/a/b.seg", super::unique("basic"));
    assert!(store.head(&key).await.expect("head").is_none());
    assert!(matches!(store.get(&key).await, Err(StorageError::NotFound { .. })));
    store.put(&key, Bytes::from_static(b"first")).await.expect("put");
    assert_eq!(store.get(&key).await.expect("get"), Bytes::from_static(b"first"));
    store.put(&key, Bytes::from_static(b"second!")).await.expect("overwrite");
    assert_eq!(store.head(&key).await.expect("head").map(|m| m.size), Some(7));
    store.delete(&key).await.expect("delete");
    store.delete(&key).await.expect("deleting an absent object succeeds");
    assert!(store.head(&key).await.expect("head").is_none());
}

/// One conformance scenario; see its assertions.
pub async fn ranged_reads(store: Arc<dyn ObjectStore>) {
    let key = format!("{}/r", super::unique("range"));
    store.put(&key, Bytes::from_static(b"0123456789")).await.expect("put");
    assert_eq!(store.get_range(&key, 2..5).await.expect("range"), Bytes::from_static(b"234"));
    assert_eq!(store.get_range(&key, 8..100).await.expect("clamped"), Bytes::from_static(b"89"));
    assert_eq!(store.get_range(&key, 10..20).await.expect("past the end"), Bytes::new());
    assert!(matches!(store.get_range(&format!("{key}-missing"), 0..1).await, Err(StorageError::NotFound { .. })));
}

/// One conformance scenario; see its assertions.
pub async fn ranged_reads_of_one_version(store: Arc<dyn ObjectStore>) {
    let prefix = super::unique("version");
    let key = format!("{prefix}/v");
    store.put(&key, Bytes::from_static(b"0123456789")).await.expect("put");
    let first = store.head(&key).await.expect("head").and_then(|m| m.version).expect("head names the version");
    let listed = store.list(&format!("{prefix}/")).await.expect("list");
    assert_eq!(listed.iter().map(|m| m.version.as_deref()).collect::<Vec<_>>(), [Some(first.as_str())]);
    assert_eq!(store.get_range_if(&key, 2..5, &first).await.expect("that version"), Bytes::from_static(b"234"));
    assert_eq!(store.get_range_if(&key, 8..100, &first).await.expect("clamped"), Bytes::from_static(b"89"));
    // Replaced by bytes of the same length: another version, never read as the first.
    store.put(&key, Bytes::from_static(b"abcdefghij")).await.expect("replace");
    let read = store.get_range_if(&key, 2..5, &first).await;
    assert!(matches!(read, Err(StorageError::Changed { .. })), "{read:?}");
    let second = store.head(&key).await.expect("head").and_then(|m| m.version).expect("version");
    assert_ne!(first, second);
    assert_eq!(store.get_range_if(&key, 2..5, &second).await.expect("the new version"), Bytes::from_static(b"cde"));
    let missing = store.get_range_if(&format!("{key}-missing"), 0..1, &second).await;
    assert!(matches!(missing, Err(StorageError::NotFound { .. })), "{missing:?}");
}

/// One conformance scenario; see its assertions.
pub async fn put_if_absent_never_overwrites(store: Arc<dyn ObjectStore>) {
    let key = format!("{}/x", super::unique("ifabsent"));
    store.put_if_absent(&key, Bytes::from_static(b"one")).await.expect("create");
    let again = store.put_if_absent(&key, Bytes::from_static(b"two")).await;
    assert!(matches!(again, Err(StorageError::AlreadyExists { .. })), "{again:?}");
    assert_eq!(store.get(&key).await.expect("get"), Bytes::from_static(b"one"));
}

/// One conformance scenario; see its assertions.
pub async fn concurrent_creates_have_one_winner(store: Arc<dyn ObjectStore>) {
    let key = format!("{}/race", super::unique("race"));
    let tasks: Vec<_> = (0..16)
        .map(|i| {
            let (store, key) = (store.clone(), key.clone());
            tokio::spawn(async move { store.put_if_absent(&key, Bytes::from(format!("writer {i}"))).await })
        })
        .collect();
    let mut winners = Vec::new();
    for (i, t) in tasks.into_iter().enumerate() {
        match t.await.expect("task") {
            Ok(()) => winners.push(i),
            Err(StorageError::AlreadyExists { .. }) => {}
            Err(e) => panic!("writer {i}: {e}"),
        }
    }
    assert_eq!(winners.len(), 1, "exactly one writer creates the object: {winners:?}");
    assert_eq!(store.get(&key).await.expect("get"), Bytes::from(format!("writer {}", winners[0])));
}

/// One conformance scenario; see its assertions.
pub async fn list_is_sorted_and_paginated(store: Arc<dyn ObjectStore>) {
    // More than the 1,000 keys S3 returns per page, written 32 at a time.
    let prefix = super::unique("list");
    let keys: Vec<String> = (0..1_105).map(|i| format!("{prefix}/k{i:05}")).collect();
    for chunk in keys.chunks(32) {
        let mut puts = tokio::task::JoinSet::new();
        for k in chunk {
            let (store, k) = (store.clone(), k.clone());
            puts.spawn(async move { store.put(&k, Bytes::from_static(b"v")).await });
        }
        while let Some(r) = puts.join_next().await {
            r.expect("task").expect("put");
        }
    }
    store.put(&format!("{prefix}-sibling"), Bytes::from_static(b"v")).await.expect("sibling");
    let listed = store.list(&format!("{prefix}/")).await.expect("list");
    assert_eq!(listed.len(), keys.len());
    assert_eq!(listed.iter().map(|m| m.key.clone()).collect::<Vec<_>>(), keys, "sorted by key");
    assert!(listed.iter().all(|m| m.size == 1));
}

/// One conformance scenario; see its assertions.
pub async fn large_objects_round_trip(store: Arc<dyn ObjectStore>) {
    // Larger than one multipart part, so S3 uploads it in parts.
    let key = format!("{}/big", super::unique("large"));
    let data: Vec<u8> = (0..(20 << 20) + 123).map(|i: u32| (i % 251) as u8).collect();
    store.put_if_absent(&key, Bytes::from(data.clone())).await.expect("large put");
    let back = store.get(&key).await.expect("large get");
    assert_eq!(back.len(), data.len());
    assert!(back == data, "large object differs");
    assert_eq!(
        store.get_range(&key, (9 << 20)..(9 << 20) + 5).await.expect("range"),
        Bytes::copy_from_slice(&data[9 << 20..(9 << 20) + 5])
    );
    let again = store.put_if_absent(&key, Bytes::from(data)).await;
    assert!(matches!(again, Err(StorageError::AlreadyExists { .. })), "{again:?}");
}

/// One conformance scenario; see its assertions.
pub async fn bad_keys_are_rejected(store: Arc<dyn ObjectStore>) {
    for key in ["", "/abs", "a/../b", "a//b", "trailing/"] {
        assert!(matches!(store.put(key, Bytes::new()).await, Err(StorageError::InvalidKey { .. })), "{key:?}");
    }
}
