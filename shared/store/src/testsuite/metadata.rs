//! The `MetadataStore` conformance suite: one scenario per behaviour of the trait's contract.

use crate::metadata::{Condition, Item, MetaError, MetadataStore, SkRange, TxOp};
use serde_json::json;
use std::sync::Arc;

/// One conformance scenario; see its assertions.
pub async fn conditional_puts_and_versions(store: Arc<dyn MetadataStore>) {
    let pk = super::unique("ds");
    assert!(store.get(&pk, "spec").await.expect("get").is_none());
    let mut item = Item::new(&pk, "spec", json!({"state": "running"}));
    item.expires_at = Some(4_102_444_800);
    assert_eq!(store.put(item.clone(), Condition::Absent).await.expect("create"), 1);
    let got = store.get(&pk, "spec").await.expect("get").expect("item");
    assert_eq!((got.version, got.body.clone(), got.expires_at), (1, json!({"state": "running"}), Some(4_102_444_800)));
    match store.put(item.clone(), Condition::Absent).await {
        Err(MetaError::ConditionFailed { current: Some(c), .. }) => assert_eq!(c.version, 1),
        other => panic!("create over an existing item: {other:?}"),
    }
    item.body = json!({"state": "suspended"});
    item.expires_at = None;
    assert_eq!(store.put(item.clone(), Condition::Version(1)).await.expect("cas"), 2);
    match store.put(item.clone(), Condition::Version(1)).await {
        Err(MetaError::ConditionFailed { current: Some(c), .. }) => {
            assert_eq!((c.version, c.body), (2, json!({"state": "suspended"})))
        }
        other => panic!("stale version: {other:?}"),
    }
    assert!(matches!(
        store.put(Item::new(&pk, "nope", json!({})), Condition::Version(1)).await,
        Err(MetaError::ConditionFailed { current: None, .. })
    ));
    assert!(matches!(
        store.put(Item::new(&pk, "nope", json!({})), Condition::Exists).await,
        Err(MetaError::ConditionFailed { .. })
    ));
    assert_eq!(store.put(item.clone(), Condition::None).await.expect("unconditional"), 3);
    assert_eq!(store.get(&pk, "spec").await.expect("get").expect("item").expires_at, None, "expiry removed");
    assert!(matches!(store.delete(&pk, "spec", Condition::Version(2)).await, Err(MetaError::ConditionFailed { .. })));
    store.delete(&pk, "spec", Condition::Version(3)).await.expect("delete");
    assert!(store.get(&pk, "spec").await.expect("get").is_none());
}

/// One conformance scenario; see its assertions.
pub async fn query_by_prefix_is_sorted_and_paginated(store: Arc<dyn MetadataStore>) {
    let pk = super::unique("ds");
    // ~1.2 MB in one partition: DynamoDB returns a query in pages of at most 1 MB.
    let filler = "x".repeat(30_000);
    for i in (0..40).rev() {
        store
            .put(Item::new(&pk, format!("task#{i:04}"), json!({"i": i, "filler": filler})), Condition::Absent)
            .await
            .expect("put");
    }
    store.put(Item::new(&pk, "taskz", json!({})), Condition::Absent).await.expect("put");
    store.put(Item::new(&pk, "seg#1", json!({})), Condition::Absent).await.expect("put");
    let tasks = store.query(&pk, "task#").await.expect("query");
    assert_eq!(
        tasks.iter().map(|t| t.body["i"].as_i64().unwrap_or(-1)).collect::<Vec<_>>(),
        (0..40).collect::<Vec<_>>()
    );
    assert_eq!(store.query(&pk, "").await.expect("all").len(), 42);
    assert!(store.query(&super::unique("empty"), "task#").await.expect("none").is_empty());
}

/// One conformance scenario; see its assertions.
pub async fn query_by_range_is_bounded_ordered_and_paginated(store: Arc<dyn MetadataStore>) {
    let pk = super::unique("ds");
    // ~1.2 MB in one partition: DynamoDB returns a query in pages of at most 1 MB.
    let filler = "x".repeat(30_000);
    for i in 0..40 {
        let item = Item::new(&pk, format!("seg#{i:04}"), json!({"i": i, "filler": filler}));
        store.put(item, Condition::Absent).await.expect("put");
    }
    for sk in ["seg#0009#v2", "seg#0010#v2", "seg", "seg$", "sum#0005"] {
        store.put(Item::new(&pk, sk, json!({})), Condition::Absent).await.expect("put");
    }
    let sks = |items: Vec<Item>| items.into_iter().map(|i| i.sk).collect::<Vec<_>>();
    let read = |range: SkRange| {
        let (store, pk) = (store.clone(), pk.clone());
        async move { sks(store.query_range(&pk, &range).await.expect("query_range")) }
    };
    // From inclusive, to exclusive: the key equal to `to` and the keys extending it are out.
    assert_eq!(
        read(SkRange::new("seg#0005", "seg#0010")).await,
        ["seg#0005", "seg#0006", "seg#0007", "seg#0008", "seg#0009", "seg#0009#v2"]
    );
    // Every page, in order or reversed, up to a limit that crosses a page.
    let all = read(SkRange::prefix("seg#")).await;
    assert_eq!(all.len(), 42);
    assert_eq!(all, sks(store.query(&pk, "seg#").await.expect("query")), "a prefix range is the prefix query");
    assert_eq!(read(SkRange::prefix("seg#").limit(38)).await, all[..38]);
    let newest = read(SkRange::prefix("seg#").descending().limit(3)).await;
    assert_eq!(newest, ["seg#0039", "seg#0038", "seg#0037"]);
    let mut reversed = read(SkRange::prefix("seg#").descending()).await;
    reversed.reverse();
    assert_eq!(reversed, all);
    // Empty and inverted ranges, and a range of another partition.
    assert!(read(SkRange::new("seg#0010", "seg#0010")).await.is_empty());
    assert!(read(SkRange::new("seg#0020", "seg#0010")).await.is_empty());
    assert!(read(SkRange::new("seg#0000", "seg#0003").limit(0)).await.is_empty());
    let other = store.query_range(&super::unique("empty"), &SkRange::prefix("seg#")).await.expect("none");
    assert!(other.is_empty());
}

/// One conformance scenario; see its assertions.
pub async fn concurrent_creates_have_one_winner(store: Arc<dyn MetadataStore>) {
    let pk = super::unique("race");
    let tasks: Vec<_> = (0..16)
        .map(|i| {
            let (store, pk) = (store.clone(), pk.clone());
            tokio::spawn(async move {
                store.put(Item::new(pk, "task#0001", json!({"planner": i})), Condition::Absent).await
            })
        })
        .collect();
    let mut winners = Vec::new();
    for (i, t) in tasks.into_iter().enumerate() {
        match t.await.expect("task") {
            Ok(_) => winners.push(i),
            Err(MetaError::ConditionFailed { .. }) => {}
            Err(e) => panic!("planner {i}: {e}"),
        }
    }
    assert_eq!(winners.len(), 1, "{winners:?}");
    let item = store.get(&pk, "task#0001").await.expect("get").expect("item");
    assert_eq!(item.body["planner"], json!(winners[0]));
}

/// One conformance scenario; see its assertions.
pub async fn concurrent_compare_and_swap_has_one_winner(store: Arc<dyn MetadataStore>) {
    let pk = super::unique("cas");
    store.put(Item::new(&pk, "offsets", json!({"0": 0})), Condition::Absent).await.expect("create");
    let tasks: Vec<_> = (0..16)
        .map(|i| {
            let (store, pk) = (store.clone(), pk.clone());
            tokio::spawn(async move {
                store.put(Item::new(pk, "offsets", json!({"0": 100 + i})), Condition::Version(1)).await
            })
        })
        .collect();
    let mut winners = 0;
    for t in tasks {
        match t.await.expect("task") {
            Ok(v) => {
                assert_eq!(v, 2);
                winners += 1;
            }
            Err(MetaError::ConditionFailed { current: Some(c), .. }) => assert_eq!(c.version, 2),
            Err(e) => panic!("{e}"),
        }
    }
    assert_eq!(winners, 1);
}

/// One conformance scenario; see its assertions.
pub async fn failed_transactions_apply_nothing_and_name_the_action(store: Arc<dyn MetadataStore>) {
    let pk = super::unique("tx");
    store.put(Item::new(&pk, "offsets", json!({"0": 10})), Condition::Absent).await.expect("offsets");
    store.put(Item::new(&pk, "task#1", json!({"attempt": 2})), Condition::Absent).await.expect("task");
    let ops = vec![
        TxOp::Put { item: Item::new(&pk, "seg#a", json!({"rows": 5})), condition: Condition::Absent },
        TxOp::Put {
            item: Item::new(&pk, "task#1", json!({"attempt": 2, "state": "published"})),
            condition: Condition::Version(1),
        },
        TxOp::Put { item: Item::new(&pk, "offsets", json!({"0": 20})), condition: Condition::Version(7) },
    ];
    match store.transact(ops).await {
        Err(MetaError::TransactionFailed { index, current: Some(c), .. }) => {
            assert_eq!(index, 2, "the offsets compare-and-swap failed");
            assert_eq!((c.version, c.body), (1, json!({"0": 10})));
        }
        other => panic!("expected a failed transaction, got {other:?}"),
    }
    assert!(store.get(&pk, "seg#a").await.expect("get").is_none(), "nothing applied");
    assert_eq!(store.get(&pk, "task#1").await.expect("get").expect("task").version, 1);
    let check_fails = vec![
        TxOp::Check { pk: pk.clone(), sk: "task#1".into(), condition: Condition::Version(9) },
        TxOp::Delete { pk: pk.clone(), sk: "offsets".into(), condition: Condition::None },
    ];
    match store.transact(check_fails).await {
        Err(MetaError::TransactionFailed { index: 0, .. }) => {}
        other => panic!("expected the check to fail: {other:?}"),
    }
    assert!(store.get(&pk, "offsets").await.expect("get").is_some());
}

/// One conformance scenario; see its assertions.
pub async fn transactions_apply_everything(store: Arc<dyn MetadataStore>) {
    let pk = super::unique("tx");
    store.put(Item::new(&pk, "offsets", json!({"0": 10})), Condition::Absent).await.expect("offsets");
    store.put(Item::new(&pk, "stale", json!({})), Condition::Absent).await.expect("stale");
    let ops = vec![
        TxOp::Put { item: Item::new(&pk, "offsets", json!({"0": 20})), condition: Condition::Version(1) },
        TxOp::Put { item: Item::new(&pk, "seg#a", json!({"rows": 5})), condition: Condition::Absent },
        TxOp::Delete { pk: pk.clone(), sk: "stale".into(), condition: Condition::Exists },
        TxOp::Check { pk: pk.clone(), sk: "missing".into(), condition: Condition::Absent },
    ];
    store.transact(ops).await.expect("transaction");
    let offsets = store.get(&pk, "offsets").await.expect("get").expect("offsets");
    assert_eq!((offsets.version, offsets.body), (2, json!({"0": 20})));
    assert_eq!(store.get(&pk, "seg#a").await.expect("get").expect("seg").version, 1);
    assert!(store.get(&pk, "stale").await.expect("get").is_none());
}

/// One conformance scenario; see its assertions.
pub async fn limits_are_enforced(store: Arc<dyn MetadataStore>) {
    let pk = super::unique("limits");
    let huge = Item::new(&pk, "big", json!({"x": "y".repeat(410 * 1024)}));
    assert!(matches!(store.put(huge, Condition::None).await, Err(MetaError::Invalid(_))));
    let many: Vec<TxOp> =
        (0..101).map(|i| TxOp::Check { pk: pk.clone(), sk: format!("k{i}"), condition: Condition::Absent }).collect();
    assert!(matches!(store.transact(many).await, Err(MetaError::Invalid(_))));
    let twice = vec![
        TxOp::Check { pk: pk.clone(), sk: "k".into(), condition: Condition::Absent },
        TxOp::Put { item: Item::new(&pk, "k", json!({})), condition: Condition::Absent },
    ];
    assert!(matches!(store.transact(twice).await, Err(MetaError::Invalid(_))));
    let at_limit: Vec<TxOp> = (0..100)
        .map(|i| TxOp::Put { item: Item::new(&pk, format!("k{i:03}"), json!({"i": i})), condition: Condition::Absent })
        .collect();
    store.transact(at_limit).await.expect("100 actions are allowed");
    assert_eq!(store.query(&pk, "k").await.expect("query").len(), 100);
}
