//! The real run's lanes, drawn from a recorded history (written here, as a run writes
//! it): commands to their node with the reply, the fault on the nemesis lane, the
//! overlap the checks found, and retries left out.

use locklab_traces::check::{check_history, Options};
use locklab_traces::diagram::run_diagram;
use locklab_traces::reader::parse;

const HISTORY: &str = r#"{"format":"locklab-history","version":1,"protocol":"redis-failover","backend":"redis","topology":"master + replica","endpoints":["master"],"nemesis":[],"tools":{}}
{"process":0,"op":"acquire","phase":"invoke","time":1000000,"key":"lock","lease_ns":30000000000}
{"process":0,"op":"command","phase":"ok","time":1000000,"key":"lock","value":{"node":0,"command":{"set":{"key":"lock","value":"aa","nx":true,"px":30000}},"reply":"ok","return":1200000},"note":"SET lock aa NX PX 30000 -> OK"}
{"process":0,"op":"acquire","phase":"ok","time":1300000,"key":"lock"}
{"process":0,"op":"enter","phase":"ok","time":1400000,"key":"lock"}
{"process":"nemesis","op":"nemesis","phase":"info","time":2000000,"value":{"fault":"failover","target":"replica1","endpoint":0}}
{"process":1,"op":"acquire","phase":"invoke","time":2500000,"key":"lock","lease_ns":30000000000}
{"process":1,"op":"command","phase":"ok","time":2500000,"key":"lock","value":{"node":0,"command":{"set":{"key":"lock","value":"bb","nx":true,"px":30000}},"reply":"nil","return":2600000},"note":"SET lock bb NX PX 30000 -> (nil)"}
{"process":1,"op":"acquire","phase":"fail","time":2700000,"key":"lock","note":"busy"}
{"process":1,"op":"acquire","phase":"invoke","time":3000000,"key":"lock","lease_ns":30000000000}
{"process":1,"op":"command","phase":"ok","time":3000000,"key":"lock","value":{"node":0,"command":{"set":{"key":"lock","value":"<b>","nx":true,"px":30000}},"reply":"ok","return":3100000},"note":"SET lock <b> NX PX 30000 -> OK"}
{"process":1,"op":"acquire","phase":"ok","time":3200000,"key":"lock"}
{"process":1,"op":"enter","phase":"ok","time":3300000,"key":"lock"}
{"process":1,"op":"leave","phase":"ok","time":4000000,"key":"lock"}
{"process":0,"op":"leave","phase":"ok","time":5000000,"key":"lock"}
"#;

#[test]
fn a_run_draws_commands_faults_and_the_overlap() {
    let history = parse("test.jsonl", HISTORY).expect("history");
    let report = check_history(&history, &Options::default()).expect("checks");
    let d = run_diagram(&history, &report);
    let ids: Vec<&str> = d.lanes.iter().map(|l| l.id.as_str()).collect();
    // One lane per server, not per endpoint: the failover moves the endpoint from the
    // old master to the promoted replica, and each SET lands on the server it reached.
    assert_eq!(
        ids,
        [
            "c0",
            "c1",
            "server:master",
            "server:replica1",
            "nemesis",
            "resource"
        ]
    );
    assert_eq!(
        (d.lanes[2].label.as_str(), d.lanes[3].label.as_str()),
        ("master", "replica1")
    );
    assert!(d.why.contains("mutual exclusion"), "{}", d.why);
    let arrows: Vec<_> = d
        .rows
        .iter()
        .flat_map(|r| &r.scene.exchange.arrows)
        .collect();
    assert!(arrows.iter().any(|a| a.from == "c0"
        && a.to == "server:master"
        && a.label == "SET lock aa NX PX 30000"
        && a.reply.as_deref() == Some("OK")));
    assert!(arrows
        .iter()
        .any(|a| a.from == "c1" && a.to == "server:replica1" && a.label.starts_with("SET lock")));
    // The busy try and the failed acquire are counted, not drawn.
    assert!(!arrows.iter().any(|a| a.label.contains(" bb ")));
    assert!(d.hidden >= 2);
    // The failover is drawn as the nemesis promoting the server that has a lane.
    let fault = d.rows.iter().find(|r| r.fault).expect("the failover row");
    let promote = &fault.scene.exchange.arrows[0];
    assert_eq!(
        (promote.from.as_str(), promote.to.as_str()),
        ("nemesis", "server:replica1")
    );
    assert!(promote.label.contains("promoted"), "{}", promote.label);
    // Both inside after c1 enters: the row is shaded as an overlap.
    let both = d
        .rows
        .iter()
        .find(|r| {
            r.scene
                .lanes
                .iter()
                .filter(|l| l.critical && l.lane.starts_with('c'))
                .count()
                == 2
        })
        .expect("an overlap row");
    assert!(
        both.title.starts_with("✗"),
        "the checks name it: {}",
        both.title
    );
    // c0 believes its lease until 1.3 ms + 30 s.
    let c0 = both
        .scene
        .lanes
        .iter()
        .find(|l| l.lane == "c0")
        .expect("c0");
    assert_eq!(c0.lease_until, Some(30_001));

    let svg = locklab_traces::diagram::svg::sequence(
        &d.lanes,
        &d.rows
            .iter()
            .enumerate()
            .map(|(i, r)| locklab_traces::diagram::svg::Row {
                step: i,
                label: i.to_string(),
                time: None,
                title: &r.title,
                fault: r.fault,
                gap: None,
                scene: &r.scene,
            })
            .collect::<Vec<_>>(),
    );
    assert!(svg.contains("SET lock &lt;b&gt; NX PX 30000") && !svg.contains("<b>"));
    assert!(svg.contains("row overlap"));
}

/// A client's partition is drawn as a cut on its lane from the `client-partition` to the
/// `client-heal`.
#[test]
fn a_partitioned_client_is_cut_off_until_it_heals() {
    let history = parse(
        "cut.jsonl",
        r#"{"format":"locklab-history","version":1,"protocol":"etcd-lease-partition","backend":"etcd","topology":"t","nemesis":[],"tools":{}}
{"process":0,"op":"acquire","phase":"invoke","time":1000000,"key":"lock","lease_ns":2000000000}
{"process":0,"op":"acquire","phase":"ok","time":1100000,"key":"lock"}
{"process":0,"op":"enter","phase":"ok","time":1200000,"key":"lock"}
{"process":"nemesis","op":"nemesis","phase":"info","time":2000000,"value":{"fault":"client-partition","target":"c0","ms":3000}}
{"process":0,"op":"leave","phase":"ok","time":3000000,"key":"lock"}
{"process":"nemesis","op":"nemesis","phase":"info","time":4000000,"value":{"fault":"client-heal","target":"c0"}}
{"process":0,"op":"release","phase":"invoke","time":5000000,"key":"lock"}
{"process":0,"op":"release","phase":"ok","time":5100000,"key":"lock"}
"#,
    )
    .expect("history");
    let report = check_history(&history, &Options::default()).expect("checks");
    let d = run_diagram(&history, &report);
    let cut_at = |ms: u64| {
        d.rows
            .iter()
            .filter(|r| r.at == ms * 1_000_000)
            .flat_map(|r| &r.scene.lanes)
            .any(|l| l.lane == "c0" && l.cut)
    };
    assert!(
        !cut_at(1) && cut_at(2) && cut_at(3),
        "cut from the partition on"
    );
    assert!(!cut_at(4) && !cut_at(5), "healed");
}
