use super::shrink::{units, Replay};
use super::*;
use crate::schedule::Realises;

#[derive(Clone, Debug, PartialEq)]
struct NoOwn;

impl FamilyAction for NoOwn {
    fn name(&self) -> &'static str {
        "none"
    }
    fn realises(&self) -> Realises {
        Realises::Beyond
    }
    fn target(&self) -> Target {
        Target::Primary
    }
}

const SHAPE: Shape = Shape {
    duration_ms: 60_000,
    ttl_ms: 500,
    work_ms: 60,
    clients: 3,
};

/// A family whose servers take no fault.
fn no_server(_: Fault, _: u32, _: u64) -> Option<Vec<(u64, Action<NoOwn>)>> {
    None
}

/// What a client step realises (the tests' steps are all client faults).
fn client_fault(a: &Action<NoOwn>) -> Vec<Fault> {
    match a {
        Action::Client { fault, .. } => vec![*fault],
        _ => Vec::new(),
    }
}

fn ms_of(s: &Step<NoOwn>) -> u64 {
    match s.action {
        Action::Client { ms, .. } => ms,
        _ => 0,
    }
}

fn at_of(s: &Step<NoOwn>) -> u64 {
    match s.when {
        When::At(at) => at,
        When::After { .. } => u64::MAX,
    }
}

#[test]
fn parse_reads_kinds_and_names_what_it_refuses() {
    assert_eq!(RandomNemesis::parse("random").map(|r| r.kinds), Ok(None));
    assert_eq!(
        RandomNemesis::parse("random:pause, crash").map(|r| r.kinds),
        Ok(Some(vec![Fault::Pause, Fault::Crash]))
    );
    assert_eq!(
        RandomNemesis::parse("random:pause,kill,jump").map(|r| r.kinds),
        Ok(Some(vec![Fault::Pause, Fault::Kill, Fault::Jump]))
    );
    assert_eq!(
        RandomNemesis::parse("random:failover").map(|r| r.kinds),
        Ok(Some(vec![Fault::Failover]))
    );
    let e = RandomNemesis::parse("random:lag").unwrap_err();
    assert!(
        e.contains("\"lag\"")
            && e.contains(
                "pause, crash, partition, drop, jump, kill, reaper-dies, failover, restart"
            ),
        "{e}"
    );
    assert!(RandomNemesis::parse("chaos")
        .unwrap_err()
        .contains("\"chaos\""));
    assert!(RandomNemesis::parse("random:").is_err());
}

#[test]
fn kinds_are_those_the_rows_model_knows() {
    let lua = locklab_models::catalog::find("redis-lua").expect("row");
    let r = RandomNemesis::parse("random").expect("parses");
    let none = |_: Fault| false;
    assert_eq!(
        r.kinds_for(lua, &none).ok(),
        Some(vec![Fault::Pause, Fault::Crash])
    );
    let e = RandomNemesis::parse("random:partition")
        .expect("parses")
        .kinds_for(lua, &none)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("no partition fault") && e.contains("knows: pause, crash"),
        "{e}"
    );
    // Server faults: only where the model knows them and the servers take them.
    let redlock = locklab_models::catalog::find("redlock").expect("row");
    let jump_only = |f: Fault| f == Fault::Jump;
    assert_eq!(
        r.kinds_for(redlock, &jump_only).ok(),
        Some(vec![Fault::Pause, Fault::Partition, Fault::Jump])
    );
    let e = RandomNemesis::parse("random:jump")
        .expect("parses")
        .kinds_for(redlock, &|_| false)
        .unwrap_err()
        .to_string();
    assert!(e.contains("servers cannot take a jump"), "{e}");
}

/// A server kind draws the family's step, its count of the kind growing, and the
/// model's budget counts it as what the family says it realises.
#[test]
fn server_faults_are_the_familys_steps_and_count_in_the_models_budget() {
    let server = |kind: Fault, nth: u32, pick: u64| {
        (kind == Fault::Jump).then(|| {
            vec![(
                0,
                Action::Clock {
                    target: Target::Node(usize::try_from(pick % 5).unwrap_or(0)),
                    offset: format!("+{}", 15 * (nth + 1)),
                },
            )]
        })
    };
    let steps: Vec<Step<NoOwn>> = generate(&[Fault::Pause, Fault::Jump], 3, SHAPE, &server);
    let offsets: Vec<u32> = steps
        .iter()
        .filter_map(|s| match &s.action {
            Action::Clock { offset, .. } => offset.trim_start_matches('+').parse().ok(),
            _ => None,
        })
        .collect();
    assert!(offsets.len() > 1, "{steps:?}");
    assert!(offsets.windows(2).all(|w| w[0] < w[1]), "{offsets:?}");
    let realised = |a: &Action<NoOwn>| match a {
        Action::Clock { .. } => vec![Fault::Jump],
        other => client_fault(other),
    };
    let budget = model_faults(&steps, &realised);
    assert!(
        budget.contains("jump=") && budget.contains("pause="),
        "{budget}"
    );
    assert_eq!(jump_seconds(Duration::from_millis(10_000)), 15);
    assert_eq!(jump_seconds(Duration::from_millis(500)), 1);
}

#[test]
fn one_seed_one_schedule_inside_the_run_with_room_after_the_last_fault() {
    let kinds = [Fault::Pause, Fault::Crash];
    let a: Vec<Step<NoOwn>> = generate(&kinds, 7, SHAPE, &no_server);
    assert_eq!(a, generate::<NoOwn>(&kinds, 7, SHAPE, &no_server));
    assert_ne!(a, generate::<NoOwn>(&kinds, 8, SHAPE, &no_server));
    assert!(a.len() >= 20, "{} faults in 60 s", a.len());
    let crashes = a
        .iter()
        .filter(|s| {
            matches!(
                s.action,
                Action::Client {
                    fault: Fault::Crash,
                    ..
                }
            )
        })
        .count();
    assert!(crashes <= 2, "{crashes} crashes for 3 clients");
    for w in a.windows(2) {
        assert!(
            at_of(&w[0]) + ms_of(&w[0]) < at_of(&w[1]),
            "overlapping: {w:?}"
        );
    }
    let last = a.last().expect("faults");
    assert!(at_of(last) + ms_of(last) + SHAPE.ttl_ms <= SHAPE.duration_ms);
    // A short run gets shorter pauses, never one that runs past its end.
    for seed in 0..20 {
        let tight = Shape {
            duration_ms: 6_000,
            ttl_ms: 2_000,
            ..SHAPE
        };
        let s: Vec<Step<NoOwn>> = generate(&[Fault::Pause], seed, tight, &no_server);
        assert!(!s.is_empty(), "seed {seed}");
        assert!(
            s.iter().all(|x| at_of(x) + ms_of(x) + 2_000 <= 6_000),
            "{s:?}"
        );
    }
    // Some pauses fit in a lease and some run far past it.
    let pauses: Vec<u64> = a.iter().map(ms_of).filter(|m| *m > 0).collect();
    assert!(
        pauses.iter().any(|m| *m < 500) && pauses.iter().any(|m| *m > 1000),
        "{pauses:?}"
    );
    assert!(
        model_faults(&a, &client_fault).starts_with("pause=")
            || model_faults(&a, &client_fault).starts_with("crash=")
    );
    assert_eq!(model_faults::<NoOwn>(&[], &client_fault), "none");
}

/// Past the model's cap the budget stops growing, and the run says its model is
/// bounded below what it did.
#[test]
fn a_schedule_past_the_cap_is_held_against_a_bounded_model_and_says_so() {
    let few: Vec<Step<NoOwn>> = (0..8).map(|i| pause(i * 1_000, 100)).collect();
    assert_eq!(model_faults(&few, &client_fault), "pause=8");
    assert_eq!(model_cap(&few, &client_fault), None);
    let many: Vec<Step<NoOwn>> = (0..12).map(|i| pause(i * 1_000, 100)).collect();
    assert_eq!(model_faults(&many, &client_fault), "pause=8");
    let why = model_cap(&many, &client_fault).expect("bounded");
    assert!(
        why.contains("at most 8") && why.contains("12 pause"),
        "{why}"
    );
}

fn pause(at: u64, ms: u64) -> Step<NoOwn> {
    Step {
        when: When::At(at),
        action: Action::client(Fault::Pause, Target::AnyClient, ms),
    }
}

#[test]
fn the_shrinker_keeps_only_what_breaks_and_only_what_it_saw_break() {
    // A stand-in for the servers: a schedule "breaks" when it holds a pause of more
    // than 700 ms (the lease, say, and some).
    let taken = vec![
        pause(3_000, 300),
        pause(5_000, 1_800),
        pause(8_000, 200),
        pause(9_000, 900),
    ];
    let wanted = vec!["no foreign release".to_string()];
    let mut calls = 0;
    let mut replay = |steps: &[Step<NoOwn>], _duration: u64, t: u32| {
        calls += 1;
        let broke = steps.iter().any(|s| ms_of(s) > 700);
        Ok((
            if broke { wanted.clone() } else { Vec::new() },
            40 + u64::from(t),
        ))
    };
    let s = shrink(taken.clone(), taken, &wanted, 500, 40, &mut replay).expect("shrinks");
    assert!(s.reproduced);
    assert_eq!(s.plan.len(), 1, "{:?}", s.plan);
    // Halved while it still broke: 1800 → 900; 450 would not.
    assert_eq!(s.plan[0], "at 0.50 s: client-pause any client for 900 ms");
    assert_eq!(s.violated, wanted);
    assert_eq!(s.from_faults, 4);
    assert_eq!(s.replays, calls);
    assert!(s.replays <= 40);
    assert_eq!(s.duration_ms, 500 + 900 + 1_000 + 1_000);
}

#[test]
fn a_violation_that_never_comes_back_is_not_shrunk() {
    let taken = vec![pause(3_000, 1_800)];
    let mut replay = |_: &[Step<NoOwn>], _: u64, _: u32| Ok((Vec::new(), 1));
    let s = shrink(
        taken.clone(),
        taken,
        &["mutual exclusion".into()],
        500,
        6,
        &mut replay,
    )
    .expect("runs");
    assert!(!s.reproduced);
    assert_eq!(s.seed, None);
    assert_eq!(
        s.replays, 2,
        "the schedule itself, twice; the whole is the same"
    );
}

/// Two holders at once, after a client pause (requested, then taken by c0), a skipped
/// pause and a server clock step; a server step after the overlap is not counted.
const BROKEN: &str = r#"{"format":"locklab-history","version":1,"protocol":"t","topology":"t","endpoints":["n0"],"nemesis":[],"tools":{}}
{"process":"nemesis","op":"nemesis","phase":"info","time":1000000,"value":{"fault":"client-pause","target":"any client","ms":900}}
{"process":"nemesis","op":"nemesis","phase":"info","time":1100000,"value":{"fault":"client-pause","target":"c0","ms":900}}
{"process":"nemesis","op":"nemesis","phase":"info","time":1200000,"value":{"fault":"skipped","target":"client-pause c1"}}
{"process":0,"op":"enter","phase":"ok","time":1300000,"key":"lock"}
{"process":"nemesis","op":"nemesis","phase":"info","time":1400000,"value":{"fault":"clock","target":"node0"}}
{"process":1,"op":"enter","phase":"ok","time":1500000,"key":"lock"}
{"process":1,"op":"leave","phase":"ok","time":1600000,"key":"lock"}
{"process":0,"op":"leave","phase":"ok","time":1700000,"key":"lock"}
{"process":"nemesis","op":"nemesis","phase":"info","time":9000000,"value":{"fault":"clock","target":"node0"}}
"#;

/// `text` read as a history, and its checks.
fn checked(
    text: &str,
) -> (
    locklab_traces::format::History,
    locklab_traces::check::Report,
) {
    let history = locklab_traces::reader::parse("t.jsonl", text).expect("history");
    let report =
        locklab_traces::check::check_history(&history, &locklab_traces::check::Options::default())
            .expect("checks");
    (history, report)
}

/// Two holders at once after a clock step that came before either entered: the step
/// is still in force when the overlap begins.
const JUMPED_BEFORE: &str = r#"{"format":"locklab-history","version":1,"protocol":"t","topology":"t","endpoints":["n0"],"nemesis":[],"tools":{}}
{"process":"nemesis","op":"nemesis","phase":"info","time":1000000,"value":{"fault":"clock","target":"node0"}}
{"process":0,"op":"enter","phase":"ok","time":1300000,"key":"lock"}
{"process":1,"op":"enter","phase":"ok","time":1500000,"key":"lock"}
{"process":1,"op":"leave","phase":"ok","time":1600000,"key":"lock"}
{"process":0,"op":"leave","phase":"ok","time":1700000,"key":"lock"}
"#;

#[test]
fn a_server_fault_before_the_violation_is_in_force_at_it() {
    let (history, report) = checked(JUMPED_BEFORE);
    let steps: Vec<Step<NoOwn>> = vec![Step {
        when: When::At(1),
        action: Action::Clock {
            target: Target::Primary,
            offset: "+3".into(),
        },
    }];
    let (active, taken) = at_violation(&history, &report, &FaultNames::of(&steps));
    assert_eq!(taken, Some(1));
    assert_eq!(active.len(), 1, "{active:?}");
    assert!(active[0].starts_with("clock node0"), "{active:?}");
}

#[test]
fn the_faults_at_a_violation_are_named_by_the_schedules_own_steps() {
    let (history, report) = checked(BROKEN);
    let steps: Vec<Step<NoOwn>> = vec![
        pause(0, 900),
        pause(1, 900),
        Step {
            when: When::At(2),
            action: Action::Clock {
                target: Target::Primary,
                offset: "+3".into(),
            },
        },
    ];
    let (active, taken) = at_violation(&history, &report, &FaultNames::of(&steps));
    // The pause requested, then taken; the skipped one counted as passed; the clock.
    assert_eq!(taken, Some(3), "{active:?}");
    assert_eq!(active.len(), 2, "{active:?}");
    assert!(active[0].starts_with("client-pause c0"), "{active:?}");
    assert!(active[1].starts_with("clock node0"), "{active:?}");
    // Names the schedule does not have are not faults of it.
    let (none, taken) = at_violation(&history, &report, &FaultNames::default());
    assert!(none.is_empty());
    assert_eq!(taken, Some(0));
}

/// The reaper stops for good, so a schedule stops it once however long the run.
#[test]
fn the_reaper_is_stopped_at_most_once() {
    let server = |kind: Fault, _: u32, _: u64| {
        (kind == Fault::ReaperDies).then(|| vec![(0, Action::Family(NoOwn))])
    };
    for seed in 0..20 {
        let steps: Vec<Step<NoOwn>> =
            generate(&[Fault::Pause, Fault::ReaperDies], seed, SHAPE, &server);
        let stops = steps
            .iter()
            .filter(|s| matches!(s.action, Action::Family(_)))
            .count();
        assert!(stops <= 1, "seed {seed}: {steps:?}");
        assert!(steps.len() > 2, "seed {seed}: the pauses go on: {steps:?}");
    }
}

/// A kind the servers run out of (a failover per replica) is drawn until they take no
/// more, and the other faults go on after it.
#[test]
fn a_spent_server_kind_is_drawn_no_more_and_the_rest_go_on() {
    let server = |kind: Fault, nth: u32, _: u64| {
        (kind == Fault::Failover && nth < 1).then(|| vec![(0, Action::Kill(Target::Primary))])
    };
    for seed in 0..20 {
        let steps: Vec<Step<NoOwn>> =
            generate(&[Fault::Pause, Fault::Failover], seed, SHAPE, &server);
        let kills = steps
            .iter()
            .filter(|s| matches!(s.action, Action::Kill(_)))
            .count();
        assert!(kills <= 1, "seed {seed}: {steps:?}");
        assert!(steps.len() > 2, "seed {seed}: the pauses go on: {steps:?}");
    }
}

/// A restart is a kill and a start a lease and a half later, drawn together; the next
/// fault comes after both.
#[test]
fn a_restart_is_a_kill_then_a_start_and_the_next_fault_waits_for_both() {
    let server = |kind: Fault, _: u32, _: u64| {
        (kind == Fault::Restart).then(|| {
            vec![
                (0, Action::Kill(Target::Node(2))),
                (
                    1500,
                    Action::Restart {
                        target: Target::Node(2),
                        keep_data: false,
                    },
                ),
            ]
        })
    };
    for seed in 0..10 {
        let steps: Vec<Step<NoOwn>> =
            generate(&[Fault::Pause, Fault::Restart], seed, SHAPE, &server);
        for (i, s) in steps.iter().enumerate() {
            if matches!(s.action, Action::Kill(_)) {
                let next = steps.get(i + 1).expect("the restart follows its kill");
                assert!(matches!(next.action, Action::Restart { .. }), "{steps:?}");
                assert_eq!(at_of(next), at_of(s) + 1500);
                if let Some(after) = steps.get(i + 2) {
                    assert!(at_of(after) > at_of(next), "{steps:?}");
                }
            }
        }
    }
}

/// The shrinker never keeps a restart whose kill it dropped: alone, it would restart a
/// running node at once, outside a delayed-restart row's model.
#[test]
fn the_shrinker_drops_a_restart_with_its_kill() {
    let kill = Step {
        when: When::At(1000),
        action: Action::Kill(Target::Node(1)),
    };
    let restart = Step {
        when: When::At(2500),
        action: Action::Restart {
            target: Target::Node(1),
            keep_data: false,
        },
    };
    // The pause first: the shrinker's first cut takes it with the kill, leaving the
    // restart alone.
    let all: Vec<Step<NoOwn>> = vec![pause(500, 800), kill, restart];
    let mut seen: Vec<Vec<Step<NoOwn>>> = Vec::new();
    let mut replay = breaks_with_a_client_fault(&mut seen);
    let wanted = vec!["mutual exclusion".to_string()];
    let shrunk = shrink(all.clone(), all, &wanted, 1000, 20, &mut replay).expect("shrinks");
    assert!(shrunk.reproduced);
    drop(replay);
    for steps in &seen {
        let restarts = steps
            .iter()
            .filter(|s| matches!(s.action, Action::Restart { .. }))
            .count();
        let kills = steps
            .iter()
            .filter(|s| matches!(s.action, Action::Kill(_)))
            .count();
        assert!(
            restarts <= kills,
            "a restart replayed without its kill: {steps:?}"
        );
    }
}

/// A family's own cut and heal, for the shrinker's units.
#[derive(Clone, Debug, PartialEq)]
enum Cuts {
    Cut,
    Heal,
}

impl FamilyAction for Cuts {
    fn name(&self) -> &'static str {
        match self {
            Cuts::Cut => "cut",
            Cuts::Heal => "heal",
        }
    }
    fn realises(&self) -> Realises {
        match self {
            Cuts::Cut => Realises::Faults(&[Fault::Split, Fault::Failover]),
            Cuts::Heal => Realises::Heal,
        }
    }
    fn target(&self) -> Target {
        Target::Primary
    }
}

#[test]
fn the_shrinker_drops_a_heal_and_a_co_step_with_their_cut() {
    let at = |ms: u64, action: Action<Cuts>| Step {
        when: When::At(ms),
        action,
    };
    let all = vec![
        at(500, Action::client(Fault::Pause, Target::AnyClient, 800)),
        at(1000, Action::Family(Cuts::Cut)),
        at(1000, Action::Partition(Target::Primary)),
        at(9000, Action::Family(Cuts::Heal)),
    ];
    assert_eq!(
        units(&all).len(),
        2,
        "the pause; the cut with what follows it"
    );
    let mut seen: Vec<Vec<Step<Cuts>>> = Vec::new();
    let mut replay = breaks_with_a_client_fault(&mut seen);
    let wanted = vec!["mutual exclusion".to_string()];
    let shrunk = shrink(all.clone(), all.clone(), &wanted, 1000, 20, &mut replay).expect("shrinks");
    assert!(shrunk.reproduced);
    assert_eq!(shrunk.plan.len(), 1, "{:?}", shrunk.plan);
    drop(replay);
    for steps in &seen {
        let cut = steps.iter().any(|s| s.action == Action::Family(Cuts::Cut));
        let rest = steps.iter().any(|s| {
            matches!(s.action, Action::Partition(_)) || s.action == Action::Family(Cuts::Heal)
        });
        assert!(
            cut || !rest,
            "a heal or co-step replayed without its cut: {steps:?}"
        );
    }
    // The cut is the model's split and the failover Sentinel then makes.
    let realised = |a: &Action<Cuts>| match a {
        Action::Family(c) => match c.realises() {
            Realises::Faults(fs) => fs.to_vec(),
            _ => Vec::new(),
        },
        other => client_fault_of(other),
    };
    assert_eq!(model_faults(&all, &realised), "pause=1,split=1,failover=1");
}

fn client_fault_of<A>(a: &Action<A>) -> Vec<Fault> {
    match a {
        Action::Client { fault, .. } => vec![*fault],
        _ => Vec::new(),
    }
}

/// A replay that breaks mutual exclusion whenever its schedule has a client fault (the
/// pause), keeping each schedule it was given in `seen`.
fn breaks_with_a_client_fault<A: FamilyAction>(seen: &mut Vec<Vec<Step<A>>>) -> Box<Replay<'_, A>> {
    Box::new(|steps: &[Step<A>], _: u64, _: u32| {
        seen.push(steps.to_vec());
        let breaks = steps
            .iter()
            .any(|s| matches!(s.action, Action::Client { .. }));
        Ok((
            if breaks {
                vec!["mutual exclusion".to_string()]
            } else {
                Vec::new()
            },
            1,
        ))
    })
}
