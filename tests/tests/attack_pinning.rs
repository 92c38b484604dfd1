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
//!   relay's certificate, or a client's, is refused before any motion is read).

use std::path::Path;
use std::pin::Pin;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use panel_proto::pb::arbiter_link_client::ArbiterLinkClient;
use panel_proto::pb::arbiter_link_server::{ArbiterLink, ArbiterLinkServer};
use panel_proto::pb::arbiter_node_client::ArbiterNodeClient;
use panel_proto::pb::{LinkFromNode, LinkToNode, Motion, RevealRequest, link_from_node};
use panel_tests::run_folder::{log_file, logs, poll};
use panel_tests::tls::{TlsCluster, start_issued, tls};
use panel_tests::{ChildGuard, free_port, panel};
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
    let incoming =
        tonic::transport::server::TcpIncoming::bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let addr = incoming.local_addr().unwrap().to_string();
    let server = identity
        .server(ClientAuth::Optional)
        .unwrap()
        .add_service(ArbiterLinkServer::new(relay));
    rt.spawn(server.serve_with_incoming(incoming));
    addr
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `panel ARGS --addr <all replicas> --tls <client>`, retried until it succeeds (the group
/// refuses writes until its charter is applied).
fn cli_until_ok(root: &Path, c: &TlsCluster, args: &[&str]) -> String {
    poll(root, &format!("panel {}", args.join(" ")), DEADLINE, || {
        let out = panel()
            .args(args)
            .arg("--addr")
            .arg(c.addrs.join(","))
            .arg("--tls")
            .arg(c.pki.dir(pki::LOCAL_CLIENT))
            .output()
            .expect("run panel");
        out.status.success().then(|| text(&out.stdout))
    })
}

/// Generates the arbiter's key and registers it, endorsed by its organisation, to be
/// reached over its links (`--endpoint link`).
fn register(root: &Path, c: &TlsCluster, dir: &Path) -> std::path::PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let key = dir.join("arbiter.key");
    let out = panel()
        .args(["node", "keygen", "--out"])
        .arg(&key)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    cli_until_ok(root, c, &["arbiter", "list", "--json"]);
    let org_key = c.pki.signing_key_path("northwind");
    cli_until_ok(
        root,
        c,
        &[
            "arbiter",
            "register",
            "--id",
            ARBITER,
            "--key-file",
            key.to_str().unwrap(),
            "--organisation",
            "northwind",
            "--model-family",
            "fam",
            "--stance",
            "A",
            "--endpoint",
            "link",
            "--org-key",
            org_key.to_str().unwrap(),
            "--json",
        ],
    );
    key
}

/// `panel node run` for the arbiter over TLS with the charter, linking out to `connect`;
/// returns its guard and its own listen address.
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
    std::fs::write(
        dir.join("profiles.toml"),
        "[profiles.perfect]\naccuracy = 1.0\nseed = 1\n",
    )
    .unwrap();
    let port = free_port();
    std::fs::write(
        dir.join("node.toml"),
        format!(
            "listen = \"127.0.0.1:{port}\"\nkey_file = \"arbiter.key\"\ndata_dir = \"data\"\n\
             organisation = \"northwind\"\nmodel_family = \"scripted\"\n\n[judge]\nkind = \"scripted\"\n\
             profiles = \"profiles.toml\"\nprofile = \"perfect\"\n\n[transport]\ntls = \"{}\"\ncharter = \"{}\"\n",
            c.pki.dir(identity).display(),
            c.pki.charter_path().display()
        ),
    )
    .unwrap();
    let (out, err) = log_file(root, "node");
    let mut cmd = panel();
    cmd.args(["node", "run", "--config"])
        .arg(dir.join("node.toml"))
        .args(["--arbiter-id", ARBITER])
        .args(["--connect", &connect.join(",")])
        .env("RUST_LOG", "info")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err);
    (ChildGuard::spawn("node", cmd), format!("127.0.0.1:{port}"))
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
