//! The lost create reply, in ZooKeeper's wire protocol: each client's proxies read the
//! frames the client sends (a 4-byte length, then the request: after the session's
//! first frame, the connect request, each one starts with its xid and op code), and
//! once the nemesis armed the trap, the first create of any client springs it — the
//! create goes to the server, its reply is lost with the connection. The client's
//! proxies then refuse new connections for a moment: a client that reconnected at once
//! (to another server) would move its session before the create reached the leader,
//! which then refuses the create as from a moved session — no node, nothing to show.
//! The trap records in the history whose create it was.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use locklab_traces::format::{Injected, What};

use crate::log::Log;
use crate::proxy::{Inspector, ProxyControl, Tap};

/// How long the client cannot reconnect after its create's reply was lost: well within
/// its session, long enough for the create to be committed first.
const BLIP: Duration = Duration::from_millis(800);

/// `create`, `create2`, `createContainer`, `createTTL`.
const CREATE_OPS: [i32; 4] = [1, 15, 19, 21];

/// One client's view of the run's trap.
pub struct CreateTrap {
    /// Shared by every client of the run: set by the nemesis, cleared by the create
    /// that springs it.
    pub armed: Arc<AtomicBool>,
    /// The client whose proxies these are (`c0`).
    pub client: String,
    /// The run's history.
    pub log: Arc<Log>,
    /// The client's proxies, set once they run.
    pub proxies: Arc<OnceLock<Vec<ProxyControl>>>,
}

impl Tap for CreateTrap {
    fn inspector(&self) -> Inspector {
        let armed = self.armed.clone();
        let client = self.client.clone();
        let log = self.log.clone();
        let proxies = self.proxies.clone();
        let mut frames = Frames::default();
        Box::new(move |chunk| {
            let creates = frames.push(chunk);
            if creates == 0 || !armed.swap(false, Ordering::SeqCst) {
                return false;
            }
            for p in proxies.get().into_iter().flatten() {
                p.refuse_new(BLIP);
            }
            log.nemesis(
                Injected::new(What::LostReply, client.clone()),
                Some(format!(
                    "{client}'s create reached the ensemble; its proxy dropped the connection before the reply"
                )),
            );
            true
        })
    }
}

/// The client-to-server byte stream cut into frames.
#[derive(Default)]
struct Frames {
    pending: Vec<u8>,
    /// Frames seen: the first is the connect request, which has no op code.
    seen: u64,
}

impl Frames {
    /// Takes `chunk`; how many create requests it completed.
    fn push(&mut self, chunk: &[u8]) -> usize {
        self.pending.extend_from_slice(chunk);
        let mut creates = 0;
        while let Some(len) = self
            .pending
            .get(..4)
            .map(|b| usize::try_from(i32::from_be_bytes([b[0], b[1], b[2], b[3]])).unwrap_or(0))
        {
            if self.pending.len() < 4 + len {
                break;
            }
            let frame: Vec<u8> = self.pending.drain(..4 + len).collect();
            let op = frame
                .get(8..12)
                .map(|b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]));
            if self.seen > 0 && op.is_some_and(|op| CREATE_OPS.contains(&op)) {
                creates += 1;
            }
            self.seen += 1;
        }
        creates
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(xid: i32, op: i32, body: &[u8]) -> Vec<u8> {
        let mut f = Vec::new();
        let len = i32::try_from(8 + body.len()).unwrap_or(0);
        f.extend_from_slice(&len.to_be_bytes());
        f.extend_from_slice(&xid.to_be_bytes());
        f.extend_from_slice(&op.to_be_bytes());
        f.extend_from_slice(body);
        f
    }

    #[test]
    fn a_create_is_found_across_chunks_but_never_in_the_connect_frame() {
        let mut frames = Frames::default();
        // A connect request whose bytes 8..12 read as op code 1 (an epoch of 1).
        let connect = frame(0, 1, &[0; 20]);
        assert_eq!(frames.push(&connect), 0);
        let ping = frame(-2, 11, &[]);
        let create = frame(1, 15, b"/lock/n-");
        let mut stream = ping.clone();
        stream.extend_from_slice(&create);
        let (a, b) = stream.split_at(ping.len() + 5);
        assert_eq!(frames.push(a), 0);
        assert_eq!(frames.push(b), 1);
        assert_eq!(frames.push(&frame(2, 12, b"/lock")), 0, "getChildren2");
    }
}
