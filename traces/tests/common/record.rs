//! Simulated operations as a locklab history, the checks' verdicts on it, and the
//! history as text for a failure message.

use locklab_models::spec::{
    LockInput, LockOutput, LockSpec, RegisterInput, RegisterOutput, RegisterSpec, Spec,
};
use locklab_traces::check::{check_history, Options, Property, Report, Selection, Verdict};
use locklab_traces::format::{
    Backend, Event, Header, History, OpKind, Phase, Process, ResourceSpec,
};

use super::Sim;

/// A history of `events` with a header of the given resource.
pub fn history(events: Vec<Event>, resource: Option<ResourceSpec>) -> History {
    let mut header = Header::new("prop", Backend::Simulated);
    header.resource = resource;
    history_with(header, events)
}

/// A history of `events` under `header`.
pub fn history_with(header: Header, events: Vec<Event>) -> History {
    History::of("prop", header, events)
}

/// Events for simulated operations, sorted by time. `encode` fills the invocation and
/// the completion of an answered operation and says which phase the answer is; a
/// refusal is a `fail`, an answer the client never got an `info`.
pub fn events<S: Spec>(
    ops: &[Sim<S>],
    mut encode: impl FnMut(&Sim<S>, &mut Event, &mut Event) -> Phase,
) -> Vec<Event> {
    let mut out = Vec::new();
    for op in ops {
        let process = Process::Client(op.client);
        let mut inv = Event::new(process, OpKind::Read, Phase::Invoke, op.call);
        let mut done = Event::new(process, OpKind::Read, Phase::Ok, 0);
        let phase = encode(op, &mut inv, &mut done);
        let kind = inv.op;
        out.push(inv);
        let Some(r) = op.ret else { continue };
        if op.refused {
            let mut fail = Event::new(process, kind, Phase::Fail, r);
            fail.key = done.key;
            out.push(fail);
        } else if op.output.is_some() {
            done.op = kind;
            done.phase = phase;
            done.time = r;
            out.push(done);
        } else {
            let mut info = Event::new(process, kind, Phase::Info, r);
            info.note = Some("crashed".into());
            out.push(info);
        }
    }
    out.sort_by_key(|e| (e.time, e.phase != Phase::Invoke));
    out
}

/// Fills a register operation's events; the phase of its answer.
pub fn encode_register(
    input: &RegisterInput,
    output: &Option<RegisterOutput>,
    inv: &mut Event,
    done: &mut Event,
) -> Phase {
    match input {
        RegisterInput::Read => inv.op = OpKind::Read,
        RegisterInput::Write(v) => {
            inv.op = OpKind::Write;
            inv.value = Some(serde_json::Value::from(*v).into());
        }
        RegisterInput::Cas { from, to } => {
            inv.op = OpKind::Cas;
            inv.value = Some(serde_json::json!([from, to]).into());
        }
    }
    match output {
        Some(RegisterOutput::Value(v)) => {
            done.value = Some(v.map_or(serde_json::Value::Null, Into::into).into());
            Phase::Ok
        }
        Some(RegisterOutput::CasFailed) => Phase::Fail,
        _ => Phase::Ok,
    }
}

pub fn register_events(ops: &[Sim<RegisterSpec>]) -> Vec<Event> {
    events(ops, |op, inv, done| {
        encode_register(&op.input, &op.output, inv, done)
    })
}

/// Fills a lock operation's events (the owner only when it is not the process, as a
/// recorder writes it); the phase of its answer.
pub fn encode_lock(
    client: u32,
    input: &LockInput,
    output: &Option<LockOutput>,
    inv: &mut Event,
    done: &mut Event,
) -> Phase {
    match input {
        LockInput::Acquire { lease, .. } => {
            inv.op = OpKind::Acquire;
            inv.lease_ns = *lease;
        }
        LockInput::Release { .. } => inv.op = OpKind::Release,
        LockInput::Renew { lease, .. } => {
            inv.op = OpKind::Renew;
            inv.lease_ns = Some(*lease);
        }
    }
    let owner = input.owner();
    if owner != client as u64 {
        inv.owner = Some(owner);
    }
    match output {
        Some(LockOutput::Granted(t)) => {
            done.token = *t;
            Phase::Ok
        }
        Some(LockOutput::Busy) | Some(LockOutput::NotHeld) => Phase::Fail,
        _ => Phase::Ok,
    }
}

pub fn lock_events(ops: &[Sim<LockSpec>]) -> Vec<Event> {
    events(ops, |op, inv, done| {
        encode_lock(op.client, &op.input, &op.output, inv, done)
    })
}

pub fn report(h: &History, selection: Selection) -> Report {
    check_history(
        h,
        &Options {
            selection,
            ..Options::default()
        },
    )
    .expect("well-formed")
}

/// Every check the history calls for (`Auto`), with or without a time limit: with one
/// (as `check-history` has by default), the searches take the path that can be
/// abandoned, a slice at a time on a pool of workers; without, the plain one. A limit
/// of a minute never runs out on these histories, so the verdicts must be the same.
pub fn auto_report(h: &History, timed: bool) -> Report {
    check_history(
        h,
        &Options {
            timeout: timed.then_some(std::time::Duration::from_secs(60)),
            ..Options::default()
        },
    )
    .expect("well-formed")
}

pub fn verdict_of(h: &History, selection: Selection) -> Verdict {
    report(h, selection).verdict
}

pub fn verdict(h: &History) -> Verdict {
    report(h, Selection::Auto).verdict
}

/// The worst verdict of the checks not about `exempt` properties.
pub fn worst(report: &Report, exempt: &[Property]) -> Verdict {
    report
        .checks
        .iter()
        .filter(|c| !exempt.contains(&c.property))
        .map(|c| c.verdict)
        .max()
        .unwrap_or(Verdict::Ok)
}

/// The events of a history, one a line, for failure messages.
pub fn show(h: &History) -> String {
    let mut out = String::new();
    for (line, e) in &h.events {
        let mut extra = String::new();
        if let Some(v) = &e.value {
            extra += &format!(" value={v}");
        }
        if let Some(t) = e.token {
            extra += &format!(" token={t}");
        }
        if let Some(o) = e.owner {
            extra += &format!(" owner={o}");
        }
        if let Some(l) = e.lease_ns {
            extra += &format!(" lease={l}");
        }
        if let Some(k) = &e.key {
            extra += &format!(" key={k}");
        }
        out += &format!(
            "{line:>3} t={:>6} {} {:?} {:?}{extra}\n",
            e.time, e.process, e.op, e.phase
        );
    }
    out
}
