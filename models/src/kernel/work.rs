//! A holder's work on the protected resource, as every family's story tells it and its
//! diagram draws it: a read, then a write of what it read plus one, presenting its
//! token when the resource is fenced ([`crate::resource`]).

use std::fmt::Display;

use crate::diagram::{resource_access, Exchange};
use crate::resource::Resource;

use super::{ClientPhase, Stage};

/// A client's step inside its critical section.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WorkStep {
    /// The first step: it read the resource and went on to write.
    Read,
    /// Any other: it wrote (or had its write refused, or finished without one).
    Write,
}

impl WorkStep {
    /// The step from phase `before` to `after` (`None`: the step did not run), if
    /// `before` is inside the critical section.
    pub fn of<P: ClientPhase>(before: P, after: Option<P>) -> Option<WorkStep> {
        let Stage::Inside(k) = before.stage() else {
            return None;
        };
        let went_on = after.is_some_and(|p| p.stage() == Stage::Inside(1));
        Some(if k == 0 && went_on {
            WorkStep::Read
        } else {
            WorkStep::Write
        })
    }

    /// Client `c`'s step in a story's words, presenting `token` to a `fenced`
    /// resource; `unfenced`: what a write reads as in the family otherwise.
    pub fn story(self, c: u8, token: impl Display, fenced: bool, unfenced: &str) -> String {
        match self {
            WorkStep::Read => format!("c{c} reads the resource with token {token}"),
            WorkStep::Write if fenced => format!("c{c} writes the resource with token {token}"),
            WorkStep::Write => format!("c{c} {unfenced}"),
        }
    }

    /// Client `c`'s step as an arrow to the resource, if it was inside the critical
    /// section: its phase and the resource `before` the step and `after` it (`None`:
    /// the step did not run), presenting `token` to a `fenced` resource.
    pub fn arrow<P: ClientPhase>(
        c: u8,
        before: (P, &Resource),
        after: Option<(P, &Resource)>,
        token: u64,
        fenced: bool,
    ) -> Option<Exchange> {
        let step = WorkStep::of(before.0, after.map(|a| a.0))?;
        let accepted = after.is_some_and(|a| a.1.accepted > before.1.accepted);
        let read = step == WorkStep::Read;
        Some(resource_access(
            c,
            read,
            token,
            fenced,
            before.1.value,
            accepted,
        ))
    }
}
