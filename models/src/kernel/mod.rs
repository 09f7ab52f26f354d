//! The client/lease kernel every lock family shares: clients that a checker may pause,
//! crash or cut off, the fault budget those faults draw on, and the premise about time
//! that the faults break. A family's model keeps its protocol (phases, requests, what
//! a server does); what a fault does to a client, when it may strike and how it reads
//! is written here once.
//!
//! - [`Budget`]: faults left, one count per [`Fault`](crate::registry::Fault).
//! - [`ClientFault`]: pause, resume, crash, partition, heal — each transition with its
//!   guard and budget, on any family's client [`Process`]; where a fault may strike
//!   follows the client's [`ClientPhase`], what dying means is the family's argument.
//! - [`FaultWords`]: how those steps read in a story and on the diagram, the few words
//!   that differ by family given once per family.
//! - [`Stage`]: where a client is in its program, as a family's [`ClientPhase`] places
//!   it: who is inside, holds the lock, waits for it, still runs.
//! - [`time`]: when a deadline is due, and when time may pass.
//! - [`repeat`]: clients that lock again and again, and time counted from now, for
//!   starvation.
//! - [`WorkStep`]: a holder's step on the protected resource, told and drawn.
//! - [`LockChecks`]: what the registry's properties read off a family's states, made
//!   into the invariants a row checks by [`invariants`].
//! - [`Effect`]: a step's next state and what it sent, for stories.

mod budget;
mod checks;
mod client_fault;
mod effect;
mod process;
pub mod repeat;
pub mod split;
mod stage;
pub mod time;
mod words;
mod work;

pub use budget::Budget;
pub use checks::{inside, invariants, LockChecks};
pub(crate) use client_fault::client_faults;
pub use client_fault::ClientFault;
pub use effect::Effect;
pub use process::Process;
pub use stage::{ClientPhase, Stage};
pub use words::{belief, FaultWords};
pub use work::WorkStep;
