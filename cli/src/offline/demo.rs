//! `panel demo`: the paper's worked verdict (section 4) replayed through the engine
//! alone, printing the ledger and both verdicts.

use std::process::ExitCode;

use crucible::document::{Debate, Verdict};
use crucible::scenario;
use crucible::verdict::js_to_fixed;
use crucible::{FixedEnv, Protocol};

#[derive(clap::Args)]
pub struct Args {
    /// Also print the final document as JSON.
    #[arg(long)]
    json: bool,
}

fn print_verdict(d: &Debate, v: &Verdict, heading: &str) {
    println!("\n{heading}");
    println!(
        "  {:<4} {:<28} {:>4} {:>5} {:>4} {:>5} {:>7}",
        "side", "thread", "E", "R", "S", "Q", "merit"
    );
    for r in &v.ledger {
        println!(
            "  {:<4} {:<28} {:>4} {:>5} {:>4} {:>5} {:>7}{}",
            r.side.as_deref().unwrap_or("?"),
            r.thread_title.as_deref().unwrap_or(&r.thread_id),
            r.e.0,
            r.r.0,
            js_to_fixed(r.s.0, 1),
            r.q.0,
            js_to_fixed(r.merit.0, 2),
            if r.scoring == Some(false) {
                "  (not scoring)"
            } else {
                ""
            }
        );
    }
    println!(
        "  totals: A {}  B {}   margin {}   band {}",
        js_to_fixed(v.totals.a.0, 2),
        js_to_fixed(v.totals.b.0, 2),
        js_to_fixed(v.margin.0, 3),
        v.band.key
    );
    match v.winner {
        Some(w) => println!(
            "  verdict v{}: Side {w} ({}) wins, {}{}",
            v.n,
            d.positions.get(w),
            v.band.key,
            if v.by_burden { " (by burden)" } else { "" }
        ),
        None => println!("  verdict v{}: unresolved, no winner", v.n),
    }
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let mut p = Protocol::new(FixedEnv::new(1_767_225_600_000, 1000));
    // The same scenario `panel up` plays through the distributed panel, here answered by
    // a panel that always rules as hinted, so only the engine is exercised.
    let scenario = scenario::worked_example("http://127.0.0.1");
    let debate = scenario::run_with_hinted_panel(&mut p, &scenario)
        .map_err(|e| anyhow::anyhow!("worked example refused: {e}"))?;
    println!("Crucible Protocol worked verdict (paper section 4), engine only");
    println!("resolution: {}", debate.resolution);
    let [first, second] = debate.verdicts.as_slice() else {
        anyhow::bail!(
            "the worked example should issue two verdicts, it issued {}",
            debate.verdicts.len()
        );
    };
    print_verdict(
        &debate,
        first,
        "Verdict 1 (B1's T1 source unverified: scores at T3)",
    );
    print_verdict(
        &debate,
        second,
        "Verdict 2 (an arbiter retrieved B1's source and confirmed T1)",
    );
    println!(
        "\nBoth verdicts stay on the record; the debate is {}.",
        debate.phase
    );
    if args.json {
        println!("{}", serde_json::to_string_pretty(&debate.to_json())?);
    }
    Ok(ExitCode::SUCCESS)
}
