//! etcd's history vocabulary: the requests of `locklab_models::etcd::spec`, and a
//! foreign release proven from a delete by name ([`foreign`]).

use locklab_models::etcd::spec::{command_text, reply_text, EtcdCommand, EtcdReply};

use crate::format::CommandValue;

pub mod foreign;

/// The request and reply in `etcdctl`'s words.
pub fn words(c: &CommandValue) -> Option<(String, Option<String>)> {
    super::read::<EtcdCommand, EtcdReply>(c, command_text, reply_text)
}

/// The lock requests of an etcd history, numbered by their key's create revision, for
/// [`super::order`]: the revision recipe's `txn if create_revision(k) = 0 then put k;
/// first by create revision under the prefix`, whose put's revision is the key's place
/// in the queue (`None`: a request whose reply was lost). A single key's lock (every
/// client's put on one key) is a retry loop with no order, and is left out.
pub fn requests(paired: &crate::ops::Paired) -> Vec<super::order::Request> {
    use locklab_models::etcd::spec::{Compare, EtcdSpec};
    let Ok(events) = super::command_events::<EtcdSpec>(paired) else {
        return Vec::new();
    };
    events
        .iter()
        .filter_map(|e| {
            let EtcdCommand::Txn {
                compare, success, ..
            } = &e.command
            else {
                return None;
            };
            let key = compare.iter().find_map(|c| match c {
                Compare::CreateRevision { key, rev: 0 } => Some(key),
                _ => None,
            })?;
            let put = success
                .iter()
                .position(|op| matches!(op, EtcdCommand::Put { key: k, .. } if k == key))?;
            let queued = success.iter().any(
                |op| matches!(op, EtcdCommand::FirstCreate { prefix } if key.starts_with(prefix.as_str())),
            );
            if !queued {
                return None;
            }
            let position = match &e.reply {
                Some(EtcdReply::Txn {
                    succeeded: true,
                    responses,
                }) => match responses.get(put) {
                    Some(EtcdReply::Put { revision }) => Some(*revision),
                    _ => None,
                },
                // The key was there already: this request is not a new one, and what it
                // read is left to the request that made it.
                Some(_) => return None,
                None => None,
            };
            Some(super::order::Request {
                client: e.client,
                position,
                at_ns: if e.reply.is_some() { e.return_ns } else { e.call_ns },
                line: e.line,
            })
        })
        .collect()
}
