//! A sealed exam sitting through `apply` (docs/CALIBRATION.md "Sealed exams"): the
//! embedded pool sealed (`SealExamPool`, an unchartered group may seal it), each
//! arbiter's own draw asked by signed exam motions and answered (`SubmitExam`), then the
//! key revealed (`RevealExamKey`), which scores every held exam and admits or refuses.

use calibration::exam::ExamItem;
use panel_proto::pb;

use crate::command::InternalCommand;
use crate::features::exam_sitting::{Pools, open_sitting};

use super::exam::item_reveal;
use super::keys::motion_key;
use super::{Driver, KitError};

fn sitting_error(reason: String) -> KitError {
    KitError::Sitting(reason)
}

impl Driver {
    /// Seals the embedded pool, has every arbiter of `ids` answer its own draw (binary
    /// items at the probability of yes `p_yes(arbiter, item)` gives, the others as
    /// [`item_reveal`] does) and reveals the key. Returns the ids the machine admitted.
    pub fn try_sealed_exam(
        &mut self,
        ids: &[String],
        p_yes: impl Fn(&str, &ExamItem) -> f64,
    ) -> Result<Vec<String>, KitError> {
        let pools = Pools::embedded().map_err(|e| sitting_error(e.to_string()))?;
        let pool = pools
            .next(&self.state)
            .ok_or_else(|| sitting_error("no pool left to seal".into()))?
            .clone();
        self.try_ok(InternalCommand::SealExamPool(Box::new(pool.sealed())))?;
        let number = open_sitting(&self.state)
            .map(|s| s.number)
            .ok_or_else(|| sitting_error("the seal opened no sitting".into()))?;
        for id in ids {
            let exam = self.sit(id, &pool.exam, pool.salt(), &p_yes)?;
            self.try_ok(exam)?;
        }
        self.try_ok(InternalCommand::RevealExamKey(Box::new(
            pool.reveal(number),
        )))?;
        Ok(ids
            .iter()
            .filter(|id| {
                self.state
                    .arbiters
                    .get(id.as_str())
                    .is_some_and(|a| a.admitted)
            })
            .cloned()
            .collect())
    }

    /// Arbiter `id`'s `SubmitExam` in the open sitting: its signed motions and answers.
    fn sit(
        &self,
        id: &str,
        exam: &calibration::exam::Exam,
        salt: &[u8; 32],
        p_yes: &impl Fn(&str, &ExamItem) -> f64,
    ) -> Result<InternalCommand, KitError> {
        let open =
            open_sitting(&self.state).ok_or_else(|| sitting_error("no sitting is open".into()))?;
        let key = self.key(id)?;
        let asked = open
            .asked(id, &key.verifying_key())
            .map_err(|e| sitting_error(e.to_string()))?;
        let now = i64::try_from(self.next_time_ms()).unwrap_or(i64::MAX);
        let (mut motions, mut reveals) = (Vec::new(), Vec::new());
        for (n, item_id) in asked.iter().enumerate() {
            let (public, item) = open
                .public
                .item(item_id)
                .zip(exam.item(item_id))
                .ok_or_else(|| sitting_error(format!("item {item_id} is not in the pool")))?;
            let m = panel_proto::sign_motion(
                &motion_key(),
                open.motion(
                    id,
                    &key.verifying_key(),
                    public,
                    salt,
                    (now + 10_000, now + 20_000),
                    None,
                )
                .map_err(|e| sitting_error(e.to_string()))?,
            );
            let ruling = pb::Ruling {
                motion_id: m.motion_id.clone(),
                state_hash: open
                    .state_hash()
                    .map_err(|e| sitting_error(e.to_string()))?,
                motion_digest: panel_proto::motion_digest(&m).to_vec(),
                ..Default::default()
            };
            let levels = &open.public.quantiles;
            reveals.push(item_reveal(
                key,
                ruling,
                &item.gold,
                p_yes(id, item),
                n,
                levels,
            )?);
            motions.push(crate::rules::signed_motion::encode(&m));
        }
        Ok(InternalCommand::SubmitExam {
            arbiter_id: id.into(),
            reveals,
            motions,
            sitting: Some(open.number),
        })
    }
}

#[cfg(test)]
mod tests {
    use calibration::exam::Gold;

    use crate::rules::acceptance::Stance;
    use crate::testkit::{Driver, Schedule};

    #[test]
    fn a_sealed_sitting_admits_the_calibrated_and_refuses_the_overconfident() {
        let mut d = Driver::with_schedule(Schedule::default());
        d.rules = Some(crate::rules::CURRENT);
        let ids: Vec<String> = ["good", "sure"].map(String::from).to_vec();
        for (i, id) in ids.iter().enumerate() {
            d.try_register(id, &format!("o{i}"), &format!("fam-{id}"), Stance::A)
                .expect("registered");
        }
        let admitted = d
            .try_sealed_exam(&ids, |id, item| match (id, &item.gold) {
                ("sure", _) => 0.95,
                (_, Gold::Binary(true)) => 0.9,
                _ => 0.1,
            })
            .expect("the sitting runs");
        assert_eq!(admitted, ["good"]);
        assert!(
            crate::features::exam_sitting::open_sitting(&d.state).is_none(),
            "closed"
        );
    }
}
