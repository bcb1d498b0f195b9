//! What a procedure asks of the two stores and what it is told back.

use serde::{Deserialize, Serialize};

use super::durable::{DurableReply, DurableRequest};
use super::lease::{LeaseReply, LeaseRequest};

/// A request from a procedure, addressed to one of the two stores.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "store", rename_all = "snake_case")]
pub enum Request {
    Durable(DurableRequest),
    Lease(LeaseRequest),
}

/// The store's reply, handed back to the procedure that asked.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "store", rename_all = "snake_case")]
pub enum Reply {
    Durable(DurableReply),
    Lease(LeaseReply),
}
