//! Fair shares of the global caps, and the deduplication rows refused writes leave (issue
//! 35, part 5; docs/SECURITY.md, "Floods"), against three real replicas running mutual TLS
//! with two organisations' authorities, at the replicas' default limits. The writes go
//! through a follower, so the leader limits them under the writer the follower forwards.
//! Fails if:
//! - one certificate of one organisation, flooding `CreateDebate` past the global debates
//!   cap (50 in a burst, 300 a minute), takes the other organisation's share of it: before
//!   fair shares the other organisation got about 1 of its 6 writes through;
//! - the flooder is served more than its own share and the rate nobody else claimed;
//! - refused writes of an anonymous caller (holding only `ca.pem`) leave deduplication
//!   rows (before: one row each, kept a day).
//!
//! The helpers are small copies of `attack_floods.rs`'s (each test file is its own crate).

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::{Duration, Instant};

use panel_coordinator::pb::coordinator as pb;
use panel_coordinator::pb::coordinator::coordinator_client::CoordinatorClient;
use panel_machine::Query;
use panel_tests::tls::{self, tls};
use panel_transport::Transport;
use panel_transport::pki::{self, IdentitySpec, Issued, Kind};
use tonic::transport::Channel;

const FLOODER: &str = "flood-1";
const HONEST: &str = "honest";
/// The leader's default global debates bucket (`IntakeLimits::default`), stamped into
/// every batch and enforced in apply too.
const DEBATES_BURST: u32 = 50;
const DEBATES_PER_SEC: f64 = 300.0 / 60.0;
/// One member organisation's share of that burst: 2 of the 5 parts (two member
/// organisations weigh 2 each, the anonymous callers 1).
const ORGANISATION_SHARE: u32 = DEBATES_BURST * 2 / 5;

fn issue(root: &Path) -> Issued {
    let mut plan = pki::local_plan(3, &[]);
    let client = |name: &str, org: &str| IdentitySpec {
        kind: Kind::Client,
        name: name.into(),
        organisation: org.into(),
        hosts: vec![],
    };
    plan.identities
        .push(client(FLOODER, pki::LOCAL_ORGANISATIONS[0]));
    plan.identities
        .push(client(HONEST, pki::LOCAL_ORGANISATIONS[1]));
    pki::issue(&plan, &root.join("pki")).expect("issue certificates")
}

fn connect(t: &Transport, addr: &str) -> CoordinatorClient<Channel> {
    CoordinatorClient::new(t.endpoint(addr).expect("endpoint").connect_lazy())
}

/// The leader's id, once one is elected and `addr` knows it.
async fn leader(t: &Transport, addr: &str) -> u64 {
    let start = Instant::now();
    loop {
        if let Ok(s) = panel_coordinator::client::status(t, addr).await
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

/// A contribution that passes the Gate and is refused in apply (no such debate).
fn stray_contribution(n: u64) -> String {
    serde_json::json!({"Contribute": {
        "debate_id": "deb_none", "author": format!("stray-{n}"), "side": "A",
        "contribution": {"op": "definition", "term": format!("harm{n}"),
                         "definition": "Measurable loss of welfare."},
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

async fn write(c: &mut CoordinatorClient<Channel>, who: &str, n: u64, command: String) -> Outcome {
    let start = Instant::now();
    loop {
        let r = c
            .write(pb::WriteRequest {
                client_id: who.into(),
                request_id: n,
                command_json: command.clone(),
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
                assert!(
                    start.elapsed() < Duration::from_secs(30),
                    "write failed: {st:?}"
                );
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

/// The deduplication rows the replica at `addr` holds (the `Stats` read).
async fn reply_rows(t: &Transport, addr: &str) -> u64 {
    let r = panel_coordinator::client::read(t, addr, &Query::Stats, true)
        .await
        .expect("stats");
    let v: serde_json::Value = serde_json::from_str(&r.result_json).expect("stats json");
    v["rows"]["requests"].as_u64().expect("requests rows")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flooding_organisation_leaves_the_other_its_share() {
    let root = tempfile::tempdir().unwrap();
    let issued = issue(root.path());
    let cluster = tls::start_issued(root.path(), issued, &[]);
    let honest_t = tls(&cluster.pki.dir(HONEST));
    let leader_id = leader(&honest_t, &cluster.addrs[0]).await;
    let follower = (1..=3u64).find(|id| *id != leader_id).expect("a follower");
    let via = cluster.addrs[follower as usize - 1].clone();

    // One certificate of the first organisation writes new debates as fast as it can, on
    // its own task, under rotating convener names (so only the writer's and the global
    // buckets bind), until told to stop.
    let stop = Arc::new(AtomicBool::new(false));
    let sent = Arc::new(AtomicU32::new(0));
    let flood_t = tls(&cluster.pki.dir(FLOODER));
    let flood = {
        let (stop, sent, via) = (stop.clone(), sent.clone(), via.clone());
        tokio::spawn(async move {
            let mut c = connect(&flood_t, &via);
            let (mut applied, mut first_refusal) = (0u32, None);
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                match write(&mut c, FLOODER, n, debate(&format!("f-{n}"))).await {
                    Outcome::Applied => applied += 1,
                    other => {
                        first_refusal.get_or_insert(other);
                    }
                }
                n += 1;
                sent.store(n as u32, Ordering::Relaxed);
            }
            (applied, n, first_refusal)
        })
    };
    // The flood has spent the global debates burst before the other organisation writes.
    let start = Instant::now();
    while sent.load(Ordering::Relaxed) < 2 * DEBATES_BURST {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the flood stalled"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    // The second organisation's 6 writes, 300 ms apart, during the flood.
    let mut honest = connect(&honest_t, &via);
    let mut outcomes = Vec::new();
    for n in 0..6u64 {
        outcomes.push(write(&mut honest, HONEST, n, debate(&format!("h-{n}"))).await);
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    stop.store(true, Ordering::Relaxed);
    let (flood_applied, flood_sent, flood_refusal) = flood.await.expect("flood task");
    let secs = start.elapsed().as_secs_f64();
    let honest_applied = outcomes.iter().filter(|o| **o == Outcome::Applied).count();
    eprintln!(
        "flooding organisation: {flood_applied} of {flood_sent} writes through in {secs:.1} s; \
         the other organisation: {honest_applied} of 6 ({outcomes:?})"
    );
    eprintln!("the flood's first refusal: {flood_refusal:?}");
    assert_eq!(
        honest_applied, 6,
        "the other organisation's writes, within its share, go through: {outcomes:?}"
    );
    // The flooder's own share of the burst, and what refilled while it flooded (the other
    // organisation used 6 of it); never the others' shares of the burst.
    let most = f64::from(ORGANISATION_SHARE) + DEBATES_PER_SEC * (secs + 2.0);
    assert!(
        f64::from(flood_applied) <= most,
        "{flood_applied} served to the flooder, at most {most:.0} expected"
    );
    assert!(
        flood_applied >= ORGANISATION_SHARE,
        "the flooder is served its own share: {flood_applied}"
    );
    let refusal = format!("{flood_refusal:?}");
    assert!(
        refusal.contains(&format!("organisation {}", pki::LOCAL_ORGANISATIONS[0]))
            && refusal.contains("retry in"),
        "the refusal names the organisation and when to retry: {refusal}"
    );

    // An anonymous caller (only ca.pem) writes refusals: they leave no deduplication row.
    let reader = tls::reader(root.path(), &cluster.pki);
    let before = reply_rows(&honest_t, &via).await;
    let mut anon = connect(&reader, &via);
    let mut refused = 0;
    for n in 0..200u64 {
        if let Outcome::Apply(_) = write(&mut anon, "anon", n, stray_contribution(n)).await {
            refused += 1;
        }
    }
    let after = reply_rows(&honest_t, &via).await;
    eprintln!(
        "{refused} anonymous writes refused in apply; deduplication rows {before} -> {after}"
    );
    assert!(
        refused >= 150,
        "the stray contributions reach apply: {refused}"
    );
    // The drivers' own writes may add a row or two meanwhile; 200 refusals added 200.
    assert!(
        after <= before + 5,
        "refused anonymous writes stored rows: {before} -> {after}"
    );
}
