//! One SQL client's connection: its own session on the server, or the run's one
//! application pool every client's statements go through. SQL clients send nothing in
//! the background and share the run's proxy.

use std::sync::Arc;

use locklab_implementations::sql::Session;

use crate::family::Client;

/// One client's session (or the run's pool).
#[derive(Clone, Debug)]
pub struct SqlClient {
    /// Its own connection through the run's proxy or, when the cluster has a pool, the one
    /// pool every client shares (made by the first client to connect).
    pub session: Arc<Session>,
    /// The application's in-process lock: the run's clients are the threads of one
    /// process, so they share it.
    pub app_lock: Arc<tokio::sync::Mutex<()>>,
}

impl Client for SqlClient {}
