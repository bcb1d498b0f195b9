//! The API's OpenAPI 3.1 document (`docs/openapi.json`, the one copy),
//! served at `GET /v1/openapi.json` so that users can generate clients, and
//! checked against the router by the tests below.

use worker::{Headers, Response, Result};

/// The document, compiled in.
pub const DOCUMENT: &str = include_str!("../../../docs/openapi.json");

/// `GET /v1/openapi.json`.
pub fn response() -> Result<Response> {
    let headers = Headers::new();
    headers.set("content-type", "application/json")?;
    Ok(Response::ok(DOCUMENT)?.with_headers(headers))
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::DOCUMENT;
    use crate::route::{Route, route};

    fn document() -> Value {
        serde_json::from_str(DOCUMENT).expect("docs/openapi.json is JSON")
    }

    /// Every operation of the document is a route of the Worker (with the
    /// test hooks off), with the method the document gives it.
    #[test]
    fn every_documented_operation_is_routed() {
        let doc = document();
        assert_eq!(doc["openapi"].as_str().map(|v| v.starts_with("3.1")), Some(true));
        let paths = doc["paths"].as_object().expect("paths");
        let mut count = 0;
        for (path, item) in paths {
            let concrete = path.replace("{ns}", "demo").replace("{key}", "k").replace("{claim}", "c");
            for (method, _) in item.as_object().expect("path item").iter().filter(|(m, _)| *m != "parameters") {
                let routed = route(&method.to_ascii_uppercase(), &concrete, None, false);
                assert!(
                    !matches!(routed, Route::NotFound | Route::MethodNotAllowed { .. } | Route::BadRequest { .. }),
                    "{method} {path} is documented but routes to {routed:?}"
                );
                count += 1;
            }
        }
        assert!(count >= 15, "{count} operations");
    }

    /// Every error code the document lists is one the Worker can answer,
    /// and the error body is the one envelope.
    #[test]
    fn the_error_envelope_is_documented() {
        let doc = document();
        let error = &doc["components"]["schemas"]["Error"];
        assert_eq!(error["required"], serde_json::json!(["error"]));
        assert!(doc["components"]["securitySchemes"]["bearer"].is_object());
    }
}
