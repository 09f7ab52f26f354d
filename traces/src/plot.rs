//! Measurements drawn as hand-written SVG line charts: one panel per group (a server,
//! a configuration), a line per series, both axes logarithmic where the figures span
//! decades (purchases per second from 100 to 100,000 against 1 to 1,000 buyers). No
//! plotting crate: a chart is a few dozen elements, and every text in it is escaped.

use std::fmt::Write;

use crate::escape::escape;

/// One line: a name for the legend and its points, in any order.
#[derive(Clone, Debug)]
pub struct Series {
    /// The legend's text.
    pub name: String,
    /// `(x, y)` points; the line joins them in increasing `x`.
    pub points: Vec<(f64, f64)>,
}

/// One chart of the figure.
#[derive(Clone, Debug)]
pub struct Panel {
    /// Printed above the chart.
    pub title: String,
    /// The lines.
    pub series: Vec<Series>,
}

/// What both axes say and how they scale, shared by every panel of a figure.
#[derive(Clone, Debug)]
pub struct Axes {
    /// The horizontal axis's label.
    pub x: String,
    /// The vertical axis's label.
    pub y: String,
    /// Whether `x` is drawn on a log scale (points at or below 0 are left out).
    pub log_x: bool,
    /// The same for `y`.
    pub log_y: bool,
}

const WIDTH: f64 = 880.0;
const PANEL_H: f64 = 340.0;
const LEFT: f64 = 78.0;
const PLOT_W: f64 = 520.0;
const TOP: f64 = 34.0;
const PLOT_H: f64 = 250.0;
/// Distinguishable on white and in grey print, one per series, then round again.
const COLOURS: [&str; 8] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
];
const DASHES: [&str; 3] = ["", "6 3", "2 3"];

/// A figure of `panels` stacked top to bottom, each with its legend on the right.
pub fn figure(title: &str, axes: &Axes, panels: &[Panel]) -> String {
    let height = 40.0 + PANEL_H * panels.len().max(1) as f64;
    let mut out = String::new();
    let _ = write!(
        out,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{height}\" \
         viewBox=\"0 0 {WIDTH} {height}\" font-family=\"sans-serif\" font-size=\"12\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
         <text x=\"{}\" y=\"24\" font-size=\"16\" font-weight=\"bold\" text-anchor=\"middle\">{}</text>\n",
        WIDTH / 2.0,
        escape(title)
    );
    for (i, panel) in panels.iter().enumerate() {
        draw_panel(&mut out, axes, panel, 40.0 + PANEL_H * i as f64);
    }
    out.push_str("</svg>\n");
    out
}

/// A scale from data to pixels over `[lo, hi]`, linear or by powers of ten.
struct Scale {
    lo: f64,
    hi: f64,
    log: bool,
}

impl Scale {
    fn over(values: impl Iterator<Item = f64>, log: bool) -> Scale {
        let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
        for v in values.filter(|v| v.is_finite() && (!log || *v > 0.0)) {
            lo = lo.min(v);
            hi = hi.max(v);
        }
        if !lo.is_finite() {
            (lo, hi) = (1.0, 10.0);
        }
        if log {
            lo = 10f64.powf(lo.log10().floor());
            hi = 10f64.powf(hi.log10().ceil().max(lo.log10() + 1.0));
        } else {
            lo = lo.min(0.0);
            if hi <= lo {
                hi = lo + 1.0;
            }
            hi *= 1.05;
        }
        Scale { lo, hi, log }
    }

    /// Where `v` falls between 0 and 1.
    fn at(&self, v: f64) -> f64 {
        if self.log {
            (v.log10() - self.lo.log10()) / (self.hi.log10() - self.lo.log10())
        } else {
            (v - self.lo) / (self.hi - self.lo)
        }
    }

    fn shown(&self, v: f64) -> bool {
        v.is_finite() && (!self.log || v > 0.0)
    }

    /// The values the axis labels: each power of ten (and its 2 and 5 when few), or five
    /// even steps.
    fn ticks(&self) -> Vec<f64> {
        if self.log {
            let decades = (self.hi.log10() - self.lo.log10()).round() as i32;
            let mut out = Vec::new();
            let mut p = self.lo;
            while p <= self.hi * 1.0001 {
                out.push(p);
                if decades <= 3 {
                    out.extend([2.0 * p, 5.0 * p].into_iter().filter(|v| *v < self.hi));
                }
                p *= 10.0;
            }
            out
        } else {
            (0..=5)
                .map(|i| self.lo + (self.hi - self.lo) * f64::from(i) / 5.0)
                .collect()
        }
    }
}

/// `1200` as `1.2k`, `3000000` as `3M`: axis labels stay short.
fn short(v: f64) -> String {
    let (scaled, unit) = match v.abs() {
        a if a >= 1e6 => (v / 1e6, "M"),
        a if a >= 1e3 => (v / 1e3, "k"),
        _ => (v, ""),
    };
    let whole = (scaled - scaled.round()).abs() < 1e-9;
    if !whole && scaled.abs() < 1.0 {
        // Below one, one significant digit: 0.05 and 0.002 stay apart (a log axis of
        // seconds reaches milliseconds), where one decimal would print both as 0.0.
        let decimals = (-scaled.abs().log10()).floor() as usize + 1;
        let text = format!("{scaled:.decimals$}");
        let text = text.trim_end_matches('0').trim_end_matches('.');
        return format!("{text}{unit}");
    }
    let text = if whole || scaled.abs() >= 10.0 {
        format!("{scaled:.0}")
    } else {
        format!("{scaled:.1}")
    };
    format!("{text}{unit}")
}

fn draw_panel(out: &mut String, axes: &Axes, panel: &Panel, y0: f64) {
    let points = || panel.series.iter().flat_map(|s| s.points.iter());
    let sx = Scale::over(points().map(|p| p.0), axes.log_x);
    let sy = Scale::over(points().map(|p| p.1), axes.log_y);
    let (left, top) = (LEFT, y0 + TOP);
    let px = |v: f64| left + sx.at(v) * PLOT_W;
    let py = |v: f64| top + (1.0 - sy.at(v)) * PLOT_H;
    let _ = writeln!(
        out,
        "<text x=\"{left}\" y=\"{}\" font-size=\"14\" font-weight=\"bold\">{}</text>",
        y0 + 20.0,
        escape(&panel.title)
    );
    let _ = writeln!(
        out,
        "<rect x=\"{left}\" y=\"{top}\" width=\"{PLOT_W}\" height=\"{PLOT_H}\" fill=\"none\" stroke=\"#888\"/>"
    );
    for t in sx.ticks() {
        let x = px(t);
        let _ = writeln!(
            out,
            "<line x1=\"{x:.1}\" y1=\"{top}\" x2=\"{x:.1}\" y2=\"{}\" stroke=\"#eee\"/>\
             <text x=\"{x:.1}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
            top + PLOT_H,
            top + PLOT_H + 16.0,
            short(t)
        );
    }
    for t in sy.ticks() {
        let y = py(t);
        let _ = writeln!(
            out,
            "<line x1=\"{left}\" y1=\"{y:.1}\" x2=\"{}\" y2=\"{y:.1}\" stroke=\"#eee\"/>\
             <text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            left + PLOT_W,
            left - 6.0,
            y + 4.0,
            short(t)
        );
    }
    let _ = writeln!(
        out,
        "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\
         <text transform=\"translate(18 {}) rotate(-90)\" text-anchor=\"middle\">{}</text>",
        left + PLOT_W / 2.0,
        top + PLOT_H + 36.0,
        escape(&axes.x),
        top + PLOT_H / 2.0,
        escape(&axes.y)
    );
    for (i, s) in panel.series.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        let dash = DASHES[(i / COLOURS.len()) % DASHES.len()];
        let mut pts: Vec<(f64, f64)> = s
            .points
            .iter()
            .copied()
            .filter(|&(x, y)| sx.shown(x) && sy.shown(y))
            .collect();
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        let path: Vec<String> = pts
            .iter()
            .map(|&(x, y)| format!("{:.1},{:.1}", px(x), py(y)))
            .collect();
        let _ = writeln!(
            out,
            "<g><title>{}</title><polyline points=\"{}\" fill=\"none\" stroke=\"{colour}\" \
             stroke-width=\"2\" stroke-dasharray=\"{dash}\"/>",
            escape(&s.name),
            path.join(" ")
        );
        for &(x, y) in &pts {
            let _ = writeln!(
                out,
                "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"3\" fill=\"{colour}\"><title>{}: {} at {}</title></circle>",
                px(x),
                py(y),
                escape(&s.name),
                short(y),
                short(x)
            );
        }
        out.push_str("</g>\n");
        let ly = top + 8.0 + 20.0 * i as f64;
        let lx = left + PLOT_W + 20.0;
        let _ = writeln!(
            out,
            "<line x1=\"{lx}\" y1=\"{ly}\" x2=\"{}\" y2=\"{ly}\" stroke=\"{colour}\" stroke-width=\"2\" \
             stroke-dasharray=\"{dash}\"/><text x=\"{}\" y=\"{}\">{}</text>",
            lx + 24.0,
            lx + 30.0,
            ly + 4.0,
            escape(&s.name)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_figure_draws_every_series_and_escapes_its_names() {
        let panel = Panel {
            title: "mariadb".into(),
            series: vec![
                Series {
                    name: "SELECT … FOR UPDATE".into(),
                    points: vec![(1.0, 900.0), (1000.0, 3000.0), (10.0, 2500.0)],
                },
                Series {
                    name: "<no lock>".into(),
                    points: vec![(1.0, 0.0), (10.0, 20_000.0)],
                },
            ],
        };
        let axes = Axes {
            x: "buyers".into(),
            y: "purchases/s".into(),
            log_x: true,
            log_y: true,
        };
        let svg = figure("sweep & more", &axes, &[panel]);
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        assert_eq!(svg.matches("<polyline").count(), 2);
        assert!(svg.contains("&lt;no lock&gt;") && svg.contains("sweep &amp; more"));
        assert!(!svg.contains("<no lock>"));
        // The zero point has no place on a log axis: three circles, then one.
        assert_eq!(svg.matches("<circle").count(), 4);
        assert!(svg.contains(">1k<") && svg.contains(">10k<"), "{svg}");
    }

    #[test]
    fn short_labels() {
        assert_eq!(short(1200.0), "1.2k");
        assert_eq!(short(3_000_000.0), "3M");
        assert_eq!(short(50.0), "50");
        assert_eq!(short(0.5), "0.5");
        assert_eq!(short(0.05), "0.05");
        assert_eq!(short(0.002), "0.002");
        assert_eq!(short(0.01), "0.01");
    }
}
