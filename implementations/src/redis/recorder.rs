//! The Redis commands' recorder: [`crate::recorder`] with the Redis spec's vocabulary.

use locklab_models::redis::spec::{RedisCommand, RedisReply};

use crate::recorder::Wire;

/// The Redis spec's commands and replies.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RedisWire;

impl Wire for RedisWire {
    type Command = RedisCommand;
    type Reply = RedisReply;

    fn key(command: &RedisCommand) -> Option<String> {
        command.key().map(str::to_string)
    }

    fn command_text(command: &RedisCommand) -> String {
        command.to_string()
    }

    fn reply_text(reply: &RedisReply) -> String {
        reply.to_string()
    }
}

/// One Redis command and what became of it.
pub type Exchange = crate::recorder::Exchange<RedisWire>;

/// Every Redis command of one or more nodes, in sending order.
pub type Recorder = crate::recorder::Recorder<RedisWire>;
