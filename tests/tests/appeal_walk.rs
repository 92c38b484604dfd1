//! One debate's outcome taken by a party through every status over real sockets
//! (docs/PANEL.md "Finality"): `panel up --keep` leaves deb_1 closed with its outcomes
//! `provisional`; the four arbiters that did not sit on it declare stances for it, a
//! contributor appeals thr_1 (its outcomes turn `appealed`, the deposit is charged), the
//! appeal's own panel of those four sits (the second round), and once it admits the
//! appeal, a panel asked to conclude the review (`panel ask --advance appeal-review`)
//! issues the revised verdict and the held outcomes turn `final`. A denial makes them
//! final at once; an appeal no panel can seat stays pending with its reason, never lost.

use std::path::Path;
use std::time::{Duration, Instant};

use panel_tests::local_panel::{appeal_deb_1, json, ok, register_contributor, start};
use serde_json::Value;

/// deb_1's merge of ver_1 into thr_1 (`panel motion list --json`).
fn merge_of_thr_1(st: &Path) -> Value {
    let listed = json(st, &["motion", "list", "--debate", "deb_1", "--json"]);
    listed["motions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|m| {
            m["spec"]["question"]["kind"] == "merge" && m["spec"]["question"]["threadId"] == "thr_1"
        })
        .cloned()
        .expect("deb_1 merged a version into thr_1")
}

fn status_of(st: &Path, id: &str) -> String {
    let m = json(st, &["motion", "show", id, "--json"]);
    m["motion"]["finality"]["status"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// Polls `panel debate show deb_1` until `done` holds; the last text.
fn wait_show(st: &Path, done: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let shown = ok(st, &["debate", "show", "deb_1"]);
        if done(&shown) {
            return shown;
        }
        assert!(Instant::now() < deadline, "gave up waiting:\n{shown}");
        std::thread::sleep(Duration::from_millis(500));
    }
}

#[test]
fn an_outcome_goes_from_provisional_through_an_appeal_and_a_second_round_to_final() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut cluster = start(dir.path(), &["--procedure", "none"]);
    cluster.wait_ready();
    let st = cluster.state.clone();
    let st = st.as_path();

    let merge = merge_of_thr_1(st);
    let merge_id = merge["spec"]["motion_id"]
        .as_str()
        .expect("an id")
        .to_owned();
    assert_eq!(status_of(st, &merge_id), "provisional");
    let sat: Vec<String> = merge["seats"]
        .as_array()
        .expect("seats")
        .iter()
        .filter_map(|s| s["arbiter_id"].as_str().map(str::to_owned))
        .collect();

    // The four arbiters who sat on none of deb_1's panels declare for it: one of each
    // organisation on each stance, so their panel can agree across priors.
    let fresh = [
        ("arb-north-c", "A"),
        ("arb-south-c", "A"),
        ("arb-north-p", "B"),
        ("arb-south-d", "B"),
    ];
    for (id, stance) in fresh {
        assert!(!sat.contains(&id.to_owned()), "{id} sat on the merge");
        let key = st.join(format!("nodes/{id}/arbiter.key"));
        let said = ok(
            st,
            &[
                "arbiter",
                "declare",
                "--id",
                id,
                "--key-file",
                key.to_str().expect("utf-8 path"),
                "--stance",
                stance,
                "deb_1",
            ],
        );
        assert!(said.contains("declared stance"), "{said}");
    }

    // cara (northwind) appeals thr_1's outcomes for side B.
    let cara = st.join("cara.key");
    let cara = cara.to_str().expect("utf-8 path");
    register_contributor(st, "cara", cara, "northwind");
    let filed = appeal_deb_1(st, cara, "cara", "B", "thr_1", &[]);
    assert!(filed.contains("accepted: appeal app_1 filed"), "{filed}");
    assert!(filed.contains("state: before the panel: motion"), "{filed}");
    assert_eq!(status_of(st, &merge_id), "appealed");

    // The second round: the appeal's panel, none of whom sat on what it contests.
    let decided = wait_show(st, |s| {
        !s.contains("app_1 by side B (A2): before the panel")
    });
    let line = decided
        .lines()
        .find(|l| l.contains("app_1 by side B"))
        .expect("the appeal listed")
        .to_owned();
    if line.contains("PENDING") {
        // The four deadlocked and no fifth fresh arbiter exists: held, with the reason.
        assert!(line.contains("declaring a stance"), "{line}");
        assert_eq!(status_of(st, &merge_id), "appealed");
        eprintln!("the appeal's panel deadlocked; it waits for a panel: {line}");
        return;
    }
    if line.contains("denied") {
        let shown = wait_show(st, |s| s.contains("appeal app_1 was denied"));
        assert_eq!(status_of(st, &merge_id), "final", "{shown}");
        eprintln!("the appeal's panel denied it; thr_1's merge is final");
        return;
    }
    assert!(line.contains("admitted"), "{line}");
    assert!(decided.contains("phase appeal-review"), "{decided}");
    assert_eq!(
        status_of(st, &merge_id),
        "appealed",
        "held through the review"
    );

    // A panel concludes the review; a deadlocked ask is asked again.
    let mut concluded = None;
    for _ in 0..8 {
        let said = ok(
            st,
            &[
                "ask",
                "--debate",
                "deb_1",
                "--advance",
                "appeal-review",
                "--wait",
            ],
        );
        if said.contains("ACCEPTED") {
            concluded = Some(said);
            break;
        }
        assert!(said.contains("DEADLOCKED"), "{said}");
    }
    let said = concluded.expect("one of eight panels concluded the review");
    assert!(said.contains("advance-phase:appeal-review"), "{said}");
    let shown = wait_show(st, |s| s.contains("phase closed"));
    assert!(
        shown.contains("after appeal app_1"),
        "the revised verdict: {shown}"
    );
    assert!(shown.contains("app_1 by side B (A2): resolved"), "{shown}");
    let status = status_of(st, &merge_id);
    assert!(
        status == "final" || status == "overturned",
        "{status}: {shown}"
    );
    let m = ok(st, &["motion", "show", &merge_id]);
    assert!(m.contains("review of appeal app_1"), "{m}");
    eprintln!("the review concluded; thr_1's merge is {status}");
    cluster.stop();
}
