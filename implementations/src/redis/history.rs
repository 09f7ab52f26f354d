//! Recorded exchanges as history events: each one a `command` event (see
//! `locklab_traces::format::CommandValue`), so a run's history keeps the Redis commands
//! next to the lock operations and can be checked as one Redis.

use std::time::Instant;

use locklab_traces::format::CommandValue;
use locklab_traces::{Event, OpKind, Phase, Process};

use super::recorder::{Exchange, Recorder};

/// The history event of one exchange made by `process`. `offset_ns` is the run-clock
/// time at which the recorder started (0 when both count from the same instant). The
/// phase is `ok` when a reply came and `info` (outcome unknown) when none did.
pub fn exchange_event(process: Process, exchange: &Exchange, offset_ns: u64) -> Event {
    let phase = if exchange.reply.is_some() {
        Phase::Ok
    } else {
        Phase::Info
    };
    let mut event = Event::new(
        process,
        OpKind::Command,
        phase,
        offset_ns.saturating_add(exchange.sent_ns),
    );
    event.key = exchange.command.key().map(str::to_string);
    let value = CommandValue {
        node: exchange.node,
        command: serde_json::to_value(&exchange.command).unwrap_or_default(),
        reply: exchange
            .reply
            .as_ref()
            .and_then(|r| serde_json::to_value(r).ok()),
        return_time: offset_ns.saturating_add(exchange.done_ns),
    };
    event.value = serde_json::to_value(value).ok();
    event.note = Some(match &exchange.reply {
        Some(r) => format!("{} -> {r}", exchange.command),
        None => format!("{} -> no reply", exchange.command),
    });
    event
}

/// A recorder that writes every exchange of `process` through `write` as a `command`
/// event, on the run clock that started at `base` (the run's history hands its own).
pub fn event_recorder(
    process: Process,
    base: Instant,
    write: impl Fn(Event) + Send + Sync + 'static,
) -> Recorder {
    Recorder::streaming(base, move |exchange| {
        write(exchange_event(process, &exchange, 0))
    })
}

#[cfg(test)]
mod tests {
    use locklab_models::redis::spec::{RedisCommand, RedisReply};

    use super::*;

    #[test]
    fn an_exchange_becomes_a_command_event_that_reads_back() {
        let ex = Exchange {
            seq: 0,
            node: 2,
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
            serde_json::from_value(e.value.unwrap_or_default()).expect("a command value");
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
