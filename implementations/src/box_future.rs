//! The future type of every trait method that goes to the lock service.

use std::future::Future;
use std::pin::Pin;

/// A boxed, sendable future: keeps the trait usable as `dyn DistributedLock`, so the
/// harness can pick a protocol by its catalog id at run time.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;
