//! Test support that starts real servers (compiled with the `backends` feature). No
//! mocks: the tests of this crate and the harness run against these processes.

pub mod redis_server;

pub use redis_server::{RedisServer, ServerError};
