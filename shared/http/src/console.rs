//! The web console: what Druid's web console shows operators, over this API. One page and its
//! ES modules (`shared/http/console/`, embedded in the binary, nothing fetched from elsewhere)
//! served at `/unified-console.html` (Druid's path) and `/console`, with views of supervisors,
//! tasks, segments, queries, and compaction and retention.
//!
//! ```text
//!   browser ── GET /console, /console/*.js ──────────────► these assets (read routes)
//!      │
//!      └──── fetch druid/indexer/..., druid/v2/sql, ... ─► the API's own routes, as any client
//! ```
//!
//! The page renders the API's answers as text nodes only (never parsed as markup), and every
//! asset is answered with a `Content-Security-Policy` that lets it run this origin's scripts
//! and styles and connect to this origin only.
//!
//! The page shows the supervisor operations only where writes are served. It learns that by
//! sending `POST /console/operations` ([`OPERATIONS_PROBE`]), which fits no route: a server
//! that serves writes answers it 404 (no such route) and changes nothing, while `sluice serve`
//! without `--allow-operations` refuses it as it refuses any write (403, before routing), and
//! so does a read half of the API ([`Routes::Reads`](crate::Routes)).

use crate::ApiError;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};

/// The request that tells the page whether this server serves writes: 404 if it does, 403 if
/// not. It fits no route, so no handler runs.
pub const OPERATIONS_PROBE: &str = "/console/operations";

/// What the page may load and connect to: this origin only.
const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

const HTML: &str = "text/html; charset=utf-8";
const CSS: &str = "text/css; charset=utf-8";
const JS: &str = "text/javascript; charset=utf-8";

/// One file of the console, embedded at build time.
#[derive(Debug, Clone, Copy)]
pub struct Asset {
    /// The path it is served at.
    pub path: &'static str,
    /// Its `Content-Type`.
    pub content_type: &'static str,
    /// Its text.
    pub body: &'static str,
}

const fn asset(path: &'static str, content_type: &'static str, body: &'static str) -> Asset {
    Asset { path, content_type, body }
}

/// The page, served at each of [`PAGE_PATHS`].
pub const PAGE: Asset = asset("/console", HTML, include_str!("../console/index.html"));

/// The paths the page is served at: Druid's, and the console's own.
pub const PAGE_PATHS: [&str; 2] = ["/unified-console.html", "/console"];

/// The page's style sheet and modules, each at its own path under `/console/`.
pub const ASSETS: &[Asset] = &[
    asset("/console/style.css", CSS, include_str!("../console/style.css")),
    asset("/console/app.js", JS, include_str!("../console/app.js")),
    asset("/console/api.js", JS, include_str!("../console/api.js")),
    asset("/console/dom.js", JS, include_str!("../console/dom.js")),
    asset("/console/chart.js", JS, include_str!("../console/chart.js")),
    asset("/console/native.js", JS, include_str!("../console/native.js")),
    asset("/console/supervisors.js", JS, include_str!("../console/supervisors.js")),
    asset("/console/tasks.js", JS, include_str!("../console/tasks.js")),
    asset("/console/segments.js", JS, include_str!("../console/segments.js")),
    asset("/console/query.js", JS, include_str!("../console/query.js")),
    asset("/console/compaction.js", JS, include_str!("../console/compaction.js")),
];

/// The asset served at `path`: the page at [`PAGE_PATHS`], else one of [`ASSETS`].
pub fn find(path: &str) -> Option<&'static Asset> {
    if PAGE_PATHS.contains(&path) {
        return Some(&PAGE);
    }
    ASSETS.iter().find(|a| a.path == path)
}

/// The answer to `GET path`: the asset with its type and the console's security headers, or
/// 404.
pub fn answer(path: &str) -> Response {
    let Some(asset) = find(path) else {
        let message = format!("{path}: no such console file");
        return ApiError::new(StatusCode::NOT_FOUND, "Not found", "NotFoundException", message).into_response();
    };
    (
        [
            (header::CONTENT_TYPE, asset.content_type),
            (header::CONTENT_SECURITY_POLICY, CONTENT_SECURITY_POLICY),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            (header::REFERRER_POLICY, "no-referrer"),
            // A new binary's assets replace the old ones at once.
            (header::CACHE_CONTROL, "no-cache"),
        ],
        asset.body,
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::routes::tests::state;
    use crate::{class_of, router_for, Class, LocalGuard, Routes, ROUTES};
    use axum::body::Body;
    use axum::http::{Method, Request};
    use tower::ServiceExt;

    fn every_file() -> impl Iterator<Item = &'static Asset> {
        std::iter::once(&PAGE).chain(ASSETS)
    }

    #[test]
    fn every_file_has_a_read_route_and_every_console_route_a_file() {
        let console_routes: Vec<&str> = ROUTES
            .iter()
            .filter(|r| r.path.starts_with("/console") || r.path == "/unified-console.html")
            .map(|r| {
                assert_eq!((&r.method, r.class), (&Method::GET, Class::Read), "{}", r.path);
                r.path
            })
            .collect();
        for path in console_routes.iter() {
            assert!(find(path).is_some(), "{path} is routed but has no file");
        }
        for path in PAGE_PATHS.iter().copied().chain(ASSETS.iter().map(|a| a.path)) {
            assert!(console_routes.contains(&path), "{path} has no route");
            assert_eq!(class_of(&Method::GET, path), Some(Class::Read), "{path}");
        }
        assert!(find("/console/nothing.js").is_none() && find("/console/").is_none());
        assert_eq!(answer("/console/nothing.js").status(), StatusCode::NOT_FOUND);
    }

    /// The files a page or module names: the page's `console/...` (`href`, `src`) and a
    /// module's `./...` (`import ... from`), as the browser resolves them.
    fn references(asset: &Asset) -> Vec<String> {
        let prefix = if asset.path == PAGE.path { "console/" } else { "./" };
        let mut out = Vec::new();
        for quote in ['"', '\''] {
            let opening = format!("{quote}{prefix}");
            for (at, _) in asset.body.match_indices(&opening) {
                let rest = &asset.body[at + opening.len()..];
                if let Some(end) = rest.find(quote) {
                    out.push(format!("/console/{}", &rest[..end]));
                }
            }
        }
        out
    }

    #[test]
    fn every_file_the_page_loads_is_embedded_and_every_embedded_file_is_loaded() {
        let named: Vec<String> = every_file().flat_map(references).collect();
        for path in &named {
            assert!(find(path).is_some(), "{path} is loaded but not embedded");
        }
        for asset in ASSETS {
            assert!(named.iter().any(|n| n == asset.path), "{} is embedded but nothing loads it", asset.path);
        }
    }

    #[test]
    fn no_file_parses_data_as_markup_or_reaches_another_origin() {
        const SVG_NAMESPACE: &str = "http://www.w3.org/2000/svg";
        for asset in every_file() {
            for sink in ["innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "Function("] {
                assert!(!asset.body.contains(sink), "{} uses {sink}", asset.path);
            }
            let text = asset.body.replace(SVG_NAMESPACE, "");
            for remote in ["http://", "https://", "//cdn", "@import"] {
                assert!(!text.contains(remote), "{} names {remote}", asset.path);
            }
        }
        let app = find("/console/api.js").expect("api.js");
        assert!(app.body.contains(&format!("'{}'", &OPERATIONS_PROBE[1..])), "api.js sends the operations probe");
    }

    async fn answer_of(router: &axum::Router, method: Method, path: &str) -> (StatusCode, axum::http::HeaderMap) {
        let request = Request::builder()
            .method(method)
            .uri(path)
            .header(header::HOST, "127.0.0.1:8888")
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from("{}"))
            .expect("request");
        let response = router.clone().oneshot(request).await.expect("response");
        (response.status(), response.headers().clone())
    }

    #[tokio::test]
    async fn each_file_is_served_with_its_type_and_a_policy_of_this_origin_only() {
        let dir = tempfile::tempdir().expect("temp dir");
        let router = router_for(state(dir.path()).await, Routes::Reads);
        for (path, asset) in PAGE_PATHS.iter().map(|p| (*p, &PAGE)).chain(ASSETS.iter().map(|a| (a.path, a))) {
            let (status, headers) = answer_of(&router, Method::GET, path).await;
            assert_eq!(status, StatusCode::OK, "{path}");
            let kind = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok());
            assert_eq!(kind, Some(asset.content_type), "{path}");
            let extension = path.rsplit('.').next().unwrap_or("");
            let expected = match extension {
                "js" => "text/javascript",
                "css" => "text/css",
                _ => "text/html",
            };
            assert!(asset.content_type.starts_with(expected), "{path}: {}", asset.content_type);
            let policy = headers.get(header::CONTENT_SECURITY_POLICY).and_then(|v| v.to_str().ok()).unwrap_or("");
            assert!(policy.contains("default-src 'none'") && policy.contains("connect-src 'self'"), "{policy}");
            assert_eq!(headers.get(header::X_CONTENT_TYPE_OPTIONS).and_then(|v| v.to_str().ok()), Some("nosniff"));
        }
    }

    #[tokio::test]
    async fn the_probe_is_answered_404_only_where_writes_are_served() {
        let dir = tempfile::tempdir().expect("temp dir");
        let state = state(dir.path()).await;
        assert_eq!(class_of(&Method::POST, OPERATIONS_PROBE), None, "the probe fits no route");
        let guard = |operations| LocalGuard { hosts: vec!["127.0.0.1:8888".into()], operations };
        let cases = [
            (
                "serve --allow-operations",
                guard(true).wrap(router_for(state.clone(), Routes::All)),
                StatusCode::NOT_FOUND,
            ),
            ("serve", guard(false).wrap(router_for(state.clone(), Routes::All)), StatusCode::FORBIDDEN),
            ("read half", router_for(state.clone(), Routes::Reads), StatusCode::FORBIDDEN),
            ("every route", router_for(state.clone(), Routes::All), StatusCode::NOT_FOUND),
        ];
        for (what, router, expected) in cases {
            let (status, _) = answer_of(&router, Method::POST, OPERATIONS_PROBE).await;
            assert_eq!(status, expected, "{what}");
            let (page, _) = answer_of(&router, Method::GET, "/unified-console.html").await;
            assert_eq!(page, StatusCode::OK, "{what}: the page is served whatever the writes");
        }
    }
}
