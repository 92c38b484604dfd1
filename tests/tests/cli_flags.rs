//! Consistent flags across subcommands: every command that takes a debate id
//! takes it positionally or as `--debate`, every one that takes a motion id positionally
//! or as `--motion`, and the older spelling of each still parses. Checked through the
//! real binary without a cluster: the commands are pointed at a closed loopback port, so
//! a form that parses fails on connecting (exit 1), while a form clap refuses exits 2.

use std::process::Output;

use panel_tests::panel;

/// A loopback address nobody listens on: parsing succeeds, connecting fails at once.
const NOWHERE: &str = "127.0.0.1:1";

fn run(args: &[&str]) -> Output {
    panel()
        .args(args)
        .env_remove("PANEL_ADDR")
        .env_remove("PANEL_TLS")
        .output()
        .expect("run panel")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The invocation parsed: it got as far as reaching the cluster (or node) and failed there.
fn assert_parses(args: &[&str]) {
    let o = run(args);
    let err = stderr(&o);
    assert_ne!(o.status.code(), Some(2), "{args:?} did not parse:\n{err}");
    assert!(
        !err.contains("unexpected argument") && !err.contains("required arguments"),
        "{args:?} did not parse:\n{err}"
    );
    assert!(
        err.contains("127.0.0.1:1"),
        "{args:?} should fail on connecting to 127.0.0.1:1:\n{err}"
    );
}

#[test]
fn debate_ids_parse_positionally_and_as_debate() {
    let forms: [&[&str]; 6] = [
        &["debate", "show"],
        &["verdict"],
        &["motion", "list"],
        &["ask", "--advance", "framing"],
        &[
            "define",
            "--author",
            "ada",
            "--side",
            "A",
            "--term",
            "output",
            "--definition",
            "goods made per hour",
        ],
        &[
            "respond",
            "--author",
            "ada",
            "--side",
            "A",
            "--challenge",
            "ch_1",
            "--text",
            "The cited survey covers the same firms.",
        ],
    ];
    for base in forms {
        for id in [&["deb_1"][..], &["--debate", "deb_1"][..]] {
            let mut args: Vec<&str> = base.to_vec();
            args.extend_from_slice(id);
            args.extend_from_slice(&["--addr", NOWHERE]);
            assert_parses(&args);
        }
    }
}

#[test]
fn motion_ids_parse_positionally_and_as_motion() {
    for id in [&["mot-1-0-0"][..], &["--motion", "mot-1-0-0"][..]] {
        let mut show = vec!["motion", "show"];
        show.extend_from_slice(id);
        show.extend_from_slice(&["--addr", NOWHERE]);
        assert_parses(&show);
        let mut rule = vec!["node", "rule"];
        rule.extend_from_slice(id);
        rule.extend_from_slice(&[
            "--decision",
            "ACCEPT",
            "--probability",
            "0.8",
            "--node",
            "http://127.0.0.1:1",
        ]);
        assert_parses(&rule);
    }
}

#[test]
fn arbiter_ids_parse_positionally_and_as_id() {
    for id in [
        &["arb-1"][..],
        &["--id", "arb-1"][..],
        &["--arbiter", "arb-1"][..],
    ] {
        let mut show = vec!["arbiter", "show"];
        show.extend_from_slice(id);
        show.extend_from_slice(&["--addr", NOWHERE]);
        assert_parses(&show);
    }
}

#[test]
fn an_id_given_both_ways_or_not_at_all_is_a_usage_error() {
    for args in [
        &["motion", "show", "m1", "--motion", "m2", "--addr", NOWHERE][..],
        &[
            "debate", "show", "deb_1", "--debate", "deb_2", "--addr", NOWHERE,
        ][..],
        &["motion", "list", "--addr", NOWHERE][..],
        &["arbiter", "show", "a1", "--id", "a2", "--addr", NOWHERE][..],
    ] {
        let o = run(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}:\n{}", stderr(&o));
    }
}

#[test]
fn help_lists_both_forms() {
    for (cmd, flag, positional) in [
        (&["debate", "show"][..], "--debate", "[DEBATE]"),
        (&["motion", "list"][..], "--debate", "[DEBATE]"),
        (&["ask"][..], "--debate", "[DEBATE]"),
        (&["thread"][..], "--debate", "[DEBATE]"),
        (&["motion", "show"][..], "--motion", "[MOTION]"),
        (&["node", "rule"][..], "--motion", "[MOTION]"),
        (&["arbiter", "declare"][..], "--debate", "[DEBATE]"),
        (&["arbiter", "show"][..], "--id", "[ARBITER]"),
    ] {
        let mut args = cmd.to_vec();
        args.push("--help");
        let o = run(&args);
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        assert!(
            out.contains(flag) && out.contains(positional),
            "{args:?} should list {flag} and {positional}:\n{out}"
        );
    }
}
