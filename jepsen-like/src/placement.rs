//! Where a run's servers live: each on a host of its own (a network namespace of a
//! [`Lab`], its own address, the family's well-known ports), as Jepsen's nodes are —
//! or all on 127.0.0.1 where namespaces cannot be made.
//!
//! Hosts are the default because a node is then a machine, not a port: a partition can
//! cut one server from another, and no two servers of a run (or of two runs side by
//! side) share a port space. Loopback stays for machines without root or without
//! `ip`/`nft`; the rows whose fault *is* a cut between servers (split brain, an
//! isolated leader) cannot be staged there and say so.

use std::fmt;
use std::str::FromStr;

use locklab_servers::net::{Lab, NetError};

use crate::RunError;

/// `--net`: where a run's servers live.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Net {
    /// Hosts of their own when this machine can make them, else loopback.
    #[default]
    Auto,
    /// Hosts of their own, or the run cannot be staged.
    Hosts,
    /// Every server on 127.0.0.1 (the rows that cut servers apart cannot run).
    Loopback,
}

impl Net {
    /// Every value, as the command line spells it.
    pub const ALL: [&'static str; 3] = ["auto", "hosts", "loopback"];
}

impl fmt::Display for Net {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Net::Auto => "auto",
            Net::Hosts => "hosts",
            Net::Loopback => "loopback",
        })
    }
}

impl FromStr for Net {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(Net::Auto),
            "hosts" => Ok(Net::Hosts),
            "loopback" => Ok(Net::Loopback),
            other => Err(format!(
                "--net {other:?}: expected one of {}",
                Net::ALL.join(", ")
            )),
        }
    }
}

/// The lab holding one host per name, or `None` for loopback, as `net` asks.
/// `needed_for`: why this run cannot do without hosts (a cut between servers), which
/// turns every way of not getting them into [`RunError::CannotStage`].
pub fn lab(names: &[&str], net: Net, needed_for: Option<&str>) -> Result<Option<Lab>, RunError> {
    match (net, needed_for) {
        (Net::Loopback, Some(why)) => Err(RunError::CannotStage(format!(
            "{why}, and --net loopback puts every server on 127.0.0.1"
        ))),
        (Net::Loopback, None) => Ok(None),
        (_, Some(why)) => Lab::new(names)
            .map(Some)
            .map_err(|e| RunError::CannotStage(format!("{why}: {e}"))),
        (Net::Hosts, None) => Lab::new(names)
            .map(Some)
            .map_err(|e| RunError::CannotStage(format!("--net hosts: {e}"))),
        (Net::Auto, None) => match Lab::new(names) {
            Ok(lab) => Ok(Some(lab)),
            // No root or no tools: the documented fall-back, not a fault of the run.
            Err(NetError::Unavailable(_)) => Ok(None),
            Err(e) => Err(RunError::Environment(format!("hosts for the servers: {e}"))),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spelling_parses_back_and_a_wrong_one_names_the_choices() {
        for s in Net::ALL {
            assert_eq!(s.parse::<Net>().map(|n| n.to_string()), Ok(s.to_string()));
        }
        let e = "lan".parse::<Net>().unwrap_err();
        assert!(
            e.contains("\"lan\"") && e.contains("auto, hosts, loopback"),
            "{e}"
        );
    }

    #[test]
    fn loopback_never_makes_a_lab_and_a_row_that_needs_one_says_why_it_cannot_run() {
        assert!(matches!(lab(&["a"], Net::Loopback, None), Ok(None)));
        match lab(&["a"], Net::Loopback, Some("a split brain needs hosts")) {
            Err(RunError::CannotStage(m)) => {
                assert!(
                    m.contains("a split brain needs hosts") && m.contains("--net loopback"),
                    "{m}"
                )
            }
            other => panic!("{other:?}"),
        }
    }
}
