//! Which parts of a spec are secrets, and the spec as anyone who may read it is shown it: every
//! secret replaced by `<redacted>`, wherever it stands (in either spec form, in the value's and
//! the key's formats). What counts as secret is [`SECRET_FIELDS`]; the README's "Secrets in
//! specs" says the same. [`redacted_spec`] is the one function every view of something submitted
//! goes through: the API's answers (supervisor specs and their history, task payloads,
//! compaction configs, retention rules), `sys.supervisors` and the `sluice` command's views.

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
/// every URL in it replaced by [`REDACTED`]: `https://<redacted>@host/path?<redacted>`. An
/// authority ends only where a URL's syntax ends it (`/`, `?`, `#`), at white space or at a
/// quote, so that user info holding `,` or `)` is hidden whole; a query or fragment is hidden up
/// to white space or a quote, with whatever follows it there.
pub fn urls_redacted(text: &str) -> String {
    let ends_url = |c: char| c.is_whitespace() || matches!(c, '"' | '<' | '>');
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("://") {
        let (head, tail) = rest.split_at(i + 3);
        out.push_str(head);
        let authority_end = tail.find(|c: char| ends_url(c) || matches!(c, '/' | '?' | '#')).unwrap_or(tail.len());
        let (authority, after) = tail.split_at(authority_end);
        match authority.rfind('@') {
            Some(at) => {
                out.push_str(REDACTED);
                out.push('@');
                out.push_str(&authority[at + 1..]);
            }
            None => out.push_str(authority),
        }
        // The path is scanned again for the next URL; a query or fragment before it is hidden
        // to the end of the URL's run, later URLs of the run with it.
        let run_end = after.find(ends_url).unwrap_or(after.len());
        let next_url = after[..run_end].find("://").unwrap_or(run_end);
        rest = match after[..next_url].find(['?', '#']) {
            Some(q) => {
                out.push_str(&after[..=q]);
                out.push_str(REDACTED);
                &after[run_end..]
            }
            None => after,
        };
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
        // User info and queries holding characters that end other tokens are hidden whole.
        assert_eq!(urls_redacted("https://user:pa,ss)'@reg:8081/"), "https://<redacted>@reg:8081/");
        assert_eq!(urls_redacted("https://reg/?apikey=a,b)c d"), "https://reg/?<redacted> d");
        // Several URLs in one run: each one's user info is hidden.
        assert_eq!(urls_redacted("http://a:1@h1/x,https://b:2@h2/y"), "http://<redacted>@h1/x,https://<redacted>@h2/y");
        assert_eq!(urls_redacted("http://h1/?k=1,https://b:2@h2/"), "http://h1/?<redacted>");
    }

    /// A decoder with every secret field set, each to a value that says where it was.
    fn decoder(kind: &str, at: &str) -> Value {
        json!({"type": "schema_registry",
            "url": format!("https://user-{at}:pw,{at})@registry.example:8081/?apikey=key-{at},more"),
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
                "pw,",
                ",more",
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
