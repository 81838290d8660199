//! A process that commits transactions to an embedded metadata store until it is killed; the
//! kill test runs it and checks that every transaction is all there or not at all.
//! Usage: metadata_writer DIR

use serde_json::json;
use sluice_store::metadata::{open_metadata, Condition, Item, TxOp};

/// Items every transaction writes.
const ITEMS: usize = 5;

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let dir = std::env::args().nth(1).expect("usage: metadata_writer DIR");
    let store = open_metadata(&format!("file://{dir}")).await.expect("open store");
    let start = match store.get("kill", "item#0").await.expect("read") {
        Some(item) => item.body["tx"].as_u64().unwrap_or(0) + 1,
        None => 1,
    };
    println!("ready");
    for tx in start.. {
        let ops = (0..ITEMS)
            .map(|i| TxOp::Put {
                item: Item::new("kill", format!("item#{i}"), json!({"tx": tx, "pad": "p".repeat(2000)})),
                condition: Condition::None,
            })
            .collect();
        store.transact(ops).await.expect("transaction");
    }
}
