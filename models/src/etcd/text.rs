//! How etcd requests, replies and the keyspace read in stories, notes and recorded
//! histories: requests as `etcdctl` spells them.

use super::spec::{Compare, EtcdCommand, EtcdReply, EtcdState, Kv};

fn kv_text((key, kv): &(String, Kv)) -> String {
    let lease = kv
        .lease
        .map(|l| format!(", lease {l:x}"))
        .unwrap_or_default();
    format!(
        "{key}='{}' (create {}, mod {}{lease})",
        kv.value, kv.create_rev, kv.mod_rev
    )
}

/// The request as `etcdctl` would spell it.
pub fn command_text(cmd: &EtcdCommand) -> String {
    use EtcdCommand::*;
    match cmd {
        Grant { ttl } => format!("lease grant {ttl}"),
        KeepAlive { lease } => format!("lease keep-alive {lease:x}"),
        Revoke { lease } => format!("lease revoke {lease:x}"),
        Get { key } => format!("get {key}"),
        FirstCreate { prefix } => format!("get {prefix} --prefix --sort-by=CREATE --limit=1"),
        LastCreateBefore {
            prefix,
            max_create_rev,
        } => format!(
            "get {prefix} --prefix --max-create-rev={max_create_rev} --sort-by=CREATE --order=DESCEND --limit=1"
        ),
        Put { key, value, lease } => {
            let lease = lease.map(|l| format!(" --lease={l:x}")).unwrap_or_default();
            format!("put {key} '{value}'{lease}")
        }
        Delete { key } => format!("del {key}"),
        Lock { name, lease } => format!("lock {name} --lease={lease:x}"),
        Unlock { key } => format!("unlock {key}"),
        Txn {
            compare,
            success,
            failure,
        } => {
            let cmp: Vec<String> = compare
                .iter()
                .map(|c| match c {
                    Compare::CreateRevision { key, rev } => {
                        format!("create_revision({key}) = {rev}")
                    }
                })
                .collect();
            let ops = |o: &[EtcdCommand]| {
                o.iter().map(command_text).collect::<Vec<_>>().join("; ")
            };
            let mut t = format!("txn if {} then {}", cmp.join(" && "), ops(success));
            if !failure.is_empty() {
                t.push_str(&format!(" else {}", ops(failure)));
            }
            t
        }
    }
}

/// The reply as a person would read it.
pub fn reply_text(reply: &EtcdReply) -> String {
    match reply {
        EtcdReply::Granted { lease, ttl } => format!("lease {lease:x} granted with TTL {ttl}"),
        EtcdReply::Alive { ttl } => format!("TTL {ttl}"),
        EtcdReply::LeaseNotFound => "requested lease not found".to_string(),
        EtcdReply::Revoked => "revoked".to_string(),
        EtcdReply::Kvs(kvs) => {
            format!(
                "[{}]",
                kvs.iter().map(kv_text).collect::<Vec<_>>().join(", ")
            )
        }
        EtcdReply::Put { revision } => format!("OK, revision {revision}"),
        EtcdReply::Deleted { deleted } => deleted.to_string(),
        EtcdReply::Txn {
            succeeded,
            responses,
        } => format!(
            "{} [{}]",
            if *succeeded { "SUCCEEDED" } else { "FAILED" },
            responses
                .iter()
                .map(reply_text)
                .collect::<Vec<_>>()
                .join("; ")
        ),
        EtcdReply::Locked { key } => format!("locked {key}"),
        EtcdReply::Unlocked => "unlocked".to_string(),
        EtcdReply::Invalid => "invalid request".to_string(),
    }
}

/// The keyspace and leases as story lines.
pub fn state_lines(s: &EtcdState) -> Vec<String> {
    let keys: Vec<String> = s
        .keys
        .iter()
        .map(|(k, kv)| kv_text(&(k.clone(), kv.clone())))
        .collect();
    let leases: Vec<String> = s
        .leases
        .iter()
        .map(|(id, l)| format!("{id:x} (expires t={})", l.deadline.lo))
        .collect();
    vec![
        format!("etcd: revision {}, keys [{}]", s.revision, keys.join(", ")),
        format!("etcd: leases [{}]", leases.join(", ")),
    ]
}
