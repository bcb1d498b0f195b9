//! The connection to one deployment: base URL, token, retry policy, and
//! the one place requests are sent (and sent again, see [`crate::retry`]).

use std::fmt;
use std::time::{Duration, Instant};

use reqwest::header::{AUTHORIZATION, HeaderName, HeaderValue};
use reqwest::{Method, Url};

use crate::error::Error;
use crate::namespace::Namespace;
use crate::path;
use crate::reply::Reply;
use crate::retry::RetryPolicy;

/// A client of one Handoff deployment. Cheap to clone (the connection pool
/// is shared).
#[derive(Clone)]
pub struct Client {
    http: reqwest::Client,
    /// Without a trailing `/`; paths start with one.
    base: String,
    /// `Bearer <token>`, marked sensitive.
    authorization: HeaderValue,
    retry: RetryPolicy,
}

/// One request, kept whole so that every attempt sends the same bytes.
pub(crate) struct Call {
    pub(crate) method: Method,
    pub(crate) path: String,
    pub(crate) headers: Vec<(HeaderName, String)>,
    pub(crate) body: Option<Vec<u8>>,
}

impl Client {
    /// A client of the deployment at `base_url` (e.g.
    /// `http://127.0.0.1:8787`) speaking with `token`, with the default
    /// [`RetryPolicy`].
    pub fn new(base_url: &str, token: &str) -> Result<Client, Error> {
        let base = base_url.trim().trim_end_matches('/');
        Url::parse(base).map_err(|e| Error::Config(format!("base URL {base:?}: {e}")))?;
        let mut authorization = HeaderValue::from_str(&format!("Bearer {}", token.trim()))
            .map_err(|_| Error::Config("the token is not a valid header value".to_owned()))?;
        authorization.set_sensitive(true);
        let http = reqwest::Client::builder()
            .no_proxy()
            // A pooled connection the server closed while idle fails the
            // request that picks it up; such failures are retried, but
            // fewer happen when no connection idles long.
            .pool_idle_timeout(Duration::from_secs(1))
            .build()
            .map_err(|e| Error::Config(format!("HTTP client: {e}")))?;
        Ok(Client { http, base: base.to_owned(), authorization, retry: RetryPolicy::default() })
    }

    /// The same client with another retry policy.
    pub fn with_retry_policy(self, retry: RetryPolicy) -> Client {
        Client { retry, ..self }
    }

    /// A handle on namespace `name` (no request is made; see
    /// [`Client::create_namespace`]).
    pub fn namespace(&self, name: &str) -> Namespace {
        Namespace::new(self.clone(), name)
    }

    /// `PUT /v1/{ns}`: creates the namespace with the default settings
    /// (admin token), or finds it existing; its handle either way.
    pub async fn create_namespace(&self, name: &str) -> Result<Namespace, Error> {
        let call = Call { method: Method::PUT, path: path::namespace(name), headers: Vec::new(), body: None };
        let reply = self.send(&call).await?;
        if !reply.status.is_success() {
            return Err(Error::from_reply(&reply));
        }
        Ok(self.namespace(name))
    }

    /// Sends `call` until it is answered with anything but a 503, or the
    /// retry policy gives up; the last answer (a 503 among them).
    pub(crate) async fn send(&self, call: &Call) -> Result<Reply, Error> {
        let started = Instant::now();
        let mut retries = 0u32;
        let mut unknown = false;
        loop {
            let mut outcome = self.attempt(call).await;
            if let Ok(reply) = &mut outcome {
                reply.after_unknown = unknown;
            }
            unknown |= match &outcome {
                Ok(reply) => reply.is_retryable() && Error::from_reply(reply).may_have_taken_effect(),
                Err(Error::Transport(e)) => !e.is_connect() && !e.is_builder(),
                Err(_) => false,
            };
            let retry_after = match &outcome {
                Ok(reply) if reply.is_retryable() => reply.retry_after(),
                Ok(_) => return outcome,
                // A request that cannot be built fails the same way again.
                Err(Error::Transport(e)) if e.is_builder() => return outcome,
                Err(_) => None,
            };
            match self.retry.wait(retries, retry_after, started.elapsed()) {
                Some(wait) => tokio::time::sleep(wait).await,
                None => return outcome,
            }
            retries = retries.saturating_add(1);
        }
    }

    async fn attempt(&self, call: &Call) -> Result<Reply, Error> {
        let mut request = self
            .http
            .request(call.method.clone(), format!("{}{}", self.base, call.path))
            .timeout(self.retry.attempt_timeout)
            .header(AUTHORIZATION, self.authorization.clone());
        for (name, value) in &call.headers {
            request = request.header(name, value);
        }
        if let Some(body) = &call.body {
            request = request.body(body.clone());
        }
        let response = request.send().await?;
        let (status, headers) = (response.status(), response.headers().clone());
        let body = response.bytes().await?.to_vec();
        Ok(Reply { status, headers, body, after_unknown: false })
    }
}

impl fmt::Debug for Client {
    /// Everything but the token.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client").field("base", &self.base).field("retry", &self.retry).finish_non_exhaustive()
    }
}
