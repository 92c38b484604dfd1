//! The federation across hosts (docs/FEDERATION.md "Across hosts"): three replicas, two
//! witnesses and nodes of three organisations, each on a host of its own (a network
//! namespace the test creates, on private addresses it owns); a third organisation joins
//! with the commands of docs/FEDERATION.md and is examined over its links; a partition of
//! the leader and a rolling restart of every replica follow, then its removal by entry, all
//! while the nemesis's writers, reader and sampler run; then the history checker's verdict
//! and `panel verify` of the exported record.

use panel_nemesis::run::{Config, Scenario, run};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_federation_across_hosts_joins_partitions_and_restarts_with_a_clean_history() {
    let cfg = Config {
        scenario: Scenario::Federation,
        replicas: 3,
        writers: 2,
        ..Config::from_env()
    };
    let dir = tempfile::tempdir().expect("a temporary folder");
    // Network namespaces need root; CI runs as root, so a failure here is a failure, never
    // a skip.
    let report = run(cfg, dir.path())
        .await
        .unwrap_or_else(|e| panic!("the federation could not run: {e}"));
    report.print();
    if std::env::var_os("NEMESIS_KEEP").is_some() {
        println!("run folder kept: {}", dir.keep().display());
    }
    assert!(
        report.violations.is_empty(),
        "{} violations (seed {}), see above",
        report.violations.len(),
        report.config.seed
    );
    // The scenario's own steps all happened: a join, a seated panel, a partition, three
    // restarts, the removal.
    for step in [
        "admitted by entry",
        "three-seat panel with eastgate's arbiter decided",
        "partitioned",
        "replica 3 restarted",
        "client refused",
    ] {
        assert!(
            report.steps.iter().any(|s| s.contains(step)),
            "no step {step:?} in {:#?}",
            report.steps
        );
    }
}
