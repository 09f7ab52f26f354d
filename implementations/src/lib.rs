//! Real lock clients behind one trait, one module per backend protocol.
//!
//! Empty until the backend issues land; it depends on `locklab-models` (the specs its
//! clients must follow) and `locklab-traces` (the history it records into), never on the
//! harness or the CLI.
