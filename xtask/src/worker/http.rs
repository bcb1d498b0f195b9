//! Minimal HTTP client for talking to the local worker.

use std::time::Duration;

use anyhow::{Context, Result};
use ureq::Agent;

/// `GET url` → (status, body), with `token` as the bearer if given.
/// Non-2xx statuses are answers, not errors.
pub(crate) fn get(url: &str, token: Option<&str>) -> Result<(u16, String)> {
    let mut req = agent().get(url);
    if let Some(token) = token {
        req = req.header("authorization", &format!("Bearer {token}"));
    }
    read(req.call(), "GET", url)
}

/// `POST url` with an empty body → (status, body).
pub(crate) fn post(url: &str, token: Option<&str>) -> Result<(u16, String)> {
    send("POST", url, token, None)
}

/// `method url` with `body` (JSON) → (status, body).
pub(crate) fn send(method: &str, url: &str, token: Option<&str>, body: Option<&str>) -> Result<(u16, String)> {
    let mut req = match method {
        "PUT" => agent().put(url),
        "DELETE" => return read(with_token(agent().delete(url), token).call(), method, url),
        _ => agent().post(url),
    };
    if let Some(token) = token {
        req = req.header("authorization", &format!("Bearer {token}"));
    }
    let sent = match body {
        Some(body) => req.header("content-type", "application/json").send(body.as_bytes()),
        None => req.send_empty(),
    };
    read(sent, method, url)
}

fn with_token<B>(req: ureq::RequestBuilder<B>, token: Option<&str>) -> ureq::RequestBuilder<B> {
    match token {
        Some(token) => req.header("authorization", &format!("Bearer {token}")),
        None => req,
    }
}

fn agent() -> Agent {
    Agent::config_builder()
        // The worker listens on 127.0.0.1: never route through a proxy from
        // the environment.
        .proxy(None)
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(15)))
        .build()
        .new_agent()
}

fn read(resp: Result<ureq::http::Response<ureq::Body>, ureq::Error>, method: &str, url: &str) -> Result<(u16, String)> {
    let mut resp = resp.with_context(|| format!("{method} {url}"))?;
    let status = resp.status().as_u16();
    let body = resp.body_mut().read_to_string().with_context(|| format!("reading the body of {method} {url}"))?;
    Ok((status, body))
}
