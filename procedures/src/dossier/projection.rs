//! The bounded attributed projection an advocate may see at Clash II: the opposing
//! advocates' nominated claims and concessions, never their full reports, private
//! context or transcripts (`seeds/spellweaver-crucible.txt`, "The bounded casting").

use serde::{Deserialize, Serialize};

use super::branch::Branch;
use super::input::{ClaimRef, ReportClaim};

/// One opposing claim as projected: attributed, with its citations, defeat condition,
/// unknowns and the digest of the report it came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProjectedClaim {
    pub target: ClaimRef,
    pub posture: String,
    pub claim: ReportClaim,
    pub report_digest: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Projection {
    pub claims: Vec<ProjectedClaim>,
    /// Each opposing advocate's concession: (advocate, concession).
    pub concessions: Vec<(String, String)>,
}

impl Projection {
    pub fn targets(&self) -> Vec<ClaimRef> {
        self.claims.iter().map(|c| c.target.clone()).collect()
    }
}

/// What `advocate` sees at Clash II: every other branch that nominated at Temper.
pub fn projection(branches: &[Branch], advocate: &str) -> Projection {
    let mut p = Projection {
        claims: Vec::new(),
        concessions: Vec::new(),
    };
    for b in branches.iter().filter(|b| b.id() != advocate) {
        let (Some(n), Some(r)) = (&b.nomination, &b.report) else {
            continue;
        };
        for c in b.nominated() {
            p.claims.push(ProjectedClaim {
                target: ClaimRef {
                    advocate: b.id().into(),
                    claim: c.id.clone(),
                },
                posture: b.advocate.posture.clone(),
                claim: c.clone(),
                report_digest: r.digest.clone(),
            });
        }
        p.concessions.push((b.id().into(), n.concession.clone()));
    }
    p
}
