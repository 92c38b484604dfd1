//! Hand-written SVG plots (no plotting crate): accuracy against a swept variable, one
//! line per estimator with its 95% interval as bars, and the reliability diagrams, which
//! are `calibration::reliability_svg`'s. Pure: returns the text; the CLI writes the files.

use std::fmt::Write as _;

use calibration::reliability_svg::reliability_svg;

use crate::bootstrap::Interval;
use crate::report::Report;
use crate::sweep::SweepPoint;

/// A written plot: file name and SVG text.
pub type Plot = (String, String);

const COLOURS: [&str; 5] = ["#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#7f7f7f"];

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// One line of a chart.
struct Series<'a> {
    name: &'a str,
    points: Vec<(f64, Interval)>,
}

fn line_chart(title: &str, x_label: &str, series: &[Series]) -> String {
    const W: f64 = 640.0;
    const H: f64 = 420.0;
    const L: f64 = 70.0;
    const T: f64 = 50.0;
    const PW: f64 = 360.0;
    const PH: f64 = 300.0;
    let xs: Vec<f64> = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .collect();
    let ys: Vec<f64> = series
        .iter()
        .flat_map(|s| s.points.iter().flat_map(|p| [p.1.low, p.1.high]))
        .filter(|y| y.is_finite())
        .collect();
    let (x0, x1) = bounds(&xs, 0.0);
    let (y0, y1) = bounds(&ys, 0.02);
    let px = |x: f64| L + (x - x0) / (x1 - x0) * PW;
    let py = |y: f64| T + (1.0 - (y - y0) / (y1 - y0)) * PH;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" font-family="DejaVu Sans, Helvetica, Arial, sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, r#"<rect width="{W}" height="{H}" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text x="{}" y="26" font-size="15" font-weight="bold" text-anchor="middle">{}</text>"#,
        L + PW / 2.0,
        escape(title)
    );
    for k in 0..=5 {
        let y = y0 + (y1 - y0) * k as f64 / 5.0;
        let (right, yy, tx) = (L + PW, py(y), L - 6.0);
        let _ = writeln!(
            s,
            r##"<line x1="{L}" x2="{right}" y1="{yy}" y2="{yy}" stroke="#e4e4e4"/><text x="{tx}" y="{}" text-anchor="end">{y:.3}</text>"##,
            yy + 4.0
        );
        let x = x0 + (x1 - x0) * k as f64 / 5.0;
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{}" text-anchor="middle">{}</text>"#,
            px(x),
            T + PH + 18.0,
            trim(x)
        );
    }
    let _ = writeln!(
        s,
        r##"<rect x="{L}" y="{T}" width="{PW}" height="{PH}" fill="none" stroke="#333"/>"##
    );
    let _ = writeln!(
        s,
        r#"<text x="{}" y="{}" text-anchor="middle">{}</text>"#,
        L + PW / 2.0,
        T + PH + 38.0,
        escape(x_label)
    );
    let _ = writeln!(
        s,
        r#"<text x="18" y="{}" text-anchor="middle" transform="rotate(-90 18 {0})">accuracy (95% bootstrap interval)</text>"#,
        T + PH / 2.0
    );
    for (k, ser) in series.iter().enumerate() {
        let c = COLOURS[k % COLOURS.len()];
        let pts: Vec<String> = ser
            .points
            .iter()
            .filter(|p| p.1.estimate.is_finite())
            .map(|p| format!("{:.1},{:.1}", px(p.0), py(p.1.estimate)))
            .collect();
        let _ = writeln!(
            s,
            r#"<polyline fill="none" stroke="{c}" stroke-width="2" points="{}"/>"#,
            pts.join(" ")
        );
        for (x, iv) in ser.points.iter().filter(|p| p.1.estimate.is_finite()) {
            let _ = writeln!(
                s,
                r#"<line x1="{0:.1}" x2="{0:.1}" y1="{1:.1}" y2="{2:.1}" stroke="{c}"/><circle cx="{0:.1}" cy="{3:.1}" r="3" fill="{c}"/>"#,
                px(*x),
                py(iv.low),
                py(iv.high),
                py(iv.estimate)
            );
        }
        let ly = T + 14.0 + 20.0 * k as f64;
        let _ = writeln!(
            s,
            r#"<line x1="{}" x2="{}" y1="{ly}" y2="{ly}" stroke="{c}" stroke-width="3"/><text x="{}" y="{}">{}</text>"#,
            L + PW + 12.0,
            L + PW + 32.0,
            L + PW + 38.0,
            ly + 4.0,
            escape(ser.name)
        );
    }
    s.push_str("</svg>\n");
    s
}

fn trim(x: f64) -> String {
    let t = format!("{x:.2}");
    t.trim_end_matches('0').trim_end_matches('.').to_owned()
}

fn bounds(v: &[f64], pad: f64) -> (f64, f64) {
    let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if !lo.is_finite() || !hi.is_finite() {
        return (0.0, 1.0);
    }
    if hi - lo < 1e-9 {
        return (lo - 0.5, hi + 0.5);
    }
    (lo - pad, hi + pad)
}

fn sweep_series(points: &[SweepPoint]) -> Vec<Series<'static>> {
    let take = |f: fn(&SweepPoint) -> Interval| points.iter().map(|p| (p.x, f(p))).collect();
    vec![
        Series {
            name: "old rule",
            points: take(|p| p.old),
        },
        Series {
            name: "independent",
            points: take(|p| p.independent),
        },
        Series {
            name: "majority",
            points: take(|p| p.majority),
        },
        Series {
            name: "best single",
            points: take(|p| p.best_single),
        },
    ]
}

/// File-name form of an estimator's name.
fn slug(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    s.split('-')
        .filter(|p| !p.is_empty())
        .take(4)
        .collect::<Vec<_>>()
        .join("-")
}

/// Every plot of a report.
pub fn plots(r: &Report) -> Vec<Plot> {
    let mut out: Vec<Plot> = r
        .reliability
        .iter()
        .map(|(name, bins)| {
            let brier = r
                .quality
                .estimators
                .iter()
                .find(|e| &e.name == name)
                .map_or(f64::NAN, |e| e.brier.estimate);
            let title = format!("{}: {}", r.scenario, name);
            (
                format!("reliability-{}.svg", slug(name)),
                reliability_svg(
                    &title,
                    &format!("Brier {brier:.4} over {} binary motions", r.quality.motions),
                    bins,
                ),
            )
        })
        .collect();
    if !r.by_panel_size.is_empty() {
        let t = format!("{}: accuracy against panel size", r.scenario);
        out.push((
            "accuracy-by-panel-size.svg".into(),
            line_chart(&t, "seats", &sweep_series(&r.by_panel_size)),
        ));
    }
    if !r.by_correlation.is_empty() {
        let t = format!("{}: accuracy against error correlation", r.scenario);
        out.push((
            "accuracy-by-correlation.svg".into(),
            line_chart(
                &t,
                "within-lineage error correlation",
                &sweep_series(&r.by_correlation),
            ),
        ));
    }
    out
}
