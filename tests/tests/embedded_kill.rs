//! kill -9 in the middle of a stream of transactions leaves the embedded metadata store with
//! every transaction applied fully or not at all.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

#[tokio::test]
async fn killed_writer_leaves_whole_transactions() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut last_tx = 0;
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    for round in 0..20 {
        let mut child = Command::new(env!("CARGO_BIN_EXE_metadata_writer"))
            .arg(dir.path())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start writer");
        let mut ready = String::new();
        BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut ready).expect("ready line");
        assert_eq!(ready.trim(), "ready");
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        std::thread::sleep(Duration::from_millis(20 + seed % 300));
        child.kill().expect("SIGKILL");
        child.wait().expect("reap");

        let store =
            sluice_store::metadata::open_metadata(&format!("file://{}", dir.path().display())).await.expect("reopen");
        let items = store.query("kill", "item#").await.expect("query");
        assert_eq!(items.len(), 5, "round {round}: all items of the first transaction or none, got {}", items.len());
        let txs: Vec<u64> = items.iter().map(|i| i.body["tx"].as_u64().expect("tx")).collect();
        let versions: Vec<u64> = items.iter().map(|i| i.version).collect();
        assert!(txs.iter().all(|t| *t == txs[0]), "round {round}: a torn transaction: {txs:?}");
        assert!(
            versions.iter().all(|v| *v == versions[0] && *v == txs[0]),
            "round {round}: versions {versions:?} for tx {}",
            txs[0]
        );
        assert!(txs[0] >= last_tx, "round {round}: committed transactions went back from {last_tx} to {}", txs[0]);
        last_tx = txs[0];
    }
    assert!(last_tx > 20, "the writer committed only {last_tx} transactions in 20 rounds");
}
