//! Horizontal bar charts as inline SVG (the ledger's per-side totals and rows, each
//! verdict's totals). Pure: returns the text. Reliability diagrams are calibration's
//! (`calibration::reliability_svg`), not drawn here.

use std::fmt::Write as _;

use crate::html::escape;

/// Fill of side A's bars.
pub const SIDE_A: &str = "#3182bd";
/// Fill of side B's bars.
pub const SIDE_B: &str = "#e6550d";
/// Fill of bars of neither side.
pub const NEUTRAL: &str = "#969696";

/// One bar: its label (left), its length, its fill, and the text printed after it.
#[derive(Debug, Clone, PartialEq)]
pub struct Bar {
    pub label: String,
    pub value: f64,
    pub fill: &'static str,
    pub text: String,
}

impl Bar {
    pub fn new(label: impl Into<String>, value: f64, fill: &'static str) -> Bar {
        Bar {
            label: label.into(),
            value,
            fill,
            text: format!("{value:.2}"),
        }
    }
}

/// The fill of a side named `A` or `B` (anything else is neutral).
pub fn side_fill(side: Option<&str>) -> &'static str {
    match side {
        Some("A") => SIDE_A,
        Some("B") => SIDE_B,
        _ => NEUTRAL,
    }
}

/// A chart of `bars` under `title`, scaled to the largest value (negative values draw no
/// bar; their number is still printed). `aria` describes the chart for screen readers.
pub fn bar_chart(title: &str, aria: &str, bars: &[Bar]) -> String {
    const W: f64 = 760.0;
    const LABEL_W: f64 = 250.0;
    const BAR_W: f64 = 400.0;
    const ROW_H: f64 = 22.0;
    const TOP: f64 = 30.0;
    let h = TOP + ROW_H * bars.len().max(1) as f64 + 12.0;
    let max = bars
        .iter()
        .map(|b| b.value)
        .filter(|v| v.is_finite())
        .fold(0.0_f64, f64::max);
    let scale = if max > 0.0 { BAR_W / max } else { 0.0 };
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{h}" viewBox="0 0 {W} {h}" role="img" aria-label="{}" font-family="DejaVu Sans, Helvetica, Arial, sans-serif">"#,
        escape(aria)
    );
    let _ = writeln!(
        s,
        r#"<text x="4" y="18" font-size="14" font-weight="bold">{}</text>"#,
        escape(title)
    );
    if bars.is_empty() {
        let _ = writeln!(
            s,
            r##"<text x="4" y="{}" font-size="12" fill="#666">nothing to chart yet</text>"##,
            TOP + 14.0
        );
    }
    for (i, b) in bars.iter().enumerate() {
        let y = TOP + ROW_H * i as f64;
        let len = if b.value.is_finite() && b.value > 0.0 {
            b.value * scale
        } else {
            0.0
        };
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}" font-size="12" text-anchor="end">{}</text>"#,
            LABEL_W - 8.0,
            y + 15.0,
            escape(&clip(&b.label, 38))
        );
        let _ = writeln!(
            s,
            r#"<rect x="{LABEL_W}" y="{:.1}" width="{len:.1}" height="{:.1}" fill="{}"><title>{}: {}</title></rect>"#,
            y + 3.0,
            ROW_H - 6.0,
            b.fill,
            escape(&b.label),
            escape(&b.text)
        );
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}" font-size="12">{}</text>"#,
            LABEL_W + len + 6.0,
            y + 15.0,
            escape(&b.text)
        );
    }
    let _ = writeln!(
        s,
        r##"<line x1="{LABEL_W}" y1="{}" x2="{LABEL_W}" y2="{:.1}" stroke="#444"/>"##,
        TOP,
        TOP + ROW_H * bars.len().max(1) as f64
    );
    s.push_str("</svg>\n");
    s
}

/// `s` cut to `n` characters with an ellipsis (the full text stays in the bar's title).
fn clip(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        return s.to_string();
    }
    let mut out: String = s.chars().take(n.saturating_sub(1)).collect();
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bars_scale_to_the_largest_and_labels_are_escaped() {
        let svg = bar_chart(
            "Ledger <b>",
            "totals",
            &[
                Bar::new("A <script>", 6.36, SIDE_A),
                Bar::new("B", 3.18, SIDE_B),
                Bar::new("negative", -1.0, NEUTRAL),
            ],
        );
        assert!(svg.starts_with("<svg"));
        assert!(
            svg.contains(r#"width="400.0""#),
            "the largest bar fills the width"
        );
        assert!(
            svg.contains(r#"width="200.0""#),
            "half the value, half the width"
        );
        assert!(
            svg.contains(r#"width="0.0""#),
            "a negative value draws no bar"
        );
        assert!(svg.contains("A &lt;script&gt;") && !svg.contains("<script>"));
        assert!(svg.contains("Ledger &lt;b&gt;"));
        assert!(bar_chart("t", "a", &[]).contains("nothing to chart yet"));
        assert_eq!(clip("abcdef", 4), "abc…");
    }
}
