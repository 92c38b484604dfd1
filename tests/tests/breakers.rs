//! Circuit breakers over real sockets (docs/SECURITY.md "Circuit breakers"): three real
//! replicas over mutual TLS run by two organisations. One organisation cannot pause the
//! federation alone; both can, and then a write of the paused scope is refused naming the
//! pause, who set it and how to lift it, while reads keep working; a lift by both ends it.

use std::process::Output;
use std::time::{Duration, Instant};

use panel_tests::panel;
use panel_tests::tls::{TlsCluster, start_cluster};
use panel_transport::pki;
use serde_json::Value;

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The flags of one order, as every endorser signs it and the submitter sends it.
fn order_flags(c: &TlsCluster, seq: u64, direction: &str) -> Vec<String> {
    vec![
        "--charter".into(),
        c.pki.charter_path().display().to_string(),
        "--seq".into(),
        seq.to_string(),
        "--scope".into(),
        "motions,verdicts".into(),
        direction.into(),
        "--reason".into(),
        "outcomes under review".into(),
    ]
}

fn client_flags(c: &TlsCluster) -> Vec<String> {
    vec![
        "--addr".into(),
        c.addrs.join(","),
        "--tls".into(),
        c.pki.dir(pki::LOCAL_CLIENT).display().to_string(),
    ]
}

/// `panel org endorse-breaker` by `org`: ORG=SIGNATURE.
fn endorse(c: &TlsCluster, org: &str, seq: u64, direction: &str) -> String {
    endorse_with(c, org, seq, direction, &[])
}

/// [`endorse`] of an order with the `extra` flags (the automatic breaker's).
fn endorse_with(c: &TlsCluster, org: &str, seq: u64, direction: &str, extra: &[&str]) -> String {
    let out = panel()
        .args(["org", "endorse-breaker"])
        .args(order_flags(c, seq, direction))
        .args(extra)
        .arg("--org-key")
        .arg(c.pki.signing_key_path(org))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    format!("{org}={}", text(&out.stdout).trim())
}

fn submit(c: &TlsCluster, seq: u64, direction: &str, endorsements: &[String]) -> Output {
    submit_with(c, seq, direction, endorsements, &[])
}

/// [`submit`] of an order with the `extra` flags.
fn submit_with(
    c: &TlsCluster,
    seq: u64,
    direction: &str,
    endorsements: &[String],
    extra: &[&str],
) -> Output {
    let mut cmd = panel();
    cmd.args(["org", "breaker"])
        .args(order_flags(c, seq, direction))
        .args(extra);
    for e in endorsements {
        cmd.args(["--endorsement", e]);
    }
    cmd.args(client_flags(c)).output().unwrap()
}

/// One panel request as it is, through `panel coordinator write`; the reply.
fn ask(c: &TlsCluster, request_id: u64) -> Value {
    let command = r#"{"AskPanel":{"debate_id":"deb_1","author":"x","question":{"kind":"advance-phase","from":"framing"}}}"#;
    let out = panel()
        .args([
            "coordinator",
            "write",
            "--client-id",
            "breaker-test",
            "--request-id",
        ])
        .arg(request_id.to_string())
        .args(["--command", command])
        .args(client_flags(c))
        .output()
        .unwrap();
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|_| panic!("{}\n{}", text(&out.stdout), text(&out.stderr)))
}

fn breakers(c: &TlsCluster) -> String {
    let out = panel()
        .args(["org", "breakers"])
        .args(client_flags(c))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    text(&out.stdout)
}

#[test]
fn only_the_federation_pauses_and_a_pause_names_itself_and_its_lift() {
    let root = tempfile::tempdir().unwrap();
    let c = start_cluster(root.path());
    // Wait for the chartered group to answer writes: one organisation alone is refused
    // for want of the other, naming the command that gathers it.
    let north = endorse(&c, "northwind", 1, "--pause");
    let start = Instant::now();
    loop {
        let out = submit(&c, 1, "--pause", std::slice::from_ref(&north));
        let err = text(&out.stderr);
        if err.contains("distinct member organisation") {
            assert!(!out.status.success());
            assert!(
                err.contains("needs 2") && err.contains("endorse-breaker"),
                "{err}"
            );
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(60), "{err}");
        std::thread::sleep(Duration::from_millis(300));
    }
    // Northwind cannot sign in southbank's name.
    let forged = format!("southbank={}", north.split_once('=').unwrap().1);
    let out = submit(&c, 1, "--pause", &[north.clone(), forged]);
    assert!(
        text(&out.stderr).contains("does not verify"),
        "{}",
        text(&out.stderr)
    );
    assert!(breakers(&c).contains("nothing is paused"));

    // Both: paused. A panel request is refused by the pause (before anything else is
    // looked at), naming who paused, why, and the lift.
    let south = endorse(&c, "southbank", 1, "--pause");
    let out = submit(&c, 1, "--pause", &[north, south]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let r = ask(&c, 1);
    assert_eq!(r["applied"], false, "{r}");
    assert_eq!(r["result"]["code"], "paused", "{r}");
    let msg = r["result"]["message"].as_str().unwrap_or_default();
    for needle in [
        "motions are paused",
        "northwind, southbank",
        "outcomes under review",
        "reads keep working",
        "panel org endorse-breaker --lift --scope motions",
    ] {
        assert!(msg.contains(needle), "{needle:?} not in {msg}");
    }
    // Reads keep working, and show the pause.
    let shown = breakers(&c);
    assert!(
        shown.contains("motions PAUSED") && shown.contains("verdicts PAUSED"),
        "{shown}"
    );
    assert!(shown.contains("next order: --seq 2"), "{shown}");

    // One organisation cannot lift it alone; both can.
    let north = endorse(&c, "northwind", 2, "--lift");
    let out = submit(&c, 2, "--lift", std::slice::from_ref(&north));
    assert!(!out.status.success());
    assert!(breakers(&c).contains("motions PAUSED"));
    let south = endorse(&c, "southbank", 2, "--lift");
    let out = submit(&c, 2, "--lift", &[north, south]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(breakers(&c).contains("nothing is paused"));
    // The same request now reaches the debate lookup: no longer the pause's refusal.
    let r = ask(&c, 2);
    assert_ne!(r["result"]["code"], "paused", "{r}");

    // Both organisations arm the automatic breaker with the overturn and flag signals. A
    // submitter who adds a signal the endorsers did not sign is refused: the signature
    // covers every signal.
    let armed = [
        "--auto-window",
        "10",
        "--auto-max-deadlocks-percent",
        "90",
        "--auto-max-refused",
        "50",
        "--auto-max-overturned",
        "2",
    ];
    let mut with_flag = armed.to_vec();
    with_flag.push("--auto-on-flagged");
    let north = endorse_with(&c, "northwind", 3, "--lift", &armed);
    let south = endorse_with(&c, "southbank", 3, "--lift", &armed);
    let both = [north, south];
    let out = submit_with(&c, 3, "--lift", &both, &with_flag);
    assert!(!out.status.success(), "an unsigned signal was accepted");
    let out = submit_with(&c, 3, "--lift", &both, &armed);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let shown = breakers(&c);
    assert!(
        shown.contains("more than 2 outcomes overturned on appeal")
            && !shown.contains("prior check flags"),
        "{shown}"
    );
}
