//! A client of Confluent's schema registry, as the `schema_registry` Avro and Protobuf decoders
//! need it: `GET {url}/schemas/ids/{id}` and `GET {url}/subjects/{subject}/versions/{version}`
//! (with `format=serialized` for Protobuf descriptors) on each URL in turn, with basic auth
//! (`basic.auth.user.info`) and headers from the spec, bounded in time and size.
//!
//! A spec chooses the URLs, so the client reaches only what a registry should be: `http` and
//! `https` URLs, no redirects, and no loopback, link-local or instance-metadata address (the
//! Lambda Runtime API listens on 127.0.0.1; credentials services on 169.254.x.x) unless the
//! deployment allows local registries ([`LOCAL_ENV`], [`allow_local_registries`]). Addresses are
//! checked as they are resolved, so a name that resolves to a refused address is refused too.
//! Credentials, headers and query strings are never printed, and errors that reach a task's
//! status say only which registry did not give which schema: why (the status code, the socket
//! error) goes to the function's log, so that status does not map the network for its readers.

use base64::Engine;
use sluice_format::input::{RegisteredSchema, RegistryError, SchemaAt, SchemaReference, SchemaRegistry};
use sluice_format::spec::{urls_redacted, RegistrySettings};
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use ureq::unversioned::resolver::{DefaultResolver, ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::{DefaultConnector, NextTimeout};

/// Time for one request to one URL.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// Largest schema response read.
const MAX_RESPONSE_BYTES: u64 = 4 << 20;
/// URLs one decoder may name.
const MAX_URLS: usize = 8;
/// Headers one decoder may send, and the bytes of each name and value.
const MAX_HEADERS: usize = 32;
const MAX_HEADER_BYTES: usize = 8 << 10;
/// Headers a spec may not set: they change where or how the request goes.
const RESERVED_HEADERS: [&str; 6] = ["host", "content-length", "transfer-encoding", "connection", "upgrade", "te"];
/// How long a registry that says a schema does not exist is given before it is asked again.
const MISSING_RECHECK: Duration = Duration::from_secs(1);
/// Confluent's error codes for a subject, version or schema that does not exist.
const NOT_FOUND_CODES: [i64; 3] = [40401, 40402, 40403];

/// `true` lets registries at loopback and link-local addresses be asked (local runs against a
/// registry on the same machine); anything else, or unset, refuses them.
pub const LOCAL_ENV: &str = "SLUICE_REGISTRY_ALLOW_LOCAL";

static ALLOW_LOCAL: AtomicBool = AtomicBool::new(false);

/// Lets this process's registry clients reach loopback and link-local addresses, as
/// [`LOCAL_ENV`] `true` does (for tests and local tools whose registry runs beside them).
pub fn allow_local_registries() {
    ALLOW_LOCAL.store(true, Ordering::SeqCst);
}

fn local_allowed() -> bool {
    ALLOW_LOCAL.load(Ordering::SeqCst) || std::env::var(LOCAL_ENV).is_ok_and(|v| v.trim().eq_ignore_ascii_case("true"))
}

/// Whether `ip` is an address a registry named by a spec may not have unless local registries
/// are allowed: loopback, link-local (instance metadata and credentials services), unspecified,
/// multicast or broadcast, and AWS's IPv6 metadata prefix `fd00:ec2::/32`.
pub fn is_local_address(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            v4.is_loopback()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_multicast()
                || v4.is_broadcast()
                || v4.octets()[0] == 0
        }
        IpAddr::V6(v6) => {
            let s = v6.segments();
            // IPv4 inside IPv6: mapped (::ffff:a.b.c.d), compatible (::a.b.c.d) and NAT64
            // (64:ff9b::a.b.c.d) reach the IPv4 address they hold.
            let nat64 = s[..6] == [0x64, 0xff9b, 0, 0, 0, 0];
            let embedded = match v6.to_ipv4() {
                Some(v4) if !v6.is_loopback() && !v6.is_unspecified() => Some(v4),
                _ if nat64 => Some(std::net::Ipv4Addr::from(((s[6] as u32) << 16) | s[7] as u32)),
                _ => None,
            };
            match embedded {
                Some(v4) => is_local_address(IpAddr::V4(v4)),
                None => {
                    v6.is_loopback()
                        || v6.is_unspecified()
                        || v6.is_multicast()
                        || (s[0] & 0xffc0) == 0xfe80
                        || (s[0] == 0xfd00 && s[1] == 0x0ec2)
                }
            }
        }
    }
}

/// Resolves as ureq does, then keeps only the addresses a registry may have.
#[derive(Debug)]
struct CheckedResolver {
    inner: DefaultResolver,
    allow_local: bool,
}

impl Resolver for CheckedResolver {
    fn resolve(
        &self,
        uri: &ureq::http::Uri,
        config: &ureq::config::Config,
        timeout: NextTimeout,
    ) -> Result<ResolvedSocketAddrs, ureq::Error> {
        let resolved = self.inner.resolve(uri, config, timeout)?;
        if self.allow_local {
            return Ok(resolved);
        }
        let mut kept = self.inner.empty();
        for addr in resolved.iter().filter(|a| !is_local_address(a.ip())) {
            kept.push(*addr);
        }
        if kept.is_empty() {
            return Err(ureq::Error::Io(std::io::Error::new(
                std::io::ErrorKind::PermissionDenied,
                format!("the registry's host resolves only to local addresses (allow them with {LOCAL_ENV}=true)"),
            )));
        }
        Ok(kept)
    }
}

/// Why a `schema_registry` decoder's settings were refused, naming the URL (without its user
/// info or query) or header at fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegistrySettingsError {
    /// Neither `url` nor `urls`.
    #[error("schema_registry decoder: give url or urls")]
    NoUrl,
    /// More URLs than a decoder may name.
    #[error("schema_registry decoder: {count} urls, at most {MAX_URLS}")]
    TooManyUrls {
        /// URLs given.
        count: usize,
    },
    /// More headers than a decoder may set.
    #[error("schema_registry decoder: headers: more than {MAX_HEADERS}")]
    TooManyHeaders,
    /// A `basic.auth.credentials.source` other than `USER_INFO`.
    #[error("schema_registry config: basic.auth.credentials.source {given:?} is not supported: use USER_INFO")]
    CredentialsSource {
        /// The source given, cut.
        given: String,
    },
    /// A URL that does not parse.
    #[error("schema_registry decoder: {url:?} is not a URL")]
    NotUrl {
        /// The URL as shown.
        url: String,
    },
    /// A URL that is not http(s).
    #[error("schema_registry decoder: {url:?}: only http and https URLs are asked")]
    Scheme {
        /// The URL as shown.
        url: String,
    },
    /// A URL without a host.
    #[error("schema_registry decoder: {url:?} names no host")]
    NoHost {
        /// The URL as shown.
        url: String,
    },
    /// A URL of a local address, where those are refused.
    #[error("schema_registry decoder: {url:?} is a loopback or link-local address, which this deployment does not ask (allow local registries with {LOCAL_ENV}=true)")]
    Local {
        /// The URL as shown.
        url: String,
    },
    /// A header name or value longer than a header may be.
    #[error("schema_registry decoder: headers.{header}: longer than {MAX_HEADER_BYTES} bytes")]
    HeaderTooLong {
        /// The header's name, cut.
        header: String,
    },
    /// A header a spec may not set.
    #[error("schema_registry decoder: headers.{header}: a spec may not set this header")]
    ReservedHeader {
        /// The header's name, cut.
        header: String,
    },
    /// A header that is not valid HTTP.
    #[error("schema_registry decoder: headers.{header}: not a valid HTTP header")]
    InvalidHeader {
        /// The header's name, cut.
        header: String,
    },
}

/// A schema registry reached over HTTP.
pub struct HttpSchemaRegistry {
    urls: Vec<String>,
    /// The URLs as errors name them: without user info or query.
    shown: Vec<String>,
    agent: ureq::Agent,
    /// Headers sent with every request: the spec's, and `Authorization` for basic auth.
    headers: Vec<(String, String)>,
}

impl std::fmt::Debug for HttpSchemaRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpSchemaRegistry").field("urls", &self.shown).field("headers", &self.headers.len()).finish()
    }
}

impl HttpSchemaRegistry {
    /// The registry a `schema_registry` decoder's settings name, refused when a URL or header
    /// could send the request somewhere a registry should not be. Local addresses are refused
    /// unless the process allows them ([`LOCAL_ENV`]).
    pub fn new(settings: &RegistrySettings) -> Result<Self, RegistrySettingsError> {
        Self::reaching(settings, local_allowed())
    }

    /// [`HttpSchemaRegistry::new`], with local addresses allowed or not by `allow_local`.
    pub fn reaching(settings: &RegistrySettings, allow_local: bool) -> Result<Self, RegistrySettingsError> {
        let RegistrySettings { url, urls, config, headers, .. } = settings;
        let urls: Vec<String> = url
            .iter()
            .chain(urls.iter().flatten())
            .map(|u| u.trim().trim_end_matches('/').to_string())
            .filter(|u| !u.is_empty())
            .collect();
        if urls.is_empty() {
            return Err(RegistrySettingsError::NoUrl);
        }
        if urls.len() > MAX_URLS {
            return Err(RegistrySettingsError::TooManyUrls { count: urls.len() });
        }
        let shown: Vec<String> = urls.iter().map(|u| urls_redacted(u)).collect();
        for (u, shown) in urls.iter().zip(&shown) {
            check_url(u, shown, allow_local)?;
        }
        let spec_headers = headers.iter().flatten();
        if spec_headers.clone().count() > MAX_HEADERS {
            return Err(RegistrySettingsError::TooManyHeaders);
        }
        let mut all = Vec::new();
        for (k, v) in spec_headers {
            check_header(k, v)?;
            all.push((k.clone(), v.clone()));
        }
        let setting = |name: &str| config.as_ref().and_then(|c| c.get(name)).and_then(|v| v.as_str());
        match (setting("basic.auth.credentials.source"), setting("basic.auth.user.info")) {
            (Some(source), _) if !source.eq_ignore_ascii_case("USER_INFO") => {
                let given = sluice_format::text::excerpt(source, 40).into_owned();
                return Err(RegistrySettingsError::CredentialsSource { given });
            }
            (_, Some(user_info)) => {
                let encoded = base64::engine::general_purpose::STANDARD.encode(user_info);
                all.push(("Authorization".into(), format!("Basic {encoded}")));
            }
            _ => {}
        }
        let config = ureq::Agent::config_builder()
            .timeout_global(Some(REQUEST_TIMEOUT))
            .max_redirects(0)
            .proxy(None)
            .http_status_as_error(false)
            .build();
        let resolver = CheckedResolver { inner: DefaultResolver::default(), allow_local };
        let agent = ureq::Agent::with_parts(config, DefaultConnector::new(), resolver);
        Ok(Self { urls, shown, agent, headers: all })
    }

    fn fetch(&self, index: usize, at: SchemaAt<'_>, serialized: bool) -> Result<RegisteredSchema, Failed> {
        let url = &self.urls[index];
        let path = match at {
            SchemaAt::Id(id) => format!("{url}/schemas/ids/{id}"),
            SchemaAt::Version(subject, version) => {
                let subject = percent_encoding::utf8_percent_encode(subject, percent_encoding::NON_ALPHANUMERIC);
                format!("{url}/subjects/{subject}/versions/{version}")
            }
        };
        let mut request = self.agent.get(path);
        if serialized {
            request = request.query("format", "serialized");
        }
        for (k, v) in &self.headers {
            request = request.header(k, v);
        }
        let mut response = request.call().map_err(|e| Failed::Unavailable(urls_redacted(&e.to_string())))?;
        let status = response.status().as_u16();
        let body = response.body_mut().with_config().limit(MAX_RESPONSE_BYTES).read_to_string();
        if (300..400).contains(&status) {
            return Err(Failed::Unavailable(format!("answered HTTP {status}: redirects are not followed")));
        }
        let body = body.map_err(|e| Failed::Unavailable(format!("HTTP {status}, reading the answer: {e}")))?;
        let answer: serde_json::Value =
            serde_json::from_str(&body).map_err(|e| Failed::Unavailable(format!("HTTP {status}, not JSON: {e}")))?;
        if status == 404 && answer["error_code"].as_i64().is_some_and(|c| NOT_FOUND_CODES.contains(&c)) {
            return Err(Failed::Missing(format!("{} has no {at}", self.shown[index])));
        }
        if status != 200 {
            return Err(Failed::Unavailable(format!("answered HTTP {status}")));
        }
        let malformed = |what: &str| Failed::Unavailable(format!("HTTP 200, {what}"));
        let schema = answer["schema"].as_str().ok_or_else(|| malformed("the answer has no schema field"))?;
        let references = answer["references"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|r| match (r["name"].as_str(), r["subject"].as_str(), r["version"].as_i64()) {
                (Some(name), Some(subject), Some(version)) => {
                    Ok(SchemaReference { name: name.into(), subject: subject.into(), version })
                }
                _ => Err(malformed("a reference lacks its name, subject or version")),
            })
            .collect::<Result<_, _>>()?;
        Ok(RegisteredSchema { schema: schema.to_string(), references })
    }
}

/// Why one URL gave no schema.
enum Failed {
    /// The registry says there is no such schema.
    Missing(String),
    /// Anything else: the detail goes to the log only.
    Unavailable(String),
}

impl SchemaRegistry for HttpSchemaRegistry {
    fn schema(&self, at: SchemaAt<'_>, serialized: bool) -> Result<RegisteredSchema, RegistryError> {
        let mut missing = None;
        // A registry that says a schema does not exist is asked once more after a pause: a
        // replica behind its leader may not have a schema registered a moment ago.
        for round in 0..2 {
            if round == 1 {
                match &missing {
                    Some(_) => std::thread::sleep(MISSING_RECHECK),
                    None => break,
                }
                missing = None;
            }
            for index in 0..self.urls.len() {
                match self.fetch(index, at, serialized) {
                    Ok(schema) => return Ok(schema),
                    Err(Failed::Missing(e)) => missing = Some(e),
                    Err(Failed::Unavailable(detail)) => {
                        tracing::warn!(registry = self.shown[index], %at, detail, "schema registry gave no schema");
                    }
                }
            }
        }
        // One registry that says the schema does not exist is believed over others that could
        // not be asked: they share one store of schemas.
        match missing {
            Some(e) => Err(RegistryError::Missing(e)),
            None => Err(RegistryError::Unavailable(format!(
                "{} did not give {at} (the function's log has why)",
                self.shown.join(", ")
            ))),
        }
    }
}

/// Refuses a URL that is not http(s), or whose host is a local address when those are refused.
fn check_url(url: &str, shown: &str, allow_local: bool) -> Result<(), RegistrySettingsError> {
    let uri: ureq::http::Uri = url.parse().map_err(|_| RegistrySettingsError::NotUrl { url: shown.to_string() })?;
    match uri.scheme_str() {
        Some("http" | "https") => {}
        _ => return Err(RegistrySettingsError::Scheme { url: shown.to_string() }),
    }
    let host = uri.host().unwrap_or("").trim_start_matches('[').trim_end_matches(']');
    if host.is_empty() {
        return Err(RegistrySettingsError::NoHost { url: shown.to_string() });
    }
    let name = host.trim_end_matches('.').to_ascii_lowercase();
    // Hosts of digits and dots that are not dotted quads (127.1, 2130706433, 0x7f.1) are
    // addresses to the resolver: refused whatever they name.
    let number = |label: &str| match label.strip_prefix("0x") {
        Some(hex) => hex.chars().all(|c| c.is_ascii_hexdigit()),
        None => !label.is_empty() && label.chars().all(|c| c.is_ascii_digit()),
    };
    let numeric = !name.is_empty() && name.split('.').all(number);
    let local = match host.parse::<IpAddr>() {
        Ok(ip) => is_local_address(ip),
        Err(_) => numeric || name == "localhost" || name.ends_with(".localhost"),
    };
    if local && !allow_local {
        return Err(RegistrySettingsError::Local { url: shown.to_string() });
    }
    Ok(())
}

/// Refuses a header that would change where or how a request goes, or is too large.
fn check_header(name: &str, value: &str) -> Result<(), RegistrySettingsError> {
    let header = || sluice_format::text::excerpt(name, 60).into_owned();
    if name.len() > MAX_HEADER_BYTES || value.len() > MAX_HEADER_BYTES {
        return Err(RegistrySettingsError::HeaderTooLong { header: header() });
    }
    if RESERVED_HEADERS.iter().any(|r| name.eq_ignore_ascii_case(r)) {
        return Err(RegistrySettingsError::ReservedHeader { header: header() });
    }
    if ureq::http::HeaderName::from_bytes(name.as_bytes()).is_err() || ureq::http::HeaderValue::from_str(value).is_err()
    {
        return Err(RegistrySettingsError::InvalidHeader { header: header() });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(value: serde_json::Value) -> RegistrySettings {
        serde_json::from_value(value).expect("settings")
    }

    #[test]
    fn user_info_and_query_strings_are_never_shown() {
        let registry = HttpSchemaRegistry::reaching(
            &settings(serde_json::json!({
            "url": "http://u:secret@reg:8081/?apikey=k3y", "config": {"basic.auth.user.info": "u:pw"},
            "headers": {"X-Key": "k"}})),
            false,
        )
        .expect("valid");
        let shown = format!("{registry:?}");
        assert!(!shown.contains("secret") && !shown.contains("pw") && !shown.contains("k3y"), "{shown}");
        assert!(!shown.contains("X-Key"), "{shown}");
        // Nothing listens on port 9: the error names the URL without its user info or query.
        let registry = HttpSchemaRegistry::reaching(
            &settings(serde_json::json!({"urls": ["http://u:secret@127.0.0.1:9/?apikey=k3y"]})),
            true,
        )
        .expect("valid");
        match registry.schema(SchemaAt::Id(1), false) {
            Err(RegistryError::Unavailable(e)) => {
                assert!(e.contains("http://<redacted>@127.0.0.1:9/?<redacted>"), "{e}");
                assert!(!e.contains("secret") && !e.contains("k3y"), "{e}");
            }
            other => panic!("expected an unavailable registry, got {other:?}"),
        }
    }

    #[test]
    fn local_addresses_other_schemes_and_reserved_headers_are_refused() {
        for url in [
            "http://127.0.0.1:9001/2018-06-01/runtime",
            "http://localhost:8081",
            "http://169.254.169.254/latest",
            "http://[::1]:8081",
            "http://[::ffff:127.0.0.1]:8081",
            "http://[fd00:ec2::254]/",
            "http://0.0.0.0:8081",
            "http://127.1:8081",
            "http://2130706433/",
            "http://localhost.:8081",
            "http://[::127.0.0.1]/",
            "http://[64:ff9b::a9fe:a9fe]/",
            "http://0x7f.1/",
        ] {
            let e = HttpSchemaRegistry::reaching(&settings(serde_json::json!({"url": url})), false)
                .expect_err(url)
                .to_string();
            assert!(e.contains("loopback or link-local") && e.contains(LOCAL_ENV), "{url}: {e}");
            HttpSchemaRegistry::reaching(&settings(serde_json::json!({"url": url})), true).expect(url);
        }
        for url in ["file:///etc/passwd", "gopher://reg:70/", "reg:8081"] {
            let e = HttpSchemaRegistry::reaching(&settings(serde_json::json!({"url": url})), true)
                .expect_err(url)
                .to_string();
            assert!(
                e.contains("only http and https") || e.contains("is not a URL") || e.contains("names no host"),
                "{e}"
            );
        }
        for url in ["http://10.0.0.7:8081", "http://cafe.face:8081", "http://registry.example"] {
            HttpSchemaRegistry::reaching(&settings(serde_json::json!({"url": url})), false).expect(url);
        }
        for header in ["Host", "transfer-encoding", "bad header"] {
            let e = HttpSchemaRegistry::reaching(
                &settings(serde_json::json!({"url": "http://reg", "headers": {header: "x"}})),
                false,
            )
            .expect_err(header)
            .to_string();
            assert!(e.contains(&format!("headers.{header}")), "{e}");
        }
        let many: serde_json::Map<String, serde_json::Value> =
            (0..=MAX_HEADERS).map(|i| (format!("X-{i}"), "v".into())).collect();
        let e =
            HttpSchemaRegistry::reaching(&settings(serde_json::json!({"url": "http://reg", "headers": many})), false)
                .expect_err("too many headers")
                .to_string();
        assert!(e.contains("more than 32"), "{e}");
    }

    #[test]
    fn the_address_check_knows_the_local_ranges() {
        for local in ["127.0.0.1", "127.9.9.9", "169.254.170.2", "0.0.0.0", "::1", "fe80::1", "::ffff:169.254.1.1"] {
            assert!(is_local_address(local.parse().expect("ip")), "{local}");
        }
        for local in ["::7f00:1", "64:ff9b::7f00:1", "64:ff9b::a9fe:a9fe"] {
            assert!(is_local_address(local.parse().expect("ip")), "{local}");
        }
        for remote in ["10.1.2.3", "172.16.0.1", "192.168.1.1", "52.94.0.1", "2600:1f18::1", "64:ff9b::3426:1"] {
            assert!(!is_local_address(remote.parse().expect("ip")), "{remote}");
        }
    }
}
