//! Arbiters: declared stance (and the fitted one where the prior check moved it),
//! organisation, lineage, admission and exam scores, the post-admission track record,
//! whether the arbiter is flagged or revoked, and reliability diagrams drawn by
//! calibration's own SVG code (`calibration::reliability_svg`): the exam's, and the track
//! record's once it has resolved items.

use std::fmt::Write as _;

use calibration::probe_text::ProbeCells;
use calibration::recalibration::TrackRecord;
use calibration::reliability_svg::reliability_svg;
use calibration::scoring_rules::{REPORT_BINS, reliability_table};
use panel_machine::Arbiter;
use panel_machine::Query;
use panel_machine::features::admission::ExamRecord;
use panel_machine::read::query::ArbitersReply;

use crate::chrome::Chrome;
use crate::error::DashError;
use crate::html::{anchor, arbiter_href, escape, head, page as frame, row, time_ms, time_s};
use crate::source::Source;
use crate::views::num;

pub const PATH: &str = "/arbiters";

pub async fn page(src: &Source, chrome: &Chrome) -> Result<String, DashError> {
    let r: ArbitersReply = src.read(&Query::Arbiters).await?;
    Ok(render(&r.arbiters, chrome))
}

/// The arbiter's standing in a few words, and whether that is bad news.
fn standing(a: &Arbiter) -> (String, &'static str) {
    if a.revoked.is_some() {
        return ("revoked: never drawn, its rulings refused".into(), "bad");
    }
    if a.recalibration.is_flagged() {
        return ("flagged: not drawn until a re-exam".into(), "bad");
    }
    if let Some(f) = a.fitted_stance
        && f != a.registration.stance
    {
        return (
            format!("seated as stance {f}: its rulings follow the other camp"),
            "warn",
        );
    }
    if a.admitted {
        ("admitted".into(), "ok")
    } else {
        ("not admitted".into(), "warn")
    }
}

pub fn render(arbiters: &[Arbiter], chrome: &Chrome) -> String {
    let mut body = String::new();
    if arbiters.is_empty() {
        body.push_str("<p class=\"muted\">No arbiters registered yet.</p>");
    }
    body.push_str("<table class=\"summary\">");
    body.push_str(&head(&[
        "arbiter",
        "stance",
        "organisation",
        "lineage",
        "exam score",
        "track record",
        "standing",
    ]));
    for a in arbiters {
        let r = &a.registration;
        let (standing, class) = standing(a);
        let _ = write!(
            body,
            "<tr><td><a href=\"{}\">{}</a></td><td>{}</td><td>{}</td><td>{}</td><td>{:.3}</td><td>{} resolved</td><td class=\"{class}\">{}</td></tr>",
            escape(&arbiter_href(&r.arbiter_id)),
            escape(&r.arbiter_id),
            escape(&r.stance.to_string()),
            escape(&r.organisation),
            escape(&r.model_family),
            f64::from(a.score_milli) / 1000.0,
            a.recalibration.items.len(),
            escape(&standing)
        );
    }
    body.push_str("</table>");
    for a in arbiters {
        body.push_str(&card(a));
    }
    frame(chrome, "Arbiters", PATH, &body)
}

/// One arbiter's registration, standing, exam and track record (this list's card, and
/// the top of the arbiter's own page).
pub(crate) fn card(a: &Arbiter) -> String {
    let r = &a.registration;
    let mut s = String::new();
    let (standing, class) = standing(a);
    let _ = write!(
        s,
        "<section class=\"card arbiter\" id=\"{}\"><h3><a href=\"{}\">{}</a> <span class=\"{class}\">{}</span></h3>",
        anchor(&r.arbiter_id),
        escape(&arbiter_href(&r.arbiter_id)),
        escape(&r.arbiter_id),
        escape(&standing)
    );
    s.push_str("<table>");
    s.push_str(&row(&["declared stance", &r.stance.to_string()]));
    s.push_str(&row(&["seated stance", &a.seated_stance().to_string()]));
    s.push_str(&row(&["organisation", &r.organisation]));
    s.push_str(&row(&["lineage (model family)", &r.model_family]));
    s.push_str(&row(&[
        "node",
        if r.endpoint.is_empty() {
            "none"
        } else {
            &r.endpoint
        },
    ]));
    s.push_str(&row(&["registered", &time_ms(a.registered_at_ms)]));
    s.push_str(&row(&[
        "key",
        &format!(
            "{} ({} earlier key(s) rotated away)",
            {
                let key = r.public_key.to_hex();
                key.get(..16).unwrap_or(&key).to_owned()
            },
            a.key_history.len()
        ),
    ]));
    s.push_str(&row(&[
        "prior check",
        match (&a.prior_check, a.fitted_stance) {
            (None, _) => "not run yet",
            (Some(_), Some(f)) if f != r.stance => "rules with the other camp (stance refitted)",
            (Some(_), _) => "consistent with the declared stance",
        },
    ]));
    s.push_str("</table>");
    s.push_str(&exam_part(a));
    s.push_str(&track_part(&r.arbiter_id, &a.recalibration));
    s.push_str("</section>");
    s
}

fn exam_part(a: &Arbiter) -> String {
    let id = &a.registration.arbiter_id;
    let mut s = String::from("<h4>Admission exam</h4>");
    let rec = match a.exam_record() {
        None => return s + "<p class=\"muted\">No exam taken yet.</p>",
        Some(Err(e)) => {
            return s + &format!(
                "<p class=\"bad\">The exam on the record does not decode: {}</p>",
                escape(&e.to_string())
            );
        }
        Some(Ok(rec)) => rec,
    };
    let ExamRecord {
        scores, decision, ..
    } = &rec;
    s.push_str("<div class=\"grid\"><div>");
    let _ = write!(
        s,
        "<p class=\"{}\">{}</p>",
        if decision.admitted { "ok" } else { "bad" },
        if decision.admitted {
            "admitted: every bar passed".to_string()
        } else {
            format!(
                "refused{}",
                decision
                    .reexam_date
                    .as_ref()
                    .map(|d| format!("; re-exam from {d}"))
                    .unwrap_or_default()
            )
        }
    );
    s.push_str("<table>");
    s.push_str(&row(&["exam", &scores.exam]));
    s.push_str(&row(&["answered", &scores.answered.to_string()]));
    s.push_str(&row(&[
        "decided",
        &u64::try_from(decision.decided_at).map_or_else(|_| "?".into(), time_s),
    ]));
    if let Some(b) = &scores.binary {
        s.push_str(&row(&["binary items", &b.items.to_string()]));
        s.push_str(&row(&[
            "Brier (base rate)",
            &format!("{:.3} ({:.3})", b.brier, b.base_rate_brier),
        ]));
        s.push_str(&row(&["Brier skill", &num(b.brier_skill)]));
        s.push_str(&row(&["log score", &format!("{:.3}", b.log_score)]));
        s.push_str(&row(&["ECE", &format!("{:.3}", b.ece)]));
    }
    if let Some(q) = &scores.quantiles {
        s.push_str(&row(&[
            "Cooke (seeds)",
            &format!(
                "calibration {:.3}, information {:.3} ({} seeds)",
                q.calibration, q.information, q.seeds
            ),
        ]));
    }
    s.push_str("</table>");
    for f in &decision.failed {
        let _ = write!(
            s,
            "<p class=\"bad\">{}: {}</p>",
            escape(&f.bar),
            escape(&f.message)
        );
    }
    s.push_str(&probes_part(&rec));
    s.push_str(&topics_part(&rec));
    s.push_str("</div>");
    if let Some(b) = &scores.binary {
        let subtitle = format!(
            "{} binary items, Brier {:.3} (base rate {:.3}), ECE {:.3}",
            b.items, b.brier, b.base_rate_brier, b.ece
        );
        let _ = write!(
            s,
            "<div class=\"diagram\" style=\"width:380px\">{}</div>",
            reliability_svg(
                &format!("Exam reliability: {id}"),
                &subtitle,
                &b.reliability
            )
        );
    }
    s.push_str("</div>");
    s
}

/// The bias probes of a sealed sitting, each measure with its 95% interval, in the words
/// `panel arbiter show` and `panel calibrate` use (`calibration::probe_text`).
fn probes_part(rec: &ExamRecord) -> String {
    let Some(p) = &rec.probes else {
        return String::new();
    };
    let c = ProbeCells::of(p);
    let mut s = String::from(
        "<h4>Bias probes</h4><p class=\"muted\">Each variant against its base question; \
         95% intervals: Wilson for rates, Wald for kappa.</p><table>",
    );
    s.push_str(&row(&["order flips", &c.order_flips]));
    s.push_str(&row(&["order flip rate", &c.order_flip_rate]));
    s.push_str(&row(&["padding |shift|", &c.padding]));
    s.push_str(&row(&["consequence shift", &c.consequence]));
    s.push_str(&row(&["kappa against gold (questions)", &c.kappa]));
    s.push_str(&row(&["objective items correct", &c.objective]));
    s.push_str("</table>");
    s
}

/// Calibration per topic (the exam's tags) and the items held back for the track record,
/// which exams from rule set 14 on carry.
fn topics_part(rec: &ExamRecord) -> String {
    let mut s = String::new();
    if !rec.topics.is_empty() {
        s.push_str(
            "<h4>Calibration per topic</h4><p class=\"muted\">Binary items asked, by the \
             exam's tags; Brier 0.25 is always answering 0.5.</p><table>",
        );
        s.push_str(&head(&[
            "topic",
            "items",
            "gold yes",
            "mean forecast",
            "Brier",
        ]));
        for t in &rec.topics {
            s.push_str(&row(&[
                &t.tag,
                &t.items.to_string(),
                &t.yes.to_string(),
                &format!("{:.3}", t.mean_forecast),
                &format!("{:.3}", t.brier),
            ]));
        }
        s.push_str("</table>");
    }
    if !rec.held_back.is_empty() {
        let _ = write!(
            s,
            "<p>{} binary items were held back from the admission score and scored on the \
             track record against the revealed gold.</p>",
            rec.held_back.len()
        );
    }
    s
}

fn track_part(id: &str, t: &TrackRecord) -> String {
    let mut s = String::from("<h4>Track record</h4><div class=\"grid\"><div>");
    let window = t.window();
    let _ = write!(
        s,
        "<p>{} resolved item(s) since admission, {} in the current window.</p>",
        t.items.len(),
        window.len()
    );
    if let Some(a) = &t.assessment {
        s.push_str("<table>");
        s.push_str(&row(&[
            "assessed",
            if a.assessed {
                "yes"
            } else {
                "not yet (too few resolved items)"
            },
        ]));
        if let Some(sc) = &a.scores {
            s.push_str(&row(&[
                "Brier (base rate)",
                &format!("{:.3} ({:.3})", sc.brier, sc.base_rate_brier),
            ]));
            s.push_str(&row(&["log score", &format!("{:.3}", sc.log_score)]));
            s.push_str(&row(&[
                "resolved yes",
                &format!("{} of {}", sc.yes, sc.count),
            ]));
        }
        s.push_str("</table>");
    }
    match &t.flag {
        Some(f) => {
            let _ = write!(
                s,
                "<p class=\"bad\">Flagged after motion <code>{}</code> resolved it:</p><ul>",
                escape(&f.resolved_by.motion_id)
            );
            for bar in &f.assessment.failed {
                let _ = write!(s, "<li>{}</li>", escape(&bar.message));
            }
            s.push_str("</ul>");
        }
        None => s.push_str("<p class=\"ok\">Not flagged.</p>"),
    }
    s.push_str("</div>");
    if !t.items.is_empty() {
        let forecasts: Vec<f64> = t.items.iter().map(|i| i.probability).collect();
        let outcomes: Vec<bool> = t.items.iter().map(|i| i.outcome).collect();
        match reliability_table(&forecasts, &outcomes, REPORT_BINS) {
            Ok(bins) => {
                let _ = write!(
                    s,
                    "<div class=\"diagram\" style=\"width:380px\">{}</div>",
                    reliability_svg(
                        &format!("Track record reliability: {id}"),
                        &format!("{} resolved items since admission", t.items.len()),
                        &bins
                    )
                );
            }
            Err(e) => {
                let _ = write!(
                    s,
                    "<p class=\"bad\">The track record cannot be binned: {}</p>",
                    escape(&e.to_string())
                );
            }
        }
    }
    s.push_str("</div>");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arbiter(id: &str) -> Arbiter {
        serde_json::from_value(serde_json::json!({
            "registration": {
                "arbiter_id": id, "public_key": hex::encode([3u8; 32]),
                "organisation": "north <wind>", "model_family": "fam", "stance": "A",
                "endpoint": "link"
            },
            "admitted": false, "score_milli": 812, "registered_at_ms": 1_700_000_000_000u64
        }))
        .expect("arbiter")
    }

    #[test]
    fn hostile_names_are_escaped_and_missing_exams_are_said() {
        let html = render(&[arbiter("<script>arb</script>")], &Chrome::default());
        assert!(!html.contains("<script>"));
        assert!(html.contains("&lt;script&gt;arb&lt;/script&gt;"));
        assert!(html.contains("north &lt;wind&gt;"));
        assert!(html.contains("No exam taken yet"));
        assert!(html.contains("not admitted"));
        assert!(html.contains("0.812"));
    }

    #[test]
    fn the_exam_and_the_track_record_draw_calibrations_diagram() {
        let mut a = arbiter("arb-1");
        let exam = panel_machine::features::admission::default_exam().expect("exam");
        let answers: Vec<calibration::exam_scoring::Answer> = exam
            .items
            .iter()
            .enumerate()
            .filter_map(|(i, it)| match &it.gold {
                calibration::exam::Gold::Binary(y) => Some(calibration::exam_scoring::Answer {
                    arbiter: "arb-1".into(),
                    item: it.id.clone(),
                    value: calibration::exam_scoring::AnswerValue::Probability(if *y {
                        0.9
                    } else {
                        0.1
                    }),
                    line: i + 1,
                }),
                _ => None,
            })
            .collect();
        let (scores, decision) =
            panel_machine::features::admission::admit(exam, "arb-1", &answers, 1_700_000_000)
                .expect("admit");
        a.exam = Some(serde_json::json!({ "scores": scores, "decision": decision }));
        let html = render(&[a], &Chrome::default());
        assert!(html.contains("Exam reliability: arb-1"));
        assert!(
            html.contains("Observed frequency"),
            "calibration's diagram, not a copy"
        );
        assert!(html.contains("quantile_seeds"), "the failed bar is named");
    }

    #[test]
    fn a_flagged_track_record_is_shown_with_its_diagram() {
        let mut a = arbiter("arb-2");
        let item = |m: &str, p: f64, o: bool| {
            serde_json::json!({
                "motion_id": m, "probability": p, "outcome": o,
                "resolved_by": {"motion_id": format!("{m}-later"), "kind": "source-verified"}
            })
        };
        a.recalibration = serde_json::from_value(serde_json::json!({
            "items": [item("m1", 0.9, false), item("m2", 0.8, false), item("m3", 0.2, true)],
            "window_start": 0,
            "flag": {
                "resolved_by": {"motion_id": "m3-later", "kind": "source-verified"},
                "assessment": {
                    "count": 3, "scores": null, "assessed": true, "brier_bar_assessed": true,
                    "failed": [{"bar": "log_score", "observed": 1.9, "required": "< 0.69",
                                "message": "log score 1.9 is <worse> than 0.5 everywhere"}],
                    "flagged": true
                }
            }
        }))
        .expect("track record");
        let html = render(&[a], &Chrome::default());
        assert!(html.contains("flagged: not drawn until a re-exam"));
        assert!(html.contains("Flagged after motion <code>m3-later</code>"));
        assert!(html.contains("is &lt;worse&gt; than"));
        assert!(html.contains("Track record reliability: arb-2"));
        assert!(html.contains("3 resolved items since admission"));
    }
}
