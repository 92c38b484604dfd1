//! Key handling through the real binary: keygen mode, loose permissions refused with the
//! fix, fingerprints, signed rotation and revocation documents.

mod node_support;

use std::os::unix::fs::PermissionsExt;

use node_support::*;
use panel_proto::keys;
use panel_proto::pb::{KeyRevocation, KeyRotation};
use panel_tests::{free_port, panel};
use prost::Message;

#[test]
fn keygen_writes_mode_0600_and_refuses_to_overwrite() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("k.key");
    let key = keygen(&path);
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let out = panel()
        .args(["node", "keygen", "--out"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("refusing to overwrite"));
    let out = panel()
        .args(["node", "fingerprint", "--key"])
        .arg(&path)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&keys::fingerprint(&key.verifying_key())),
        "{text}"
    );
}

#[test]
fn node_refuses_a_group_or_world_readable_key() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("profiles.toml"), PERFECT_PROFILES).unwrap();
    let key = dir.path().join("arbiter.key");
    keygen(&key);
    let config = dir.path().join("node.toml");
    std::fs::write(
        &config,
        format!("key_file = \"arbiter.key\"\ndata_dir = \"data\"\n{SCRIPTED_PERFECT}\n"),
    )
    .unwrap();
    for mode in [0o644, 0o640, 0o604] {
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(mode)).unwrap();
        let out = panel()
            .args(["node", "run", "--insecure-loopback", "--config"])
            .arg(&config)
            .args(["--listen", &format!("127.0.0.1:{}", free_port())])
            .output()
            .unwrap();
        assert!(!out.status.success(), "mode {mode:o} accepted");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(&format!("mode {mode:04o}")), "{err}");
        assert!(err.contains("chmod 600"), "{err}");
    }
    // A missing judge section is named too.
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
    std::fs::write(&config, "key_file = \"arbiter.key\"\ndata_dir = \"data\"\n").unwrap();
    let out = panel()
        .args(["node", "run", "--insecure-loopback", "--config"])
        .arg(&config)
        .args(["--listen", &format!("127.0.0.1:{}", free_port())])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("no [judge] section"));
}

#[test]
fn rotation_and_revocation_documents_verify() {
    let dir = tempfile::tempdir().unwrap();
    let (old, new) = (dir.path().join("old.key"), dir.path().join("new.key"));
    let (ko, kn) = (keygen(&old), keygen(&new));
    let out = panel()
        .args(["node", "rotate", "--reason", "yearly", "--old"])
        .arg(&old)
        .arg("--new")
        .arg(&new)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let doc = KeyRotation::decode(
        hex::decode(text.lines().last().unwrap())
            .unwrap()
            .as_slice(),
    )
    .unwrap();
    let (o, n) = keys::verify_rotation(&doc).unwrap();
    assert_eq!((o, n), (ko.verifying_key(), kn.verifying_key()));
    assert_eq!(doc.reason, "yearly");

    let out = panel()
        .args([
            "node",
            "revoke",
            "--reason",
            "compromised",
            "--effective-from",
            "1000",
            "--key",
        ])
        .arg(&old)
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let mut doc = KeyRevocation::decode(
        hex::decode(text.lines().last().unwrap())
            .unwrap()
            .as_slice(),
    )
    .unwrap();
    assert_eq!(keys::verify_revocation(&doc).unwrap(), ko.verifying_key());
    doc.effective_from_unix_ms = 5_000;
    assert!(
        keys::verify_revocation(&doc).is_err(),
        "tampered revocation verifies"
    );
}
