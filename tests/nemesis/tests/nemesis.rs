//! The bounded nemesis CI runs (about two minutes), and the long mode:
//! `NEMESIS_SECS=600 NEMESIS_SEED=... cargo test -p panel-nemesis --test nemesis -- --nocapture`
//! (5 replicas unless `NEMESIS_REPLICAS` says otherwise). The seed is printed first and
//! again in the report; giving it back replays the same schedule.

use panel_nemesis::run::{Config, run};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nemesis_history_is_linearizable_under_faults() {
    let cfg = Config::from_env();
    let dir = tempfile::tempdir().expect("a temporary folder");
    // Network namespaces need root; CI runs as root, so a failure here is a failure, never
    // a skip.
    let report = run(cfg, dir.path())
        .await
        .unwrap_or_else(|e| panic!("the nemesis could not run: {e}"));
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
}
