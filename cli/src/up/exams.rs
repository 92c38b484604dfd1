//! `panel up` waits for the calibration exam the leader administers through each node's
//! judge, prints every arbiter's scores and stops unless all are admitted
//! (docs/CALIBRATION.md sections 6, 7 and "Sealed pools").

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use panel_machine::Arbiter as ArbiterView;
use panel_machine::Query;
use panel_machine::read::query::ArbitersReply;

use crate::output::say;
use crate::rulings::Names;
use crate::up::{ARBITERS, Panel};

/// How long every arbiter's exam may take: eight exams share the machine's cores with
/// the replicas, and a busy machine (a CI runner) is several times slower than a quiet one.
const EXAM_PATIENCE: Duration = Duration::from_secs(300);

/// Waits until every arbiter's exam is scored and all are admitted; returns the names
/// rulings are printed with.
pub async fn wait_for_admission(panel: &Panel, state: &Path) -> Result<Names> {
    let pool =
        panel_machine::features::exam_sitting::embedded_pool().map_or(0, |p| p.exam.items.len());
    say!(
        "\nCalibration exam in a sealed sitting: each arbiter answers its own draw of {} of the \
         {pool} items of the shipped pool (public, so this demo examines nobody in secret); \
         the answers are scored once the key is revealed ...",
        panel_machine::features::exam_sitting::DRAW.items()
            + panel_machine::features::exam_sitting::HELD_BACK_EXTRA
    );
    let arbiters = wait_scored(panel, state, ARBITERS.len(), EXAM_PATIENCE).await?;
    print_scores(&arbiters);
    if arbiters.iter().any(|a| !a.admitted) {
        bail!(
            "not every arbiter was admitted; the demo needs all {}",
            ARBITERS.len()
        );
    }
    Ok(crate::rulings::names_from_arbiters(&arbiters))
}

/// Waits until `count` arbiters' exams are scored, with a progress bar; returns them.
pub async fn wait_scored(
    panel: &Panel,
    state: &Path,
    count: usize,
    patience: Duration,
) -> Result<Vec<ArbiterView>> {
    let started = Instant::now();
    let mut progress = crate::progress::Progress::new(count as u64, "exams scored");
    let mut done = 0;
    let arbiters = loop {
        // A poll: a read refused on the way (a leader that cannot confirm its quorum for a
        // moment on a loaded machine) is asked again until the patience runs out.
        let read = panel
            .coordinators
            .read_as::<ArbitersReply>(&Query::Arbiters)
            .await;
        let last_error = match read {
            Ok(v) => {
                done = v.arbiters.iter().filter(|a| a.exam.is_some()).count();
                progress.set(done as u64);
                if done == count {
                    break v.arbiters;
                }
                None
            }
            Err(e) => Some(e),
        };
        if started.elapsed() > patience {
            let last = last_error.map_or_else(String::new, |e| format!("; the last read: {e:#}"));
            bail!(
                "only {done} of {count} arbiters finished the exam in {} s{last}; see {}",
                patience.as_secs(),
                state.join("logs").display()
            );
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    progress.finish();
    say!("  all exams scored in {} s", started.elapsed().as_secs());
    Ok(arbiters)
}

/// Every arbiter's scores, one line each, with why it was refused.
pub fn print_scores(arbiters: &[ArbiterView]) {
    say!(
        "  {:<12} {:<6} {:<10} {:>7} {:>8} {:>9} {:>6}  admitted",
        "arbiter",
        "stance",
        "org",
        "brier",
        "base",
        "log",
        "C"
    );
    for a in arbiters {
        let exam = a.exam_record().and_then(Result::ok);
        let s = exam.as_ref().map(|e| &e.scores);
        let b = s.and_then(|s| s.binary.as_ref());
        let f = |v: Option<f64>| v.map_or("-".to_string(), |x| format!("{x:.3}"));
        say!(
            "  {:<12} {:<6} {:<10} {:>7} {:>8} {:>9} {:>6}  {}",
            a.registration.arbiter_id,
            crate::rulings::stance_name(a.registration.stance),
            a.registration.organisation,
            f(b.map(|b| b.brier)),
            f(b.map(|b| b.base_rate_brier)),
            f(b.map(|b| b.log_score)),
            f(s.and_then(|s| s.quantiles.as_ref()).map(|q| q.calibration)),
            if a.admitted {
                "yes".to_string()
            } else {
                format!(
                    "no: {}",
                    exam.as_ref().map_or_else(
                        || "not scored".to_string(),
                        |e| e
                            .decision
                            .failed
                            .iter()
                            .map(|f| f.message.as_str())
                            .collect::<Vec<_>>()
                            .join("; ")
                    )
                )
            }
        );
    }
}

/// The reliability diagram, as a table, of every arbiter the exam refused: what its
/// forecasts said against what happened, bin by bin (a refusal shows why).
pub fn print_refused_reliability(arbiters: &[ArbiterView]) {
    for a in arbiters.iter().filter(|a| !a.admitted) {
        let exam = a.exam_record().and_then(Result::ok);
        let Some(bins) = exam
            .as_ref()
            .and_then(|e| e.scores.binary.as_ref())
            .map(|b| b.reliability.clone())
        else {
            say!(
                "
{}: no binary forecasts scored",
                a.registration.arbiter_id
            );
            continue;
        };
        match calibration::wilson::reliability_intervals(&bins) {
            Ok(rows) => {
                say!(
                    "
reliability of {}'s exam forecasts (n per bin, yes outcomes, 95% Wilson interval of the observed frequency):",
                    a.registration.arbiter_id
                );
                for line in crate::offline::calibrate::reliability_lines(&rows) {
                    say!("{line}");
                }
            }
            Err(e) => say!(
                "
{}: reliability table unreadable: {e}",
                a.registration.arbiter_id
            ),
        }
    }
}
