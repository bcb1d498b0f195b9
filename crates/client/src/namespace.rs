//! A namespace's keys: read, write, delete, list.

use reqwest::header::HeaderName;
use reqwest::{Method, StatusCode};

use crate::answers::{Entry, Written};
use crate::client::{Call, Client};
use crate::error::Error;
use crate::listing::{ListQuery, Listed, MAX_PAGE, Page};
use crate::options::{DeleteOptions, PutOptions};
use crate::path;
use crate::reply::Reply;
use crate::write_id::WriteId;

/// The code of a read's 404 when the key is absent (a namespace that does
/// not exist is `namespace_not_found`, an error).
const KEY_NOT_FOUND: &str = "key_not_found";

/// One namespace of a deployment. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Namespace {
    client: Client,
    name: String,
}

impl Namespace {
    pub(crate) fn new(client: Client, name: &str) -> Namespace {
        Namespace { client, name: name.to_owned() }
    }

    /// The namespace's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The key's value, ETag and expiry; `None` when it is absent (never
    /// written, deleted or expired).
    pub async fn get(&self, key: &str) -> Result<Option<Entry>, Error> {
        let reply = self.send(Method::GET, path::key(&self.name, key), Vec::new(), None).await?;
        if reply.status == StatusCode::OK {
            return Entry::parse(reply).map(Some);
        }
        match Error::from_reply(&reply) {
            Error::NotFound { code, .. } if code == KEY_NOT_FOUND => Ok(None),
            error => Err(error),
        }
    }

    /// Writes `value` as `options` say; answered once committed. Sent again
    /// with the same write id while the store is unavailable (see
    /// [`crate::retry`]).
    pub async fn put(&self, key: &str, value: impl Into<Vec<u8>>, options: PutOptions) -> Result<Written, Error> {
        let write_id = options.resolve_write_id()?;
        let reply =
            self.send(Method::PUT, path::key(&self.name, key), options.headers(write_id), Some(value.into())).await?;
        Self::written(&reply, write_id)
    }

    /// Deletes the key (a committed tombstone; deleting an absent key
    /// succeeds unless a condition says otherwise).
    pub async fn delete(&self, key: &str, options: DeleteOptions) -> Result<Written, Error> {
        let write_id = options.resolve_write_id()?;
        let reply = self.send(Method::DELETE, path::key(&self.name, key), options.headers(write_id), None).await?;
        Self::written(&reply, write_id)
    }

    /// One page of keys.
    pub async fn list(&self, query: &ListQuery) -> Result<Page, Error> {
        let reply = self.send(Method::GET, path::list(&self.name, query), Vec::new(), None).await?;
        match reply.status {
            StatusCode::OK => Page::parse(&reply),
            _ => Err(Error::from_reply(&reply)),
        }
    }

    /// Every key with `prefix`, following `next` to the last page (pages of
    /// [`MAX_PAGE`]).
    pub async fn list_all(&self, prefix: &str) -> Result<Vec<Listed>, Error> {
        let mut pages = self.pages(prefix, Some(MAX_PAGE));
        let mut keys = Vec::new();
        while let Some(page) = pages.next_page().await? {
            keys.extend(page);
        }
        Ok(keys)
    }

    async fn send(
        &self,
        method: Method,
        path: String,
        headers: Vec<(HeaderName, String)>,
        body: Option<Vec<u8>>,
    ) -> Result<Reply, Error> {
        self.client.send(&Call { method, path, headers, body }).await
    }

    fn written(reply: &Reply, write_id: WriteId) -> Result<Written, Error> {
        match reply.status {
            StatusCode::OK => Written::parse(reply, write_id),
            _ => Err(Error::from_reply(reply)),
        }
    }
}

/// A namespace's handle, from the client.
impl Client {
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
}
