//! Your lock protocol, described in Rust with the builder (the same as
//! `my-lock.toml`, for those who would rather keep it in code). The tests in
//! `tests/model.rs` check both.

use locklab_models::protocol::{ProtocolError, RedisProtocol, StepBuilder};

/// Compare-and-delete: delete the lock only if it still holds the caller's token.
pub const RELEASE: &str = "if redis.call('get', KEYS[1]) == ARGV[1] then
    return redis.call('del', KEYS[1])
end
return 0";

/// `SET NX PX` to acquire, the compare-and-delete script to release.
pub fn my_lock() -> Result<RedisProtocol, ProtocolError> {
    RedisProtocol::builder("my lock (builder)")
        .acquire(
            StepBuilder::send("SET {key} {token} NX PX {lease_ms}")
                .granted("OK")
                .busy("nil"),
        )
        .release(
            StepBuilder::script(RELEASE, &["{key}"], &["{token}"])
                .released("1")
                .not_held("0"),
        )
        .build()
}
