//! One decision's cost inside the state machine, on the path a real decision takes: the
//! round logged (`LogCommitments`), five reveals and the close applied as a replica
//! applies them (docs/coordinator/state-machine.md "The commit-reveal round"). Prints the
//! apply time per decision (one thread, so CPU) and the bytes a decision leaves: its record
//! entries' leaf bytes (what every replica stores and hashes) and the decided motion's
//! JSON (what a replica keeps, then retires to its archive).
//!
//! `cargo bench -p panel-machine --features testkit --bench decision -- [DECISIONS]`
//! (BENCHMARKS.md, "The machine's share of a decision"). Signing the rulings is the
//! nodes' work and is done before the clock starts.

use std::time::{Duration, Instant};

use panel_machine::testkit::fixtures::cmd;
use panel_machine::testkit::{Driver, EIGHTEEN, Vote};
use panel_machine::{Command, InternalCommand, ItemReply, TestCommand};
use serde_json::json;

const SEATS: usize = 5;

fn vote(yes: bool) -> Vote {
    Vote {
        yes,
        p: if yes { 0.8 } else { 0.2 },
        relevance: None,
        receipt: None,
    }
}

/// Bytes by kind of record entry, summed over the run.
#[derive(Default)]
struct Bytes {
    log: usize,
    reveals: usize,
    close: usize,
    motion: usize,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let decisions: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(2_000);
    let mut d = Driver::new(&EIGHTEEN);
    d.rules = Some(panel_machine::rules::CURRENT);
    let mut applying = Duration::ZERO;
    let mut bytes = Bytes::default();
    let mut accepted = 0;
    for i in 0..decisions {
        let id = format!("m{i}");
        d.ok(TestCommand::OpenMotion(cmd(json!({
            "motion_id": id, "debate_id": "raw", "kind": "Merge",
            "state_hash": "ab".repeat(32), "seats": SEATS, "min_per_stance": 2,
        }))));
        let from = d.state.record.len();
        let round = d.prepare_round(&id, |_, _| vote(true))?;
        let started = Instant::now();
        d.try_ok(round.log)?;
        let replies = d.write_batch(round.reveals_and_close);
        applying += started.elapsed();
        if let Some(ItemReply::Applied(close)) = replies.last()
            && close["verdict"]["Accepted"].is_object()
        {
            accepted += 1;
        }
        for e in d.state.record.iter().filter(|e| e.seq >= from) {
            let n = e.leaf_bytes()?.len();
            match &e.command {
                Command::Internal(InternalCommand::LogCommitments(_)) => bytes.log += n,
                Command::Internal(_) => bytes.close += n,
                _ => bytes.reveals += n,
            }
        }
        bytes.motion += serde_json::to_vec(&*d.motion(&id)?)?.len();
    }
    let per = |n: usize| n as f64 / decisions as f64 / 1024.0;
    println!("{decisions} decisions ({accepted} accepted), {SEATS} seats each, release build");
    println!(
        "apply: {:.1} us per decision ({:.0} decisions/s on one core)",
        applying.as_secs_f64() * 1e6 / decisions as f64,
        decisions as f64 / applying.as_secs_f64()
    );
    println!(
        "record per decision: {:.2} KB (round logged {:.2}, {SEATS} reveals {:.2}, close {:.2})",
        per(bytes.log + bytes.reveals + bytes.close),
        per(bytes.log),
        per(bytes.reveals),
        per(bytes.close)
    );
    println!(
        "decided motion (held, then archived): {:.2} KB",
        per(bytes.motion)
    );
    Ok(())
}
