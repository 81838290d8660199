//! Which parts of a spec are secrets, and the spec as anyone who may read it is shown it: every
//! secret replaced by `<redacted>`, wherever it stands (in either spec form, in the value's and
//! the key's formats). What counts as secret is [`SECRET_FIELDS`]; the README's "Secrets in
//! specs" says the same.

use serde_json::Value;

/// What every shown spec hides:
///
/// | where | what |
/// | --- | --- |
/// | any object | a field whose name says it is a secret ([`is_secret`]: `password`, `secret`, `token`, `jaas`, `.pem`, `credential`, `user.info`, `apikey`, `api.key`, `api_key`, `authorization`) |
/// | a decoder's `config` (`avroBytesDecoder`, `protoBytesDecoder`) | every value (`basic.auth.user.info`, ...) |
/// | a decoder's `headers` | every value |
/// | any string holding a URL (`url`, `urls`, `bootstrap.servers`, ...) | its user info and its query string |
pub const SECRET_FIELDS: [&str; 4] =
    ["a field named as a secret", "config.*", "headers.*", "user info and query of URLs"];

/// What a hidden value is replaced with.
pub const REDACTED: &str = "<redacted>";

/// Words that make a field's value a secret: never printed, never in an error.
const SECRET_WORDS: [&str; 11] = [
    "password",
    "secret",
    "jaas",
    "token",
    ".pem",
    "credential",
    "user.info",
    "apikey",
    "api.key",
    "api_key",
    "authorization",
];

/// Objects whose every value is secret: a schema registry decoder's client settings and headers.
const SECRET_OBJECTS: [&str; 2] = ["config", "headers"];

/// How deep a shown spec is walked; deeper values are hidden whole (the spec loader refuses far
/// less deep specs anyway).
const MAX_DEPTH: usize = 64;

/// Whether the value of a field or property named `key` is a secret.
pub fn is_secret(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    SECRET_WORDS.iter().any(|w| key.contains(w))
}

/// `spec` (either form) with every secret [`SECRET_FIELDS`] names replaced by [`REDACTED`].
pub fn redacted_spec(spec: &Value) -> Value {
    let mut shown = spec.clone();
    redact(&mut shown, false, 0);
    shown
}

fn redact(value: &mut Value, all_secret: bool, depth: usize) {
    if depth > MAX_DEPTH {
        *value = Value::String(REDACTED.into());
        return;
    }
    match value {
        Value::Object(fields) => {
            for (key, field) in fields.iter_mut() {
                let secret = all_secret || is_secret(key);
                if secret && !field.is_object() && !field.is_array() {
                    *field = Value::String(REDACTED.into());
                } else {
                    let whole = secret || (SECRET_OBJECTS.contains(&key.as_str()) && field.is_object());
                    redact(field, whole, depth + 1);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|item| redact(item, all_secret, depth + 1)),
        Value::String(text) if all_secret => *text = REDACTED.into(),
        Value::String(text) if text.contains("://") => *text = urls_redacted(text),
        Value::Bool(_) | Value::Number(_) if all_secret => *value = Value::String(REDACTED.into()),
        _ => {}
    }
}

/// `text` with the user info (`scheme://user:password@`) and the query string and fragment of
/// every URL in it replaced by [`REDACTED`]: `https://<redacted>@host/path?<redacted>`.
pub fn urls_redacted(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("://") {
        let (head, tail) = rest.split_at(i + 3);
        out.push_str(head);
        // A URL ends at white space, a quote, a comma (a list of brokers) or a closing bracket.
        let end =
            tail.find(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | ',' | '>' | ')')).unwrap_or(tail.len());
        let url = &tail[..end];
        let authority_end = url.find(['/', '?', '#']).unwrap_or(url.len());
        let url = match url[..authority_end].rfind('@') {
            Some(at) => {
                out.push_str(REDACTED);
                out.push('@');
                &url[at + 1..]
            }
            None => url,
        };
        match url.find(['?', '#']) {
            Some(q) => {
                out.push_str(&url[..=q]);
                out.push_str(REDACTED);
            }
            None => out.push_str(url),
        }
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn urls_lose_their_user_info_and_query() {
        assert_eq!(urls_redacted("http://u:pw@reg:8081/x"), "http://<redacted>@reg:8081/x");
        assert_eq!(urls_redacted("https://reg/x?apikey=k#f then"), "https://reg/x?<redacted> then");
        assert_eq!(urls_redacted("at https://a:b@h, and http://plain/"), "at https://<redacted>@h, and http://plain/");
        assert_eq!(urls_redacted("no url at all"), "no url at all");
    }

    /// A decoder with every secret field set, each to a value that says where it was.
    fn decoder(kind: &str, at: &str) -> Value {
        json!({"type": "schema_registry",
            "url": format!("https://user-{at}:pw-{at}@registry.example:8081/?apikey=key-{at}"),
            "urls": [format!("https://u-{at}:urls-pw-{at}@r2.example/base?token=urls-{at}")],
            "config": {"basic.auth.credentials.source": "USER_INFO", "basic.auth.user.info": format!("user:info-{at}"),
                "schema.registry.ssl.keystore.password": format!("ks-{at}"), "retries": 3},
            "headers": {"X-Api-Key": format!("header-{at}"), "Authorization": format!("Bearer bearer-{at}"),
                "X-Tenant": format!("tenant-{at}")},
            "kind": kind})
    }

    #[test]
    fn every_secret_field_the_spec_format_has_is_redacted_in_both_forms() {
        let io = |at: &str| {
            json!({"topic": "t", "consumerProperties": {
                "bootstrap.servers": "b:9092",
                "sasl.password": format!("sasl-{at}"),
                "sasl.jaas.config": format!("PlainLoginModule required password=\"jaas-{at}\";"),
                "ssl.key.pem": format!("-----BEGIN PRIVATE KEY----- pem-{at}"),
                "sasl.oauthbearer.client.secret": format!("oauth-{at}")},
                "inputFormat": {"type": "kafka",
                    "valueFormat": {"type": "avro_stream", "avroBytesDecoder": decoder("avro", &format!("value-{at}"))},
                    "keyFormat": {"type": "protobuf", "protoBytesDecoder": decoder("protobuf", &format!("key-{at}"))}}})
        };
        let current = json!({"type": "kafka", "spec": {"ioConfig": io("current")}});
        let legacy = json!({"type": "kafka", "ioConfig": io("legacy")});
        for spec in [current, legacy] {
            let text = redacted_spec(&spec).to_string();
            for marker in [
                "sasl-",
                "jaas-",
                "pem-",
                "oauth-",
                "user-",
                "pw-",
                "key-value",
                "key-key",
                "urls-",
                "info-",
                "ks-",
                "header-",
                "bearer-",
                "tenant-",
            ] {
                assert!(!text.contains(marker), "{marker} shown: {text}");
            }
            assert!(text.contains("registry.example:8081") && text.contains("\"b:9092\""), "{text}");
        }
        assert_eq!(SECRET_FIELDS.len(), 4, "each kind of secret field above is exercised");
    }

    #[test]
    fn deep_values_are_hidden_whole() {
        let mut deep = json!("leaf");
        for _ in 0..100 {
            deep = json!({ "n": deep });
        }
        assert!(!redacted_spec(&deep).to_string().contains("leaf"));
    }
}
