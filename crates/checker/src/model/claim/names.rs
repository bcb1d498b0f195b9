//! The cfg's constants, as the mirror's elements and as protocol ids.

use protocol::claim::{ClaimId, Fence as ProtocolFence, OperationId, RequestKey, WorkerId};

use crate::compact::Elem;
use crate::mirror::remora::{Claim, Constants, Fence, Op, Request, Worker};

/// The constants of RemoraClaimActivation (the mirror's, and its names).
/// The protocol ids are the model values' names, except fences: the i-th
/// fence of the cfg is `Fence(i + 1)`.
pub struct Names {
    pub k: &'static Constants,
}

/// The mirror's constants (`claims`, `fences`, ...) are the model's.
impl std::ops::Deref for Names {
    type Target = Constants;
    fn deref(&self) -> &Constants {
        self.k
    }
}

/// An element no set has: where an id maps back to none of the cfg's
/// elements. `TypeOK` admits no such element, so a bad mapping fails it.
const NONE_OF_THEM: u8 = u8::MAX;

impl Names {
    pub fn claim_id(&self, c: Claim) -> ClaimId {
        ClaimId(self.k.name(c).to_string())
    }

    pub fn worker_id(&self, w: Worker) -> WorkerId {
        WorkerId(self.k.name(w).to_string())
    }

    pub fn operation_id(&self, op: Op) -> OperationId {
        OperationId(self.k.name(op).to_string())
    }

    pub fn fence(&self, f: Fence) -> ProtocolFence {
        ProtocolFence(f.index() as u64 + 1)
    }

    pub fn request_key(&self, c: Claim, f: Fence, w: Worker) -> RequestKey {
        RequestKey { claim: self.claim_id(c), fence: self.fence(f), worker: self.worker_id(w) }
    }

    // The way back.

    pub fn claim(&self, id: &ClaimId) -> Claim {
        self.k.names.find(&id.0).unwrap_or(Claim(NONE_OF_THEM))
    }

    pub fn worker(&self, id: &WorkerId) -> Worker {
        self.k.names.find(&id.0).unwrap_or(Worker(NONE_OF_THEM))
    }

    pub fn fence_value(&self, fence: ProtocolFence) -> Fence {
        let index = usize::try_from(fence.0).ok().and_then(|n| n.checked_sub(1));
        index.filter(|&i| i < self.k.fences.len()).map_or(Fence(NONE_OF_THEM), Fence::at)
    }

    pub fn request(&self, key: &RequestKey) -> Request {
        Request::Key(self.claim(&key.claim), self.fence_value(key.fence), self.worker(&key.worker))
    }
}
