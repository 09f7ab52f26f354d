//! The Redis family's servers: `redis-server` ([`RedisServer`]) and Sentinel
//! ([`Sentinel`]).

pub mod sentinel;
pub mod server;

pub use sentinel::Sentinel;
pub use server::{RedisServer, ServerConfig};
