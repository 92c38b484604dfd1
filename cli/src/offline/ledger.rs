//! `panel ledger`: recompute a document's ledger and verdict offline.

use std::path::PathBuf;
use std::process::ExitCode;

use crucible::document::BySide;
use crucible::migrate::load_value;
use crucible::report::{ledger_report, summary_report};
use crucible::scoring::verdict_band;
use serde_json::{Value, json};

use crate::jsonl;

#[derive(clap::Args)]
pub struct Args {
    /// One JSON request per stdin line, one response per stdout line.
    #[arg(long)]
    jsonl: bool,
    /// A debate document (JSON); stdin when absent.
    file: Option<PathBuf>,
}

/// Why `panel ledger` refuses a request; each names the JSON path and the shape wanted.
#[derive(Debug, thiserror::Error)]
enum LedgerRequestError {
    #[error("{0}: expected a number")]
    NotANumber(&'static str),
    #[error("$.summarize.totals: missing; give {{\"A\": number, \"B\": number}}")]
    NoTotals,
    #[error("$.summarize.burden: expected \"A\", \"B\" or \"shared\"")]
    Burden,
    #[error(transparent)]
    Document(#[from] crucible::migrate::LoadError),
}

fn number(v: &Value, path: &'static str) -> Result<f64, LedgerRequestError> {
    v.as_f64().ok_or(LedgerRequestError::NotANumber(path))
}

/// Answers one request: a document, `{"band": m}` or `{"summarize": {totals, burden}}`.
fn answer(req: Value) -> Result<Value, LedgerRequestError> {
    if let Some(obj) = req.as_object() {
        if obj.len() == 1
            && let Some(m) = obj.get("band")
        {
            return Ok(json!({ "band": verdict_band(number(m, "$.band")?) }));
        }
        if obj.len() == 1
            && let Some(s) = obj.get("summarize")
        {
            let totals = s.get("totals").ok_or(LedgerRequestError::NoTotals)?;
            let a = number(
                totals.get("A").unwrap_or(&Value::Null),
                "$.summarize.totals.A",
            )?;
            let b = number(
                totals.get("B").unwrap_or(&Value::Null),
                "$.summarize.totals.B",
            )?;
            let burden = match s.get("burden") {
                None | Some(Value::Null) => "shared",
                Some(Value::String(b)) => b.as_str(),
                Some(_) => return Err(LedgerRequestError::Burden),
            };
            return Ok(summary_report(&BySide { a, b }, burden));
        }
    }
    Ok(ledger_report(&load_value(req)?))
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    if args.jsonl {
        return jsonl::run_lines(answer);
    }
    let text = jsonl::read_input(args.file.as_deref())?;
    jsonl::answer_once(&text, answer)
}
