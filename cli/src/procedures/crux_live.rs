//! `panel crux eval --live-url URL --live-model M`: the eval's live mode (docs/CRUX.md,
//! "Live mode"). Every case that passes the deterministic layer goes to a real model as
//! the mediator, through the node's LLM judge (the same client arbiters use), question by
//! question as the run asks them; the model's answer settles each question. It measures
//! what the checks leave to judgment: whether the model's reports pass the gate, which
//! crux it names, and whether it calls a verdict warranted. Never run in CI: it needs an
//! endpoint and spends tokens.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Result, anyhow};
use panel_node::judge::Judge;
use panel_node::judge::llm::{LlmJudge, LlmSettings};
use panel_procedures::crux::{CruxRun, eval};
use panel_procedures::{
    AnswerShape, PanelOutcome, PanelQuestion, PanelRuling, Prior, Procedure, Settlement,
};
use panel_proto::pb;
use serde::Serialize;

use crate::client::cluster::{print_json, runtime};

/// Questions one live case may ask before it is cut off.
const MAX_QUESTIONS: usize = 12;

#[derive(Serialize)]
struct LiveCase {
    name: String,
    expectation: String,
    questions: usize,
    reports_failing_gate: usize,
    summary: String,
    error: Option<String>,
}

pub fn run(url: &str, model: &str, key_env: Option<&str>, json: bool) -> Result<ExitCode> {
    let api_key = match key_env {
        Some(var) => Some(std::env::var(var).map_err(|_| {
            anyhow!("environment variable {var} (the endpoint's API key) is not set")
        })?),
        None => None,
    };
    let judge = LlmJudge::new(LlmSettings {
        base_url: url.to_owned(),
        model: model.to_owned(),
        api_key,
        timeout: Duration::from_secs(120),
        max_retries: 1,
        backoff: Duration::from_secs(2),
        roots: panel_node::http::TrustRoots::System,
    })?;
    let rt = runtime()?;
    let mut out = Vec::new();
    for (case, mut run) in eval::live_runs() {
        let error = rt.block_on(mediate(&judge, model, &mut run)).err();
        out.push(LiveCase {
            name: case.name,
            expectation: format!("{:?}", case.expectation),
            questions: run.mediation.reports.len(),
            reports_failing_gate: run
                .mediation
                .reports
                .iter()
                .filter(|r| !r.gate.is_empty())
                .count(),
            summary: run.summary(),
            error: error.map(|e| format!("{e:#}")),
        });
    }
    if json {
        print_json(&serde_json::to_value(&out)?)?;
    } else {
        println!("| case | expected | gate failures | outcome |\n|---|---|---|---|");
        for c in &out {
            println!(
                "| {} | {} | {} | {} |",
                c.name,
                c.expectation,
                c.reports_failing_gate,
                c.error.as_deref().unwrap_or(&c.summary)
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Asks the model every question the run puts, until the run ends.
async fn mediate(judge: &LlmJudge, model: &str, run: &mut CruxRun) -> Result<()> {
    for n in 0..MAX_QUESTIONS {
        let Some(q) = run.pending().into_iter().next() else {
            return Ok(());
        };
        let answer = judge.decide(&motion(&q, n)).await?;
        let yes = answer.decision == pb::Decision::Accept;
        run.settle(&Settlement {
            key: q.key.clone(),
            motion_id: format!("live-{n}"),
            outcome: if yes {
                PanelOutcome::Yes
            } else {
                PanelOutcome::No
            },
            rulings: vec![PanelRuling {
                arbiter_id: "live-model".into(),
                prior: Prior::None,
                organisation: "live".into(),
                model_family: Some(model.to_owned()),
                yes: Some(yes),
                probability_milli: (answer.probability.clamp(0.0, 1.0) * 1000.0) as u16,
                rationale: answer.rationale,
                presented: q.items.iter().map(|i| i.label.clone()).collect(),
            }],
        })?;
    }
    Err(anyhow!(
        "the run still asked after {MAX_QUESTIONS} questions"
    ))
}

/// A procedure motion as a node would receive it (unsigned: it never leaves this process).
fn motion(q: &PanelQuestion, n: usize) -> pb::Motion {
    pb::Motion {
        motion_id: format!("live-{n}"),
        debate_id: "live-eval".into(),
        kind: pb::MotionKind::Procedure as i32,
        state_hash: vec![0; 32],
        projection: Some(pb::ContentProjection {
            question: q.prompt.clone(),
            items: q
                .items
                .iter()
                .map(|i| pb::ProjectionItem {
                    label: i.label.clone(),
                    text: i.text.clone(),
                    ..Default::default()
                })
                .collect(),
            procedure: Some(pb::ProcedureQuestion {
                run_id: "live-eval".into(),
                key: q.key.clone(),
                answer_shape: match q.shape {
                    AnswerShape::YesNo => 0,
                    AnswerShape::CruxReport => 1,
                },
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}
