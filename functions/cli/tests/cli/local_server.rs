//! `sluice serve` run by a test: started on a free loopback port, asked over plain TCP, killed
//! when the test ends however it ends.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// Longest a request may take to be answered (by a debug build of the server).
pub const ANSWER_WITHIN: Duration = Duration::from_secs(60);

/// A running `sluice serve`.
pub struct Server {
    child: Child,
    /// Where it listens, `127.0.0.1:PORT`.
    pub address: String,
}

impl Server {
    /// Starts `sluice GLOBAL... serve --listen 127.0.0.1:0 SERVE...` in `dir` and waits until
    /// it prints its address.
    pub fn start(dir: &Path, global: &[&str], serve: &[&str]) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_sluice"))
            .args(global)
            .args(["serve", "--listen", "127.0.0.1:0"])
            .args(serve)
            .current_dir(dir)
            .env_remove("SLUICE_METADATA")
            .env_remove("SLUICE_STORAGE")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start sluice serve");
        let stderr = child.stderr.take().expect("stderr");
        let mut server = Server { child, address: String::new() };
        let mut lines = BufReader::new(stderr).lines();
        server.address = lines
            .by_ref()
            .map_while(Result::ok)
            .find_map(|l| l.split_whitespace().find_map(|w| w.strip_prefix("http://").map(str::to_string)))
            .expect("serve prints its address");
        std::thread::spawn(move || lines.for_each(drop));
        server
    }

    /// Runs `sluice demo` in `dir`, then starts `sluice serve SERVE...` on the stores it
    /// published.
    pub fn on_demo(dir: &Path, serve: &[&str]) -> Server {
        let (ok, out, err) = super::command::sluice(dir, &["demo"], None);
        assert!(ok, "sluice demo: {out}{err}");
        let root = dir.join(".sluice/demo").canonicalize().expect("demo folder");
        let metadata = format!("file://{}/metadata", root.display());
        let storage = format!("file://{}/storage", root.display());
        Server::start(dir, &["--metadata", &metadata, "--storage", &storage], serve)
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The status and body of `METHOD path` with `body` (none: no body).
    pub fn request(&self, method: &str, path: &str, body: Option<&str>) -> Result<(u16, String), String> {
        request(&self.address, method, path, body)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The status and body of `METHOD path` with `body` (as JSON) sent to `address` on a
/// connection of its own.
pub fn request(address: &str, method: &str, path: &str, body: Option<&str>) -> Result<(u16, String), String> {
    let mut stream = TcpStream::connect(address).map_err(|e| format!("connect: {e}"))?;
    stream.set_read_timeout(Some(ANSWER_WITHIN)).map_err(|e| e.to_string())?;
    let body = body.unwrap_or("");
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).and_then(|()| stream.write_all(body.as_bytes())).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    stream.read_to_end(&mut out).map_err(|e| format!("no answer: {e}"))?;
    parse_response(&out)
}

/// The status and body of an HTTP/1.1 response.
pub fn parse_response(bytes: &[u8]) -> Result<(u16, String), String> {
    let text = String::from_utf8_lossy(bytes);
    let (head, body) = text.split_once("\r\n\r\n").ok_or("no HTTP response")?;
    let status = head.split_whitespace().nth(1).and_then(|s| s.parse().ok()).ok_or("no status")?;
    let body =
        if head.to_ascii_lowercase().contains("transfer-encoding: chunked") { unchunk(body) } else { body.into() };
    Ok((status, body))
}

/// A chunked body's bytes.
fn unchunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        body = rest[n..].trim_start_matches("\r\n");
    }
    out
}
