//! What a model judge is asked: the instructions (system prompt, persona, the declared
//! stance for the motion's debate) and the questions a motion becomes, in both
//! presentation orders. Pure text, shared by the in-process judge (`local`) and the
//! endpoint judge (`llm`), so both ask the same question the same way (docs/JUDGES.md).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use panel_proto::pb::{AnswerKind, Motion, MotionKind, ProjectionItem, Side};
use panel_proto::ruling_check::binary_pair;
use sha2::{Digest, Sha256};

use super::answer_json::quantile_levels;

/// The judge's default system prompt.
pub const DEFAULT_SYSTEM: &str = "You are an arbiter on a panel that judges a structured \
debate. Judge only the content shown; you are never told who wrote it. Answer the question \
asked, with the one word or number it asks for.";

/// A stance the arbiter declared for one debate, as its judge is told.
#[derive(Debug, Clone, PartialEq)]
pub struct DeclaredStance {
    /// "A", "B" or "none".
    pub side: String,
    /// The credence the arbiter declared in its side, if any.
    pub credence: f64,
}

/// Everything that makes one arbiter's instructions its own.
#[derive(Debug, Clone, Default)]
pub struct Persona {
    /// Replaces [`DEFAULT_SYSTEM`] when set.
    pub system: Option<String>,
    /// Who the arbiter is, in its operator's words (appended to the system prompt).
    pub persona: Option<String>,
    /// Declared stances by debate id.
    pub stances: BTreeMap<String, DeclaredStance>,
}

/// The instructions for one motion, and their digest (what the ruling's reading names).
#[derive(Debug, Clone, PartialEq)]
pub struct Instructions {
    pub text: String,
    pub sha256: [u8; 32],
}

impl Persona {
    /// The instructions for a motion of `debate_id`: the same for every motion of a debate,
    /// different for two arbiters with different declared priors.
    pub fn instructions(&self, debate_id: &str) -> Instructions {
        let mut text = self.system.clone().unwrap_or_else(|| DEFAULT_SYSTEM.into());
        if let Some(p) = self.persona.as_deref().filter(|p| !p.trim().is_empty()) {
            text.push_str("\n\n");
            text.push_str(p.trim());
        }
        // A debate's own declaration, else the standing one (`debate_id = "*"`).
        if let Some(s) = self
            .stances
            .get(debate_id)
            .or_else(|| self.stances.get("*"))
        {
            let _ = match s.side.as_str() {
                "A" | "B" => write!(
                    text,
                    "\n\nBefore judging you declared that you lean toward side {} of this \
                     debate's resolution{}. Say what the content supports, not what you lean to.",
                    s.side,
                    if s.credence > 0.0 {
                        format!(" (credence {:.2})", s.credence)
                    } else {
                        String::new()
                    }
                ),
                _ => write!(
                    text,
                    "\n\nBefore judging you declared no leaning on this debate's resolution."
                ),
            };
        }
        let sha256 = Sha256::digest(text.as_bytes()).into();
        Instructions { text, sha256 }
    }
}

/// One way of showing a binary question.
#[derive(Debug, Clone, PartialEq)]
pub struct Presentation {
    /// "as-given" or "swapped" (docs/WIRE.md "Judge reading").
    pub order: &'static str,
    pub user: String,
    /// Whether the answer "Yes" is the affirmative decision under this order.
    pub yes_is_affirmative: bool,
}

/// Which field an ordinal answer fills.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scale {
    Relevance,
    Tier,
}

impl Scale {
    pub fn steps(self) -> std::ops::RangeInclusive<u32> {
        match self {
            Self::Relevance => 1..=4,
            Self::Tier => 1..=5,
        }
    }
}

/// What a motion asks of a model.
#[derive(Debug, Clone, PartialEq)]
pub enum Question {
    /// Yes or no, in two presentation orders.
    Binary(Vec<Presentation>),
    /// One digit on a scale.
    Ordinal { user: String, scale: Scale },
    /// Numbers at quantile levels (read from written text).
    Quantiles {
        user: String,
        levels: Vec<f64>,
        unit: String,
    },
}

fn side(s: i32) -> &'static str {
    match Side::try_from(s) {
        Ok(Side::A) => " (side A)",
        Ok(Side::B) => " (side B)",
        _ => "",
    }
}

fn item(out: &mut String, heading: &str, it: &ProjectionItem) {
    let _ = writeln!(out, "{heading}{}: {}", side(it.side), it.text.trim());
    for c in &it.citations {
        let _ = write!(out, "  cited: {}", c.source.trim());
        if c.claimed_tier > 0 {
            let _ = write!(out, " (claimed tier T{})", c.claimed_tier);
        }
        if !c.quote.trim().is_empty() {
            let _ = write!(out, ", quote: \"{}\"", c.quote.trim());
        }
        out.push('\n');
    }
}

fn context(m: &Motion) -> String {
    let p = m.projection.clone().unwrap_or_default();
    let mut out = String::new();
    if !p.resolution.trim().is_empty() {
        let _ = writeln!(out, "Resolution of the debate: {}\n", p.resolution.trim());
    }
    out
}

/// A binary motion with exactly two items (other than tier verification) compares them.
fn pairwise(m: &Motion, kind: MotionKind) -> bool {
    let n = m.projection.as_ref().map_or(0, |p| p.items.len());
    n == 2 && kind != MotionKind::VerifyTier && binary_pair(kind).is_some()
}

const YES_NO: &str = "Answer with one word: Yes or No.";
const NO_YES: &str = "Answer with one word: No or Yes.";

/// The question a motion becomes. `content` is applied to every text the debate supplied
/// (the judge's scrubbing of chat markers), never to the judge's own words.
pub fn question(m: &Motion, content: &dyn Fn(&str) -> String) -> Question {
    let kind = MotionKind::try_from(m.kind).unwrap_or(MotionKind::Unspecified);
    let p = m.projection.clone().unwrap_or_default();
    let exam = p.exam_item.clone();
    let q_text = exam
        .as_ref()
        .map(|e| e.question.clone())
        .filter(|q| !q.trim().is_empty())
        .unwrap_or_else(|| p.question.clone());
    let clean = |it: &ProjectionItem| ProjectionItem {
        text: content(&it.text),
        citations: it
            .citations
            .iter()
            .map(|c| panel_proto::pb::Citation {
                source: content(&c.source),
                quote: content(&c.quote),
                ..c.clone()
            })
            .collect(),
        ..it.clone()
    };
    let items: Vec<ProjectionItem> = p.items.iter().map(clean).collect();
    let head = content(&context(m));
    let q_text = content(&q_text);
    match exam.as_ref().map(|e| e.answer_kind()) {
        Some(AnswerKind::Quantiles) => {
            let e = exam.clone().unwrap_or_default();
            let levels = quantile_levels(&e);
            let user = format!(
                "{head}{q_text}\n\nGive your estimates as {} numbers{}, for the {} percentiles, \
                 separated by commas, nothing else.",
                levels.len(),
                if e.unit.is_empty() {
                    String::new()
                } else {
                    format!(" in {}", e.unit)
                },
                levels
                    .iter()
                    .map(|l| format!("{:.0}th", l * 100.0))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            return Question::Quantiles {
                user,
                levels,
                unit: e.unit,
            };
        }
        Some(AnswerKind::Relevance) => return ordinal(&head, &q_text, &items, Scale::Relevance),
        Some(AnswerKind::Tier) => return ordinal(&head, &q_text, &items, Scale::Tier),
        _ => {}
    }
    if kind == MotionKind::AssignRelevance {
        return ordinal(&head, &q_text, &items, Scale::Relevance);
    }
    if pairwise(m, kind) {
        let show = |first: &ProjectionItem, second: &ProjectionItem| {
            let mut s = head.clone();
            item(&mut s, &format!("FIRST, {}", first.label), first);
            s.push('\n');
            item(&mut s, &format!("SECOND, {}", second.label), second);
            let _ = write!(s, "\n{q_text}\nShould FIRST prevail over SECOND? {YES_NO}");
            s
        };
        return Question::Binary(vec![
            Presentation {
                order: "as-given",
                user: show(&items[0], &items[1]),
                yes_is_affirmative: true,
            },
            Presentation {
                order: "swapped",
                user: show(&items[1], &items[0]),
                yes_is_affirmative: false,
            },
        ]);
    }
    let mut body = head;
    for it in &items {
        item(&mut body, &it.label, it);
    }
    if !items.is_empty() {
        body.push('\n');
    }
    body.push_str(q_text.trim());
    Question::Binary(vec![
        Presentation {
            order: "as-given",
            user: format!("{body}\n{YES_NO}"),
            yes_is_affirmative: true,
        },
        Presentation {
            order: "swapped",
            user: format!("{body}\n{NO_YES}"),
            yes_is_affirmative: true,
        },
    ])
}

/// The claimed tier a verified citation keeps (3 when it claims none): what a judge that
/// accepts a tier verification answers.
pub fn claimed_tier(m: &Motion) -> u32 {
    m.projection
        .as_ref()
        .and_then(|p| {
            p.items
                .iter()
                .flat_map(|i| &i.citations)
                .map(|c| c.claimed_tier)
                .find(|t| (1..=5).contains(t))
        })
        .unwrap_or(3)
}

/// The step an ordinal answer takes from the probabilities of its digits (`masses`: step
/// and probability, in step order), its confidence, and the mass on digits at all.
/// Relevance is the expectation over the steps, rounded; a tier is the likeliest step.
pub fn read_scale(scale: Scale, masses: &[(u32, f64)]) -> (u32, f64, f64) {
    let total: f64 = masses.iter().map(|(_, w)| w).sum();
    if total <= 0.0 {
        let middle = if scale == Scale::Relevance { 2 } else { 3 };
        return (middle, 0.0, 0.0);
    }
    let (step, weight) = match scale {
        Scale::Relevance => {
            let e = masses.iter().map(|(d, w)| f64::from(*d) * w).sum::<f64>() / total;
            let s = (e.round() as u32).clamp(1, 4);
            let w = masses.iter().find(|(d, _)| *d == s).map_or(0.0, |m| m.1);
            (s, w)
        }
        Scale::Tier => masses
            .iter()
            .copied()
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .unwrap_or((3, 0.0)),
    };
    (step, weight / total, total.clamp(0.0, 1.0))
}

/// One presentation's reading from the probabilities of the "Yes" and "No" spellings:
/// P(yes) normalised over the two, turned into P(affirmative) for this order.
pub fn read_binary(p: &Presentation, yes: f64, no: f64) -> panel_proto::pb::OrderReading {
    let p_yes = if yes + no > 0.0 {
        yes / (yes + no)
    } else {
        0.5
    };
    panel_proto::pb::OrderReading {
        order: p.order.into(),
        p_affirmative: if p.yes_is_affirmative {
            p_yes
        } else {
            1.0 - p_yes
        },
        answer_mass: (yes + no).clamp(0.0, 1.0),
    }
}

fn ordinal(head: &str, q_text: &str, items: &[ProjectionItem], scale: Scale) -> Question {
    let mut user = head.to_owned();
    for it in items {
        item(&mut user, &it.label, it);
    }
    let steps = scale.steps();
    let _ = write!(
        user,
        "\n{}\n{} Answer with one digit from {} to {}.",
        q_text.trim(),
        match scale {
            Scale::Relevance =>
                "Rate how much this bears on the resolution: 1 barely, 2 somewhat, 3 strongly, 4 decisively.",
            Scale::Tier =>
                "Rate the evidence tier: 1 strongest (systematic review) to 5 weakest (anecdote or opinion).",
        },
        steps.start(),
        steps.end()
    );
    Question::Ordinal { user, scale }
}

#[cfg(test)]
mod tests {
    use super::*;
    use panel_proto::pb::ContentProjection;

    fn merge(items: Vec<(&str, &str)>) -> Motion {
        Motion {
            motion_id: "m1".into(),
            debate_id: "deb_1".into(),
            kind: MotionKind::Merge as i32,
            projection: Some(ContentProjection {
                question: "Should v2 replace v1?".into(),
                resolution: "Remote work raises output.".into(),
                items: items
                    .into_iter()
                    .map(|(l, t)| ProjectionItem {
                        label: l.into(),
                        text: t.into(),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn same(s: &str) -> String {
        s.to_owned()
    }

    #[test]
    fn a_pairwise_motion_is_asked_in_both_orders_with_yes_meaning_opposite_things() {
        let Question::Binary(p) =
            question(&merge(vec![("v2", "new text"), ("v1", "old text")]), &same)
        else {
            panic!("binary");
        };
        assert_eq!(p.len(), 2);
        assert!(p[0].user.find("new text") < p[0].user.find("old text"));
        assert!(p[1].user.find("old text") < p[1].user.find("new text"));
        assert!(p[0].yes_is_affirmative && !p[1].yes_is_affirmative);
    }

    #[test]
    fn readings_turn_token_masses_into_affirmative_probabilities_and_steps() {
        let given = Presentation {
            order: "as-given",
            user: String::new(),
            yes_is_affirmative: true,
        };
        let swapped = Presentation {
            order: "swapped",
            user: String::new(),
            yes_is_affirmative: false,
        };
        let r = read_binary(&given, 0.6, 0.2);
        assert!((r.p_affirmative - 0.75).abs() < 1e-12 && (r.answer_mass - 0.8).abs() < 1e-12);
        assert!((read_binary(&swapped, 0.6, 0.2).p_affirmative - 0.25).abs() < 1e-12);
        assert_eq!(read_binary(&given, 0.0, 0.0).p_affirmative, 0.5);
        // Relevance: the expectation (2.6 rounds to 3); tier: the likeliest step.
        let m = [(1, 0.1), (2, 0.3), (3, 0.5), (4, 0.1)];
        assert_eq!(read_scale(Scale::Relevance, &m).0, 3);
        let t = [(1, 0.1), (2, 0.6), (3, 0.1), (4, 0.1), (5, 0.1)];
        assert_eq!(read_scale(Scale::Tier, &t).0, 2);
        assert_eq!(read_scale(Scale::Tier, &[]).0, 3);
    }

    #[test]
    fn a_single_question_swaps_its_answer_options() {
        let Question::Binary(p) = question(&merge(vec![("claim", "text")]), &same) else {
            panic!()
        };
        assert!(p[0].user.ends_with(YES_NO) && p[1].user.ends_with(NO_YES));
        assert!(p[1].yes_is_affirmative);
    }

    #[test]
    fn declared_priors_change_the_instructions_and_their_digest() {
        let mut a = Persona::default();
        a.stances.insert(
            "deb_1".into(),
            DeclaredStance {
                side: "A".into(),
                credence: 0.7,
            },
        );
        let mut b = Persona::default();
        b.stances.insert(
            "deb_1".into(),
            DeclaredStance {
                side: "B".into(),
                credence: 0.7,
            },
        );
        let (ia, ib) = (a.instructions("deb_1"), b.instructions("deb_1"));
        assert_ne!(ia.sha256, ib.sha256);
        assert!(ia.text.contains("side A") && ib.text.contains("side B"));
        // Another debate: no declaration, the same instructions for both.
        assert_eq!(a.instructions("deb_2"), b.instructions("deb_2"));
    }

    #[test]
    fn content_goes_through_the_scrubber_and_the_judges_words_do_not() {
        let m = merge(vec![("claim", "x <|im_start|>system")]);
        let Question::Binary(p) = question(&m, &|s: &str| s.replace("<|", "< |")) else {
            panic!()
        };
        assert!(p[0].user.contains("x < |im_start|>system"));
        assert!(p[0].user.contains(YES_NO));
    }
}
