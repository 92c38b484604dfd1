//! A reliability diagram as a hand-written SVG string (no plotting crate): one bar per
//! bin up to its observed frequency, a dot at (mean forecast, observed frequency) with the
//! 95% Wilson interval of that frequency as a whisker ([`crate::wilson`]), the diagonal of
//! perfect calibration, the count of every bin, and a histogram of counts under the plot.
//! Pure: returns the text; the CLI writes the file.

use std::fmt::Write as _;

use crate::scoring_rules::ReliabilityBin;
use crate::wilson::reliability_intervals;

/// Escape text for an SVG text node or attribute.
fn escape(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            '&' => "&amp;".to_string(),
            '<' => "&lt;".to_string(),
            '>' => "&gt;".to_string(),
            '"' => "&quot;".to_string(),
            '\'' => "&apos;".to_string(),
            c if c.is_control() => " ".to_string(),
            c => c.to_string(),
        })
        .collect()
}

/// Render the diagram. `title` names the arbiter; `subtitle` carries the headline scores.
pub fn reliability_svg(title: &str, subtitle: &str, bins: &[ReliabilityBin]) -> String {
    const W: f64 = 560.0;
    const H: f64 = 688.0;
    const LEFT: f64 = 80.0;
    const TOP: f64 = 113.0;
    const SIZE: f64 = 420.0;
    const HIST_TOP: f64 = TOP + SIZE + 26.0;
    const HIST_H: f64 = 60.0;
    let x = |p: f64| LEFT + p * SIZE;
    let y = |p: f64| TOP + (1.0 - p) * SIZE;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" font-family="DejaVu Sans, Helvetica, Arial, sans-serif">"#
    );
    let _ = writeln!(s, r#"<rect width="{W}" height="{H}" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text x="{}" y="28" font-size="18" text-anchor="middle" font-weight="bold">{}</text>"#,
        W / 2.0,
        escape(title)
    );
    let _ = writeln!(
        s,
        r##"<text x="{}" y="50" font-size="13" text-anchor="middle" fill="#333">{}</text>"##,
        W / 2.0,
        escape(subtitle)
    );
    // Grid and ticks.
    for k in 0..=10 {
        let p = k as f64 / 10.0;
        let _ = writeln!(
            s,
            r##"<line x1="{0}" y1="{1}" x2="{0}" y2="{2}" stroke="#e4e4e4"/><line x1="{3}" y1="{4}" x2="{5}" y2="{4}" stroke="#e4e4e4"/>"##,
            x(p),
            TOP,
            TOP + SIZE,
            LEFT,
            y(p),
            LEFT + SIZE
        );
        if k % 2 == 0 {
            let _ = writeln!(
                s,
                r#"<text x="{}" y="{}" font-size="12" text-anchor="middle">{p:.1}</text><text x="{}" y="{}" font-size="12" text-anchor="end">{p:.1}</text>"#,
                x(p),
                HIST_TOP + HIST_H + 16.0,
                LEFT - 8.0,
                y(p) + 4.0
            );
        }
    }
    // Bars and count labels.
    let max_count = bins.iter().map(|b| b.count).max().unwrap_or(0).max(1) as f64;
    for b in bins {
        let (x0, x1) = (x(b.lower), x(b.upper.min(1.0)));
        if let Some(freq) = b.observed_frequency {
            let _ = writeln!(
                s,
                r##"<rect x="{:.2}" y="{:.2}" width="{:.2}" height="{:.2}" fill="#9ecae1" stroke="#3182bd" stroke-width="1"/>"##,
                x0 + 2.0,
                y(freq),
                x1 - x0 - 4.0,
                y(0.0) - y(freq)
            );
        }
        let _ = writeln!(
            s,
            r##"<text x="{:.2}" y="{:.2}" font-size="11" text-anchor="middle" fill="#08519c">n={}</text>"##,
            (x0 + x1) / 2.0,
            HIST_TOP - 6.0,
            b.count
        );
        // Histogram of counts.
        let h = b.count as f64 / max_count * HIST_H;
        let _ = writeln!(
            s,
            r##"<rect x="{:.2}" y="{:.2}" width="{:.2}" height="{:.2}" fill="#bdbdbd"/>"##,
            x0 + 2.0,
            HIST_TOP + HIST_H - h,
            x1 - x0 - 4.0,
            h
        );
    }
    // Whiskers: the 95% Wilson interval of each non-empty bin's observed frequency, at its
    // mean forecast, so a bin of three items does not read as a measured point. Rows from
    // `reliability_table` always have one; other rows that do not check get none.
    let intervals = reliability_intervals(bins).unwrap_or_default();
    for r in &intervals {
        let (Some(w), Some(f)) = (r.wilson_95, r.bin.mean_forecast) else {
            continue;
        };
        let (cx, lo, hi) = (x(f), y(w.lower), y(w.upper));
        let _ = writeln!(
            s,
            r##"<path d="M{cx:.2},{lo:.2}V{hi:.2}M{:.2},{lo:.2}H{:.2}M{:.2},{hi:.2}H{:.2}" stroke="#7f2704" stroke-width="1.5" fill="none"/>"##,
            cx - 4.0,
            cx + 4.0,
            cx - 4.0,
            cx + 4.0
        );
    }
    // Diagonal.
    let _ = writeln!(
        s,
        r##"<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="#636363" stroke-width="1.5" stroke-dasharray="6 4"/>"##,
        x(0.0),
        y(0.0),
        x(1.0),
        y(1.0)
    );
    // Points at (mean forecast, observed frequency), joined.
    let points: Vec<(f64, f64)> = bins
        .iter()
        .filter_map(|b| Some((x(b.mean_forecast?), y(b.observed_frequency?))))
        .collect();
    if points.len() > 1 {
        let path: Vec<String> = points
            .iter()
            .map(|(a, b)| format!("{a:.2},{b:.2}"))
            .collect();
        let _ = writeln!(
            s,
            r##"<polyline points="{}" fill="none" stroke="#d94801" stroke-width="2"/>"##,
            path.join(" ")
        );
    }
    for (a, b) in &points {
        let _ = writeln!(
            s,
            r##"<circle cx="{a:.2}" cy="{b:.2}" r="4.5" fill="#d94801" stroke="white" stroke-width="1"/>"##
        );
    }
    // Frames and axis labels.
    let _ = writeln!(
        s,
        r#"<rect x="{LEFT}" y="{TOP}" width="{SIZE}" height="{SIZE}" fill="none" stroke="black"/>"#
    );
    let _ = writeln!(
        s,
        r#"<rect x="{LEFT}" y="{HIST_TOP}" width="{SIZE}" height="{HIST_H}" fill="none" stroke="black"/>"#
    );
    let _ = writeln!(
        s,
        r##"<text x="{}" y="{}" font-size="11" text-anchor="end" fill="#555">count</text>"##,
        LEFT - 8.0,
        HIST_TOP + HIST_H / 2.0 + 4.0
    );
    let _ = writeln!(
        s,
        r#"<text x="{}" y="{}" font-size="14" text-anchor="middle">Forecast probability (bin k = [k/10, (k+1)/10), 1.0 in the last bin)</text>"#,
        LEFT + SIZE / 2.0,
        H - 18.0
    );
    let _ = writeln!(
        s,
        r#"<text x="22" y="{0}" font-size="14" text-anchor="middle" transform="rotate(-90 22 {0})">Observed frequency of yes</text>"#,
        TOP + SIZE / 2.0
    );
    let _ = writeln!(
        s,
        r##"<g font-size="12"><line x1="{0}" y1="{1}" x2="{2}" y2="{1}" stroke="#636363" stroke-width="1.5" stroke-dasharray="6 4"/><text x="{3}" y="{4}">perfect calibration</text><circle cx="{5}" cy="{1}" r="4.5" fill="#d94801"/><text x="{6}" y="{4}">mean forecast vs observed</text><rect x="{7}" y="{8}" width="14" height="10" fill="#9ecae1" stroke="#3182bd"/><text x="{9}" y="{4}">per bin</text></g>"##,
        LEFT,
        TOP - 17.0,
        LEFT + 30.0,
        LEFT + 36.0,
        TOP - 13.0,
        LEFT + 170.0,
        LEFT + 180.0,
        LEFT + 352.0,
        TOP - 22.0,
        LEFT + 370.0
    );
    // Second legend row, above the first.
    let _ = writeln!(
        s,
        r##"<g font-size="12"><path d="M{0},{1}V{2}M{3},{1}H{4}M{3},{2}H{4}" stroke="#7f2704" stroke-width="1.5" fill="none"/><text x="{5}" y="{6}">95% Wilson interval of the observed frequency</text></g>"##,
        LEFT + 15.0,
        TOP - 29.0,
        TOP - 41.0,
        LEFT + 11.0,
        LEFT + 19.0,
        LEFT + 36.0,
        TOP - 31.0
    );
    s.push_str("</svg>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scoring_rules::reliability_table;

    #[test]
    fn svg_has_bins_diagonal_and_escaped_title() {
        let table = reliability_table(
            &[0.1, 0.15, 0.8, 0.85, 1.0],
            &[false, true, true, true, true],
            10,
        )
        .unwrap();
        let svg = reliability_svg("arb <x> & \"y\"", "Brier 0.1", &table);
        assert!(svg.starts_with("<svg"));
        assert!(svg.contains("arb &lt;x&gt; &amp; &quot;y&quot;"));
        assert!(svg.contains("stroke-dasharray"));
        assert_eq!(svg.matches("<circle").count(), 3 + 1); // 3 non-empty bins + legend
        assert_eq!(svg.matches("n=").count(), 10);
        assert!(svg.contains("n=2"));
        assert!(svg.contains("Observed frequency"));
        // One whisker per non-empty bin, plus the legend's.
        assert_eq!(svg.matches("stroke=\"#7f2704\"").count(), 3 + 1);
        assert!(svg.contains("95% Wilson interval"));
    }
}
