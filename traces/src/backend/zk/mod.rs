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

/// The lock requests of a ZooKeeper history, numbered by their sequential node's
/// `czxid` (`None`: a create whose reply was lost), for [`super::order`]. The
/// plain-znode lock's creates are not requests in an order, and are left out.
pub fn requests(paired: &crate::ops::Paired) -> Vec<super::order::Request> {
    let Ok(events) = super::command_events::<locklab_models::zk::spec::ZkSpec>(paired) else {
        return Vec::new();
    };
    events
        .iter()
        .filter_map(|e| match (&e.command, &e.reply) {
            (
                ZkCommand::Create {
                    sequential: true, ..
                },
                reply,
            ) => Some(super::order::Request {
                client: e.client,
                position: match reply {
                    Some(ZkReply::Created { czxid, .. }) => Some(*czxid),
                    _ => None,
                },
                at_ns: if reply.is_some() {
                    e.return_ns
                } else {
                    e.call_ns
                },
                line: e.line,
            }),
            _ => None,
        })
        .collect()
}
