//! G7 formal register: words in capitals (SPEC section 8; reference digest section 7).
//!
//! **Reference mode** reproduces the reference engine: a candidate is an ASCII word (a
//! maximal run of `[A-Za-z0-9_]`, which is what JavaScript's `\b[A-Z]{4,}\b` delimits)
//! made of four or more capitals `A-Z`; the first candidate not on the 25-entry
//! whitelist is reported, later ones are not. So `COVID-19` and `ÉTATS` (as `TATS`) are
//! flagged and `PRISMA`, `GCSE`, `SMART` are refused although they are acronyms.
//!
//! **Acronym mode** (ours, the default) addresses the false positives the paper reports
//! (four of five G7 refusals in a live debate were acronyms). A word in capitals is an
//! *acronym* when it is on the reference whitelist, on the published domain lexicon
//! (`lexicons/acronyms-domain.txt`), or defined anywhere in the submission as
//! `Full Name (ACRO)` or `ACRO (full name)`, where the letters of the acronym appear in
//! order in the long form and its first letter starts a word (the Schwartz-Hearst test).
//! The first word in capitals (two or more letters) that is not an acronym is reported
//! when it is either
//! - four or more capitals long (`NEVER`, `ABSOLUTELY`, `NASAS`, an undefined `ZQXV`),
//!   as in the reference, or
//! - an ordinary English word of any length from `lexicons/shouting-words.txt`, so short
//!   shouting (`DO NOT`, `THIS IS WRONG` at `IS`, `AT ALL`) is caught too, which the
//!   reference misses.
//!
//! Unknown two- and three-letter tokens that are not ordinary words (`XRD`, `II`) pass,
//! as in the reference.
//!
//! Known limit: an acronym that is also an English word (SMART, CONSORT, NICE) passes
//! when shouted alone.

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
    let ordinary = |t: &str| c.shouting_words.contains_lowercased(t);
    words_with_capital_pairs(text)
        .filter(|t| all_caps(t.as_bytes()))
        .find(|t| {
            let suspicious = t.len() >= 4 || ordinary(t);
            suspicious && !(c.known_acronyms.contains(t) || definitions.contains(t))
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
}
