//! The state of `tla/HandoffAcks.tla` and `tla/HandoffZombie.tla`: the
//! HandoffV2 mirror's [`State`] (its twelve variables) plus the message
//! channels and the zombie coordinators, sets as sets.

use std::fmt::{self, Display};

use crate::mirror::handoff::{Func, Key, Msgs, PendingW, Replica, State, Val, WriteSet};
use crate::spec::{TlaState, fmt_variables, tla};

/// A push ack `[src, key, ep, ver, wid]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Ack {
    pub src: Replica,
    pub key: Key,
    pub ep: u8,
    pub ver: u8,
    pub wid: u8,
}

impl Ack {
    /// `AckedBy(pw)`'s match.
    pub fn acks(&self, pw: &PendingW) -> bool {
        (self.key, self.ep, self.ver, self.wid) == (pw.key, pw.ep, pw.ver, pw.wid)
    }
}

/// A snapshot reply `[src, dst, mem, know]`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Snap {
    pub src: Replica,
    pub dst: Replica,
    pub mem: Func<Val>,
    pub know: u8,
}

/// A "cannot seed you" reply `[src, dst]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Decline {
    pub src: Replica,
    pub dst: Replica,
}

/// An announce `[ep, round, cinc]` (cinc: the sender's incarnation).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Ann {
    pub ep: u8,
    pub round: u8,
    pub cinc: u8,
}

/// An announce ack `[src, ep, round, pinc]` (pinc: the acking peer's
/// incarnation).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AnnAck {
    pub src: Replica,
    pub ep: u8,
    pub round: u8,
    pub pinc: u8,
}

/// A gossip message `[src, dst, mem]`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GossipMsg {
    pub src: Replica,
    pub dst: Replica,
    pub mem: Func<Val>,
}

/// A superseded coordinator instance `[epoch, verCtr, pending]`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Zombie {
    pub epoch: u8,
    pub ver_ctr: u8,
    pub pending: WriteSet<PendingW>,
}

/// One state of the extension modules. `zombie_vars` is not a variable: it
/// says whether the module has `zombies` and `supersedes` (HandoffZombie)
/// so that states print exactly their module's variables; it is the same
/// in every state of a model.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct ExtState {
    pub base: State,
    pub acks: Msgs<Ack>,
    pub snaps: Msgs<Snap>,
    pub declines: Msgs<Decline>,
    pub anns: Msgs<Ann>,
    pub ann_acks: Msgs<AnnAck>,
    pub gossip: Msgs<GossipMsg>,
    pub inc: Func<u8>,
    pub ann_round: u8,
    pub cur_ack: Func<u8>,
    pub prev_ack: Func<u8>,
    pub zombies: Msgs<Zombie>,
    pub supersedes: u8,
    pub zombie_vars: bool,
}

impl ExtState {
    /// The same state with the step marker cleared (for comparisons).
    pub fn unmarked(&self) -> ExtState {
        let mut s = self.clone();
        s.base.served_regression = false;
        s
    }
}

impl Display for Ack {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Ack { src, key, ep, ver, wid } = self;
        write!(f, "[src |-> {src}, key |-> {key}, ep |-> {ep}, ver |-> {ver}, wid |-> {wid}]")
    }
}
impl Display for Snap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Snap { src, dst, mem, know } = self;
        write!(f, "[src |-> {src}, dst |-> {dst}, mem |-> {mem}, know |-> {know}]")
    }
}
impl Display for Decline {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[src |-> {}, dst |-> {}]", self.src, self.dst)
    }
}
impl Display for Ann {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[ep |-> {}, round |-> {}, cinc |-> {}]", self.ep, self.round, self.cinc)
    }
}
impl Display for AnnAck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[src |-> {}, ep |-> {}, round |-> {}, pinc |-> {}]", self.src, self.ep, self.round, self.pinc)
    }
}
impl Display for GossipMsg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[src |-> {}, dst |-> {}, mem |-> {}]", self.src, self.dst, self.mem)
    }
}
impl Display for Zombie {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[epoch |-> {}, verCtr |-> {}, pending |-> {}]", self.epoch, self.ver_ctr, tla::set(&self.pending))
    }
}

impl TlaState for ExtState {
    fn variables(&self) -> Vec<(&'static str, String)> {
        let mut vars = self.base.variables();
        vars.extend([
            ("acks", tla::set(&self.acks)),
            ("snaps", tla::set(&self.snaps)),
            ("declines", tla::set(&self.declines)),
            ("anns", tla::set(&self.anns)),
            ("annAcks", tla::set(&self.ann_acks)),
            ("gossip", tla::set(&self.gossip)),
            ("inc", self.inc.to_string()),
            ("annRound", self.ann_round.to_string()),
            ("curAck", self.cur_ack.to_string()),
            ("prevAck", self.prev_ack.to_string()),
        ]);
        if self.zombie_vars {
            vars.extend([("zombies", tla::set(&self.zombies)), ("supersedes", self.supersedes.to_string())]);
        }
        vars
    }
}

impl fmt::Debug for ExtState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt_variables(self, f)
    }
}
