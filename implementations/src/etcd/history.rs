//! Recorded requests as history events: each one a `command` event (see
//! `locklab_traces::format::CommandValue`), so a run's history keeps the etcd requests
//! next to the lock operations, as it keeps Redis commands.

use std::time::Instant;

use locklab_models::etcd::spec::{command_text, reply_text, Compare, EtcdCommand};
use locklab_traces::format::CommandValue;
use locklab_traces::{Event, OpKind, Phase, Process};

use super::session::{Request, RequestLog};

/// The key a request is about: its key, its prefix, or a `Txn`'s first compared key
/// (the lock key, for every `Txn` the locks send).
pub fn request_key(cmd: &EtcdCommand) -> Option<&str> {
    match cmd {
        EtcdCommand::Get { key } | EtcdCommand::Put { key, .. } | EtcdCommand::Delete { key } => {
            Some(key)
        }
        EtcdCommand::FirstCreate { prefix } | EtcdCommand::LastCreateBefore { prefix, .. } => {
            Some(prefix)
        }
        EtcdCommand::Txn { compare, .. } => compare.first().map(|c| match c {
            Compare::CreateRevision { key, .. } => key.as_str(),
        }),
        EtcdCommand::Grant { .. } | EtcdCommand::KeepAlive { .. } | EtcdCommand::Revoke { .. } => {
            None
        }
    }
}

/// The history event of one request made by `process`, its times already on the run
/// clock. `ok` when an answer came, `info` (outcome unknown) when none did. The client
/// reaches the cluster as one endpoint set, so every request is node 0's.
pub fn request_event(process: Process, request: &Request) -> Event {
    let phase = if request.reply.is_some() {
        Phase::Ok
    } else {
        Phase::Info
    };
    let mut event = Event::new(process, OpKind::Command, phase, request.sent_ns);
    event.key = request_key(&request.command).map(str::to_string);
    let value = CommandValue {
        node: 0,
        command: serde_json::to_value(&request.command).unwrap_or_default(),
        reply: request
            .reply
            .as_ref()
            .and_then(|r| serde_json::to_value(r).ok()),
        return_time: request.done_ns,
        session: None,
    };
    event.value = serde_json::to_value(value).ok();
    let reply = request
        .reply
        .as_ref()
        .map_or_else(|| "no reply".to_string(), reply_text);
    event.note = Some(format!("{} -> {reply}", command_text(&request.command)));
    event
}

/// A log that writes every request of `process` through `write` as a `command` event,
/// on the run clock that started at `base`.
pub fn event_log(
    process: Process,
    base: Instant,
    write: impl Fn(Event) + Send + Sync + 'static,
) -> RequestLog {
    RequestLog::streaming(base, move |r| write(request_event(process, r)))
}

#[cfg(test)]
mod tests {
    use locklab_models::etcd::spec::EtcdReply;

    use super::*;

    #[test]
    fn a_request_becomes_a_command_event_that_reads_back() {
        let r = Request {
            seq: 0,
            command: EtcdCommand::Delete {
                key: "lock/a".into(),
            },
            reply: Some(EtcdReply::Deleted { deleted: 1 }),
            sent_ns: 10,
            done_ns: 20,
        };
        let e = request_event(Process::Client(3), &r);
        assert_eq!((e.op, e.phase, e.time), (OpKind::Command, Phase::Ok, 10));
        assert_eq!(e.key.as_deref(), Some("lock/a"));
        assert_eq!(e.note.as_deref(), Some("del lock/a -> 1"));
        let v: CommandValue =
            serde_json::from_value(e.value.unwrap_or_default()).expect("a command value");
        assert_eq!(v.return_time, 20);
        let back: EtcdCommand = serde_json::from_value(v.command).expect("a command");
        assert_eq!(back, r.command);
        let reply: EtcdReply =
            serde_json::from_value(v.reply.unwrap_or_default()).expect("a reply");
        assert_eq!(reply, EtcdReply::Deleted { deleted: 1 });
        let lost = Request { reply: None, ..r };
        assert_eq!(request_event(Process::Client(3), &lost).phase, Phase::Info);
    }
}
