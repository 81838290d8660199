//! A Lambda function process for the local Lambda service's tests: polls the Runtime API
//! (`AWS_LAMBDA_RUNTIME_API`) and answers each event with itself, except an event holding
//! `"crash"`, on which it exits with status 3 while holding the invocation.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;

/// The value of header `name` (case-insensitive) among `headers`.
fn header(headers: &[String], name: &str) -> Option<String> {
    headers.iter().find_map(|h| {
        let (key, value) = h.split_once(':')?;
        key.trim().eq_ignore_ascii_case(name).then(|| value.trim().to_string())
    })
}

/// One HTTP/1.1 request to the Runtime API (`HOST:PORT`, or a URL `http://HOST:PORT/PREFIX`,
/// as Lambda's runtime clients read it): the response's headers and body.
fn request(api: &str, method: &str, path: &str, body: &[u8]) -> (Vec<String>, Vec<u8>) {
    let api = api.strip_prefix("http://").unwrap_or(api);
    let (host, prefix) = api.split_once('/').map_or((api, String::new()), |(h, p)| (h, format!("/{p}")));
    let mut stream = TcpStream::connect(host).expect("runtime api");
    let head = format!(
        "{method} {prefix}{path} HTTP/1.1\r\nHost: {host}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).and_then(|()| stream.write_all(body)).expect("request");
    let mut reader = BufReader::new(stream);
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).expect("response line");
        if line.trim().is_empty() {
            break;
        }
        headers.push(line.trim().to_string());
    }
    let length = header(&headers, "content-length").and_then(|v| v.parse().ok()).unwrap_or(0);
    let mut out = vec![0; length];
    reader.read_exact(&mut out).expect("response body");
    (headers, out)
}

fn main() {
    let api = std::env::var("AWS_LAMBDA_RUNTIME_API").expect("AWS_LAMBDA_RUNTIME_API");
    loop {
        let (headers, event) = request(&api, "GET", "/2018-06-01/runtime/invocation/next", b"");
        let id = header(&headers, "lambda-runtime-aws-request-id").expect("request id");
        if String::from_utf8_lossy(&event).contains("crash") {
            std::process::exit(3);
        }
        request(&api, "POST", &format!("/2018-06-01/runtime/invocation/{id}/response"), &event);
    }
}
