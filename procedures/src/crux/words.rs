//! Text as the checks see it: words counted the way a reader would, lower-cased tokens,
//! crude stems, numbers in one normal form, and word n-grams (docs/CRUX.md, "Words").
//!
//! Deliberately simple and fully deterministic: every figure a check reports can be
//! recomputed by hand from the documents.

use std::collections::BTreeSet;

/// Words as a reader counts them: whitespace-separated runs with a letter or digit. The
/// budget is measured with this, never with the advocate's own count (seed,
/// "Symmetry enforcement").
pub fn word_count(text: &str) -> usize {
    text.split_whitespace()
        .filter(|w| w.chars().any(char::is_alphanumeric))
        .count()
}

/// Lower-cased tokens: letters and digits; apostrophes inside words are dropped
/// ("vendor's" is `vendors`), a `.` or `,` between digits stays (`1.25`, `40,000`).
pub fn tokens(text: &str) -> Vec<String> {
    cased_tokens(text)
        .into_iter()
        .map(|t| t.to_lowercase())
        .collect()
}

fn cased_tokens(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut cur = String::new();
    for (i, &c) in chars.iter().enumerate() {
        let prev = i.checked_sub(1).and_then(|j| chars.get(j)).copied();
        let next = chars.get(i + 1).copied();
        let digit_sep = (c == '.' || c == ',')
            && prev.is_some_and(|p| p.is_ascii_digit())
            && next.is_some_and(|n| n.is_ascii_digit());
        let apostrophe = (c == '\'' || c == '\u{2019}')
            && prev.is_some_and(char::is_alphanumeric)
            && next.is_some_and(char::is_alphanumeric);
        if c.is_alphanumeric() || digit_sep {
            cur.push(c);
        } else if !apostrophe && !cur.is_empty() {
            out.push(std::mem::take(&mut cur));
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// Tokens for hedge detection: as [`tokens`], except that a capitalised "May" is the
/// month, not the hedge (the controls' first run caught "in May" as a hedge).
pub fn hedge_tokens(text: &str) -> Vec<String> {
    cased_tokens(text)
        .into_iter()
        .map(|t| {
            if t == "May" {
                "may_month".to_string()
            } else {
                t.to_lowercase()
            }
        })
        .collect()
}

/// A crude suffix stripper, so "licences"/"licence" and "shipping"/"ships" meet.
pub fn stem(token: &str) -> String {
    let t = token;
    if t.starts_with(|c: char| c.is_ascii_digit()) {
        return t.to_string();
    }
    let n = t.chars().count();
    for (suffix, min, repl) in [
        ("ies", 5, "y"),
        ("ing", 6, ""),
        ("ed", 5, ""),
        ("sses", 6, "ss"),
        ("xes", 5, "x"),
        ("ches", 6, "ch"),
        ("shes", 6, "sh"),
        ("s", 4, ""),
    ] {
        if n >= min && t.ends_with(suffix) && !t.ends_with("ss") {
            let base = &t[..t.len() - suffix.len()];
            return format!("{base}{repl}");
        }
    }
    t.to_string()
}

/// Function words, number words and reporting verbs: never evidence of content.
const STOPWORDS: &[&str] = &[
    "a",
    "about",
    "above",
    "after",
    "again",
    "against",
    "all",
    "also",
    "am",
    "an",
    "and",
    "any",
    "are",
    "as",
    "at",
    "be",
    "because",
    "been",
    "before",
    "being",
    "below",
    "between",
    "both",
    "but",
    "by",
    "can",
    "cannot",
    "could",
    "did",
    "do",
    "does",
    "doing",
    "down",
    "during",
    "each",
    "either",
    "even",
    "every",
    "few",
    "for",
    "from",
    "further",
    "had",
    "has",
    "have",
    "having",
    "he",
    "her",
    "here",
    "hers",
    "him",
    "his",
    "how",
    "however",
    "i",
    "if",
    "in",
    "into",
    "is",
    "it",
    "its",
    "itself",
    "just",
    "least",
    "less",
    "many",
    "may",
    "me",
    "might",
    "more",
    "most",
    "much",
    "must",
    "my",
    "neither",
    "no",
    "nor",
    "not",
    "now",
    "of",
    "off",
    "on",
    "once",
    "one",
    "only",
    "or",
    "other",
    "our",
    "ours",
    "out",
    "over",
    "own",
    "per",
    "same",
    "she",
    "should",
    "so",
    "some",
    "such",
    "than",
    "that",
    "the",
    "their",
    "theirs",
    "them",
    "then",
    "there",
    "these",
    "they",
    "this",
    "those",
    "through",
    "to",
    "too",
    "under",
    "until",
    "up",
    "upon",
    "us",
    "very",
    "was",
    "we",
    "were",
    "what",
    "when",
    "where",
    "whether",
    "which",
    "while",
    "who",
    "whom",
    "why",
    "will",
    "with",
    "within",
    "without",
    "would",
    "yet",
    "you",
    "your",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "first",
    "second",
    "third",
    "next",
    "last",
    "half",
    "twice",
    "says",
    "said",
    "states",
    "stated",
    "shows",
    "show",
    "reports",
    "reported",
    "notes",
    "noted",
    "lists",
    "according",
    "item",
    "items",
    "pack",
    "source",
    "quote",
    "quoted",
    "evidence",
    "claim",
    "claims",
    "thing",
    "things",
    "way",
    "ways",
    "lot",
    "well",
    "still",
    "already",
    "around",
    "since",
    "though",
    "although",
    "unless",
    "whereas",
    "therefore",
    "thus",
    "hence",
    "like",
    "make",
    "makes",
    "made",
    "get",
    "gets",
    "got",
    "take",
    "takes",
    "took",
    "put",
    "yes",
    "than",
    "another",
    "among",
    "via",
    "per",
    "etc",
    "ie",
    "eg",
    "vs",
    "versus",
    "today",
    "currently",
    "year",
    "years",
];

pub fn is_stopword(token: &str) -> bool {
    STOPWORDS.contains(&token)
}

pub fn is_number(token: &str) -> bool {
    token.starts_with(|c: char| c.is_ascii_digit())
}

/// Stems of the tokens that carry content (not stopwords, at least three letters, or a
/// number).
pub fn content_stems(text: &str) -> Vec<String> {
    tokens(text)
        .into_iter()
        .filter(|t| !is_stopword(t) && (t.chars().count() >= 3 || is_number(t)))
        .map(|t| stem(&t))
        .collect()
}

/// The numbers in a text, in one form: thousands separators dropped, `k`/`m`/`bn`
/// suffixes multiplied out, trailing decimal zeros dropped ("$40,000" and "$40k" are
/// both `40000`; "1.50" is `1.5`). Years are numbers too.
pub fn numbers(text: &str) -> BTreeSet<String> {
    tokens(text)
        .iter()
        .filter(|t| is_number(t))
        .filter_map(|t| normal_number(t))
        .collect()
}

fn normal_number(token: &str) -> Option<String> {
    let digits: String = token
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.' || *c == ',')
        .filter(|c| *c != ',')
        .collect();
    let suffix = &token[token.len().min(
        token
            .char_indices()
            .find(|(_, c)| c.is_alphabetic())
            .map_or(token.len(), |(i, _)| i),
    )..];
    let scale = match suffix {
        "k" => 1e3,
        "m" | "mn" => 1e6,
        "bn" | "b" => 1e9,
        _ => 1.0,
    };
    let value: f64 = digits.parse().ok()?;
    let v = value * scale;
    if !v.is_finite() {
        return None;
    }
    Some(if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    })
}

/// Whitespace runs collapsed to one space, for verbatim comparison of quotes across
/// line wrapping; curly quotes and apostrophes compare as straight ones.
pub fn normalise_space(text: &str) -> String {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .replace(['\u{2018}', '\u{2019}'], "'")
        .replace(['\u{201c}', '\u{201d}'], "\"")
}

/// Words that open a new clause after a comma (", so", ", who"): a hedge before them
/// does not qualify what follows.
const CLAUSE_OPENERS: &[&str] = &[
    "and", "but", "so", "or", "yet", "who", "which", "whose", "while", "whereas", "although",
    "though", "because", "since", "then", "thus", "hence",
];

/// A text cut into clauses, the scope a hedge or a bound has: at sentence ends, at `;`,
/// `:`, dashes and brackets, and at a comma that opens a new clause (", and", ", who").
/// A comma alone does not cut, so "If the estimate holds, the bill would pass $200,000"
/// stays one clause and its "if" qualifies the figure.
pub fn clauses(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut cur = String::new();
    for (i, &c) in chars.iter().enumerate() {
        let next = chars.get(i + 1).copied();
        let cut = match c {
            ';' | ':' | '(' | ')' | '\u{2014}' | '\u{2013}' | '!' | '?' => true,
            '.' => next.is_none_or(char::is_whitespace),
            '-' => {
                next.is_some_and(char::is_whitespace)
                    && i.checked_sub(1)
                        .and_then(|j| chars.get(j))
                        .is_some_and(|p| p.is_whitespace())
            }
            ',' => {
                let rest: String = chars.get(i + 1..).unwrap_or(&[]).iter().collect();
                let first = rest.split_whitespace().next().unwrap_or("").to_lowercase();
                next.is_some_and(char::is_whitespace) && CLAUSE_OPENERS.contains(&first.as_str())
            }
            _ => false,
        };
        if cut {
            if !cur.trim().is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            cur.clear();
        } else {
            cur.push(c);
        }
    }
    if !cur.trim().is_empty() {
        out.push(cur);
    }
    out
}

/// Does `phrase` (already tokenised) occur as consecutive tokens in `haystack`?
pub fn contains_phrase(haystack: &[String], phrase: &[&str]) -> bool {
    !phrase.is_empty()
        && haystack
            .windows(phrase.len())
            .any(|w| w.iter().zip(phrase).all(|(a, b)| a == b))
}

/// Word n-grams over stemmed tokens that carry at least two content words: the units of
/// "specific wording" the phantom-opponent check compares.
pub fn content_ngrams(text: &str, n: usize) -> BTreeSet<String> {
    let toks: Vec<String> = tokens(text).iter().map(|t| stem(t)).collect();
    toks.windows(n)
        .filter(|w| {
            w.iter()
                .filter(|t| !is_stopword(t) && (t.chars().count() >= 3 || is_number(t)))
                .count()
                >= 2
        })
        .map(|w| w.join(" "))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_words_like_a_reader() {
        assert_eq!(word_count("  Buy the vendor's tool — now. "), 5);
        assert_eq!(word_count(""), 0);
    }

    #[test]
    fn tokens_keep_numbers_and_drop_apostrophes() {
        assert_eq!(
            tokens("The vendor's $40,000 fee (1.25x)."),
            vec!["the", "vendors", "40,000", "fee", "1.25x"]
        );
    }

    #[test]
    fn numbers_share_one_form() {
        let n = numbers("$40,000 or $40k, 1.50 and 18% in 2024");
        assert_eq!(
            n.into_iter().collect::<Vec<_>>(),
            vec!["1.5", "18", "2024", "40000"]
        );
    }

    #[test]
    fn stems_meet() {
        assert_eq!(stem("licences"), stem("licence"));
        assert_eq!(stem("engineers"), "engineer");
        assert_eq!(stem("boss"), "boss");
        assert_eq!(stem("boxes"), "box");
    }

    #[test]
    fn clauses_cut_where_a_hedge_stops_reaching() {
        assert_eq!(
            clauses("Robots could help pickers, who walk 14 km; the lease: 36 months."),
            vec![
                "Robots could help pickers",
                " who walk 14 km",
                " the lease",
                " 36 months"
            ]
        );
        assert_eq!(
            clauses("If it holds, the bill would pass $200,000 a year (1.25x)."),
            vec!["If it holds, the bill would pass $200,000 a year ", "1.25x"]
        );
    }

    #[test]
    fn ngrams_need_two_content_words() {
        let g = content_ngrams("over the next three years the sync engine ships", 4);
        assert!(g.contains("the sync engine ship"));
        assert!(!g.iter().any(|x| x.starts_with("over the next")));
    }
}
