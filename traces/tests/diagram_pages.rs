//! The model's diagram pages: what the redis-failover page shows (the lock on the
//! master, the replica without it, the promotion, the second grant, the overlap),
//! that every text is escaped, and that a scenario that holds still gets a page.

use locklab_models::catalog::{cast, check, find, Overrides, Report};
use locklab_models::check::Limits;
use locklab_models::diagram::{Lane, LaneKind, Scene};
use locklab_traces::diagram::model_page;
use locklab_traces::diagram::svg::{sequence, Row};

fn report(id: &str) -> Report {
    check(id, &Overrides::default(), Limits::default(), &mut |_| {}).expect("catalog id")
}

fn page(id: &str) -> String {
    let s = find(id).expect("catalog id");
    let c = cast(id, &Overrides::default()).expect("cast");
    model_page(s, &report(id), &c, None)
}

/// The `<g class="row …" data-step="k">` element of step `k`, up to the next row.
fn row(html: &str, k: usize) -> &str {
    let at = html
        .find(&format!("data-step=\"{k}\"><title>"))
        .unwrap_or_else(|| panic!("no row {k}"));
    let start = html[..at].rfind("<g class=\"row").expect("row start");
    let end = html[at..]
        .find("<g class=\"row")
        .map_or(html.len(), |e| at + e);
    &html[start..end]
}

#[test]
fn redis_failover_shows_grant_promotion_second_grant_and_overlap() {
    let r = report("redis-failover");
    let story = &r.stories[0];
    // The structured story: lanes for both clients, master, replica, Sentinel, resource.
    let ids: Vec<&str> = story.cast.lanes.iter().map(|l| l.id.as_str()).collect();
    assert_eq!(
        ids,
        ["c0", "c1", "redis0", "redis1", "sentinel", "resource"]
    );
    let first = &story.steps[0].scene;
    let redis0 = first
        .lanes
        .iter()
        .find(|l| l.lane == "redis0")
        .expect("redis0");
    let redis1 = first
        .lanes
        .iter()
        .find(|l| l.lane == "redis1")
        .expect("redis1");
    assert_eq!(
        redis0.holds.as_deref(),
        Some("c0"),
        "the lock on the master"
    );
    assert_eq!(redis1.holds, None, "the replica without it");
    let promote = &story.steps[1].scene.exchange.arrows[0];
    assert_eq!(
        (promote.from.as_str(), promote.to.as_str()),
        ("sentinel", "redis1")
    );
    assert!(promote.fault);

    let html = page("redis-failover");
    let grant = row(&html, 1);
    assert!(
        grant.contains("SET lock c0 NX PX 2") && grant.contains(">OK<"),
        "{grant}"
    );
    assert!(
        grant.contains("class=\"key o0\""),
        "c0's key on redis0: {grant}"
    );
    let promotion = row(&html, 2);
    assert!(promotion.contains("row fault"), "{promotion}");
    assert!(promotion.contains("promote to master") && promotion.contains("demoted"));
    let second = row(&html, 3);
    assert!(
        second.contains("row overlap"),
        "two clients inside: {second}"
    );
    assert!(second.contains("SET lock c1 NX PX 2"));
    assert!(second.contains("class=\"cs o0\"") && second.contains("class=\"cs o1\""));
    assert!(second.contains("c0 + c1 inside!"));
    assert!(html.contains("Why it broke"));
    assert!(html.contains("Replication is asynchronous"), "the lesson");
    assert!(
        !html.contains("src=\"http"),
        "self-contained: nothing fetched"
    );
}

#[test]
fn every_text_is_escaped() {
    let hostile = "</text><script>alert(1)</script>";
    let lanes = vec![
        Lane::new("c0", hostile, LaneKind::Client),
        Lane::new("n", "n", LaneKind::Node),
    ];
    let scene = Scene {
        exchange: locklab_models::diagram::Exchange::arrow(
            "c0",
            "n",
            hostile,
            Some(hostile.into()),
        ),
        ..Scene::default()
    };
    let svg = sequence(
        &lanes,
        &[Row {
            step: 1,
            label: "1".into(),
            time: None,
            title: hostile,
            fault: false,
            gap: Some(hostile.into()),
            scene: &scene,
        }],
    );
    assert!(!svg.contains("<script>"), "{svg}");
    assert!(
        svg.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
        "{svg}"
    );

    let mut s = find("redis-failover").expect("row").clone();
    s.lesson = "<img src=x onerror=alert(1)>";
    let c = cast(&s, &Overrides::default()).expect("cast");
    let html = model_page(&s, &report(s.id.name()), &c, None);
    assert!(!html.contains("<img src=x"));
    assert!(html.contains("&lt;img src=x onerror=alert(1)&gt;"));
}

#[test]
fn a_scenario_that_holds_shows_its_cast_and_no_counterexample() {
    let html = page("redis-lua");
    assert!(html.contains("No counterexample"));
    assert!(html.contains("correct lock while holders finish within the TTL"));
    let start = row(&html, 0);
    assert!(start.contains(">master<"), "{start}");
    assert!(!html.contains("data-step=\"1\""));
}

#[test]
fn every_family_draws_its_own_lanes() {
    for (id, lane) in [
        ("redlock-restart", "redis4"),
        ("mysql-getlock-conn-kill", "server"),
        ("inventory-no-lock", "stock"),
        ("redis-failover", "sentinel"),
    ] {
        let r = report(id);
        let story = &r.stories[0];
        assert!(
            story.cast.lanes.iter().any(|l| l.id == lane),
            "{id}: no {lane} lane"
        );
        assert!(
            story.steps.iter().all(|s| !s.scene.lanes.is_empty()),
            "{id}: a step without lane states"
        );
        assert!(
            story
                .steps
                .iter()
                .any(|s| !s.scene.exchange.arrows.is_empty()),
            "{id}: no message drawn"
        );
    }
}
