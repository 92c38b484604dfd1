//! The Gate: deterministic admission rules G1 to G14 (SPEC section 8).
//!
//! Every submission passes here before it can enter the record. [`check`] returns every
//! violation with the rule, the field, an excerpt, a message and a fix, in rule order,
//! then field order, then lexicon order (reference digest section 7). An empty list
//! means the submission is admissible.
//!
//! Two modes exist. [`GateMode::Reference`] agrees exactly with the reference engine
//! (open-crucible-protocol 1.1.1). [`GateMode::Acronyms`], the default, differs in G7
//! only: legitimate acronyms (PRISMA, GCSE, HIPAA, ...) pass while shouting still fails;
//! see [`register`] and docs/GATE.md.
//!
//! The messages and fixes are this project's own wording; the rule ids, the fields named
//! in a report and the excerpts follow the reference so reports can be compared.

mod byteclass;
mod engine;
pub mod lexicon;
pub mod register;
pub mod request;
pub mod semantic;
mod text;

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

pub use request::{GateInputError, GateRequest};

/// The identifier of a Gate rule, G1 to G14 (SPEC 8 table).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RuleId {
    G1,
    G2,
    G3,
    G4,
    G5,
    G6,
    G7,
    G8,
    G9,
    G10,
    G11,
    G12,
    G13,
    G14,
}

impl RuleId {
    /// All rules in evaluation order.
    pub const ALL: [RuleId; 14] = [
        RuleId::G1,
        RuleId::G2,
        RuleId::G3,
        RuleId::G4,
        RuleId::G5,
        RuleId::G6,
        RuleId::G7,
        RuleId::G8,
        RuleId::G9,
        RuleId::G10,
        RuleId::G11,
        RuleId::G12,
        RuleId::G13,
        RuleId::G14,
    ];

    /// The rule number, 1 to 14.
    pub fn number(self) -> u8 {
        self as u8 + 1
    }

    /// The id as written in reports, `G1` to `G14`.
    pub fn as_str(self) -> &'static str {
        self.as_str_static()
    }

    /// The rule's name as the SPEC 8 table gives it.
    pub fn name(self) -> &'static str {
        RULES[self as usize].name
    }

    /// Parses `G1` to `G14`.
    pub fn parse(s: &str) -> Option<RuleId> {
        RuleId::ALL.into_iter().find(|r| r.as_str() == s)
    }

    fn as_str_static(self) -> &'static str {
        const IDS: [&str; 14] = [
            "G1", "G2", "G3", "G4", "G5", "G6", "G7", "G8", "G9", "G10", "G11", "G12", "G13", "G14",
        ];
        IDS[self as usize]
    }
}

impl fmt::Display for RuleId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str_static())
    }
}

impl Serialize for RuleId {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str_static())
    }
}

/// A rule for rendering: id, the SPEC name and a description in our words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Rule {
    pub id: RuleId,
    pub name: &'static str,
    pub description: &'static str,
}

static RULES: [Rule; 14] = [
    Rule {
        id: RuleId::G1,
        name: "Side declaration",
        description: "A contribution names its author and the side (A or B) it argues for. Arbiters need not declare a side.",
    },
    Rule {
        id: RuleId::G2,
        name: "Structural completeness",
        description: "A claim fills in its assertion, grounds and warrant and declares a confidence qualifier, so no step of the inference is left unstated.",
    },
    Rule {
        id: RuleId::G3,
        name: "Atomicity",
        description: "One point per thread: an assertion has at most 50 words, grounds 150 and a warrant 80.",
    },
    Rule {
        id: RuleId::G4,
        name: "No person-directed language",
        description: "Text argues about claims and evidence, never about the people making them: no insults, no second-person accusations, no talk of opponents.",
    },
    Rule {
        id: RuleId::G5,
        name: "No loaded or emotive language",
        description: "Outrage vocabulary is refused; how strongly something is felt is not evidence for it.",
    },
    Rule {
        id: RuleId::G6,
        name: "No humor, ridicule, or sarcasm",
        description: "Jokes, mockery and emoji are refused because ridicule discourages the scrutiny the record exists for.",
    },
    Rule {
        id: RuleId::G7,
        name: "Formal register",
        description: "No exclamation marks and no words in capitals for emphasis; acronyms are allowed.",
    },
    Rule {
        id: RuleId::G8,
        name: "No rhetorical questions",
        description: "Argumentative fields state things; a question mark there is refused.",
    },
    Rule {
        id: RuleId::G9,
        name: "No appeal to popularity or obviousness",
        description: "What everyone supposedly knows, or what is called obvious, is not offered as support.",
    },
    Rule {
        id: RuleId::G10,
        name: "No unnamed authority",
        description: "Studies, experts or science may be invoked only when a specific citation is attached.",
    },
    Rule {
        id: RuleId::G11,
        name: "Citation required",
        description: "Empirical claims, evidence-validity and counter-evidence challenges, and A1 and A3 appeals must attach at least one citation.",
    },
    Rule {
        id: RuleId::G12,
        name: "No overclaiming",
        description: "Certainty wording needs a certain qualifier and, for an empirical claim, evidence of the top tier.",
    },
    Rule {
        id: RuleId::G13,
        name: "Challenge discipline",
        description: "A challenge names exactly one of the four grounds: evidence-validity, warrant-failure, relevance or counter-evidence.",
    },
    Rule {
        id: RuleId::G14,
        name: "Steelman fidelity",
        description: "A steelman restates the other side without distancing or derisive markers.",
    },
];

/// The fourteen rules in order, for rendering.
pub fn rules() -> &'static [Rule] {
    &RULES
}

/// One field of a submission as the Gate sees it (reference shape
/// `{name?, label, text, argumentative?, required?}`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default)]
pub struct GateField {
    /// Protocol name (`assertion`, `grounds`, `warrant`, ...): G3 limits are keyed by it.
    #[serde(
        deserialize_with = "null_as_default",
        skip_serializing_if = "Option::is_none"
    )]
    pub name: Option<String>,
    /// Display label, used as `field` in reports.
    #[serde(deserialize_with = "null_as_default")]
    pub label: String,
    #[serde(deserialize_with = "null_as_default")]
    pub text: String,
    /// G8 applies only to argumentative fields.
    #[serde(deserialize_with = "null_as_default")]
    pub argumentative: bool,
    /// G2 reports a required field left blank (claims only).
    #[serde(deserialize_with = "null_as_default")]
    pub required: bool,
}

impl GateField {
    /// A field with a protocol name, a label and text; not argumentative, not required.
    pub fn new(name: &str, label: &str, text: &str) -> GateField {
        GateField {
            name: Some(name.to_owned()),
            label: label.to_owned(),
            text: text.to_owned(),
            argumentative: false,
            required: false,
        }
    }
}

/// The kind of submission (reference `ctx.kind`); unknown strings are kept and simply
/// trigger no kind-specific rule.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Kind {
    Claim,
    Challenge,
    Response,
    Steelman,
    Appeal,
    Definition,
    /// Any other value, including the empty string for a missing kind.
    Other(String),
}

impl Default for Kind {
    fn default() -> Kind {
        Kind::Other(String::new())
    }
}

impl Kind {
    pub fn as_str(&self) -> &str {
        match self {
            Kind::Claim => "claim",
            Kind::Challenge => "challenge",
            Kind::Response => "response",
            Kind::Steelman => "steelman",
            Kind::Appeal => "appeal",
            Kind::Definition => "definition",
            Kind::Other(s) => s,
        }
    }

    pub fn parse(s: &str) -> Kind {
        match s {
            "claim" => Kind::Claim,
            "challenge" => Kind::Challenge,
            "response" => Kind::Response,
            "steelman" => Kind::Steelman,
            "appeal" => Kind::Appeal,
            "definition" => Kind::Definition,
            other => Kind::Other(other.to_owned()),
        }
    }
}

impl<'de> Deserialize<'de> for Kind {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Kind, D::Error> {
        let s: Option<String> = Option::deserialize(d)?;
        Ok(s.map(|s| Kind::parse(&s)).unwrap_or_default())
    }
}

impl Serialize for Kind {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// The submission context (reference `ctx`): who submits what. Missing keys are
/// tolerated and behave as the reference's `undefined`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(default, rename_all = "camelCase")]
pub struct GateContext {
    pub kind: Kind,
    #[serde(
        deserialize_with = "null_as_default",
        skip_serializing_if = "Option::is_none"
    )]
    pub author: Option<String>,
    /// `A` or `B`; anything else counts as undeclared.
    #[serde(
        deserialize_with = "null_as_default",
        skip_serializing_if = "Option::is_none"
    )]
    pub side: Option<String>,
    /// `arbiter` is exempt from declaring a side.
    #[serde(
        deserialize_with = "null_as_default",
        skip_serializing_if = "Option::is_none"
    )]
    pub role: Option<String>,
    /// Claim type; `empirical` triggers G11 and the tier condition of G12.
    #[serde(
        rename = "type",
        deserialize_with = "null_as_default",
        skip_serializing_if = "Option::is_none"
    )]
    pub type_: Option<String>,
    /// `certain`, `probable` or `plausible`.
    #[serde(
        deserialize_with = "null_as_default",
        skip_serializing_if = "Option::is_none"
    )]
    pub qualifier: Option<String>,
    /// Citations attached; a submission is cited when this is greater than zero.
    #[serde(
        deserialize_with = "null_as_default",
        skip_serializing_if = "Option::is_none"
    )]
    pub evidence_count: Option<f64>,
    /// Highest evidence tier weight attached (5 is the top tier).
    #[serde(
        deserialize_with = "null_as_default",
        skip_serializing_if = "Option::is_none"
    )]
    pub max_tier_weight: Option<f64>,
    /// Challenge ground key or appeal ground (A1, A2, A3). A non-string value (the
    /// reference tolerates arrays and numbers) counts as no ground: it matches no key.
    #[serde(
        deserialize_with = "lenient_string",
        skip_serializing_if = "Option::is_none"
    )]
    pub ground: Option<String>,
}

fn null_as_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

fn lenient_string<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(match serde_json::Value::deserialize(d)? {
        serde_json::Value::String(s) => Some(s),
        _ => None,
    })
}

/// One reason a submission is refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Violation {
    pub rule: RuleId,
    #[serde(rename = "ruleName")]
    pub rule_name: &'static str,
    /// The field label, or `(identity)`, `Qualifier`, `Evidence`, `Ground` for rules on
    /// the context.
    pub field: String,
    /// The offending text with some context; informative only.
    pub excerpt: String,
    pub message: String,
    pub fix: &'static str,
}

/// How G7 treats words in capitals.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum GateMode {
    /// Ours: words in capitals that are not ordinary English words (undefined acronyms
    /// such as NHANES or MODIS), and acronyms that are published in the domain lexicon
    /// or defined in the submission, pass; ordinary words in capitals, alone or in runs
    /// (`NEVER`, `NICE TRY`), still fail ([`register`]).
    #[default]
    Acronyms,
    /// Exactly the reference engine: four or more capitals pass only if whitelisted.
    Reference,
}

/// Runs every rule over a submission in the default mode. Never panics.
pub fn check(fields: &[GateField], ctx: &GateContext) -> Vec<Violation> {
    engine::check(fields, ctx, GateMode::default())
}

/// Runs every rule over a submission in the given mode. Never panics.
pub fn check_with_mode(fields: &[GateField], ctx: &GateContext, mode: GateMode) -> Vec<Violation> {
    engine::check(fields, ctx, mode)
}

/// A submission the Gate refused: the violations, in report order. Callers that write to
/// the record wrap this in their own error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the Gate refused the submission ({})", summary(.violations))]
pub struct GateRefusal {
    pub violations: Vec<Violation>,
}

impl GateRefusal {
    /// The violated rule ids, sorted by rule number, without repeats.
    pub fn rule_ids(&self) -> Vec<RuleId> {
        violated_rules(&self.violations)
    }
}

fn summary(violations: &[Violation]) -> String {
    let ids: Vec<&str> = violated_rules(violations)
        .into_iter()
        .map(RuleId::as_str_static)
        .collect();
    format!("{} violation(s): {}", violations.len(), ids.join(", "))
}

/// The violated rule ids, sorted by rule number, without repeats.
pub fn violated_rules(violations: &[Violation]) -> Vec<RuleId> {
    let mut ids: Vec<RuleId> = violations.iter().map(|v| v.rule).collect();
    ids.sort();
    ids.dedup();
    ids
}

/// Admits a submission or refuses it with every violation (default mode).
pub fn admit(fields: &[GateField], ctx: &GateContext) -> Result<(), GateRefusal> {
    let violations = check(fields, ctx);
    if violations.is_empty() {
        Ok(())
    } else {
        Err(GateRefusal { violations })
    }
}
