//! A user's etcd protocol as the run's lock: each client follows the protocol's
//! requests on its own session ([`DescribedEtcdLock`]), as owner `c<index>`, the name
//! its model gives it.

use std::sync::Arc;

use locklab_implementations::etcd::{DescribedEtcdLock, EtcdSession};
use locklab_implementations::LockError;
use locklab_models::protocol::EtcdProtocol;

use super::client::EtcdClient;
use crate::custom::CustomLock;

/// The lock that runs `p` for every client of an etcd scenario.
pub fn lock(p: &EtcdProtocol) -> CustomLock {
    let p = Arc::new(p.clone());
    CustomLock::with_context(&p.name.clone(), move |c| {
        let client = c
            .client
            .downcast_ref::<EtcdClient>()
            .ok_or(LockError::Unsupported {
                protocol: "an etcd protocol file",
                what: "a scenario of another family",
            })?;
        let session = EtcdSession::clone(&client.session);
        let owner = format!("c{}", c.index);
        Ok(Box::new(DescribedEtcdLock::new(
            session,
            c.key,
            &owner,
            Arc::clone(&p),
        )))
    })
}
