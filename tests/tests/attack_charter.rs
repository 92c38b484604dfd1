//! Attacks on the federation charter (docs/SECURITY.md, "Charter and registrations")
//! against a real TLS group whose first record entry is its charter:
//! - a registration without the organisation's endorsement, endorsed by another
//!   organisation's key, naming an organisation the charter does not list, or registering
//!   a key its sender does not hold is refused, over real sockets, naming what is missing;
//! - the record verifies against the federation's own charter and fails against another
//!   federation's, and a record whose charter was swapped to re-attest an arbiter under an
//!   attacker's key fails against the trusted charter;
//! - the motion key rotates only with both organisations' endorsements and the new key's
//!   own signature, a rotation cannot be replayed, and the record with the rotation
//!   verifies against the charter.

use std::path::Path;
use std::process::Output;

use ed25519_dalek::SigningKey;
use panel_machine::Stance;
use panel_machine::command::ArbiterRegistration;
use panel_machine::features::charter_rules::attest;
use panel_machine::{ClientCommand, Command};
use panel_tests::panel;
use panel_tests::tls::{TlsCluster, issue, start_cluster, start_issued};
use panel_transport::pki;
use serde_json::Value;

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `panel ARGS --addr ... --tls <client>` against the TLS group.
fn cli(c: &TlsCluster, args: &[&str]) -> Output {
    panel()
        .args(args)
        .arg("--addr")
        .arg(c.addrs.join(","))
        .arg("--tls")
        .arg(c.pki.dir(pki::LOCAL_CLIENT))
        .output()
        .expect("run panel")
}

fn keygen(dir: &Path, name: &str) -> std::path::PathBuf {
    let path = dir.join(format!("{name}.key"));
    let out = panel()
        .args(["node", "keygen", "--out"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    path
}

fn register(c: &TlsCluster, id: &str, key: &Path, org: &str, org_key: Option<&Path>) -> Output {
    let key = key.to_str().unwrap();
    let mut args = vec![
        "arbiter",
        "register",
        "--id",
        id,
        "--key-file",
        key,
        "--organisation",
        org,
        "--model-family",
        "fam",
        "--stance",
        "A",
        "--endpoint",
        "link",
    ];
    let org_key = org_key.map(|p| p.to_str().unwrap().to_owned());
    if let Some(k) = &org_key {
        args.extend(["--org-key", k]);
    }
    cli(c, &args)
}

/// Waits until the group is chartered: a read of the arbiters answers.
fn wait_chartered(c: &TlsCluster) {
    let start = std::time::Instant::now();
    loop {
        let out = cli(c, &["arbiter", "list", "--json"]);
        if out.status.success() {
            return;
        }
        assert!(
            start.elapsed() < std::time::Duration::from_secs(30),
            "the group never answered: {}",
            text(&out.stderr)
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

#[test]
fn registrations_need_possession_and_the_organisations_endorsement() {
    let root = tempfile::tempdir().unwrap();
    let c = start_cluster(root.path());
    wait_chartered(&c);
    let keys = root.path().join("keys");
    std::fs::create_dir_all(&keys).unwrap();
    let honest = keygen(&keys, "honest");
    let north = c.pki.signing_key_path("northwind");
    let south = c.pki.signing_key_path("southbank");

    // No endorsement at all: the pre-charter form of a registration.
    let out = register(&c, "arb-1", &honest, "northwind", None);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("no attestation"),
        "{}",
        text(&out.stderr)
    );

    // Endorsed by the other organisation's roster key.
    let out = register(&c, "arb-1", &honest, "northwind", Some(&south));
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("endorsement"),
        "{}",
        text(&out.stderr)
    );

    // An organisation the charter does not list.
    let out = register(&c, "arb-1", &honest, "eastside", Some(&north));
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("not in the federation charter"),
        "{}",
        text(&out.stderr)
    );

    // The honest key registered by someone who does not hold it, with a real endorsement
    // (an organisation's insider trying to pass off another arbiter's key as its own).
    let honest_key = panel_node::keyfile::load_key(&honest).unwrap();
    let thief = SigningKey::from_bytes(&[42; 32]);
    let roster = pki::read_seed_key(&north).unwrap();
    let mut stolen = ArbiterRegistration {
        arbiter_id: "impostor".into(),
        public_key: hex::encode(honest_key.verifying_key().to_bytes()).into(),
        organisation: "northwind".into(),
        model_family: "fam".into(),
        stance: Stance::B,
        endpoint: "link".into(),
        attestation: None,
        lineage: None,
    };
    stolen.attestation = Some(attest(&stolen, &thief, &roster).unwrap());
    let json =
        serde_json::to_string(&Command::from(ClientCommand::RegisterArbiter(stolen))).unwrap();
    let out = panel()
        .args(["coordinator", "write", "--addr", &c.addrs.join(",")])
        .args([
            "--client-id",
            "thief",
            "--request-id",
            "1",
            "--command",
            &json,
        ])
        .arg("--tls")
        .arg(c.pki.dir(pki::LOCAL_CLIENT))
        .output()
        .unwrap();
    let reply: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    assert_eq!(
        reply["applied"],
        Value::Bool(false),
        "{reply} {}",
        text(&out.stderr)
    );
    assert!(
        reply["result"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("proof of possession")),
        "{reply}"
    );

    // Nothing above was registered; the proper registration is.
    let list = cli(&c, &["arbiter", "list", "--json"]);
    assert!(!text(&list.stdout).contains("arb-1") && !text(&list.stdout).contains("impostor"));
    let out = register(&c, "arb-1", &honest, "northwind", Some(&north));
    assert!(out.status.success(), "{}", text(&out.stderr));
    // The same key cannot be registered twice, even properly endorsed.
    let out = register(&c, "arb-2", &honest, "northwind", Some(&north));
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("key_in_use") || text(&out.stderr).contains("own key"));
}

fn verify(record: &Path, charter: Option<&Path>) -> Output {
    let mut cmd = panel();
    cmd.arg("verify").arg(record);
    if let Some(c) = charter {
        cmd.arg("--charter").arg(c);
    }
    cmd.output().unwrap()
}

#[test]
fn the_record_verifies_only_against_its_own_charter() {
    let root = tempfile::tempdir().unwrap();
    let c = start_cluster(root.path());
    wait_chartered(&c);
    let keys = root.path().join("keys");
    std::fs::create_dir_all(&keys).unwrap();
    let honest = keygen(&keys, "honest");
    let out = register(
        &c,
        "arb-1",
        &honest,
        "northwind",
        Some(&c.pki.signing_key_path("northwind")),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let record = root.path().join("record.json");
    let out = cli(&c, &["export", "--out", record.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));

    let bundle: Value = serde_json::from_slice(&std::fs::read(&record).unwrap()).unwrap();
    assert!(
        bundle["entries"][0]["command"]["AdoptCharter"].is_object(),
        "the charter is the record's first entry"
    );
    let ok = verify(&record, Some(&c.pki.charter_path()));
    assert!(ok.status.success(), "{}", text(&ok.stderr));
    assert!(text(&ok.stdout).contains("the trusted charter"));
    let untrusted = verify(&record, None);
    assert!(untrusted.status.success());
    assert!(text(&untrusted.stdout).contains("no trust anchor was given"));

    // Another federation's charter is not this record's.
    let other = pki::issue(&pki::local_plan(3, &[]), &root.path().join("other")).unwrap();
    let e = verify(&record, Some(&other.charter_path()));
    assert_eq!(e.status.code(), Some(1), "{}", text(&e.stdout));
    assert!(
        text(&e.stderr).contains("not the trusted charter"),
        "{}",
        text(&e.stderr)
    );

    // Swap northwind's roster key in the record's charter for an attacker's and re-attest
    // the arbiter under a key of the attacker's: against the trusted charter it fails.
    let attacker_org = SigningKey::from_bytes(&[77; 32]);
    let attacker_arb = SigningKey::from_bytes(&[78; 32]);
    let mut forged = bundle.clone();
    let orgs = forged["entries"][0]["command"]["AdoptCharter"]["organisations"]
        .as_array_mut()
        .unwrap();
    for o in orgs.iter_mut() {
        if o["name"] == "northwind" {
            o["signing_key"] = hex::encode(attacker_org.verifying_key().to_bytes()).into();
        }
    }
    let entries = forged["entries"].as_array_mut().unwrap();
    let reg_entry = entries
        .iter_mut()
        .find(|e| e["command"]["RegisterArbiter"].is_object())
        .unwrap();
    let mut reg: ArbiterRegistration =
        serde_json::from_value(reg_entry["command"]["RegisterArbiter"].clone()).unwrap();
    reg.public_key = hex::encode(attacker_arb.verifying_key().to_bytes()).into();
    reg.attestation = Some(attest(&reg, &attacker_arb, &attacker_org).unwrap());
    reg_entry["command"]["RegisterArbiter"] = serde_json::to_value(&reg).unwrap();
    let forged_path = root.path().join("forged.json");
    std::fs::write(&forged_path, serde_json::to_vec(&forged).unwrap()).unwrap();
    let e = verify(&forged_path, Some(&c.pki.charter_path()));
    assert_eq!(e.status.code(), Some(1), "{}", text(&e.stdout));
    assert!(text(&e.stderr).contains("charter"), "{}", text(&e.stderr));
}

/// `panel org endorse-rotation` by `org` of a rotation to `to`: the signature it prints.
fn endorse_rotation(c: &TlsCluster, to: &str, org: &str) -> String {
    let out = panel()
        .args(["org", "endorse-rotation", "--charter"])
        .arg(c.pki.charter_path())
        .args(["--to", to, "--org-key"])
        .arg(c.pki.signing_key_path(org))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    text(&out.stdout).trim().to_owned()
}

#[test]
fn the_motion_key_rotates_only_with_the_organisations_endorsements() {
    let root = tempfile::tempdir().unwrap();
    let next = root.path().join("next-motion.key");
    let out = panel()
        .args(["coordinator", "motion-keygen"])
        .arg(&next)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    // Every replica holds the next key before the rotation, as docs/COORDINATOR.md says.
    let issued = issue(root.path(), &[("arb-x", "northwind")]);
    let c = start_issued(
        root.path(),
        issued,
        &["--next-motion-key".into(), next.display().to_string()],
    );
    wait_chartered(&c);
    let to = hex::encode(
        panel_coordinator::service::motion_key::load(&next)
            .unwrap()
            .verifying_key()
            .to_bytes(),
    );
    let north = endorse_rotation(&c, &to, "northwind");
    let south = endorse_rotation(&c, &to, "southbank");
    let charter = c.pki.charter_path();
    let rotate = |endorsements: &[String]| {
        let mut args = vec![
            "org".to_owned(),
            "rotate-motion-key".into(),
            "--charter".into(),
            charter.display().to_string(),
            "--new-key".into(),
            next.display().to_string(),
        ];
        for e in endorsements {
            args.extend(["--endorsement".into(), e.clone()]);
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        cli(&c, &args)
    };
    // One organisation alone cannot rotate the key, nor sign for the other.
    let alone = rotate(&[format!("northwind={north}")]);
    assert!(!alone.status.success());
    assert!(
        text(&alone.stderr).contains("the charter requires 2"),
        "{}",
        text(&alone.stderr)
    );
    let posing = rotate(&[format!("northwind={north}"), format!("southbank={north}")]);
    assert!(!posing.status.success());
    assert!(
        text(&posing.stderr).contains("endorsements[1] by \"southbank\""),
        "{}",
        text(&posing.stderr)
    );
    // Both organisations: rotated.
    let both = [format!("northwind={north}"), format!("southbank={south}")];
    let done = rotate(&both);
    assert!(done.status.success(), "{}", text(&done.stderr));
    assert!(
        text(&done.stdout).contains(&format!("motion key rotated to {to}")),
        "{}",
        text(&done.stdout)
    );
    // The same signatures again: the next rotation is number 2, so this one is refused.
    let replayed = rotate(&both);
    assert!(!replayed.status.success());
    assert!(
        text(&replayed.stderr).contains("the next rotation of this federation is 2"),
        "{}",
        text(&replayed.stderr)
    );
    let record = root.path().join("record.json");
    let out = cli(&c, &["export", "--out", record.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let bundle: Value = serde_json::from_slice(&std::fs::read(&record).unwrap()).unwrap();
    assert!(
        bundle["entries"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["command"]["RotateMotionKey"]["to"] == to.as_str()),
        "the rotation is on the record"
    );
    let ok = verify(&record, Some(&charter));
    assert!(ok.status.success(), "{}", text(&ok.stderr));
}
