//! The cfg's constants, as spec model values and as protocol ids.

use protocol::claim::{ClaimId, Fence, OperationId, RequestKey, WorkerId};

use crate::cfg::{CfgError, TlcConfig};
use crate::mirror::remora::{LockOwner, ModelValue, Request};

/// The constants of RemoraClaimActivation. The protocol ids are the model
/// values' names, except fences: the i-th fence of the cfg is `Fence(i + 1)`.
pub struct Names {
    pub claims: Vec<ModelValue>,
    pub fences: Vec<ModelValue>,
    pub workers: Vec<ModelValue>,
    pub operations: Vec<ModelValue>,
    pub no_worker: ModelValue,
    pub no_owner: LockOwner,
    pub no_request: Request,
    pub no_response: ModelValue,
    pub accepted: ModelValue,
    pub rejected: ModelValue,
    /// The names of `claims` and `workers`, to map protocol ids back.
    claim_names: Vec<String>,
    worker_names: Vec<String>,
}

pub const CONSTANTS: &[&str] = &[
    "Claims",
    "Fences",
    "Workers",
    "Operations",
    "NoWorker",
    "NoOwner",
    "NoRequest",
    "NoResponse",
    "Accepted",
    "Rejected",
];

impl Names {
    pub fn from_cfg(cfg: &TlcConfig) -> Result<Names, CfgError> {
        let set = |name| Ok::<_, CfgError>(cfg.model_value_set(name)?.iter().map(|v| ModelValue::new(v)).collect());
        let value = |name| cfg.model_value(name).map(|v| ModelValue::new(&v));
        Ok(Names {
            claims: set("Claims")?,
            fences: set("Fences")?,
            workers: set("Workers")?,
            operations: set("Operations")?,
            no_worker: value("NoWorker")?,
            no_owner: LockOwner::NoOwner(value("NoOwner")?),
            no_request: Request::NoRequest(value("NoRequest")?),
            no_response: value("NoResponse")?,
            accepted: value("Accepted")?,
            rejected: value("Rejected")?,
            claim_names: cfg.model_value_set("Claims")?,
            worker_names: cfg.model_value_set("Workers")?,
        })
    }

    pub fn claim_id(&self, c: ModelValue) -> ClaimId {
        ClaimId(c.to_string())
    }

    pub fn worker_id(&self, w: ModelValue) -> WorkerId {
        WorkerId(w.to_string())
    }

    pub fn operation_id(&self, op: ModelValue) -> OperationId {
        OperationId(op.to_string())
    }

    pub fn fence(&self, f: ModelValue) -> Fence {
        Fence(self.fences.iter().position(|x| *x == f).map_or(0, |i| i as u64 + 1))
    }

    pub fn request_key(&self, c: ModelValue, f: ModelValue, w: ModelValue) -> RequestKey {
        RequestKey { claim: self.claim_id(c), fence: self.fence(f), worker: self.worker_id(w) }
    }

    // The way back. An id the cfg does not name maps to `NoWorker`, which
    // no TypeOK range admits in its place: a bad mapping fails TypeOK.

    pub fn claim(&self, id: &ClaimId) -> ModelValue {
        self.named(&self.claims, &self.claim_names, &id.0)
    }

    pub fn worker(&self, id: &WorkerId) -> ModelValue {
        self.named(&self.workers, &self.worker_names, &id.0)
    }

    pub fn fence_value(&self, fence: Fence) -> ModelValue {
        let index = usize::try_from(fence.0).ok().and_then(|n| n.checked_sub(1));
        index.and_then(|i| self.fences.get(i)).copied().unwrap_or(self.no_worker)
    }

    pub fn request(&self, key: &RequestKey) -> Request {
        Request::Key(self.claim(&key.claim), self.fence_value(key.fence), self.worker(&key.worker))
    }

    fn named(&self, values: &[ModelValue], names: &[String], name: &str) -> ModelValue {
        let i = names.iter().position(|n| n == name);
        i.and_then(|i| values.get(i)).copied().unwrap_or(self.no_worker)
    }
}
