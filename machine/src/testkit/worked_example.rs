//! The paper's worked example (docs/CONFORMANCE.md) played through `apply` by the
//! scenario player, every panel answering as a [`Judge`] says, and an appeal of its
//! challenges to a fresh panel (docs/PANEL.md "Fresh panels").

use crucible::document::Debate;
use crucible::motion::{Answer, Question};
use crucible::scenario::{
    Labels, ScenarioError, Submission, Target, VerdictCheck, play_now, worked_example,
};
use serde_json::{Value, json};

use crate::command::ClientCommand;
use crate::debates::SubmissionHints;
use crate::model::Motion;

use super::fixtures::Judge;
use super::{Driver, Vote, hinted};

/// The state-machine target of the scenario player: every step a command through
/// `apply`, every motion answered by `judge`.
struct DriverTarget<'s, 'j> {
    driver: &'s mut Driver,
    debate_id: String,
    reverify: bool,
    judge: Judge<'j>,
}

impl Target for DriverTarget<'_, '_> {
    type Error = ScenarioError;

    async fn document(&mut self) -> Result<Debate, ScenarioError> {
        Ok(self.driver.doc(&self.debate_id).clone())
    }

    async fn submit(&mut self, s: Submission<'_>) -> Result<Option<String>, ScenarioError> {
        let c = serde_json::to_value(&s.contribution).expect("a contribution encodes");
        let hints = SubmissionHints {
            answer: s.hint,
            verify: s.verify,
            relevance: s.relevance,
        };
        let v = self
            .driver
            .contribute(&self.debate_id, s.author, s.side.as_str(), c, hints);
        Ok(v["created"].as_str().map(str::to_string))
    }

    async fn ask(&mut self, q: Question, hint: Answer) -> Result<(), ScenarioError> {
        if self.reverify || !matches!(q, Question::VerifyTier { .. }) {
            self.driver.ask(&self.debate_id, &q, Some(hint));
        }
        Ok(())
    }

    async fn reissue_verdict(&mut self) -> Result<(), ScenarioError> {
        self.driver.ok(ClientCommand::ReissueVerdict {
            debate_id: self.debate_id.clone(),
            author: "sim".into(),
        });
        Ok(())
    }

    async fn settle(&mut self) -> Result<(), ScenarioError> {
        self.driver.answer_all(&self.debate_id, self.judge);
        Ok(())
    }

    /// These judges and `reverify: false` may rule otherwise than the paper; each test
    /// asserts the verdicts it needs.
    fn verdict(&mut self, _: VerdictCheck<'_>) -> Result<(), ScenarioError> {
        Ok(())
    }
}

impl Driver {
    /// The paper's worked example played through `apply` with panels that answer as
    /// `judge` says. `reverify` keeps the step that verifies B1's source again.
    pub fn worked_example(&mut self, reverify: bool, judge: Judge<'_>) -> (String, Labels) {
        let debate_id = self.debate();
        let mut target = DriverTarget {
            driver: self,
            debate_id: debate_id.clone(),
            reverify,
            judge,
        };
        let labels = play_now(&worked_example("http://source.test"), &mut target)
            .expect("the worked example plays");
        assert_eq!(
            self.doc(&debate_id).phase,
            "closed",
            "the example runs to the end"
        );
        (debate_id, labels)
    }

    /// Side `side` (author `author`) appeals on the threads of the labelled claims;
    /// the appeal panel admits or denies it. Returns the appeal outcome's reply.
    pub fn appeal(
        &mut self,
        debate_id: &str,
        labels: &Labels,
        author: &str,
        side: &str,
        targets: &[&str],
        admit: bool,
    ) -> Value {
        let targets: Vec<Value> = targets
            .iter()
            .map(|t| {
                labels
                    .resolve(self.doc(debate_id), &json!(format!("${t}.thread")))
                    .expect("label")
            })
            .collect();
        let v = self.contribute(
            debate_id,
            author,
            side,
            json!({"op": "appeal", "ground": "A2", "justification": "The panel resolved these challenges before the response filed in time was shown to it.", "evidence": [], "targetThreadIds": targets}),
            SubmissionHints::default(),
        );
        let opened: Vec<String> = serde_json::from_value(v["opened"].clone()).expect("ids");
        let appeal_motion = opened
            .iter()
            .find(|id| {
                matches!(
                    self.state
                        .motions
                        .get(id.as_str())
                        .and_then(|m| m.spec.question.clone()),
                    Some(Question::AdmitAppeal { .. })
                )
            })
            .expect("the appeal opens a motion")
            .clone();
        // A fresh, wider panel: two seats more than the debate's, and nobody who
        // resolved a challenge on the contested threads (docs/PANEL.md, "Fresh panels").
        let seated = |id: &str| -> Vec<String> {
            self.state.motions.get(id).map_or(Vec::new(), |m| {
                m.seats.iter().map(|s| s.arbiter_id.clone()).collect()
            })
        };
        let appeal_seats = seated(&appeal_motion);
        assert_eq!(appeal_seats.len(), 6, "{appeal_seats:?}");
        let rec = self.state.debates.get(debate_id).expect("debate");
        for (id, q) in &rec.questions {
            if let Question::ResolveChallenge { challenge_id } = q {
                let on_target = rec.debate.challenge(challenge_id).is_some_and(|c| {
                    targets
                        .iter()
                        .any(|t| t.as_str() == Some(c.thread_id.as_str()))
                });
                if on_target {
                    let earlier = seated(id);
                    assert!(
                        appeal_seats.iter().all(|a| !earlier.contains(a)),
                        "{earlier:?} sat on the challenge and again on the appeal: {appeal_seats:?}"
                    );
                }
            }
        }
        let judge = move |m: &Motion, _: &str| Vote {
            yes: admit,
            p: if admit { 0.9 } else { 0.1 },
            ..hinted(m, 0.8)
        };
        let reply = self.answer(&appeal_motion, &judge);
        assert!(reply["verdict"]["Accepted"].is_object(), "{reply}");
        reply
    }
}
