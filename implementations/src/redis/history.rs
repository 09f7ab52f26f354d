//! Recorded exchanges as history events: each one a `command` event (see
//! `locklab_traces::format::CommandValue`), so a run's history keeps the Redis commands
//! next to the lock operations and can be checked as one Redis.

pub use crate::recorder::{event_recorder, exchange_event};

#[cfg(test)]
mod tests {
    use locklab_models::redis::spec::{RedisCommand, RedisReply};
    use locklab_traces::format::CommandValue;
    use locklab_traces::{OpKind, Phase, Process};

    use super::super::recorder::Exchange;
    use super::*;

    #[test]
    fn an_exchange_becomes_a_command_event_that_reads_back() {
        let ex = Exchange {
            seq: 0,
            node: 2,
            session: None,
            command: RedisCommand::Del { key: "k".into() },
            reply: Some(RedisReply::Integer(1)),
            sent_ns: 10,
            done_ns: 20,
        };
        let e = exchange_event(Process::Client(3), &ex, 100);
        assert_eq!((e.op, e.phase, e.time), (OpKind::Command, Phase::Ok, 110));
        assert_eq!(e.key.as_deref(), Some("k"));
        assert_eq!(e.note.as_deref(), Some("DEL k -> (integer) 1"));
        let v: CommandValue =
            e.value.expect("a value").parse().expect("a command value");
        assert_eq!((v.node, v.return_time), (2, 120));
        let back: RedisCommand = serde_json::from_value(v.command).expect("a command");
        assert_eq!(back, ex.command);
        let reply: RedisReply =
            serde_json::from_value(v.reply.unwrap_or_default()).expect("a reply");
        assert_eq!(reply, RedisReply::Integer(1));
        let lost = Exchange { reply: None, ..ex };
        assert_eq!(
            exchange_event(Process::Client(3), &lost, 0).phase,
            Phase::Info
        );
    }
}
