//! Consumer settings: the spec's `consumerProperties` passed through to librdkafka (TLS and
//! SASL included), with the settings an exact range read requires forced, and secrets kept
//! out of every log line.

use rdkafka::config::ClientConfig;
use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

/// Properties whose values are never printed.
const SECRET_KEYS: [&str; 6] = [
    "sasl.password",
    "ssl.key.password",
    "ssl.keystore.password",
    "ssl.key.pem",
    "sasl.oauthbearer.client.secret",
    "ssl.truststore.password",
];

/// Bound of the records librdkafka prefetches for one reader, over all its partitions, in KiB
/// (unless the spec sets `queued.max.messages.kbytes`, which is per partition).
pub const PREFETCH_KBYTES: u64 = 16 * 1024;
/// The least prefetch per partition, in KiB.
const MIN_PREFETCH_KBYTES: u64 = 1024;

/// Consumer properties of the deployment (Kafka credentials a function reads from Secrets
/// Manager at cold start), applied over every spec's `consumerProperties`.
static DEPLOYMENT_PROPERTIES: std::sync::OnceLock<BTreeMap<String, String>> = std::sync::OnceLock::new();

/// Sets the deployment's consumer properties, once per process (later calls are refused).
pub fn set_deployment_properties(properties: BTreeMap<String, String>) -> Result<(), String> {
    DEPLOYMENT_PROPERTIES.set(properties).map_err(|_| "deployment consumer properties are already set".to_string())
}

/// librdkafka consumer settings for range reads.
#[derive(Clone, PartialEq, Eq)]
pub struct ConsumerSettings {
    properties: BTreeMap<String, String>,
}

impl ConsumerSettings {
    /// Settings from `consumerProperties`; `bootstrap.servers` is required by the spec loader.
    pub fn new(properties: &BTreeMap<String, String>) -> Self {
        let mut properties = properties.clone();
        if let Some(deployment) = DEPLOYMENT_PROPERTIES.get() {
            properties.extend(deployment.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
        // Exact ranges: explicit assignment, nothing committed, no silent reset.
        properties.insert("enable.auto.commit".into(), "false".into());
        properties.insert("enable.auto.offset.store".into(), "false".into());
        properties.insert("auto.offset.reset".into(), "error".into());
        properties.entry("group.id".into()).or_insert_with(|| "sluice-range-reader".into());
        // Once the handler has drained a full prefetch queue, fetch again at once (librdkafka
        // waits a whole second by default, which starves a reader slower than the network).
        properties.entry("fetch.queue.backoff.ms".into()).or_insert_with(|| "1".into());
        Self { properties }
    }

    /// The bootstrap servers.
    pub fn bootstrap(&self) -> &str {
        self.properties.get("bootstrap.servers").map(String::as_str).unwrap_or("")
    }

    /// The librdkafka configuration of a reader over `partitions` partitions. librdkafka
    /// prefetches up to 64 MiB per partition by default; a Lambda's memory is sized from
    /// `maxBytesInMemory`, so the prefetch is bounded to [`PREFETCH_KBYTES`] in all.
    pub fn client_config_for(&self, partitions: usize) -> ClientConfig {
        let mut c = self.client_config();
        if !self.properties.contains_key("queued.max.messages.kbytes") {
            let each = (PREFETCH_KBYTES / partitions.max(1) as u64).max(MIN_PREFETCH_KBYTES);
            c.set("queued.max.messages.kbytes", each.to_string());
        }
        c
    }

    /// The librdkafka configuration.
    pub fn client_config(&self) -> ClientConfig {
        let mut c = ClientConfig::new();
        // `sluice.*` properties are Sluice's own and unknown to librdkafka.
        for (k, v) in self.properties.iter().filter(|(k, _)| !k.starts_with("sluice.")) {
            c.set(k, v);
        }
        c
    }

    /// Timeout of metadata requests (`request.timeout.ms`, default 10 s).
    pub fn request_timeout(&self) -> Duration {
        Duration::from_millis(self.properties.get("request.timeout.ms").and_then(|v| v.parse().ok()).unwrap_or(10_000))
    }

    /// How long a read may see no progress before failing (`sluice.stall.timeout.ms`, 30 s).
    pub fn stall_timeout(&self) -> Duration {
        Duration::from_millis(
            self.properties.get("sluice.stall.timeout.ms").and_then(|v| v.parse().ok()).unwrap_or(30_000),
        )
    }
}

impl fmt::Debug for ConsumerSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let shown: BTreeMap<&str, &str> = self
            .properties
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str(),
                    if SECRET_KEYS.contains(&k.as_str()) || k.contains("secret") { "<redacted>" } else { v.as_str() },
                )
            })
            .collect();
        f.debug_struct("ConsumerSettings").field("properties", &shown).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forces_exact_range_settings_and_hides_secrets() {
        let props = BTreeMap::from([
            ("bootstrap.servers".to_string(), "b:9092".to_string()),
            ("auto.offset.reset".to_string(), "earliest".to_string()),
            ("sasl.password".to_string(), "hunter2".to_string()),
            ("security.protocol".to_string(), "SASL_SSL".to_string()),
        ]);
        let s = ConsumerSettings::new(&props);
        assert_eq!(s.properties["auto.offset.reset"], "error");
        assert_eq!(s.properties["enable.auto.commit"], "false");
        assert_eq!(s.properties["security.protocol"], "SASL_SSL");
        let stalled =
            ConsumerSettings::new(&BTreeMap::from([("sluice.stall.timeout.ms".to_string(), "5".to_string())]));
        assert_eq!(stalled.stall_timeout(), Duration::from_millis(5));
        assert!(stalled.client_config().get("sluice.stall.timeout.ms").is_none(), "not passed to librdkafka");
        assert_eq!(stalled.client_config_for(4).get("queued.max.messages.kbytes"), Some("4096"));
        assert_eq!(stalled.client_config_for(64).get("queued.max.messages.kbytes"), Some("1024"));
        let shown = format!("{s:?}");
        assert!(!shown.contains("hunter2") && shown.contains("<redacted>"), "{shown}");
    }

    #[test]
    #[cfg(feature = "tls")]
    fn tls_and_sasl_clients_can_be_created() {
        // librdkafka refuses SSL settings at creation when it was built without OpenSSL, and
        // SCRAM without its SASL support: MSK's SASL/SCRAM over TLS needs both.
        for (protocol, mechanism) in [("SSL", None), ("SASL_SSL", Some("SCRAM-SHA-512")), ("SASL_SSL", Some("PLAIN"))] {
            let mut props = BTreeMap::from([
                ("bootstrap.servers".to_string(), "127.0.0.1:1".to_string()),
                ("security.protocol".to_string(), protocol.to_string()),
            ]);
            if let Some(m) = mechanism {
                props.extend([
                    ("sasl.mechanism".to_string(), m.to_string()),
                    ("sasl.username".to_string(), "u".to_string()),
                    ("sasl.password".to_string(), "p".to_string()),
                ]);
            }
            let consumer: Result<rdkafka::consumer::BaseConsumer, _> =
                ConsumerSettings::new(&props).client_config().create();
            assert!(consumer.is_ok(), "{protocol} {mechanism:?}: {:?}", consumer.err());
        }
    }

    #[test]
    #[cfg(not(feature = "tls"))]
    fn tls_clients_need_the_tls_feature() {
        let props = BTreeMap::from([
            ("bootstrap.servers".to_string(), "127.0.0.1:1".to_string()),
            ("security.protocol".to_string(), "SSL".to_string()),
        ]);
        let consumer: Result<rdkafka::consumer::BaseConsumer, _> =
            ConsumerSettings::new(&props).client_config().create();
        let err = consumer.err().expect("no SSL without the tls feature").to_string();
        assert!(err.contains("security.protocol"), "{err}");
    }
}
