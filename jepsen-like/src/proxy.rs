//! A TCP proxy inside the harness, between the lock clients and one server: the
//! client–server partition (cut: drop every connection and refuse new ones; heal), the
//! Sentinel-aware endpoint of a failover topology (retarget: the clients' next
//! connections go to the new master, the old ones are dropped, as a Sentinel-aware
//! client reconnects), and a lost reply (the next request reaches the server, its
//! answer never comes back; or the request a protocol-aware [`Tap`] picks).
//! [`ClientProxies`] are one client's own proxies, one per server, so that a fault hits
//! exactly that client. Listens on 127.0.0.1 only.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Notify};
use tokio::task::JoinHandle;

/// Told each chunk a client sends on one connection: `true` picks the request whose
/// reply is lost.
pub type Inspector = Box<dyn FnMut(&[u8]) -> bool + Send>;

/// Reads both directions of every connection as they pass, for a decoder that records
/// what a client sent and what came back ([`crate::external::wiretap`]). A chunk is
/// heard when the proxy forwards it: a request before the server can act on it, a
/// reply after the server sent it, so the span between them holds the server's act.
pub trait Wiretap: Send + Sync + 'static {
    /// The listener of a new connection; dropped when the connection ends.
    fn connection(&self) -> Box<dyn ConnectionTap>;
}

/// One connection's listener.
pub trait ConnectionTap: Send {
    /// Bytes the client sent, as they go to the server.
    fn sent(&mut self, chunk: &[u8]);
    /// Bytes the server answered, as they go to the client (never a reply the proxy
    /// loses on purpose: the client never gets it).
    fn received(&mut self, chunk: &[u8]);
}

/// Reads what clients send, for a protocol-aware fault: one inspector per connection,
/// told every chunk the client sends, in order.
pub trait Tap: Send + Sync + 'static {
    /// The inspector of a new connection. It answers a chunk with `true` when the reply
    /// to a request in it must be lost (as [`lose_next_reply`] loses the next one).
    fn inspector(&self) -> Inspector;
}

struct State {
    target: Mutex<String>,
    /// Bumped on every cut or retarget: connections of an older generation close. Beside
    /// it, the causes of the cut in force ([`Cut`] bits; 0: open).
    generation: watch::Sender<(u64, u8)>,
    /// A lost reply asked for and not yet taken: shared by the proxies it was asked of,
    /// so that only the first request through any of them loses its reply.
    loss: Mutex<Option<Arc<AtomicBool>>>,
    tap: Option<Arc<dyn Tap>>,
    wiretap: Option<Arc<dyn Wiretap>>,
    /// New connections are refused until then (a blip, not a partition: the open ones
    /// stay).
    refuse_until: Mutex<Option<Instant>>,
}

impl State {
    /// Whether the request this connection is about to forward is the one whose reply
    /// is lost.
    fn take_loss(&self) -> bool {
        self.loss
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
            .is_some_and(|armed| armed.swap(false, Ordering::AcqRel))
    }
}

/// A running proxy. Dropping it stops accepting; open connections close with the
/// runtime.
pub struct Proxy {
    addr: SocketAddr,
    state: Arc<State>,
    accept: JoinHandle<()>,
}

const CONNECT_TIMEOUT: Duration = Duration::from_millis(300);

/// How long a connection whose reply is lost stays open after the request went
/// through: long enough for the server to act on it (a write commits in milliseconds
/// here), so that the request surely took effect and only its answer is lost.
pub const REPLY_GRACE: Duration = Duration::from_millis(200);

impl Proxy {
    /// Starts a proxy to `target` (`host:port`) on a free loopback port. Must be called
    /// inside a tokio runtime.
    pub async fn start(target: &str) -> std::io::Result<Proxy> {
        Self::start_with(target, None, None).await
    }

    /// A proxy whose connections `tap` reads, to lose the reply it picks.
    pub async fn start_tapped(target: &str, tap: Arc<dyn Tap>) -> std::io::Result<Proxy> {
        Self::start_with(target, Some(tap), None).await
    }

    /// A proxy whose connections `wiretap` hears both ways.
    pub async fn start_wiretapped(
        target: &str,
        wiretap: Arc<dyn Wiretap>,
    ) -> std::io::Result<Proxy> {
        Self::start_with(target, None, Some(wiretap)).await
    }

    async fn start_with(
        target: &str,
        tap: Option<Arc<dyn Tap>>,
        wiretap: Option<Arc<dyn Wiretap>>,
    ) -> std::io::Result<Proxy> {
        let listener = TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0))).await?;
        let addr = listener.local_addr()?;
        let (generation, _) = watch::channel((0u64, 0u8));
        let state = Arc::new(State {
            target: Mutex::new(target.to_string()),
            generation,
            loss: Mutex::new(None),
            tap,
            wiretap,
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

/// Why a proxy is cut. Each cause is healed on its own, so that one fault's end does not
/// end another's: a client's own partition healing in the middle of a split leaves the
/// split in place, and the split's heal leaves a partition the nemesis made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cut {
    /// The nemesis's partition of a server ([`ProxyControl::cut`]).
    Nemesis = 1,
    /// A client cut off for a while ([`ClientProxies::cut_for`]).
    Client = 2,
    /// A split of the network in two.
    Split = 4,
}

/// Cuts, heals and retargets a [`Proxy`]; usable outside the runtime.
#[derive(Clone)]
pub struct ProxyControl {
    state: Arc<State>,
}

impl ProxyControl {
    /// Drops every connection and refuses new ones until [`ProxyControl::heal`].
    pub fn cut(&self) {
        self.cut_because(Cut::Nemesis);
    }

    /// Drops every connection and refuses new ones until `why` is healed (and every
    /// other cause in force too).
    pub fn cut_because(&self, why: Cut) {
        self.state
            .generation
            .send_modify(|g| *g = (g.0 + 1, g.1 | why as u8));
    }

    /// Ends the cut for `why`; the proxy accepts connections again once no other cause
    /// holds it cut.
    pub fn heal_because(&self, why: Cut) {
        self.state.generation.send_modify(|g| g.1 &= !(why as u8));
    }

    /// Refuses new connections for `d`; the open ones stay.
    pub fn refuse_new(&self, d: Duration) {
        *self
            .state
            .refuse_until
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = Some(Instant::now() + d);
    }

    /// Ends the nemesis's partition ([`ProxyControl::cut`]).
    pub fn heal(&self) {
        self.heal_because(Cut::Nemesis);
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

    /// Loses the reply to the next request through this proxy (see [`lose_next_reply`]).
    pub fn lose_next_reply(&self) {
        lose_next_reply(std::slice::from_ref(self));
    }
}

/// Loses the reply to the next request that goes through any of `proxies`: the first
/// bytes a client sends after this call are forwarded to the server, nothing the server
/// sends on that connection from then on reaches the client, and the connection is
/// dropped [`REPLY_GRACE`] later — a network that lost the answer and then the
/// connection. The client sees its request fail without knowing whether it took effect
/// (it did). Requests on other connections, and later ones, are untouched.
pub fn lose_next_reply(proxies: &[ProxyControl]) {
    let armed = Arc::new(AtomicBool::new(true));
    for p in proxies {
        *p.state.loss.lock().unwrap_or_else(|e| e.into_inner()) = Some(armed.clone());
    }
}

/// One client's own proxies, one in front of each of a run's server addresses, so a
/// fault can hit exactly this client: a pause or a partition cuts them, a lost reply
/// is armed on them. Dropping the last clone (the client died) cuts them for good.
#[derive(Clone)]
pub struct ClientProxies {
    proxies: Arc<Vec<Proxy>>,
}

impl ClientProxies {
    /// A proxy in front of each of `targets` (`host:port`). Must be called inside a
    /// tokio runtime.
    pub async fn start(targets: &[String]) -> std::io::Result<ClientProxies> {
        Self::start_with(targets, None).await
    }

    /// As [`ClientProxies::start`], every connection read by `tap`.
    pub async fn start_tapped(
        targets: &[String],
        tap: Arc<dyn Tap>,
    ) -> std::io::Result<ClientProxies> {
        Self::start_with(targets, Some(tap)).await
    }

    async fn start_with(
        targets: &[String],
        tap: Option<Arc<dyn Tap>>,
    ) -> std::io::Result<ClientProxies> {
        let mut proxies = Vec::with_capacity(targets.len());
        for t in targets {
            proxies.push(Proxy::start_with(t, tap.clone(), None).await?);
        }
        Ok(ClientProxies {
            proxies: Arc::new(proxies),
        })
    }

    /// Where this client connects, in the order of the targets.
    pub fn addrs(&self) -> Vec<String> {
        self.proxies.iter().map(Proxy::addr).collect()
    }

    /// How many proxies (one per server).
    pub fn len(&self) -> usize {
        self.proxies.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.proxies.is_empty()
    }

    /// Handles on each proxy, usable outside the runtime.
    pub fn controls(&self) -> Vec<ProxyControl> {
        self.proxies.iter().map(Proxy::control).collect()
    }

    /// Cuts this client off every server for `d`, then heals. Must be called inside a
    /// tokio runtime.
    pub fn cut_for(&self, d: Duration) {
        let controls = self.controls();
        for c in &controls {
            c.cut_because(Cut::Client);
        }
        tokio::spawn(async move {
            tokio::time::sleep(d).await;
            for c in &controls {
                c.heal_because(Cut::Client);
            }
        });
    }

    /// Loses the reply to this client's next request, whichever server it goes to
    /// ([`lose_next_reply`]).
    pub fn lose_next_reply(&self) {
        lose_next_reply(&self.controls());
    }
}

impl std::fmt::Debug for ClientProxies {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.addrs()).finish()
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
            .is_some_and(|t| Instant::now() < t);
        if cut != 0 || refused {
            drop(client);
            continue;
        }
        let target = state
            .target
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let mut changes = state.generation.subscribe();
        let state = state.clone();
        tokio::spawn(async move {
            let server =
                match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(&target)).await {
                    Ok(Ok(s)) => s,
                    _ => return,
                };
            tokio::select! {
                _ = forward(client, server, &state) => {}
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

/// Copies both ways until both sides are done, or, once a request's reply is to be
/// lost (armed by [`lose_next_reply`] or picked by the proxy's [`Tap`]), drops what the
/// server sends and closes [`REPLY_GRACE`] after that request.
async fn forward(client: TcpStream, server: TcpStream, state: &State) {
    let mut inspect = state.tap.as_ref().map(|t| t.inspector());
    // Dropped with this future, also when a cut cancels it: the listener then records
    // what never got an answer.
    let heard = Mutex::new(state.wiretap.as_ref().map(|w| w.connection()));
    let hear = |f: &dyn Fn(&mut dyn ConnectionTap)| {
        if let Some(h) = heard.lock().unwrap_or_else(|p| p.into_inner()).as_mut() {
            f(h.as_mut());
        }
    };
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let (mut from_client, mut to_client) = client.into_split();
    let (mut from_server, mut to_server) = server.into_split();
    let losing = AtomicBool::new(false);
    let lost = Notify::new();
    let up = async {
        let mut buf = vec![0u8; 16 * 1024];
        while let Ok(n @ 1..) = from_client.read(&mut buf).await {
            let picked = inspect.as_mut().is_some_and(|i| i(&buf[..n]));
            if !losing.load(Ordering::Acquire) && (picked || state.take_loss()) {
                losing.store(true, Ordering::Release);
                lost.notify_one();
            }
            hear(&|h| h.sent(&buf[..n]));
            if to_server.write_all(&buf[..n]).await.is_err() {
                break;
            }
        }
        let _ = to_server.shutdown().await;
    };
    let down = async {
        let mut buf = vec![0u8; 16 * 1024];
        while let Ok(n @ 1..) = from_server.read(&mut buf).await {
            if losing.load(Ordering::Acquire) {
                continue;
            }
            hear(&|h| h.received(&buf[..n]));
            if to_client.write_all(&buf[..n]).await.is_err() {
                break;
            }
        }
        let _ = to_client.shutdown().await;
    };
    tokio::select! {
        _ = async { tokio::join!(up, down) } => {}
        _ = async {
            lost.notified().await;
            tokio::time::sleep(REPLY_GRACE).await;
        } => {}
    }
}

#[cfg(test)]
mod tests {
    use super::{Cut, Proxy};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};

    /// An echo server on loopback: the proxy's target.
    async fn echo() -> String {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr").to_string();
        tokio::spawn(async move {
            while let Ok((mut s, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let mut buf = [0u8; 16];
                    while let Ok(n @ 1..) = s.read(&mut buf).await {
                        if s.write_all(&buf[..n]).await.is_err() {
                            break;
                        }
                    }
                });
            }
        });
        addr
    }

    /// Whether a new connection through the proxy gets its byte echoed.
    async fn open(proxy: &Proxy) -> bool {
        let Ok(mut s) = TcpStream::connect(proxy.addr()).await else {
            return false;
        };
        let mut b = [0u8; 1];
        s.write_all(b"x").await.is_ok()
            && matches!(
                tokio::time::timeout(std::time::Duration::from_secs(5), s.read(&mut b)).await,
                Ok(Ok(1))
            )
    }

    #[tokio::test]
    async fn each_cause_of_a_cut_heals_on_its_own() {
        let proxy = Proxy::start(&echo().await).await.expect("proxy");
        let p = proxy.control();
        assert!(open(&proxy).await);
        p.cut_because(Cut::Client);
        p.cut_because(Cut::Split);
        assert!(!open(&proxy).await);
        // The split heals while the client's own partition lasts: still cut.
        p.heal_because(Cut::Split);
        assert!(!open(&proxy).await);
        p.heal_because(Cut::Client);
        assert!(open(&proxy).await);
        p.cut();
        p.heal_because(Cut::Split);
        assert!(
            !open(&proxy).await,
            "a split's heal leaves the nemesis's cut"
        );
        p.heal();
        assert!(open(&proxy).await);
    }
}
