//! Consumer settings: the spec's `consumerProperties` passed through to librdkafka (TLS and
//! SASL included), with the settings an exact range read requires forced, and secrets kept
//! out of every log line and error.
//!
//! The deployment, not a spec, says where its Kafka is. When it configures Kafka (its secret),
//! the spec may not say where or how to connect: a spec that could name another broker would
//! receive the deployment's credentials. When it names its brokers ([`BROKERS_ENV`], the
//! template's `KafkaBootstrapServers`), a spec may name only those. Amazon MSK's IAM
//! authentication signs a token with the process's own AWS credentials, so it is refused unless
//! the deployment fixes the brokers one way or the other.

use rdkafka::config::ClientConfig;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::time::Duration;

pub use sluice_format::spec::is_secret;

/// Whether property `key` says where or how to connect, which only the deployment may set when
/// it configures Kafka.
pub fn is_connection_property(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    ["security.", "ssl.", "ssl_", "sasl.", "sluice.msk."].iter().any(|p| key.starts_with(p))
        || matches!(
            key.as_str(),
            "bootstrap.servers"
                | "metadata.broker.list"
                | "enable.ssl.certificate.verification"
                | "enable.sasl.oauthbearer.unsecure.jwt"
                | "https.ca.location"
                | "https.ca.pem"
        )
}

/// Why consumer settings, or the deployment's properties, were refused. A message names the
/// property at fault, never a value the spec holds.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SettingsError {
    /// The deployment's properties do not name `bootstrap.servers`.
    #[error("the deployment's Kafka properties must name bootstrap.servers: the brokers its credentials are for")]
    NoDeploymentBrokers,
    /// The deployment's properties were set before.
    #[error("deployment consumer properties are already set")]
    AlreadySet,
    /// A spec naming brokers the deployment does not.
    #[error("consumerProperties.{key}: this deployment reads Kafka only at the brokers it names ({BROKERS_ENV}, the template's KafkaBootstrapServers), and the spec names others")]
    OtherBrokers {
        /// The property (`bootstrap.servers`, `metadata.broker.list`).
        key: &'static str,
    },
    /// A spec setting a connection property the deployment's secret owns.
    #[error("consumerProperties.{key}: this deployment configures Kafka (its secret), so a spec may not set where or how Sluice connects; remove {key:?} from the spec")]
    DeploymentOwned {
        /// The property, cut.
        key: String,
    },
    /// `sluice.msk.iam` with a SASL mechanism other than OAUTHBEARER.
    #[error(
        "consumerProperties.sluice.msk.iam: MSK IAM authenticates with sasl.mechanism OAUTHBEARER (or AWS_MSK_IAM)"
    )]
    MskMechanism,
    /// `sluice.msk.iam` neither `true` nor `false` (the value is not told: a spec's values
    /// are never echoed).
    #[error("consumerProperties.sluice.msk.iam: expected true or false")]
    MskFlag,
    /// MSK IAM asked for where the deployment does not fix the brokers.
    #[error("consumerProperties.{key}: MSK IAM signs a token with this deployment's AWS credentials, so the deployment must name the brokers it is for: set {BROKERS_ENV} (the template's KafkaBootstrapServers) or a Kafka secret")]
    MskBrokers {
        /// The property asking for it.
        key: &'static str,
    },
    /// MSK IAM over a transport that does not check the brokers, or checks them against
    /// authorities the spec chose.
    #[error("consumerProperties.{key}: an MSK IAM token travels only over TLS that checks the brokers' certificates and names against the system's trusted authorities (SASL_SSL); remove {key:?} from the spec")]
    MskTransport {
        /// The property that weakens it, cut.
        key: String,
    },
    /// MSK IAM without a region.
    #[error("MSK IAM needs the cluster's region: set consumerProperties.sluice.msk.region")]
    MskRegion,
}

/// Bound of the records librdkafka prefetches for one reader, over all its partitions, in KiB
/// (unless the spec sets `queued.max.messages.kbytes`, which is per partition).
pub const PREFETCH_KBYTES: u64 = 16 * 1024;
/// The least prefetch per partition, in KiB.
const MIN_PREFETCH_KBYTES: u64 = 1024;

/// Consumer properties of the deployment (Kafka credentials a function reads from Secrets
/// Manager at cold start), applied over every spec's `consumerProperties`.
static DEPLOYMENT_PROPERTIES: std::sync::OnceLock<BTreeMap<String, String>> = std::sync::OnceLock::new();

/// Sets the deployment's consumer properties, once per process (later calls are refused). They
/// must name `bootstrap.servers`: the brokers the credentials are for.
pub fn set_deployment_properties(properties: BTreeMap<String, String>) -> Result<(), SettingsError> {
    if properties.get("bootstrap.servers").is_none_or(|b| b.trim().is_empty()) {
        return Err(SettingsError::NoDeploymentBrokers);
    }
    DEPLOYMENT_PROPERTIES.set(properties).map_err(|_| SettingsError::AlreadySet)
}

/// The brokers the deployment reads Kafka at (`host:port`, comma-separated; the template's
/// `KafkaBootstrapServers`). When set, a spec's `bootstrap.servers` may name only these.
pub const BROKERS_ENV: &str = "SLUICE_KAFKA_BOOTSTRAP_SERVERS";

/// What the deployment says of Kafka, which a spec may not overrule.
#[derive(Debug, Clone, Default)]
pub struct KafkaDeployment<'a> {
    /// Consumer properties of the deployment's secret, applied over every spec's.
    pub properties: Option<&'a BTreeMap<String, String>>,
    /// The brokers a spec may name ([`BROKERS_ENV`]).
    pub brokers: Option<BTreeSet<String>>,
}

impl KafkaDeployment<'static> {
    /// The deployment of this process: its secret's properties, once set, and [`BROKERS_ENV`].
    pub fn of_process() -> Self {
        let brokers = std::env::var(BROKERS_ENV).ok().map(|b| broker_set(&b)).filter(|b| !b.is_empty());
        Self { properties: DEPLOYMENT_PROPERTIES.get(), brokers }
    }
}

/// The brokers of a `bootstrap.servers` list, trimmed and lowercased.
fn broker_set(list: &str) -> BTreeSet<String> {
    list.split(',').map(|b| b.trim().to_ascii_lowercase()).filter(|b| !b.is_empty()).collect()
}

/// Checks that the brokers a spec names are among the deployment's. The error names the
/// property, never a value.
fn check_brokers(spec: &BTreeMap<String, String>, allowed: &BTreeSet<String>) -> Result<(), SettingsError> {
    for key in ["bootstrap.servers", "metadata.broker.list"] {
        if let Some(list) = spec.get(key) {
            if !broker_set(list).is_subset(allowed) {
                return Err(SettingsError::OtherBrokers { key });
            }
        }
    }
    Ok(())
}

/// Checks a spec's properties against the deployment's: a connection property the spec sets
/// must be absent from the spec or hold the deployment's value. The error names the property,
/// never a value.
fn check_against_deployment(
    spec: &BTreeMap<String, String>,
    deployment: &BTreeMap<String, String>,
) -> Result<(), SettingsError> {
    match spec.iter().find(|(k, v)| is_connection_property(k) && deployment.get(k.as_str()) != Some(v)) {
        Some((key, _)) => {
            // A property name from the spec, cut; never a value.
            Err(SettingsError::DeploymentOwned { key: sluice_format::text::excerpt(key, 100).into_owned() })
        }
        None => Ok(()),
    }
}

/// librdkafka consumer settings for range reads.
#[derive(Clone, PartialEq, Eq)]
pub struct ConsumerSettings {
    properties: BTreeMap<String, String>,
    /// The region of the MSK cluster whose IAM authentication signs the OAUTHBEARER token.
    msk_iam_region: Option<String>,
}

impl ConsumerSettings {
    /// Settings from `consumerProperties` (`bootstrap.servers` is required by the spec loader),
    /// under this process's deployment ([`KafkaDeployment::of_process`]).
    pub fn new(properties: &BTreeMap<String, String>) -> Result<Self, SettingsError> {
        Self::under(properties, &KafkaDeployment::of_process())
    }

    /// Settings from `consumerProperties` under `deployment`'s properties when it configures
    /// Kafka; refused when the spec sets a connection property the deployment owns, names
    /// brokers the deployment does not, or asks for MSK IAM tokens when the deployment does
    /// not fix the brokers they would be sent to.
    pub fn under(
        properties: &BTreeMap<String, String>,
        deployment: &KafkaDeployment<'_>,
    ) -> Result<Self, SettingsError> {
        let mut properties = properties.clone();
        if let Some(brokers) = &deployment.brokers {
            check_brokers(&properties, brokers)?;
        }
        if let Some(secret) = deployment.properties {
            check_against_deployment(&properties, secret)?;
            properties.extend(secret.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
        // Exact ranges: explicit assignment, nothing committed, no silent reset.
        properties.insert("enable.auto.commit".into(), "false".into());
        properties.insert("enable.auto.offset.store".into(), "false".into());
        properties.insert("auto.offset.reset".into(), "error".into());
        properties.entry("group.id".into()).or_insert_with(|| "sluice.range-reader".into());
        // Once the handler has drained a full prefetch queue, fetch again at once (librdkafka
        // waits a whole second by default, which starves a reader slower than the network).
        properties.entry("fetch.queue.backoff.ms".into()).or_insert_with(|| "1".into());
        let brokers_fixed = deployment.brokers.is_some() || deployment.properties.is_some();
        let msk_iam_region = msk_iam(&mut properties, brokers_fixed, deployment.properties.is_some())?;
        Ok(Self { properties, msk_iam_region })
    }

    /// The MSK cluster's region when the settings authenticate with MSK's IAM tokens.
    pub fn msk_iam_region(&self) -> Option<&str> {
        self.msk_iam_region.as_deref()
    }

    /// `text` (an error from librdkafka, which quotes property values) with every secret
    /// value replaced by `<redacted>`.
    pub fn redact(&self, text: &str) -> String {
        let mut out = text.to_string();
        for (_, value) in self.properties.iter().filter(|(k, v)| is_secret(k) && !v.is_empty()) {
            out = out.replace(value.as_str(), "<redacted>");
        }
        out
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

/// Amazon MSK's IAM authentication, chosen by `sasl.mechanism` `AWS_MSK_IAM` (librdkafka's
/// `OAUTHBEARER` with Sluice's token) or by `OAUTHBEARER` with `sluice.msk.iam` `true`: the
/// mechanism set to `OAUTHBEARER`, `security.protocol` defaulting to `SASL_SSL`, and the
/// cluster's region (`sluice.msk.region`, else the brokers' `*.kafka.REGION.amazonaws.com`
/// names, else `AWS_REGION`). The token is signed with this process's AWS credentials, so it
/// is refused unless the deployment fixes the brokers it is sent to (`brokers_fixed`), and,
/// unless the deployment's secret says how to connect (`transport_fixed`), it travels only over
/// TLS that checks the brokers' certificates and names.
fn msk_iam(
    properties: &mut BTreeMap<String, String>,
    brokers_fixed: bool,
    transport_fixed: bool,
) -> Result<Option<String>, SettingsError> {
    let key = ["sasl.mechanism", "sasl.mechanisms"].into_iter().find(|k| properties.contains_key(*k));
    let mechanism = key.and_then(|k| properties.get(k)).map(|m| m.trim().to_ascii_uppercase());
    let flag = properties.get("sluice.msk.iam").map(|v| v.trim().to_ascii_lowercase());
    let enabled = match (mechanism.as_deref(), flag.as_deref()) {
        (Some("AWS_MSK_IAM"), None | Some("true")) | (Some("OAUTHBEARER"), Some("true")) => true,
        (_, None | Some("false")) => false,
        (_, Some("true")) => return Err(SettingsError::MskMechanism),
        (_, Some(_)) => return Err(SettingsError::MskFlag),
    };
    if !enabled {
        return Ok(None);
    }
    if !brokers_fixed {
        return Err(SettingsError::MskBrokers { key: key.unwrap_or("sluice.msk.iam") });
    }
    if let Some(k) = key {
        properties.insert(k.to_string(), "OAUTHBEARER".into());
    }
    properties.entry("security.protocol".into()).or_insert_with(|| "SASL_SSL".into());
    if !transport_fixed {
        if let Some(key) = weakened_transport(properties) {
            return Err(SettingsError::MskTransport { key: sluice_format::text::excerpt(key, 100).into_owned() });
        }
    }
    let from_brokers = properties.get("bootstrap.servers").and_then(|b| {
        b.split(',').find_map(|host| {
            let host = host.trim().split(':').next()?;
            let (_, rest) = host.split_once(".kafka.").or_else(|| host.split_once(".kafka-serverless."))?;
            rest.strip_suffix(".amazonaws.com").filter(|r| !r.is_empty() && !r.contains('.')).map(String::from)
        })
    });
    let region = properties
        .get("sluice.msk.region")
        .cloned()
        .or(from_brokers)
        .or_else(|| std::env::var("AWS_REGION").ok())
        .filter(|r| !r.trim().is_empty());
    match region {
        Some(r) => Ok(Some(r.trim().to_string())),
        None => Err(SettingsError::MskRegion),
    }
}

/// Properties that choose which certificates a TLS connection trusts, or load code that could:
/// under MSK IAM a spec may set none of them, whatever their value, since a spec's certificate
/// authority lets whoever answers for the brokers' names (a DNS answer away) take the token.
const MSK_TRUST_PROPERTIES: [&str; 4] = ["ssl.ca.location", "ssl.ca.pem", "ssl.ca.certificate.stores", "ssl.providers"];

/// Prefixes of property names that do the same: Java's trust stores (`ssl.truststore.location`,
/// `.password`, `.type`, `.certificates`) and OpenSSL engines.
const MSK_TRUST_PREFIXES: [&str; 3] = ["ssl.truststore.", "ssl.engine.", "ssl_engine_"];

/// The first property that lets an MSK IAM token travel without TLS that checks the brokers'
/// certificates and names against the system's trusted authorities: a protocol other than
/// `SASL_SSL`, verification turned off, a host name check other than `https`, or a trust
/// property ([`MSK_TRUST_PROPERTIES`], [`MSK_TRUST_PREFIXES`]).
fn weakened_transport(properties: &BTreeMap<String, String>) -> Option<&str> {
    let is = |key: &str, value: &str| properties.get(key).is_some_and(|v| v.trim().eq_ignore_ascii_case(value));
    let weak = |key: &str| match key {
        "security.protocol" => !is(key, "SASL_SSL"),
        "enable.ssl.certificate.verification" => !is(key, "true"),
        "ssl.endpoint.identification.algorithm" => !is(key, "https"),
        _ => {
            let key = key.to_ascii_lowercase();
            MSK_TRUST_PROPERTIES.contains(&key.as_str()) || MSK_TRUST_PREFIXES.iter().any(|p| key.starts_with(p))
        }
    };
    properties.keys().map(String::as_str).find(|k| weak(k))
}

impl fmt::Debug for ConsumerSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let shown: BTreeMap<&str, &str> = self
            .properties
            .iter()
            .map(|(k, v)| (k.as_str(), if is_secret(k) { "<redacted>" } else { v.as_str() }))
            .collect();
        f.debug_struct("ConsumerSettings").field("properties", &shown).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn msk_iam_is_chosen_by_its_mechanism_or_flag_and_finds_the_region() {
        let settings = |pairs: &[(&str, &str)]| {
            let props: BTreeMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
            let brokers = props.get("bootstrap.servers").map(|b| broker_set(b));
            ConsumerSettings::under(&props, &KafkaDeployment { properties: None, brokers })
        };
        let brokers = "b-1.c.x1.c2.kafka.eu-west-3.amazonaws.com:9098,b-2.c.x1.c2.kafka.eu-west-3.amazonaws.com:9098";
        let s = settings(&[("bootstrap.servers", brokers), ("sasl.mechanism", "AWS_MSK_IAM")]).expect("msk");
        assert_eq!(s.msk_iam_region(), Some("eu-west-3"));
        assert_eq!(s.client_config().get("sasl.mechanism"), Some("OAUTHBEARER"));
        assert_eq!(s.client_config().get("security.protocol"), Some("SASL_SSL"));
        let serverless = "boot-x.c1.kafka-serverless.ap-south-1.amazonaws.com:9098";
        let s = settings(&[
            ("bootstrap.servers", serverless),
            ("sasl.mechanisms", "OAUTHBEARER"),
            ("sluice.msk.iam", "true"),
        ])
        .expect("flag");
        assert_eq!(s.msk_iam_region(), Some("ap-south-1"));
        assert_eq!(s.client_config().get("security.protocol"), Some("SASL_SSL"));
        // A spec may not send the token where TLS does not check the brokers.
        for (key, value) in [
            ("security.protocol", "SASL_PLAINTEXT"),
            ("enable.ssl.certificate.verification", "false"),
            ("ssl.endpoint.identification.algorithm", "none"),
        ] {
            let e = settings(&[("bootstrap.servers", serverless), ("sasl.mechanism", "AWS_MSK_IAM"), (key, value)])
                .expect_err(key)
                .to_string();
            assert!(e.starts_with(&format!("consumerProperties.{key}: ")), "{e}");
        }
        // The deployment's secret may say how (a listener in a test, say).
        let secret = BTreeMap::from([
            ("bootstrap.servers".to_string(), "127.0.0.1:9".to_string()),
            ("security.protocol".to_string(), "SASL_PLAINTEXT".to_string()),
            ("sasl.mechanism".to_string(), "AWS_MSK_IAM".to_string()),
            ("sluice.msk.region".to_string(), "eu-west-3".to_string()),
        ]);
        let spec = BTreeMap::from([("bootstrap.servers".to_string(), "127.0.0.1:9".to_string())]);
        let s = ConsumerSettings::under(&spec, &KafkaDeployment { properties: Some(&secret), brokers: None })
            .expect("the deployment's transport");
        assert_eq!(s.client_config().get("security.protocol"), Some("SASL_PLAINTEXT"));
        let s = settings(&[
            ("bootstrap.servers", "127.0.0.1:9"),
            ("sasl.mechanism", "aws_msk_iam"),
            ("sluice.msk.region", "us-east-2"),
        ])
        .expect("region given");
        assert_eq!(s.msk_iam_region(), Some("us-east-2"));
        // OAUTHBEARER alone is librdkafka's (OIDC, unsecured JWT): not MSK's.
        let s = settings(&[("bootstrap.servers", brokers), ("sasl.mechanism", "OAUTHBEARER")]).expect("oidc");
        assert_eq!(s.msk_iam_region(), None);
        let e = settings(&[("bootstrap.servers", brokers), ("sasl.mechanism", "PLAIN"), ("sluice.msk.iam", "true")])
            .expect_err("flag without OAUTHBEARER")
            .to_string();
        assert!(e.contains("sasl.mechanism OAUTHBEARER"), "{e}");
        let e = settings(&[
            ("bootstrap.servers", brokers),
            ("sasl.mechanism", "AWS_MSK_IAM"),
            ("sluice.msk.iam", "s3cr3t"),
        ])
        .expect_err("neither true nor false")
        .to_string();
        assert!(e.starts_with("consumerProperties.sluice.msk.iam: ") && !e.contains("s3cr3t"), "{e}");
        assert!(is_connection_property("sluice.msk.region"));
    }

    #[test]
    fn under_msk_iam_a_spec_may_not_choose_the_authorities_the_brokers_are_checked_against() {
        let msk = "b-1.c.kafka.eu-west-3.amazonaws.com:9098";
        let deployment = KafkaDeployment { properties: None, brokers: Some(broker_set(msk)) };
        let iam = |extra: &[(&str, &str)]| -> BTreeMap<String, String> {
            [("bootstrap.servers", msk), ("sasl.mechanism", "AWS_MSK_IAM")]
                .iter()
                .chain(extra)
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        ConsumerSettings::under(&iam(&[("ssl.endpoint.identification.algorithm", "https")]), &deployment)
            .expect("the checks as they are");
        let pem = "-----BEGIN CERTIFICATE----- attacker-ca -----END CERTIFICATE-----";
        for (key, value) in [
            ("ssl.ca.location", "/tmp/attacker-ca.pem"),
            ("ssl.ca.location", "probe"),
            ("ssl.ca.pem", pem),
            ("ssl.ca.certificate.stores", "Root"),
            ("ssl.truststore.location", "/tmp/attacker.jks"),
            ("ssl.truststore.password", "attacker-pw"),
            ("ssl.truststore.type", "PEM"),
            ("ssl.truststore.certificates", pem),
            ("ssl.engine.location", "/tmp/attacker-engine.so"),
            ("ssl_engine_callback_data", "attacker"),
            ("ssl.providers", "attacker"),
            ("ssl.endpoint.identification.algorithm", "none"),
            ("ssl.endpoint.identification.algorithm", ""),
            ("enable.ssl.certificate.verification", "false"),
            ("enable.ssl.certificate.verification", "0"),
        ] {
            let e = ConsumerSettings::under(&iam(&[(key, value)]), &deployment).expect_err(key).to_string();
            assert!(e.starts_with(&format!("consumerProperties.{key}: ")) && !e.contains("attacker"), "{e}");
        }
        // Without MSK IAM, a spec's authorities are its own business (no token to take).
        let plain = BTreeMap::from([
            ("bootstrap.servers".to_string(), msk.to_string()),
            ("security.protocol".to_string(), "SSL".to_string()),
            ("ssl.ca.location".to_string(), "/etc/ssl/own-ca.pem".to_string()),
        ]);
        ConsumerSettings::under(&plain, &deployment).expect("plain TLS with its own CA");
        // The deployment's secret may name a CA for the token's transport.
        let secret = BTreeMap::from([
            ("bootstrap.servers".to_string(), msk.to_string()),
            ("sasl.mechanism".to_string(), "AWS_MSK_IAM".to_string()),
            ("ssl.ca.location".to_string(), "/opt/deployment-ca.pem".to_string()),
        ]);
        let spec = BTreeMap::from([("bootstrap.servers".to_string(), msk.to_string())]);
        ConsumerSettings::under(&spec, &KafkaDeployment { properties: Some(&secret), brokers: None })
            .expect("the deployment's CA");
    }

    #[test]
    fn forces_exact_range_settings_and_hides_secrets() {
        let props = BTreeMap::from([
            ("bootstrap.servers".to_string(), "b:9092".to_string()),
            ("auto.offset.reset".to_string(), "earliest".to_string()),
            ("sasl.password".to_string(), "hunter2".to_string()),
            ("security.protocol".to_string(), "SASL_SSL".to_string()),
        ]);
        let s = ConsumerSettings::new(&props).expect("settings");
        assert_eq!(s.properties["auto.offset.reset"], "error");
        assert_eq!(s.properties["enable.auto.commit"], "false");
        assert_eq!(s.properties["security.protocol"], "SASL_SSL");
        let stalled =
            ConsumerSettings::new(&BTreeMap::from([("sluice.stall.timeout.ms".to_string(), "5".to_string())]))
                .expect("settings");
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
                ConsumerSettings::new(&props).expect("settings").client_config().create();
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
            ConsumerSettings::new(&props).expect("settings").client_config().create();
        let err = consumer.err().expect("no SSL without the tls feature").to_string();
        assert!(err.contains("security.protocol"), "{err}");
    }

    #[test]
    fn a_spec_may_not_say_where_or_how_to_connect_under_a_deployment_secret() {
        let deployment = BTreeMap::from([
            ("bootstrap.servers".to_string(), "b-1.msk:9096".to_string()),
            ("security.protocol".to_string(), "SASL_SSL".to_string()),
            ("sasl.username".to_string(), "sluice".to_string()),
            ("sasl.password".to_string(), "hunter2-deployment".to_string()),
        ]);
        let spec = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
        };
        let deployment = KafkaDeployment { properties: Some(&deployment), brokers: None };
        let same = ConsumerSettings::under(&spec(&[("bootstrap.servers", "b-1.msk:9096")]), &deployment)
            .expect("the deployment's own broker list");
        assert_eq!(same.properties["sasl.password"], "hunter2-deployment");
        for (key, value) in [
            ("bootstrap.servers", "attacker.example:9092"),
            ("metadata.broker.list", "attacker.example:9092"),
            ("security.protocol", "SASL_PLAINTEXT"),
            ("ssl.endpoint.identification.algorithm", "none"),
            ("enable.ssl.certificate.verification", "false"),
            ("sasl.mechanism", "PLAIN"),
        ] {
            let err = ConsumerSettings::under(&spec(&[(key, value)]), &deployment).expect_err(key).to_string();
            assert!(err.starts_with(&format!("consumerProperties.{key}: ")) && !err.contains(value), "{err}");
        }
        let local = ConsumerSettings::under(&spec(&[("security.protocol", "SSL")]), &KafkaDeployment::default())
            .expect("no deployment");
        assert_eq!(local.properties["security.protocol"], "SSL");
        assert!(set_deployment_properties(spec(&[("sasl.username", "u")])).is_err(), "no broker list");
    }

    #[test]
    fn specs_name_only_the_deployments_brokers_and_msk_iam_needs_them_named() {
        let spec = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
        };
        let msk = "b-1.c.kafka.eu-west-3.amazonaws.com:9098,B-2.c.kafka.eu-west-3.amazonaws.com:9098";
        let deployment = KafkaDeployment { properties: None, brokers: Some(broker_set(msk)) };
        let iam = |brokers: &str| spec(&[("bootstrap.servers", brokers), ("sasl.mechanism", "AWS_MSK_IAM")]);
        let s = ConsumerSettings::under(&iam(msk), &deployment).expect("the deployment's brokers");
        assert_eq!(s.msk_iam_region(), Some("eu-west-3"));
        ConsumerSettings::under(&iam("b-2.c.kafka.eu-west-3.amazonaws.com:9098"), &deployment).expect("one of them");
        for (key, brokers) in [
            ("bootstrap.servers", "attacker.example:9098"),
            ("bootstrap.servers", "b-1.c.kafka.eu-west-3.amazonaws.com:9098,attacker.example:9098"),
        ] {
            let e = ConsumerSettings::under(&iam(brokers), &deployment).expect_err(brokers).to_string();
            assert!(e.starts_with(&format!("consumerProperties.{key}: ")) && !e.contains("attacker"), "{e}");
        }
        let listed = spec(&[("bootstrap.servers", msk), ("metadata.broker.list", "attacker.example:9092")]);
        let e = ConsumerSettings::under(&listed, &deployment).expect_err("another list").to_string();
        assert!(e.starts_with("consumerProperties.metadata.broker.list: "), "{e}");
        // Without brokers fixed by the deployment, no token is signed for whatever a spec names.
        let e = ConsumerSettings::under(&iam("attacker.example:9098"), &KafkaDeployment::default())
            .expect_err("MSK IAM without the deployment's brokers")
            .to_string();
        assert!(e.starts_with("consumerProperties.sasl.mechanism: ") && e.contains(BROKERS_ENV), "{e}");
        assert!(!e.contains("attacker"), "{e}");
        // A spec without MSK IAM and without deployment brokers is a local run's own business.
        ConsumerSettings::under(&spec(&[("bootstrap.servers", "127.0.0.1:9092")]), &KafkaDeployment::default())
            .expect("plain Kafka");
    }

    #[test]
    fn secret_values_are_redacted_from_librdkafkas_errors() {
        let password = "hunter2-in-a-jaas-config";
        let props = BTreeMap::from([
            ("bootstrap.servers".to_string(), "127.0.0.1:1".to_string()),
            (
                "sasl.jaas.config".to_string(),
                format!("org.apache.kafka.common.security.plain.PlainLoginModule required password=\"{password}\";"),
            ),
        ]);
        let settings = ConsumerSettings::new(&props).expect("settings");
        let created: Result<rdkafka::consumer::BaseConsumer, _> = settings.client_config().create();
        let raw = created.err().expect("librdkafka has no sasl.jaas.config").to_string();
        assert!(raw.contains(password), "librdkafka quotes the value: {raw}");
        let shown = settings.redact(&raw);
        assert!(!shown.contains(password) && shown.contains("sasl.jaas.config"), "{shown}");
        let refused = crate::partition_watermarks(&settings, "t").expect_err("no consumer").to_string();
        assert!(!refused.contains(password) && refused.contains("<redacted>"), "{refused}");
    }
}
