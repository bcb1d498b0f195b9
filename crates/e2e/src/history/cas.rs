//! The sequential object a key is: a compare-and-set register. Reads,
//! writes (PUT, DELETE), and conditional writes that write only if the key
//! holds what they expect (`If-Match` an ETag: the value of the write that
//! ETag names; `If-None-Match: *`: nothing) and otherwise report what it
//! holds (412 with the current ETag, or none). stateright ships a plain
//! register; this is that register with one more operation, the
//! reference semantics both the search (`tester`) and the tests check
//! against.

use std::fmt::Debug;

use stateright::semantics::SequentialSpec;

/// A compare-and-set register holding a `T`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CasRegister<T>(pub T);

/// An operation on a [`CasRegister`].
#[derive(Clone, Debug, PartialEq)]
pub enum CasOp<T> {
    Read,
    Write(T),
    /// Writes `write` if the register holds `expect`.
    Cas {
        expect: T,
        write: T,
    },
}

/// What a [`CasOp`] returns.
#[derive(Clone, Debug, PartialEq)]
pub enum CasRet<T> {
    ReadOk(T),
    WriteOk,
    /// The register held what was expected, and now holds what was written.
    CasOk,
    /// The register held this instead, and is unchanged.
    CasFailed(T),
}

impl<T: Clone + Debug + PartialEq> SequentialSpec for CasRegister<T> {
    type Op = CasOp<T>;
    type Ret = CasRet<T>;

    fn invoke(&mut self, op: &CasOp<T>) -> CasRet<T> {
        match op {
            CasOp::Read => CasRet::ReadOk(self.0.clone()),
            CasOp::Write(v) => {
                self.0 = v.clone();
                CasRet::WriteOk
            }
            CasOp::Cas { expect, write } if self.0 == *expect => {
                self.0 = write.clone();
                CasRet::CasOk
            }
            CasOp::Cas { .. } => CasRet::CasFailed(self.0.clone()),
        }
    }

    fn is_valid_step(&mut self, op: &CasOp<T>, ret: &CasRet<T>) -> bool {
        match (op, ret) {
            (CasOp::Read, CasRet::ReadOk(v)) => self.0 == *v,
            (CasOp::Write(v), CasRet::WriteOk) => {
                self.0 = v.clone();
                true
            }
            (CasOp::Cas { expect, write }, CasRet::CasOk) if self.0 == *expect => {
                self.0 = write.clone();
                true
            }
            (CasOp::Cas { expect, .. }, CasRet::CasFailed(held)) => self.0 == *held && held != expect,
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_only_on_the_expected_value_and_reports_the_other() {
        let mut r = CasRegister('a');
        assert_eq!(r.invoke(&CasOp::Cas { expect: 'b', write: 'c' }), CasRet::CasFailed('a'));
        assert_eq!(r.0, 'a');
        assert_eq!(r.invoke(&CasOp::Cas { expect: 'a', write: 'c' }), CasRet::CasOk);
        assert_eq!(r.invoke(&CasOp::Read), CasRet::ReadOk('c'));
        assert_eq!(r.invoke(&CasOp::Write('d')), CasRet::WriteOk);
        assert_eq!(r.0, 'd');
    }

    #[test]
    fn a_step_is_valid_only_with_the_answer_the_register_gives() {
        let cas = |expect, write| CasOp::Cas { expect, write };
        assert!(CasRegister('a').is_valid_history(vec![
            (cas('a', 'b'), CasRet::CasOk),
            (cas('a', 'c'), CasRet::CasFailed('b')),
            (CasOp::Read, CasRet::ReadOk('b')),
        ]));
        // The same expectation cannot succeed twice in a row.
        assert!(
            !CasRegister('a').is_valid_history(vec![(cas('a', 'b'), CasRet::CasOk), (cas('a', 'c'), CasRet::CasOk)])
        );
        // A failure must report what the register holds, ...
        assert!(!CasRegister('a').is_valid_history(vec![(cas('b', 'c'), CasRet::CasFailed('z'))]));
        // ... and cannot be the value it expected.
        assert!(!CasRegister('a').is_valid_history(vec![(cas('a', 'c'), CasRet::CasFailed('a'))]));
    }
}
