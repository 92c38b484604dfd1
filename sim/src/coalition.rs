//! Coalitions and the outcomes they force (docs/ARCHITECTURE.md invariant 1: no coalition
//! confined to one stance, one organisation or one lineage forces an outcome).
//!
//! An outcome is *forced* by a coalition when it was accepted and every seated arbiter who
//! ruled for it is a member: the coalition alone carried it. Under `Policy::independent()`
//! this must never happen for a coalition confined to one stance (rule 4), one organisation
//! (rule 5) or one declared lineage (rule 4 with lineages); the simulator counts it anyway.

use std::collections::BTreeSet;

use serde::Serialize;

use crate::judge::Ruling;
use crate::panel::Verdict;
use crate::population::Population;

/// What a coalition's members have in common, by their declared identities.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Confinement {
    pub one_stance: bool,
    pub one_organisation: bool,
    pub one_lineage: bool,
}

impl Confinement {
    /// `one stance, one lineage`, or `spread` when confined to none.
    pub fn describe(&self) -> String {
        let parts: Vec<&str> = [
            (self.one_stance, "one stance"),
            (self.one_organisation, "one organisation"),
            (self.one_lineage, "one lineage"),
        ]
        .into_iter()
        .filter_map(|(on, name)| on.then_some(name))
        .collect();
        if parts.is_empty() {
            "spread (no single stance, organisation or lineage)".into()
        } else {
            parts.join(", ")
        }
    }
}

/// How coalition `c` is confined.
pub fn confinement(pop: &Population, c: usize) -> Confinement {
    let members: Vec<usize> = pop.members(c).collect();
    let distinct = |f: &dyn Fn(usize) -> String| -> usize {
        members.iter().map(|&i| f(i)).collect::<BTreeSet<_>>().len()
    };
    Confinement {
        one_stance: distinct(&|i| format!("{:?}", pop.arbiters[i].declared)) == 1,
        one_organisation: distinct(&|i| pop.arbiters[i].organisation.clone()) == 1,
        one_lineage: distinct(&|i| pop.arbiters[i].declared_family.clone()) == 1,
    }
}

/// Whether coalition `c` alone carried `verdict` on the panel `seated`.
pub fn forced(
    pop: &Population,
    c: usize,
    rulings: &[Ruling],
    seated: &[usize],
    verdict: Verdict,
) -> bool {
    let Some(d) = verdict.decided() else {
        return false;
    };
    let mut supporters = seated.iter().filter(|&&i| rulings[i].yes == d).peekable();
    supporters.peek().is_some() && supporters.all(|&i| pop.arbiters[i].coalition == Some(c))
}
