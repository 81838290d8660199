//! `sluice serve`'s connections against slow, idle and many clients, on loopback: a half-sent
//! request or a silent connection is closed after the header timeout, a body that stops
//! arriving is answered 408 after the body timeout, connections past the limit wait until
//! others close, and a normal request is answered throughout.

use super::local_server::Server;
use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// Generous bound on how long the server may take to close a connection past a timeout of one
/// second.
const CLOSED_WITHIN: Duration = Duration::from_secs(10);

fn connect(server: &Server) -> TcpStream {
    TcpStream::connect(&server.address).expect("connect")
}

/// What the server sent before it closed `stream`, or an error if it kept it open for `within`.
fn closed_within(stream: &mut TcpStream, within: Duration) -> Result<String, String> {
    stream.set_read_timeout(Some(within)).expect("read timeout");
    let mut out = Vec::new();
    match stream.read_to_end(&mut out) {
        Ok(_) => Ok(String::from_utf8_lossy(&out).into_owned()),
        Err(e) if e.kind() == ErrorKind::ConnectionReset => Ok(String::from_utf8_lossy(&out).into_owned()),
        Err(e) => Err(format!("still open after {within:?} ({e}), having sent {:?}", String::from_utf8_lossy(&out))),
    }
}

fn healthy(server: &Server) {
    let (status, body) = server.request("GET", "/status/health", None).expect("an answer");
    assert_eq!((status, body.as_str()), (200, "true"));
}

#[test]
fn half_sent_requests_and_silent_connections_are_closed_after_the_header_timeout() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::start(dir.path(), &[], &["--header-timeout-secs", "1", "--body-timeout-secs", "1"]);
    healthy(&server);

    let mut silent = connect(&server);
    let mut half = connect(&server);
    half.write_all(format!("GET /status/health HTTP/1.1\r\nHost: {}\r\nAccept:", server.address).as_bytes())
        .expect("half a request");
    closed_within(&mut silent, CLOSED_WITHIN).expect("a connection that sends nothing");
    closed_within(&mut half, CLOSED_WITHIN).expect("a connection that sends half a request's headers");

    // Kept alive after an answer, then silent.
    let mut kept = connect(&server);
    kept.write_all(format!("GET /status/health HTTP/1.1\r\nHost: {}\r\n\r\n", server.address).as_bytes())
        .expect("a request");
    let answer = closed_within(&mut kept, CLOSED_WITHIN).expect("an idle kept-alive connection");
    assert!(answer.starts_with("HTTP/1.1 200") && answer.ends_with("true"), "{answer}");

    // A body that stops arriving.
    let mut slow = connect(&server);
    let head = format!(
        "POST /druid/v2 HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{{\"query",
        server.address
    );
    slow.write_all(head.as_bytes()).expect("a request with part of its body");
    let answer = closed_within(&mut slow, CLOSED_WITHIN).expect("a connection whose body stops");
    let (status, body) = super::local_server::parse_response(answer.as_bytes()).expect("an answer");
    assert_eq!(status, 408, "{body}");
    assert!(body.contains("\"errorMessage\"") && body.contains("request body"), "{body}");
    healthy(&server);
}

#[test]
fn connections_past_the_limit_wait_until_others_close() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::start(dir.path(), &[], &["--max-connections", "2", "--header-timeout-secs", "600"]);
    healthy(&server);
    let held: Vec<TcpStream> = (0..2).map(|_| connect(&server)).collect();
    // Both served connections are held open by clients that send nothing: a third waits.
    let mut waiting = connect(&server);
    waiting
        .write_all(
            format!("GET /status/health HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n", server.address).as_bytes(),
        )
        .expect("a request");
    waiting.set_read_timeout(Some(Duration::from_secs(2))).expect("read timeout");
    let mut first = [0u8; 1];
    let early = waiting.read(&mut first);
    assert!(
        matches!(&early, Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut)),
        "a connection past the limit was served: {early:?}"
    );
    drop(held);
    let answer = closed_within(&mut waiting, super::local_server::ANSWER_WITHIN).expect("answered once others close");
    assert!(answer.starts_with("HTTP/1.1 200") && answer.ends_with("true"), "{answer}");
    healthy(&server);
}

#[test]
fn limits_of_zero_are_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    for flag in ["--max-connections", "--header-timeout-secs", "--body-timeout-secs"] {
        let (ok, _, err) = super::command::sluice(dir.path(), &["serve", "--listen", "127.0.0.1:0", flag, "0"], None);
        assert!(!ok && err.contains(flag) && err.contains("must be at least 1"), "{flag}: {err}");
    }
}
