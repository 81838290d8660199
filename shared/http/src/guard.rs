//! What `sluice serve` checks before a request reaches the API, so that a web page the operator
//! visits cannot use it: the `Host` must be one the server answers to (no DNS rebinding), an
//! `Origin`, when sent, must be that host's (no cross-site requests), a `POST` must carry JSON
//! (a cross-site form cannot send `application/json` without a CORS preflight, which this
//! server never approves), and the routes that change state ([`Class::Write`] in the route
//! table, and any request other than `GET` or `HEAD` that fits no route) answer only when the
//! operator turned them on. The api function needs none of this: its Function URL signs every
//! request with IAM.

use crate::routes::{class_of, Class};
use crate::ApiError;
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Router;
use std::sync::Arc;

/// Most characters of a refused header an error quotes.
const QUOTED: usize = 100;

/// The checks of a local server.
#[derive(Debug, Clone)]
pub struct LocalGuard {
    /// `Host` values the server answers to, e.g. `127.0.0.1:8888` and `localhost:8888`.
    pub hosts: Vec<String>,
    /// Whether the routes that change state are served: supervisor submit and operations,
    /// compaction configs, retention rules.
    pub operations: bool,
}

impl LocalGuard {
    /// Wraps `router` in the checks.
    pub fn wrap(self, router: Router) -> Router {
        router.layer(axum::middleware::from_fn_with_state(Arc::new(self), check))
    }

    fn check(&self, method: &Method, path: &str, headers: &HeaderMap) -> Result<(), ApiError> {
        let forbidden =
            |message: String| ApiError::new(StatusCode::FORBIDDEN, "Forbidden", "ForbiddenException", message);
        let host = header_text(headers, header::HOST);
        if !self.hosts.iter().any(|h| h.eq_ignore_ascii_case(&host)) {
            return Err(forbidden(format!(
                "Host {:?} is not one this server answers to ({}; add names with --allowed-host)",
                quoted(&host),
                self.hosts.join(", ")
            )));
        }
        if headers.contains_key(header::ORIGIN) {
            let origin = header_text(headers, header::ORIGIN);
            if !origin.eq_ignore_ascii_case(&format!("http://{host}")) {
                return Err(forbidden(format!("cross-origin request from {:?} refused", quoted(&origin))));
            }
        }
        if method == Method::POST {
            let kind = header_text(headers, header::CONTENT_TYPE);
            let essence = kind.split(';').next().unwrap_or("").trim();
            if !essence.eq_ignore_ascii_case("application/json") {
                return Err(ApiError::new(
                    StatusCode::UNSUPPORTED_MEDIA_TYPE,
                    "Unsupported Media Type",
                    "BadRequestException",
                    format!("Content-Type {:?}: send application/json", quoted(&kind)),
                ));
            }
        }
        if !self.operations && changes_state(method, path) {
            return Err(forbidden(
                "operations are off on this server (supervisor changes, compaction configs, retention rules): \
                 start it with `sluice serve --allow-operations`, or use `sluice supervisor`, `sluice compaction` \
                 or `sluice retention`"
                    .into(),
            ));
        }
        Ok(())
    }
}

/// Whether a request may change state: it fits a write route, or fits no route and is not a
/// read.
fn changes_state(method: &Method, path: &str) -> bool {
    match class_of(method, path) {
        Some(class) => class == Class::Write,
        None => *method != Method::GET && *method != Method::HEAD,
    }
}

async fn check(State(guard): State<Arc<LocalGuard>>, request: Request, next: Next) -> Response {
    match guard.check(request.method(), request.uri().path(), request.headers()) {
        Ok(()) => next.run(request).await,
        Err(e) => e.into_response(),
    }
}

fn header_text(headers: &HeaderMap, name: header::HeaderName) -> String {
    headers.get(name).map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned()).unwrap_or_default()
}

fn quoted(text: &str) -> std::borrow::Cow<'_, str> {
    sluice_format::text::excerpt(text, QUOTED)
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn guard(operations: bool) -> LocalGuard {
        LocalGuard { hosts: vec!["127.0.0.1:8888".into(), "localhost:8888".into()], operations }
    }

    fn headers(pairs: &[(header::HeaderName, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (name, value) in pairs {
            h.insert(name.clone(), HeaderValue::from_str(value).expect("header"));
        }
        h
    }

    fn status(g: &LocalGuard, method: Method, path: &str, h: &HeaderMap) -> Option<StatusCode> {
        g.check(&method, path, h).err().map(|e| e.status)
    }

    #[test]
    fn json_from_the_servers_own_host_passes() {
        let h = headers(&[(header::HOST, "localhost:8888"), (header::CONTENT_TYPE, "application/json; charset=utf-8")]);
        assert_eq!(status(&guard(false), Method::POST, "/druid/v2", &h), None);
        let h = headers(&[(header::HOST, "127.0.0.1:8888"), (header::ORIGIN, "http://127.0.0.1:8888")]);
        assert_eq!(status(&guard(false), Method::GET, "/druid/v2/datasources", &h), None);
    }

    #[test]
    fn cross_site_and_rebound_requests_are_refused() {
        let g = guard(true);
        let rebound = headers(&[(header::HOST, "attacker.example:8888"), (header::CONTENT_TYPE, "application/json")]);
        assert_eq!(status(&g, Method::POST, "/druid/v2", &rebound), Some(StatusCode::FORBIDDEN));
        let cross = headers(&[
            (header::HOST, "127.0.0.1:8888"),
            (header::ORIGIN, "https://attacker.example"),
            (header::CONTENT_TYPE, "application/json"),
        ]);
        assert_eq!(
            status(&g, Method::POST, "/druid/indexer/v1/supervisor/x/terminate", &cross),
            Some(StatusCode::FORBIDDEN)
        );
        // What a cross-site form can send without a preflight.
        for kind in ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", ""] {
            let form = headers(&[(header::HOST, "127.0.0.1:8888"), (header::CONTENT_TYPE, kind)]);
            assert_eq!(
                status(&g, Method::POST, "/druid/indexer/v1/supervisor/x/reset", &form),
                Some(StatusCode::UNSUPPORTED_MEDIA_TYPE),
                "{kind}"
            );
        }
    }

    #[test]
    fn operations_answer_only_when_turned_on() {
        let h = headers(&[(header::HOST, "127.0.0.1:8888"), (header::CONTENT_TYPE, "application/json")]);
        for (method, path) in [
            (Method::POST, "/druid/indexer/v1/supervisor"),
            (Method::POST, "/druid/indexer/v1/supervisor/x/terminate"),
            (Method::POST, "/druid/coordinator/v1/rules/x"),
            (Method::POST, "/druid/coordinator/v1/config/compaction"),
            (Method::DELETE, "/druid/coordinator/v1/config/compaction/x"),
        ] {
            let refused = guard(false).check(&method, path, &h).expect_err(path);
            assert_eq!(refused.status, StatusCode::FORBIDDEN, "{method} {path}");
            assert!(refused.message.contains("--allow-operations"), "{}", refused.message);
            assert_eq!(status(&guard(true), method, path, &h), None, "{path}");
        }
        assert_eq!(status(&guard(false), Method::GET, "/druid/indexer/v1/supervisor/x/status", &h), None);
        assert_eq!(status(&guard(false), Method::GET, "/druid/coordinator/v1/rules/x", &h), None);
        assert_eq!(status(&guard(false), Method::POST, "/druid/v2/sql", &h), None);
    }

    #[test]
    fn every_write_route_of_the_table_is_refused_without_operations() {
        let h = headers(&[(header::HOST, "127.0.0.1:8888"), (header::CONTENT_TYPE, "application/json")]);
        for route in crate::ROUTES {
            let path = route.path.replace("{id}", "x").replace("{action}", "suspend").replace("{datasource}", "x");
            let refused = status(&guard(false), route.method.clone(), &path, &h);
            match route.class {
                Class::Write => assert_eq!(refused, Some(StatusCode::FORBIDDEN), "{} {path}", route.method),
                Class::Read | Class::Query => assert_eq!(refused, None, "{} {path}", route.method),
            }
        }
    }

    #[test]
    fn what_fits_no_route_is_refused_unless_it_reads() {
        let h = headers(&[(header::HOST, "127.0.0.1:8888"), (header::CONTENT_TYPE, "application/json")]);
        for method in [Method::PUT, Method::PATCH, Method::DELETE, Method::POST, Method::OPTIONS] {
            for path in ["/druid/coordinator/v1/lookups/config", "/druid/coordinator/v1/rules", "/"] {
                assert_eq!(status(&guard(false), method.clone(), path, &h), Some(StatusCode::FORBIDDEN), "{path}");
            }
        }
        assert_eq!(status(&guard(false), Method::GET, "/druid/coordinator/v1/lookups/config", &h), None);
    }
}
