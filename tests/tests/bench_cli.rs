//! `panel bench` through the real binary with a tiny workload: it starts its federation
//! (three replicas over mutual TLS, two witnesses, eight simulated arbiters), drives a
//! few claims through the whole path and names every figure it reports. Timings are not
//! asserted: a test machine's speed says nothing about the code.

use std::process::Output;

use panel_tests::panel;

fn bench(extra: &[&str]) -> (Output, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let state = dir.path().join("bench");
    let state = state.to_str().expect("a UTF-8 path");
    let out = panel()
        .args([
            "bench",
            "--decisions",
            "20",
            "--concurrency",
            "4",
            "--bound-decisions",
            "50",
            "--state",
            state,
        ])
        .args(extra)
        .output()
        .expect("run panel bench");
    (out, dir)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn the_report_names_every_figure() {
    let (out, _dir) = bench(&[]);
    let stdout = text(&out.stdout);
    assert!(
        out.status.success(),
        "panel bench failed:\n{stdout}\n{}",
        text(&out.stderr)
    );
    for figure in [
        "decisions/s at full load",
        "20 decided",
        "decision (close applied)",
        "draw/open (motion opened)",
        "commit logged",
        "reveals applied",
        "close applied",
        "cosigned checkpoint covering it",
        "p50",
        "p99",
        "p999",
        "CPU per decision",
        "CPU ms per decision  replica 1",
        "CPU ms per decision  node bench-arb-00",
        "CPU ms per decision  witness",
        "bytes per decision on disk, replica 1",
        "bytes per decision on disk, replica 3",
        "bytes per decision over the network",
        "verification bound",
        "ratio real path / bound",
        "simulated",
    ] {
        assert!(
            stdout.contains(figure),
            "the report does not name {figure:?}:\n{stdout}"
        );
    }
}

#[test]
fn json_carries_the_same_figures() {
    let (out, _dir) = bench(&["--json"]);
    assert!(
        out.status.success(),
        "panel bench --json failed:\n{}",
        text(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    assert_eq!(v["throughput"]["decided"], 20, "{v:#}");
    for path in [
        "/throughput/decisions_per_s",
        "/latency/decision/p50_ms",
        "/latency/decision/p99_ms",
        "/latency/decision/p999_ms",
        "/latency/commitments_logged/p99_ms",
        "/latency/cosigned_checkpoint/p50_ms",
        "/cost/cpu_ms_per_decision_replicas",
        "/cost/disk_bytes_per_decision/replica 1",
        "/bound/decisions_per_s",
        "/ratio_to_bound",
    ] {
        assert!(
            v.pointer(path).is_some_and(serde_json::Value::is_number),
            "{path} is not a number in:\n{v:#}"
        );
    }
}
