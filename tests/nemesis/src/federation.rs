//! The federation across hosts (docs/FEDERATION.md "Across hosts"): while the nemesis's
//! writers, reader and sampler run, three organisations' processes on hosts of their own
//! (network namespaces with private addresses, [`crate::net`]) join, serve, ride out a
//! partition and a rolling restart of every replica, and the history checker then judges
//! the whole run like any other nemesis run.
//!
//! Hosts: 1-3 the replicas (northwind, southbank, northwind), 4 northwind's witness and
//! node, 5 southbank's witness and node, 6 the node of eastgate, which joins by entry
//! with the commands of docs/FEDERATION.md. Every process is the real `panel` binary; every
//! command a person would type is run as a command. No file is edited and nothing but the
//! replicas of the rolling restart is restarted. At the end the founders remove eastgate
//! by entry and its client is refused.

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use panel_coordinator::pb::coordinator as pb;
use panel_machine::features::checkpoints::CheckpointsReply;
use panel_tests::ChildGuard;
use panel_transport::pki;

use crate::cluster::{Cluster, ClusterError, Layout};
use crate::net::Net;
use crate::run::{Shared, read};

/// The organisation that joins while the federation runs.
pub const NEWCOMER: &str = "eastgate";
const NEWCOMER_HOST: u64 = 6;
const WITNESS_PORT: u16 = 7401;
/// How long one step of the scenario may take before the run fails.
const STEP: Duration = Duration::from_secs(120);

/// Hosts of the founders' witnesses and nodes, by organisation.
const FOUNDER_HOSTS: [(&str, u64); 2] = [("northwind", 4), ("southbank", 5)];

/// The layout: three replicas and three more hosts; the replicas push checkpoints to both
/// witnesses, examine nodes with the simulation's truth hint (the nodes run the scripted
/// judge, a test double named as such in docs/WIRE.md section 7) and run short windows.
pub fn layout() -> Layout {
    Layout {
        replicas: 3,
        hosts: 6,
        extra_args: extra_replica_args,
    }
}

fn extra_replica_args(net: &Net) -> Vec<String> {
    let mut args: Vec<String> = [
        "--simulation",
        "--exam-window-ms",
        "3000",
        "--commit-window-ms",
        "300",
        "--checkpoint-every-ms",
        "500",
    ]
    .map(str::to_owned)
    .to_vec();
    for (_, host) in FOUNDER_HOSTS {
        args.push("--witness".into());
        args.push(witness_url(net, host));
    }
    args
}

fn witness_url(net: &Net, host: u64) -> String {
    format!("http://{}:{WITNESS_PORT}", net.peer_ip(host))
}

/// The processes the scenario started; they stop when this is dropped.
pub struct Hosts {
    _processes: Vec<ChildGuard>,
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn setup(what: impl Into<String>, detail: impl Into<String>) -> ClusterError {
    ClusterError::Setup {
        what: what.into(),
        detail: detail.into(),
    }
}

/// Runs `panel ARGS` in the test's own namespace; an error unless it succeeds.
fn panel(args: &[&str]) -> Result<String, ClusterError> {
    let out = run_panel(args, None)?;
    if out.status.success() {
        Ok(text(&out.stdout))
    } else {
        Err(setup(
            format!("panel {}", args.join(" ")),
            text(&out.stderr),
        ))
    }
}

/// `panel ARGS`, with `--addr <every replica> --tls <identity>` when `identity` is given.
fn run_panel(args: &[&str], identity: Option<(&Cluster, &Path)>) -> Result<Output, ClusterError> {
    let mut cmd = std::process::Command::new(panel_tests::panel_bin());
    cmd.args(args).stdin(Stdio::null());
    if let Some((cluster, dir)) = identity {
        cmd.args(["--addr", &cluster.client_addrs()])
            .arg("--tls")
            .arg(dir);
    }
    cmd.output()
        .map_err(|e| setup(format!("run panel {}", args.join(" ")), e.to_string()))
}

/// `panel ARGS` as `identity`, retried until it succeeds or `STEP` passes.
fn until_ok(cluster: &Cluster, identity: &Path, args: &[&str]) -> Result<String, ClusterError> {
    let t = Instant::now();
    loop {
        let out = run_panel(args, Some((cluster, identity)))?;
        if out.status.success() {
            return Ok(text(&out.stdout));
        }
        if t.elapsed() > STEP {
            return Err(setup(
                format!("panel {}", args.join(" ")),
                text(&out.stderr),
            ));
        }
        std::thread::sleep(Duration::from_millis(300));
    }
}

/// [`until_ok`] of a `--json` command, its output decoded.
fn json_until_ok(
    cluster: &Cluster,
    identity: &Path,
    args: &[&str],
) -> Result<serde_json::Value, ClusterError> {
    let out = until_ok(cluster, identity, args)?;
    serde_json::from_str(&out)
        .map_err(|e| setup(format!("panel {}", args.join(" ")), format!("{e}: {out}")))
}

/// Polls `f` every 300 ms until it gives a value or `STEP` passes.
fn poll<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> Result<T, ClusterError> {
    let t = Instant::now();
    loop {
        if let Some(v) = f() {
            return Ok(v);
        }
        if t.elapsed() > STEP {
            return Err(setup(what, format!("not within {} s", STEP.as_secs())));
        }
        std::thread::sleep(Duration::from_millis(300));
    }
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap_or_default()
}

/// A process on `host`, its output appended to `root/logs/NAME.log`.
fn spawn_on(
    cluster: &Cluster,
    host: u64,
    name: &str,
    args: &[&str],
) -> Result<ChildGuard, ClusterError> {
    let logs = cluster.root.join("logs");
    std::fs::create_dir_all(&logs).map_err(|e| setup("create the logs folder", e.to_string()))?;
    let log = std::fs::File::create(logs.join(format!("{name}.log")))
        .and_then(|f| Ok((f.try_clone()?, f)))
        .map_err(|e| setup(format!("log of {name}"), e.to_string()))?;
    let mut cmd = cluster.net.exec_in(host, &panel_tests::panel_bin());
    cmd.args(args)
        .env("RUST_LOG", "info")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(log.0)
        .stderr(log.1);
    Ok(ChildGuard::spawn(name.to_owned(), cmd))
}

/// Each founder's witness on its own host, with its organisation's key.
fn start_witnesses(cluster: &Cluster) -> Result<Vec<ChildGuard>, ClusterError> {
    FOUNDER_HOSTS
        .iter()
        .map(|(org, host)| {
            let data = cluster.root.join(format!("witness-{org}"));
            let key = cluster.pki.witness_key_path(org);
            spawn_on(
                cluster,
                *host,
                &format!("witness-{org}"),
                &[
                    "witness",
                    "run",
                    "--listen",
                    &format!("0.0.0.0:{WITNESS_PORT}"),
                    "--data",
                    s(&data),
                    "--key",
                    s(&key),
                    "--name",
                    &pki::witness_name(org),
                    "--charter",
                    s(&cluster.pki.charter_path()),
                ],
            )
        })
        .collect()
}

/// One arbiter and its node: the node's certificate issued into `pki_dir` with
/// `panel pki issue`, the arbiter's key generated and registered under `roster` through
/// `client`, and `panel node run` started on `host`, linking out to every replica.
struct Arbiter<'a> {
    id: &'a str,
    organisation: &'a str,
    stance: &'a str,
    host: u64,
    pki_dir: &'a Path,
    roster: &'a Path,
    client: &'a Path,
}

fn start_arbiter(cluster: &Cluster, a: &Arbiter<'_>) -> Result<ChildGuard, ClusterError> {
    panel(&[
        "pki",
        "issue",
        "--pki",
        s(a.pki_dir),
        "--org",
        a.organisation,
        "--node",
        a.id,
    ])?;
    let dir = cluster.root.join(format!("node-{}", a.id));
    std::fs::create_dir_all(&dir).map_err(|e| setup("node folder", e.to_string()))?;
    let key = dir.join("arbiter.key");
    panel(&["node", "keygen", "--out", s(&key)])?;
    until_ok(
        cluster,
        a.client,
        &[
            "arbiter",
            "register",
            "--id",
            a.id,
            "--key-file",
            s(&key),
            "--organisation",
            a.organisation,
            "--model-family",
            "scripted",
            "--stance",
            a.stance,
            "--endpoint",
            "link",
            "--org-key",
            s(a.roster),
            "--json",
        ],
    )?;
    let motion_key = pki::read_seed_key(&cluster.pki.motion_key_path())?;
    let config = format!(
        "listen = \"127.0.0.1:7601\"\nkey_file = \"{}\"\ndata_dir = \"{}\"\n\
         organisation = \"{}\"\nmodel_family = \"scripted\"\ncoordinator_keys = [\"{}\"]\n\n\
         [judge]\nkind = \"scripted\"\nprofiles = \"{}\"\nprofile = \"perfect\"\n\n\
         [transport]\ntls = \"{}\"\ncharter = \"{}\"\n",
        key.display(),
        dir.join("data").display(),
        a.organisation,
        hex::encode(motion_key.verifying_key().to_bytes()),
        dir.join("profiles.toml").display(),
        a.pki_dir.join(pki::node_dir_name(a.id)).display(),
        cluster.pki.charter_path().display(),
    );
    std::fs::write(
        dir.join("profiles.toml"),
        "[profiles.perfect]\naccuracy = 1.0\nseed = 1\n",
    )
    .and_then(|()| std::fs::write(dir.join("node.toml"), config))
    .map_err(|e| setup("node configuration", e.to_string()))?;
    spawn_on(
        cluster,
        a.host,
        &format!("node-{}", a.id),
        &[
            "node",
            "run",
            "--config",
            s(&dir.join("node.toml")),
            "--arbiter-id",
            a.id,
            "--connect",
            &cluster.peer_addrs().join(","),
        ],
    )
}

/// Waits until `arbiter` was examined, and fails unless it was admitted.
fn wait_admitted(cluster: &Cluster, client: &Path, arbiter: &str) -> Result<(), ClusterError> {
    let shown = poll(&format!("{arbiter} examined"), || {
        let v = json_until_ok(cluster, client, &["arbiter", "show", arbiter, "--json"]).ok()?;
        v.get("exam").filter(|e| !e.is_null())?;
        Some(v)
    })?;
    if shown["admitted"] == true {
        Ok(())
    } else {
        Err(setup(format!("{arbiter} admission"), shown.to_string()))
    }
}

/// The newcomer's folder, as `panel org init` writes it.
struct Newcomer {
    dir: PathBuf,
    client: PathBuf,
    entry: PathBuf,
    roster: PathBuf,
}

fn init_newcomer(cluster: &Cluster) -> Result<Newcomer, ClusterError> {
    let dir = cluster.root.join(NEWCOMER);
    panel(&[
        "org",
        "init",
        "--name",
        NEWCOMER,
        "--hosts",
        &cluster.net.peer_ip(NEWCOMER_HOST),
        "--federation-ca",
        s(&cluster.pki.root.join("ca.pem")),
        "--out",
        s(&dir),
    ])?;
    Ok(Newcomer {
        client: dir.join(pki::client_dir_name(NEWCOMER)),
        entry: dir.join("organisation.json"),
        roster: dir.join("orgs").join(NEWCOMER).join("signing.key"),
        dir,
    })
}

/// Both founders sign with `sign` (an endorse command, less its `--org-key`) using their
/// roster keys, and the founders' client submits `submit` with both endorsements; its
/// output must say `done`.
fn by_both_founders(
    cluster: &Cluster,
    sign: &[&str],
    submit: &[&str],
    done: &str,
) -> Result<(), ClusterError> {
    let mut args: Vec<String> = submit.iter().map(|a| (*a).to_owned()).collect();
    for (org, _) in FOUNDER_HOSTS {
        let key = cluster.pki.signing_key_path(org);
        let mut signing = sign.to_vec();
        signing.extend(["--org-key", s(&key)]);
        let signed = panel(&signing)?;
        args.push("--endorsement".into());
        args.push(format!("{org}={}", signed.trim()));
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = until_ok(cluster, &cluster.pki.dir(pki::LOCAL_CLIENT), &args)?;
    if out.contains(done) {
        Ok(())
    } else {
        Err(setup(submit.join(" "), out))
    }
}

/// The newcomer's admission, endorsed by both founders.
fn admit(cluster: &Cluster, newcomer: &Newcomer) -> Result<(), ClusterError> {
    let entry = s(&newcomer.entry);
    by_both_founders(
        cluster,
        &["org", "endorse", "--organisation-file", entry],
        &["org", "admit", "--organisation-file", entry],
        "admitted",
    )
}

/// The newcomer's removal, endorsed by both founders.
fn remove(cluster: &Cluster, newcomer: &Newcomer) -> Result<(), ClusterError> {
    let charter = cluster.pki.charter_path();
    by_both_founders(
        cluster,
        &[
            "org",
            "endorse-removal",
            "--charter",
            s(&charter),
            "--organisation-file",
            s(&newcomer.entry),
        ],
        &["org", "remove", "--name", NEWCOMER],
        "removed",
    )
}

/// A debate of three seats, one per arbiter with a node (the workload's arbiters are not
/// registered in this scenario), asked to advance from framing by the newcomer's client:
/// the panel drawn must seat the newcomer's arbiter, and the motion must be decided by
/// the nodes' commit-reveal round over their links. Returns the decision as shown.
fn seated_panel(cluster: &Cluster, client: &Path) -> Result<String, ClusterError> {
    let debate = json_until_ok(
        cluster,
        client,
        &[
            "debate",
            "new",
            "--resolution",
            "Resolved: a federation can grow while it runs.",
            "--pos-a",
            "yes",
            "--pos-b",
            "no",
            "--seats",
            "3",
            "--min-per-stance",
            "1",
            "--policy",
            "head-count",
            "--simulation",
            "--json",
        ],
    )?;
    let debate = debate["debate_id"]
        .as_str()
        .ok_or_else(|| setup("debate new", debate.to_string()))?
        .to_owned();
    let asked = json_until_ok(
        cluster,
        client,
        &[
            "ask",
            &debate,
            "--advance",
            "framing",
            "--expect",
            "yes",
            "--wait",
            "--json",
        ],
    )?;
    let motion = &asked["motion"];
    let id = motion["spec"]["motion_id"].as_str().unwrap_or_default();
    let judge = format!("{NEWCOMER}-judge");
    let seated: Vec<&str> = motion["seats"]
        .as_array()
        .map(|seats| {
            seats
                .iter()
                .filter_map(|seat| seat["arbiter_id"].as_str())
                .collect()
        })
        .unwrap_or_default();
    if !seated.contains(&judge.as_str()) {
        return Err(setup(
            format!("motion {id}"),
            format!("{judge} not seated: {seated:?}"),
        ));
    }
    let accepted = &motion["status"]["Decided"]["Accepted"];
    if accepted.is_null() {
        return Err(setup(
            format!("motion {id}"),
            format!("not accepted: {}", motion["status"]),
        ));
    }
    Ok(format!(
        "motion {id}, seats {seated:?}, accepted {} with tallies {}",
        accepted["outcome"], accepted["tallies"]
    ))
}

/// The latest checkpoint cosigned by both witnesses, read from replica `id`.
async fn cosigned_by_both(cluster: &Cluster, id: u64) -> Option<u64> {
    let mut c = cluster.coordinator(id).ok()?;
    let r = read(
        &mut c,
        r#"{"Checkpoints":{"limit":20}}"#,
        pb::ReadConsistency::Local,
        Duration::from_secs(3),
    )
    .await
    .ok()?;
    let reply: CheckpointsReply = serde_json::from_str(&r.result_json).ok()?;
    reply
        .checkpoints
        .iter()
        .filter(|c| c.cosigned_by.len() >= FOUNDER_HOSTS.len())
        .map(|c| c.size)
        .max()
}

async fn wait_cosigned_beyond(
    cluster: &Cluster,
    size: u64,
    what: &str,
) -> Result<u64, ClusterError> {
    let t = Instant::now();
    loop {
        for id in 1..=cluster.n() as u64 {
            if let Some(s) = cosigned_by_both(cluster, id).await.filter(|s| *s > size) {
                return Ok(s);
            }
        }
        if t.elapsed() > STEP {
            return Err(setup(what, "no checkpoint cosigned by both witnesses"));
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

fn blocking<T>(f: impl FnOnce() -> Result<T, ClusterError>) -> Result<T, ClusterError> {
    tokio::task::block_in_place(f)
}

/// Plays the federation's life while the workload runs; returns one line per step (with
/// its time from the start of the scenario) and the processes to keep until the end.
pub(crate) async fn play(
    shared: &Shared,
    cluster: &mut Cluster,
) -> Result<(Vec<String>, Hosts), ClusterError> {
    let began = Instant::now();
    let mut lines = Vec::new();
    let mut note = |what: String| {
        let line = format!("t+{:.1}s {what}", began.elapsed().as_secs_f64());
        println!("federation: {line}");
        lines.push(line);
    };
    let mut processes = blocking(|| start_witnesses(cluster))?;
    let first = wait_cosigned_beyond(cluster, 0, "the witnesses cosign").await?;
    note(format!(
        "both witnesses (hosts 4, 5) cosign checkpoints (size {first})"
    ));

    // The founders' arbiters, each on its organisation's host.
    let client = cluster.pki.dir(pki::LOCAL_CLIENT);
    for (i, (org, host)) in FOUNDER_HOSTS.iter().enumerate() {
        let id = format!("{org}-judge");
        let roster = cluster.pki.signing_key_path(org);
        let a = Arbiter {
            id: &id,
            organisation: org,
            stance: ["A", "B"][i],
            host: *host,
            pki_dir: &cluster.pki.root,
            roster: &roster,
            client: &client,
        };
        processes.push(blocking(|| start_arbiter(cluster, &a))?);
    }
    for (org, host) in FOUNDER_HOSTS {
        blocking(|| wait_admitted(cluster, &client, &format!("{org}-judge")))?;
        note(format!("{org}'s node on host {host} examined and admitted"));
    }

    // The newcomer: refused, endorsed and admitted by entry, then served.
    let east = blocking(|| init_newcomer(cluster))?;
    let refused = blocking(|| {
        run_panel(
            &["arbiter", "list", "--json"],
            Some((cluster, &east.client)),
        )
    })?;
    if refused.status.success() {
        return Err(setup(
            "before admission",
            "a replica let in an organisation the record does not hold",
        ));
    }
    blocking(|| admit(cluster, &east))?;
    note(format!("{NEWCOMER} admitted by entry"));
    blocking(|| until_ok(cluster, &east.client, &["arbiter", "list", "--json"]))?;
    note(format!(
        "{NEWCOMER}'s client is let in by every replica it tried"
    ));
    let judge = format!("{NEWCOMER}-judge");
    let a = Arbiter {
        id: &judge,
        organisation: NEWCOMER,
        stance: "A",
        host: NEWCOMER_HOST,
        pki_dir: &east.dir,
        roster: &east.roster,
        client: &east.client,
    };
    processes.push(blocking(|| start_arbiter(cluster, &a))?);
    blocking(|| wait_admitted(cluster, &east.client, &judge))?;
    note(format!(
        "{NEWCOMER}'s node on host {NEWCOMER_HOST} examined over its links and admitted"
    ));
    let node_log = cluster.root.join("logs").join(format!("node-{judge}.log"));
    blocking(|| {
        poll("the newcomer's node follows the record", || {
            std::fs::read_to_string(&node_log)
                .ok()?
                .contains("the record changed the organisations this node trusts")
                .then_some(())
        })
    })?;
    note(format!(
        "{NEWCOMER}'s node trusts what a majority of replicas report"
    ));
    let decided = blocking(|| seated_panel(cluster, &east.client))?;
    note(format!(
        "a three-seat panel with {NEWCOMER}'s arbiter decided over the links (scripted judges answering the simulation's hint): {decided}"
    ));

    // A partition: the leader cut off from the other replicas, clients still reach it.
    let leader = crate::run::current_leader(shared).unwrap_or(1);
    cluster.net.isolate(leader)?;
    note(format!("replica {leader} (the leader) partitioned"));
    tokio::time::sleep(Duration::from_secs(3)).await;
    blocking(|| served(cluster, &east.client, &judge))?;
    cluster.net.heal(leader)?;
    note(format!(
        "{NEWCOMER}'s client served during the partition; healed"
    ));

    // A rolling restart: each replica stopped and started again in turn, the next one
    // only once it serves again.
    for id in 1..=cluster.n() as u64 {
        blocking(|| {
            cluster.stop(id);
            Ok(())
        })?;
        tokio::time::sleep(Duration::from_secs(1)).await;
        cluster.start_replica(id);
        wait_serving(cluster, id).await?;
        note(format!("replica {id} restarted and serving"));
    }
    let after = wait_cosigned_beyond(cluster, first, "cosigning after the restart").await?;
    blocking(|| served(cluster, &east.client, &judge))?;
    note(format!(
        "after the rolling restart: {NEWCOMER}'s client served, checkpoints cosigned by both witnesses (size {after})"
    ));

    // The founders remove it by entry; from then on every replica refuses its client.
    blocking(|| remove(cluster, &east))?;
    note(format!("{NEWCOMER} removed by entry"));
    blocking(|| {
        poll("the removed organisation's client is refused", || {
            let out = run_panel(
                &["arbiter", "list", "--json"],
                Some((cluster, &east.client)),
            )
            .ok()?;
            (!out.status.success()).then_some(())
        })
    })?;
    note(format!("{NEWCOMER}'s client refused by every replica"));
    Ok((
        lines,
        Hosts {
            _processes: processes,
        },
    ))
}

/// Whether `client` is served: its read of `arbiter` answers within `STEP`.
fn served(cluster: &Cluster, client: &Path, arbiter: &str) -> Result<(), ClusterError> {
    until_ok(cluster, client, &["arbiter", "show", arbiter, "--json"]).map(drop)
}

/// Waits until replica `id` answers `Status` and knows a leader.
async fn wait_serving(cluster: &Cluster, id: u64) -> Result<(), ClusterError> {
    let t = Instant::now();
    loop {
        if let Ok(mut c) = cluster.coordinator(id)
            && let Ok(s) = crate::cluster::status(&mut c, Duration::from_millis(500)).await
            && s.has_leader
        {
            return Ok(());
        }
        if t.elapsed() > STEP {
            return Err(setup(
                format!("replica {id} after its restart"),
                cluster.log_tail(id),
            ));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
