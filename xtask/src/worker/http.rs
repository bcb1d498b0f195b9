//! Minimal HTTP client for talking to the local worker.

use std::time::Duration;

use anyhow::{Context, Result};
use ureq::Agent;

/// `GET url` → (status, body). Non-2xx statuses are answers, not errors.
pub(super) fn get(url: &str) -> Result<(u16, String)> {
    read(agent().get(url).call(), "GET", url)
}

/// `POST url` with an empty body → (status, body).
pub(super) fn post(url: &str) -> Result<(u16, String)> {
    read(agent().post(url).send_empty(), "POST", url)
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
