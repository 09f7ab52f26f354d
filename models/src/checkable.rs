//! One face for every model, whatever its state and action types: the catalog searches,
//! tells and serves a `Box<dyn Checkable>` without knowing which family built it, so
//! there is no switch over the families' model types anywhere.

use std::fmt::Debug;
use std::hash::Hash;
use std::net::SocketAddr;

use serde::Serialize;

use crate::check::{bfs, iterative_deepening, Limits, Narrate, Stats, Stop, Store, Symmetry};
use crate::diagram::{Cast, Exchange, Scene};
use crate::registry::Property;

/// One step of a story.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct StoryStep {
    /// 1-based.
    pub n: usize,
    /// What happened.
    pub action: String,
    /// Whether it was an injected fault.
    pub fault: bool,
    /// The state of every client, node and the resource after it.
    pub state: Vec<String>,
    /// The step as a row of the sequence diagram.
    pub scene: Scene,
}

/// A counterexample told as a story.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct Story {
    /// The violated property.
    pub property: Property,
    /// The state before the first step.
    pub initial: Vec<String>,
    /// The steps.
    pub steps: Vec<StoryStep>,
    /// Whether no shorter path breaks the property: a breadth-first search's first
    /// (every store but the bitstate sweep, which is depth first).
    pub shortest: bool,
    /// Why it broke.
    pub closing: String,
    /// The diagram's participants, and their state before the first step.
    pub cast: Cast,
}

/// The story as text: each step, its fault marked, the state after it, and why the
/// property broke.
impl std::fmt::Display for Story {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.steps.len();
        writeln!(
            f,
            "Counterexample for {} ({n} step{}{}):",
            self.property,
            if n == 1 { "" } else { "s" },
            if self.shortest {
                ", shortest"
            } else {
                ", depth first: not always the shortest"
            }
        )?;
        writeln!(f, "  0. initial state")?;
        for l in &self.initial {
            writeln!(f, "       {l}")?;
        }
        for st in &self.steps {
            let fault = if st.fault { "  ⚡ FAULT" } else { "" };
            writeln!(f, "  {}. {}{fault}", st.n, st.action)?;
            for l in &st.state {
                writeln!(f, "       {l}")?;
            }
        }
        writeln!(f, "  Violated: {}. {}", self.property, self.closing)
    }
}

/// What a search found, told.
#[derive(Clone, Debug)]
pub struct Told {
    /// Every explored state was checked (no limit cut the search short).
    pub complete: bool,
    /// The limit that cut the search short, if one did.
    pub stopped: Option<Stop>,
    /// The search's counters.
    pub stats: Stats,
    /// One shortest story per violated property, in the model's property order.
    pub stories: Vec<Story>,
    /// How the search stored its states.
    pub store: Store,
    /// See [`crate::check::Outcome::collision_bound`].
    pub collision_bound: Option<f64>,
}

/// A property's shortest counterexample length by both searches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Depths {
    /// The violated property.
    pub property: Property,
    /// Actions on the path [`bfs`] found.
    pub bfs: usize,
    /// Actions on the shortest path [`iterative_deepening`] found, searching one deeper.
    pub iterative_deepening: Option<usize>,
}

/// A model the catalog can search, tell and serve.
pub trait Checkable: Send + Sync {
    /// Searches breadth-first within `limits` and tells each violation's shortest path.
    fn tell(&self, limits: Limits, progress: &mut dyn FnMut(&Stats)) -> Told;

    /// Serves stateright's Explorer on `addr`; blocks while serving.
    fn serve(self: Box<Self>, addr: SocketAddr);

    /// The properties the search checks: the model's invariants made by
    /// [`Property::always`] (any other invariant would not be searched).
    fn checks(&self) -> Vec<Property>;

    /// For each property [`bfs`] finds violated, its path length and the one found by
    /// [`iterative_deepening`]: two independent searches, so tests can hold the claim
    /// "shortest" against each other.
    fn depths(&self, limits: Limits) -> Vec<Depths>;

    /// The diagram's participants in the model's first initial state: what a page
    /// draws when there is no story.
    fn cast(&self) -> Cast;
}

/// Step `n` of a story: `a` taken from `prev` to `next`, in `model`'s words.
pub fn story_step<M>(
    model: &M,
    n: usize,
    prev: &M::State,
    a: &M::Action,
    next: &M::State,
) -> StoryStep
where
    M: Narrate,
    M::State: Clone + Hash + Eq + Debug,
    M::Action: Clone + Debug,
{
    StoryStep {
        n,
        action: model.describe_action(prev, a),
        fault: model.is_fault(a),
        state: model.describe_state(next),
        scene: model.scene(next, model.exchange(prev, a)),
    }
}

fn cast_of<M>(model: &M, state: &M::State) -> Cast
where
    M: Narrate,
    M::State: Clone + Hash + Eq + Debug,
    M::Action: Clone + Debug,
{
    Cast {
        lanes: model.lanes(state),
        initial: model.scene(state, Exchange::default()),
    }
}

impl<M> Checkable for M
where
    M: Narrate + Symmetry + Send + Sync + 'static,
    M::State: Clone + Hash + Eq + Debug + Send + Sync,
    M::Action: Clone + Debug + PartialEq + Send + Sync,
{
    fn tell(&self, limits: Limits, progress: &mut dyn FnMut(&Stats)) -> Told {
        let out = bfs(self, limits, progress);
        let stories = out
            .discoveries
            .iter()
            .map(|d| {
                let mut steps = Vec::new();
                for w in d.path.windows(2) {
                    if let (prev, (Some(a), next)) = (&w[0].1, &w[1]) {
                        steps.push(story_step(self, steps.len() + 1, prev, a, next));
                    }
                }
                Story {
                    property: d.property,
                    shortest: !matches!(out.store, Store::Bitstate { .. }),
                    initial: d
                        .path
                        .first()
                        .map(|(_, s)| self.describe_state(s))
                        .unwrap_or_default(),
                    steps,
                    closing: self.why(d.property, &d.path),
                    cast: d
                        .path
                        .first()
                        .map(|(_, s)| cast_of(self, s))
                        .unwrap_or_default(),
                }
            })
            .collect();
        Told {
            complete: out.complete,
            stopped: out.stopped,
            stats: out.stats,
            stories,
            store: out.store,
            collision_bound: out.collision_bound,
        }
    }

    fn serve(self: Box<Self>, addr: SocketAddr) {
        drop((*self).checker().serve(addr));
    }

    fn checks(&self) -> Vec<Property> {
        self.properties().iter().filter_map(Property::of).collect()
    }

    fn depths(&self, limits: Limits) -> Vec<Depths> {
        bfs(self, limits, &mut |_| {})
            .discoveries
            .iter()
            .map(|d| {
                let bfs = d.path.len().saturating_sub(1);
                Depths {
                    property: d.property,
                    bfs,
                    iterative_deepening: iterative_deepening(self, d.property, bfs + 1),
                }
            })
            .collect()
    }

    fn cast(&self) -> Cast {
        self.init_states()
            .first()
            .map(|s| cast_of(self, s))
            .unwrap_or_default()
    }
}
