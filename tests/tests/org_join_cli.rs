//! Joining in commands, through the real binary: `panel pki issue` adds one identity of an
//! existing organisation to the folder `panel pki init` wrote (and refuses an organisation
//! the folder does not know, an identity that exists, an authority key it does not hold);
//! `panel org init` writes a joining organisation's folder and prints the values the
//! members endorse, which `panel org fingerprint` confirms and `panel org endorse
//! --organisation-file` signs (docs/WIRE.md "Organisation admission").

use std::path::Path;
use std::process::Output;

use panel_tests::panel;
use serde_json::Value;

fn run(args: &[&str]) -> Output {
    panel().args(args).output().expect("run panel")
}

fn ok(args: &[&str]) -> String {
    let out = run(args);
    assert!(
        out.status.success(),
        "panel {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

/// `panel pki init` of two organisations with one replica each, under `root/pki`.
fn federation(root: &Path) -> String {
    let pki = root.join("pki").display().to_string();
    ok(&[
        "pki",
        "init",
        "--out",
        &pki,
        "--org",
        "northwind",
        "--org",
        "southbank",
        "--replica",
        "1=northwind@127.0.0.1",
        "--replica",
        "2=southbank@127.0.0.1",
    ]);
    pki
}

fn fingerprint(file: &Path) -> Value {
    let out = ok(&["org", "fingerprint", "--json", &file.display().to_string()]);
    serde_json::from_str(out.trim()).expect("one JSON document")
}

#[test]
fn pki_issue_adds_one_node_that_fingerprint_reads_and_refuses_the_rest() {
    let root = tempfile::tempdir().expect("tempdir");
    let pki = federation(root.path());
    let charter_before = std::fs::read(root.path().join("pki/charter.json")).expect("charter");

    let out = ok(&[
        "pki",
        "issue",
        "--pki",
        &pki,
        "--org",
        "northwind",
        "--node",
        "new-arb",
    ]);
    let dir = root.path().join("pki/node-new-arb");
    for f in ["ca.pem", "cert.pem", "key.pem"] {
        assert!(dir.join(f).is_file(), "{f} missing in {}", dir.display());
    }
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(dir.join("key.pem"))
        .expect("key")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    let got = fingerprint(&dir.join("cert.pem"));
    assert_eq!(got["kind"], "certificate", "{got}");
    let sha = got["sha256"].as_str().expect("sha256");
    assert!(
        out.contains(sha),
        "the printed fingerprint is the file's: {out}"
    );
    assert_eq!(
        std::fs::read(root.path().join("pki/charter.json")).expect("charter"),
        charter_before,
        "the charter is not edited"
    );

    // The same identity again, an organisation the folder does not know, a replica (a
    // charter change, said so), and an organisation whose authority key is elsewhere.
    let again = run(&[
        "pki",
        "issue",
        "--pki",
        &pki,
        "--org",
        "northwind",
        "--node",
        "new-arb",
    ]);
    assert_eq!(again.status.code(), Some(1));
    let err = String::from_utf8_lossy(&again.stderr);
    assert!(err.contains("already exists"), "{err}");

    let unknown = run(&[
        "pki", "issue", "--pki", &pki, "--org", "eastgate", "--client", "c1",
    ]);
    assert_eq!(unknown.status.code(), Some(1));
    let err = String::from_utf8_lossy(&unknown.stderr);
    assert!(err.contains("northwind, southbank"), "{err}");

    let replica = ok(&[
        "pki",
        "issue",
        "--pki",
        &pki,
        "--org",
        "southbank",
        "--replica",
        "3",
        "--hosts",
        "127.0.0.1,localhost",
    ]);
    assert!(replica.contains("charter change"), "{replica}");
    let r3 = fingerprint(&root.path().join("pki/replica-3/cert.pem"));
    assert!(
        replica.contains(r3["sha256"].as_str().expect("sha256")),
        "{replica}"
    );

    std::fs::remove_file(root.path().join("pki/orgs/southbank/ca.key")).expect("rm");
    let held = run(&[
        "pki",
        "issue",
        "--pki",
        &pki,
        "--org",
        "southbank",
        "--witness",
    ]);
    assert_eq!(held.status.code(), Some(1));
    let err = String::from_utf8_lossy(&held.stderr);
    assert!(err.contains("not held in this folder"), "{err}");
    assert!(!root.path().join("pki/witness-southbank").exists());
}

#[test]
fn org_init_prints_what_members_endorse_and_endorse_reads_its_file() {
    let root = tempfile::tempdir().expect("tempdir");
    let pki = federation(root.path());
    let east = root.path().join("eastgate");
    let out = ok(&[
        "org",
        "init",
        "--name",
        "eastgate",
        "--hosts",
        "127.0.0.1",
        "--out",
        &east.display().to_string(),
    ]);
    let printed = |label: &str| -> String {
        out.lines()
            .find_map(|l| l.trim().strip_prefix(label))
            .and_then(|rest| rest.split_whitespace().next())
            .unwrap_or_else(|| panic!("no {label} line in: {out}"))
            .to_owned()
    };
    let ca = fingerprint(&east.join("orgs/eastgate/ca.pem"));
    assert_eq!(
        printed("ca_sha256:"),
        ca["sha256"].as_str().expect("sha256")
    );
    let roster = fingerprint(&east.join("orgs/eastgate/signing.key"));
    assert_eq!(
        printed("signing_key:"),
        roster["public_key"].as_str().expect("public key")
    );
    assert!(out.contains("panel org endorse"), "{out}");
    assert!(out.contains("panel org admit"), "{out}");

    let file = east.join("organisation.json");
    let entry: Value =
        serde_json::from_slice(&std::fs::read(&file).expect("organisation.json")).expect("json");
    assert_eq!(entry["name"], "eastgate");
    assert_eq!(entry["ca_sha256"], ca["sha256"]);
    assert_eq!(entry["signing_key"], roster["public_key"]);
    for id in ["operator-eastgate", "client-eastgate", "witness-eastgate"] {
        assert!(east.join(id).join("cert.pem").is_file(), "{id}");
    }

    // A member signs the entry from the file, the same signature as from the flags.
    let member_key = format!("{pki}/orgs/northwind/signing.key");
    let from_file = ok(&[
        "org",
        "endorse",
        "--organisation-file",
        &file.display().to_string(),
        "--org-key",
        &member_key,
    ]);
    let signature = from_file.trim();
    assert_eq!(signature.len(), 128, "{signature}");
    assert!(
        signature.chars().all(|c| c.is_ascii_hexdigit()),
        "{signature}"
    );
    let from_flags = ok(&[
        "org",
        "endorse",
        "--name",
        "eastgate",
        "--ca-sha256",
        entry["ca_sha256"].as_str().expect("hex"),
        "--signing-key",
        entry["signing_key"].as_str().expect("hex"),
        "--org-key",
        &member_key,
    ]);
    assert_eq!(from_flags.trim(), signature);

    // The folder is never written over.
    let again = run(&[
        "org",
        "init",
        "--name",
        "eastgate",
        "--hosts",
        "127.0.0.1",
        "--out",
        &east.display().to_string(),
    ]);
    assert_eq!(again.status.code(), Some(1));
    let err = String::from_utf8_lossy(&again.stderr);
    assert!(err.contains(&east.display().to_string()), "{err}");
    assert!(err.contains("not empty"), "{err}");
}
