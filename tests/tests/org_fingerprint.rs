//! `panel org fingerprint` through the binary on the files `panel pki init` writes: an
//! organisation's authority certificate gives the `ca_sha256` the charter pins for it, its
//! roster key (a raw 32-byte seed) the `signing_key` the charter lists, and the charter's
//! motion key its public half; a file of any other kind is refused naming what is accepted.
//! So a joining organisation can print exactly what the members must check before they
//! endorse it (docs/SECURITY.md "Membership").

use panel_tests::{panel, tls};
use serde_json::Value;

fn fingerprint(files: &[&std::path::Path]) -> Vec<Value> {
    let out = panel()
        .args(["org", "fingerprint", "--json"])
        .args(files)
        .output()
        .expect("run panel");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .expect("utf-8")
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON document per file"))
        .collect()
}

#[test]
fn the_printed_values_are_the_ones_the_charter_pins() {
    let root = tempfile::tempdir().expect("tempdir");
    let issued = tls::issue(root.path(), &[]);
    let org = &issued.charter.organisations[0];
    let ca = issued.root.join("orgs").join(&org.name).join("ca.pem");
    let roster = issued.signing_key_path(&org.name);
    let motion = issued.motion_key_path();
    let got = fingerprint(&[&ca, &roster, &motion]);
    assert_eq!(got[0]["kind"], "certificate", "{got:?}");
    assert_eq!(got[0]["sha256"], org.ca_sha256.to_string(), "{got:?}");
    assert_eq!(got[1]["kind"], "signing_key", "{got:?}");
    assert_eq!(got[1]["public_key"], org.signing_key, "{got:?}");
    assert_eq!(got[2]["public_key"], issued.charter.motion_key, "{got:?}");

    // Lines for a person, and a refusal for anything else.
    let out = panel()
        .args(["org", "fingerprint"])
        .arg(&roster)
        .output()
        .expect("run panel");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("ed25519 key, public"), "{text}");
    let junk = root.path().join("junk.txt");
    std::fs::write(&junk, "hello").expect("write");
    let out = panel()
        .args(["org", "fingerprint"])
        .arg(&junk)
        .output()
        .expect("run panel");
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("neither a PEM certificate"), "{err}");
}
