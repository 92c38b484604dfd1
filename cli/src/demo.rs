//! `panel demo`: the paper's worked verdict (section 4) replayed through the engine
//! alone, printing the ledger and both verdicts.

use std::process::ExitCode;

use crucible::document::{Debate, Verdict};
use crucible::example;
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
    let mut ex =
        example::build(&mut p).map_err(|e| anyhow::anyhow!("worked example refused: {e}"))?;
    println!("Crucible Protocol worked verdict (paper section 4), engine only");
    println!("resolution: {}", ex.debate.resolution);
    let first = ex.debate.verdicts[0].clone();
    print_verdict(
        &ex.debate,
        &first,
        "Verdict 1 (B1's T1 source unverified: scores at T3)",
    );
    example::verify_b1_and_revise(&mut p, &mut ex)
        .map_err(|e| anyhow::anyhow!("revision refused: {e}"))?;
    let second = ex.debate.verdicts[1].clone();
    print_verdict(
        &ex.debate,
        &second,
        "Verdict 2 (an arbiter retrieved B1's source and confirmed T1)",
    );
    println!(
        "\nBoth verdicts stay on the record; the debate is {}.",
        ex.debate.phase
    );
    if args.json {
        println!("{}", serde_json::to_string_pretty(&ex.debate.to_json())?);
    }
    Ok(ExitCode::SUCCESS)
}
