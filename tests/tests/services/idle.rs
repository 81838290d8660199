//! Idle supervisors (`idleConfig`) on each backend, with the real broker: a datasource caught
//! up with no new record for `inactiveAfterMillis` is `IDLE` and its pass invokes no task; the
//! first pass after records arrive plans and invokes them, and they are ingested once. A
//! datasource without `idleConfig` never goes idle.

use serde_json::json;
use sluice_integration::indexing::{json_record, spec, visible_values, Backends};
use sluice_integration::kafka::{create_topic, produce};
use sluice_integration::{required_env, unique};
use sluice_pipeline::invoker::QueueInvoker;
use sluice_pipeline::runner::run_until_caught_up;
use sluice_pipeline::supervisor::{status, supervise, DatasourcePass, SupervisorOptions};
use std::time::Duration;

const INACTIVE_AFTER_MS: u64 = 1_500;

fn now() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

async fn catch_up(b: &Backends, name: &str) {
    let passes =
        run_until_caught_up(b.meta.as_ref(), b.store.as_ref(), Some(name), 60, Duration::from_secs(120), |_, _| {})
            .await
            .expect("pipeline");
    assert!(passes.last().is_some_and(|p| p.caught_up), "{:?}", passes.last());
}

/// One pass with an invoker of its own: what it invoked stays in its queue.
async fn pass(b: &Backends, name: &str) -> (DatasourcePass, QueueInvoker) {
    let invoker = QueueInvoker::default();
    let options = SupervisorOptions::at(now());
    let pass = supervise(b.meta.as_ref(), b.store.as_ref(), &invoker, &options, name).await.expect("pass");
    (pass, invoker)
}

async fn a_quiet_datasource_goes_idle_and_wakes_when_records_arrive(b: Backends) {
    let bootstrap = required_env("SLUICE_KAFKA");
    let topic = create_topic(&bootstrap, "idle", 2).await;
    let batch = |from: usize, to: usize| -> Vec<(i32, Vec<u8>)> {
        (from..to).map(|k| ((k % 2) as i32, json_record(&format!("r{k}"), k))).collect()
    };
    produce(&bootstrap, &topic, &batch(0, 40)).await;
    let (name, steady) = (unique("idle"), unique("steady"));
    for (ds, idle) in [(&steady, false), (&name, true)] {
        let mut spec = spec(ds, &topic, &bootstrap, json!({"type": "json"}), json!({}));
        spec["spec"]["ioConfig"]["useEarliestOffset"] = true.into();
        if idle {
            spec["spec"]["ioConfig"]["idleConfig"] = json!({"enabled": true, "inactiveAfterMillis": INACTIVE_AFTER_MS});
        }
        sluice_pipeline::datasource::submit(b.meta.as_ref(), spec, now()).await.expect("submit");
        catch_up(&b, ds).await;
    }

    tokio::time::sleep(Duration::from_millis(INACTIVE_AFTER_MS + 200)).await;
    let (quiet, invoker) = pass(&b, &name).await;
    assert!(quiet.idle && quiet.caught_up, "{quiet:?}");
    assert!(quiet.invoked.is_empty() && invoker.is_empty(), "an idle supervisor invokes nothing: {quiet:?}");
    assert!(status(b.meta.as_ref(), &name).await.expect("status").idle, "the status says idle");
    let (steady_pass, _) = pass(&b, &steady).await;
    assert!(!steady_pass.idle, "without idleConfig a supervisor never goes idle");

    // Records arrive: the next pass plans and invokes them.
    produce(&bootstrap, &topic, &batch(40, 60)).await;
    let (woken, invoker) = pass(&b, &name).await;
    assert!(!woken.idle, "a record arrived: active at this pass: {woken:?}");
    assert!(!woken.planned.is_empty() && !invoker.is_empty(), "the new records are planned and invoked: {woken:?}");
    assert!(!status(b.meta.as_ref(), &name).await.expect("status").idle);
    catch_up(&b, &name).await;
    let mut seen = visible_values(b.meta.as_ref(), b.store.as_ref(), &name, "id").await;
    seen.sort();
    let mut expected: Vec<String> = (0..60).map(|k| format!("r{k}")).collect();
    expected.sort();
    assert_eq!(seen, expected, "every record once across idle and awake");

    tokio::time::sleep(Duration::from_millis(INACTIVE_AFTER_MS + 200)).await;
    let (again, _) = pass(&b, &name).await;
    assert!(again.idle, "idle again once the new records are published and none follow");
}

sluice_integration::on_backends!(a_quiet_datasource_goes_idle_and_wakes_when_records_arrive);
