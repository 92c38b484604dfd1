//! The deterministic refusals at framing time, exactly the seed's list, each with its
//! reason and fix (`seeds/spellweaver-crucible.txt`, "Refusal and recovery";
//! docs/DOSSIER.md, "Refusals"), plus the document's bounds.

use crate::panel::{Finding, StartContext};

use super::framing::{
    Advocate, DossierStart, Framing, MAX_ADVOCATES, MAX_CLAIM_CHARS_CEILING, MAX_CLAIMS_CEILING,
    MAX_ID, MAX_LIST, MAX_NOMINATED_CEILING, MAX_PROJECTION_CEILING, MAX_RETRIES_CEILING, MAX_TEXT,
    RequestedResult,
};

/// Phrases in a question that ask the dossier to take authority from a count.
const MAJORITY_PHRASES: &[&str] = &[
    "by majority",
    "majority vote",
    "by vote",
    "put to a vote",
    "binding decision",
    "shall be enacted",
];

/// Fewest words a position needs to be a defensible answer rather than a label.
pub const MIN_POSITION_WORDS: usize = 8;

/// Every refusal the start document earns, all at once.
pub fn check(s: &DossierStart, ctx: &StartContext) -> Vec<Finding> {
    let mut out = bounds(s);
    out.extend(no_owner(&s.framing));
    out.extend(positions(&s.advocates));
    out.extend(evidence_floor(s));
    out.extend(biases(s));
    out.extend(lead_is_advocate(s));
    out.extend(authority_by_majority(&s.framing));
    out.extend(retry(s, ctx));
    match (&s.simulation, ctx.simulation) {
        (None, true) => out.push(f(
            "dossier.simulation_required",
            "simulation",
            "a simulation run needs a simulation section scripting the judges' answers",
        )),
        (Some(sc), _) => out.extend(sc.check("dossier.simulation", "simulation", MAX_TEXT)),
        (None, false) => {}
    }
    out
}

fn no_owner(fr: &Framing) -> Vec<Finding> {
    let blank = fr.owner.as_deref().is_none_or(|o| o.trim().is_empty());
    blank
        .then(|| {
            f(
                "dossier.no_owner",
                "framing.owner",
                "the question has no owner: a dossier must be received by the office that keeps judgment and effect authority; name it",
            )
        })
        .into_iter()
        .collect()
}

/// Duplicate postures or positions, and caricatures: a position written by someone
/// other than its holder or the owner, or too thin to defend.
fn positions(advocates: &[Advocate]) -> Vec<Finding> {
    let mut out = Vec::new();
    if advocates.len() < 2 {
        out.push(f(
            "dossier.too_few_positions",
            "advocates",
            "a crucible needs at least two serious positions; add the strongest rival position",
        ));
    }
    for (i, a) in advocates.iter().enumerate() {
        let at = format!("advocates[{i}]");
        for (j, b) in advocates[..i].iter().enumerate() {
            if b.id == a.id {
                out.push(f(
                    "dossier.advocate_id_unique",
                    &format!("{at}.id"),
                    &format!(
                        "advocate id {} is also advocates[{j}]; give each its own id",
                        a.id
                    ),
                ));
            }
            if norm(&b.posture) == norm(&a.posture) || norm(&b.position) == norm(&a.position) {
                out.push(f(
                    "dossier.duplicate_position",
                    &format!("{at}.position"),
                    &format!("duplicates advocates[{j}] ({}); two advocates of one position manufacture false balance: merge them or state a genuinely different position", b.id),
                ));
            }
        }
        if a.stated_by != a.id && a.stated_by != "owner" {
            out.push(f(
                "dossier.caricature_position",
                &format!("{at}.stated_by"),
                &format!("the position of {} was written by {}; a position stated by its opponent is a caricature: let its holder or the owner state it", a.id, a.stated_by),
            ));
        }
        if a.position.split_whitespace().count() < MIN_POSITION_WORDS {
            out.push(f(
                "dossier.caricature_position",
                &format!("{at}.position"),
                &format!("a position of fewer than {MIN_POSITION_WORDS} words is a label, not a defensible answer; state what it proposes and why"),
            ));
        }
    }
    out
}

fn evidence_floor(s: &DossierStart) -> Vec<Finding> {
    let chars = s.evidence_chars();
    let mut out = Vec::new();
    if s.framing.evidence.is_empty() {
        out.push(f(
            "dossier.evidence_floor_fit",
            "framing.evidence",
            "the common evidence floor is empty; every advocate must argue from the same listed evidence",
        ));
    }
    for (i, a) in s.advocates.iter().enumerate() {
        if chars > a.budget.context_chars as usize {
            out.push(f(
                "dossier.evidence_floor_fit",
                &format!("advocates[{i}].budget.context_chars"),
                &format!("the evidence floor is {chars} characters and {} can take {}; the common floor must fit every advocate: shorten the summaries or raise the budget", a.id, a.budget.context_chars),
            ));
        }
    }
    out
}

fn biases(s: &DossierStart) -> Vec<Finding> {
    let mut out = Vec::new();
    for (i, b) in s.framing.biases.iter().enumerate() {
        let at = format!("framing.biases[{i}]");
        if b.defeat_condition
            .as_deref()
            .is_none_or(|d| d.trim().is_empty())
        {
            out.push(f(
                "dossier.bias_without_defeat",
                &format!("{at}.defeat_condition"),
                &format!("the bias \"{}\" has no defeat condition; say what evidence would make its holder give it up", b.angle),
            ));
        }
        if b.holder != "owner" && !s.advocates.iter().any(|a| a.id == b.holder) {
            out.push(f(
                "dossier.bias_holder",
                &format!("{at}.holder"),
                &format!("{} is neither an advocate nor owner", b.holder),
            ));
        }
    }
    out
}

/// The Lead is the panel: refuse when an advocate's id or model is also seated.
fn lead_is_advocate(s: &DossierStart) -> Vec<Finding> {
    let mut out = Vec::new();
    for (i, seat) in s.framing.arbiters.iter().enumerate() {
        if let Some(a) = s
            .advocates
            .iter()
            .find(|a| &a.id == seat || &a.model == seat)
        {
            out.push(f(
                "dossier.lead_is_advocate",
                &format!("framing.arbiters[{i}]"),
                &format!("{seat} argues as advocate {} and would also sit on the panel that synthesises; remove it from the arbiters or replace the advocate", a.id),
            ));
        }
    }
    out
}

fn authority_by_majority(fr: &Framing) -> Vec<Finding> {
    let mut out = Vec::new();
    if fr.requested != RequestedResult::Dossier {
        out.push(f(
            "dossier.authority_by_majority",
            "framing.requested",
            &format!("the framing asks for {:?}; a panel's count would then carry authority. Request a dossier: the owner decides and acts", fr.requested),
        ));
    }
    for (i, e) in fr.effects.iter().enumerate() {
        out.push(f(
            "dossier.authority_by_majority",
            &format!("framing.effects[{i}]"),
            &format!("the dossier cannot {e}; effects need a separate act of the owner under its own authority. Drop the effect"),
        ));
    }
    let q = fr.question.to_lowercase();
    if let Some(p) = MAJORITY_PHRASES.iter().find(|p| q.contains(*p)) {
        out.push(f(
            "dossier.authority_by_majority",
            "framing.question",
            &format!("the question asks for a result \"{p}\"; ask what the owner should do and why, not for a count to decide"),
        ));
    }
    out
}

fn retry(s: &DossierStart, ctx: &StartContext) -> Vec<Finding> {
    let Some(r) = &s.retry_of else {
        return Vec::new();
    };
    let mut out: Vec<Finding> = text("retry_of.reason", &r.reason).into_iter().collect();
    if r.run_id == ctx.run_id {
        out.push(f(
            "dossier.retry_self",
            "retry_of.run_id",
            "a retry is a new run; it cannot reference itself",
        ));
    }
    out.extend(id("retry_of.run_id", &r.run_id));
    out
}

/// Sizes, ids and texts: a bounded document.
fn bounds(s: &DossierStart) -> Vec<Finding> {
    let fr = &s.framing;
    let mut out = Vec::new();
    out.extend(text("framing.question", &fr.question));
    if s.advocates.len() > MAX_ADVOCATES {
        out.push(f(
            "dossier.advocates",
            "advocates",
            &format!("{} advocates, at most {MAX_ADVOCATES}", s.advocates.len()),
        ));
    }
    let lists = [
        ("framing.acceptance_criteria", fr.acceptance_criteria.len()),
        ("framing.evidence", fr.evidence.len()),
        ("framing.biases", fr.biases.len()),
        ("framing.omissions", fr.omissions.len()),
        ("framing.arbiters", fr.arbiters.len()),
        ("framing.effects", fr.effects.len()),
    ];
    for (at, n) in lists {
        if n > MAX_LIST {
            out.push(f(
                "dossier.list_size",
                at,
                &format!("{n} items, at most {MAX_LIST}"),
            ));
        }
    }
    if fr.acceptance_criteria.is_empty() {
        out.push(f(
            "dossier.acceptance_criteria",
            "framing.acceptance_criteria",
            "no acceptance criteria; say what a good answer must satisfy",
        ));
    }
    for (i, c) in fr.acceptance_criteria.iter().enumerate() {
        out.extend(text(&format!("framing.acceptance_criteria[{i}]"), c));
    }
    for (i, e) in fr.evidence.iter().enumerate() {
        out.extend(id(&format!("framing.evidence[{i}].id"), &e.id));
        out.extend(text(&format!("framing.evidence[{i}].summary"), &e.summary));
        if fr.evidence[..i].iter().any(|x| x.id == e.id) {
            out.push(f(
                "dossier.evidence_id_unique",
                &format!("framing.evidence[{i}].id"),
                "evidence id used twice",
            ));
        }
    }
    for (i, a) in s.advocates.iter().enumerate() {
        out.extend(id(&format!("advocates[{i}].id"), &a.id));
        out.extend(text(&format!("advocates[{i}].position"), &a.position));
        for (field, v) in [
            ("model", &a.model),
            ("provider", &a.provider),
            ("family", &a.family),
            ("posture", &a.posture),
        ] {
            out.extend(text(&format!("advocates[{i}].{field}"), v));
        }
    }
    out.extend(limits(s));
    out
}

fn limits(s: &DossierStart) -> Vec<Finding> {
    let l = s.framing.limits;
    let mut out = Vec::new();
    let ranges = [
        ("max_claims", l.max_claims, MAX_CLAIMS_CEILING),
        ("max_nominated", l.max_nominated, MAX_NOMINATED_CEILING),
        (
            "max_claim_chars",
            l.max_claim_chars,
            MAX_CLAIM_CHARS_CEILING,
        ),
        (
            "max_projection_chars",
            l.max_projection_chars,
            MAX_PROJECTION_CEILING,
        ),
    ];
    for (name, v, ceiling) in ranges {
        if v == 0 || v > ceiling {
            out.push(f(
                "dossier.limits",
                &format!("framing.limits.{name}"),
                &format!("{v}; allow 1 to {ceiling}"),
            ));
        }
    }
    if l.deadlock_retries > MAX_RETRIES_CEILING {
        out.push(f(
            "dossier.limits",
            "framing.limits.deadlock_retries",
            &format!("{}; allow 0 to {MAX_RETRIES_CEILING}", l.deadlock_retries),
        ));
    }
    let opponents = s.advocates.len().saturating_sub(1) as u64;
    let need = opponents * u64::from(l.max_nominated) * u64::from(l.max_claim_chars);
    if need > u64::from(l.max_projection_chars) {
        out.push(f(
            "dossier.limits",
            "framing.limits.max_projection_chars",
            &format!("the Clash II projection must hold every nominated opposing claim ({opponents} x {} x {} = {need} characters) since compression may not drop one; raise it or lower max_nominated or max_claim_chars", l.max_nominated, l.max_claim_chars),
        ));
    }
    out
}

fn norm(s: &str) -> String {
    s.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

pub(crate) fn f(rule: &str, at: &str, reason: &str) -> Finding {
    Finding {
        rule: rule.into(),
        at: at.into(),
        reason: reason.into(),
    }
}

pub(crate) fn text(at: &str, t: &str) -> Option<Finding> {
    if t.trim().is_empty() {
        Some(f("dossier.text", at, "empty text; write it out"))
    } else if t.chars().count() > MAX_TEXT {
        Some(f(
            "dossier.text",
            at,
            &format!("longer than {MAX_TEXT} characters; shorten it"),
        ))
    } else {
        None
    }
}

pub(crate) fn id(at: &str, v: &str) -> Option<Finding> {
    let ok = !v.is_empty()
        && v.chars().count() <= MAX_ID
        && v.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    (!ok).then(|| {
        f(
            "dossier.id",
            at,
            &format!(
                "id {v:?} must be 1 to {MAX_ID} characters of letters, digits, '-', '_' or '.'"
            ),
        )
    })
}
