//! ZooKeeper's history vocabulary: the requests of `locklab_models::zk::spec`, a
//! foreign release proven from a `delete` of another client's node ([`foreign`]), and
//! how many clients each release wakes ([`wakeups`]).

use locklab_models::zk::spec::{command_text, reply_text, ZkCommand, ZkReply};

use crate::format::CommandValue;

pub mod foreign;
pub mod wakeups;

/// The request and reply in ZooKeeper's words.
pub fn words(c: &CommandValue) -> Option<(String, Option<String>)> {
    super::read::<ZkCommand, ZkReply>(c, command_text, reply_text)
}
