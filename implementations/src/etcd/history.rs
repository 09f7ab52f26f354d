//! Recorded requests as history events: each one a `command` event (see
//! `locklab_traces::format::CommandValue`) made by the shared recorder
//! ([`exchange_event`](crate::recorder::exchange_event)), so a run's history keeps the etcd
//! requests next to the lock operations, as it keeps Redis commands and SQL statements.

use std::time::Instant;

use locklab_traces::{Event, Process};

use super::session::{EtcdWire, RequestLog};
use crate::recorder::event_recorder;

/// A log that writes every request of `process` through `write` as a `command` event,
/// on the run clock that started at `base`.
pub fn event_log(
    process: Process,
    base: Instant,
    write: impl Fn(Event) + Send + Sync + 'static,
) -> RequestLog {
    event_recorder::<EtcdWire>(process, base, write)
}

#[cfg(test)]
mod tests {
    use locklab_models::etcd::spec::{EtcdCommand, EtcdReply};
    use locklab_traces::format::CommandValue;
    use locklab_traces::{OpKind, Phase};

    use super::*;
    use crate::etcd::session::Request;
    use crate::recorder::exchange_event;

    #[test]
    fn a_request_becomes_a_command_event_that_reads_back() {
        let r = Request {
            seq: 0,
            node: 0,
            session: None,
            command: EtcdCommand::Delete {
                key: "lock/a".into(),
            },
            reply: Some(EtcdReply::Deleted { deleted: 1 }),
            sent_ns: 10,
            done_ns: 20,
        };
        let e = exchange_event(Process::Client(3), &r, 0);
        assert_eq!((e.op, e.phase, e.time), (OpKind::Command, Phase::Ok, 10));
        assert_eq!(e.key.as_deref(), Some("lock/a"));
        assert_eq!(e.note.as_deref(), Some("del lock/a -> 1"));
        let v: CommandValue =
            e.value.expect("a value").parse().expect("a command value");
        assert_eq!(v.return_time, 20);
        let back: EtcdCommand = serde_json::from_value(v.command).expect("a command");
        assert_eq!(back, r.command);
        let reply: EtcdReply =
            serde_json::from_value(v.reply.unwrap_or_default()).expect("a reply");
        assert_eq!(reply, EtcdReply::Deleted { deleted: 1 });
        let lost = Request { reply: None, ..r };
        assert_eq!(
            exchange_event(Process::Client(3), &lost, 0).phase,
            Phase::Info
        );
    }
}
