//! HTML output: escaping every piece of text that comes from the cluster, and the page
//! frame every view shares (title, navigation, the style sheet inline: no external
//! assets, so the page works offline).

use std::fmt::Write as _;

use crate::chrome::{Chrome, REFRESH_OFFER};

/// Escapes text for an HTML (or SVG) text node or a quoted attribute value: `&`, `<`,
/// `>`, `"` and `'`; control characters other than newline and tab become spaces.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\n' | '\t' => out.push(c),
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// A fragment for an `id` attribute or a URL fragment: letters, digits, `-` and `_` kept,
/// everything else `-` (ids on the record are of that form already).
pub fn anchor(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect()
}

/// A query-string value, percent-encoded.
pub fn url_value(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(b));
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// The views, in navigation order: (path, label).
pub const VIEWS: [(&str, &str); 6] = [
    ("/", "Overview"),
    ("/debates", "Debates"),
    ("/motions", "Motions"),
    ("/arbiters", "Arbiters"),
    ("/record", "Record"),
    ("/runs", "Procedure runs"),
];

const STYLE: &str = r#"
body { font-family: "DejaVu Sans", Helvetica, Arial, sans-serif; margin: 0; color: #1d1d1f; background: #fafafa; }
header { background: #23313f; color: white; padding: 10px 24px; display: flex; align-items: baseline; gap: 24px; flex-wrap: wrap; }
header h1 { font-size: 18px; margin: 0; }
header nav a { color: #d6e4f0; margin-right: 14px; text-decoration: none; font-size: 14px; }
header nav a.here { color: white; font-weight: bold; border-bottom: 2px solid #8fc1e8; }
main { padding: 12px 24px 40px; max-width: 1200px; }
h2 { font-size: 20px; margin: 18px 0 8px; }
h3 { font-size: 16px; margin: 14px 0 6px; }
section.card { background: white; border: 1px solid #dcdcdc; border-radius: 6px; padding: 10px 16px; margin: 12px 0; }
table { border-collapse: collapse; margin: 6px 0; font-size: 13px; }
th, td { border-bottom: 1px solid #e6e6e6; padding: 4px 10px 4px 0; text-align: left; vertical-align: top; }
th { color: #555; font-weight: 600; }
code, .mono { font-family: "DejaVu Sans Mono", monospace; font-size: 12px; }
.muted { color: #666; font-size: 13px; }
.ok { color: #1a7f37; font-weight: 600; }
.bad { color: #b42318; font-weight: 600; }
.warn { color: #9a6700; font-weight: 600; }
.dissent { background: #fff4e5; }
.dissent td:first-child { border-left: 3px solid #d97706; padding-left: 6px; }
.deadlock { background: #fdecea; border-left: 4px solid #b42318; padding: 6px 10px; margin: 6px 0; }
.accepted { background: #eaf6ec; border-left: 4px solid #1a7f37; padding: 6px 10px; margin: 6px 0; }
.open { background: #eef4fb; border-left: 4px solid #3b82c4; padding: 6px 10px; margin: 6px 0; }
.grid { display: flex; flex-wrap: wrap; gap: 12px; }
.stat { background: white; border: 1px solid #dcdcdc; border-radius: 6px; padding: 8px 14px; min-width: 120px; }
.stat b { display: block; font-size: 22px; }
svg { max-width: 100%; height: auto; }
details summary { cursor: pointer; color: #23313f; }
.pre { white-space: pre-wrap; }
pre { white-space: pre-wrap; background: #f4f4f4; padding: 8px; font-size: 12px; }
header .refresh { color: #b8c7d6; font-size: 13px; }
header .refresh a { color: #d6e4f0; }
form.filters { display: flex; flex-wrap: wrap; gap: 10px; align-items: end; background: white; border: 1px solid #dcdcdc; border-radius: 6px; padding: 8px 12px; margin: 8px 0; }
form.filters label { display: flex; flex-direction: column; font-size: 12px; color: #555; }
nav.pager { margin: 10px 0; font-size: 14px; }
nav.pager a, nav.pager b, nav.pager span { margin-right: 8px; }
"#;

/// A whole page: `<title>`, navigation with `here` marked, the auto-refresh toggle of
/// `chrome`, and `body` (already HTML).
pub fn page(chrome: &Chrome, title: &str, here: &str, body: &str) -> String {
    let mut s = String::with_capacity(body.len() + 4096);
    s.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    s.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    if let Some(secs) = chrome.refresh {
        let _ = writeln!(s, "<meta http-equiv=\"refresh\" content=\"{secs}\">");
    }
    let _ = writeln!(
        s,
        "<title>{} · Crucible Panel</title>\n<style>{STYLE}</style>\n</head>\n<body>",
        escape(title)
    );
    s.push_str("<header><h1>Crucible Panel</h1><nav>");
    for (path, label) in VIEWS {
        let class = if path == here { " class=\"here\"" } else { "" };
        let _ = write!(s, "<a href=\"{path}\"{class}>{label}</a>");
    }
    s.push_str("</nav><span class=\"muted\" style=\"color:#b8c7d6\">read-only</span>");
    s.push_str(&refresh_toggle(chrome));
    s.push_str("</header>\n<main>\n");
    let _ = writeln!(s, "<h2>{}</h2>", escape(title));
    s.push_str(body);
    s.push_str("\n</main>\n</body>\n</html>\n");
    s
}

/// The header's auto-refresh state and the link that flips it (none on pages without an
/// address of their own, such as errors).
fn refresh_toggle(chrome: &Chrome) -> String {
    if chrome.target.is_empty() {
        return String::new();
    }
    match chrome.refresh {
        Some(secs) => format!(
            "<span class=\"refresh\" id=\"refresh\">auto-refresh every {secs} s · <a href=\"{}\">turn off</a></span>",
            escape(&chrome.href(None))
        ),
        None => format!(
            "<span class=\"refresh\" id=\"refresh\">auto-refresh off · <a href=\"{}\">refresh every {REFRESH_OFFER} s</a></span>",
            escape(&chrome.href(Some(REFRESH_OFFER)))
        ),
    }
}

/// A link to `href` (a path on this dashboard, not yet escaped) around `text` (already
/// HTML).
pub fn link(href: &str, text: &str) -> String {
    format!("<a href=\"{}\">{text}</a>", escape(href))
}

/// The page of arbiter `id`.
pub fn arbiter_href(id: &str) -> String {
    format!("/arbiters/{}", path_segment(id))
}

/// The page of debate `id`.
pub fn debate_href(id: &str) -> String {
    format!("/debates/{}", path_segment(id))
}

/// The page of motion `id`.
pub fn motion_href(id: &str) -> String {
    format!("/motions/{}", path_segment(id))
}

/// A path segment, percent-encoded like a query value.
fn path_segment(s: &str) -> String {
    url_value(s)
}

/// "3 of 20 (15.0%)": a rate always with its counts; "none of 0" when there is nothing
/// to count.
pub fn rate(part: usize, whole: usize) -> String {
    if whole == 0 {
        return "none of 0".into();
    }
    format!(
        "{part} of {whole} ({:.1}%)",
        100.0 * part as f64 / whole as f64
    )
}

/// `<td>` cells of one table row, each escaped.
pub fn row(cells: &[&str]) -> String {
    let mut s = String::from("<tr>");
    for c in cells {
        let _ = write!(s, "<td>{}</td>", escape(c));
    }
    s.push_str("</tr>");
    s
}

/// A table header row.
pub fn head(cells: &[&str]) -> String {
    let mut s = String::from("<tr>");
    for c in cells {
        let _ = write!(s, "<th>{}</th>", escape(c));
    }
    s.push_str("</tr>");
    s
}

/// A time on the log (milliseconds since the Unix epoch) as `YYYY-MM-DD HH:MM:SS UTC`.
pub fn time_ms(ms: u64) -> String {
    time_s(ms / 1000)
}

/// Seconds since the Unix epoch as `YYYY-MM-DD HH:MM:SS UTC` (civil-from-days, proleptic
/// Gregorian).
pub fn time_s(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_text_is_escaped() {
        assert_eq!(
            escape("<script>alert('x') & \"y\"</script>"),
            "&lt;script&gt;alert(&#39;x&#39;) &amp; &quot;y&quot;&lt;/script&gt;"
        );
        assert_eq!(escape("a\u{0}b\nc"), "a b\nc");
        let p = page(&Chrome::default(), "<img src=x onerror=alert(1)>", "/", "");
        assert!(!p.contains("<img"), "{p}");
        assert!(p.contains("&lt;img src=x onerror=alert(1)&gt;"));
    }

    #[test]
    fn anchors_urls_and_times() {
        assert_eq!(anchor("mot-1-0\"><x"), "mot-1-0---x");
        assert_eq!(url_value("deb 1&x=<"), "deb%201%26x%3D%3C");
        assert_eq!(time_s(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(time_s(1_700_000_000), "2023-11-14 22:13:20 UTC");
        assert_eq!(time_ms(951_782_400_000), "2000-02-29 00:00:00 UTC");
    }
}
