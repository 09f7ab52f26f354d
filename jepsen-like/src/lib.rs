//! The Jepsen-like harness: servers as child processes, nemesis, workload, history
//! recorder. Empty until `locklab run` lands; it sits above `locklab-implementations`.
