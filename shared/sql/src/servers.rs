//! The rows of `sys.servers` and `sys.server_segments`. Sluice has no Historicals holding
//! segments on local disks: every segment is read from deep storage by whatever answers the
//! query. The equivalent Druid's tools can read is one row per role: the process that plans
//! and merges queries (`broker`), and what reads the segments (`historical`: the same process,
//! or the query-worker function when queries fan out), which serves every visible segment.

use serde_json::{json, Value};

/// The tier Druid's tools expect of a server holding segments.
pub const DEFAULT_TIER: &str = "_default_tier";

/// One server, as `sys.servers` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerRow {
    /// Its name: `host:port`, or a function's name.
    pub server: String,
    /// Its host, when it has one (a function has none).
    pub host: Option<String>,
    /// Its port (-1: none).
    pub port: i64,
    /// Druid's server type: `broker` or `historical`.
    pub server_type: &'static str,
    /// Whether it serves the visible segments (listed in `sys.server_segments`).
    pub serves_segments: bool,
}

impl ServerRow {
    /// This process in both roles: it plans queries and reads every segment itself.
    pub fn in_process(name: &str) -> Vec<ServerRow> {
        ["broker", "historical"]
            .into_iter()
            .map(|server_type| ServerRow {
                server: name.to_string(),
                // A Lambda function's name is no host.
                host: (port_of(name) >= 0 || name == "localhost").then(|| host_of(name).to_string()),
                port: port_of(name),
                server_type,
                serves_segments: server_type == "historical",
            })
            .collect()
    }

    /// This process as the broker, and the query-worker function `function` reading the
    /// segments.
    pub fn fanning_out(name: &str, function: &str) -> Vec<ServerRow> {
        let mut rows = ServerRow::in_process(name);
        rows.truncate(1);
        rows.push(ServerRow {
            server: function.to_string(),
            host: None,
            port: -1,
            server_type: "historical",
            serves_segments: true,
        });
        rows
    }

    /// Its values in `sys.servers`' column order; `segment_bytes` is the size of the visible
    /// segments (its `current_size` when it serves them). Deep storage has no size limit, so
    /// `max_size` is null.
    pub fn values(&self, segment_bytes: u64) -> Vec<Value> {
        let serving = self.serves_segments;
        vec![
            json!(self.server),
            json!(self.host),
            json!(self.port),
            json!(-1),
            json!(self.server_type),
            if serving { json!(DEFAULT_TIER) } else { Value::Null },
            json!(if serving { segment_bytes } else { 0 }),
            Value::Null,
            Value::Null,
            Value::Null,
        ]
    }
}

static NAME: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// Names this process in `sys.servers` (`sluice serve` gives its `host:port`); the first name
/// given stays.
pub fn name_this_process(name: &str) {
    let _ = NAME.set(name.to_string());
}

/// The name this process goes by in `sys.servers`: the one given to [`name_this_process`],
/// else the Lambda function's name on AWS, else `localhost`.
pub fn this_process() -> String {
    if let Some(name) = NAME.get() {
        return name.clone();
    }
    std::env::var("AWS_LAMBDA_FUNCTION_NAME").unwrap_or_else(|_| "localhost".to_string())
}

fn host_of(name: &str) -> &str {
    match name.rsplit_once(':') {
        Some((host, port)) if port.parse::<u16>().is_ok() => host,
        _ => name,
    }
}

fn port_of(name: &str) -> i64 {
    name.rsplit_once(':').and_then(|(_, p)| p.parse::<u16>().ok()).map_or(-1, i64::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_with_a_port_gives_its_host_and_port() {
        let rows = ServerRow::in_process("127.0.0.1:8888");
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].host.as_deref(), Some("127.0.0.1"));
        assert_eq!(rows[0].port, 8888);
        assert!(!rows[0].serves_segments && rows[1].serves_segments);
        let v = rows[1].values(42);
        assert_eq!(v[4], json!("historical"));
        assert_eq!(v[5], json!(DEFAULT_TIER));
        assert_eq!(v[6], json!(42));
        assert_eq!(rows[0].values(42)[6], json!(0));
    }

    #[test]
    fn a_fanning_out_server_names_the_function_as_the_historical() {
        let rows = ServerRow::fanning_out("api", "sluice-query-worker");
        assert_eq!(rows.iter().map(|r| r.server_type).collect::<Vec<_>>(), ["broker", "historical"]);
        assert_eq!(rows[1].server, "sluice-query-worker");
        assert_eq!(rows[1].port, -1);
        assert_eq!(rows[0].port, -1);
        assert_eq!(rows[0].host, None, "a function has no host");
        assert_eq!(ServerRow::in_process("localhost")[0].host.as_deref(), Some("localhost"));
    }
}
