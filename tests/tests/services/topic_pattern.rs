//! `topicPattern` on each metadata backend: one datasource over every topic whose whole name
//! matches, with `useEarliestOffset` off. Records on the matching topics before the first
//! pass are skipped (as a new supervisor would); a topic of a similar name that does not match
//! in full is not read; a topic created mid-run is picked up from its earliest offset (Druid's
//! rule for partitions found after the first read) with its own groups; a `taskCount` change
//! keeps each topic's offsets apart; a topic deleted leaves the others running. Every record
//! exactly once throughout.

use sluice_integration::indexing::{json_record, spec, visible_values, Backends};
use sluice_integration::kafka::{create_topic, delete_topic, produce};
use sluice_integration::{required_env, unique};
use sluice_pipeline::datasource::submit;
use sluice_pipeline::invoker::QueueInvoker;
use sluice_pipeline::runner::run_until_caught_up;
use sluice_pipeline::supervisor::{reset_offsets, status, supervise, SupervisorOptions};
use std::collections::BTreeMap;
use std::time::Duration;

const BUDGET: Duration = Duration::from_secs(120);

fn now() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

struct Pattern {
    b: Backends,
    bootstrap: String,
    name: String,
    spec: serde_json::Value,
    /// Ids that must be visible, once each.
    expected: Vec<String>,
    next: usize,
}

impl Pattern {
    /// Produces `n` records round-robin over `partitions` partitions of `topic`; `kept` says
    /// whether they must be ingested.
    async fn produce(&mut self, topic: &str, n: usize, partitions: i32, kept: bool) {
        let ids: Vec<String> = (self.next..self.next + n).map(|k| format!("r{k}")).collect();
        let records: Vec<(i32, Vec<u8>)> =
            ids.iter().enumerate().map(|(i, id)| ((i as i32) % partitions, json_record(id, self.next + i))).collect();
        produce(&self.bootstrap, topic, &records).await;
        self.next += n;
        if kept {
            self.expected.extend(ids);
        }
    }

    async fn run(&self) {
        let passes =
            run_until_caught_up(self.b.meta.as_ref(), self.b.store.as_ref(), Some(&self.name), 60, BUDGET, |_, _| {})
                .await
                .expect("pipeline");
        assert!(passes.last().is_some_and(|p| p.caught_up), "not caught up: {:?}", passes.last());
    }

    async fn assert_exactly_once(&self, context: &str) {
        let seen = visible_values(self.b.meta.as_ref(), self.b.store.as_ref(), &self.name, "id").await;
        let mut expected = self.expected.clone();
        expected.sort();
        assert_eq!(seen.len(), expected.len(), "{context}: rows visible");
        assert!(seen == expected, "{context}: some record is missing or visible twice");
    }
}

async fn every_matching_topic_once(b: Backends) {
    let bootstrap = required_env("SLUICE_KAFKA");
    let prefix = unique("pattern");
    let a = create_topic(&bootstrap, &format!("{prefix}-a"), 2).await;
    let topic_b = create_topic(&bootstrap, &format!("{prefix}-b"), 3).await;
    let unmatched = create_topic(&bootstrap, &format!("x{prefix}"), 1).await;
    let name = unique("pattern");
    let mut spec = spec(&name, "unused", &bootstrap, serde_json::json!({"type": "json"}), serde_json::json!({}));
    let io = spec["spec"]["ioConfig"].as_object_mut().expect("ioConfig");
    io.remove("topic");
    io.insert("topicPattern".into(), format!("{prefix}-.*").into());
    io.insert("taskCount".into(), 2.into());
    spec["spec"]["sluiceConfig"] = serde_json::json!({"maxRecordsPerTask": 7});
    let mut p = Pattern { b, bootstrap, name, spec, expected: Vec::new(), next: 0 };
    p.produce(&a, 4, 2, false).await;
    submit(p.b.meta.as_ref(), p.spec.clone(), now()).await.expect("submit");
    // The first pass reads the topics: what they hold now is skipped (useEarliestOffset off).
    supervise(p.b.meta.as_ref(), p.b.store.as_ref(), &QueueInvoker::default(), &SupervisorOptions::at(now()), &p.name)
        .await
        .expect("first pass");
    p.produce(&a, 12, 2, true).await;
    p.produce(&topic_b, 12, 3, true).await;
    p.produce(&unmatched, 5, 1, false).await;
    p.run().await;
    p.assert_exactly_once("two matching topics").await;

    // A topic created mid-run: found on the next pass, read from its earliest offset.
    let c = create_topic(&p.bootstrap, &format!("{prefix}-c"), 2).await;
    p.produce(&c, 8, 2, true).await;
    p.produce(&a, 4, 2, true).await;
    p.run().await;
    p.assert_exactly_once("a topic added").await;
    let tasks = sluice_pipeline::task::tasks(p.b.meta.as_ref(), &p.name).await.expect("tasks");
    let groups_of = |topic: &str| -> Vec<u32> {
        let mut g: Vec<u32> = tasks.iter().filter(|t| t.topic == topic).map(|t| t.id.group).collect();
        g.sort_unstable();
        g.dedup();
        g
    };
    assert_eq!((groups_of(&a), groups_of(&topic_b), groups_of(&c)), (vec![0, 1], vec![2, 3], vec![4, 5]));
    assert!(groups_of(&unmatched).is_empty(), "a partial match is not read");

    // taskCount 2 -> 1: each topic's offsets move to its one new group.
    p.spec["spec"]["ioConfig"]["taskCount"] = 1.into();
    submit(p.b.meta.as_ref(), p.spec.clone(), now()).await.expect("resubmit");
    for (topic, partitions) in [(a.clone(), 2), (topic_b.clone(), 3), (c.clone(), 2)] {
        p.produce(&topic, 6, partitions, true).await;
    }
    p.run().await;
    p.assert_exactly_once("after taskCount 2 -> 1").await;

    // A topic deleted: its rows stay, the others go on.
    delete_topic(&c).await;
    p.produce(&a, 4, 2, true).await;
    p.run().await;
    p.assert_exactly_once("a topic deleted").await;

    let st = status(p.b.meta.as_ref(), &p.name).await.expect("status");
    let mut per_topic: BTreeMap<&str, (i64, i64)> = BTreeMap::new();
    for s in &st.partitions {
        let e = per_topic.entry(s.topic.as_str()).or_default();
        e.0 += s.committed.unwrap_or(0);
        e.1 += s.high.unwrap_or(0);
    }
    let want: BTreeMap<&str, (i64, i64)> =
        [(a.as_str(), (30, 30)), (topic_b.as_str(), (18, 18)), (c.as_str(), (14, 0))].into_iter().collect();
    assert_eq!(per_topic, want, "per topic: committed and high watermarks summed (the deleted topic's high unknown)");
    let refused = reset_offsets(p.b.meta.as_ref(), &p.name, &BTreeMap::from([(0, 0)]), now()).await;
    assert!(refused.is_err_and(|e| e.to_string().contains("topicPattern")), "partition offsets name no topic");
}

sluice_integration::on_backends!(every_matching_topic_once);
