//! A hostile schema registry: slow answers, huge bodies, redirects, schemas that reference
//! themselves or too much, ids that do not exist, answers that are not JSON. Each case ends in
//! an unparseable record (counted and kept by the task) or an error to be retried, within the
//! client's time bound and without reading more than its size bounds.

use sluice_format::input::{
    Parsed, RecordParser, RegisteredSchema, RegistryError, SchemaAt, SchemaRegistry, MAX_SCHEMA_BYTES,
};
use sluice_format::spec::{load_spec_value, RegistrySettings};
use sluice_kafka::HttpSchemaRegistry;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What the registry does with one request, by its path.
type Handler = dyn Fn(&str, &mut TcpStream) + Send + Sync;

/// A registry on 127.0.0.1 answering every request with `handler`; counts requests.
struct Hostile {
    url: String,
    requests: Arc<AtomicUsize>,
}

impl Hostile {
    fn start(handler: impl Fn(&str, &mut TcpStream) + Send + Sync + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("address"));
        let requests = Arc::new(AtomicUsize::new(0));
        let counted = requests.clone();
        let handler: Arc<Handler> = Arc::new(handler);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (handler, counted) = (handler.clone(), counted.clone());
                std::thread::spawn(move || {
                    let mut stream = stream;
                    let mut reader = BufReader::new(stream.try_clone().expect("clone"));
                    let mut line = String::new();
                    if reader.read_line(&mut line).is_err() {
                        return;
                    }
                    let path = line.split_whitespace().nth(1).unwrap_or("/").to_string();
                    // The headers, up to the blank line.
                    loop {
                        let mut header = String::new();
                        match reader.read_line(&mut header) {
                            Ok(0) | Err(_) => return,
                            Ok(_) if header == "\r\n" => break,
                            Ok(_) => {}
                        }
                    }
                    counted.fetch_add(1, Ordering::SeqCst);
                    handler(&path, &mut stream);
                });
            }
        });
        Self { url, requests }
    }

    fn requests(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }
}

fn answer(stream: &mut TcpStream, status: &str, body: &str) {
    let _ = write!(
        stream,
        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
}

fn client(url: &str) -> HttpSchemaRegistry {
    let settings: RegistrySettings = serde_json::from_value(serde_json::json!({"url": url})).expect("settings");
    HttpSchemaRegistry::reaching(&settings, true).expect("client")
}

fn unavailable(result: Result<RegisteredSchema, RegistryError>) -> String {
    match result {
        Err(RegistryError::Unavailable(e)) => e,
        other => panic!("expected an error to retry, got {other:?}"),
    }
}

/// The answer for a schema with `references` (subject, version).
fn schema_answer(schema: &str, references: &[(String, i64)]) -> String {
    let references: Vec<serde_json::Value> = references
        .iter()
        .map(|(subject, version)| serde_json::json!({"name": subject, "subject": subject, "version": version}))
        .collect();
    serde_json::json!({"schema": schema, "references": references}).to_string()
}

#[test]
fn slow_answers_end_at_the_time_bound() {
    let registry = Hostile::start(|_, stream| {
        std::thread::sleep(Duration::from_secs(30));
        answer(stream, "200 OK", &schema_answer("\"long\"", &[]));
    });
    let started = Instant::now();
    let e = unavailable(client(&registry.url).schema(SchemaAt::Id(1), false));
    assert!(started.elapsed() < Duration::from_secs(25), "{:?}", started.elapsed());
    assert!(e.contains("did not give schema 1"), "{e}");
}

#[test]
fn huge_bodies_are_not_read_past_the_bound() {
    let written = Arc::new(AtomicUsize::new(0));
    let counted = written.clone();
    let registry = Hostile::start(move |_, stream| {
        let _ = write!(
            stream,
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
            1u64 << 36
        );
        let chunk = vec![b' '; 1 << 16];
        // 64 GiB announced: the writer stops when the client closes.
        while stream.write_all(&chunk).is_ok() {
            counted.fetch_add(chunk.len(), Ordering::SeqCst);
        }
    });
    unavailable(client(&registry.url).schema(SchemaAt::Id(1), false));
    std::thread::sleep(Duration::from_millis(200));
    // What the client read is its 4 MiB bound, plus what the sockets' buffers held.
    assert!(written.load(Ordering::SeqCst) < 64 << 20, "{} bytes written", written.load(Ordering::SeqCst));
}

#[test]
fn redirects_are_not_followed() {
    let target = Hostile::start(|_, stream| answer(stream, "200 OK", &schema_answer("\"long\"", &[])));
    let location = format!("{}/schemas/ids/1", target.url);
    let registry = Hostile::start(move |_, stream| {
        let _ = write!(stream, "HTTP/1.1 302 Found\r\nlocation: {location}\r\ncontent-length: 0\r\n\r\n");
    });
    unavailable(client(&registry.url).schema(SchemaAt::Id(1), false));
    assert_eq!(registry.requests(), 1);
    assert_eq!(target.requests(), 0, "the redirect's target was never asked");
}

#[test]
fn missing_ids_are_missing_and_other_answers_are_retried() {
    let registry = Hostile::start(|path, stream| match path {
        "/schemas/ids/1" => answer(stream, "404 Not Found", r#"{"error_code": 40403, "message": "Schema not found"}"#),
        "/schemas/ids/2" => answer(stream, "404 Not Found", "<html>no such page</html>"),
        "/schemas/ids/3" => answer(stream, "200 OK", "not json at all"),
        "/schemas/ids/4" => answer(stream, "200 OK", r#"{"schema": 7}"#),
        _ => answer(stream, "500 Internal Server Error", "{}"),
    });
    let c = client(&registry.url);
    match c.schema(SchemaAt::Id(1), false) {
        Err(RegistryError::Missing(e)) => assert!(e.contains("has no schema 1"), "{e}"),
        other => panic!("expected a missing schema, got {other:?}"),
    }
    // A 404 without the registry's error code may be a wrong URL, not a missing schema.
    for id in [2, 3, 4, 5] {
        let e = unavailable(c.schema(SchemaAt::Id(id), false));
        // The registry's port may itself hold "404" or "500": only the rest of the message counts.
        let said = e.replace(&registry.url, "");
        assert!(!said.contains("404") && !said.contains("500"), "status codes stay in the log: {e}");
    }
}

/// A parser of Avro values whose schemas come from `registry`.
fn avro_parser(url: &str) -> RecordParser {
    let spec = serde_json::json!({"type": "kafka", "spec": {
        "dataSchema": {"dataSource": "d", "timestampSpec": {"column": "ts", "format": "millis"},
            "dimensionsSpec": {"dimensions": []}, "granularitySpec": {"segmentGranularity": "hour"}},
        "ioConfig": {"topic": "t", "consumerProperties": {"bootstrap.servers": "b:9092"},
            "inputFormat": {"type": "avro_stream", "avroBytesDecoder": {"type": "schema_registry", "url": url}}}}});
    let spec = load_spec_value(spec).expect("spec").spec;
    RecordParser::with_registry(&spec, Some(Arc::new(client(url)) as Arc<dyn SchemaRegistry>)).expect("parser")
}

fn parse_one(parser: &mut RecordParser, value: &[u8]) -> Result<Parsed, sluice_format::input::ParseError> {
    let mut out = Vec::new();
    parser.parse_record(value, &mut out);
    out.pop().expect("one result")
}

#[test]
fn schemas_that_reference_themselves_or_too_much_are_unparseable_and_bounded() {
    const RECORD: &str = r#"{"type": "record", "name": "R", "fields": [{"name": "ts", "type": "long"}]}"#;
    let big = format!("\"{}\"", "x".repeat(4 << 20).get(..(4 << 20) - 1024).expect("ascii"));
    let registry = Hostile::start(move |path, stream| {
        let body = match path.split('?').next().unwrap_or(path) {
            // Refers to itself: read once, the cycle ends there.
            "/schemas/ids/1" => schema_answer(RECORD, &[("self".into(), 1)]),
            "/subjects/self/versions/1" => schema_answer(RECORD, &[("self".into(), 1)]),
            // An endless chain of references.
            "/schemas/ids/2" => schema_answer(RECORD, &[("chain0".into(), 1)]),
            p if p.starts_with("/subjects/chain") => {
                let n: usize = p["/subjects/chain".len()..].split('/').next().unwrap_or("0").parse().unwrap_or(0);
                schema_answer("\"long\"", &[(format!("chain{}", n + 1), 1)])
            }
            // Five references of almost 4 MiB each.
            "/schemas/ids/3" => schema_answer(RECORD, &(0..5).map(|i| (format!("big{i}"), 1)).collect::<Vec<_>>()),
            p if p.starts_with("/subjects/big") => schema_answer(&big, &[]),
            _ => return answer(stream, "404 Not Found", r#"{"error_code": 40401, "message": "no"}"#),
        };
        answer(stream, "200 OK", &body);
    });
    let mut parser = avro_parser(&registry.url);
    let framed = |id: u32| [vec![0], id.to_be_bytes().to_vec(), vec![2]].concat();
    match parse_one(&mut parser, &framed(1)) {
        Ok(Parsed::Row { .. }) => {}
        Err(e) => assert!(!e.retry, "{e:?}"),
        Ok(other) => panic!("{other:?}"),
    }
    assert!(registry.requests() <= 2, "{} requests", registry.requests());
    let e = parse_one(&mut parser, &framed(2)).expect_err("endless chain");
    assert!(!e.retry && e.reason.contains("more than 256 schemas are referenced"), "{e:?}");
    let e = parse_one(&mut parser, &framed(3)).expect_err("too many bytes");
    assert!(!e.retry && e.reason.contains(&format!("more than {MAX_SCHEMA_BYTES} bytes")), "{e:?}");
    let e = parse_one(&mut parser, &framed(4)).expect_err("no such id");
    assert!(!e.retry && e.reason.contains("schema 4 is not in the registry"), "{e:?}");
}
