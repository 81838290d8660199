//! The local Lambda service answers only its own: a request without the service's path prefix
//! (another local process guessing the port) is refused and queues nothing, a request naming
//! another host (a page whose name a DNS server points at 127.0.0.1) is refused, and the AWS
//! SDK and a runtime client given the prefix work as before (`functions/lambda`'s
//! `local_lambda.rs` runs the function binaries, Lambda's own runtime client, the same way).

use serde_json::json;
use sluice_lambda_local::{FunctionConfig, LambdaService};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The status of one HTTP/1.1 request to `addr` (`HOST:PORT`) for `path`, with header `Host:
/// host`; `None` when no answer comes within 3 s (a long poll that took the request).
async fn status(addr: &str, host: &str, method: &str, path: &str, body: &str) -> Option<u16> {
    let exchange = async {
        let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connects");
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: {host}\r\nX-Amz-Invocation-Type: Event\r\nContent-Length: {}\r\n\
             Connection: close\r\n\r\n{body}",
            body.len()
        );
        stream.write_all(head.as_bytes()).await.expect("sends");
        let mut answer = String::new();
        let _ = stream.read_to_string(&mut answer).await;
        answer.split_whitespace().nth(1).and_then(|s| s.parse().ok())
    };
    tokio::time::timeout(Duration::from_secs(3), exchange).await.ok().flatten()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_service_answers_its_prefix_on_loopback_hosts_only() {
    let dir = tempfile::tempdir().expect("dir");
    let mut service = LambdaService::new(dir.path()).await.expect("service");
    // The function tells its Runtime API address, then answers as the echo runtime does.
    let script = dir.path().join("bootstrap");
    let told = dir.path().join("runtime-api");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\necho \"$AWS_LAMBDA_RUNTIME_API\" > {}\nexec {}\n",
            told.display(),
            env!("CARGO_BIN_EXE_echo_runtime")
        ),
    )
    .expect("script");
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).expect("executable");
    let config = FunctionConfig {
        name: "echo".into(),
        binary: script,
        env: Vec::new(),
        max_retries: 0,
        timeout: Duration::from_secs(60),
        memory_mb: 128,
        args: Vec::new(),
    };
    service.start(config).await.expect("started");

    // The AWS SDK, pointed at the invoke URL, reaches the function through the prefix.
    let url = service.invoke_url();
    let sdk = aws_sdk_lambda::Client::from_conf(
        aws_sdk_lambda::Config::builder()
            .behavior_version(aws_sdk_lambda::config::BehaviorVersion::latest())
            .region(aws_sdk_lambda::config::Region::new("us-east-1"))
            .credentials_provider(aws_sdk_lambda::config::Credentials::new("test", "test", None, None, "test"))
            .endpoint_url(&url)
            .build(),
    );
    let out = sdk
        .invoke()
        .function_name("echo")
        .payload(aws_sdk_lambda::primitives::Blob::new(json!({"n": 1}).to_string()))
        .send()
        .await
        .expect("invoked through the prefix");
    let payload: serde_json::Value = serde_json::from_slice(out.payload().expect("payload").as_ref()).expect("json");
    assert_eq!(payload["n"], 1);
    assert_eq!(service.answers("echo").len(), 1);

    let (addr, prefix) = url.trim_start_matches("http://").split_once('/').expect("a prefix");
    assert_eq!(prefix.len(), 32, "128 bits in hex: {prefix}");
    let invoke = "/2015-03-31/functions/echo/invocations";
    let event = json!({"n": 2}).to_string();
    // Without the prefix: refused, nothing queued.
    assert_eq!(status(addr, addr, "POST", invoke, &event).await, Some(404));
    // Another host, with the prefix: refused.
    let evil = format!("rebind.example:{}", addr.rsplit(':').next().expect("port"));
    assert_eq!(status(addr, &evil, "POST", &format!("/{prefix}{invoke}"), &event).await, Some(403));
    assert!(service.wait_idle(Duration::from_secs(5)).await);
    assert_eq!(service.answers("echo").len(), 1, "no forged invocation ran");

    // The Runtime API: a poll or an answer without the prefix is refused at once.
    let api = std::fs::read_to_string(&told).expect("the process told its api");
    let api = api.trim().strip_prefix("http://").expect("a URL");
    let (runtime, runtime_prefix) = api.split_once('/').expect("the runtime api has the prefix");
    assert_eq!(runtime_prefix, prefix);
    let next = "/2018-06-01/runtime/invocation/next";
    assert_eq!(status(runtime, runtime, "GET", next, "").await, Some(404), "a poll without the prefix");
    let forged = "/2018-06-01/runtime/invocation/echo-000002/response";
    assert_eq!(status(runtime, runtime, "POST", forged, "{}").await, Some(404));
    assert_eq!(status(runtime, &evil, "GET", &format!("/{prefix}{next}"), "").await, Some(403));

    // The function still answers.
    let answer = service.invoke("echo", json!({"n": 3}).to_string().into_bytes()).await;
    assert!(matches!(&answer, Some(sluice_lambda_local::Answer::Response(v)) if v["n"] == 3), "{answer:?}");
}
