//! One decision's cost inside the state machine, on the path a real decision takes: the
//! round logged (`LogCommitments`), five reveals and the close, decoded from JSON and
//! applied as a replica does (docs/coordinator/state-machine.md "The commit-reveal
//! round"). Prints that time per decision (one thread, so CPU) and the bytes a decision
//! leaves: its record entries' leaf bytes (what every replica stores and hashes) and the
//! decided motion's JSON (what a replica keeps, then retires to its archive).
//!
//! `cargo bench -p panel-machine --features testkit --bench decision -- [DECISIONS]`
//! (BENCHMARKS.md, "The machine's share of a decision"). Signing the rulings is the
//! nodes' work and is done before the clock starts.

use std::time::{Duration, Instant};

use panel_machine::testkit::fixtures::cmd;
use panel_machine::testkit::{Driver, EIGHTEEN, Vote};
use panel_machine::{Command, InternalCommand, MotionStatus, TestCommand};
use serde_json::json;

const SEATS: usize = 5;

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
        let round = d.prepare_round(&id, |_, _| Vote::plain(true))?;
        // As a follower receives them: JSON, decoded inside the clock.
        let log = serde_json::to_vec(&round.log)?;
        let rest = serde_json::to_vec(&round.reveals_and_close)?;
        let started = Instant::now();
        d.try_ok(serde_json::from_slice::<Command>(&log)?)?;
        d.write_batch(serde_json::from_slice::<Vec<Command>>(&rest)?);
        applying += started.elapsed();
        if matches!(&d.motion(&id)?.status, MotionStatus::Decided(a) if a.is_accepted()) {
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
    let build = if cfg!(debug_assertions) {
        "debug build"
    } else {
        "optimised build"
    };
    println!("{decisions} decisions ({accepted} accepted), {SEATS} seats each, {build}");
    println!(
        "decode and apply: {:.1} us per decision ({:.0} decisions/s on one core)",
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
