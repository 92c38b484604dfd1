//! `panel replay`: run a replay script through the engine and print every result and
//! the final document, for comparison with another implementation.

use std::path::PathBuf;
use std::process::ExitCode;

use serde_json::Value;

use crate::jsonl;

#[derive(clap::Args)]
pub struct Args {
    /// One script per stdin line, one `{results, document}` per stdout line.
    #[arg(long)]
    jsonl: bool,
    /// A replay script (JSON); stdin when absent.
    file: Option<PathBuf>,
}

fn answer(script: Value) -> Result<Value, crucible::replay::ScriptError> {
    crucible::replay::run(&script).map(|r| r.to_json())
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    if args.jsonl {
        return jsonl::run_lines(answer);
    }
    let text = jsonl::read_input(args.file.as_deref())?;
    jsonl::answer_once(&text, answer)
}
