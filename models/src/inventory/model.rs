//! The overselling story: buyers decrement a stock level held in
//! [`crate::spec::inventory`], with no lock, a per-process mutex, one conditional
//! `UPDATE`, version CAS, or CAS on a coarse timestamp "version". Buyers are
//! interchangeable, so states are canonicalised by sorting them.

use stateright::Model;

use crate::check::Symmetry;
use crate::registry::Property;
use crate::spec::inventory::{InventoryInput, InventoryOutput, InventorySpec, InventoryState};
use crate::spec::{Spec, Window};

/// How buyers take a unit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum InventoryProtocol {
    /// Read, check `> 0`, write `n - 1`.
    NoLock,
    /// The same inside a mutex of the buyer's own process (two app instances).
    LocalMutex,
    /// `UPDATE … SET n = n - 1 WHERE n >= 1`.
    OneSql,
    /// Read stock and version; `UPDATE … WHERE version = v` bumping it; retry if refused.
    Optimistic,
    /// The same, but the new "version" is the current timestamp (coarse: one per tick).
    TimestampCas,
}

/// What each buyer orders, and what the shelf holds: the model's and the real run's
/// one description of a row's purchases.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Orders {
    /// Every buyer one unit, against one unit fewer than buyers.
    OneEach,
    /// Write-up 001's phantom inventory: 4 iPhones in stock, Alice orders 3 and Bob 2, so
    /// that only one order can be met (further buyers order 4, 3, 2, …).
    Phantom,
}

impl Orders {
    /// The units buyer `i` orders.
    pub fn units(self, i: usize) -> i64 {
        match self {
            Orders::OneEach => 1,
            Orders::Phantom => [3, 2, 4][i % 3],
        }
    }

    /// The stock at the start with `buyers` buyers.
    pub fn stock(self, buyers: usize) -> i64 {
        match self {
            Orders::OneEach => i64::try_from(buyers).unwrap_or(i64::MAX) - 1,
            Orders::Phantom => 4,
        }
    }
}

/// The model.
#[derive(Clone, Debug)]
pub struct InventoryModel {
    /// How buyers take their units.
    pub protocol: InventoryProtocol,
    /// Number of buyers (buyer `i` runs in app instance `i % 2`).
    pub clients: usize,
    /// What each orders.
    pub orders: Orders,
    /// Units in stock at the start (too few for every order, so someone must be refused).
    pub initial: i64,
    /// The clock stops here (only the timestamp protocol reads it).
    pub horizon: u64,
}

/// A buyer's program counter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Step {
    /// Not started (waits for its process's mutex when there is one).
    Start,
    /// About to read.
    Read,
    /// Read `(stock, version)`; about to write.
    Write(i64, u64),
    /// Finished.
    Done,
}

/// One buyer after one order: its app instance (whose mutex it takes, when there is one),
/// the units it orders, its program counter, and whether it got them.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Buyer {
    /// Its app instance.
    pub instance: u8,
    /// The units it orders.
    pub units: i64,
    /// Where it is.
    pub step: Step,
    /// Whether its order was met.
    pub bought: bool,
}

impl Buyer {
    /// The units it took.
    pub fn taken(&self) -> i64 {
        if self.bought {
            self.units
        } else {
            0
        }
    }
}

impl InventoryModelState {
    /// Units sold so far.
    pub fn sold(&self) -> i64 {
        self.buyers.iter().map(Buyer::taken).sum()
    }
}

/// The system.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct InventoryModelState {
    /// The clock.
    pub now: u64,
    /// The stock row.
    pub store: InventoryState,
    /// The buyers (sorted: they are interchangeable).
    pub buyers: Vec<Buyer>,
    /// Which instances' mutexes are held.
    pub mutex: [bool; 2],
}

/// What can happen.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum InventoryAction {
    /// Buyer `i` takes its next step.
    Step(u8),
    /// One tick passes.
    Tick,
}

impl InventoryModel {
    fn spec(&self) -> InventorySpec {
        InventorySpec {
            initial: self.initial,
        }
    }

    fn call(&self, s: &mut InventoryModelState, input: InventoryInput) -> InventoryOutput {
        let mut out = self.spec().step(&s.store, &input, Window::at(s.now));
        let (o, next) = out.swap_remove(0);
        s.store = next;
        o
    }

    pub(super) fn step(
        &self,
        st: &InventoryModelState,
        i: usize,
    ) -> Option<(InventoryModelState, String)> {
        use InventoryProtocol::*;
        let mut s = st.clone();
        let b = st.buyers[i].clone();
        let inst = b.instance as usize % 2;
        let (next, what) = match (self.protocol, b.step) {
            (_, Step::Done) => return None,
            (LocalMutex, Step::Start) => {
                if s.mutex[inst] {
                    return None;
                }
                s.mutex[inst] = true;
                (Step::Read, format!("takes instance {inst}'s mutex"))
            }
            (OneSql, Step::Start) => {
                let k = b.units;
                let o = self.call(&mut s, InventoryInput::Decrement(k));
                s.buyers[i].bought = o == InventoryOutput::Done;
                (
                    Step::Done,
                    format!(
                        "UPDATE stock SET n = n - {k} WHERE n >= {k} -> {}",
                        if s.buyers[i].bought {
                            "1 row"
                        } else {
                            "0 rows"
                        }
                    ),
                )
            }
            (_, Step::Start) | (_, Step::Read) => match self.call(&mut s, InventoryInput::Read) {
                InventoryOutput::Read { stock, version } => {
                    let v = version.unwrap_or(0);
                    let next = if stock >= b.units {
                        Step::Write(stock, v)
                    } else {
                        Step::Done
                    };
                    (next, format!("reads stock {stock}, version {v}"))
                }
                _ => return None,
            },
            (NoLock | LocalMutex, Step::Write(n, _)) => {
                self.call(&mut s, InventoryInput::Write(n - b.units));
                s.buyers[i].bought = true;
                (Step::Done, format!("writes stock {}", n - b.units))
            }
            (Optimistic | TimestampCas | OneSql, Step::Write(n, v)) => {
                let new_version = (self.protocol == TimestampCas).then_some(s.now);
                let o = self.call(
                    &mut s,
                    InventoryInput::Cas {
                        expect_version: v,
                        stock: n - b.units,
                        new_version,
                    },
                );
                let ok = o == InventoryOutput::Done;
                s.buyers[i].bought = ok;
                let nv = new_version.map_or("version + 1".to_string(), |t| {
                    format!("version = {t} (now)")
                });
                let what = format!(
                    "UPDATE … SET n = {}, {nv} WHERE version = {v} -> {}",
                    n - b.units,
                    if ok { "1 row" } else { "0 rows, retry" }
                );
                (if ok { Step::Done } else { Step::Read }, what)
            }
        };
        s.buyers[i].step = next;
        if self.protocol == LocalMutex && next == Step::Done {
            s.mutex[inst] = false;
        }
        Some((s, what))
    }
}

impl Model for InventoryModel {
    type State = InventoryModelState;
    type Action = InventoryAction;

    fn init_states(&self) -> Vec<InventoryModelState> {
        let buyers = (0..self.clients)
            .map(|i| Buyer {
                instance: (i % 2) as u8,
                units: self.orders.units(i),
                step: Step::Start,
                bought: false,
            })
            .collect();
        vec![InventoryModelState {
            now: 0,
            store: self.spec().init(),
            buyers,
            mutex: [false; 2],
        }]
    }

    fn actions(&self, s: &InventoryModelState, out: &mut Vec<InventoryAction>) {
        out.extend((0..s.buyers.len() as u8).map(InventoryAction::Step));
        if self.protocol == InventoryProtocol::TimestampCas && s.now < self.horizon {
            out.push(InventoryAction::Tick);
        }
    }

    fn next_state(
        &self,
        s: &InventoryModelState,
        a: InventoryAction,
    ) -> Option<InventoryModelState> {
        match a {
            InventoryAction::Step(i) => self.step(s, i as usize).map(|x| x.0),
            InventoryAction::Tick => {
                let mut n = s.clone();
                n.now += 1;
                Some(n)
            }
        }
    }

    fn properties(&self) -> Vec<stateright::Property<Self>> {
        vec![Property::ResourceSafety
            .always(|m: &Self, s: &InventoryModelState| s.store.stock == m.initial - s.sold())]
    }
}

/// Buyers are interchangeable: they run one program, so their order does not matter.
impl Symmetry for InventoryModel {
    fn canonical(&self, s: &InventoryModelState) -> InventoryModelState {
        let mut c = s.clone();
        c.buyers.sort();
        c
    }
}
