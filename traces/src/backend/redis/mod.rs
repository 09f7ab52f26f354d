//! Redis's history vocabulary: the commands of `locklab_models::redis::spec`, whether a
//! history's commands are one Redis per server ([`one_redis`]), and a foreign release
//! proven from a `DEL` ([`foreign`]).

use locklab_models::redis::spec::{command_text, reply_text, RedisCommand, RedisReply};

use crate::format::CommandValue;

pub mod foreign;
pub mod one_redis;

/// The command and reply in `redis-cli`'s words.
pub fn words(c: &CommandValue) -> Option<(String, Option<String>)> {
    super::read::<RedisCommand, RedisReply>(c, command_text, reply_text)
}
