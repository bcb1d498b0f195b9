//! The connection to one deployment: base URL, token, retry policy, and
//! the one place requests are sent (and sent again, see [`crate::retry`]).

use std::fmt;
use std::time::{Duration, Instant};

use reqwest::header::{AUTHORIZATION, HeaderName, HeaderValue};
use reqwest::{Method, Url};

use crate::error::Error;
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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    use crate::error::Error;
    use crate::etag::ETag;
    use crate::options::{Condition, PutOptions};
    use crate::{Client, RetryPolicy};

    /// What the scripted server does with one request.
    enum Answer {
        /// A status line, extra headers, and a JSON error envelope's code.
        Reply(&'static str, &'static str, &'static str),
        /// Reads the request and closes the connection without answering.
        Hang,
    }

    /// A server taking one request per connection and answering each with
    /// the next of `answers`; its base URL.
    async fn scripted(answers: Vec<Answer>) -> String {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move {
            for answer in answers {
                let (mut socket, _) = listener.accept().await.unwrap();
                let mut request = Vec::new();
                let mut buf = [0u8; 4096];
                // The headers, then as many body bytes as Content-Length says.
                loop {
                    let n = socket.read(&mut buf).await.unwrap();
                    request.extend_from_slice(&buf[..n]);
                    let text = String::from_utf8_lossy(&request).to_lowercase();
                    let Some(end) = text.find("\r\n\r\n") else { if n == 0 { break } else { continue } };
                    let length = text
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length:"))
                        .and_then(|v| v.trim().parse::<usize>().ok())
                        .unwrap_or(0);
                    if n == 0 || request.len() >= end + 4 + length {
                        break;
                    }
                }
                if let Answer::Reply(status, headers, code) = answer {
                    let body = format!(r#"{{"error":{{"code":"{code}","message":"scripted"}}}}"#);
                    let reply = format!(
                        "{status}\r\n{headers}content-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    socket.write_all(reply.as_bytes()).await.unwrap();
                }
            }
        });
        base
    }

    /// A conditional PUT against the scripted server.
    async fn conditional_put(answers: Vec<Answer>) -> Error {
        let base = scripted(answers).await;
        let retry = RetryPolicy {
            max_wait: Duration::from_millis(10),
            backoff: Duration::from_millis(10),
            ..RetryPolicy::default()
        };
        let ns = Client::new(&base, "t").unwrap().with_retry_policy(retry).namespace("n");
        let tag = ETag::parse("\"1.1.ab\"").unwrap();
        match ns.put("k", "v", PutOptions::new().condition(Condition::IfMatch(tag))).await {
            Ok(_) => panic!("the scripted server never accepts"),
            Err(e) => e,
        }
    }

    const NOT_COMMITTED: Answer =
        Answer::Reply("HTTP/1.1 503 Service Unavailable", "retry-after: 0\r\n", "not_committed");
    const RECOVERING: Answer = Answer::Reply("HTTP/1.1 503 Service Unavailable", "retry-after: 0\r\n", "recovering");
    const FAILED: Answer =
        Answer::Reply("HTTP/1.1 412 Precondition Failed", "etag: \"2.2.cd\"\r\n", "precondition_failed");

    #[tokio::test]
    async fn a_412_after_a_not_committed_attempt_is_an_unknown_outcome() {
        let e = conditional_put(vec![NOT_COMMITTED, FAILED]).await;
        assert!(matches!(e, Error::OutcomeUnknown { current: Some(_) }), "{e:?}");
    }

    #[tokio::test]
    async fn a_412_after_an_unanswered_attempt_is_an_unknown_outcome() {
        let e = conditional_put(vec![Answer::Hang, FAILED]).await;
        assert!(matches!(e, Error::OutcomeUnknown { .. }), "{e:?}");
    }

    #[tokio::test]
    async fn a_412_after_attempts_that_never_took_effect_is_a_failed_condition() {
        let e = conditional_put(vec![RECOVERING, FAILED]).await;
        assert!(matches!(e, Error::PreconditionFailed { current: Some(_) }), "{e:?}");
        let e = conditional_put(vec![FAILED]).await;
        assert!(matches!(e, Error::PreconditionFailed { .. }), "{e:?}");
    }
}
