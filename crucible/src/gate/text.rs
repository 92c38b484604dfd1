//! JavaScript string semantics the Gate's outcomes depend on (SPEC section 8; reference
//! digest section 7, "Matching semantics").
//!
//! The reference engine works on UTF-16 strings with JavaScript's `trim`, `\s`,
//! `toLowerCase` and ASCII-only `\b`. Rust's `str::trim` and `char::is_whitespace`
//! disagree on U+FEFF and U+0085, and byte offsets are not UTF-16 offsets, so every
//! helper here is explicit about which of the two it follows.

/// JavaScript's `\s` (WhiteSpace plus LineTerminator, ECMA-262 sections 12.2 and 12.3):
/// includes U+FEFF and the Unicode space separators, excludes U+0085 and U+200B.
pub(crate) fn is_js_whitespace(c: char) -> bool {
    matches!(
        c,
        '\u{9}' | '\u{A}' | '\u{B}' | '\u{C}' | '\u{D}' | ' ' | '\u{A0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200A}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202F}'
                | '\u{205F}'
                | '\u{3000}'
                | '\u{FEFF}'
    )
}

/// True when the text is empty after JavaScript `trim`: every per-field rule skips such
/// a field (SPEC 8, "Per-field rules MUST skip empty fields").
pub(crate) fn is_blank(text: &str) -> bool {
    // Fast exit on the first printable ASCII byte, which is the common case.
    for &b in text.as_bytes() {
        if b.is_ascii() {
            if !matches!(b, b'\t' | b'\n' | 0x0B | 0x0C | b'\r' | b' ') {
                return false;
            }
        } else {
            return text.chars().all(is_js_whitespace);
        }
    }
    true
}

/// Words for G3: the pieces of the trimmed text split on runs of JavaScript whitespace.
pub(crate) fn word_count(text: &str) -> usize {
    if text.is_ascii() {
        return super::byteclass::ascii_word_count(text.as_bytes());
    }
    let mut count = 0;
    let mut in_word = false;
    for c in text.chars() {
        let ws = is_js_whitespace(c);
        if !ws && !in_word {
            count += 1;
        }
        in_word = !ws;
    }
    count
}

/// JavaScript `toLowerCase`. Rust's `str::to_lowercase` applies the same full Unicode
/// mappings, including U+0130 becoming two characters, the Kelvin sign becoming `k` and
/// the context-dependent final sigma; both engines here use Unicode 17.
pub(crate) fn js_lowercase(text: &str) -> String {
    if text.is_ascii() {
        text.to_ascii_lowercase()
    } else {
        text.to_lowercase()
    }
}

/// True when lower-casing can move text relative to the original or turn a non-ASCII
/// character into an ASCII letter: U+0130 (lower-cases to two UTF-16 units) and U+212A
/// KELVIN SIGN (lower-cases to `k`). These are the only two such code points; without
/// them an ASCII case-insensitive scan of the original equals a scan of the lower-cased
/// string.
pub(crate) fn has_case_shifters(text: &str) -> bool {
    let b = text.as_bytes();
    // U+0130 is C4 B0, U+212A is E2 84 AA in UTF-8.
    b.windows(2).any(|w| w == [0xC4, 0xB0]) || b.windows(3).any(|w| w == [0xE2, 0x84, 0xAA])
}

/// ASCII word character, as JavaScript `\w` and `\b` see it without the `u` flag.
pub(crate) fn is_ascii_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// The boundary test of the lexicon rules: a character of the lower-cased text that is
/// `[a-z0-9]` glues a phrase to its neighbour. Non-ASCII bytes never do.
pub(crate) fn glues(lower_byte: u8) -> bool {
    lower_byte.is_ascii_lowercase() || lower_byte.is_ascii_digit()
}

/// UTF-16 units `[start, end)` of `units` as a Rust string. A slice boundary that splits
/// a surrogate pair yields U+FFFD where JavaScript would keep a lone surrogate: the one
/// place our excerpts can differ from the reference's (docs/GATE.md).
fn utf16_slice(units: &[u16], start: usize, end: usize) -> String {
    let end = end.min(units.len());
    if start >= end {
        return String::new();
    }
    String::from_utf16_lossy(&units[start..end])
}

/// The excerpt of a report: the first case-insensitive occurrence of `needle` anywhere in
/// `source` (no boundary test), with up to 30 UTF-16 units either side and `...` where
/// the text was cut; the needle itself when it does not occur.
///
/// Like the reference, the position is found in the lower-cased text and then applied to
/// the original, and the window uses the needle's own length.
pub(crate) fn excerpt_around(source: &str, needle: &str) -> String {
    if source.is_ascii() && needle.is_ascii() {
        let Some(i) = ascii_ci_find(source.as_bytes(), needle.as_bytes()) else {
            return needle.to_owned();
        };
        let len = source.len();
        let start = i.saturating_sub(30);
        let end = (i + needle.len() + 30).min(len);
        let mut out = String::with_capacity(end.saturating_sub(start) + 6);
        if start > 0 {
            out.push_str("...");
        }
        if start < end {
            out.push_str(&source[start..end]);
        }
        if end < len {
            out.push_str("...");
        }
        return out;
    }
    let lower: Vec<u16> = js_lowercase(source).encode_utf16().collect();
    let lower_needle: Vec<u16> = js_lowercase(needle).encode_utf16().collect();
    let Some(i) = find_units(&lower, &lower_needle) else {
        return needle.to_owned();
    };
    let units: Vec<u16> = source.encode_utf16().collect();
    let needle_len = needle.encode_utf16().count();
    let start = i.saturating_sub(30);
    let end = (i + needle_len + 30).min(units.len());
    let mut out = String::new();
    if start > 0 {
        out.push_str("...");
    }
    out.push_str(&utf16_slice(&units, start, end));
    if end < units.len() {
        out.push_str("...");
    }
    out
}

/// JavaScript `source.substr(start, len)` in UTF-16 units: how the reference takes a
/// lexicon hit from the original text at an offset found in the lower-cased text.
pub(crate) fn utf16_substr(source: &str, start: usize, len: usize) -> String {
    let units: Vec<u16> = source.encode_utf16().collect();
    utf16_slice(&units, start, start.saturating_add(len))
}

/// First ASCII case-insensitive occurrence of `needle` in `hay` (both compared after
/// ASCII lower-casing), as a byte offset.
pub(crate) fn ascii_ci_find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() {
        return Some(0);
    }
    if needle.len() > hay.len() {
        return None;
    }
    let first = needle[0].to_ascii_lowercase();
    (0..=hay.len() - needle.len()).find(|&i| {
        hay[i].to_ascii_lowercase() == first
            && hay[i..i + needle.len()].eq_ignore_ascii_case(needle)
    })
}

/// JavaScript `indexOf` over UTF-16 units.
fn find_units(hay: &[u16], needle: &[u16]) -> Option<usize> {
    if needle.is_empty() {
        return Some(0);
    }
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Offset in UTF-16 units of byte offset `byte` of `text` (a char boundary).
pub(crate) fn utf16_offset(text: &str, byte: usize) -> usize {
    let prefix = &text.as_bytes()[..byte.min(text.len())];
    if prefix.is_ascii() {
        return prefix.len();
    }
    text.get(..byte).map_or(0, |p| p.encode_utf16().count())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whitespace_follows_javascript_not_rust() {
        assert!(is_js_whitespace('\u{FEFF}'));
        assert!(!'\u{FEFF}'.is_whitespace());
        assert!(!is_js_whitespace('\u{85}'));
        assert!('\u{85}'.is_whitespace());
        assert!(!is_js_whitespace('\u{200B}'));
        assert!(is_blank("\u{FEFF} \u{3000}\n"));
        assert!(!is_blank("\u{85}"));
        assert_eq!(word_count("a\u{FEFF}b"), 2);
        assert_eq!(word_count("a\u{85}b"), 1);
        assert_eq!(word_count("  one two\tthree  "), 3);
        assert_eq!(word_count(""), 0);
    }

    #[test]
    fn excerpt_windows_are_thirty_units_with_ellipses() {
        let text = format!("{}liar{}", "x".repeat(40), "y".repeat(40));
        let e = excerpt_around(&text, "liar");
        assert_eq!(e, format!("...{}liar{}...", "x".repeat(30), "y".repeat(30)));
        assert_eq!(excerpt_around("short liar", "LIAR"), "short liar");
        assert_eq!(excerpt_around("nothing here", "zzz"), "zzz");
    }

    #[test]
    fn excerpt_counts_utf16_units_and_replaces_split_pairs() {
        // 29 units of padding then an emoji (2 units): the 30-unit window starts inside it.
        let text = format!("\u{1F600}{}!", "a".repeat(29));
        let e = excerpt_around(&text, "!");
        assert_eq!(e, format!("...\u{FFFD}{}!", "a".repeat(29)));
    }

    #[test]
    fn lowercase_shifters_are_detected() {
        assert!(has_case_shifters("\u{212A}nows"));
        assert!(has_case_shifters("\u{130}"));
        assert!(!has_case_shifters("Ünïcödé Σ"));
        assert_eq!(js_lowercase("\u{212A}"), "k");
        assert_eq!(js_lowercase("ΑΣ Β"), "ας β");
    }
}
