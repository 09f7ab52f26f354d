//! Recorded exchanges as history events, so a run's history keeps the raw backend
//! commands next to the lock operations (`op: "command"`, a point event).

use locklab_traces::{Event, OpKind, Phase, Process};
use serde_json::json;

use super::command::{Exchange, RedisReply};

/// The history event of one exchange made by `process`. `offset_ns` is the run-clock
/// time at which the recorder was created (0 when both start together). The phase is
/// `ok` when a reply came and `info` (outcome unknown) when none did.
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
    event.key = exchange
        .command
        .to_spec()
        .and_then(|c| c.key().map(str::to_string));
    event.value = Some(json!({
        "node": exchange.node,
        "command": exchange.command.render(),
        "reply": exchange.reply.as_ref().map(reply_text),
        "done": offset_ns.saturating_add(exchange.done_ns),
    }));
    event
}

fn reply_text(r: &RedisReply) -> String {
    match r.to_spec() {
        Some(s) => locklab_models::redis::spec::reply_text(&s),
        None => format!("{r:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::redis::command::RedisCommand;

    #[test]
    fn an_exchange_becomes_a_command_event() {
        let ex = Exchange {
            seq: 0,
            node: 2,
            command: RedisCommand::Del { key: "k".into() },
            reply: Some(RedisReply::Int(1)),
            sent_ns: 10,
            done_ns: 20,
        };
        let e = exchange_event(Process::Client(3), &ex, 100);
        assert_eq!((e.op, e.phase, e.time), (OpKind::Command, Phase::Ok, 110));
        assert_eq!(e.key.as_deref(), Some("k"));
        let v = e.value.unwrap_or_default();
        assert_eq!(v["command"], "DEL k");
        assert_eq!(v["reply"], "(integer) 1");
        let lost = Exchange { reply: None, ..ex };
        assert_eq!(
            exchange_event(Process::Client(3), &lost, 0).phase,
            Phase::Info
        );
    }
}
