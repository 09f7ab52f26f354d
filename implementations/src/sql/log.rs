//! The SQL statements' recorder: [`crate::recorder`] with the SQL spec's vocabulary
//! (`locklab_models::sql::spec`), so a recording can be held against the same server
//! semantics the models use, and a run's history shows every statement as a `command`
//! event, as it shows Redis commands.

use locklab_models::sql::spec::{reply_text, statement_text, SqlCommand, SqlReply};

use crate::recorder::Wire;

/// The SQL spec's statements and replies.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SqlWire;

impl Wire for SqlWire {
    type Command = SqlCommand;
    type Reply = SqlReply;

    fn key(command: &SqlCommand) -> Option<String> {
        command.key()
    }

    fn command_text(command: &SqlCommand) -> String {
        statement_text(command)
    }

    fn reply_text(reply: &SqlReply) -> String {
        reply_text(reply)
    }
}

/// One statement and what came back (`session`: the server's id of the session).
pub type Statement = crate::recorder::Exchange<SqlWire>;

/// Every statement of one or more sessions, in sending order; clone it into every
/// session of a run, or make it stream into a run's history
/// ([`crate::recorder::event_recorder`]).
pub type StatementLog = crate::recorder::Recorder<SqlWire>;

#[cfg(test)]
mod tests {
    use locklab_traces::format::CommandValue;
    use locklab_traces::{OpKind, Phase, Process};

    use super::*;
    use crate::recorder::{exchange_event, Exchange};

    #[test]
    fn a_statement_becomes_a_command_event_with_its_session_that_reads_back() {
        let st: Statement = Exchange {
            seq: 0,
            node: 0,
            session: Some(42),
            command: SqlCommand::GetLock { name: "k".into() },
            reply: Some(SqlReply::Int(1)),
            sent_ns: 10,
            done_ns: 20,
        };
        let e = exchange_event(Process::Client(1), &st, 100);
        assert_eq!((e.op, e.phase, e.time), (OpKind::Command, Phase::Ok, 110));
        assert_eq!(e.key.as_deref(), Some("k"));
        assert_eq!(e.note.as_deref(), Some("SELECT GET_LOCK('k', 0) -> 1"));
        let v: CommandValue =
            e.value.expect("a value").parse().expect("a command value");
        assert_eq!((v.session, v.return_time), (Some(42), 120));
        let back: SqlCommand = serde_json::from_value(v.command).expect("a statement");
        assert_eq!(back, st.command);
        let lost = Statement { reply: None, ..st };
        assert_eq!(
            exchange_event(Process::Client(1), &lost, 0).phase,
            Phase::Info
        );
    }
}
