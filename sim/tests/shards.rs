//! The sharding model's behaviour (docs/SHARDING.md): what adding groups does on few and
//! many cores, how latency grows with load, determinism, and refusals. Runs are kept short
//! (5 s warm-up, 10 s measured) so the tests stay quick in a debug build.

use panel_sim::shards::{Load, Params, ShardsError, Sweep, run, sweep};

fn params(cores: u32, groups: u32) -> Params {
    Params {
        cores,
        groups,
        warmup_s: 5.0,
        measure_s: 10.0,
        ..Params::default()
    }
}

fn capacity(cores: u32, groups: u32) -> f64 {
    run(
        &params(cores, groups),
        Load::Closed {
            clients: 16 * cores,
        },
    )
    .unwrap()
    .throughput_per_s
}

#[test]
fn one_seed_gives_one_result_and_another_seed_another() {
    let p = params(2, 4);
    let load = Load::Open { per_s: 15.0 };
    let a = run(&p, load).unwrap();
    let b = run(&p, load).unwrap();
    assert_eq!(a, b);
    let c = run(&Params { seed: 42, ..p }, load).unwrap();
    assert_ne!(a, c);
}

#[test]
fn on_many_cores_groups_add_throughput_until_the_cores_are_busy() {
    let cores = 32;
    let bound = params(cores, 1).cpu_bound_per_s();
    let c1 = capacity(cores, 1);
    let c2 = capacity(cores, 2);
    let c4 = capacity(cores, 4);
    let c8 = capacity(cores, 8);
    assert!(c2 > 1.5 * c1, "1 group {c1:.1}/s, 2 groups {c2:.1}/s");
    assert!(c4 > 1.2 * c2, "2 groups {c2:.1}/s, 4 groups {c4:.1}/s");
    assert!(c8 >= 0.97 * c4, "4 groups {c4:.1}/s, 8 groups {c8:.1}/s");
    // one group is held by its leader's serial apply, not by the cores
    let lane = params(cores, 1).lane_bound_per_group_per_s();
    assert!(c1 < 1.15 * lane && c1 < 0.5 * bound, "{c1:.1}/s");
    // eight groups keep the cores busy
    assert!(c8 > 0.9 * bound, "8 groups {c8:.1}/s against {bound:.1}/s");
}

#[test]
fn on_two_cores_more_groups_do_not_help() {
    let bound = params(2, 1).cpu_bound_per_s();
    let one = run(&params(2, 1), Load::Closed { clients: 32 }).unwrap();
    let sixteen = run(&params(2, 16), Load::Closed { clients: 32 }).unwrap();
    assert!(one.cpu_utilisation > 0.97, "{one:?}");
    assert!(sixteen.cpu_utilisation > 0.97, "{sixteen:?}");
    assert!(one.throughput_per_s > 0.85 * bound, "{one:?}");
    // sixteen groups spend the same cores on heartbeats and checkpoints too
    assert!(
        sixteen.throughput_per_s < one.throughput_per_s,
        "1 group {:.2}/s, 16 groups {:.2}/s",
        one.throughput_per_s,
        sixteen.throughput_per_s
    );
}

#[test]
fn latency_grows_as_load_nears_capacity() {
    let p = params(2, 1);
    let bound = p.cpu_bound_per_s();
    let light = run(&p, Load::Open { per_s: 0.3 * bound }).unwrap();
    let heavy = run(&p, Load::Open { per_s: 0.8 * bound }).unwrap();
    assert!(!light.saturated && !heavy.saturated);
    let (l50, l99) = (light.decided_p50_ms.unwrap(), light.decided_p99_ms.unwrap());
    let (h50, h99) = (heavy.decided_p50_ms.unwrap(), heavy.decided_p99_ms.unwrap());
    assert!(
        h50 > l50 && h99 > 1.5 * l99,
        "light {l50}/{l99}, heavy {h50}/{h99}"
    );
    // nothing decides before the commit window has passed
    assert!(l50 >= 300.0, "{l50}");
    assert!(heavy.cpu_utilisation > light.cpu_utilisation);
}

#[test]
fn an_offered_load_beyond_capacity_is_reported_as_overloaded() {
    let p = params(2, 2);
    let r = run(
        &p,
        Load::Open {
            per_s: 2.0 * p.cpu_bound_per_s(),
        },
    )
    .unwrap();
    assert!(r.saturated, "{r:?}");
    assert_eq!(r.decided_p99_ms, None);
    assert!(r.throughput_per_s < 1.05 * p.cpu_bound_per_s());
}

#[test]
fn every_busy_group_feeds_the_index_about_once_per_checkpoint_interval() {
    let p = params(8, 4);
    let r = run(&p, Load::Open { per_s: 40.0 }).unwrap();
    assert!(
        (2.0..=8.0).contains(&r.index_entries_per_s),
        "{} index entries/s for 4 groups checkpointing every second",
        r.index_entries_per_s
    );
    let (decided, indexed) = (r.decided_p50_ms.unwrap(), r.indexed_p50_ms.unwrap());
    assert!(indexed > decided, "decided {decided}, indexed {indexed}");
    assert!(r.busiest_group_share < 0.4, "{}", r.busiest_group_share);
}

#[test]
fn bad_parameters_get_typed_errors() {
    let p = params(2, 1);
    assert_eq!(
        run(&p, Load::Open { per_s: 0.0 }).unwrap_err().parameter(),
        "load.per_s"
    );
    assert_eq!(
        run(&p, Load::Closed { clients: 0 })
            .unwrap_err()
            .parameter(),
        "load.clients"
    );
    let err = run(
        &Params {
            cores: 0,
            ..p.clone()
        },
        Load::Closed { clients: 1 },
    )
    .unwrap_err();
    assert!(
        matches!(
            err,
            ShardsError::Invalid {
                parameter: "cores",
                ..
            }
        ),
        "{err}"
    );
    let empty = Sweep {
        groups: vec![],
        ..Sweep::default()
    };
    assert_eq!(
        sweep::run(&empty).unwrap_err(),
        ShardsError::EmptySweep {
            parameter: "groups"
        }
    );
    let too_many = Sweep {
        groups: vec![1, 65],
        cores: vec![2],
        ..Sweep::default()
    };
    assert_eq!(sweep::run(&too_many).unwrap_err().parameter(), "groups");
}

#[test]
fn the_sweep_renders_one_table_per_core_count() {
    let s = Sweep {
        base: params(2, 1),
        cores: vec![2, 4],
        groups: vec![1, 2],
        load_fractions: vec![0.5],
        clients_per_core: 16,
    };
    let report = sweep::run(&s).unwrap();
    assert_eq!(report.rows.len(), 4);
    let md = report.markdown();
    assert!(
        md.contains("**2 cores**") && md.contains("**4 cores**"),
        "{md}"
    );
    assert_eq!(
        md.lines().filter(|l| l.starts_with("| 2 |")).count(),
        2,
        "{md}"
    );
}

/// The CPU the run spends is what its decisions cost plus a little per-group upkeep: no
/// cost is lost or counted twice between the nodes, the replicas and the index.
#[test]
fn the_cpu_spent_is_what_the_decisions_cost() {
    let p = params(8, 4);
    let r = run(&p, Load::Open { per_s: 40.0 }).unwrap();
    let expected = r.throughput_per_s * p.decision_cpu_ms() / 1000.0 / f64::from(p.cores);
    let ratio = r.cpu_utilisation / expected;
    assert!(
        (0.97..=1.08).contains(&ratio),
        "busy {:.3} of the cores against {expected:.3} for the decisions alone",
        r.cpu_utilisation
    );
}
