//! One operator cannot choose the group's voters (docs/SECURITY.md, "Membership"), against
//! three real replicas over mutual TLS run by two organisations: replica 1 and 3 by
//! northwind, replica 2 by southbank. Before this rule, southbank's operator sent
//! `ChangeMembership(voters=[2])` and its replica committed writes alone.

use std::process::Output;
use std::time::{Duration, Instant};

use panel_coordinator::pb::coordinator as pb;
use panel_coordinator::pb::coordinator::admin_client::AdminClient;
use panel_tests::panel;
use panel_tests::tls::{TlsCluster, start_cluster, tls};
use panel_transport::{Transport, pki};
use tonic::Code;

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

async fn leader_status(t: &Transport, addr: &str) -> pb::StatusReply {
    let start = Instant::now();
    loop {
        if let Ok(s) = panel_coordinator::client::status(t, addr).await
            && s.has_leader
            && !s.leader_addr.is_empty()
        {
            return s;
        }
        assert!(start.elapsed() < Duration::from_secs(30), "no leader");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// `panel org endorse-membership` by `org`: ORG=SIGNATURE.
fn endorse(c: &TlsCluster, org: &str, seq: u64, voters: &str) -> String {
    let out = panel()
        .args(["org", "endorse-membership", "--charter"])
        .arg(c.pki.charter_path())
        .args(["--seq", &seq.to_string(), "--voters", voters, "--org-key"])
        .arg(c.pki.signing_key_path(org))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    format!("{org}={}", text(&out.stdout).trim())
}

/// `panel org authorise-membership` with `endorsements`, as the group's client.
fn authorise(c: &TlsCluster, seq: u64, voters: &str, endorsements: &[String]) -> Output {
    let mut cmd = panel();
    cmd.args(["org", "authorise-membership", "--charter"])
        .arg(c.pki.charter_path())
        .args(["--seq", &seq.to_string(), "--voters", voters]);
    for e in endorsements {
        cmd.args(["--endorsement", e]);
    }
    cmd.arg("--addr")
        .arg(c.addrs.join(","))
        .arg("--tls")
        .arg(c.pki.dir(pki::LOCAL_CLIENT))
        .output()
        .unwrap()
}

fn refused_with(out: &Output, needle: &str) {
    assert!(!out.status.success(), "accepted: {}", text(&out.stdout));
    assert!(text(&out.stderr).contains(needle), "{}", text(&out.stderr));
}

async fn change(
    admin: &mut AdminClient<tonic::transport::Channel>,
    voters: &[u64],
) -> Result<(), tonic::Status> {
    admin
        .change_membership(pb::ChangeMembershipRequest {
            voters: voters.to_vec(),
            retain: false,
        })
        .await
        .map(|_| ())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_operator_cannot_make_its_replica_the_only_voter() {
    let root = tempfile::tempdir().unwrap();
    let c = start_cluster(root.path());
    let client = tls(&c.pki.dir(pki::LOCAL_CLIENT));
    let leader = leader_status(&client, &c.addrs[0]).await.leader_addr;
    let operator = tls(&c.pki.dir(&pki::operator_dir_name("southbank")));
    let mut admin = AdminClient::new(operator.endpoint(&leader).unwrap().connect_lazy());

    // The takeover of the issue: refused, naming what is missing.
    let e = change(&mut admin, &[2]).await.expect_err("takeover");
    assert_eq!(e.code(), Code::PermissionDenied, "{e:?}");
    for needle in [
        "is authorised on record",
        "2 distinct member organisations",
        "endorse-membership",
    ] {
        assert!(e.message().contains(needle), "{needle}: {}", e.message());
    }

    // The chartered group answers writes once its charter is applied.
    let start = Instant::now();
    let south = endorse(&c, "southbank", 1, "2");
    loop {
        let out = authorise(&c, 1, "2", std::slice::from_ref(&south));
        if text(&out.stderr).contains("distinct organisation") {
            // One organisation's replica alone is never an authorisable voter set.
            refused_with(&out, "run by 1 distinct organisation");
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "{}",
            text(&out.stderr)
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // One organisation cannot authorise a two-organisation voter set alone either, nor
    // sign in the other's name.
    let south = endorse(&c, "southbank", 1, "1,2");
    refused_with(
        &authorise(&c, 1, "1,2", std::slice::from_ref(&south)),
        "1 distinct member organisation(s) endorse",
    );
    let forged = format!("northwind={}", south.split_once('=').unwrap().1);
    refused_with(
        &authorise(&c, 1, "1,2", &[south.clone(), forged]),
        "does not verify",
    );
    // An endorsement of another voter set or sequence number does not count.
    let north_other = endorse(&c, "northwind", 1, "1,2,3");
    refused_with(
        &authorise(&c, 1, "1,2", &[south.clone(), north_other]),
        "does not verify",
    );
    let s = leader_status(&client, &c.addrs[0]).await;
    assert_eq!(s.voters, vec![1, 2, 3], "nothing changed");

    // Both organisations: authorised on record, then executed by one operator.
    let north = endorse(&c, "northwind", 1, "1,2");
    let both = [south.clone(), north.clone()];
    let out = authorise(&c, 1, "1,2", &both);
    assert!(out.status.success(), "{}", text(&out.stderr));
    // The same authorisation replayed is refused: the next change is seq 2.
    refused_with(&authorise(&c, 1, "1,2", &both), "next membership change");
    let leader = leader_status(&client, &c.addrs[0]).await.leader_addr;
    let mut admin = AdminClient::new(operator.endpoint(&leader).unwrap().connect_lazy());
    change(&mut admin, &[1, 2])
        .await
        .expect("the authorised change");
    let start = Instant::now();
    loop {
        let s = leader_status(&client, &c.addrs[0]).await;
        if s.voters == vec![1, 2] {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(30), "{:?}", s.voters);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Going back needs a new authorisation too.
    let leader = leader_status(&client, &c.addrs[0]).await.leader_addr;
    let mut admin = AdminClient::new(operator.endpoint(&leader).unwrap().connect_lazy());
    let e = change(&mut admin, &[1, 2, 3])
        .await
        .expect_err("unauthorised");
    assert_eq!(e.code(), Code::PermissionDenied, "{e:?}");
    assert!(
        e.message().contains("seq 1 to voters [1, 2]"),
        "{}",
        e.message()
    );
}
