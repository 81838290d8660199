//! A client of Confluent's schema registry, as the `schema_registry` Avro and Protobuf decoders
//! need it: `GET {url}/schemas/ids/{id}` and `GET {url}/subjects/{subject}/versions/{version}`
//! (with `format=serialized` for Protobuf descriptors) on each URL in turn, with basic auth
//! (`basic.auth.user.info`) and headers from the spec, bounded in time and size. Credentials
//! and headers are never printed.

use base64::Engine;
use sluice_format::input::{RegisteredSchema, SchemaAt, SchemaReference, SchemaRegistry};
use sluice_format::spec::RegistrySettings;
use std::time::Duration;

/// Time for one request to one URL.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// Largest schema response read.
const MAX_RESPONSE_BYTES: u64 = 4 << 20;

/// A schema registry reached over HTTP.
pub struct HttpSchemaRegistry {
    urls: Vec<String>,
    /// The URLs as errors name them: without user info.
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
    /// The registry a `schema_registry` decoder's settings name.
    pub fn new(settings: &RegistrySettings) -> Result<Self, String> {
        let RegistrySettings { url, urls, config, headers, .. } = settings;
        let urls: Vec<String> = url
            .iter()
            .chain(urls.iter().flatten())
            .map(|u| u.trim_end_matches('/').to_string())
            .filter(|u| !u.is_empty())
            .collect();
        if urls.is_empty() {
            return Err("schema_registry decoder: give url or urls".into());
        }
        let mut all: Vec<(String, String)> = headers.iter().flatten().map(|(k, v)| (k.clone(), v.clone())).collect();
        let setting = |name: &str| config.as_ref().and_then(|c| c.get(name)).and_then(|v| v.as_str());
        match (setting("basic.auth.credentials.source"), setting("basic.auth.user.info")) {
            (Some(source), _) if !source.eq_ignore_ascii_case("USER_INFO") => {
                return Err(format!(
                    "schema_registry config: basic.auth.credentials.source {source:?} is not supported: use USER_INFO"
                ))
            }
            (_, Some(user_info)) => {
                let encoded = base64::engine::general_purpose::STANDARD.encode(user_info);
                all.push(("Authorization".into(), format!("Basic {encoded}")));
            }
            _ => {}
        }
        let agent = ureq::Agent::config_builder().timeout_global(Some(REQUEST_TIMEOUT)).build().into();
        let shown = urls.iter().map(|u| without_user_info(u)).collect();
        Ok(Self { urls, shown, agent, headers: all })
    }

    fn fetch(&self, index: usize, at: SchemaAt<'_>, serialized: bool) -> Result<RegisteredSchema, String> {
        let (url, shown) = (&self.urls[index], &self.shown[index]);
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
        let mut response = request.call().map_err(|e| match e {
            ureq::Error::StatusCode(404) => format!("{shown} has no {at} (404)"),
            ureq::Error::StatusCode(code) => format!("{shown} answered HTTP {code}"),
            other => format!("{shown}: {}", without_user_info(&other.to_string())),
        })?;
        let body = response
            .body_mut()
            .with_config()
            .limit(MAX_RESPONSE_BYTES)
            .read_to_string()
            .map_err(|e| format!("{shown}: reading the answer: {e}"))?;
        let answer: serde_json::Value =
            serde_json::from_str(&body).map_err(|e| format!("{shown}: the answer is not JSON: {e}"))?;
        let schema = answer["schema"].as_str().ok_or_else(|| format!("{shown}: the answer has no schema field"))?;
        let references = answer["references"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|r| match (r["name"].as_str(), r["subject"].as_str(), r["version"].as_i64()) {
                (Some(name), Some(subject), Some(version)) => {
                    Ok(SchemaReference { name: name.into(), subject: subject.into(), version })
                }
                _ => Err(format!("{shown}: a reference of {at} lacks its name, subject or version")),
            })
            .collect::<Result<_, _>>()?;
        Ok(RegisteredSchema { schema: schema.to_string(), references })
    }
}

impl SchemaRegistry for HttpSchemaRegistry {
    fn schema(&self, at: SchemaAt<'_>, serialized: bool) -> Result<RegisteredSchema, String> {
        let mut errors = Vec::new();
        for index in 0..self.urls.len() {
            match self.fetch(index, at, serialized) {
                Ok(schema) => return Ok(schema),
                Err(e) => errors.push(e),
            }
        }
        Err(errors.join("; "))
    }
}

/// `text` with the user info of any URL in it (`scheme://user:password@`) left out.
fn without_user_info(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("://") {
        let (head, tail) = rest.split_at(i + 3);
        out.push_str(head);
        let authority_end = tail.find(['/', ' ', '?', '#']).unwrap_or(tail.len());
        match tail[..authority_end].rfind('@') {
            Some(at) => rest = &tail[at + 1..],
            None => rest = tail,
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_info_is_never_shown() {
        assert_eq!(without_user_info("http://u:secret@reg:8081/x"), "http://reg:8081/x");
        assert_eq!(
            without_user_info("error at https://a:b@h and http://plain/"),
            "error at https://h and http://plain/"
        );
        let settings: RegistrySettings = serde_json::from_value(serde_json::json!({
            "url": "http://u:secret@reg:8081/", "config": {"basic.auth.user.info": "u:pw"}, "headers": {"X-Key": "k"}}))
        .expect("settings");
        let registry = HttpSchemaRegistry::new(&settings).expect("valid");
        let shown = format!("{registry:?}");
        assert!(!shown.contains("secret") && !shown.contains("pw") && !shown.contains("X-Key"), "{shown}");
        // Nothing listens on port 9: the error names the URL without its user info.
        let settings: RegistrySettings =
            serde_json::from_value(serde_json::json!({"urls": ["http://u:secret@127.0.0.1:9"]})).expect("settings");
        let e = HttpSchemaRegistry::new(&settings).expect("valid").schema(SchemaAt::Id(1), false).expect_err("down");
        assert!(e.contains("http://127.0.0.1:9") && !e.contains("secret"), "{e}");
    }
}
