//! Floods under authenticated identities (docs/SECURITY.md, "Floods"), against three real
//! replicas running mutual TLS with two organisations' authorities. The writes go to a
//! follower, so the leader must limit them under the original caller the follower
//! forwards, not under the follower's own certificate. Fails if:
//! - one certificate, or several certificates of one organisation, can write past their
//!   budget, or are refused without a retry hint;
//! - an honest writer of the other organisation is refused while they flood;
//! - anonymous callers share more than their one small budget;
//! - a new leader, whose intake buckets start full, lets the flooder write again (apply
//!   refuses it from the replicated quotas, code `rate_limited`);
//! - the replicas' memory grows without bound under the flood.

use std::path::Path;
use std::time::{Duration, Instant};

use panel_coordinator::pb::coordinator as pb;
use panel_coordinator::pb::coordinator::coordinator_client::CoordinatorClient;
use panel_tests::tls::tls;
use panel_tests::{ChildGuard, init_args, loopback_addrs, panel};
use panel_transport::Transport;
use panel_transport::pki::{self, IdentitySpec, Issued, Kind};
use tonic::transport::Channel;

const FLOODERS: [&str; 4] = ["flood-1", "flood-2", "flood-3", "flood-4"];
const HONEST: &str = "honest";
/// Per-certificate budget of the test cluster: 10 writes, then one every 30 s. The
/// budgets stay below the leader's global burst of new debates (50), so only the writers'
/// limits bind.
const IDENTITY_BURST: u32 = 10;
/// Per-organisation budget: 20 writes, then one every 30 s.
const ORGANISATION_BURST: u32 = 20;
const ANONYMOUS_BURST: u32 = 3;

fn issue(root: &Path) -> Issued {
    let mut plan = pki::local_plan(3, &[]);
    let client = |name: &str, org: &str| IdentitySpec {
        kind: Kind::Client,
        name: name.into(),
        organisation: org.into(),
        hosts: vec![],
    };
    for f in FLOODERS {
        plan.identities.push(client(f, pki::LOCAL_ORGANISATIONS[0]));
    }
    plan.identities
        .push(client(HONEST, pki::LOCAL_ORGANISATIONS[1]));
    pki::issue(&plan, &root.join("pki")).expect("issue certificates")
}

fn replica(root: &Path, issued: &Issued, id: u64, addr: &str) -> ChildGuard {
    let mut cmd = panel_tests::tls::replica_command(root, issued, id, addr);
    cmd.args(["--identity-burst", &IDENTITY_BURST.to_string()])
        .args(["--identity-per-minute", "2"])
        .args(["--organisation-burst", &ORGANISATION_BURST.to_string()])
        .args(["--organisation-per-minute", "2"])
        .args(["--anonymous-burst", &ANONYMOUS_BURST.to_string()])
        .args(["--anonymous-per-minute", "2"]);
    ChildGuard::spawn(format!("replica {id}"), cmd)
}

async fn connect(t: &Transport, addr: &str) -> CoordinatorClient<Channel> {
    let ch = t.endpoint(addr).expect("endpoint").connect_lazy();
    CoordinatorClient::new(ch)
}

async fn status(t: &Transport, addr: &str) -> Option<pb::StatusReply> {
    panel_coordinator::client::status(t, addr).await.ok()
}

/// The leader's id, once one is elected and `addr` knows it.
async fn leader(t: &Transport, addr: &str) -> u64 {
    let start = Instant::now();
    loop {
        if let Some(s) = status(t, addr).await
            && s.has_leader
        {
            return s.leader_id;
        }
        assert!(start.elapsed() < Duration::from_secs(30), "no leader");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn debate(convener: &str) -> String {
    serde_json::json!({"CreateDebate": {
        "resolution": "Resolved: shorter weeks raise output.", "pos_a": "yes", "pos_b": "no",
        "seats": 2, "min_per_stance": 1, "convener": convener,
    }})
    .to_string()
}

/// What became of one write.
#[derive(Debug, PartialEq)]
enum Outcome {
    Applied,
    /// Refused at the leader's intake (`RESOURCE_EXHAUSTED`), with the message.
    Intake(String),
    /// Refused in apply, with the refusal's JSON.
    Apply(String),
}

async fn write(c: &mut CoordinatorClient<Channel>, who: &str, n: u64) -> Outcome {
    let start = Instant::now();
    loop {
        let r = c
            .write(pb::WriteRequest {
                client_id: who.into(),
                request_id: n,
                // Rotating convener names: the per-name buckets never bind, only the
                // writer's.
                command_json: debate(&format!("{who}-{n}")),
                ..Default::default()
            })
            .await
            .map(tonic::Response::into_inner);
        match r {
            Ok(w) if w.applied => return Outcome::Applied,
            Ok(w) => return Outcome::Apply(w.result_json),
            Err(st) if st.code() == tonic::Code::ResourceExhausted => {
                return Outcome::Intake(st.message().to_string());
            }
            Err(st) => {
                // No leader for a moment (the failover below): retry with the same id.
                assert!(
                    start.elapsed() < Duration::from_secs(30),
                    "write failed: {st:?}"
                );
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

/// VmRSS of a process in KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("proc status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .expect("VmRSS")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn floods_are_limited_per_identity_and_organisation_across_a_failover() {
    let root = tempfile::tempdir().unwrap();
    let issued = issue(root.path());
    let addrs = loopback_addrs(3);
    let mut replicas: Vec<Option<ChildGuard>> = addrs
        .iter()
        .enumerate()
        .map(|(i, a)| Some(replica(root.path(), &issued, i as u64 + 1, a)))
        .collect();
    let operator = issued.dir(&pki::operator_dir_name(pki::LOCAL_ORGANISATIONS[0]));
    let t = Instant::now();
    while !panel()
        .args(init_args(&addrs))
        .arg("--tls")
        .arg(&operator)
        .output()
        .expect("run panel")
        .status
        .success()
    {
        assert!(t.elapsed() < Duration::from_secs(30), "TLS cluster init");
        std::thread::sleep(Duration::from_millis(100));
    }
    let honest_t = tls(&issued.dir(HONEST));
    let leader_id = leader(&honest_t, &addrs[0]).await;
    // Write through a follower: the leader sees the follower's certificate on the
    // connection and must take the original writer from the forwarded request.
    let follower = (1..=3u64).find(|id| *id != leader_id).expect("a follower");
    let via = &addrs[follower as usize - 1];
    let pids: Vec<u32> = replicas
        .iter()
        .map(|g| g.as_ref().map_or(0, ChildGuard::id))
        .collect();
    let rss_before: Vec<u64> = pids.iter().map(|p| rss_kib(*p)).collect();

    let mut honest = connect(&honest_t, via).await;
    assert_eq!(write(&mut honest, HONEST, 0).await, Outcome::Applied);

    // One certificate floods: its burst is served, the rest refused with a retry hint.
    let mut f1 = connect(&tls(&issued.dir(FLOODERS[0])), via).await;
    let mut served = 0u32;
    let mut refusals = Vec::new();
    for n in 0..200u64 {
        match write(&mut f1, FLOODERS[0], n).await {
            Outcome::Applied => served += 1,
            other => refusals.push(other),
        }
    }
    // The burst, plus at most a few tokens refilled at one per 30 s.
    assert!(
        (IDENTITY_BURST..IDENTITY_BURST + 10).contains(&served),
        "{served} served"
    );
    let first = refusals.first().expect("the flood was refused");
    match first {
        Outcome::Intake(m) => {
            assert!(m.contains("per-identity") && m.contains("retry in"), "{m}")
        }
        other => panic!("expected an intake refusal, got {other:?}"),
    }
    assert_eq!(write(&mut honest, HONEST, 1).await, Outcome::Applied);

    // The flooder's organisation rotates certificates: they share its budget.
    let mut org_served = served;
    let mut org_refusal = None;
    for f in &FLOODERS[1..] {
        let mut c = connect(&tls(&issued.dir(f)), via).await;
        for n in 0..100u64 {
            match write(&mut c, f, n).await {
                Outcome::Applied => org_served += 1,
                Outcome::Intake(m) if m.contains("per-organisation") => {
                    org_refusal.get_or_insert(m);
                }
                _ => {}
            }
        }
    }
    assert!(
        org_served < ORGANISATION_BURST + 15,
        "{org_served} served to one organisation"
    );
    let m = org_refusal.expect("the organisation's limit was reached");
    assert!(
        m.contains(&format!("organisation {}", pki::LOCAL_ORGANISATIONS[0]))
            && m.contains("retry in"),
        "{m}"
    );
    // The honest writer of the other organisation is still served.
    for n in 2..6 {
        assert_eq!(write(&mut honest, HONEST, n).await, Outcome::Applied);
    }

    // Anonymous callers (only ca.pem) share one small budget.
    let reader_dir = root.path().join("reader");
    std::fs::create_dir_all(&reader_dir).unwrap();
    std::fs::copy(issued.root.join("ca.pem"), reader_dir.join("ca.pem")).unwrap();
    let mut anon = connect(&tls(&reader_dir), via).await;
    let mut anon_served = 0;
    for n in 0..30u64 {
        if write(&mut anon, "anon", n).await == Outcome::Applied {
            anon_served += 1;
        }
    }
    assert!(
        (ANONYMOUS_BURST..ANONYMOUS_BURST + 5).contains(&anon_served),
        "{anon_served} anonymous writes served"
    );

    // Memory stays bounded: a generous bound on growth, not a timing.
    for (i, pid) in pids.iter().enumerate() {
        let after = rss_kib(*pid);
        assert!(
            after < rss_before[i] + 200 * 1024,
            "replica {} grew from {} KiB to {after} KiB",
            i + 1,
            rss_before[i]
        );
        eprintln!(
            "replica {}: VmRSS {} KiB before the flood, {after} KiB after",
            i + 1,
            rss_before[i]
        );
    }

    // Failover: the leader dies; the new leader's intake starts full, but apply refuses
    // the flooder from the replicated quotas.
    replicas[leader_id as usize - 1].take();
    let survivor = (1..=3u64).find(|id| *id != leader_id).expect("a survivor");
    let saddr = &addrs[survivor as usize - 1];
    let start = Instant::now();
    let new_leader = loop {
        let id = leader(&honest_t, saddr).await;
        if id != leader_id {
            break id;
        }
        assert!(start.elapsed() < Duration::from_secs(30), "no new leader");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let mut f1 = connect(
        &tls(&issued.dir(FLOODERS[0])),
        &addrs[new_leader as usize - 1],
    )
    .await;
    let mut after_served = 0u32;
    let mut in_apply = None;
    for n in 1_000..1_030u64 {
        match write(&mut f1, FLOODERS[0], n).await {
            Outcome::Applied => after_served += 1,
            Outcome::Apply(json) => {
                in_apply.get_or_insert(json);
            }
            Outcome::Intake(_) => {}
        }
    }
    // A fresh intake alone would serve a whole burst again.
    assert!(
        after_served < IDENTITY_BURST / 2,
        "{after_served} served after the failover"
    );
    let json = in_apply.expect("apply refused the flooder after the failover");
    assert!(
        json.contains("rate_limited") && json.contains("retry in"),
        "{json}"
    );
    let mut honest = connect(&honest_t, &addrs[new_leader as usize - 1]).await;
    assert_eq!(write(&mut honest, HONEST, 100).await, Outcome::Applied);
}
