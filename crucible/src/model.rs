//! Constructors: debates, definitions, threads and versions (SPEC sections 3.1 to 3.3).

use crate::document::{
    BySide, Citation, Debate, Definition, Num, SCHEMA_VERSION, Side, Steelman, Thread, Version,
    phase,
};
use crate::env::Env;
use crate::error::{Code, Outcome, Refusal};
use crate::protocol::Protocol;

/// Input of [`Protocol::new_debate`].
#[derive(Debug, Clone, Default)]
pub struct NewDebate {
    pub resolution: String,
    pub pos_a: String,
    pub pos_b: String,
    pub burden: Option<String>,
    pub claim_budget: Option<f64>,
}

/// Input of [`Protocol::add_version`].
#[derive(Debug, Clone, Default)]
pub struct VersionInput {
    pub parent_id: Option<String>,
    pub author: Option<String>,
    pub side: Option<String>,
    pub kind: Option<String>,
    pub assertion: Option<String>,
    pub grounds: Option<String>,
    pub warrant: Option<String>,
    pub evidence: Vec<Citation>,
    pub qualifier: Option<String>,
    pub relevance: Option<f64>,
}

fn side_or_refuse(side: Option<&str>) -> Outcome<Side> {
    side.and_then(Side::parse).ok_or_else(|| {
        Refusal::new(
            Code::SideInvalid,
            format!(
                "side {:?} is not a side of this debate; declare \"A\" or \"B\" (SPEC 3.2, G1)",
                side.unwrap_or("")
            ),
        )
    })
}

impl<E: Env> Protocol<E> {
    /// SPEC 3.1. A claim budget is kept only when it is an integer of at least one;
    /// anything else means no budget (reference 1.1.1 clamp).
    pub fn new_debate(&mut self, input: NewDebate) -> Debate {
        let id = self.env.new_id("deb");
        let created = self.env.now();
        let claim_budget = input
            .claim_budget
            .filter(|b| b.fract() == 0.0 && *b >= 1.0 && b.is_finite())
            .map(Num);
        let mut d = Debate {
            schema_version: SCHEMA_VERSION,
            id,
            created_at: Some(Num(created as f64)),
            resolution: input.resolution.clone(),
            positions: BySide {
                a: input.pos_a,
                b: input.pos_b,
            },
            burden: input
                .burden
                .filter(|b| !b.is_empty())
                .unwrap_or_else(|| "shared".into()),
            claim_budget,
            definitions: Vec::new(),
            phase: phase::FRAMING.into(),
            threads: Vec::new(),
            challenges: Vec::new(),
            steelmans: BySide::default(),
            verdicts: Vec::new(),
            appeals: Vec::new(),
            appeal_targets: Vec::new(),
            active_appeal_id: None,
            log: Vec::new(),
            extra: Default::default(),
        };
        d.steelmans = BySide {
            a: Steelman::default(),
            b: Steelman::default(),
        };
        self.add_log(
            &mut d,
            Some("system"),
            None,
            "debate-created",
            input.resolution,
        );
        d
    }

    /// SPEC 3.1 `definitions`: an agreed meaning of a key term.
    pub fn add_definition(&mut self, d: &mut Debate, def: Definition) {
        let term = def.term.clone();
        let (author, side) = (def.author.clone(), def.side.clone());
        d.definitions.push(def);
        self.add_log(
            d,
            author.as_deref(),
            side.as_deref(),
            "definition-added",
            term,
        );
    }

    /// SPEC 3.2. In spec mode threads open only in construction, on side A or B.
    pub fn create_thread(
        &mut self,
        d: &mut Debate,
        side: Option<&str>,
        title: Option<&str>,
        actor: Option<&str>,
    ) -> Outcome<String> {
        if self.spec() {
            side_or_refuse(side)?;
            if d.phase != phase::CONSTRUCTION {
                return Err(Refusal::new(
                    Code::PhaseForbids,
                    format!(
                        "threads open only during construction; the debate is in {} (SPEC section 6)",
                        d.phase
                    ),
                ));
            }
        }
        let id = self.env.new_id("thr");
        let created = self.env.now();
        d.threads.push(Thread {
            id: id.clone(),
            side: side.map(str::to_string),
            title: title.map(str::to_string),
            versions: Vec::new(),
            canonical_id: None,
            created_at: Some(Num(created as f64)),
        });
        self.add_log(d, actor, side, "thread-opened", title.map(str::to_string));
        Ok(id)
    }

    /// SPEC 3.3: a candidate version. In spec mode a version may be proposed during
    /// construction, during challenge on a thread emptied by demotion, or during an
    /// appeal review on a reopened thread (SPEC sections 6, 7, 12).
    pub fn add_version(
        &mut self,
        d: &mut Debate,
        thread_id: &str,
        input: VersionInput,
    ) -> Outcome<String> {
        let Some(ti) = d.threads.iter().position(|t| t.id == thread_id) else {
            return Err(Refusal::new(
                Code::ThreadNotFound,
                format!(
                    "no thread {thread_id:?} in this debate; list threads and use an existing id"
                ),
            ));
        };
        if self.spec() {
            side_or_refuse(input.side.as_deref())?;
            let t = &d.threads[ti];
            let open = match d.phase.as_str() {
                phase::CONSTRUCTION => true,
                phase::CHALLENGE => t.canonical_id.is_none(),
                phase::APPEAL_REVIEW => d.appeal_targets.iter().any(|x| x == thread_id),
                _ => false,
            };
            if !open {
                return Err(Refusal::new(
                    Code::PhaseForbids,
                    format!(
                        "versions are proposed in construction, as repairs of an emptied thread during challenge, or on a reopened thread during appeal review; this thread is closed to proposals in phase {}",
                        d.phase
                    ),
                ));
            }
            if let Some(r) = input.relevance
                && !crate::merge::RELEVANCE_STEPS.contains(&r)
            {
                return Err(crate::merge::relevance_refusal(r));
            }
        }
        let id = self.env.new_id("ver");
        let created = self.env.now();
        let t = &mut d.threads[ti];
        let num = t.versions.len() as u32 + 1;
        let parent_id = input
            .parent_id
            .filter(|p| !p.is_empty())
            .or_else(|| t.canonical_id.clone().filter(|c| !c.is_empty()));
        let v = Version {
            id: id.clone(),
            thread_id: t.id.clone(),
            num,
            parent_id,
            author: input.author,
            side: input.side,
            kind: input.kind,
            assertion: input.assertion,
            grounds: input.grounds,
            warrant: input.warrant,
            evidence: input.evidence,
            qualifier: input.qualifier,
            status: crate::document::status::CANDIDATE.into(),
            relevance: input.relevance.map(Num),
            merge_rationale: String::new(),
            created_at: Some(Num(created as f64)),
        };
        let detail = format!("{} v{}", t.title.as_deref().unwrap_or("undefined"), num);
        let (author, side) = (v.author.clone(), v.side.clone());
        t.versions.push(v);
        self.add_log(
            d,
            author.as_deref(),
            side.as_deref(),
            "version-proposed",
            detail,
        );
        Ok(id)
    }
}
