//! G7 formal register: words in capitals (SPEC section 8; reference digest section 7).
//!
//! **Reference mode** reproduces the reference engine: a candidate is an ASCII word (a
//! maximal run of `[A-Za-z0-9_]`, which is what JavaScript's `\b[A-Z]{4,}\b` delimits)
//! made of four or more capitals `A-Z`; the first candidate not on the 25-entry
//! whitelist is reported, later ones are not. So `COVID-19` and `ÉTATS` (as `TATS`) are
//! flagged and `PRISMA`, `GCSE`, `SMART` are refused although they are acronyms.
//!
//! **Acronym mode** (ours, the default) addresses the false positives the paper reports
//! (four of five G7 refusals in a live debate were acronyms). It tells acronyms from
//! ordinary words written in capitals. A word in capitals (two or more `A-Z`) is
//! - a *known acronym* when it is on the reference whitelist, on the domain lexicon
//!   (`lexicons/acronyms-domain.txt`), or defined anywhere in the submission as
//!   `Full Name (ACRO)` or `ACRO (full name)` (the Schwartz-Hearst test);
//! - an *ordinary word* when it is a common English word (`common-words.txt` or
//!   `lexicons/shouting-words.txt`), a regular inflection, negation or derivation of one
//!   (`IGNORES`, `UNTRUE`, `MISLEADING`, `DEBUNKED`), a contraction (`DON'T`) or a word
//!   stretched for emphasis (`NOOOO`), unless a hyphen ties it to a number or a non-word
//!   (`GRACE-FO`, `SENTINEL-2`);
//! - otherwise an *acronym*: `NHANES`, `MODIS`, `SIPRI`, `ZQXV`. Tokens with digits or
//!   lower-case letters (`CMIP6`, `NASAs`) are identifiers and never candidates.
//!
//! The first of these is reported (at most one per field):
//! - two or more ordinary words side by side (separated by spaces or hyphens) of which
//!   one is not a known acronym: `NICE TRY` (at `TRY`), `DO NOT`, `THIS IS WRONG`;
//! - a contraction: `DON'T`, `CAN'T`;
//! - an ordinary word that is not a known acronym, when it has four or more letters
//!   (`NEVER`, `HUGE`, `IGNORED`) or is an emphatic short word from
//!   `shouting-words.txt` (`NOT`, `WAY`, `AT`). A non-emphatic ordinary word listed with
//!   an acronym (`SHARE and ELSA`, `GLODAP, SOCAT`) is taken as a name;
//! - a known acronym of four or more letters with a capital S added (`NASAS`): the
//!   plural of an acronym takes a lower-case s.
//!
//! Unknown two- and three-letter tokens that are not emphatic words (`XRD`, `II`, `TRY`
//! alone) pass, as in the reference.
//!
//! Known limits: an acronym that is also an ordinary word is refused when it is neither
//! listed nor defined (`CDC WONDER`, `BOLD responses`; the fix asks for the long form);
//! a known acronym that is also a word (SMART, CONSORT, NICE) passes when shouted alone;
//! and an ordinary word missing from the word list reads as an acronym (`PATCHY`,
//! `ASTRONOMICAL` are admitted).

use std::collections::HashSet;

use super::lexicon::COMPILED;
use super::{GateField, GateMode};

/// Acronyms defined in the submission, found on first need and then reused for every
/// field of the same submission.
pub(crate) struct Definitions<'a> {
    fields: &'a [GateField],
    defined: Option<HashSet<String>>,
}

impl<'a> Definitions<'a> {
    pub(crate) fn new(fields: &'a [GateField]) -> Definitions<'a> {
        Definitions {
            fields,
            defined: None,
        }
    }

    fn contains(&mut self, token: &str) -> bool {
        let fields = self.fields;
        self.defined
            .get_or_insert_with(|| {
                let mut set = HashSet::new();
                for f in fields {
                    collect_definitions(&f.text, &mut set);
                }
                set
            })
            .contains(token)
    }
}

/// The ASCII words (maximal runs of `[A-Za-z0-9_]`, the words JavaScript's `\b`
/// delimits) that contain two adjacent capitals, in text order. Only such words can be
/// in capitals, so the rest of the text is skipped with one comparison per byte.
fn words_with_capital_pairs(text: &str) -> impl Iterator<Item = &str> + '_ {
    let bytes = text.as_bytes();
    let word = super::text::is_ascii_word;
    let mut i = 0;
    std::iter::from_fn(move || {
        while i + 1 < bytes.len() {
            if bytes[i].is_ascii_uppercase() && bytes[i + 1].is_ascii_uppercase() {
                let mut start = i;
                while start > 0 && word(bytes[start - 1]) {
                    start -= 1;
                }
                let mut end = i + 2;
                while end < bytes.len() && word(bytes[end]) {
                    end += 1;
                }
                i = end;
                return Some(&text[start..end]);
            }
            i += 1;
        }
        None
    })
}

fn all_caps(w: &[u8]) -> bool {
    w.iter().all(u8::is_ascii_uppercase)
}

/// The token G7 reports for `text`, if any (at most one per field).
pub(crate) fn shouted_token<'t>(
    text: &'t str,
    mode: GateMode,
    definitions: &mut Definitions<'_>,
) -> Option<&'t str> {
    match mode {
        GateMode::Reference => reference_token(text),
        GateMode::Acronyms => acronym_mode_token(text, definitions),
    }
}

fn reference_token(text: &str) -> Option<&str> {
    let c = &*COMPILED;
    words_with_capital_pairs(text)
        .find(|t| t.len() >= 4 && all_caps(t.as_bytes()) && !c.whitelist.contains(t))
}

fn acronym_mode_token<'t>(text: &'t str, definitions: &mut Definitions<'_>) -> Option<&'t str> {
    let c = &*COMPILED;
    // The run of adjacent ordinary words in capitals that ends at the current token: the
    // end of its last word, its length, and its first word that is not an acronym.
    let mut run_end = 0;
    let mut run_len = 0;
    let mut run_unknown: Option<&'t str> = None;
    for t in words_with_capital_pairs(text).filter(|t| all_caps(t.as_bytes())) {
        let start = t.as_ptr() as usize - text.as_ptr() as usize;
        let end = start + t.len();
        if let Some(len) = contraction_len(&text.as_bytes()[end..]) {
            // `DON'T`, `CAN'T`, `YOU'RE`: only words contract.
            return Some(&text[start..end + len]);
        }
        let word = is_english_word(t) && !names_a_model(&text[end..]);
        if !word && t.len() < 4 {
            run_len = 0;
            continue;
        }
        let known = c.known_acronyms.contains(t) || definitions.contains(t);
        if word {
            if run_len == 0 || !joins(&text[run_end..start]) {
                run_len = 0;
                run_unknown = None;
            }
            run_len += 1;
            run_end = end;
            if !known && run_unknown.is_none() {
                run_unknown = Some(t);
            }
            // Two or more ordinary words in capitals side by side: `NICE TRY`, `DO NOT`.
            if run_len >= 2
                && let Some(first) = run_unknown
            {
                return Some(first);
            }
        } else {
            run_len = 0;
        }
        if known {
            continue;
        }
        let shouted = if word {
            let emphatic = c.shouting_words.contains_lowercased(t);
            emphatic || (t.len() >= 4 && !listed_with_acronym(text, start, end, definitions))
        } else {
            is_plural_of_acronym(t, definitions)
        };
        if shouted {
            return Some(t);
        }
    }
    None
}

/// Whether the word in capitals at `start..end` is listed next to an acronym, joined by
/// `and`, `or`, a comma, `&` or `/` (`SHARE and ELSA`, `GLODAP, SOCAT`): names in a
/// list are of one kind, so the word is taken as a name. Not asked for the emphatic words
/// of `shouting-words.txt` (`NOAA and NOBODY else` is shouting).
fn listed_with_acronym(
    text: &str,
    start: usize,
    end: usize,
    definitions: &mut Definitions<'_>,
) -> bool {
    let mut acronym = |t: &str| {
        is_acronym_shape(t)
            && (!is_english_word(t)
                || COMPILED.known_acronyms.contains(t)
                || definitions.contains(t))
    };
    list_partner(next_words(text, end)).is_some_and(&mut acronym)
        || list_partner(previous_words(text, start)).is_some_and(&mut acronym)
}

/// The word a list connector joins to, from the words on one side nearest first:
/// `, X`, `& X`, `/ X`, ` and X`, ` or X`.
fn list_partner<'a>(mut words: impl Iterator<Item = (&'a str, &'a str)>) -> Option<&'a str> {
    let (gap, first) = words.next()?;
    if matches!(gap.trim(), "," | "&" | "/") {
        return Some(first);
    }
    let (gap2, second) = words.next()?;
    ((first == "and" || first == "or") && is_space(gap) && is_space(gap2)).then_some(second)
}

fn is_space(gap: &str) -> bool {
    !gap.is_empty() && gap.chars().all(char::is_whitespace)
}

/// The ASCII words after byte `from`, each with the text between it and the previous one.
fn next_words(text: &str, from: usize) -> impl Iterator<Item = (&str, &str)> + '_ {
    let bytes = text.as_bytes();
    let word = super::text::is_ascii_word;
    let mut at = from;
    std::iter::from_fn(move || {
        let w_start = (at..bytes.len()).find(|&i| word(bytes[i]))?;
        let w_end = (w_start..bytes.len())
            .find(|&i| !word(bytes[i]))
            .unwrap_or(bytes.len());
        let gap = &text[at..w_start];
        at = w_end;
        Some((gap, &text[w_start..w_end]))
    })
}

/// The ASCII words before byte `to`, nearest first, each with the text between it and the
/// next one.
fn previous_words(text: &str, to: usize) -> impl Iterator<Item = (&str, &str)> + '_ {
    let bytes = text.as_bytes();
    let word = super::text::is_ascii_word;
    let mut at = to;
    std::iter::from_fn(move || {
        let w_end = (0..at).rev().find(|&i| word(bytes[i]))? + 1;
        let w_start = (0..w_end)
            .rev()
            .find(|&i| !word(bytes[i]))
            .map_or(0, |i| i + 1);
        let gap = &text[w_end..at];
        at = w_start;
        Some((gap, &text[w_start..w_end]))
    })
}

/// Whether `rest`, the text right after a word in capitals, makes the word part of a
/// model or mission name: a hyphen and a number or a non-word in capitals (`GRACE-FO`,
/// `SENTINEL-2`, `MIMIC-IV`), as mixed identifiers such as `CMIP6` are.
fn names_a_model(rest: &str) -> bool {
    let Some(tail) = rest.strip_prefix('-') else {
        return false;
    };
    let len = tail
        .bytes()
        .position(|b| !super::text::is_ascii_word(b))
        .unwrap_or(tail.len());
    let next = &tail[..len];
    let b = next.as_bytes();
    !b.is_empty()
        && (b[0].is_ascii_digit()
            || (b
                .iter()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
                && !is_english_word(next)))
}

/// Whether the text between two words in capitals keeps them in one run: only spaces and
/// hyphens, as in `NICE TRY` or `HALF-TRUE`.
fn joins(gap: &str) -> bool {
    !gap.is_empty() && gap.chars().all(|ch| ch == '-' || ch.is_whitespace())
}

/// The length of a contraction ending (`'T`, `'RE`, `'VE`, `'LL`, `'M`, `'D`, with a
/// straight or curly apostrophe) at the start of `rest`, if there is one.
fn contraction_len(rest: &[u8]) -> Option<usize> {
    let apostrophe = if rest.starts_with(b"'") {
        1
    } else if rest.starts_with("\u{2019}".as_bytes()) {
        3
    } else {
        return None;
    };
    let tail = &rest[apostrophe..];
    let letters = tail
        .iter()
        .position(|&b| !super::text::is_ascii_word(b))
        .unwrap_or(tail.len());
    matches!(&tail[..letters], b"T" | b"RE" | b"VE" | b"LL" | b"M" | b"D")
        .then_some(apostrophe + letters)
}

/// `NASAS`: a known acronym of four or more letters with a capital S added. The plural
/// of an acronym takes a lower-case s (`NASAs`); this is not a listed acronym.
fn is_plural_of_acronym(t: &str, definitions: &mut Definitions<'_>) -> bool {
    let c = &*COMPILED;
    t.len() >= 5
        && t.ends_with('S')
        && (c.known_acronyms.contains(&t[..t.len() - 1]) || definitions.contains(&t[..t.len() - 1]))
}

/// Longest word in capitals G7 looks up; a longer run of capitals counts as a word.
const MAX_WORD: usize = 40;

/// Whether a word in capitals (`A-Z` only) is an ordinary English word: a common word, a
/// regular inflection, negation or derivation of one, or one stretched for emphasis
/// (`NOOOO`). Anything else (`NHANES`, `MODIS`, `ZQXV`) reads as an acronym.
pub(crate) fn is_english_word(capitals: &str) -> bool {
    if capitals.len() > MAX_WORD {
        return true;
    }
    let mut buf = [0u8; MAX_WORD];
    let w = &mut buf[..capitals.len()];
    w.copy_from_slice(capitals.as_bytes());
    w.make_ascii_lowercase();
    let w = &*w;
    base(w, 2) || negated(w) || derived(w) || elongated(w)
}

/// A dictionary word: the common words or the shouting words.
fn listed(w: &[u8]) -> bool {
    let c = &*COMPILED;
    std::str::from_utf8(w).is_ok_and(|s| c.common_words.contains(s) || c.shouting_words.contains(s))
}

/// `stem` followed by `tail` is a listed word or (`depth` permitting) an inflection of one.
fn base_with(stem: &[u8], tail: &[u8], depth: u8) -> bool {
    let n = stem.len() + tail.len();
    if n > MAX_WORD + 1 {
        return false;
    }
    let mut buf = [0u8; MAX_WORD + 1];
    buf[..stem.len()].copy_from_slice(stem);
    buf[stem.len()..n].copy_from_slice(tail);
    base(&buf[..n], depth)
}

/// A listed word, or a regular inflection of one (at most `depth` suffixes deep).
fn base(w: &[u8], depth: u8) -> bool {
    listed(w) || (depth > 0 && inflected(w, depth - 1))
}

/// `stem` ends in a doubled consonant that an inflection added (`stopp`-ed, `bigg`-er).
fn undoubled(stem: &[u8], depth: u8) -> bool {
    let n = stem.len();
    n >= 4
        && stem[n - 1] == stem[n - 2]
        && !b"aeiouls".contains(&stem[n - 1])
        && base(&stem[..n - 1], depth)
}

/// A regular inflection of a listed word: `-s`, `-es`, `-ies`, `-ed`, `-ied`, `-ing`,
/// `-ly`, `-ily`, `-ally`, `-er`, `-est`, `-ness`. Stems of plural and comparative forms
/// have four or more letters, so `ICES` or `ERAS` are not taken for plurals.
fn inflected(w: &[u8], depth: u8) -> bool {
    let n = w.len();
    let ends = |s: &[u8]| w.ends_with(s);
    let cut = |k: usize| &w[..n - k];
    (ends(b"ies") && n >= 5 && base_with(cut(3), b"y", depth))
        || (ends(b"es") && n >= 6 && sibilant(cut(2)) && base(cut(2), depth))
        || (ends(b"s") && !ends(b"ss") && n >= 5 && base(cut(1), depth))
        || (ends(b"ied") && n >= 5 && base_with(cut(3), b"y", depth))
        || (ends(b"ed")
            && n >= 5
            && (base(cut(2), depth) || base(cut(1), depth) || undoubled(cut(2), depth)))
        || (ends(b"ing")
            && n >= 6
            && (base(cut(3), depth) || base_with(cut(3), b"e", depth) || undoubled(cut(3), depth)))
        || (ends(b"ily") && n >= 6 && base_with(cut(3), b"y", depth))
        || (ends(b"ally") && n >= 8 && base(cut(4), depth))
        || (ends(b"ly") && n >= 6 && (base(cut(2), depth) || base_with(cut(1), b"e", depth)))
        || (ends(b"ier") && n >= 6 && base_with(cut(3), b"y", depth))
        || (ends(b"iest") && n >= 7 && base_with(cut(4), b"y", depth))
        || (ends(b"er")
            && n >= 6
            && (base(cut(2), depth) || base(cut(1), depth) || undoubled(cut(2), depth)))
        || (ends(b"est")
            && n >= 7
            && (base(cut(3), depth) || base(cut(2), depth) || undoubled(cut(3), depth)))
        || (ends(b"iness") && n >= 8 && base_with(cut(5), b"y", depth))
        || (ends(b"ness") && n >= 8 && base(cut(4), depth))
}

/// Whether a stem takes `-es` rather than `-s` (`fixes`, `vanishes`, `goes`), so that
/// `CHILDES` is not read as `child` + `es`.
fn sibilant(stem: &[u8]) -> bool {
    [&b"s"[..], b"x", b"z", b"ch", b"sh", b"o"]
        .iter()
        .any(|e| stem.ends_with(e))
}

/// A negation or degree prefix on a word of four or more letters: `UNTRUE`,
/// `INCORRECT`, `NONEXISTENT`, `MISREAD`, `OVERSTATED`.
fn negated(w: &[u8]) -> bool {
    const PREFIXES: [&[u8]; 10] = [
        b"un", b"in", b"im", b"il", b"ir", b"non", b"dis", b"mis", b"over", b"under",
    ];
    PREFIXES.iter().any(|p| {
        w.len() >= p.len() + 4
            && w.starts_with(p)
            && (base(&w[p.len()..], 2) || derived(&w[p.len()..]))
    })
}

/// Seven or more letters ending in an English derivational or inflectional suffix
/// (`MISLEADING`, `WORTHLESS`, `DECEPTIVE`, `DEBUNKED`): acronyms do not take these
/// endings.
fn derived(w: &[u8]) -> bool {
    const SUFFIXES: [&[u8]; 24] = [
        b"tion", b"tions", b"sion", b"sions", b"ness", b"ment", b"ments", b"ity", b"ities", b"ous",
        b"ive", b"ful", b"less", b"able", b"ible", b"ly", b"ing", b"ings", b"ised", b"ized", b"ed",
        b"shes", b"ches", b"sses",
    ];
    w.len() >= 7 && SUFFIXES.iter().any(|s| w.ends_with(s))
}

/// A word stretched for emphasis (`NOOOO`, `SOOO`, `WAAAY`): a letter repeated three or
/// more times after the first position; collapsing every such repeat to one or two
/// letters gives a word.
fn elongated(w: &[u8]) -> bool {
    let stretched = w
        .windows(3)
        .enumerate()
        .any(|(i, x)| i > 0 && x[0] == x[1] && x[1] == x[2]);
    if !stretched {
        return false;
    }
    (1..=2).any(|keep| {
        let mut buf = [0u8; MAX_WORD];
        let mut n = 0;
        let mut i = 0;
        while i < w.len() {
            let mut j = i;
            while j < w.len() && w[j] == w[i] {
                j += 1;
            }
            let take = if j - i >= 3 && i > 0 { keep } else { j - i };
            buf[n..n + take].fill(w[i]);
            n += take;
            i = j;
        }
        n >= 2 && base(&buf[..n], 2)
    })
}

/// Adds to `set` every acronym `text` defines as `Long Form (ACRO)` or `ACRO (long form)`.
fn collect_definitions(text: &str, set: &mut HashSet<String>) {
    let bytes = text.as_bytes();
    let mut from = 0;
    while let Some(rel) = bytes[from..].iter().position(|&b| b == b'(') {
        let open = from + rel;
        from = open + 1;
        let Some(close_rel) = bytes[open + 1..].iter().take(240).position(|&b| b == b')') else {
            continue;
        };
        let close = open + 1 + close_rel;
        let inner = text[open + 1..close].trim();
        let before = text[..open].trim_end();
        // `Long Form (ACRO)`, allowing a plural `(ACROs)`.
        let acro = inner
            .strip_suffix('s')
            .filter(|a| is_acronym_shape(a))
            .unwrap_or(inner);
        if is_acronym_shape(acro) {
            let long = last_words(before, acro.len());
            if long_form_fits(acro, long) {
                set.insert(acro.to_owned());
            }
            continue;
        }
        // `ACRO (long form)`.
        let token_start = before
            .bytes()
            .rposition(|b| !super::text::is_ascii_word(b))
            .map_or(0, |i| i + 1);
        let acro = &before[token_start..];
        if is_acronym_shape(acro) && long_form_fits(acro, inner) {
            set.insert(acro.to_owned());
        }
    }
}

/// Two or more capitals (digits allowed after the first letter), as acronyms are written.
fn is_acronym_shape(t: &str) -> bool {
    let b = t.as_bytes();
    b.len() >= 2
        && b.len() <= 12
        && b[0].is_ascii_uppercase()
        && b.iter()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
        && b.iter().filter(|c| c.is_ascii_uppercase()).count() >= 2
}

/// The tail of `before` a long form can occupy: at most `min(n + 5, 2n)` words, stopping
/// at sentence punctuation.
fn last_words(before: &str, n: usize) -> &str {
    let limit = (n + 5).min(2 * n);
    let clause_start = before
        .rfind(['.', ';', ':', '(', ')', '!', '?', '\n'])
        .map_or(0, |i| i + 1);
    let clause = &before[clause_start..];
    let mut words = 0;
    let mut start = clause.len();
    let mut in_word = false;
    for (i, ch) in clause.char_indices().rev() {
        if ch.is_whitespace() {
            if in_word {
                words += 1;
                if words == limit {
                    break;
                }
            }
            in_word = false;
        } else {
            in_word = true;
        }
        start = i;
    }
    clause[start..].trim()
}

/// Schwartz-Hearst: the acronym's letters occur right to left in the long form, and its
/// first letter starts a word. The long form must have at least two words and not be in
/// capitals itself, so `NEVER (never)` defines nothing.
fn long_form_fits(acro: &str, long: &str) -> bool {
    let letters: Vec<char> = acro
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect();
    let chars: Vec<char> = long.chars().flat_map(char::to_lowercase).collect();
    let original: Vec<char> = long.chars().collect();
    if long.split_whitespace().count() < 2 || original.iter().all(|c| !c.is_lowercase()) {
        return false;
    }
    let mut li = chars.len();
    for (si, &want) in letters.iter().enumerate().rev() {
        loop {
            if li == 0 {
                return false;
            }
            li -= 1;
            let starts_word = li == 0 || !chars[li - 1].is_alphanumeric();
            if chars[li] == want && (si > 0 || starts_word) {
                break;
            }
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ours(text: &str) -> Option<String> {
        let fields = [GateField::new("grounds", "Grounds", text)];
        let mut d = Definitions::new(&fields);
        shouted_token(text, GateMode::Acronyms, &mut d).map(str::to_owned)
    }

    #[test]
    fn definitions_follow_schwartz_hearst() {
        let mut set = HashSet::new();
        collect_definitions(
            "We followed the Preferred Reporting Items for Systematic reviews and Meta-Analyses (PRISMA) statement.",
            &mut set,
        );
        collect_definitions(
            "Staff had HVAC (heating, ventilation and air conditioning) training.",
            &mut set,
        );
        collect_definitions(
            "It was NEVER (never) true. Zero Quota (ZQXV) appears.",
            &mut set,
        );
        assert!(set.contains("PRISMA"));
        assert!(set.contains("HVAC"));
        assert!(!set.contains("NEVER"));
        assert!(!set.contains("ZQXV"));
    }

    #[test]
    fn acronym_mode_separates_acronyms_from_shouting() {
        assert_eq!(ours("The PRISMA flow diagram and GCSE results."), None);
        assert_eq!(ours("This is NEVER acceptable."), Some("NEVER".into()));
        assert_eq!(ours("THIS IS WRONG."), Some("THIS".into()));
        assert_eq!(ours("You must NOT skip it."), Some("NOT".into()));
        assert_eq!(ours("It does not hold AT ALL."), Some("AT".into()));
        assert_eq!(ours("Open at 9 AM in the IT office."), None);
        assert_eq!(ours("The NASAS archive."), Some("NASAS".into()));
        assert_eq!(
            ours("Under US GDPR-style law and the UK NHS IT budget."),
            None
        );
        assert_eq!(
            ours("A Quality Reporting Tool Index (QRTI) was used; QRTI scores rose."),
            None
        );
    }

    #[test]
    fn ordinary_words_in_capitals_are_shouting_other_capitals_are_acronyms() {
        // Not dictionary words: acronyms, defined or not; identifiers with digits.
        assert_eq!(ours("NHANES, MODIS and CMIP6 data were pooled."), None);
        assert_eq!(ours("Records from NOAA and the ZQXV index agree."), None);
        assert_eq!(ours("The AAAS statement and the IIIT campus."), None);
        assert_eq!(ours("ICES advice and ERAS protocols."), None);
        // Dictionary words, their inflections, negations and derivations.
        assert_eq!(ours("The model IGNORES it."), Some("IGNORES".into()));
        assert_eq!(ours("It was CHERRY-PICKED."), Some("CHERRY".into()));
        assert_eq!(ours("That is UNTRUE."), Some("UNTRUE".into()));
        assert_eq!(ours("It is WORTHLESSNESS."), Some("WORTHLESSNESS".into()));
        assert_eq!(ours("The bars are SOOO wide."), Some("SOOO".into()));
        // Two or more ordinary words side by side, even when one is also an acronym.
        assert_eq!(ours("NICE TRY, but no."), Some("TRY".into()));
        assert_eq!(ours("The NICE guidance and the US IT sector."), None);
        // Contractions are words.
        assert_eq!(ours("The data DON'T fit."), Some("DON'T".into()));
        assert_eq!(
            ours("You CAN\u{2019}T infer that."),
            Some("CAN\u{2019}T".into())
        );
        // A word listed with an acronym is a name, unless it is an emphatic word.
        assert_eq!(ours("Cohorts from SHARE and ELSA."), None);
        assert_eq!(ours("NOAA and NOBODY else."), Some("NOBODY".into()));
        // A word hyphenated to a number or a non-word names a model or mission.
        assert_eq!(ours("GRACE-FO and SENTINEL-2 data agree."), None);
        assert_eq!(ours("It is HALF-TRUE."), Some("HALF".into()));
        // Known limit: a dictionary word used as a name on its own.
        assert_eq!(ours("Counts from CDC WONDER."), Some("WONDER".into()));
    }

    #[test]
    fn english_word_morphology() {
        for w in [
            "WRONG",
            "FACTS",
            "TOTALLY",
            "STOPPED",
            "BIGGEST",
            "RUNNING",
            "PARTIES",
            "BASICALLY",
            "SIMPLY",
            "MISREAD",
            "NONEXISTENT",
            "OVERSTATED",
            "MISLEADING",
            "NOOOO",
            "DEBUNKED",
            "VANISHES",
        ] {
            assert!(is_english_word(w), "{w}");
        }
        for w in [
            "NHANES", "MODIS", "NOAA", "LIBOR", "SIPRI", "TIPS", "VIII", "UNICEF", "CHILDES",
        ] {
            assert!(!is_english_word(w), "{w}");
        }
    }
}
