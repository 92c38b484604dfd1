//! The steelman gate (SPEC 3.5): each side restates the other; the restated side
//! certifies or returns it; an arbiter may certify over an objection after a revision
//! cycle, with the objection and the reason kept.

use crate::document::{Debate, Num, Side, Steelman};
use crate::env::Env;
use crate::error::{Code, Outcome, Refusal};
use crate::protocol::{Protocol, require_rationale, utf16_prefix};

fn not_submitted() -> Refusal {
    Refusal::new(
        Code::SteelmanNotSubmitted,
        "no restatement has been submitted for this side; the opposing side submits one first",
    )
}

fn wrong_side(expected: Side, what: &str) -> Refusal {
    Refusal::new(
        Code::SteelmanNotOwnSide,
        format!(
            "{what} is given by side {expected} only (SPEC 3.5); act as side {expected} or leave it to them"
        ),
    )
}

impl<E: Env> Protocol<E> {
    /// A restatement of `of_side`'s case, written by the other side. Replaces the whole
    /// steelman (dropping any earlier certification).
    pub fn submit_steelman(
        &mut self,
        d: &mut Debate,
        of_side: Side,
        text: Option<&str>,
        author: Option<&str>,
        side: Option<&str>,
    ) -> Outcome {
        if self.spec() && side.and_then(Side::parse) != Some(of_side.other()) {
            return Err(wrong_side(of_side.other(), "a restatement of this case"));
        }
        let ts = self.env.now();
        *d.steelmans.get_mut(of_side) = Steelman {
            text: text.map(str::to_string),
            author: author.map(str::to_string),
            side: side.map(|s| Some(s.to_string())),
            status: "submitted".into(),
            note: Some(String::new()),
            ts: Some(Num(ts as f64)),
            certified_by: None,
            arbiter_reason: None,
        };
        self.add_log(
            d,
            author,
            side,
            "steelman-submitted",
            format!("restatement of side-{of_side} case"),
        );
        Ok(())
    }

    /// The restated side accepts the restatement. Spec mode refuses a certification
    /// the restated side did not give, or of nothing submitted (SPEC 3.5).
    pub fn certify_steelman(
        &mut self,
        d: &mut Debate,
        of_side: Side,
        actor: Option<&str>,
        side: Option<&str>,
    ) -> Outcome {
        if self.spec() {
            if side.and_then(Side::parse) != Some(of_side) {
                return Err(wrong_side(of_side, "certification"));
            }
            if d.steelmans.get(of_side).status != "submitted" {
                return Err(not_submitted());
            }
        }
        d.steelmans.get_mut(of_side).status = "certified".into();
        self.add_log(
            d,
            actor,
            side,
            "steelman-certified",
            format!("side-{of_side} case"),
        );
        Ok(())
    }

    /// The restated side returns the restatement with its objection.
    pub fn return_steelman(
        &mut self,
        d: &mut Debate,
        of_side: Side,
        note: Option<&str>,
        actor: Option<&str>,
        side: Option<&str>,
    ) -> Outcome {
        if self.spec() {
            if side.and_then(Side::parse) != Some(of_side) {
                return Err(wrong_side(of_side, "returning a restatement"));
            }
            if d.steelmans.get(of_side).status != "submitted" {
                return Err(not_submitted());
            }
        }
        let s = d.steelmans.get_mut(of_side);
        s.status = "returned".into();
        s.note = note.map(str::to_string);
        let detail = utf16_prefix(note.unwrap_or("undefined"), 80).to_string();
        self.add_log(d, actor, side, "steelman-returned", detail);
        Ok(())
    }

    /// SPEC 3.5: an arbiter certifies over a standing objection. Spec mode requires a
    /// written reason and at least one revision cycle (a return by the restated side).
    pub fn arbiter_certify_steelman(
        &mut self,
        d: &mut Debate,
        of_side: Side,
        reason: Option<&str>,
        actor: Option<&str>,
    ) -> Outcome {
        let status = d.steelmans.get(of_side).status.clone();
        if status == "none" {
            return Err(not_submitted());
        }
        if status == "certified" {
            return Ok(());
        }
        if self.spec() {
            require_rationale(reason, "an arbiter certification")?;
            let returned_once = status == "returned"
                || d.log.iter().any(|e| {
                    e.action == "steelman-returned" && e.side.as_deref() == Some(of_side.as_str())
                });
            if !returned_once {
                return Err(Refusal::new(
                    Code::SteelmanNoRevision,
                    "an arbiter certifies over an objection only after one revision cycle; the restated side must return the restatement first (SPEC 3.5)",
                ));
            }
        }
        let s = d.steelmans.get_mut(of_side);
        s.status = "certified".into();
        s.certified_by = Some("arbiter".into());
        s.arbiter_reason = Some(reason.unwrap_or("").to_string());
        let detail = format!(
            "side-{of_side} case: {}",
            utf16_prefix(reason.unwrap_or(""), 80)
        );
        self.add_log(d, actor, None, "steelman-arbiter-certified", detail);
        Ok(())
    }
}
