//! A TCP proxy inside the harness, between the lock clients and one server: the
//! client–server partition (cut: drop every connection and refuse new ones; heal), and
//! the Sentinel-aware endpoint of a failover topology (retarget: the clients' next
//! connections go to the new master, the old ones are dropped, as a Sentinel-aware
//! client reconnects). Listens on 127.0.0.1 only.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::copy_bidirectional;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;

struct State {
    target: Mutex<String>,
    /// Bumped on every cut or retarget: connections of an older generation close.
    generation: watch::Sender<(u64, bool)>,
}

/// A running proxy. Dropping it stops accepting; open connections close with the
/// runtime.
pub struct Proxy {
    addr: SocketAddr,
    state: Arc<State>,
    accept: JoinHandle<()>,
}

const CONNECT_TIMEOUT: Duration = Duration::from_millis(300);

impl Proxy {
    /// Starts a proxy to `target` (`host:port`) on a free loopback port. Must be called
    /// inside a tokio runtime.
    pub async fn start(target: &str) -> std::io::Result<Proxy> {
        let listener = TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0))).await?;
        let addr = listener.local_addr()?;
        let (generation, _) = watch::channel((0u64, false));
        let state = Arc::new(State {
            target: Mutex::new(target.to_string()),
            generation,
        });
        let accept = tokio::spawn(accept_loop(listener, state.clone()));
        Ok(Proxy {
            addr,
            state,
            accept,
        })
    }

    /// Where clients connect.
    pub fn addr(&self) -> String {
        self.addr.to_string()
    }

    /// A handle the nemesis can use from any thread.
    pub fn control(&self) -> ProxyControl {
        ProxyControl {
            state: self.state.clone(),
        }
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.accept.abort();
        self.control().cut();
    }
}

/// Cuts, heals and retargets a [`Proxy`]; usable outside the runtime.
#[derive(Clone)]
pub struct ProxyControl {
    state: Arc<State>,
}

impl ProxyControl {
    /// Drops every connection and refuses new ones until [`ProxyControl::heal`].
    pub fn cut(&self) {
        self.state.generation.send_modify(|g| *g = (g.0 + 1, true));
    }

    /// Accepts connections again.
    pub fn heal(&self) {
        self.state.generation.send_modify(|g| g.1 = false);
    }

    /// Forwards new connections to `target` and drops the old ones (which went to the
    /// old target). No-op when the target is unchanged.
    pub fn retarget(&self, target: &str) {
        {
            let mut t = self.state.target.lock().unwrap_or_else(|p| p.into_inner());
            if *t == target {
                return;
            }
            *t = target.to_string();
        }
        self.state.generation.send_modify(|g| g.0 += 1);
    }
}

async fn accept_loop(listener: TcpListener, state: Arc<State>) {
    loop {
        let Ok((client, _)) = listener.accept().await else {
            continue;
        };
        let (generation, cut) = *state.generation.borrow();
        if cut {
            drop(client);
            continue;
        }
        let target = state
            .target
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let mut changes = state.generation.subscribe();
        tokio::spawn(async move {
            let server =
                match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(&target)).await {
                    Ok(Ok(s)) => s,
                    _ => return,
                };
            let (mut client, mut server) = (client, server);
            let _ = client.set_nodelay(true);
            let _ = server.set_nodelay(true);
            tokio::select! {
                _ = copy_bidirectional(&mut client, &mut server) => {}
                _ = async {
                    while changes.changed().await.is_ok() {
                        if changes.borrow().0 != generation {
                            break;
                        }
                    }
                } => {}
            }
        });
    }
}
