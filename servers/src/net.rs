//! Hosts of their own on one machine: each node of a run in a network namespace of its
//! own, with its own address on a bridge the lab owns, so that a partition can cut one
//! server from another — a Sentinel from its master, an etcd leader from its quorum —
//! which one loopback address cannot.
//!
//! - **Shape.** A bridge `lb<pid>-<n>` in the harness's namespace, holding `10.X.Y.1/24`
//!   (the *gateway*: the harness's clients reach every node from it); one namespace
//!   `locklab-<pid>-<n>-<node>` per node, joined to the bridge by a veth pair, holding
//!   `10.X.Y.(2+i)/24` and a loopback. No namespace has a default route, so nothing in
//!   it reaches anything beyond the bridge; the subnet is one no address or route of
//!   the machine uses, held by a lock file while the lab lives.
//! - **Partitions** are nftables rules inside the nodes' namespaces (table
//!   `inet locklab`): packets from one set of addresses to another dropped, one way or
//!   both, or dropped at random (a lossy link). A namespace's tables die with it.
//! - **Never left behind.** Drop kills every process inside the namespaces and deletes
//!   them and the bridge (also on panic); servers started in them die with the harness
//!   (`PR_SET_PDEATHSIG`); after a `kill -9` of the harness, [`reap`] at the next start
//!   removes every namespace and link whose owning process is gone.
//!
//! Needs `ip` (iproute2), `nft` (nftables) and `CAP_NET_ADMIN` (root): [`Lab::new`]
//! says which is missing, and the caller decides what runs without it.

use std::fs::File;
use std::net::Ipv4Addr;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};

/// Prefix of every namespace a lab makes (`locklab-<pid>-<n>-<node>`).
const NS_PREFIX: &str = "locklab-";

/// Labs made by this process so far (the `<n>` of the names).
static LABS: AtomicU32 = AtomicU32::new(0);

/// Why a lab could not be made or changed.
#[derive(Debug, thiserror::Error)]
pub enum NetError {
    /// Namespaces cannot be made here: not root, no `CAP_NET_ADMIN`, or a tool missing.
    #[error("network namespaces are not available here: {0}")]
    Unavailable(String),
    /// A command failed.
    #[error("`{command}` failed: {stderr}")]
    Command {
        /// The command line.
        command: String,
        /// What it said.
        stderr: String,
    },
    /// No node of that name in the lab.
    #[error("no node {0:?} in this lab")]
    NoNode(String),
    /// No free subnet (every 10.X.Y.0/24 tried is in use).
    #[error("no free 10.X.Y.0/24 subnet for a lab")]
    NoSubnet,
}

/// One node: a namespace and its address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Host {
    /// The node's name in the run (`redis0`, `sentinel1`, …).
    pub name: String,
    /// Its namespace.
    pub netns: String,
    /// Its address on the lab's bridge.
    pub addr: Ipv4Addr,
}

/// Who a partition separates: node names, and [`GATEWAY`] for the harness's side.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Cut {
    /// One side.
    pub from: Vec<String>,
    /// The other side.
    pub to: Vec<String>,
    /// Only packets from `from` to `to` are dropped (replies and requests the other way
    /// still pass): a one-way partition.
    pub one_way: bool,
}

/// The name of the harness's side (its clients' connections) in a [`Cut`].
pub const GATEWAY: &str = "harness";

/// Network namespaces on a bridge, torn down on drop.
#[derive(Debug)]
pub struct Lab {
    bridge: String,
    subnet: [u8; 3],
    hosts: Vec<Host>,
    /// Every namespace made so far (all of `hosts` once made).
    made: Vec<String>,
    /// The harness-side ends of the veth pairs made so far.
    veths: Vec<String>,
    /// Holds the subnet against other locklab processes while the lab lives.
    _lock: Option<File>,
}

/// Runs `program args…`; its stderr in the error when it fails.
fn run(program: &str, args: &[&str]) -> Result<String, NetError> {
    let out = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| NetError::Unavailable(format!("{program}: {e}")))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(NetError::Command {
            command: format!("{program} {}", args.join(" ")),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        })
    }
}

/// `ip netns exec NS nft -f -` with `script` on stdin.
fn nft(netns: &str, script: &str) -> Result<(), NetError> {
    use std::io::Write;
    let mut child = Command::new("ip")
        .args(["netns", "exec", netns, "nft", "-f", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| NetError::Unavailable(format!("ip: {e}")))?;
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(script.as_bytes());
    }
    let out = child
        .wait_with_output()
        .map_err(|e| NetError::Unavailable(format!("nft: {e}")))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(NetError::Command {
            command: format!("ip netns exec {netns} nft -f - <<< {script:?}"),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        })
    }
}

/// The addresses of the machine's own interfaces and routes, as text: a subnet that
/// appears in it is taken.
fn used_networks() -> String {
    let addrs = run("ip", &["-4", "-o", "addr", "show"]).unwrap_or_default();
    let routes = run("ip", &["-4", "route", "show", "table", "all"]).unwrap_or_default();
    addrs + &routes
}

impl Lab {
    /// Whether labs can be made here; the reason when not.
    pub fn available() -> Result<(), NetError> {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return Err(NetError::Unavailable(
                "network namespaces need root (CAP_NET_ADMIN)".into(),
            ));
        }
        for (tool, package) in [("ip", "iproute2"), ("nft", "nftables")] {
            if run(tool, &["-V"]).is_err() && run(tool, &["--version"]).is_err() {
                return Err(NetError::Unavailable(format!(
                    "`{tool}` is missing (Debian package {package}; ci/setup.sh installs it)"
                )));
            }
        }
        Ok(())
    }

    /// A lab with one namespace per name, each reachable from the gateway and from
    /// each other, nothing beyond.
    pub fn new(names: &[&str]) -> Result<Lab, NetError> {
        Lab::available()?;
        reap();
        let pid = std::process::id();
        let n = LABS.fetch_add(1, Ordering::Relaxed);
        let tag = format!("{pid:x}-{n:x}");
        let (subnet, lock) = pick_subnet(pid, n)?;
        let mut lab = Lab {
            bridge: format!("lb{tag}"),
            subnet,
            hosts: Vec::new(),
            made: Vec::new(),
            veths: Vec::new(),
            _lock: lock,
        };
        let gateway = format!("{}/24", lab.gateway());
        run("ip", &["link", "add", &lab.bridge, "type", "bridge"])?;
        run("ip", &["addr", "add", &gateway, "dev", &lab.bridge])?;
        run("ip", &["link", "set", &lab.bridge, "up"])?;
        for (i, name) in names.iter().enumerate() {
            let host = Host {
                name: (*name).to_string(),
                netns: format!("{NS_PREFIX}{pid}-{n}-{name}"),
                addr: lab.addr_of(i),
            };
            run("ip", &["netns", "add", &host.netns])?;
            lab.made.push(host.netns.clone());
            let (outside, inside) = (format!("lv{tag}-{i}"), format!("lp{tag}-{i}"));
            lab.veths.push(outside.clone());
            run(
                "ip",
                &[
                    "link",
                    "add",
                    &outside,
                    "type",
                    "veth",
                    "peer",
                    "name",
                    &inside,
                    "netns",
                    &host.netns,
                ],
            )?;
            run(
                "ip",
                &["link", "set", &outside, "master", &lab.bridge, "up"],
            )?;
            let ns = |args: &[&str]| -> Result<String, NetError> {
                let mut all = vec!["netns", "exec", host.netns.as_str(), "ip"];
                all.extend_from_slice(args);
                run("ip", &all)
            };
            ns(&["link", "set", "lo", "up"])?;
            ns(&["link", "set", &inside, "name", "eth0"])?;
            ns(&["addr", "add", &format!("{}/24", host.addr), "dev", "eth0"])?;
            ns(&["link", "set", "eth0", "up"])?;
            lab.hosts.push(host);
        }
        Ok(lab)
    }

    /// The harness's own address on the bridge: where its clients' connections come from.
    pub fn gateway(&self) -> Ipv4Addr {
        let [a, b, c] = self.subnet;
        Ipv4Addr::new(a, b, c, 1)
    }

    fn addr_of(&self, i: usize) -> Ipv4Addr {
        let [a, b, c] = self.subnet;
        Ipv4Addr::new(a, b, c, u8::try_from(i + 2).unwrap_or(u8::MAX))
    }

    /// Every node.
    pub fn hosts(&self) -> &[Host] {
        &self.hosts
    }

    /// The node called `name`.
    pub fn host(&self, name: &str) -> Result<&Host, NetError> {
        self.hosts
            .iter()
            .find(|h| h.name == name)
            .ok_or_else(|| NetError::NoNode(name.to_string()))
    }

    /// `program` to be run inside `host`'s namespace (`ip netns exec`, which execs it:
    /// the spawned child is the program itself).
    pub fn command(&self, host: &Host, program: &str) -> Command {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &host.netns, program]);
        cmd
    }

    /// The addresses of `names` (the gateway's for [`GATEWAY`]).
    fn addrs(&self, names: &[String]) -> Result<Vec<Ipv4Addr>, NetError> {
        names
            .iter()
            .map(|n| match n.as_str() {
                GATEWAY => Ok(self.gateway()),
                _ => self.host(n).map(|h| h.addr),
            })
            .collect()
    }

    /// Drops packets from every address of `from` to every node of `to` (rules in the
    /// receiving nodes' namespaces; the gateway, which has none, is cut at the
    /// sending nodes).
    fn drop_between(&self, from: &[String], to: &[String]) -> Result<(), NetError> {
        let sources = set(&self.addrs(from)?);
        let targets = set(&self.addrs(to)?);
        for name in to.iter().filter(|n| *n != GATEWAY) {
            let h = self.host(name)?;
            nft(
                &h.netns,
                &format!("{TABLE}\nadd rule inet locklab input ip saddr {sources} drop\n"),
            )?;
        }
        if to.iter().any(|n| n == GATEWAY) {
            for name in from.iter().filter(|n| *n != GATEWAY) {
                let h = self.host(name)?;
                nft(
                    &h.netns,
                    &format!("{TABLE}\nadd rule inet locklab output ip daddr {targets} drop\n"),
                )?;
            }
        }
        Ok(())
    }

    /// Makes the partition `cut` (in addition to any already in force).
    pub fn partition(&self, cut: &Cut) -> Result<(), NetError> {
        self.drop_between(&cut.from, &cut.to)?;
        if !cut.one_way {
            self.drop_between(&cut.to, &cut.from)?;
        }
        Ok(())
    }

    /// Cuts node `name` off from every other node (both ways); the gateway's side, the
    /// harness's clients, still reaches it: a leader (or master) isolated from its
    /// quorum (or its Sentinels).
    pub fn isolate(&self, name: &str) -> Result<(), NetError> {
        self.host(name)?;
        let others = self
            .hosts
            .iter()
            .filter(|h| h.name != name)
            .map(|h| h.name.clone())
            .collect();
        self.partition(&Cut {
            from: vec![name.to_string()],
            to: others,
            one_way: false,
        })
    }

    /// Drops `percent` of the packets `host` receives, at random: a lossy link.
    pub fn lossy(&self, host: &str, percent: u8) -> Result<(), NetError> {
        let h = self.host(host)?;
        // numgen draws 0–99: "< 100" is out of its range, so all is a plain drop.
        let rule = match percent {
            0 => return Ok(()),
            100.. => "drop".to_string(),
            p => format!("numgen random mod 100 < {p} drop"),
        };
        nft(
            &h.netns,
            &format!("{TABLE}\nadd rule inet locklab input {rule}\n"),
        )
    }

    /// Ends every partition and lossy link: each node's rules go.
    pub fn heal(&self) -> Result<(), NetError> {
        for h in &self.hosts {
            // Declaring the table first makes the delete succeed when there is none.
            nft(&h.netns, &format!("{TABLE}\ndelete table inet locklab\n"))?;
        }
        Ok(())
    }
}

/// The table and chains every rule goes in, declared idempotently.
const TABLE: &str = "table inet locklab {
  chain input { type filter hook input priority 0; policy accept; }
  chain output { type filter hook output priority 0; policy accept; }
}";

/// An nftables anonymous set of addresses.
fn set(addrs: &[Ipv4Addr]) -> String {
    let list: Vec<String> = addrs.iter().map(Ipv4Addr::to_string).collect();
    format!("{{ {} }}", list.join(", "))
}

/// A `10.X.Y` no interface or route of the machine uses, locked against other locklab
/// processes; tried from a place that depends on the process, so processes side by side
/// rarely contend.
fn pick_subnet(pid: u32, n: u32) -> Result<([u8; 3], Option<File>), NetError> {
    let used = used_networks();
    let start = pid.wrapping_mul(7_919) ^ n.wrapping_mul(104_729);
    for i in 0..4_096u32 {
        let k = start.wrapping_add(i.wrapping_mul(2_654_435_761)) % (64 * 256);
        // 10.192.0.0 – 10.255.255.0: the top of the private range, least often used.
        let (x, y) = (192 + (k / 256) as u8, (k % 256) as u8);
        let prefix = format!("10.{x}.{y}.");
        if used.contains(&prefix) {
            continue;
        }
        let lock = match crate::port::lock_dir() {
            Some(d) => match crate::port::try_lock_name(&d, &format!("net-{x}-{y}")) {
                Some(f) => Some(f),
                None => continue,
            },
            None => None,
        };
        return Ok(([10, x, y], lock));
    }
    Err(NetError::NoSubnet)
}

/// Kills every process in `netns`, then deletes it.
fn remove_netns(netns: &str) {
    if let Ok(pids) = run("ip", &["netns", "pids", netns]) {
        for pid in pids
            .split_whitespace()
            .filter_map(|p| p.parse::<libc::pid_t>().ok())
        {
            // SAFETY: kill(2) of a process inside a namespace this program made.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
            }
        }
    }
    // A process just killed may hold the namespace for a moment.
    for _ in 0..50 {
        if run("ip", &["netns", "del", netns]).is_ok() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        // Deleting one end of a veth pair deletes both at once; a deleted namespace
        // takes its end with it only later, when the kernel gets to it (seen: both
        // veths still listed right after the namespaces went).
        for veth in self.veths.drain(..) {
            let _ = run("ip", &["link", "del", &veth]);
        }
        for netns in self.made.drain(..) {
            remove_netns(&netns);
        }
        let _ = run("ip", &["link", "del", &self.bridge]);
    }
}

/// Whether process `pid` is alive.
fn alive(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

/// The owning process of a lab's namespace or link name, if the name is a lab's.
fn owner(name: &str) -> Option<u32> {
    if let Some(rest) = name.strip_prefix(NS_PREFIX) {
        return rest.split('-').next()?.parse().ok();
    }
    let rest = name
        .strip_prefix("lb")
        .or_else(|| name.strip_prefix("lv"))
        .or_else(|| name.strip_prefix("lp"))?;
    let (pid, _) = rest.split_once('-')?;
    u32::from_str_radix(pid, 16).ok()
}

/// Removes every namespace and link a lab of a process that is gone left behind (a
/// `kill -9` skips Drop). Returns what it removed; nothing when labs cannot be made here.
pub fn reap() -> Vec<String> {
    remove_where(|pid| !alive(pid))
}

/// Removes every lab of this process, for an interrupt handler that exits without
/// running Drop (the processes inside are killed with their namespaces).
pub fn remove_own() -> Vec<String> {
    let me = std::process::id();
    remove_where(|pid| pid == me)
}

/// Names of lab namespaces or links, each with its owning process.
type Owned = Vec<(String, u32)>;

/// The machine's namespaces and links that belong to labs.
fn lab_names() -> (Owned, Owned) {
    let owned = |name: &str| owner(name).map(|pid| (name.to_string(), pid));
    let namespaces = run("ip", &["netns", "list"]).unwrap_or_default();
    let namespaces = namespaces
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter_map(owned)
        .collect();
    let links = run("ip", &["-o", "link", "show"]).unwrap_or_default();
    // "12: lb1a2b-0: <BROADCAST,…" (a veth shows as "lv…-0@if11").
    let links = links
        .lines()
        .filter_map(|l| l.split(": ").nth(1).and_then(|n| n.split('@').next()))
        .filter_map(owned)
        .collect();
    (namespaces, links)
}

/// What the machine still has of the labs of process `pid`: the names of their
/// namespaces and links (empty once they are gone).
pub fn left_of(pid: u32) -> Vec<String> {
    let (namespaces, links) = lab_names();
    namespaces
        .into_iter()
        .chain(links)
        .filter(|(_, owner)| *owner == pid)
        .map(|(name, _)| name)
        .collect()
}

/// Removes the namespaces and links of labs whose owning process `doomed` picks.
fn remove_where(doomed: impl Fn(u32) -> bool) -> Vec<String> {
    let mut removed = Vec::new();
    let (namespaces, links) = lab_names();
    // Links first, as Drop does: a veth whose namespace goes first lingers until the
    // kernel gets to it.
    for (name, _) in links.into_iter().filter(|(_, pid)| doomed(*pid)) {
        if run("ip", &["link", "del", &name]).is_ok() {
            removed.push(name);
        }
    }
    for (name, _) in namespaces.into_iter().filter(|(_, pid)| doomed(*pid)) {
        remove_netns(&name);
        removed.push(name);
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_say_whose_they_are() {
        assert_eq!(owner("locklab-4242-0-redis0"), Some(4242));
        assert_eq!(owner("lb1a2b-0"), Some(0x1a2b));
        assert_eq!(owner("lv1a2b-3-12"), Some(0x1a2b));
        assert_eq!(owner("eth0"), None);
        assert_eq!(owner("lo"), None);
        assert_eq!(owner("locklab-x-0-a"), None);
    }

    #[test]
    fn address_sets_are_nft_sets() {
        let a = [Ipv4Addr::new(10, 1, 2, 3), Ipv4Addr::new(10, 1, 2, 4)];
        assert_eq!(set(&a), "{ 10.1.2.3, 10.1.2.4 }");
    }
}
