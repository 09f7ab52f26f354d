//! The benchmark's rows as people read them: the write-up's figures ([`super::seeds`])
//! beside locklab's for the arrivals workload, a detailed table for one closed workload, purchases/s per
//! number of buyers for a sweep, and the sweep drawn as an SVG figure.

use std::collections::BTreeSet;
use std::fmt::Write;

use locklab_traces::plot::{figure, Axes, Panel, Series};

use super::bench::BenchRow;

/// The rows as tables: the arrivals rows with the write-up's figures, then the closed
/// rows (one table per buyers count, or a sweep's purchases/s by buyers).
pub fn table(rows: &[BenchRow]) -> String {
    let (arrivals, closed): (Vec<&BenchRow>, Vec<&BenchRow>) =
        rows.iter().partition(|r| r.workload == "arrivals");
    let mut out = String::new();
    if !arrivals.is_empty() {
        out.push_str(&arrivals_table(&arrivals));
    }
    let counts: BTreeSet<usize> = closed.iter().map(|r| r.buyers).collect();
    if !closed.is_empty() && !out.is_empty() {
        out.push('\n');
    }
    if counts.len() > 1 {
        out.push_str(&sweep_table(&closed, &counts));
    } else if !closed.is_empty() {
        out.push_str(&closed_table(&closed));
    }
    out
}

fn errors(r: &BenchRow) -> String {
    if r.errors > 0 {
        format!("  ({} errors)", r.errors)
    } else {
        String::new()
    }
}

fn arrivals_table(rows: &[&BenchRow]) -> String {
    let mut out = format!(
        "{:<26} {:<9} {:>5} {:>8} {:>6} {:>6} {:>8} {:>11} {:>8} {:>8} {:>8}\n",
        "strategy",
        "backend",
        "pool",
        "requests",
        "sold",
        "left",
        "oversold",
        "purchases/s",
        "seeds/s",
        "p50 ms",
        "p99 ms"
    );
    for r in rows {
        let _ = writeln!(
            out,
            "{:<26} {:<9} {:>5} {:>8} {:>6} {:>6} {:>8} {:>11.0} {:>8} {:>8.1} {:>8.1}{}",
            r.strategy,
            r.backend,
            r.buyers,
            r.requests.unwrap_or(0),
            r.purchases,
            r.left.unwrap_or(0),
            r.oversold,
            r.per_second,
            r.seeds_per_second
                .map_or_else(|| "-".to_string(), |s| format!("{s:.0}")),
            r.p50_ms,
            r.p99_ms,
            errors(r)
        );
    }
    out
}

fn closed_table(rows: &[&BenchRow]) -> String {
    let mut out = format!(
        "{:<26} {:<9} {:>7} {:>11} {:>9} {:>9} {:>9}\n",
        "strategy", "backend", "buyers", "purchases/s", "oversold", "p50 ms", "p99 ms"
    );
    for r in rows {
        let _ = writeln!(
            out,
            "{:<26} {:<9} {:>7} {:>11.0} {:>9} {:>9.2} {:>9.2}{}",
            r.strategy,
            r.backend,
            r.buyers,
            r.per_second,
            r.oversold,
            r.p50_ms,
            r.p99_ms,
            errors(r)
        );
    }
    out
}

/// One line per strategy and server, purchases/s under each buyers count; `*` marks a
/// cell that oversold.
fn sweep_table(rows: &[&BenchRow], counts: &BTreeSet<usize>) -> String {
    let mut out = format!("{:<26} {:<9}", "purchases/s by buyers", "backend");
    for c in counts {
        let _ = write!(out, " {c:>7}");
    }
    out.push('\n');
    let mut lines: Vec<(&str, &str)> = Vec::new();
    for r in rows {
        if !lines.contains(&(r.strategy, r.backend)) {
            lines.push((r.strategy, r.backend));
        }
    }
    for (strategy, backend) in lines {
        let _ = write!(out, "{strategy:<26} {backend:<9}");
        for c in counts {
            let cell = rows
                .iter()
                .find(|r| r.strategy == strategy && r.backend == backend && r.buyers == *c);
            match cell {
                Some(r) => {
                    let mark = if r.oversold > 0 { "*" } else { " " };
                    let _ = write!(out, " {:>6.0}{mark}", r.per_second);
                }
                None => out.push_str("       -"),
            }
        }
        out.push('\n');
    }
    out.push_str("* oversold\n");
    out
}

/// The closed rows as a figure: a panel per server, a line per strategy, purchases/s
/// against buyers, both axes logarithmic. `None` when there are no closed rows.
pub fn plot(rows: &[BenchRow]) -> Option<String> {
    let closed: Vec<&BenchRow> = rows.iter().filter(|r| r.workload == "closed").collect();
    if closed.is_empty() {
        return None;
    }
    let mut panels: Vec<Panel> = Vec::new();
    for r in closed {
        let panel = match panels.iter_mut().position(|p| p.title == r.backend) {
            Some(i) => &mut panels[i],
            None => {
                panels.push(Panel {
                    title: r.backend.to_string(),
                    series: Vec::new(),
                });
                let last = panels.len() - 1;
                &mut panels[last]
            }
        };
        let name = if r.oversold > 0 {
            format!("{} (oversells)", r.strategy)
        } else {
            r.strategy.to_string()
        };
        let series = match panel
            .series
            .iter()
            .position(|s| s.name.starts_with(r.strategy))
        {
            Some(i) => &mut panel.series[i],
            None => {
                panel.series.push(Series {
                    name: name.clone(),
                    points: Vec::new(),
                });
                let last = panel.series.len() - 1;
                &mut panel.series[last]
            }
        };
        if r.oversold > 0 {
            series.name = name;
        }
        series.points.push((r.buyers as f64, r.per_second));
    }
    let axes = Axes {
        x: "concurrent buyers (connections)".into(),
        y: "purchases per second".into(),
        log_x: true,
        log_y: true,
    };
    Some(figure(
        "locklab bench inventory: purchases/s against buyers",
        &axes,
        &panels,
    ))
}
