//! Challenges (SPEC section 7): filing against the opposing side only, responses, and a
//! single resolution; upholding demotes only a canonical version.

use crate::document::{Challenge, Citation, Debate, Num, Response, phase, status};
use crate::env::Env;
use crate::error::{Code, Outcome, Refusal};
use crate::protocol::{Protocol, require_rationale, utf16_prefix};

/// The four challenge grounds (SPEC section 7) with their display labels.
pub const GROUNDS: [(&str, &str); 4] = [
    ("evidence-validity", "Evidence validity"),
    ("warrant-failure", "Warrant failure"),
    ("relevance", "Relevance"),
    ("counter-evidence", "Counter-evidence"),
];

/// Input of [`Protocol::file_challenge`].
#[derive(Debug, Clone, Default)]
pub struct ChallengeInput {
    pub thread_id: String,
    pub version_id: String,
    pub ground: Option<String>,
    pub text: Option<String>,
    pub evidence: Vec<Citation>,
    pub author: Option<String>,
    pub side: Option<String>,
}

fn challenge_index(d: &Debate, id: &str) -> Outcome<usize> {
    d.challenges.iter().position(|c| c.id == id).ok_or_else(|| {
        Refusal::new(
            Code::ChallengeNotFound,
            format!("no challenge {id:?} in this debate; use an existing challenge id"),
        )
    })
}

/// How challenge log details name a thread: its title when the thread exists (the
/// text `undefined` when it has none, as the reference prints), else the raw id.
fn log_title(d: &Debate, thread_id: &str) -> String {
    match d.thread(thread_id) {
        Some(t) => t.title.clone().unwrap_or_else(|| "undefined".into()),
        None => thread_id.to_string(),
    }
}

impl<E: Env> Protocol<E> {
    /// SPEC section 7: a challenge must be filed against the opposing side. In spec
    /// mode it must also target the canonical version of an existing thread, in the
    /// challenge phase or on a reopened thread during appeal review.
    pub fn file_challenge(&mut self, d: &mut Debate, input: ChallengeInput) -> Outcome<String> {
        let target = d.thread(&input.thread_id);
        if let (Some(t), Some(side)) = (target, input.side.as_deref())
            && !side.is_empty()
            && t.side.as_deref() == Some(side)
        {
            return Err(Refusal::new(
                Code::ChallengeSameSide,
                "a side cannot challenge its own claim; challenges are filed against the opposing side (SPEC section 7)",
            ));
        }
        if self.spec() {
            let Some(t) = target else {
                return Err(Refusal::new(
                    Code::ThreadNotFound,
                    format!("no thread {:?} to challenge", input.thread_id),
                ));
            };
            if crate::document::Side::parse(input.side.as_deref().unwrap_or("")).is_none() {
                return Err(Refusal::new(
                    Code::SideInvalid,
                    "a challenger declares side \"A\" or \"B\" (G1)",
                ));
            }
            if t.canonical_id.as_deref() != Some(input.version_id.as_str()) {
                return Err(Refusal::new(
                    Code::ChallengeNotCanonical,
                    "only the canonical version of a thread can be challenged; target the thread's current canonical version",
                ));
            }
            let open = d.phase == phase::CHALLENGE
                || (d.phase == phase::APPEAL_REVIEW && d.appeal_targets.contains(&input.thread_id));
            if !open {
                return Err(Refusal::new(
                    Code::PhaseForbids,
                    format!(
                        "challenges are filed in the challenge phase or on a reopened thread during appeal review; the debate is in {}",
                        d.phase
                    ),
                ));
            }
        }
        let id = self.env.new_id("chl");
        let created = self.env.now();
        let title = log_title(d, &input.thread_id);
        let ground_label = input
            .ground
            .as_deref()
            .map(|g| {
                GROUNDS
                    .iter()
                    .find(|(k, _)| *k == g)
                    .map_or(g, |(_, label)| *label)
            })
            .unwrap_or("undefined")
            .to_string();
        let c = Challenge {
            id: id.clone(),
            thread_id: input.thread_id,
            version_id: input.version_id,
            ground: input.ground,
            text: input.text,
            evidence: input.evidence,
            author: input.author,
            side: input.side,
            response: None,
            resolution: None,
            rationale: Some(String::new()),
            appeal_id: d.active_appeal_id.clone().filter(|a| !a.is_empty()),
            created_at: Some(Num(created as f64)),
        };
        let (author, side) = (c.author.clone(), c.side.clone());
        d.challenges.push(c);
        self.add_log(
            d,
            author.as_deref(),
            side.as_deref(),
            "challenge-filed",
            format!("{ground_label} vs {title}"),
        );
        Ok(id)
    }

    /// Records the defending side's response (a later response replaces an earlier one).
    pub fn respond_challenge(
        &mut self,
        d: &mut Debate,
        challenge_id: &str,
        text: Option<&str>,
        author: Option<&str>,
        side: Option<&str>,
    ) -> Outcome {
        let ci = challenge_index(d, challenge_id)?;
        let ts = self.env.now();
        d.challenges[ci].response = Some(Response {
            text: text.map(str::to_string),
            author: author.map(str::to_string),
            side: side.map(str::to_string),
            ts: Some(Num(ts as f64)),
        });
        let detail = utf16_prefix(text.unwrap_or("undefined"), 80).to_string();
        self.add_log(d, author, side, "challenge-response", detail);
        Ok(())
    }

    /// SPEC section 7: resolve once. Upholding demotes the targeted version only when it
    /// is canonical, and empties the thread; a dismissal earns survival (section 9).
    pub fn resolve_challenge(
        &mut self,
        d: &mut Debate,
        challenge_id: &str,
        resolution: &str,
        rationale: Option<&str>,
        actor: Option<&str>,
    ) -> Outcome {
        let ci = challenge_index(d, challenge_id)?;
        if d.challenges[ci]
            .resolution
            .as_deref()
            .is_some_and(|r| !r.is_empty())
        {
            return Err(Refusal::new(
                Code::ChallengeAlreadyResolved,
                "this challenge is already resolved; its resolution stands (file an appeal to revisit it)",
            ));
        }
        if self.spec() {
            if resolution != "upheld" && resolution != "dismissed" {
                return Err(Refusal::new(
                    Code::ChallengeBadResolution,
                    format!(
                        "resolution {resolution:?} is not allowed; use \"upheld\" or \"dismissed\" (SPEC 3.6)"
                    ),
                ));
            }
            require_rationale(rationale, "a challenge resolution")?;
        }
        let c = &mut d.challenges[ci];
        c.resolution = Some(resolution.to_string());
        c.rationale = rationale.map(str::to_string);
        let (thread_id, version_id) = (c.thread_id.clone(), c.version_id.clone());
        let title = log_title(d, &thread_id);
        self.add_log(
            d,
            actor,
            None,
            &format!("challenge-{resolution}"),
            format!(
                "{title}: {}",
                utf16_prefix(rationale.unwrap_or("undefined"), 80)
            ),
        );
        if resolution == "upheld"
            && let Some(t) = d.thread_mut(&thread_id)
            && t.canonical_id.as_deref() == Some(version_id.as_str())
        {
            let title = t.title.clone().unwrap_or_else(|| "undefined".into());
            if let Some(v) = t.version_mut(&version_id) {
                v.status = status::DEMOTED.into();
                let detail = format!(
                    "{title} v{} demoted; the thread is open for a repaired version",
                    v.num
                );
                t.canonical_id = None;
                self.add_log(d, Some("system"), None, "version-demoted", detail);
            }
        }
        Ok(())
    }
}
