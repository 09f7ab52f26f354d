//! `etcd` (Debian's 3.4) as one member or a cluster of three on 127.0.0.1 — or each
//! member on a host of its own in a [`Lab`], so that a partition can cut a member off
//! from the others — each member with its own client and peer ports and its own data
//! dir, with the tuned timeouts of BACKENDS.md (heartbeat 50 ms, election 300 ms). Readiness and the leader are read
//! from the member's HTTP endpoints (`/health`, the gRPC gateway's
//! `/v3/maintenance/status`), never through the client under test.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::net::Lab;
use crate::port::{self, PortLease};
use crate::process::{ServerProcess, READY_TIMEOUT};
use crate::{Server, ServerError};

/// The program.
pub const BINARY: &str = "etcd";

/// Its client port on a lab host.
pub const PORT: u16 = 2379;

/// Its peer port on a lab host.
pub const PEER_PORT: u16 = 2380;

/// The family's data dirs are named `locklab-etcd-…`.
pub const FAMILY: &str = "etcd";

/// One etcd member.
#[derive(Debug)]
pub struct EtcdMember {
    process: ServerProcess,
    name: String,
    peer_port: PortLease,
    /// `name=http://127.0.0.1:peer,…` for every member of its cluster.
    initial_cluster: String,
}

/// A one-shot HTTP/1.0 request to a member's client address; the body of the answer.
fn http(ip: Ipv4Addr, port: u16, method: &str, path: &str, body: &str) -> Option<String> {
    let addr = SocketAddr::from((ip, port));
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_millis(200)).ok()?;
    s.set_read_timeout(Some(Duration::from_millis(1000))).ok()?;
    let req = format!(
        "{method} {path} HTTP/1.0\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    out.split_once("\r\n\r\n").map(|(_, b)| b.to_string())
}

/// The string value of `"field":"…"` in a JSON text (etcd writes its uint64 ids as
/// strings).
fn json_str<'a>(json: &'a str, field: &str) -> Option<&'a str> {
    let at = json.find(&format!("\"{field}\":\""))? + field.len() + 4;
    json[at..].split('"').next()
}

impl EtcdMember {
    fn reserve(name: String, lab: Option<&Lab>) -> Result<Self, ServerError> {
        let host = lab
            .map(|l| l.host(&name).cloned())
            .transpose()
            .map_err(|e| ServerError::Io(std::io::Error::other(e.to_string())))?;
        Ok(EtcdMember {
            peer_port: port::for_host(host.is_some(), PEER_PORT)?,
            process: ServerProcess::reserve_on(BINARY, FAMILY, host, PORT)?,
            name,
            initial_cluster: String::new(),
        })
    }

    fn peer_url(&self) -> String {
        format!("http://{}:{}", self.process.ip(), self.peer_port.port())
    }

    /// `http://IP:PORT` (`127.0.0.1`, or its lab host's address), what clients connect
    /// to.
    pub fn url(&self) -> String {
        format!("http://{}:{}", self.process.ip(), self.port())
    }

    /// The member's name (`e1`, `e2`, …).
    pub fn name(&self) -> &str {
        &self.name
    }

    fn spawn(&mut self) -> Result<(), ServerError> {
        let client = self.url();
        let peer = self.peer_url();
        let mut cmd = Command::new(BINARY);
        cmd.arg("--name")
            .arg(&self.name)
            .arg("--data-dir")
            .arg(self.dir().join("data"))
            .arg("--listen-client-urls")
            .arg(&client)
            .arg("--advertise-client-urls")
            .arg(&client)
            .arg("--listen-peer-urls")
            .arg(&peer)
            .arg("--initial-advertise-peer-urls")
            .arg(&peer)
            .arg("--initial-cluster")
            .arg(&self.initial_cluster)
            .arg("--initial-cluster-state")
            .arg("new")
            .arg("--initial-cluster-token")
            .arg(format!("locklab-{}", std::process::id()))
            .args(["--heartbeat-interval=50", "--election-timeout=300"]);
        self.process.spawn(cmd)
    }

    /// Whether the member answers `/health` with a leader behind it.
    pub fn healthy(&self) -> bool {
        http(self.process.ip(), self.port(), "GET", "/health", "")
            .is_some_and(|b| b.contains("\"health\":\"true\""))
    }

    /// `(its member id, the leader's member id)` as the member reports them.
    pub fn status(&self) -> Option<(String, String)> {
        let b = http(
            self.process.ip(),
            self.port(),
            "POST",
            "/v3/maintenance/status",
            "{}",
        )?;
        let me = json_str(&b, "member_id")?.to_string();
        let leader = json_str(&b, "leader")?.to_string();
        Some((me, leader))
    }

    fn wait_healthy(&mut self) -> Result<(), ServerError> {
        let (ip, port) = (self.process.ip(), self.port());
        self.process.wait_ready(READY_TIMEOUT, || {
            http(ip, port, "GET", "/health", "").is_some_and(|b| b.contains("\"health\":\"true\""))
        })
    }
}

impl Server for EtcdMember {
    process_field!();

    /// Spawns the member and waits until it is healthy: right away for a single node;
    /// for a cluster's member, once a quorum (itself and one more) has a leader.
    fn launch(&mut self) -> Result<(), ServerError> {
        self.spawn()?;
        self.wait_healthy()
    }

    fn state(&self) -> Option<PathBuf> {
        Some(self.dir().join("data"))
    }
}

/// A cluster of `n` members on 127.0.0.1 (one for the single-node shape). Every
/// member is killed when the cluster is dropped.
#[derive(Debug)]
pub struct EtcdCluster {
    members: Vec<EtcdMember>,
}

impl EtcdCluster {
    /// One member.
    pub fn single() -> Result<Self, ServerError> {
        Self::start(1)
    }

    /// Three members.
    pub fn three() -> Result<Self, ServerError> {
        Self::start(3)
    }

    /// `n` members, all healthy with one leader.
    pub fn start(n: usize) -> Result<Self, ServerError> {
        Self::start_on(n, None)
    }

    /// `n` members, each on the host of `lab` named after it (`e1`, `e2`, …) when
    /// given, all healthy with one leader.
    pub fn start_on(n: usize, lab: Option<&Lab>) -> Result<Self, ServerError> {
        let mut members = (1..=n)
            .map(|i| EtcdMember::reserve(format!("e{i}"), lab))
            .collect::<Result<Vec<_>, _>>()?;
        let initial = members
            .iter()
            .map(|m| format!("{}={}", m.name, m.peer_url()))
            .collect::<Vec<_>>()
            .join(",");
        // Spawn every member before waiting for any: none is healthy without a quorum.
        for m in &mut members {
            m.initial_cluster = initial.clone();
            m.spawn()?;
        }
        for m in &mut members {
            m.wait_healthy()?;
        }
        Ok(EtcdCluster { members })
    }

    /// Every member, `e1` at index 0: the indices `member_mut` and `leader` use.
    pub fn members(&self) -> &[EtcdMember] {
        &self.members
    }

    /// A member, to kill, pause or restart.
    pub fn member_mut(&mut self, i: usize) -> &mut EtcdMember {
        &mut self.members[i]
    }

    /// Every member's client URL (`http://127.0.0.1:PORT`).
    pub fn endpoints(&self) -> Vec<String> {
        self.members.iter().map(|m| m.url()).collect()
    }

    /// The index of the member every running member names as leader, waiting up to
    /// `timeout` for them to agree on one.
    pub fn leader(&mut self, timeout: Duration) -> Option<usize> {
        let start = Instant::now();
        loop {
            let mut ids = Vec::new();
            let mut leaders = Vec::new();
            for m in &mut self.members {
                if !m.is_running() {
                    ids.push(None);
                    continue;
                }
                let s = m.status();
                ids.push(s.as_ref().map(|s| s.0.clone()));
                leaders.push(s.map(|s| s.1));
            }
            let first = leaders.first().cloned().flatten();
            let agreed = first
                .as_ref()
                .filter(|l| leaders.iter().all(|x| x.as_ref() == Some(*l)) && *l != "0");
            if let Some(l) = agreed {
                if let Some(i) = ids.iter().position(|id| id.as_deref() == Some(l.as_str())) {
                    return Some(i);
                }
            }
            if start.elapsed() > timeout {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// `kill -9` of the leader; its index. The rest elect a new one.
    pub fn kill_leader(&mut self, timeout: Duration) -> Option<usize> {
        let i = self.leader(timeout)?;
        self.members[i].kill();
        Some(i)
    }
}
