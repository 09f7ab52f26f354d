//! How ZooKeeper requests, replies and the tree read in stories, notes and recorded
//! histories: requests `zkCli`-like, errors by their code names.

use super::spec::{ZkCommand, ZkError, ZkReply, ZkState, Znode};

fn version_text(v: Option<u32>) -> String {
    v.map_or_else(|| "-1".to_string(), |v| v.to_string())
}

/// The request as a person reads it (`zkCli`-like, with the flags in words).
pub fn command_text(cmd: &ZkCommand) -> String {
    use ZkCommand::*;
    match cmd {
        Connect { timeout } => format!("connect (session timeout {timeout})"),
        Ping { .. } => "ping".to_string(),
        Create {
            path,
            data,
            ephemeral,
            sequential,
            ..
        } => {
            let kind = match (ephemeral, sequential) {
                (true, true) => " (ephemeral, sequential)",
                (true, false) => " (ephemeral)",
                (false, true) => " (sequential)",
                (false, false) => "",
            };
            let data = if data.is_empty() {
                String::new()
            } else {
                format!(" '{data}'")
            };
            format!("create {path}{data}{kind}")
        }
        Delete { path, version, .. } => format!("delete {path} {}", version_text(*version)),
        Exists { path, watch, .. } => {
            format!("exists {path}{}", if *watch { " (watch)" } else { "" })
        }
        GetData { path, .. } => format!("getData {path}"),
        SetData {
            path,
            data,
            version,
            ..
        } => format!("setData {path} '{data}' {}", version_text(*version)),
        GetChildren { path, watch, .. } => {
            format!("getChildren {path}{}", if *watch { " (watch)" } else { "" })
        }
        Check { path, version } => format!("check({path}, {})", version_text(*version)),
        Multi { ops, .. } => format!(
            "multi({})",
            ops.iter().map(command_text).collect::<Vec<_>>().join(", ")
        ),
        Consume { .. } => "read watch events".to_string(),
        Other { name, path, .. } => match path {
            Some(p) => format!("{name} {p}"),
            None => name.clone(),
        },
    }
}

/// A request and its reply; a sequential create names the node it made, as
/// `create /lock/n-0000000001 (ephemeral, sequential) -> czxid 3`.
pub fn exchange_text(cmd: &ZkCommand, reply: Option<&ZkReply>) -> String {
    match (cmd, reply) {
        (
            ZkCommand::Create {
                path,
                sequential: true,
                ..
            },
            Some(ZkReply::Created { path: made, czxid }),
        ) => {
            let asked = command_text(cmd);
            let made_text = asked.replacen(path.as_str(), made, 1);
            format!("{made_text} -> czxid {czxid}")
        }
        _ => {
            let r = reply.map_or_else(|| "?".to_string(), reply_text);
            format!("{} -> {r}", command_text(cmd))
        }
    }
}

fn error_text(e: ZkError) -> &'static str {
    match e {
        ZkError::NoNode => "NONODE",
        ZkError::NodeExists => "NODEEXISTS",
        ZkError::BadVersion => "BADVERSION",
        ZkError::SessionExpired => "SESSIONEXPIRED",
        ZkError::Invalid => "invalid request",
    }
}

fn stat_text(n: &Znode) -> String {
    let owner = n
        .ephemeral_owner
        .map(|s| format!(", ephemeral of session {s}"))
        .unwrap_or_default();
    let data = if n.data.is_empty() {
        String::new()
    } else {
        format!("'{}' ", n.data)
    };
    format!("{data}(czxid {}, version {}{owner})", n.czxid, n.version)
}

/// The reply as a person reads it.
pub fn reply_text(reply: &ZkReply) -> String {
    match reply {
        ZkReply::Connected { session } => format!("session {session}"),
        ZkReply::Ok => "OK".to_string(),
        ZkReply::Created { path, czxid } => format!("{path} (czxid {czxid})"),
        ZkReply::Stat(None) => "none".to_string(),
        ZkReply::Stat(Some(n)) => stat_text(n),
        ZkReply::Children(c) => format!("[{}]", c.join(", ")),
        ZkReply::Multi(r) => format!(
            "OK [{}]",
            r.iter().map(reply_text).collect::<Vec<_>>().join("; ")
        ),
        ZkReply::MultiFailed { index, error } => {
            format!("FAILED at op {index}: {}", error_text(*error))
        }
        ZkReply::Notified(n) => format!(
            "[{}]",
            n.iter()
                .map(|n| format!("{} changed", n.path))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        ZkReply::Error(e) => error_text(*e).to_string(),
    }
}

/// The tree and sessions as story lines.
pub fn state_lines(s: &ZkState) -> Vec<String> {
    let nodes: Vec<String> = s
        .nodes
        .iter()
        .map(|(p, n)| format!("{p} {}", stat_text(n)))
        .collect();
    let sessions: Vec<String> = s
        .sessions
        .iter()
        .map(|(id, x)| format!("{id} (expires t={})", x.deadline.lo))
        .collect();
    vec![
        format!("zk: zxid {}, nodes [{}]", s.zxid, nodes.join(", ")),
        format!("zk: sessions [{}]", sessions.join(", ")),
    ]
}
