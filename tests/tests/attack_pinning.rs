//! A relay posing as a replica (docs/SECURITY.md, "Transport"), against real TLS replicas
//! and a real node process. The relay holds a valid certificate of a member organisation
//! (southbank's authority issued it, for 127.0.0.1), but the charter lists it for no
//! replica. It listens where the node expects a replica and forwards the `ArbiterLink`
//! stream to a real replica, dropping the node's answers, as the relay of the reported
//! attack did with 32 commitments. Each test fails if the hole reopens:
//! - the node refuses the relay at the handshake: no link stream opens through it, so no
//!   hello reaches the replica behind it, and the node's log names the certificate and the
//!   charter entry it should have matched; the same node links to the real replica;
//! - the node's batch commit and reveal calls answer the charter's replicas only (the
//!   relay's certificate, or a client's, is refused before any motion is read);
//! - a replica's operator, who holds the cluster's motion key, cannot make the node judge
//!   a motion of its own making: it lacks the seals of the charter's log quorum, and the
//!   other organisation's replica seals no motion its applied state does not hold
//!   (docs/SECURITY.md "No replica makes a motion alone").

use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use panel_proto::pb::arbiter_link_client::ArbiterLinkClient;
use panel_proto::pb::arbiter_link_server::{ArbiterLink, ArbiterLinkServer};
use panel_proto::pb::arbiter_node_client::ArbiterNodeClient;
use panel_proto::pb::{LinkFromNode, LinkToNode, Motion, RevealRequest, link_from_node};
use panel_tests::ChildGuard;
use panel_tests::run_folder::{logs, poll};
use panel_tests::tls::{TlsCluster, start_issued, tls};
use panel_tests::tls_node::{self, motion_key};
use panel_transport::{ClientAuth, Transport, pki};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Code, Request, Response, Status, Streaming};

const DEADLINE: Duration = Duration::from_secs(90);
/// The arbiter whose node links out, and the relay's identity (another organisation's).
const ARBITER: &str = "edge";
const RELAY: &str = "relay";

/// What passed through the relay.
#[derive(Default)]
struct Seen {
    /// Link streams the relay accepted (each one a TLS session a node completed with it).
    streams: AtomicUsize,
    /// Hellos it forwarded to the replica behind it.
    hellos: AtomicUsize,
    /// Node answers (commitments, reveals) it dropped.
    dropped: AtomicUsize,
}

/// A TLS-terminating `ArbiterLink` relay: the node's messages go to `upstream` (a real
/// replica, dialled with the relay's own member certificate), the replica's come back.
struct Relay {
    upstream: String,
    transport: Transport,
    seen: Arc<Seen>,
}

type ToNode = Pin<Box<dyn tokio_stream::Stream<Item = Result<LinkToNode, Status>> + Send>>;

#[tonic::async_trait]
impl ArbiterLink for Relay {
    type OpenStream = ToNode;

    async fn open(
        &self,
        req: Request<Streaming<LinkFromNode>>,
    ) -> Result<Response<ToNode>, Status> {
        self.seen.streams.fetch_add(1, Ordering::SeqCst);
        let mut from_node = req.into_inner();
        let channel = self
            .transport
            .endpoint(&self.upstream)
            .map_err(|e| Status::internal(e.to_string()))?
            .connect()
            .await
            .map_err(|e| Status::unavailable(panel_transport::connect_failure(&e)))?;
        let (tx, rx) = mpsc::channel::<LinkFromNode>(16);
        let seen = self.seen.clone();
        tokio::spawn(async move {
            while let Ok(Some(msg)) = from_node.message().await {
                match msg.body {
                    Some(link_from_node::Body::Hello(_)) => {
                        seen.hellos.fetch_add(1, Ordering::SeqCst);
                    }
                    Some(link_from_node::Body::Response(_)) => {
                        seen.dropped.fetch_add(1, Ordering::SeqCst);
                        continue;
                    }
                    None => {}
                }
                if tx.send(msg).await.is_err() {
                    break;
                }
            }
        });
        let to_node = ArbiterLinkClient::new(channel)
            .open(ReceiverStream::new(rx))
            .await?
            .into_inner();
        Ok(Response::new(Box::pin(to_node)))
    }
}

/// Starts the relay on a free loopback port under `rt`; returns its address.
fn start_relay(rt: &tokio::runtime::Runtime, c: &TlsCluster, seen: Arc<Seen>) -> String {
    let identity = tls(&c.pki.dir(&pki::node_dir_name(RELAY)));
    let relay = Relay {
        upstream: c.addrs[0].clone(),
        transport: identity.clone(),
        seen,
    };
    let _guard = rt.enter();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let incoming = identity
        .incoming(
            tokio::net::TcpListener::from_std(listener).unwrap(),
            ClientAuth::Optional,
        )
        .unwrap();
    let server = identity.server().add_service(ArbiterLinkServer::new(relay));
    rt.spawn(server.serve_with_incoming(incoming));
    addr
}

/// Registers the arbiter, endorsed by northwind, to be reached over its links.
fn register(root: &Path, c: &TlsCluster, dir: &Path) -> std::path::PathBuf {
    tls_node::register(root, c, dir, ARBITER, "northwind")
}

/// `panel node run` for the arbiter, linking out to `connect`.
fn start_node(root: &Path, c: &TlsCluster, dir: &Path, connect: &[&str]) -> (ChildGuard, String) {
    start_node_as(root, c, dir, connect, &pki::node_dir_name(ARBITER))
}

/// [`start_node`] with the TLS identity of the folder `identity`.
fn start_node_as(
    root: &Path,
    c: &TlsCluster,
    dir: &Path,
    connect: &[&str],
    identity: &str,
) -> (ChildGuard, String) {
    let node = tls_node::NodeSpec {
        arbiter: ARBITER,
        organisation: "northwind",
        identity,
        log: "node",
    };
    tls_node::start_node(root, c, dir, &node, connect)
}

fn node_log(root: &Path) -> String {
    std::fs::read_to_string(root.join("logs").join("node.log")).unwrap_or_default()
}

/// The node's log lines about its link to `addr`.
fn link_lines(log: &str, addr: &str) -> Vec<String> {
    // The link's span, closed by `}` so that one port is not a prefix of another.
    let url = format!("coordinator=http://{addr}}}");
    log.lines()
        .filter(|l| l.contains(&url))
        .map(str::to_owned)
        .collect()
}

#[test]
fn a_node_refuses_a_relay_with_another_members_certificate_and_links_to_the_real_replica() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let issued = panel_tests::tls::issue(root, &[(ARBITER, "northwind"), (RELAY, "southbank")]);
    let c = start_issued(root, issued, &[]);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let seen = Arc::new(Seen::default());
    let relay = start_relay(&rt, &c, seen.clone());

    let dir = root.join("node");
    register(root, &c, &dir);
    // The node is given the relay and the real replica 1 behind it, as a node whose
    // configured address was taken over would be.
    let (_node, _) = start_node(root, &c, &dir, &[&relay, &c.addrs[0]]);

    // Control: the same node, configuration and charter link to the real replica.
    poll(root, "the node links to the real replica", DEADLINE, || {
        link_lines(&node_log(root), &c.addrs[0])
            .iter()
            .any(|l| l.contains("link accepted") && l.contains("replica=1"))
            .then_some(())
    });

    // The relay: refused by name, or (the hole) linked through.
    let refusal = poll(root, "the node refuses or uses the relay", DEADLINE, || {
        if seen.hellos.load(Ordering::SeqCst) > 0 {
            return Some(None);
        }
        link_lines(&node_log(root), &relay)
            .into_iter()
            .find(|l| l.contains("refusing coordinator"))
            .map(Some)
    });
    assert_eq!(
        seen.hellos.load(Ordering::SeqCst),
        0,
        "the node accepted the relay at {relay} as its replica and sent it its hello, which \
         reached replica 1 (answers dropped so far: {}){}",
        seen.dropped.load(Ordering::SeqCst),
        logs(root)
    );
    let refusal = refusal.expect("a refusal line");
    eprintln!("the node's refusal: {refusal}");
    let relay_cert = panel_transport::TlsMaterial::load(&c.pki.dir(&pki::node_dir_name(RELAY)))
        .unwrap()
        .fingerprint()
        .unwrap();
    for needle in [
        format!("the server at {relay} presented certificate {relay_cert}"),
        "which the charter lists for no replica".into(),
        "replicas[i].cert_sha256".into(),
    ] {
        assert!(
            refusal.contains(&needle),
            "{needle:?} missing in: {refusal}"
        );
    }
    // The node keeps refusing (it retries with backoff), and never completes a TLS session
    // with the relay: nothing of the link reaches the replica behind it.
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(seen.streams.load(Ordering::SeqCst), 0, "{}", logs(root));
    assert_eq!(seen.hellos.load(Ordering::SeqCst), 0, "{}", logs(root));
    assert!(
        !link_lines(&node_log(root), &relay)
            .iter()
            .any(|l| l.contains("link accepted")),
        "{}",
        logs(root)
    );
}

#[test]
fn a_nodes_batch_calls_answer_the_charters_replicas_only() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let issued = panel_tests::tls::issue(root, &[(ARBITER, "northwind"), (RELAY, "southbank")]);
    let c = start_issued(root, issued, &[]);
    let dir = root.join("node");
    register(root, &c, &dir);
    let (_node, addr) = start_node(root, &c, &dir, &[&c.addrs[0]]);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let connect = |t: &Transport| ArbiterNodeClient::new(t.endpoint(&addr).unwrap().connect_lazy());
    let relay = tls(&c.pki.dir(&pki::node_dir_name(RELAY)));
    poll(root, "the node answers", DEADLINE, || {
        rt.block_on(async {
            connect(&relay)
                .identity(panel_proto::pb::IdentityRequest {})
                .await
        })
        .ok()
    });

    rt.block_on(async {
        for (who, t) in [
            ("another member's node certificate", relay.clone()),
            ("a client", tls(&c.pki.dir(pki::LOCAL_CLIENT))),
        ] {
            let mut n = connect(&t);
            let e = n
                .commit_batch(tokio_stream::iter(vec![Motion::default()]))
                .await
                .expect_err(who);
            assert_eq!(e.code(), Code::PermissionDenied, "{who}: {e:?}");
            assert!(e.message().contains("federation charter"), "{who}: {e:?}");
            let e = n
                .reveal_batch(tokio_stream::iter(vec![RevealRequest {
                    motion_id: "m".into(),
                    ..Default::default()
                }]))
                .await
                .expect_err(who);
            assert_eq!(e.code(), Code::PermissionDenied, "{who}: {e:?}");
        }
        // A replica passes the guard: the empty motion is refused on its merits.
        let replica = tls(&c.pki.dir(&pki::replica_dir_name(2)));
        let mut results = connect(&replica)
            .commit_batch(tokio_stream::iter(vec![Motion::default()]))
            .await
            .expect("a replica may batch commits")
            .into_inner();
        let first = results
            .message()
            .await
            .expect("a result")
            .expect("one result");
        assert!(first.commitment.is_none(), "{first:?}");
        assert!(!first.error.contains("federation charter"), "{first:?}");
    });
}

/// A node that holds the arbiter's key but connects with another arbiter's node
/// certificate (another member's, valid and chained to the federation) is refused at the
/// link: a node speaks only for the arbiter its certificate names (docs/SECURITY.md
/// "Identity bound to role").
#[test]
fn a_replica_refuses_a_link_whose_certificate_names_another_arbiter() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let issued = panel_tests::tls::issue(root, &[(ARBITER, "northwind"), (RELAY, "southbank")]);
    let c = start_issued(root, issued, &[]);
    let dir = root.join("node");
    register(root, &c, &dir);
    let (_node, _) = start_node_as(root, &c, &dir, &[&c.addrs[0]], &pki::node_dir_name(RELAY));
    let needle = "may open a link only for the arbiter its certificate names";
    poll(root, "the replica refuses the link", DEADLINE, || {
        node_log(root).contains(needle).then_some(())
    });
    let log = node_log(root);
    assert!(
        log.contains(&format!("node/node-{RELAY}")),
        "the refusal names the certificate's id: {log}"
    );
    assert!(
        !link_lines(&log, &c.addrs[0])
            .iter()
            .any(|l| l.contains("link accepted")),
        "{}",
        logs(root)
    );
}

/// A replica's seal over `m` made with its own log key (the test plays that replica's
/// operator, who holds the key file).
fn seal_by(c: &TlsCluster, replica: u64, m: &Motion) -> String {
    let charter =
        panel_federation::Charter::parse(&std::fs::read_to_string(c.pki.charter_path()).unwrap())
            .unwrap();
    let origin = charter
        .log
        .as_ref()
        .expect("a witnessed log")
        .origin
        .clone();
    let key = pki::read_seed_key(&c.pki.log_key_path(replica)).expect("log key");
    let signer = panel_tlog::NoteSigner::new(&origin, key).unwrap();
    panel_federation::motion_seal::seal(&signer, &panel_proto::motion_digest(m))
}

/// One replica's operator holds the cluster's motion key and its replica's certificate
/// and log key, and signs a motion the log never opened. Before seals the node judged it
/// (the motion key was the only check); now the node refuses it until replicas of the log
/// quorum's organisations sealed it, and the other organisation's replica, asked to seal
/// it, refuses because its own applied state holds no such motion.
#[test]
fn a_motion_one_replica_makes_is_judged_by_no_node() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let issued = panel_tests::tls::issue(root, &[(ARBITER, "northwind")]);
    let c = start_issued(root, issued, &[]);
    let dir = root.join("node");
    let key = register(root, &c, &dir);
    // `panel node keygen` writes the seed on a `seed:` line.
    let text = std::fs::read_to_string(&key).unwrap();
    let seed = text
        .lines()
        .find_map(|l| l.strip_prefix("seed:"))
        .expect("seed line");
    let seed: [u8; 32] = hex::decode(seed.trim()).unwrap().try_into().unwrap();
    let arbiter = panel_proto::SigningKey::from_bytes(&seed);
    let (_node, addr) = start_node(root, &c, &dir, &[&c.addrs[0]]);
    let rt = tokio::runtime::Runtime::new().unwrap();
    // Replica 2 is southbank's; replicas 1 and 3 are northwind's (the local plan).
    let rogue = tls(&c.pki.dir(&pki::replica_dir_name(2)));
    let connect = || ArbiterNodeClient::new(rogue.endpoint(&addr).unwrap().connect_lazy());
    poll(root, "the node answers", DEADLINE, || {
        rt.block_on(async {
            connect()
                .identity(panel_proto::pb::IdentityRequest {})
                .await
        })
        .ok()
    });
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let made_up = panel_proto::sign_motion(
        &motion_key(&c),
        Motion {
            motion_id: "made-up-by-one-replica".into(),
            debate_id: "deb_forged".into(),
            kind: panel_proto::pb::MotionKind::Merge as i32,
            state_hash: vec![7; 32],
            projection: Some(panel_proto::pb::ContentProjection {
                question: "Should the candidate replace the incumbent?".into(),
                resolution: "Remote work raises productivity.".into(),
                affirmative_favours: panel_proto::pb::Side::A as i32,
                ..Default::default()
            }),
            commit_deadline_unix_ms: now + 30_000,
            reveal_deadline_unix_ms: now + 60_000,
            panel: vec![panel_proto::pb::PanelSeat {
                public_key: arbiter.verifying_key().to_bytes().to_vec(),
                endpoint: String::new(),
            }],
            ..Default::default()
        },
    );
    let commit = |m: Motion| rt.block_on(async { connect().commit(m).await });

    // Signed by the motion key alone: refused, naming the missing seals.
    let e = commit(made_up.clone()).expect_err("an unsealed motion");
    assert_eq!(e.code(), Code::Unauthenticated, "{e:?}");
    assert!(
        e.message().contains("not sealed by the charter's replicas"),
        "{e:?}"
    );
    assert!(e.message().contains("quorum is 2"), "{e:?}");

    // Sealed by every replica of one organisation: still one organisation.
    let mut one_org = made_up.clone();
    one_org.seals = vec![seal_by(&c, 1, &made_up), seal_by(&c, 3, &made_up)];
    let e = commit(one_org).expect_err("one organisation's seals");
    assert!(e.message().contains("northwind"), "{e:?}");

    // A seal moved from another motion does not count either.
    let mut other = made_up.clone();
    other.motion_id.push('x');
    let other = panel_proto::sign_motion(&motion_key(&c), other);
    let mut moved = made_up.clone();
    moved.seals = vec![seal_by(&c, 2, &made_up), seal_by(&c, 1, &other)];
    let e = commit(moved).expect_err("a moved seal");
    assert!(e.message().contains("does not verify"), "{e:?}");

    // The other organisation's replica seals nothing its own state does not hold.
    rt.block_on(async {
        // As a replica calls another: pinned to the charter's entry for replica 1.
        let chartered = Transport::from_flags(
            Some(&c.pki.dir(&pki::replica_dir_name(2))),
            Some(&c.pki.charter_path()),
            false,
        )
        .unwrap();
        let endpoint = chartered.endpoint_pinned(&c.addrs[0], panel_transport::Peer::Replica(1));
        let mut r = panel_coordinator::pb::replica::replica_client::ReplicaClient::new(
            endpoint.unwrap().connect().await.expect("replica 1"),
        );
        let ask =
            |motions: Vec<Vec<u8>>| panel_coordinator::pb::replica::SealMotionsRequest { motions };
        let e = r
            .seal_motions(ask(vec![prost::Message::encode_to_vec(&made_up)]))
            .await
            .expect_err("a motion the log never opened");
        assert_eq!(e.code(), Code::FailedPrecondition, "{e:?}");
        assert!(e.message().contains("no motion or exam item open"), "{e:?}");
        let e = r
            .seal_motions(ask(vec![vec![0xff; 8]]))
            .await
            .expect_err("bytes that are no motion");
        assert_eq!(e.code(), Code::InvalidArgument, "{e:?}");
        assert!(e.message().contains("motions[0]"), "{e:?}");
        let e = r
            .seal_motions(ask(vec![Vec::new(); 257]))
            .await
            .expect_err("an oversized batch");
        assert_eq!(e.code(), Code::InvalidArgument, "{e:?}");
    });

    // Control: with the seals of both organisations the same motion is judged, so the
    // refusals above came from the seals alone.
    let mut sealed = made_up.clone();
    sealed.seals = vec![seal_by(&c, 1, &made_up), seal_by(&c, 2, &made_up)];
    let commitment = commit(sealed).expect("a motion both organisations sealed");
    assert!(!commitment.into_inner().signature.is_empty());
}
