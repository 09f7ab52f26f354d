//! Real servers as child processes, for this crate's tests and for the harness
//! (`locklab run`). No mocks: the tests of this crate and the harness run against these
//! processes.

pub mod reaper;
pub mod redis_server;

pub use redis_server::{RedisServer, ServerConfig, ServerError};
