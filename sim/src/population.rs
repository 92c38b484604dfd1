//! The arbiter pool of a scenario: each `[[group]]` expanded into arbiters with their
//! declared identity (what the draw and the acceptance rule see, docs/ARCHITECTURE.md
//! "Prior") and their hidden traits (what actually drives their rulings).

use std::collections::HashMap;

use panel_machine::Stance;
use panel_machine::rules::draw::Candidate;

use crate::gaussian::normal_quantile;
use crate::scenario::{Scenario, StanceSpec, Target};

/// One simulated arbiter.
#[derive(Debug, Clone, PartialEq)]
pub struct Arbiter {
    pub id: String,
    /// Index of its `[[group]]`.
    pub group: usize,
    pub declared: Stance,
    /// The stance it leans to; an impostor's differs from `declared`.
    pub leaning: Stance,
    pub organisation: String,
    /// Index of its true family (shared errors, self-preference).
    pub family: usize,
    pub declared_family: String,
    /// Mean of the latent judgement toward the truth: `accuracy = Φ(skill)`.
    pub skill: f64,
    pub confidence: f64,
    pub position_bias: f64,
    pub verbosity_bias: f64,
    pub self_family_preference: f64,
    pub partisanship: f64,
    pub inert: bool,
    /// Index into [`Population::coalitions`].
    pub coalition: Option<usize>,
    pub target: Option<Target>,
    /// A sybil: the pool index of the arbiter whose rulings it copies.
    pub copies: Option<usize>,
}

impl Arbiter {
    /// A declared camp that is not the one it leans to.
    pub fn is_impostor(&self) -> bool {
        matches!(self.declared, Stance::A | Stance::B)
            && matches!(self.leaning, Stance::A | Stance::B)
            && self.declared != self.leaning
    }
}

/// The pool, its families and its coalitions.
#[derive(Debug, Clone, PartialEq)]
pub struct Population {
    pub arbiters: Vec<Arbiter>,
    /// `(name, within-family error correlation)`.
    pub families: Vec<(String, f64)>,
    pub coalitions: Vec<String>,
    /// The pool as the draw sees it, in pool order.
    pub candidates: Vec<Candidate>,
    index: HashMap<String, usize>,
}

fn stance(s: StanceSpec) -> Stance {
    match s {
        StanceSpec::A => Stance::A,
        StanceSpec::B => Stance::B,
        StanceSpec::None => Stance::None,
    }
}

impl Population {
    /// Expand the scenario's groups. The scenario was validated, so every family and
    /// `copies` name resolves.
    pub fn build(s: &Scenario) -> Self {
        let families: Vec<(String, f64)> = s
            .family
            .iter()
            .map(|f| (f.name.clone(), f.error_correlation))
            .collect();
        let mut coalitions: Vec<String> = Vec::new();
        let mut arbiters = Vec::new();
        let mut first_of_group = Vec::new();
        for (gi, g) in s.group.iter().enumerate() {
            first_of_group.push(arbiters.len());
            let family = families.iter().position(|f| f.0 == g.family).unwrap_or(0);
            let coalition = g.coalition.as_ref().map(|c| {
                coalitions.iter().position(|x| x == c).unwrap_or_else(|| {
                    coalitions.push(c.clone());
                    coalitions.len() - 1
                })
            });
            for i in 0..g.count {
                arbiters.push(Arbiter {
                    id: format!("{}-{i}", g.name),
                    group: gi,
                    declared: stance(g.stance),
                    leaning: stance(g.true_stance.unwrap_or(g.stance)),
                    organisation: g.organisation.replace("{i}", &i.to_string()),
                    family,
                    declared_family: g.declared_family.clone().unwrap_or(g.family.clone()),
                    skill: normal_quantile(g.accuracy),
                    confidence: g.confidence,
                    position_bias: g.position_bias,
                    verbosity_bias: g.verbosity_bias,
                    self_family_preference: g.self_family_preference,
                    partisanship: g.partisanship,
                    inert: g.inert,
                    coalition,
                    target: g.target,
                    copies: None,
                });
            }
        }
        Self::link_copies(s, &mut arbiters, &first_of_group);
        let candidates = arbiters
            .iter()
            .map(|a| Candidate {
                id: a.id.clone(),
                stance: a.declared,
                organisation: a.organisation.clone(),
                model_family: a.declared_family.clone(),
                admitted: true,
            })
            .collect();
        let index = arbiters
            .iter()
            .enumerate()
            .map(|(i, a)| (a.id.clone(), i))
            .collect();
        Self {
            arbiters,
            families,
            coalitions,
            candidates,
            index,
        }
    }

    /// Member `i` of a copying group copies member `i mod n` of its original; a sybil leans
    /// as its original does (it is the same judge), whatever it declares.
    fn link_copies(s: &Scenario, arbiters: &mut [Arbiter], first_of_group: &[usize]) {
        for (gi, g) in s.group.iter().enumerate() {
            let Some(src) = &g.copies else { continue };
            let Some(si) = s.group.iter().position(|o| &o.name == src) else {
                continue;
            };
            let n = s.group[si].count;
            for i in 0..g.count {
                let original = first_of_group[si] + i % n;
                let leaning = arbiters[original].leaning;
                let me = &mut arbiters[first_of_group[gi] + i];
                me.copies = Some(original);
                me.leaning = leaning;
            }
        }
    }

    /// Every family's within-family error correlation replaced (the correlation sweep).
    pub fn with_correlation(&self, rho: f64) -> Self {
        let mut p = self.clone();
        for f in &mut p.families {
            f.1 = rho;
        }
        p
    }

    /// The pool index of a drawn candidate.
    pub fn index_of(&self, id: &str) -> Option<usize> {
        self.index.get(id).copied()
    }

    /// Members of coalition `c`.
    pub fn members(&self, c: usize) -> impl Iterator<Item = usize> + '_ {
        (0..self.arbiters.len()).filter(move |&i| self.arbiters[i].coalition == Some(c))
    }
}
