//! Both versions of the prior-consistency check on random pools, to see how they generalise
//! beyond the shipped scenarios (docs/SIMULATION.md "Impostors"):
//! `cargo run --release -p panel-sim --example impostor_fuzz -- [N] [SCENARIO.toml...]`.
//! `N` random scenarios (default 200; scenario `i` has seed `1000 + i`) draw two to four
//! lineages (a third of them sharing 60-90% of their error), 3-10 arbiters per stance,
//! up to 3 undeclared, partisanship 0 (a third of them) or 0.3-1.2 on 20-70% of the
//! motions, accuracy 0.65-0.82, up to three impostors when partisan, 5-9 seats, ten windows
//! of 400 motions. Files given after `N` are run as they are. Prints recall and false flags
//! of each version over all windows, how many scenarios exceed 0.05 false flags, and the
//! worst; with `IMPOSTOR_FUZZ_DETAIL` set, every scenario's line too;
//! `IMPOSTOR_FUZZ_PRINT=SEED` prints that random scenario's TOML instead.

use std::fmt::Write as _;

use panel_sim::gaussian::Rng;
use panel_sim::impostors::{RuleFlags, WindowFlags, check_window};
use panel_sim::population::Population;
use panel_sim::simulation::Run;

/// Totals of one rule.
#[derive(Default)]
struct Totals {
    impostors: usize,
    caught: usize,
    honest: usize,
    false_flags: usize,
    over: usize,
    worst: f64,
}

impl Totals {
    fn add(&mut self, impostors: usize, honest: usize, f: &[RuleFlags]) {
        let caught: usize = f.iter().map(|x| x.impostors_flagged).sum();
        let false_flags: usize = f.iter().map(|x| x.honest_flagged).sum();
        self.impostors += impostors;
        self.caught += caught;
        self.honest += honest;
        self.false_flags += false_flags;
        let rate = false_flags as f64 / honest.max(1) as f64;
        self.over += usize::from(rate > 0.05);
        self.worst = self.worst.max(rate);
    }

    fn line(&self, name: &str) -> String {
        format!(
            "{name}: recall {:.3} ({}/{}), false flags {:.4} ({}/{}), scenarios over 0.05: {}, worst {:.3}",
            self.caught as f64 / self.impostors.max(1) as f64,
            self.caught,
            self.impostors,
            self.false_flags as f64 / self.honest.max(1) as f64,
            self.false_flags,
            self.honest,
            self.over,
            self.worst
        )
    }
}

/// A random scenario's TOML.
fn scenario(seed: u64) -> String {
    let mut r = Rng::new(seed);
    let families = 2 + r.below(3);
    let partisan = if r.chance(0.35) {
        0.0
    } else {
        0.3 + 0.9 * r.uniform()
    };
    let contested = 0.2 + 0.5 * r.uniform();
    let shared = if r.chance(0.5) { 0.0 } else { 0.05 };
    let (na, nb, nn) = (3 + r.below(8), 3 + r.below(8), r.below(4));
    let impostors = if partisan > 0.0 { r.below(4) } else { 0 };
    let seats = (5 + r.below(5)).min(na + nb + nn + impostors);
    let (declared, lean) = if r.chance(0.5) {
        ("A", "B")
    } else {
        ("B", "A")
    };
    let mut t = String::new();
    let _ = writeln!(
        t,
        "name = \"fuzz-{seed}\"\nseed = {seed}\nmotions = 4000\n[panel]\nseats = {seats}\n\
         [world]\ncontested_share = {contested:.3}\nshared_error = {shared}\n\
         [analysis]\nhistory_motions = 400\nhistory_windows = 10"
    );
    for f in 0..families {
        let c = if r.chance(0.3) {
            0.6 + 0.3 * r.uniform()
        } else {
            0.4 * r.uniform()
        };
        let _ = writeln!(t, "[[family]]\nname = \"f{f}\"\nerror_correlation = {c:.3}");
    }
    let mut group = |name: &str, count: usize, stance: &str, lean: Option<&str>, part: f64| {
        // Up to two subgroups of different lineage and accuracy.
        let parts = if count >= 4 && r.chance(0.5) { 2 } else { 1 };
        let mut left = count;
        for p in 0..parts {
            let c = if p + 1 == parts {
                left
            } else {
                1 + r.below(left - 1)
            };
            left -= c;
            let family = r.below(families);
            let accuracy = 0.65 + 0.17 * r.uniform();
            let partisanship = part * (0.6 + 0.8 * r.uniform());
            let _ = writeln!(
                t,
                "[[group]]\nname = \"{name}{p}\"\ncount = {c}\nstance = \"{stance}\"\n\
                 organisation = \"{name}{p}-{{i}}\"\nfamily = \"f{family}\"\n\
                 accuracy = {accuracy:.3}\npartisanship = {partisanship:.3}"
            );
            if let Some(l) = lean {
                let _ = writeln!(t, "true_stance = \"{l}\"");
            }
        }
    };
    group("a", na, "A", None, partisan);
    group("b", nb, "B", None, partisan);
    if nn > 0 {
        group("n", nn, "none", None, 0.0);
    }
    if impostors > 0 {
        group("x", impostors, declared, Some(lean), partisan);
    }
    t
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(seed) = std::env::var("IMPOSTOR_FUZZ_PRINT")
        .ok()
        .and_then(|s| s.parse().ok())
    {
        print!("{}", scenario(seed));
        return Ok(());
    }
    let n: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(200);
    let mut texts: Vec<String> = (0..n).map(|i| scenario(1000 + i as u64)).collect();
    for file in args.iter().skip(1) {
        texts.push(std::fs::read_to_string(file)?);
    }
    let detail = std::env::var("IMPOSTOR_FUZZ_DETAIL").is_ok();
    let (mut v1, mut v2) = (Totals::default(), Totals::default());
    for text in &texts {
        let s = panel_sim::parse(text)?;
        let pop = Population::build(&s);
        let a = &s.analysis;
        let records = Run {
            scenario: &s,
            population: &pop,
            motions: a.history_motions * a.history_windows,
            seats: s.panel.seats,
            stream: 0,
        }
        .simulate();
        let flags: Vec<WindowFlags> = records
            .chunks(a.history_motions)
            .map(|w| check_window(&pop, w))
            .collect();
        let impostors: usize = flags.iter().map(|f| f.impostors).sum();
        let honest: usize = flags.iter().map(|f| f.honest).sum();
        let f1: Vec<RuleFlags> = flags.iter().map(|f| f.v1).collect();
        let f2: Vec<RuleFlags> = flags.iter().map(|f| f.v2).collect();
        if detail {
            let mut one = (Totals::default(), Totals::default());
            one.0.add(impostors, honest, &f1);
            one.1.add(impostors, honest, &f2);
            println!("{}\n  {}\n  {}", s.name, one.0.line("v1"), one.1.line("v2"));
        }
        v1.add(impostors, honest, &f1);
        v2.add(impostors, honest, &f2);
    }
    println!("{} scenarios", texts.len());
    println!("{}", v1.line("version 1"));
    println!("{}", v2.line("version 2"));
    Ok(())
}
