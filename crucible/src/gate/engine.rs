//! Evaluation of G1 to G14 (SPEC section 8) with the reference engine's exact semantics
//! (reference digest section 7).
//!
//! Each non-blank field is scanned once: one Aho-Corasick pass finds every lexicon
//! phrase and the anchors of the G4 patterns, a byte pass finds `!`, `?` and
//! pictographs. Reports are then emitted in rule order, field order, lexicon order.
//! Nothing is allocated for a clean field.

use super::byteclass::ByteProfile;
use super::lexicon::{
    Anchor, COMPILED, Compiled, MAX_PHRASES, RUN_SLOTS, first_slot, low_bytes_mask, run_key,
    word_prefix,
};
use super::register::{self, Definitions};
use super::text::{
    excerpt_around, glues, has_case_shifters, is_ascii_word, is_blank, is_js_whitespace,
    js_lowercase, utf16_offset, utf16_substr, word_count,
};
use super::{GateContext, GateField, GateMode, Kind, RuleId, Violation};

/// The four challenge grounds of SPEC 7.
const CHALLENGE_GROUNDS: [&str; 4] = [
    "evidence-validity",
    "warrant-failure",
    "relevance",
    "counter-evidence",
];

/// G3 limit for a protocol field name (SPEC 8: assertion 50, grounds 150, warrant 80).
fn word_limit(name: Option<&str>) -> Option<usize> {
    match name? {
        "assertion" => Some(50),
        "grounds" => Some(150),
        "warrant" => Some(80),
        _ => None,
    }
}

/// What one scan of a non-blank field found.
#[derive(Default)]
struct FieldScan {
    /// `(phrase id, offset)` of the first boundary-respecting occurrence of each phrase
    /// found; the offset is in the original text, or in `lower` when it is present.
    hits: Vec<(u16, u32)>,
    /// The lower-cased text, kept only when lower-casing can shift offsets.
    lower: Option<String>,
    /// Byte range of the G4 second-person or opponent pattern match.
    person: Option<(usize, usize)>,
    bang: bool,
    question: bool,
    /// Two capitals touch somewhere; without that G7 has no candidate word.
    upper_pair: bool,
    pictograph: bool,
}

pub(crate) fn check(fields: &[GateField], ctx: &GateContext, mode: GateMode) -> Vec<Violation> {
    let c = &*COMPILED;
    let mut out = Vec::new();
    g1(ctx, &mut out);
    g2(fields, ctx, &mut out);

    let policy = Policy {
        cited: ctx.evidence_count.is_some_and(|n| n > 0.0),
        overclaim_checked: {
            // G12 applies unless the qualifier (and, for empirical claims, the tier)
            // licenses certainty.
            let certain = ctx.qualifier.as_deref() == Some("certain");
            let empirical_claim =
                ctx.kind == Kind::Claim && ctx.type_.as_deref() == Some("empirical");
            let top_tier = ctx.max_tier_weight.is_some_and(|w| w >= 5.0);
            !(certain && (!empirical_claim || top_tier))
        },
        steelman: ctx.kind == Kind::Steelman,
        mode,
    };
    // Per-field rules are evaluated field by field (one scan each, nothing kept), then
    // a stable sort by rule restores the reference's order: rule, then field, then
    // lexicon order, which is the emission order within one field and rule.
    let mut definitions = Definitions::new(fields);
    for f in fields {
        if !is_blank(&f.text) {
            let s = scan(c, &f.text);
            field_rules(c, f, &s, &policy, &mut definitions, &mut out);
        }
    }

    g11(ctx, policy.cited, &mut out);

    // G13 challenge discipline.
    if ctx.kind == Kind::Challenge
        && !ctx
            .ground
            .as_deref()
            .is_some_and(|g| CHALLENGE_GROUNDS.contains(&g))
    {
        out.push(violation(
            RuleId::G13,
            "Ground",
            String::new(),
            "The challenge does not name one of the four grounds.".to_owned(),
            "Choose exactly one ground: evidence-validity, warrant-failure, relevance or counter-evidence.",
        ));
    }
    if out.len() > 1 {
        out.sort_by_key(|v| v.rule);
    }
    out
}

/// What the context decides for the per-field rules.
struct Policy {
    /// At least one citation attached (G10 is silent then).
    cited: bool,
    /// Certainty wording is not licensed, so G12 reports it.
    overclaim_checked: bool,
    /// G14 applies to steelmans only.
    steelman: bool,
    mode: GateMode,
}

/// G3 to G10, G12 and G14 for one non-blank field, in rule order.
fn field_rules(
    c: &Compiled,
    f: &GateField,
    s: &FieldScan,
    policy: &Policy,
    definitions: &mut Definitions<'_>,
    out: &mut Vec<Violation>,
) {
    // G3 atomicity. Each word needs a byte and a separator, so a short text cannot
    // exceed its limit and need not be counted.
    if let Some(limit) = word_limit(f.name.as_deref())
        && f.text.len() > 2 * limit
    {
        let n = word_count(&f.text);
        if n > limit {
            out.push(violation(
                RuleId::G3,
                &f.label,
                format!("{n} words (limit {limit})"),
                format!("\"{}\" has {n} words, over its limit of {limit}.", f.label),
                "Keep one point per thread: move each further point into a claim thread of its own.",
            ));
        }
    }

    // G4 person-directed language: lexicon hits, then at most one pattern match.
    lexicon_hits(c, f, s, RuleId::G4, out);
    if let Some((a, b)) = s.person {
        let m = &f.text[a..b];
        out.push(violation(
            RuleId::G4,
            &f.label,
            excerpt_around(&f.text, m),
            format!("\"{m}\" points the argument at a participant."),
            "Rewrite the sentence about the claim or its evidence; who holds a view is not part of the case.",
        ));
    }

    // G5 loaded language.
    lexicon_hits(c, f, s, RuleId::G5, out);

    // G6 humour and pictographs.
    lexicon_hits(c, f, s, RuleId::G6, out);
    if s.pictograph {
        out.push(violation(
            RuleId::G6,
            &f.label,
            "(pictograph)".to_owned(),
            "The text contains an emoji or another pictograph.".to_owned(),
            "Say it in words. Arrows and mathematical operators remain allowed.",
        ));
    }

    // G7 formal register: `!`, then the first word in capitals that is not an acronym.
    if s.bang {
        out.push(violation(
            RuleId::G7,
            &f.label,
            excerpt_around(&f.text, "!"),
            "The text uses an exclamation mark.".to_owned(),
            "End the sentence with a full stop; emphasis adds no support.",
        ));
    }
    if s.upper_pair
        && let Some(token) = register::shouted_token(&f.text, policy.mode, definitions)
    {
        out.push(violation(
            RuleId::G7,
            &f.label,
            excerpt_around(&f.text, token),
            format!("\"{token}\" is written in capitals for emphasis."),
            "Write in sentence case. A genuine acronym passes once it is spelled out in the submission, as in \"Full Name (ACRO)\".",
        ));
    }

    // G8 rhetorical questions, argumentative fields only.
    if f.argumentative && s.question {
        out.push(violation(
            RuleId::G8,
            &f.label,
            excerpt_around(&f.text, "?"),
            "An argumentative field contains a question mark.".to_owned(),
            "State the answer the question implies as a claim, then support it.",
        ));
    }

    // G9 popularity and obviousness.
    lexicon_hits(c, f, s, RuleId::G9, out);
    // G10 unnamed authority, unless a citation is attached.
    if !policy.cited {
        lexicon_hits(c, f, s, RuleId::G10, out);
    }
    // G12 overclaiming.
    if policy.overclaim_checked {
        lexicon_hits(c, f, s, RuleId::G12, out);
    }
    // G14 steelman fidelity.
    if policy.steelman {
        lexicon_hits(c, f, s, RuleId::G14, out);
    }
}

fn violation(
    rule: RuleId,
    field: &str,
    excerpt: String,
    message: String,
    fix: &'static str,
) -> Violation {
    Violation {
        rule,
        rule_name: rule.name(),
        field: field.to_owned(),
        excerpt,
        message,
        fix,
    }
}

/// G1: a handle, and a side unless the submitter is an arbiter.
fn g1(ctx: &GateContext, out: &mut Vec<Violation>) {
    if ctx.author.as_deref().is_none_or(is_blank) {
        out.push(violation(
            RuleId::G1,
            "(identity)",
            String::new(),
            "The contribution carries no contributor handle.".to_owned(),
            "Sign the contribution with your handle; everything on the record is attributed.",
        ));
    }
    let declared = matches!(ctx.side.as_deref(), Some("A" | "B"));
    if ctx.role.as_deref() != Some("arbiter") && !declared {
        out.push(violation(
            RuleId::G1,
            "(identity)",
            String::new(),
            "The contribution does not declare side A or side B.".to_owned(),
            "Declare the side (A or B) this contribution argues for; only arbiters may leave it open.",
        ));
    }
}

/// G2: for claims, every required field filled in and a qualifier chosen. The claim
/// type is not checked, as in the reference (digest section 12, item 1).
fn g2(fields: &[GateField], ctx: &GateContext, out: &mut Vec<Violation>) {
    if ctx.kind != Kind::Claim {
        return;
    }
    for f in fields {
        if f.required && is_blank(&f.text) {
            out.push(violation(
                RuleId::G2,
                &f.label,
                String::new(),
                format!("The required field \"{}\" has no text.", f.label),
                "State the assertion, its grounds and the warrant that links them; an unstated step cannot be tested.",
            ));
        }
    }
    if ctx.qualifier.as_deref().is_none_or(str::is_empty) {
        out.push(violation(
            RuleId::G2,
            "Qualifier",
            String::new(),
            "The claim has no confidence qualifier.".to_owned(),
            "Choose how strongly the claim is held: certain, probable or plausible.",
        ));
    }
}

/// G11: citations for empirical claims, two challenge grounds and appeals A1 and A3.
fn g11(ctx: &GateContext, cited: bool, out: &mut Vec<Violation>) {
    if cited {
        return;
    }
    let ground = ctx.ground.as_deref();
    if ctx.kind == Kind::Claim && ctx.type_.as_deref() == Some("empirical") {
        out.push(violation(
            RuleId::G11,
            "Evidence",
            String::new(),
            "This empirical claim has no citation.".to_owned(),
            "Attach at least one checkable source with its URL and evidence tier.",
        ));
    }
    if ctx.kind == Kind::Challenge
        && matches!(ground, Some("evidence-validity" | "counter-evidence"))
    {
        out.push(violation(
            RuleId::G11,
            "Evidence",
            String::new(),
            "This challenge ground needs a citation and none is attached.".to_owned(),
            "An evidence-validity or counter-evidence challenge must attach the source its objection rests on.",
        ));
    }
    if ctx.kind == Kind::Appeal && matches!(ground, Some("A1" | "A3")) {
        out.push(violation(
            RuleId::G11,
            "Evidence",
            String::new(),
            "This appeal ground needs a citation and none is attached.".to_owned(),
            "An appeal on new evidence (A1) or a retracted source (A3) must attach the new or corrected source.",
        ));
    }
}

/// Message and fix for a lexicon hit of `rule`.
fn lexicon_wording(rule: RuleId, hit: &str) -> (String, &'static str) {
    match rule {
        RuleId::G4 => (
            format!("\"{hit}\" characterises a person rather than the claim."),
            "Take the person out of the sentence and object to the evidence, the warrant or the relevance instead.",
        ),
        RuleId::G5 => (
            format!("\"{hit}\" is emotive wording."),
            "Describe the matter neutrally; the evidence tier, not the adjective, carries the weight.",
        ),
        RuleId::G6 => (
            format!("\"{hit}\" marks humour or ridicule."),
            "Drop the joke and state the point plainly; mockery makes a claim harder to examine.",
        ),
        RuleId::G9 => (
            format!("\"{hit}\" appeals to popularity or to what is obvious."),
            "Replace the appeal with the evidence itself.",
        ),
        RuleId::G10 => (
            format!("\"{hit}\" invokes an unnamed authority and no citation is attached."),
            "Name the study or the expert and attach the citation with its tier, or leave the reference out.",
        ),
        RuleId::G12 => (
            format!("\"{hit}\" claims more certainty than the qualifier and evidence tier allow."),
            "Use a measured verb such as \"indicates\" or \"supports\", or declare the qualifier certain with top-tier evidence if that is justified.",
        ),
        _ => (
            format!("\"{hit}\" distances the writer from the case being restated."),
            "Restate the opposing case as its strongest advocate would; keep disagreement for a challenge.",
        ),
    }
}

/// Emits the hits of `rule`'s lexicon for one field, in lexicon order.
fn lexicon_hits(
    c: &Compiled,
    f: &GateField,
    s: &FieldScan,
    rule: RuleId,
    out: &mut Vec<Violation>,
) {
    if s.hits.is_empty() {
        return;
    }
    let Some(idx) = c.lexicons.iter().position(|l| l.rule == rule) else {
        return;
    };
    let (lo, hi) = c.ranges[idx];
    // Hits are few; a scan per phrase id keeps lexicon order without sorting.
    let mut found: Vec<(u16, u32)> = s
        .hits
        .iter()
        .copied()
        .filter(|&(p, _)| (lo..hi).contains(&(p as usize)))
        .collect();
    found.sort_unstable_by_key(|&(p, _)| p);
    for (p, at) in found {
        let len = c.phrase_len[p as usize] as usize;
        let hit = match &s.lower {
            // Offsets into the lower-cased text are applied to the original in UTF-16
            // units, as the reference's `substr` does.
            Some(lower) => utf16_substr(&f.text, utf16_offset(lower, at as usize), len),
            None => f
                .text
                .get(at as usize..at as usize + len)
                .unwrap_or_default()
                .to_owned(),
        };
        let (message, fix) = lexicon_wording(rule, &hit);
        out.push(violation(
            rule,
            &f.label,
            excerpt_around(&f.text, &hit),
            message,
            fix,
        ));
    }
}

/// Scans one non-blank field.
fn scan(c: &Compiled, text: &str) -> FieldScan {
    let bytes = text.as_bytes();
    let profile = ByteProfile::of(bytes);
    let mut s = FieldScan {
        bang: profile.bang,
        question: profile.question,
        upper_pair: profile.upper_pair,
        ..FieldScan::default()
    };
    if !profile.ascii {
        // Every pictograph is at or above U+2600, so its UTF-8 lead byte is 0xE2 or more.
        s.pictograph = bytes.iter().enumerate().any(|(i, &b)| {
            b >= 0xE2
                && text
                    .get(i..)
                    .and_then(|t| t.chars().next())
                    .is_some_and(is_pictograph)
        });
    }
    // U+0130 or U+212A present: phrases are matched in the lower-cased text, as the
    // reference does; the G4 patterns always run on the original.
    let shifted = !profile.ascii && has_case_shifters(text);
    let mut phrases = PhraseScan::new();
    let mut person = Person::default();
    if c.word_runs_exact {
        let masks = profile.alnum.as_slice();
        word_run_scan(c, text, masks, !shifted, true, &mut phrases, &mut person);
    } else {
        automaton_scan(c, text, !shifted, true, &mut phrases, &mut person);
    }
    if shifted {
        let lower = js_lowercase(text);
        if c.word_runs_exact {
            let lower_profile = ByteProfile::of(lower.as_bytes());
            let masks = lower_profile.alnum.as_slice();
            word_run_scan(c, &lower, masks, true, false, &mut phrases, &mut person);
        } else {
            automaton_scan(c, &lower, true, false, &mut phrases, &mut person);
        }
        s.lower = Some(lower);
    }
    s.hits = phrases.hits;
    s.person = person.you.or(person.opponent);
    s
}

/// First matches of the two G4 patterns.
#[derive(Default)]
struct Person {
    you: Option<(usize, usize)>,
    opponent: Option<(usize, usize)>,
}

impl Person {
    fn offer(&mut self, c: &Compiled, hay: &str, pattern: usize, at: usize) {
        let bytes = hay.as_bytes();
        match c.anchor(pattern) {
            Some(Anchor::You) if self.you.is_none() => self.you = second_person_at(bytes, hay, at),
            Some(Anchor::Opponent) if self.opponent.is_none() => {
                self.opponent = opponent_at(bytes, at)
            }
            _ => {}
        }
    }
}

/// The exact scan for any lexicon: every overlapping occurrence of every pattern.
fn automaton_scan(
    c: &Compiled,
    hay: &str,
    want_phrases: bool,
    want_person: bool,
    phrases: &mut PhraseScan,
    person: &mut Person,
) {
    let bytes = hay.as_bytes();
    for m in c.automaton.find_overlapping_iter(hay) {
        let p = m.pattern().as_usize();
        if p < c.phrase_count() {
            if want_phrases {
                phrases.offer(c, bytes, p, m.start(), m.end());
            }
        } else if want_person {
            person.offer(c, hay, p, m.start());
        }
    }
}

/// The fast scan when [`Compiled::word_runs_exact`] holds: only ASCII alphanumeric runs
/// are candidates. Runs are found from 64-byte bit masks and screened by a hash filter of
/// the patterns' first runs, so an ordinary word costs a few instructions and no
/// mispredicted branch.
fn word_run_scan(
    c: &Compiled,
    hay: &str,
    masks: &[u64],
    want_phrases: bool,
    want_person: bool,
    phrases: &mut PhraseScan,
    person: &mut Person,
) {
    let bytes = hay.as_bytes();
    let n = bytes.len();
    let mut carry = 0u64;
    for k in 0..masks.len() {
        let m = masks[k];
        let mut starts = m & !((m << 1) | carry);
        carry = m >> 63;
        while starts != 0 {
            let bit = starts.trailing_zeros() as usize;
            starts &= starts - 1;
            let start = k * 64 + bit;
            let mut len = (m >> bit).trailing_ones() as usize;
            if bit + len == 64 {
                for &next in &masks[k + 1..] {
                    let ones = next.trailing_ones() as usize;
                    len += ones;
                    if ones < 64 {
                        break;
                    }
                }
            }
            let prefix = if start + 8 <= n {
                let mut word = [0u8; 8];
                word.copy_from_slice(&bytes[start..start + 8]);
                (u64::from_le_bytes(word) & low_bytes_mask(len))
                    | (0x2020_2020_2020_2020 & low_bytes_mask(len))
            } else {
                word_prefix(&bytes[start..start + len])
            };
            let key = run_key(prefix, len);
            if c.run_filter[key / 64] & (1 << (key % 64)) != 0 && len < RUN_SLOTS {
                candidate(
                    c,
                    hay,
                    start,
                    len,
                    prefix,
                    want_phrases,
                    want_person,
                    phrases,
                    person,
                );
            }
        }
    }
}

/// A run that passed the filter: compare it with the patterns that start with such a run.
#[allow(clippy::too_many_arguments)]
fn candidate(
    c: &Compiled,
    hay: &str,
    start: usize,
    len: usize,
    prefix: u64,
    want_phrases: bool,
    want_person: bool,
    phrases: &mut PhraseScan,
    person: &mut Person,
) {
    let bytes = hay.as_bytes();
    for &p in &c.by_first_run[first_slot(bytes[start]) * RUN_SLOTS + len] {
        let p = p as usize;
        // Runs of at most eight bytes are decided here; longer ones share only their
        // first eight bytes with the pattern and are compared in full below.
        if c.first_prefix[p] != prefix {
            continue;
        }
        if p < c.phrase_count() {
            if want_phrases {
                let stop = start + c.phrase_len[p] as usize;
                if bytes
                    .get(start..stop)
                    .is_some_and(|w| w.eq_ignore_ascii_case(c.phrase[p].as_bytes()))
                {
                    phrases.offer(c, bytes, p, start, stop);
                }
            }
        } else if want_person {
            let word = &bytes[start..start + len];
            let whole = match c.anchor(p) {
                Some(Anchor::You) => word.eq_ignore_ascii_case(b"you"),
                Some(Anchor::Opponent) => word.eq_ignore_ascii_case(&b"opponents"[..len.min(9)]),
                None => false,
            };
            if whole {
                person.offer(c, hay, p, start);
            }
        }
    }
}

/// First-occurrence bookkeeping for lexicon phrases, exactly as the reference's loop:
/// an occurrence failing the boundary test makes the search resume after it.
struct PhraseScan {
    found: [u64; MAX_PHRASES.div_ceil(64)],
    /// Per phrase, the earliest offset the next occurrence may start at; allocated on
    /// the first failed occurrence only.
    resume: Option<Box<[u32; MAX_PHRASES]>>,
    hits: Vec<(u16, u32)>,
}

impl PhraseScan {
    fn new() -> PhraseScan {
        PhraseScan {
            found: [0; MAX_PHRASES.div_ceil(64)],
            resume: None,
            hits: Vec::new(),
        }
    }

    /// `hay` is the text the automaton ran over; a phrase glues to an `[a-z0-9]`
    /// neighbour after ASCII lower-casing (non-ASCII bytes never glue).
    fn offer(&mut self, c: &Compiled, hay: &[u8], p: usize, start: usize, end: usize) {
        if p >= MAX_PHRASES || self.found[p / 64] & (1 << (p % 64)) != 0 {
            return;
        }
        if let Some(resume) = &self.resume
            && (start as u32) < resume[p]
        {
            return;
        }
        let before = start.checked_sub(1).map(|i| hay[i].to_ascii_lowercase());
        let after = hay.get(end).map(u8::to_ascii_lowercase);
        if before.is_some_and(glues) || after.is_some_and(glues) {
            let resume = self
                .resume
                .get_or_insert_with(|| Box::new([0; MAX_PHRASES]));
            resume[p] = start as u32 + c.phrase_len[p];
            return;
        }
        self.found[p / 64] |= 1 << (p % 64);
        self.hits.push((p as u16, start as u32));
    }
}

/// G6 pictographs: U+1F000 to U+1FAFF, U+2600 to U+27BF and U+FE0F. Arrows (U+2190 to
/// U+21FF) and mathematical operators (U+2200 to U+22FF) stay allowed.
fn is_pictograph(c: char) -> bool {
    matches!(c, '\u{1F000}'..='\u{1FAFF}' | '\u{2600}'..='\u{27BF}' | '\u{FE0F}')
}

/// The G4 second-person pattern (ASCII case-insensitive, ASCII word boundaries):
/// `you`, one or more JavaScript whitespace characters, then `are`, `were` or `'re`
/// ending at a word boundary. `at` is the byte offset of an occurrence of `you`.
fn second_person_at(bytes: &[u8], text: &str, at: usize) -> Option<(usize, usize)> {
    if at > 0 && is_ascii_word(bytes[at - 1]) {
        return None;
    }
    let rest = text.get(at + 3..)?;
    let ws: usize = rest
        .chars()
        .take_while(|&c| is_js_whitespace(c))
        .map(char::len_utf8)
        .sum();
    if ws == 0 {
        return None;
    }
    let verb_at = at + 3 + ws;
    let tail = &bytes[verb_at..];
    let verb_len = [&b"are"[..], b"were", b"'re"]
        .into_iter()
        .find(|v| tail.len() >= v.len() && tail[..v.len()].eq_ignore_ascii_case(v))?
        .len();
    let end = verb_at + verb_len;
    if bytes.get(end).is_some_and(|&b| is_ascii_word(b)) {
        return None;
    }
    Some((at, end))
}

/// The G4 opponent pattern: `opponent`, optional `s`, optional `'s`, at word boundaries,
/// trying the alternatives in the order a backtracking regex does.
fn opponent_at(bytes: &[u8], at: usize) -> Option<(usize, usize)> {
    if at > 0 && is_ascii_word(bytes[at - 1]) {
        return None;
    }
    let base = at + "opponent".len();
    let boundary = |end: usize| !bytes.get(end).is_some_and(|&b| is_ascii_word(b));
    let plural = bytes
        .get(base)
        .is_some_and(|b| b.eq_ignore_ascii_case(&b's'));
    let possessive = |from: usize| {
        bytes.get(from) == Some(&b'\'')
            && bytes
                .get(from + 1)
                .is_some_and(|b| b.eq_ignore_ascii_case(&b's'))
    };
    let mut tries: Vec<usize> = Vec::with_capacity(4);
    if plural {
        if possessive(base + 1) {
            tries.push(base + 3);
        }
        tries.push(base + 1);
    }
    if possessive(base) {
        tries.push(base + 2);
    }
    tries.push(base);
    tries
        .into_iter()
        .find(|&end| boundary(end))
        .map(|end| (at, end))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    type Found = (Vec<(u16, u32)>, Option<(usize, usize)>);

    fn both(text: &str) -> (Found, Found) {
        let c = &*COMPILED;
        let run = |word: bool| {
            let mut phrases = PhraseScan::new();
            let mut person = Person::default();
            if word {
                let profile = ByteProfile::of(text.as_bytes());
                let masks = profile.alnum.as_slice();
                word_run_scan(c, text, masks, true, true, &mut phrases, &mut person);
            } else {
                automaton_scan(c, text, true, true, &mut phrases, &mut person);
            }
            let mut hits = phrases.hits;
            hits.sort_unstable();
            (hits, person.you.or(person.opponent))
        };
        (run(true), run(false))
    }

    #[test]
    fn word_run_scan_agrees_on_known_cases() {
        for text in [
            "you are a liar, opponents's hack-job, so-called 100% proof",
            "hahaha lolol 1100% liars_ liar_ _you are",
            "Everyone knows; give me a break! yeah right, oh please",
            "bayou are xopponent opponentx opponent'sx YOU\u{3000}ARE",
        ] {
            let (a, b) = both(text);
            assert_eq!(a, b, "{text}");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        /// The fast word-run scan finds exactly what the exhaustive automaton scan finds.
        #[test]
        fn word_run_scan_equals_automaton_scan(
            parts in proptest::collection::vec(
                prop_oneof![
                    Just("liar"), Just("lies"), Just("hack"), Just("bad faith"), Just("so-called"),
                    Just("100%"), Just("you"), Just("are"), Just("opponent"), Just("opponents"),
                    Just("'s"), Just(" "), Just("_"), Just("-"), Just("x"), Just("1"), Just("\u{e9}"),
                    Just("\u{3000}"), Just("LOL"), Just("ha"), Just("give me a break"), Just("studies show"),
                    Just("proves"), Just("incontrovertible"), Just("definitively shows"),
                    Just("abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyz0123456789"), Just("proven beyond"), Just("ObViOuSlY"), Just("were"), Just("'re"),
                ],
                0..40,
            )
        ) {
            let text: String = parts.concat();
            let (a, b) = both(&text);
            prop_assert_eq!(a, b);
        }
    }
}
