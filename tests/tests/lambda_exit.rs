//! The local Lambda service when a function process dies holding an invocation: the
//! invocation fails at once with Lambda's `Runtime.ExitError` (not at the function's timeout),
//! and the process is started again for the next one, as Lambda starts a new sandbox.

use serde_json::json;
use sluice_lambda_local::{Answer, FunctionConfig, LambdaService};
use std::time::{Duration, Instant};

#[tokio::test(flavor = "multi_thread")]
async fn a_process_that_dies_fails_its_invocation_at_once_and_is_started_again() {
    let logs = tempfile::tempdir().expect("logs");
    let mut service = LambdaService::new(logs.path()).await.expect("service");
    let config = FunctionConfig {
        name: "echo".into(),
        binary: env!("CARGO_BIN_EXE_echo_runtime").into(),
        env: Vec::new(),
        max_retries: 0,
        timeout: Duration::from_secs(120),
        memory_mb: 128,
        args: Vec::new(),
    };
    service.start(config).await.expect("started");
    let answer = service.invoke("echo", json!({"n": 1}).to_string().into_bytes()).await;
    assert!(matches!(&answer, Some(Answer::Response(v)) if v["n"] == 1), "{answer:?}");

    let started = Instant::now();
    let answer = service.invoke("echo", json!({"do": "crash"}).to_string().into_bytes()).await;
    let Some(Answer::Error(error)) = answer else { panic!("the crash is an error: {answer:?}") };
    assert_eq!(error["errorType"], "Runtime.ExitError", "{error}");
    assert!(error["errorMessage"].as_str().is_some_and(|m| m.contains("exit status: 3")), "{error}");
    assert!(started.elapsed() < Duration::from_secs(60), "failed at the exit, not at the 120 s timeout");
    let status = service.exit_status("echo", Duration::from_secs(5)).await.expect("the exit is seen");
    assert_eq!(status.code(), Some(3));

    // A new process takes the next invocation.
    let answer = service.invoke("echo", json!({"n": 2}).to_string().into_bytes()).await;
    assert!(matches!(&answer, Some(Answer::Response(v)) if v["n"] == 2), "{answer:?}");
}
