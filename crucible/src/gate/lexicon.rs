//! The published lexicons (SPEC section 8: "The lexicons MUST be published") and the one
//! automaton that scans a field for all of them at once.
//!
//! The word lists are data, not code: they live in `crucible/lexicons/*.txt`, one term per
//! line, and are compiled in with `include_str!` so the binary and the published lists
//! cannot drift apart.

use std::collections::HashSet;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::LazyLock;

use aho_corasick::{AhoCorasick, AhoCorasickKind, MatchKind, StartKind};

use super::RuleId;

/// One published list: the rule it serves, its file name and its terms in file order
/// (file order is report order).
#[derive(Debug)]
pub struct Lexicon {
    /// The rule that reports hits from this list.
    pub rule: RuleId,
    /// File name under `crucible/lexicons/`.
    pub file: &'static str,
    /// Terms in file order.
    pub terms: Vec<&'static str>,
}

/// Terms of a lexicon file: every non-blank line that does not start with `#`.
fn terms(raw: &'static str) -> Vec<&'static str> {
    raw.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect()
}

macro_rules! lexicon_file {
    ($name:literal) => {
        ($name, include_str!(concat!("../../lexicons/", $name)))
    };
}

/// The phrase lexicons in rule order (G4, G5, G6, G9, G10, G12, G14).
const PHRASE_FILES: [(RuleId, (&str, &str)); 7] = [
    (RuleId::G4, lexicon_file!("ad-hominem.txt")),
    (RuleId::G5, lexicon_file!("loaded.txt")),
    (RuleId::G6, lexicon_file!("humor.txt")),
    (RuleId::G9, lexicon_file!("popularity.txt")),
    (RuleId::G10, lexicon_file!("unnamed-authority.txt")),
    (RuleId::G12, lexicon_file!("overclaim.txt")),
    (RuleId::G14, lexicon_file!("steelman-distance.txt")),
];

const WHITELIST_FILE: (&str, &str) = lexicon_file!("acronym-whitelist.txt");
const DOMAIN_ACRONYMS_FILE: (&str, &str) = lexicon_file!("acronyms-domain.txt");
const SHOUTING_WORDS_FILE: (&str, &str) = lexicon_file!("shouting-words.txt");
/// Common English words for G7's acronym mode, whitespace-separated (see the file header).
const COMMON_WORDS_FILE: &str = include_str!("common-words.txt");

/// Words of [`COMMON_WORDS_FILE`]: every whitespace-separated word of every line that does
/// not start with `#`.
fn common_word_terms() -> impl Iterator<Item = &'static str> {
    COMMON_WORDS_FILE
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .flat_map(str::split_whitespace)
}

/// FNV-1a: the word sets are looked up with short, trusted-shape keys on every field, and
/// SipHash's flooding resistance buys nothing for fixed, compiled-in sets.
#[derive(Clone, Copy)]
pub(crate) struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
}

/// A compiled-in word set.
pub(crate) type WordSet = HashSet<&'static str, BuildHasherDefault<Fnv>>;

/// One multiply for keys that are already well-spread `u64`s (packed words).
#[derive(Clone, Copy, Default)]
pub(crate) struct Mix(u64);

impl Hasher for Mix {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }

    fn write_u64(&mut self, x: u64) {
        self.0 = (self.0 ^ x).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

/// Up to eight bytes as a little-endian `u64`, zero-padded. Distinct words without NUL
/// bytes give distinct keys.
fn pack(word: &[u8]) -> u64 {
    let mut buf = [0u8; 8];
    buf[..word.len()].copy_from_slice(word);
    u64::from_le_bytes(buf)
}

/// A set of ASCII words looked up by packed bytes when they are at most eight bytes
/// long (every G7 lookup in practice), by string otherwise.
pub(crate) struct PackedSet {
    short: HashSet<u64, BuildHasherDefault<Mix>>,
    long: WordSet,
}

impl PackedSet {
    fn new(words: impl IntoIterator<Item = &'static str>) -> PackedSet {
        let mut set = PackedSet {
            short: HashSet::default(),
            long: WordSet::default(),
        };
        for w in words {
            if w.len() <= 8 {
                set.short.insert(pack(w.as_bytes()));
            } else {
                set.long.insert(w);
            }
        }
        set
    }

    pub(crate) fn contains(&self, word: &str) -> bool {
        if word.len() <= 8 {
            self.short.contains(&pack(word.as_bytes()))
        } else {
            self.long.contains(word)
        }
    }

    /// Membership of a word of capitals `A-Z` in a set of lower-case words.
    pub(crate) fn contains_lowercased(&self, capitals: &str) -> bool {
        if capitals.len() <= 8 {
            let lower = pack(capitals.as_bytes())
                | (0x2020_2020_2020_2020 & low_bytes_mask(capitals.len()));
            self.short.contains(&lower)
        } else {
            self.long.contains(capitals.to_ascii_lowercase().as_str())
        }
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.short.len() + self.long.len()
    }
}

/// Run lengths indexed per first byte in [`Compiled::by_first_run`].
pub(crate) const RUN_SLOTS: usize = 32;

/// Index of an ASCII alphanumeric byte among `0-9a-z` (case-insensitive).
pub(crate) fn first_slot(b: u8) -> usize {
    let b = b.to_ascii_lowercase();
    if b.is_ascii_digit() {
        (b - b'0') as usize
    } else {
        10 + (b.wrapping_sub(b'a') as usize).min(25)
    }
}

/// The leading ASCII alphanumeric run of a pattern.
fn first_run(p: &str) -> &str {
    let end = p
        .bytes()
        .position(|b| !b.is_ascii_alphanumeric())
        .unwrap_or(p.len());
    &p[..end]
}

/// The first (up to) eight bytes of an ASCII alphanumeric run, lower-cased, little-endian
/// and zero-padded. `| 0x20` lower-cases letters and leaves digits unchanged.
pub(crate) fn word_prefix(run: &[u8]) -> u64 {
    let mut buf = [0u8; 8];
    let n = run.len().min(8);
    buf[..n].copy_from_slice(&run[..n]);
    u64::from_le_bytes(buf) | (0x2020_2020_2020_2020 & low_bytes_mask(n))
}

/// A mask of the low `n` bytes (n at most 8).
pub(crate) fn low_bytes_mask(n: usize) -> u64 {
    if n >= 8 {
        u64::MAX
    } else {
        (1u64 << (8 * n)) - 1
    }
}

/// A 12-bit hash of a run's prefix and length.
pub(crate) fn run_key(prefix: u64, len: usize) -> usize {
    ((prefix ^ (len as u64).wrapping_mul(0xff51_afd7_ed55_8ccd))
        .wrapping_mul(0x9e37_79b9_7f4a_7c15)
        >> 52) as usize
}

/// Whether `p` can occur again starting right after one of its own non-alphanumeric
/// characters (a border after a boundary), which would let the reference's resume rule
/// skip a valid occurrence that a word-run scan would report.
fn recurs_after_boundary(p: &[u8]) -> bool {
    (0..p.len()).any(|j| {
        !p[j].is_ascii_alphanumeric() && {
            let suffix = &p[j + 1..];
            !suffix.is_empty() && p.starts_with(suffix)
        }
    })
}

/// Upper bound on phrase count, so per-field match state fits in a stack array.
pub(crate) const MAX_PHRASES: usize = 192;

/// Pattern ids after the phrases: the anchors of the two G4 patterns.
pub(crate) enum Anchor {
    You,
    Opponent,
}

/// Everything compiled once per process.
pub(crate) struct Compiled {
    pub lexicons: Vec<Lexicon>,
    /// Length (bytes, equal to UTF-16 units: all phrases are ASCII) of each phrase id.
    pub phrase_len: Vec<u32>,
    /// Phrase ids `[start, end)` of each lexicon, in `lexicons` order.
    pub ranges: Vec<(usize, usize)>,
    /// Phrase text of each id.
    pub phrase: Vec<&'static str>,
    /// All phrases plus the two G4 anchors, ASCII case-insensitive, overlapping.
    pub automaton: AhoCorasick,
    /// Pattern ids (phrases and anchors) keyed by the first ASCII alphanumeric run of
    /// the pattern: slot `first_slot(byte) * RUN_SLOTS + run length`.
    pub by_first_run: Vec<Vec<u16>>,
    /// A 4096-bit filter over [`run_key`] of every pattern's first run: rejects nearly
    /// every word of a text with one multiply and one bit test.
    pub run_filter: [u64; 64],
    /// [`word_prefix`] of each pattern's first run (anchors included): a one-compare
    /// rejection of filter survivors that are not the pattern's first word.
    pub first_prefix: Vec<u64>,
    /// True when every phrase starts with an ASCII alphanumeric and none can recur inside
    /// itself right after a non-alphanumeric character. Then a valid occurrence always
    /// starts a text run equal to the phrase's first run, and the word-run scan is exact;
    /// otherwise the engine falls back to the overlapping automaton.
    pub word_runs_exact: bool,
    pub whitelist: PackedSet,
    /// Whitelist and domain lexicon together: one lookup in acronym mode.
    pub known_acronyms: PackedSet,
    pub shouting_words: PackedSet,
    /// Common English words (lower case) with which G7 tells a word in capitals from an
    /// acronym.
    pub common_words: WordSet,
}

impl Compiled {
    pub(crate) fn phrase_count(&self) -> usize {
        self.phrase.len()
    }

    /// The anchor a pattern id stands for, when it is not a phrase.
    pub(crate) fn anchor(&self, pattern: usize) -> Option<Anchor> {
        match pattern.checked_sub(self.phrase_count()) {
            Some(0) => Some(Anchor::You),
            Some(1) => Some(Anchor::Opponent),
            _ => None,
        }
    }
}

fn compile() -> Compiled {
    let mut lexicons = Vec::new();
    let mut phrase = Vec::new();
    let mut ranges = Vec::new();
    for (rule, (file, raw)) in PHRASE_FILES {
        let list = terms(raw);
        let start = phrase.len();
        for t in &list {
            phrase.push(*t);
        }
        ranges.push((start, phrase.len()));
        lexicons.push(Lexicon {
            rule,
            file,
            terms: list,
        });
    }
    let phrase_len = phrase.iter().map(|p| p.len() as u32).collect();
    let mut patterns: Vec<&str> = phrase.clone();
    patterns.push("you");
    patterns.push("opponent");
    // The lists are compiled into the binary and checked by tests (ASCII, lower case,
    // within MAX_PHRASES), so building the automaton cannot fail on a request; the
    // fallback keeps this path free of panics anyway by degrading to the default kind.
    let automaton = AhoCorasick::builder()
        .ascii_case_insensitive(true)
        .match_kind(MatchKind::Standard)
        .kind(Some(AhoCorasickKind::DFA))
        .start_kind(StartKind::Unanchored)
        .byte_classes(false)
        .prefilter(false)
        .build(&patterns)
        .or_else(|_| {
            AhoCorasick::builder()
                .ascii_case_insensitive(true)
                .build(&patterns)
        })
        .unwrap_or_else(|_| unreachable_automaton());
    let mut by_first_run = vec![Vec::new(); 36 * RUN_SLOTS];
    let mut word_runs_exact = true;
    for (id, p) in patterns.iter().enumerate() {
        let run = first_run(p);
        if run.is_empty() || run.len() >= RUN_SLOTS || recurs_after_boundary(p.as_bytes()) {
            word_runs_exact = false;
            continue;
        }
        by_first_run[first_slot(run.as_bytes()[0]) * RUN_SLOTS + run.len()].push(id as u16);
    }
    // "opponents" is a separate entry for the same anchor: the text run may include the s.
    let opponent = patterns.len() - 1;
    by_first_run[first_slot(b'o') * RUN_SLOTS + "opponents".len()].push(opponent as u16);
    let mut run_filter = [0u64; 64];
    let mut first_runs: Vec<&str> = patterns.iter().map(|p| first_run(p)).collect();
    first_runs.push("opponents");
    for run in first_runs {
        let key = run_key(word_prefix(run.as_bytes()), run.len());
        run_filter[key / 64] |= 1 << (key % 64);
    }
    let first_prefix = patterns
        .iter()
        .map(|p| word_prefix(first_run(p).as_bytes()))
        .collect();
    Compiled {
        first_prefix,
        run_filter,
        by_first_run,
        word_runs_exact,
        lexicons,
        phrase_len,
        ranges,
        phrase,
        automaton,
        whitelist: PackedSet::new(terms(WHITELIST_FILE.1)),
        known_acronyms: PackedSet::new(
            terms(WHITELIST_FILE.1)
                .into_iter()
                .chain(terms(DOMAIN_ACRONYMS_FILE.1)),
        ),
        shouting_words: PackedSet::new(terms(SHOUTING_WORDS_FILE.1)),
        common_words: common_word_terms().collect(),
    }
}

/// An automaton that matches nothing; only reachable if the compiled-in lists were
/// unbuildable, which the crate's tests rule out.
fn unreachable_automaton() -> AhoCorasick {
    AhoCorasick::new(Vec::<&str>::new()).unwrap_or_else(|_| unreachable_automaton())
}

pub(crate) static COMPILED: LazyLock<Compiled> = LazyLock::new(compile);

/// The published phrase lexicons in rule order, as loaded from `crucible/lexicons/`.
pub fn lexicons() -> &'static [Lexicon] {
    &COMPILED.lexicons
}

/// The reference engine's acronym whitelist for G7 (exact case), in file order.
pub fn acronym_whitelist() -> Vec<&'static str> {
    terms(WHITELIST_FILE.1)
}

/// Our extended domain acronym lexicon for G7 in [`super::GateMode::Acronyms`], in file
/// order.
pub fn domain_acronyms() -> Vec<&'static str> {
    terms(DOMAIN_ACRONYMS_FILE.1)
}

/// The common English words G7's acronym mode uses to tell a word in capitals from an
/// acronym (`crucible/src/gate/common-words.txt`), in file order.
pub fn common_words() -> Vec<&'static str> {
    common_word_terms().collect()
}

/// Raw text of every published lexicon file, by file name, for documentation and audit.
pub fn published_files() -> [(&'static str, &'static str); 10] {
    let p = PHRASE_FILES;
    [
        p[0].1,
        p[1].1,
        p[2].1,
        p[3].1,
        p[4].1,
        p[5].1,
        p[6].1,
        WHITELIST_FILE,
        DOMAIN_ACRONYMS_FILE,
        SHOUTING_WORDS_FILE,
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_are_ascii_lower_case_and_within_bounds() {
        let c = &*COMPILED;
        assert!(c.phrase_count() <= MAX_PHRASES);
        assert_eq!(
            c.lexicons.iter().map(|l| l.terms.len()).collect::<Vec<_>>(),
            vec![31, 26, 16, 11, 11, 11, 10]
        );
        for p in &c.phrase {
            assert!(p.is_ascii() && !p.is_empty());
            assert_eq!(p.to_ascii_lowercase(), *p);
        }
        assert_eq!(c.whitelist.len(), 25);
        assert!(c.known_acronyms.contains("PRISMA") && c.known_acronyms.contains("NASA"));
        assert!(c.shouting_words.contains("never"));
        assert!(c.shouting_words.contains_lowercased("NEVER"));
        assert!(c.shouting_words.contains_lowercased("ABSOLUTELY"));
        assert!(!c.shouting_words.contains_lowercased("NEVERX"));
        assert!(c.known_acronyms.contains("UNCITRAL") && !c.known_acronyms.contains("UNCITRALS"));
        assert_eq!(c.automaton.patterns_len(), c.phrase_count() + 2);
        assert_eq!(c.automaton.kind(), AhoCorasickKind::DFA);
        assert!(
            c.word_runs_exact,
            "the published lists take the word-run scan"
        );
        assert!(recurs_after_boundary(b"ha ha"));
        assert!(!recurs_after_boundary(b"give me a break"));
    }

    #[test]
    fn common_words_are_lower_case_ascii() {
        let c = &*COMPILED;
        assert!(c.common_words.len() > 2000 && c.common_words.contains("wrong"));
        for w in common_words() {
            assert!(
                !w.is_empty() && w.bytes().all(|b| b.is_ascii_lowercase()),
                "{w:?} is a lower-case ASCII word"
            );
        }
    }
}
