//! etcd's history vocabulary: the requests of `locklab_models::etcd::spec`, and a
//! foreign release proven from a delete by name ([`foreign`]).

use locklab_models::etcd::spec::{command_text, reply_text, EtcdCommand, EtcdReply};

use crate::format::CommandValue;

pub mod foreign;

/// The request and reply in `etcdctl`'s words.
pub fn words(c: &CommandValue) -> Option<(String, Option<String>)> {
    super::read::<EtcdCommand, EtcdReply>(c, command_text, reply_text)
}
