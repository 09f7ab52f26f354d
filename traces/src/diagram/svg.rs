//! The sequence diagram as hand-written SVG: a lane per participant, a row per step.
//! Each row is one `<g class="row" data-step="k">`, so the page's script can walk the
//! story step by step, and carries its own segment of every lane's bars (believed
//! lease, the key on a node, the critical section), so a bar is exactly as long as the
//! rows in which it held.

use std::fmt::Write;

use locklab_models::diagram::{Lane, LaneKind, LaneState, Scene};

use crate::escape::escape;

/// Width of the step-number column.
const LEFT: f64 = 64.0;
/// Width of one lane, at most and at least: diagrams with many lanes narrow them to
/// fit a 1400-pixel window (labels are clipped to their lane, whole in the titles).
const LANE_MAX: f64 = 196.0;
const LANE_MIN: f64 = 72.0;
/// Width the lanes share before they narrow: a 1400-pixel window less the page's
/// margins and scrollbar, the step column and the last lane's status.
const FIT: f64 = 1150.0;
/// Room to the right of the last lane for its status.
const RIGHT: f64 = 110.0;
/// Height of the lane headers.
const HEAD: f64 = 44.0;
/// Height of a row with one message.
const ROW_H: f64 = 78.0;
/// Extra height per further message in a row.
const ARROW_STEP: f64 = 26.0;
/// Approximate width of one character of 11px monospace text (messages are sized by it).
const CHAR_W: f64 = 6.7;
/// The same for the 10px labels of states and bars.
const SMALL_W: f64 = 5.7;

/// One row of the diagram.
pub struct Row<'a> {
    /// The step number (`0` for the initial state).
    pub step: usize,
    /// What the left column prints (`1`, `start`).
    pub label: String,
    /// The time printed under it, if any.
    pub time: Option<String>,
    /// The whole step in words, shown on hover.
    pub title: &'a str,
    /// The step is an injected fault.
    pub fault: bool,
    /// A long quiet stretch left out before this row (`+2.3 s`), drawn as a break.
    pub gap: Option<String>,
    /// What it shows.
    pub scene: &'a Scene,
}

/// Where things go.
struct Layout<'a> {
    lanes: &'a [Lane],
    lane_w: f64,
    width: f64,
}

impl Layout<'_> {
    fn x(&self, id: &str) -> Option<f64> {
        self.lanes
            .iter()
            .position(|l| l.id == id)
            .map(|i| self.x_at(i))
    }

    fn x_at(&self, i: usize) -> f64 {
        LEFT + self.lane_w * i as f64 + self.lane_w / 2.0
    }

    /// Index of a client lane among the client lanes, for its colour.
    fn colour(&self, id: &str) -> Option<usize> {
        self.lanes
            .iter()
            .filter(|l| l.kind == LaneKind::Client)
            .position(|l| l.id == id)
            .map(|i| i % 6)
    }
}

fn row_height(scene: &Scene) -> f64 {
    let n = scene.exchange.arrows.len().max(1) as f64;
    ROW_H + ARROW_STEP * (n - 1.0) + if marks_below(scene) { ARROW_STEP } else { 0.0 }
}

/// A row with messages and a lane's mark draws the mark below the messages, in a
/// strip of its own, so neither covers the other's words.
fn marks_below(scene: &Scene) -> bool {
    !scene.exchange.arrows.is_empty() && scene.exchange.marks.iter().any(|m| m.lane.is_some())
}

/// Text clipped to about `max` pixels at `per` pixels a character, with an ellipsis
/// (the full text is in the row's title and the step list).
fn fit(text: &str, max: f64, per: f64) -> String {
    let n = (max / per).floor().max(4.0) as usize;
    if text.chars().count() <= n {
        text.to_string()
    } else {
        let cut: String = text.chars().take(n - 1).collect();
        format!("{cut}…")
    }
}

fn width_of(text: &str, per: f64) -> f64 {
    text.chars().count() as f64 * per
}

fn text(out: &mut String, x: f64, y: f64, class: &str, anchor: &str, s: &str) {
    let _ = write!(
        out,
        r#"<text x="{x:.1}" y="{y:.1}" class="{class}" text-anchor="{anchor}">{}</text>"#,
        escape(s)
    );
}

/// Text on a plate of the page's background, readable over lanes and bars.
fn plated(out: &mut String, x: f64, y: f64, class: &str, s: &str) {
    let w = width_of(s, CHAR_W) + 8.0;
    let _ = write!(
        out,
        r#"<rect class="plate" x="{:.1}" y="{:.1}" width="{w:.1}" height="15" rx="3"/>"#,
        x - w / 2.0,
        y - 11.5
    );
    text(out, x, y, class, "middle", s);
}

fn state_of<'s>(scene: &'s Scene, id: &str) -> Option<&'s LaneState> {
    scene.lanes.iter().find(|l| l.lane == id)
}

/// The whole diagram as an `<svg>` element.
pub fn sequence(lanes: &[Lane], rows: &[Row]) -> String {
    let n = lanes.len().max(1) as f64;
    let lane_w = (FIT / n).clamp(LANE_MIN, LANE_MAX);
    let width = LEFT + lane_w * n + RIGHT;
    let layout = Layout {
        lanes,
        lane_w,
        width,
    };
    let height = HEAD + rows.iter().map(|r| row_height(r.scene)).sum::<f64>() + 12.0;
    let mut out = String::new();
    let _ = write!(
        out,
        r#"<svg class="seq" xmlns="http://www.w3.org/2000/svg" width="{width:.0}" height="{height:.0}" viewBox="0 0 {width:.0} {height:.0}" role="img" aria-label="sequence diagram">"#
    );
    out.push_str(r#"<defs><marker id="ah" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" class="head"/></marker></defs>"#);
    // Lane lines under everything.
    for (i, l) in lanes.iter().enumerate() {
        let x = layout.x_at(i);
        let _ = write!(
            out,
            r#"<line class="lane {}" x1="{x:.1}" y1="{HEAD:.1}" x2="{x:.1}" y2="{:.1}"/>"#,
            kind_class(l.kind),
            height - 4.0
        );
    }
    let mut y = HEAD;
    let mut prev: Option<&Scene> = None;
    for r in rows {
        let h = row_height(r.scene);
        row(&mut out, &layout, r, prev, y, h);
        prev = Some(r.scene);
        y += h;
    }
    // Headers last, so they sit on top.
    for (i, l) in lanes.iter().enumerate() {
        let x0 = LEFT + lane_w * i as f64 + 6.0;
        let colour = layout
            .colour(&l.id)
            .map_or(String::new(), |c| format!(" o{c}"));
        let _ = write!(
            out,
            r#"<g class="hdr {}{colour}"><title>{}</title><rect x="{x0:.1}" y="4" width="{:.1}" height="30" rx="6"/>"#,
            kind_class(l.kind),
            escape(&l.label),
            lane_w - 12.0
        );
        text(
            &mut out,
            x0 + (lane_w - 12.0) / 2.0,
            24.0,
            "hdrt",
            "middle",
            &fit(&l.label, lane_w - 20.0, 7.4),
        );
        out.push_str("</g>");
    }
    out.push_str("</svg>");
    out
}

fn kind_class(k: LaneKind) -> &'static str {
    match k {
        LaneKind::Client => "client",
        LaneKind::Node => "node",
        LaneKind::Agent => "agent",
        LaneKind::Resource => "resource",
    }
}

/// The words a lane shows at the top of a row: the label of a bar that starts or
/// changes here (left of the lane) and a status that changed (right of it).
struct Words {
    bar: Option<String>,
    status: Option<String>,
}

fn words(l: &Lane, st: &LaneState, before: Option<&LaneState>) -> Words {
    let changed = |f: fn(&LaneState) -> String| before.is_none_or(|b| f(b) != f(st));
    let bar = match (&st.holds, st.lease_until, l.kind) {
        (Some(v), d, _) if changed(|s| format!("{:?}{:?}", s.holds, s.lease_until)) => {
            Some(d.map_or(format!("{v} (no TTL)"), |d| format!("{v} until t={d}")))
        }
        (None, Some(d), LaneKind::Client) if changed(|s| format!("{:?}", s.lease_until)) => {
            Some(format!("believes ≤ t={d}"))
        }
        _ => None,
    };
    let status =
        (changed(|s| s.status.clone()) && !st.status.is_empty()).then(|| st.status.clone());
    Words { bar, status }
}

fn row(out: &mut String, g: &Layout, r: &Row, prev: Option<&Scene>, y: f64, h: f64) {
    let scene = r.scene;
    let clients_inside = scene
        .lanes
        .iter()
        .filter(|s| s.critical && g.colour(&s.lane).is_some())
        .count();
    let overlap = clients_inside > 1;
    let class = match (overlap, r.fault) {
        (true, true) => "row overlap fault",
        (true, false) => "row overlap",
        (false, true) => "row fault",
        (false, false) => "row",
    };
    let _ = write!(
        out,
        r#"<g class="{class}" data-step="{}"><title>{}</title><rect class="bg" x="0" y="{y:.1}" width="{:.0}" height="{h:.1}"/>"#,
        r.step,
        escape(r.title),
        g.width
    );
    if r.fault {
        let _ = write!(
            out,
            r#"<rect class="faultbar" x="0" y="{y:.1}" width="5" height="{h:.1}"/>"#
        );
    }
    if let Some(gap) = &r.gap {
        // A break across the diagram: the time axis is cut here.
        let _ = write!(
            out,
            r#"<g class="gap"><title>{} of quiet left out</title><path class="break" d="M0,{:.1} L{:.1},{:.1}"/>"#,
            escape(gap),
            y + 1.0,
            g.width,
            y + 1.0
        );
        text(out, 10.0, y + 52.0, "gapt", "start", &format!("≈ {gap}"));
        out.push_str("</g>");
    }
    text(out, 10.0, y + 20.0, "stepn", "start", &r.label);
    if let Some(t) = &r.time {
        text(out, 10.0, y + 36.0, "time", "start", t);
    }
    if overlap {
        text(out, 10.0, y + h - 8.0, "overlapt", "start", "overlap");
    }
    lanes(out, g, scene, prev, y, h);
    arrows(out, g, scene, y);
    marks(out, g, scene, y, h);
    out.push_str("</g>");
}

/// Each lane's part of a row: its bars, the partition's wall, the words beside them.
fn lanes(out: &mut String, g: &Layout, scene: &Scene, prev: Option<&Scene>, y: f64, h: f64) {
    let said: Vec<Option<Words>> = g
        .lanes
        .iter()
        .map(|l| {
            state_of(scene, &l.id).map(|st| words(l, st, prev.and_then(|p| state_of(p, &l.id))))
        })
        .collect();
    for (i, l) in g.lanes.iter().enumerate() {
        let Some(st) = state_of(scene, &l.id) else {
            continue;
        };
        let x = g.x_at(i);
        bars(out, g, l, st, x, y, h);
        if st.cut {
            // The partition as a wall between the client and the servers to its right,
            // its first row marked with scissors.
            let xw = x + g.lane_w * 0.42;
            let began = prev.and_then(|p| state_of(p, &l.id)).is_none_or(|p| !p.cut);
            let _ = write!(
                out,
                r#"<g class="cut"><title>{} is cut off from the servers</title><line class="wall" x1="{xw:.1}" y1="{y:.1}" x2="{xw:.1}" y2="{:.1}"/>"#,
                escape(&l.label),
                y + h
            );
            if began {
                text(out, xw, y + 14.0, "wallt", "middle", "✂");
            }
            out.push_str("</g>");
        }
        let Some(w) = &said[i] else { continue };
        if let Some(b) = &w.bar {
            let b = fit(b, g.lane_w * 0.7 - 16.0, SMALL_W);
            let cls = if l.kind == LaneKind::Client {
                "bart"
            } else {
                "bart keyt"
            };
            text(out, x - 16.0, y + 13.0, cls, "end", &b);
        }
        if let Some(s) = &w.status {
            // The status may run right up to where the next lane's bar label starts.
            let room = match said.get(i + 1) {
                None => g.lane_w / 2.0 + RIGHT - 20.0,
                Some(Some(Words { bar: Some(b), .. })) => {
                    g.lane_w - 34.0 - width_of(b, SMALL_W).min(g.lane_w * 0.7 - 16.0)
                }
                Some(_) => g.lane_w - 30.0,
            };
            let cls = if st.critical { "status hot" } else { "status" };
            text(
                out,
                x + 16.0,
                y + 13.0,
                cls,
                "start",
                &fit(s, room, SMALL_W),
            );
        }
    }
}

/// A row's messages: one arrow each, its label, and the last one's reply.
fn arrows(out: &mut String, g: &Layout, scene: &Scene, y: f64) {
    for (k, a) in scene.exchange.arrows.iter().enumerate() {
        let (Some(x1), Some(x2)) = (g.x(&a.from), g.x(&a.to)) else {
            continue;
        };
        let ya = y + 38.0 + ARROW_STEP * k as f64;
        let dir = if x2 >= x1 { 1.0 } else { -1.0 };
        let (s, e) = (x1 + 8.0 * dir, x2 - 8.0 * dir);
        let cls = match (a.fault, a.lost) {
            (_, true) => "msg fault lost",
            (true, false) => "msg fault",
            (false, false) => "msg",
        };
        // A message that never arrived has no head.
        let head = if a.lost {
            ""
        } else {
            r#" marker-end="url(#ah)""#
        };
        // One group per message, named by its ends: a page (or a test) finds "the SET
        // c1 sent to redis1" without reading coordinates.
        let _ = write!(
            out,
            r#"<g class="arrow{}" data-from="{}" data-to="{}"><line class="{cls}" x1="{s:.1}" y1="{ya:.1}" x2="{e:.1}" y2="{ya:.1}"{head}/>"#,
            if a.lost { " lost" } else { "" },
            escape(&a.from),
            escape(&a.to)
        );
        if a.lost {
            // The cross where the message would have arrived.
            let (cx, cy) = (e - 10.0 * dir, ya);
            let _ = write!(
                out,
                r#"<path class="cross" d="M{:.1},{:.1} L{:.1},{:.1} M{:.1},{:.1} L{:.1},{:.1}"/>"#,
                cx - 6.0,
                cy - 6.0,
                cx + 6.0,
                cy + 6.0,
                cx - 6.0,
                cy + 6.0,
                cx + 6.0,
                cy - 6.0
            );
        }
        let span = (x2 - x1).abs().max(g.lane_w);
        let label = fit(&a.label, span + g.lane_w * 0.5, CHAR_W);
        let lcls = if a.fault { "msgt faultt" } else { "msgt" };
        plated(out, (x1 + x2) / 2.0, ya - 6.0, lcls, &label);
        if let Some(reply) = &a.reply {
            if k + 1 == scene.exchange.arrows.len() {
                let yr = ya + 12.0;
                let _ = write!(
                    out,
                    r#"<line class="reply" x1="{e:.1}" y1="{yr:.1}" x2="{s:.1}" y2="{yr:.1}" marker-end="url(#ah)"/>"#
                );
                plated(
                    out,
                    (x1 + x2) / 2.0,
                    yr + 14.0,
                    "replyt",
                    &fit(reply, span, CHAR_W),
                );
            } else {
                // Stacked messages keep their reply on their own line, at the arrowhead.
                let anchor = if dir > 0.0 { "start" } else { "end" };
                text(
                    out,
                    e + 6.0 * dir,
                    ya + 4.0,
                    "replyt",
                    anchor,
                    &fit(reply, 70.0, CHAR_W),
                );
            }
        }
        out.push_str("</g>");
    }
}

/// A row's marks: a fault or an event on a lane, or time passing across the diagram.
fn marks(out: &mut String, g: &Layout, scene: &Scene, y: f64, h: f64) {
    for m in &scene.exchange.marks {
        let cls = if m.fault { "mark fault" } else { "mark" };
        match m.lane.as_deref().and_then(|id| g.x(id)) {
            Some(x) => {
                let label = fit(&m.label, g.lane_w * 1.6, CHAR_W);
                let w = width_of(&label, CHAR_W) + 14.0;
                // Keep a wide mark inside the diagram; one wider than a narrow diagram
                // (a family drawn as a single lane) starts at its left edge.
                let lo = LEFT + w / 2.0;
                let cx = x.clamp(lo, (g.width - w / 2.0 - 2.0).max(lo));
                let ym = if marks_below(scene) {
                    y + h - 10.0
                } else {
                    y + h / 2.0 + 6.0
                };
                let _ = write!(
                    out,
                    r#"<g class="{cls}"><rect x="{:.1}" y="{:.1}" width="{w:.1}" height="20" rx="4"/>"#,
                    cx - w / 2.0,
                    ym - 14.0
                );
                text(out, cx, ym, "markt", "middle", &label);
                out.push_str("</g>");
            }
            None => {
                let ym = y + h / 2.0 + 4.0;
                let _ = write!(
                    out,
                    r#"<line class="tick" x1="{LEFT:.1}" y1="{ym:.1}" x2="{:.1}" y2="{ym:.1}"/>"#,
                    g.width - 4.0
                );
                // At the right edge: the left column already shows the new time, and
                // the lanes' bars would cross a label on the left.
                text(out, g.width - 6.0, ym - 5.0, "tickt", "end", &m.label);
            }
        }
    }
}

/// One lane's bars in one row.
fn bars(out: &mut String, g: &Layout, l: &Lane, st: &LaneState, x: f64, y: f64, h: f64) {
    if st.impaired {
        let _ = write!(
            out,
            r#"<rect class="impaired" x="{:.1}" y="{y:.1}" width="6" height="{h:.1}"/>"#,
            x - 3.0
        );
    }
    let own = g.colour(&l.id);
    if let (true, Some(c)) = (st.critical, own) {
        let _ = write!(
            out,
            r#"<rect class="cs o{c}" x="{:.1}" y="{y:.1}" width="10" height="{h:.1}"><title>in the critical section</title></rect>"#,
            x + 3.0
        );
    }
    if let (Some(d), Some(c)) = (st.lease_until, own) {
        let _ = write!(
            out,
            r#"<rect class="believed o{c}" x="{:.1}" y="{:.1}" width="8" height="{:.1}"><title>believes it holds the lock until t={d}</title></rect>"#,
            x - 13.0,
            y + 1.0,
            h - 2.0
        );
    }
    if let Some(v) = &st.holds {
        let c = st
            .owner
            .as_deref()
            .and_then(|o| g.colour(o))
            .map_or("none".to_string(), |c| format!("o{c}"));
        let until = st
            .lease_until
            .map_or(String::new(), |d| format!(" until t={d}"));
        let _ = write!(
            out,
            r#"<rect class="key {c}" x="{:.1}" y="{y:.1}" width="10" height="{h:.1}"><title>holds the lock: {}{}</title></rect>"#,
            x - 5.0,
            escape(v),
            escape(&until)
        );
    }
}
