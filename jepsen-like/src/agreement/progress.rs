//! A run's progress held against the model's: what the history showed after the fault
//! (granted again, or nobody granted for so many leases while clients kept trying)
//! beside the model's `eventually-free` verdict. A run watches for seconds, so this is
//! agreement *within the observed horizon*, never a proof: a lock the run saw stuck
//! might have come free a minute later, and a run that saw a grant may not have
//! struck where the model's lasso strikes.

use serde::Serialize;

use locklab_models::progress::{Kept, Promise, Verdict};
use locklab_traces::check::liveness::Liveness;
use locklab_traces::check::overtaking::Overtaking;
use locklab_traces::check::report::{Finding, Verdict as CheckVerdict};

use super::Answer;

/// A model progress verdict (`eventually-free`, `fifo`), as a comparison reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ModelSays {
    /// The lock is granted again after any fault.
    Holds,
    /// A fault can wedge it for ever (a lasso).
    Violated,
    /// No verdict (a bound, or a model that does not judge progress).
    Unknown,
}

/// The run's progress beside the model's.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct ProgressAgreement {
    /// The model's `eventually-free` verdict.
    pub model: ModelSays,
    /// Whether the run saw the lock stuck after the fault, for as long as it watched.
    pub observed_stuck: bool,
    /// Whether the run showed what the model says, within the observed horizon: both
    /// stuck, or both free again. Unknown where the model says the lock may wedge and
    /// the run saw it granted (one schedule need not strike where the lasso does), or
    /// where the model has no verdict.
    pub agrees: Answer,
    /// Whether the lock was at least as live as the model says the protocol is: no
    /// only where the model says it is eventually free and the run saw it stuck.
    pub at_least_as_live: Answer,
    /// One sentence.
    pub summary: String,
}

/// `observed` beside the model's verdicts (`None`: the model does not judge progress).
pub fn compare(model: Option<&[Verdict]>, observed: &Liveness) -> ProgressAgreement {
    let kept = model.and_then(|m| {
        m.iter()
            .find(|v| v.promise == Promise::EventuallyFree)
            .map(|v| &v.kept)
    });
    let stuck = observed.stuck;
    let (word, agrees, live) = match kept {
        Some(Kept::Holds) if stuck => (ModelSays::Holds, Answer::No, Answer::No),
        Some(Kept::Holds) => (ModelSays::Holds, Answer::Yes, Answer::Yes),
        Some(Kept::Violated { .. }) if stuck => (ModelSays::Violated, Answer::Yes, Answer::Yes),
        Some(Kept::Violated { .. }) => (ModelSays::Violated, Answer::Unknown, Answer::Yes),
        Some(Kept::Unknown { .. }) | None => (ModelSays::Unknown, Answer::Unknown, Answer::Unknown),
    };
    // The observation is the run's own line ("after the fault"); this one says how it
    // stands against the model.
    let summary = match (word, stuck) {
        (ModelSays::Holds, true) => "the model says the lock is granted again after any fault; the run saw it stuck — within the run's horizon, not a proof".to_string(),
        (ModelSays::Holds, false) => "granted again after the fault, as the model says".to_string(),
        (ModelSays::Violated, true) => "stuck after the fault, as the model's lasso says it can stay for ever — agreement within the run's horizon".to_string(),
        (ModelSays::Violated, false) => "the model says a fault can wedge this lock; this run's fault did not".to_string(),
        (ModelSays::Unknown, _) => "the model has no progress verdict here".to_string(),
    };
    ProgressAgreement {
        model: word,
        observed_stuck: stuck,
        agrees,
        at_least_as_live: live,
        summary,
    }
}

/// The run's longest wait, counted in grants to others, beside the model's
/// `starvation-free` verdict (judged with clients that lock again and again).
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct StarvationAgreement {
    /// The model's `starvation-free` verdict.
    pub model: ModelSays,
    /// Whether a client waited through more grants of others than a lock granting in
    /// request order allows (one for each other client).
    pub observed_past_a_queue: bool,
    /// Whether the run showed what the model says, within the run: a client passed
    /// over more often than a queue allows where the model says one may starve; no
    /// wait past a queue's where it says none does. Unknown where the model says a
    /// client may starve and this run's clients took turns, where a lock the model
    /// calls starvation-free passed a waiter over often (no proof of for ever: the
    /// grant order, not this, says whether it kept the queue), or where the model has
    /// no verdict.
    pub agrees: Answer,
    /// The run's longest wait, as the history shows it.
    pub observed: String,
    /// One sentence.
    pub summary: String,
}

/// `observed` beside the model's `starvation-free` verdict (`None`: the model judges
/// no progress).
pub fn compare_starvation(model: Option<&[Verdict]>, observed: &Overtaking) -> StarvationAgreement {
    let kept = model.and_then(|m| {
        m.iter()
            .find(|v| v.promise == Promise::StarvationFree)
            .map(|v| &v.kept)
    });
    let past = observed.past_a_queue();
    let (who, n, queue) = (
        &observed.client,
        observed.grants_to_others,
        observed.queue_allows(),
    );
    let (word, agrees, summary) = match kept {
        Some(Kept::Violated { .. }) if past => (
            ModelSays::Violated,
            Answer::Yes,
            format!(
                "{who} waited through {n} grants to others, more than the {queue} a queue allows, \
                 as the model's lasso says one client may lose every race for ever — within the \
                 run, not a proof"
            ),
        ),
        Some(Kept::Violated { .. }) => (
            ModelSays::Violated,
            Answer::Unknown,
            format!(
                "the model says one client may lose every race; in this run nobody waited \
                 through more grants to others than a queue allows ({queue})"
            ),
        ),
        Some(Kept::Holds) if past => (
            ModelSays::Holds,
            Answer::Unknown,
            format!(
                "the model says nobody starves; {who} waited through {n} grants to others, more \
                 than a queue allows ({queue}) — not a proof of for ever; the grant order says \
                 whether the queue was kept"
            ),
        ),
        Some(Kept::Holds) => (
            ModelSays::Holds,
            Answer::Yes,
            format!(
                "nobody waited through more grants to others than a queue allows ({queue}), as \
                 the model's starvation-free says — within the run, not a proof"
            ),
        ),
        Some(Kept::Unknown { .. }) | None => (
            ModelSays::Unknown,
            Answer::Unknown,
            "the model has no starvation verdict here".to_string(),
        ),
    };
    StarvationAgreement {
        model: word,
        observed_past_a_queue: past,
        agrees,
        observed: observed.summary.clone(),
        summary,
    }
}

/// The order of a run's grants beside the model's `fifo` verdict.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct OrderAgreement {
    /// The model's `fifo` verdict.
    pub model: ModelSays,
    /// Whether the run proved a grant over an earlier request still waiting.
    pub observed_out_of_order: bool,
    /// Whether the run showed what the model says: in order where the model says FIFO
    /// holds (within the run), a grant out of order where it says it breaks. Unknown
    /// where the model says it can break and this run's grants happened to keep the
    /// order, or where the model does not judge FIFO.
    pub agrees: Answer,
    /// The run's grants, as the history finding counts them.
    pub observed: String,
    /// One sentence.
    pub summary: String,
}

/// The history's request-order finding beside the model's verdicts (`None`: the model
/// judges no progress).
pub fn compare_order(model: Option<&[Verdict]>, finding: &Finding) -> OrderAgreement {
    let kept = model.and_then(|m| {
        m.iter()
            .find(|v| v.promise == Promise::Fifo)
            .map(|v| &v.kept)
    });
    let broken = finding.verdict == CheckVerdict::Violation;
    let (word, agrees, summary) = match kept {
        Some(Kept::Holds) if broken => (
            ModelSays::Holds,
            Answer::No,
            "the model says grants follow request order; the run shows one that did not",
        ),
        Some(Kept::Holds) => (
            ModelSays::Holds,
            Answer::Yes,
            "grants followed request order, as the model says — within the run, not a proof",
        ),
        Some(Kept::Violated { .. }) if broken => (
            ModelSays::Violated,
            Answer::Yes,
            "a grant passed over an earlier request, as the model's story says it can",
        ),
        Some(Kept::Violated { .. }) => (
            ModelSays::Violated,
            Answer::Unknown,
            "the model says a grant can pass over an earlier request; this run's did not",
        ),
        Some(Kept::Unknown { .. }) | None => (
            ModelSays::Unknown,
            Answer::Unknown,
            "the model does not judge the order of grants here",
        ),
    };
    OrderAgreement {
        model: word,
        observed_out_of_order: broken,
        agrees,
        observed: finding.summary.clone(),
        summary: summary.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn observed(stuck: bool) -> Liveness {
        Liveness {
            crashed: "c0".into(),
            fault: "client-crash".into(),
            crashed_at_ns: 0,
            lease_ns: Some(1_000_000_000),
            tries: 40,
            trying_clients: 1,
            watched_ns: 10_000_000_000,
            granted_after_ns: (!stuck).then_some(1_200_000_000),
            quiet_ns: if stuck { 10_000_000_000 } else { 0 },
            stuck,
            summary: "observed".into(),
        }
    }

    fn verdicts(kept: Kept) -> Vec<Verdict> {
        vec![Verdict {
            promise: Promise::EventuallyFree,
            kept,
            repeating: false,
            graph: None,
        }]
    }

    fn waited(grants_to_others: u64) -> Overtaking {
        Overtaking {
            client: "c1".into(),
            grants_to_others,
            asked_ns: 1_000_000_000,
            granted: true,
            clients: 3,
            summary: "observed".into(),
        }
    }

    fn starving(kept: Kept) -> Vec<Verdict> {
        vec![Verdict {
            promise: Promise::StarvationFree,
            kept,
            repeating: true,
            graph: None,
        }]
    }

    #[test]
    fn a_long_wait_agrees_with_a_starving_model_and_never_refutes_a_fair_one() {
        let model = locklab_models::catalog::progress(
            "redis-lua",
            &locklab_models::catalog::Overrides::default(),
            locklab_models::check::Limits::default(),
        )
        .expect("row")
        .expect("stated");
        let a = compare_starvation(Some(&model), &waited(40));
        assert_eq!((a.model, a.agrees), (ModelSays::Violated, Answer::Yes));
        assert!(
            a.summary.contains("more than the 2 a queue allows"),
            "{}",
            a.summary
        );
        let a = compare_starvation(Some(&model), &waited(2));
        assert_eq!((a.model, a.agrees), (ModelSays::Violated, Answer::Unknown));
        let fair = starving(Kept::Holds);
        assert_eq!(
            compare_starvation(Some(&fair), &waited(2)).agrees,
            Answer::Yes
        );
        let a = compare_starvation(Some(&fair), &waited(9));
        assert_eq!(a.agrees, Answer::Unknown, "a long wait proves no for ever");
        assert_eq!(
            compare_starvation(None, &waited(9)).model,
            ModelSays::Unknown
        );
    }

    #[test]
    fn a_stuck_run_disagrees_only_with_a_model_that_says_the_lock_comes_free() {
        let holds = verdicts(Kept::Holds);
        let a = compare(Some(&holds), &observed(true));
        assert_eq!((a.agrees, a.at_least_as_live), (Answer::No, Answer::No));
        assert!(a.summary.contains("not a proof"), "{}", a.summary);
        let a = compare(Some(&holds), &observed(false));
        assert_eq!((a.agrees, a.at_least_as_live), (Answer::Yes, Answer::Yes));
        let unknown = verdicts(Kept::Unknown {
            why: "bound".into(),
        });
        let a = compare(Some(&unknown), &observed(true));
        assert_eq!(
            (a.agrees, a.at_least_as_live),
            (Answer::Unknown, Answer::Unknown)
        );
        let a = compare(None, &observed(true));
        assert_eq!(a.model, ModelSays::Unknown);
    }

    #[test]
    fn a_lock_the_model_says_can_wedge_agrees_when_stuck_and_is_live_enough_when_not() {
        let wedged = locklab_models::catalog::progress(
            "redis-setnx-no-ttl",
            &locklab_models::catalog::Overrides::default(),
            locklab_models::check::Limits::default(),
        )
        .expect("row")
        .expect("stated");
        let a = compare(Some(&wedged), &observed(true));
        assert_eq!((a.agrees, a.at_least_as_live), (Answer::Yes, Answer::Yes));
        let a = compare(Some(&wedged), &observed(false));
        assert_eq!(
            (a.agrees, a.at_least_as_live),
            (Answer::Unknown, Answer::Yes)
        );
    }
}
