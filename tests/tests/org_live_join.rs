//! A federation that grows and shrinks while it runs, through the real binary and real
//! processes (docs/FEDERATION.md): three TLS replicas of two founding organisations; a
//! third organisation writes its own folder (`panel org init --federation-ca`), is refused
//! by every replica, is endorsed by both founders and admitted by entry, and from then on
//! its client writes, its arbiter registers, and its node links out, takes the exam and is
//! admitted, with no file edited and no process restarted; it rotates its roster key by
//! entry (the old key stops endorsing, the new one endorses); then the founders remove it
//! by entry, and its client is refused again. Waits poll with generous deadlines; nothing
//! here asserts a timing (the times are printed for the record).

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

use panel_tests::panel;
use panel_tests::run_folder::{log_file, logs, poll};
use panel_tests::tls::{TlsCluster, issue, start_configured};
use panel_tests::tls_node::{self, NodeSpec, cli_until_ok};
use panel_transport::pki;

const NEWCOMER: &str = "eastgate";
const ARBITER: &str = "east-judge";
const DEADLINE: Duration = Duration::from_secs(150);

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn ok(args: &[&str]) -> String {
    let out = panel().args(args).output().expect("run panel");
    assert!(
        out.status.success(),
        "panel {args:?}: {}",
        text(&out.stderr)
    );
    text(&out.stdout)
}

/// `panel ARGS --addr <all replicas> --tls <identity>`.
fn as_identity(c: &TlsCluster, identity: &Path, args: &[&str]) -> Output {
    panel()
        .args(args)
        .arg("--addr")
        .arg(c.addrs.join(","))
        .arg("--tls")
        .arg(identity)
        .output()
        .expect("run panel")
}

/// Both founders' signatures, by `sign` (the endorse command without its `--org-key`).
fn endorsements(c: &TlsCluster, sign: &[&str]) -> Vec<String> {
    ["northwind", "southbank"]
        .iter()
        .map(|org| {
            let key = c.pki.signing_key_path(org);
            let mut args = sign.to_vec();
            args.extend(["--org-key", key.to_str().unwrap()]);
            format!("{org}={}", ok(&args).trim())
        })
        .collect()
}

fn with_endorsements(args: &[&str], endorsements: &[String]) -> Vec<String> {
    let mut v: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
    for e in endorsements {
        v.push("--endorsement".into());
        v.push(e.clone());
    }
    v
}

fn start(root: &Path) -> TlsCluster {
    let issued = issue(root, &[]);
    start_configured(root, issued, |id, cmd| {
        // The scripted judge answers from the simulation's truth hint (a test double of
        // a judge, named as such; docs/WIRE.md section 7), so its exam can be passed.
        cmd.args(["--exam-window-ms", "3000", "--commit-window-ms", "300"])
            .arg("--simulation");
        let (out, err) = log_file(root, &format!("replica-{id}"));
        cmd.env("RUST_LOG", "info").stdout(out).stderr(err);
    })
}

#[test]
fn an_organisation_joins_serves_and_is_removed_without_a_restart() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let c = start(root);
    cli_until_ok(root, &c, &["arbiter", "list", "--json"]);
    let began = Instant::now();
    let mut times: Vec<(&str, Duration)> = Vec::new();

    // The newcomer's own folder, with the federation's public ca.pem.
    let east: PathBuf = root.join("east");
    let federation_ca = c.pki.root.join("ca.pem");
    ok(&[
        "org",
        "init",
        "--name",
        NEWCOMER,
        "--hosts",
        "127.0.0.1",
        "--federation-ca",
        federation_ca.to_str().unwrap(),
        "--out",
        east.to_str().unwrap(),
    ]);
    ok(&[
        "pki",
        "issue",
        "--pki",
        east.to_str().unwrap(),
        "--org",
        NEWCOMER,
        "--node",
        ARBITER,
    ]);
    let client = east.join(pki::client_dir_name(NEWCOMER));
    let entry = east.join("organisation.json");

    // Before its admission every replica refuses its certificate.
    let before = as_identity(&c, &client, &["arbiter", "list", "--json"]);
    assert!(
        !before.status.success(),
        "a replica let in an organisation the record does not hold"
    );

    // Both founders endorse the entry; the founders' client submits it.
    let signed = endorsements(
        &c,
        &[
            "org",
            "endorse",
            "--organisation-file",
            entry.to_str().unwrap(),
        ],
    );
    let admit = with_endorsements(
        &[
            "org",
            "admit",
            "--organisation-file",
            entry.to_str().unwrap(),
        ],
        &signed,
    );
    let admit: Vec<&str> = admit.iter().map(String::as_str).collect();
    let out = cli_until_ok(root, &c, &admit);
    assert!(out.contains("admitted"), "{out}");
    times.push(("admitted by entry", began.elapsed()));

    // Its client connects (each replica trusts it once it has applied the entry).
    poll(root, "the newcomer's client is let in", DEADLINE, || {
        as_identity(&c, &client, &["arbiter", "list", "--json"])
            .status
            .success()
            .then_some(())
    });
    times.push(("its client connects", began.elapsed()));

    // Its arbiter registers under its roster key, through its own client.
    let node_dir = root.join("east-node");
    std::fs::create_dir_all(&node_dir).unwrap();
    let key = node_dir.join("arbiter.key");
    ok(&["node", "keygen", "--out", key.to_str().unwrap()]);
    let roster = east.join("orgs").join(NEWCOMER).join("signing.key");
    let out = as_identity(
        &c,
        &client,
        &[
            "arbiter",
            "register",
            "--id",
            ARBITER,
            "--key-file",
            key.to_str().unwrap(),
            "--organisation",
            NEWCOMER,
            "--model-family",
            "fam",
            "--stance",
            "A",
            "--endpoint",
            "link",
            "--org-key",
            roster.to_str().unwrap(),
            "--json",
        ],
    );
    assert!(out.status.success(), "register: {}", text(&out.stderr));

    // Its node links out to every replica, is examined over its link and admitted.
    let spec = NodeSpec {
        arbiter: ARBITER,
        organisation: NEWCOMER,
        identity: "",
        log: "east-node",
    };
    let identity = east.join(pki::node_dir_name(ARBITER));
    let _node = tls_node::start_node_in(
        root,
        &c,
        &node_dir,
        &spec,
        &identity,
        &[c.addrs.join(",").as_str()],
    );
    let shown = poll(
        root,
        "the newcomer's arbiter passes its exam",
        DEADLINE,
        || {
            let out = cli_until_ok(root, &c, &["arbiter", "show", ARBITER, "--json"]);
            let v: serde_json::Value = serde_json::from_str(&out).ok()?;
            v.get("exam").filter(|e| !e.is_null())?;
            Some(v)
        },
    );
    assert_eq!(
        shown["admitted"],
        true,
        "the newcomer's arbiter was examined but not admitted: {shown}\n{}",
        logs(root)
    );
    times.push(("its arbiter is examined and admitted", began.elapsed()));
    // Its node's own transport follows the record too (a majority of the replicas report
    // eastgate in force), so other members' nodes can deliver to it and it to them.
    let node_log = root.join("logs").join("east-node.log");
    poll(
        root,
        "the node trusts what the record holds",
        DEADLINE,
        || {
            let text = std::fs::read_to_string(&node_log).ok()?;
            text.contains("the record changed the organisations this node trusts")
                .then_some(())
        },
    );

    // It rotates its roster key, with its own and a founder's endorsement: from then on
    // (no overlap asked) only the new key endorses its arbiters.
    let charter = c.pki.charter_path();
    let new_roster = east.join("roster-2.key");
    ok(&["coordinator", "motion-keygen", new_roster.to_str().unwrap()]);
    let new_public = ok(&["org", "fingerprint", "--json", new_roster.to_str().unwrap()]);
    let new_public: serde_json::Value = serde_json::from_str(new_public.trim()).unwrap();
    let new_public = new_public["public_key"]
        .as_str()
        .expect("a public key")
        .to_owned();
    let rotation = [
        "--charter",
        charter.to_str().unwrap(),
        "--organisation-file",
        entry.to_str().unwrap(),
        "--overlap-ms",
        "0",
    ];
    let endorse = |org: &str, key: &Path| {
        let mut args = vec!["org", "endorse-roster-rotation"];
        args.extend(rotation);
        args.extend(["--to", &new_public, "--org-key", key.to_str().unwrap()]);
        format!("{org}={}", ok(&args).trim())
    };
    let signed = [
        endorse(NEWCOMER, &roster),
        endorse("northwind", &c.pki.signing_key_path("northwind")),
    ];
    let mut rotate = vec!["org", "rotate-roster-key"];
    rotate.extend(rotation);
    rotate.extend(["--new-key", new_roster.to_str().unwrap()]);
    let rotate = with_endorsements(&rotate, &signed);
    let rotate: Vec<&str> = rotate.iter().map(String::as_str).collect();
    let out = as_identity(&c, &client, &rotate);
    assert!(out.status.success(), "rotate: {}", text(&out.stderr));
    times.push(("its roster key rotated", began.elapsed()));
    let register_second = |org_key: &Path, key_name: &str| {
        let key = node_dir.join(key_name);
        ok(&["node", "keygen", "--out", key.to_str().unwrap()]);
        as_identity(
            &c,
            &client,
            &[
                "arbiter",
                "register",
                "--id",
                "east-judge-2",
                "--key-file",
                key.to_str().unwrap(),
                "--organisation",
                NEWCOMER,
                "--model-family",
                "fam",
                "--stance",
                "B",
                "--endpoint",
                "link",
                "--org-key",
                org_key.to_str().unwrap(),
                "--json",
            ],
        )
    };
    let old = register_second(&roster, "second-old.key");
    assert!(
        !old.status.success(),
        "the replaced roster key still endorsed"
    );
    assert!(
        text(&old.stderr).contains("endorsement"),
        "{}",
        text(&old.stderr)
    );
    let new = register_second(&new_roster, "second-new.key");
    assert!(
        new.status.success(),
        "the new roster key: {}",
        text(&new.stderr)
    );

    // A removal endorsed by one founder alone is refused.
    let sign_removal = [
        "org",
        "endorse-removal",
        "--charter",
        charter.to_str().unwrap(),
        "--organisation-file",
        entry.to_str().unwrap(),
    ];
    let signed = endorsements(&c, &sign_removal);
    let alone = with_endorsements(&["org", "remove", "--name", NEWCOMER], &signed[..1]);
    let alone: Vec<&str> = alone.iter().map(String::as_str).collect();
    let out = as_identity(&c, &c.pki.dir(pki::LOCAL_CLIENT), &alone);
    assert!(!out.status.success(), "one founder removed a member alone");
    assert!(
        text(&out.stderr).contains("it takes 2"),
        "{}",
        text(&out.stderr)
    );

    // Both founders remove it; from then on every replica refuses its certificate.
    let remove = with_endorsements(&["org", "remove", "--name", NEWCOMER], &signed);
    let remove: Vec<&str> = remove.iter().map(String::as_str).collect();
    let out = cli_until_ok(root, &c, &remove);
    assert!(out.contains("removed"), "{out}");
    times.push(("removed by entry", began.elapsed()));
    poll(
        root,
        "the removed organisation's client is refused",
        DEADLINE,
        || {
            (!as_identity(&c, &client, &["arbiter", "list", "--json"])
                .status
                .success())
            .then_some(())
        },
    );
    times.push(("its client is refused", began.elapsed()));
    for (what, at) in times {
        eprintln!("{:>8.1} s  {what}", at.as_secs_f64());
    }
}
