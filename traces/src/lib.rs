//! Histories and the checkers that hold them against the specifications.
//!
//! A history is JSON Lines ([`format`](mod@format)): a header, then one event per line, written and
//! flushed one at a time ([`writer`]) so a crashed run still leaves a usable file. The
//! [`reader`] turns a file into events with errors that name file and line; [`import`]
//! turns Jepsen and Porcupine histories into the same events, and [`export`] writes
//! them as Jepsen EDN. [`ops`] pairs invocations with completions, and [`check`] runs
//! mutual exclusion, lock and resource linearizability (porcupine-rs over the
//! `locklab-models` specs) and fencing.
//! [`html`] renders the porcupine-rs visualization with every text escaped;
//! [`timeline`] tells a violation's window as text; [`plot`] draws measurements as SVG
//! line charts.
#![warn(missing_docs)]

pub mod backend;
pub mod check;
pub mod diagram;
pub mod error;
pub mod escape;
pub mod export;
pub mod format;
pub mod html;
pub mod import;
pub mod ops;
pub mod plot;
pub mod reader;
pub mod timeline;
pub mod writer;

pub use error::HistoryError;
pub use format::{Event, Header, History, OpKind, Phase, Process};
