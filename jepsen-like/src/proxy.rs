//! A TCP proxy inside the harness, between the lock clients and one server: the
//! client–server partition (cut: drop every connection and refuse new ones; heal), the
//! Sentinel-aware endpoint of a failover topology (retarget: the clients' next
//! connections go to the new master, the old ones are dropped, as a Sentinel-aware
//! client reconnects), and a lost reply (a [`Tap`] that knows the protocol says which
//! request's reply must never arrive: the request goes to the server, the connection to
//! the client is dropped first). Listens on 127.0.0.1 only.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{copy_bidirectional, AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// Reads what clients send, for a protocol-aware fault: one inspector per connection,
/// told every chunk the client sends in order.
pub trait Tap: Send + Sync + 'static {
    /// The inspector of a new connection. It answers each chunk with `true` when the
    /// reply to a request in it must be lost: the chunk still goes to the server, but
    /// the connection to the client is closed before anything more comes back.
    fn inspector(&self) -> Box<dyn FnMut(&[u8]) -> bool + Send>;
}

struct State {
    target: Mutex<String>,
    /// Bumped on every cut or retarget: connections of an older generation close.
    generation: watch::Sender<(u64, bool)>,
    tap: Option<Arc<dyn Tap>>,
    /// New connections are refused until then (a blip, not a partition: the open ones
    /// stay).
    refuse_until: Mutex<Option<std::time::Instant>>,
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
        Self::start_with(target, None).await
    }

    /// A proxy whose connections `tap` reads, to lose the reply it picks.
    pub async fn start_tapped(target: &str, tap: Arc<dyn Tap>) -> std::io::Result<Proxy> {
        Self::start_with(target, Some(tap)).await
    }

    async fn start_with(target: &str, tap: Option<Arc<dyn Tap>>) -> std::io::Result<Proxy> {
        let listener = TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0))).await?;
        let addr = listener.local_addr()?;
        let (generation, _) = watch::channel((0u64, false));
        let state = Arc::new(State {
            target: Mutex::new(target.to_string()),
            generation,
            tap,
            refuse_until: Mutex::new(None),
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

    /// Refuses new connections for `d`; the open ones stay.
    pub fn refuse_new(&self, d: Duration) {
        *self
            .state
            .refuse_until
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = Some(std::time::Instant::now() + d);
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
        let refused = state
            .refuse_until
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_some_and(|t| std::time::Instant::now() < t);
        if cut || refused {
            drop(client);
            continue;
        }
        let target = state
            .target
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let mut changes = state.generation.subscribe();
        let inspector = state.tap.as_ref().map(|t| t.inspector());
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
                _ = async {
                    match inspector {
                        Some(inspect) => tapped(client, server, inspect).await,
                        None => drop(copy_bidirectional(&mut client, &mut server).await),
                    }
                } => {}
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

/// Forwards one connection both ways, showing every chunk the client sends to
/// `inspect`; when it picks one, the server-to-client side stops first, the chunk goes to
/// the server, and the client's side is closed: the server runs the request and its
/// reply is lost. The server's side stays open a moment, so the server reads the request
/// whole before it sees the connection go.
async fn tapped(
    client: TcpStream,
    server: TcpStream,
    mut inspect: Box<dyn FnMut(&[u8]) -> bool + Send>,
) {
    let (mut from_client, mut to_client) = client.into_split();
    let (mut from_server, mut to_server) = server.into_split();
    // Its halves drop with it: the client hears the server's end as it would.
    let down = tokio::spawn(async move {
        let _ = tokio::io::copy(&mut from_server, &mut to_client).await;
    });
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = match from_client.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if inspect(&buf[..n]) {
            down.abort();
            let _ = down.await;
            drop(from_client);
            if to_server.write_all(&buf[..n]).await.is_ok() {
                tokio::time::sleep(LOST_REPLY_LINGER).await;
            }
            return;
        }
        if to_server.write_all(&buf[..n]).await.is_err() {
            break;
        }
    }
    down.abort();
}

/// How long the server's side of a connection whose reply was lost stays open.
const LOST_REPLY_LINGER: Duration = Duration::from_millis(300);
