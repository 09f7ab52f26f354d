//! An inventory stock level: the resource of the overselling write-ups. It supports the
//! naive read-then-write, the one-statement conditional decrement, and optimistic
//! version CAS, where the "version" may be a real counter or a coarse timestamp chosen
//! by the client (two writes in one tick then share a version: ABA).

use super::{outcomes, Outcomes, Spec, Window};

/// The inventory spec: a stock level that starts at `initial`, version 0.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct InventorySpec {
    /// The stock before any operation.
    pub initial: i64,
}

/// The stock and its version.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct InventoryState {
    /// Units left.
    pub stock: i64,
    /// Bumped by every write (or set by the client, for a timestamp version).
    pub version: u64,
}

/// What a client asks of the stock.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum InventoryInput {
    /// Read stock and version.
    Read,
    /// Overwrite the stock (the write half of read-then-write).
    Write(i64),
    /// `UPDATE … SET n = n - k WHERE n >= k`: take `k` units if there are that many.
    Decrement(i64),
    /// `UPDATE … SET n = ?, version = ? WHERE version = ?`.
    Cas {
        /// The version read earlier.
        expect_version: u64,
        /// The stock to write.
        stock: i64,
        /// The version to write: `None` bumps the counter; `Some(ts)` writes a
        /// client-chosen timestamp.
        new_version: Option<u64>,
    },
}

/// What the stock answers.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum InventoryOutput {
    /// Stock and version read.
    Read {
        /// Units left.
        stock: i64,
        /// Version read (`None` in a history that records only the stock).
        version: Option<u64>,
    },
    /// The write, decrement or CAS took effect.
    Done,
    /// The decrement found too few units, or the CAS a different version.
    Refused,
}

impl Spec for InventorySpec {
    type State = InventoryState;
    type Input = InventoryInput;
    type Output = InventoryOutput;

    fn init(&self) -> InventoryState {
        InventoryState {
            stock: self.initial,
            version: 0,
        }
    }

    #[inline]
    fn step(
        &self,
        s: &InventoryState,
        input: &InventoryInput,
        _at: Window,
    ) -> Outcomes<InventoryOutput, InventoryState> {
        outcomes![match input {
            InventoryInput::Read => (
                InventoryOutput::Read {
                    stock: s.stock,
                    version: Some(s.version),
                },
                s.clone(),
            ),
            InventoryInput::Write(n) => (
                InventoryOutput::Done,
                InventoryState {
                    stock: *n,
                    version: s.version + 1,
                },
            ),
            InventoryInput::Decrement(k) if s.stock >= *k => (
                InventoryOutput::Done,
                InventoryState {
                    stock: s.stock - k,
                    version: s.version + 1,
                },
            ),
            InventoryInput::Decrement(_) => (InventoryOutput::Refused, s.clone()),
            InventoryInput::Cas {
                expect_version,
                stock,
                new_version,
            } if *expect_version == s.version => (
                InventoryOutput::Done,
                InventoryState {
                    stock: *stock,
                    version: new_version.unwrap_or(s.version + 1),
                },
            ),
            InventoryInput::Cas { .. } => (InventoryOutput::Refused, s.clone()),
        }]
    }

    /// Reads and refusals change nothing.
    fn read_only(&self, input: &InventoryInput, output: &InventoryOutput) -> bool {
        matches!(input, InventoryInput::Read) || *output == InventoryOutput::Refused
    }

    /// A read that recorded only the stock matches on the stock alone.
    fn observe(
        &self,
        _before: &InventoryState,
        _input: &InventoryInput,
        _at: Window,
        predicted: (InventoryOutput, InventoryState),
        observed: &InventoryOutput,
    ) -> Option<InventoryState> {
        let matches = match (&predicted.0, observed) {
            (
                InventoryOutput::Read { stock: p, .. },
                InventoryOutput::Read {
                    stock: o,
                    version: None,
                },
            ) => p == o,
            (p, o) => p == o,
        };
        matches.then_some(predicted.1)
    }

    fn describe(input: &InventoryInput, output: Option<&InventoryOutput>) -> String {
        let call = match input {
            InventoryInput::Read => "read()".to_string(),
            InventoryInput::Write(n) => format!("write({n})"),
            InventoryInput::Decrement(k) => format!("decrement({k})"),
            InventoryInput::Cas {
                expect_version,
                stock,
                new_version,
            } => match new_version {
                Some(v) => format!("cas(version {expect_version} -> {v}, stock {stock})"),
                None => format!("cas(version {expect_version}, stock {stock})"),
            },
        };
        let ret = match output {
            None => "?".to_string(),
            Some(InventoryOutput::Read {
                stock,
                version: Some(v),
            }) => format!("{stock} (v{v})"),
            Some(InventoryOutput::Read {
                stock,
                version: None,
            }) => stock.to_string(),
            Some(InventoryOutput::Done) => "ok".to_string(),
            Some(InventoryOutput::Refused) => "refused".to_string(),
        };
        format!("{call} -> {ret}")
    }
}
