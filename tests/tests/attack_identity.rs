//! Identity attacks (docs/SECURITY.md), each against three real replicas
//! running mutual TLS under a federation charter, written over real sockets with the
//! certificates a federation issues. Each test fails if its hole reopens:
//! - a borrowed name: contributions written under an honest arbiter's id (unsigned, signed
//!   by another key, or under a contributor name squatted before the arbiter registered)
//!   are refused or recuse nobody, and the honest arbiter is still drawn; recusal follows
//!   the key that signed, not the name;
//! - a one-organisation coalition holding arbiters of both stances cannot seat a panel
//!   alone, and once another organisation is admitted every panel seats it;
//! - an `AskPanel` flood stops at the open-motion caps per question and per identity
//!   (`--open-motions-per-question`, `--open-motions-per-identity`), refused in apply with
//!   the limit named and when to ask again, while another identity is still served;
//! - a new organisation is refused with one endorsement fewer than the charter's
//!   threshold and admitted with exactly the threshold (of three founders, two).

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use crucible::contribution::Contribution;
use ed25519_dalek::SigningKey;
use panel_coordinator::pb::coordinator::coordinator_client::CoordinatorClient;
use panel_machine::Stance;
use panel_machine::command::{
    ArbiterRegistration, ContributorRegistration, Endorsement, OrganisationAdmission,
    WireAttestation,
};
use panel_machine::features::charter_rules::{attest, attest_contributor, endorse};
use panel_machine::{ClientCommand, Command, ContributionSubmission, Query, TestCommand};
use panel_tests::panel;
use panel_tests::tls::{TlsCluster, start_issued, tls};
use panel_transport::Transport;
use panel_transport::pki::{self, IdentitySpec, Issued, Kind};
use serde_json::{Value, json};
use tonic::transport::Channel;

const NORTH: &str = pki::LOCAL_ORGANISATIONS[0];
const SOUTH: &str = pki::LOCAL_ORGANISATIONS[1];

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn key(seed: u8) -> SigningKey {
    SigningKey::from_bytes(&[seed; 32])
}

/// An organisation's roster key, as the federation issued it.
fn roster(issued: &Issued, org: &str) -> SigningKey {
    pki::read_seed_key(&issued.signing_key_path(org)).expect("roster key")
}

/// What apply answered.
#[derive(Debug)]
enum Reply {
    Applied(Value),
    Refused { code: String, message: String },
}

impl Reply {
    fn applied(self, what: &str) -> Value {
        match self {
            Reply::Applied(v) => v,
            Reply::Refused { code, message } => panic!("{what} refused ({code}): {message}"),
        }
    }

    fn refused(self, what: &str) -> (String, String) {
        match self {
            Reply::Refused { code, message } => (code, message),
            Reply::Applied(v) => panic!("{what} was applied: {v}"),
        }
    }
}

/// One certificate's writes and reads, over every replica (followers forward).
struct Client {
    transport: Transport,
    addrs: Vec<String>,
    clients: Vec<CoordinatorClient<Channel>>,
    client_id: String,
    next: u64,
}

impl Client {
    fn new(c: &TlsCluster, identity: &str, client_id: &str) -> Self {
        let transport = tls(&c.pki.dir(identity));
        let clients = c
            .addrs
            .iter()
            .map(|a| panel_coordinator::client::coordinator(&transport, a).expect("client"))
            .collect();
        Self {
            transport,
            addrs: c.addrs.clone(),
            clients,
            client_id: client_id.into(),
            next: 0,
        }
    }

    /// The request id the next write will carry (a signed contribution signs it).
    fn next_id(&self) -> u64 {
        self.next + 1
    }

    async fn send(&mut self, command: &impl serde::Serialize) -> Reply {
        self.next += 1;
        let r = panel_coordinator::client::write_with_retry(
            &mut self.clients,
            &self.client_id,
            self.next,
            command,
            Duration::from_secs(30),
        )
        .await
        .expect("the write reached the group");
        let v: Value = serde_json::from_str(&r.result_json).expect("result json");
        if r.applied {
            Reply::Applied(v)
        } else {
            Reply::Refused {
                code: v["code"].as_str().unwrap_or_default().into(),
                message: v["message"].as_str().unwrap_or_default().into(),
            }
        }
    }

    async fn write(&mut self, command: impl Into<Command>) -> Reply {
        self.send(&command.into()).await
    }

    async fn query(&self, q: Query) -> Value {
        let r = panel_coordinator::client::read(&self.transport, &self.addrs[0], &q, true)
            .await
            .expect("read");
        serde_json::from_str(&r.result_json).expect("query json")
    }

    async fn debate(&mut self, seats: usize) -> String {
        let v = self
            .send(&json!({"CreateDebate": {
                "resolution": "Resolved: a four-day week raises output per employee.",
                "pos_a": "It raises output", "pos_b": "It does not raise output",
                "seats": seats, "min_per_stance": 1, "convener": "convener",
            }}))
            .await
            .applied("CreateDebate");
        v["debate_id"].as_str().expect("debate id").to_string()
    }

    /// `AskPanel` to advance the debate from framing, under `author`.
    async fn ask(&mut self, debate: &str, author: &str) -> Reply {
        self.send(&json!({"AskPanel": {
            "debate_id": debate, "author": author,
            "question": {"kind": "advance-phase", "from": "framing"},
        }}))
        .await
    }

    /// The motion once its panel is drawn: a motion under the beacon opens unseated and
    /// is seated by the leader's next entry (docs/SECURITY.md "The beacon").
    async fn motion(&self, motion_id: &str) -> Value {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        loop {
            let m = self
                .query(Query::Motion {
                    motion_id: motion_id.into(),
                })
                .await["motion"]
                .clone();
            let awaiting = m["beacon"].is_object() && m["beacon"]["shares"].is_null();
            if !awaiting || std::time::Instant::now() > deadline {
                return m;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    }

    async fn motions_of(&self, debate: &str) -> Vec<Value> {
        self.query(Query::DebateMotions {
            debate_id: debate.into(),
        })
        .await["motions"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    /// Registers `id` endorsed by its organisation and admits it (a test command: the
    /// exam is not what these tests attack).
    async fn arbiter(&mut self, issued: &Issued, id: &str, seed: u8, org: &str, stance: Stance) {
        self.write(registration(
            id,
            &key(seed),
            org,
            &roster(issued, org),
            stance,
        ))
        .await
        .applied(&format!("register {id}"));
        self.write(TestCommand::SetAdmission {
            arbiter_id: id.into(),
            admitted: true,
            score_milli: 900,
        })
        .await
        .applied(&format!("admit {id}"));
        // Its registered stance as its standing stance: every debate created after this
        // starts with it (a raw debate of a chartered group is under the independent
        // policy, which seats by declarations).
        let standing = panel_machine::features::declared_priors::sign(
            &key(seed),
            id,
            panel_machine::features::declared_priors::STANDING,
            stance,
            700,
        )
        .expect("sign the standing stance");
        self.write(ClientCommand::DeclareStance(standing))
            .await
            .applied(&format!("{id}'s standing stance"));
    }
}

fn registration(
    id: &str,
    arbiter: &SigningKey,
    org: &str,
    roster: &SigningKey,
    stance: Stance,
) -> ClientCommand {
    let mut reg = ArbiterRegistration {
        arbiter_id: id.into(),
        public_key: hex::encode(arbiter.verifying_key().to_bytes()).into(),
        organisation: org.into(),
        model_family: format!("family-{id}"),
        stance,
        endpoint: "link".into(),
        attestation: None,
        lineage: None,
    };
    reg.attestation = Some(attest(&reg, arbiter, roster).expect("attest"));
    ClientCommand::RegisterArbiter(reg)
}

fn contributor(name: &str, k: &SigningKey, org: &str, roster: &SigningKey) -> ClientCommand {
    let mut reg = ContributorRegistration {
        name: name.into(),
        public_key: hex::encode(k.verifying_key().to_bytes()).into(),
        organisation: org.into(),
        attestation: WireAttestation {
            proof: Default::default(),
            endorsement: Default::default(),
        },
    };
    reg.attestation = attest_contributor(&reg, k, roster).expect("attest contributor");
    ClientCommand::RegisterContributor(reg)
}

/// A definition under `author`, signed by `signer` for the client's next request id.
fn definition(
    c: &Client,
    debate: &str,
    author: &str,
    term: &str,
    signer: Option<&SigningKey>,
) -> ClientCommand {
    let mut sub = ContributionSubmission {
        debate_id: debate.into(),
        author: author.into(),
        side: "A".into(),
        model_family: None,
        contribution: Contribution::Definition {
            term: term.into(),
            definition: "Goods and services produced per hour worked.".into(),
        },
        hints: Default::default(),
        signature: None,
        random_sample: false,
    };
    if let Some(k) = signer {
        sub.signature = Some(
            panel_machine::authorship::sign(k, &sub, &c.client_id, c.next_id()).expect("sign"),
        );
    }
    ClientCommand::Contribute(sub)
}

fn seated(motion: &Value) -> BTreeSet<String> {
    motion["seats"]
        .as_array()
        .expect("seats")
        .iter()
        .map(|s| s["arbiter_id"].as_str().expect("arbiter id").to_string())
        .collect()
}

fn organisations_seated(motion: &Value) -> BTreeSet<String> {
    motion["seats"]
        .as_array()
        .expect("seats")
        .iter()
        .map(|s| {
            s["organisation"]
                .as_str()
                .expect("organisation")
                .to_string()
        })
        .collect()
}

/// A chartered TLS group of the local federation plus `clients` (name, organisation),
/// its replicas started with `extra` flags.
fn group(root: &Path, clients: &[(&str, &str)], extra: &[&str]) -> TlsCluster {
    let mut plan = pki::local_plan(3, &[]);
    for (name, org) in clients {
        plan.identities.push(IdentitySpec {
            kind: Kind::Client,
            name: (*name).into(),
            organisation: (*org).into(),
            hosts: vec![],
        });
    }
    let issued = pki::issue(&plan, &root.join("pki")).expect("issue");
    let extra: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
    start_issued(root, issued, &extra)
}

/// Hole "names exclude arbiters": the draw once skipped any arbiter whose id equalled a
/// contributor name, and names were free text, so two definitions written under honest
/// arbiters' ids blocked every draw of a debate.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_borrowed_arbiter_name_neither_blocks_the_draw_nor_recuses_the_arbiter() {
    let root = tempfile::tempdir().unwrap();
    let c = group(root.path(), &[], &["--test-commands"]);
    let mut w = Client::new(&c, pki::LOCAL_CLIENT, "names-test");
    let north = roster(&c.pki, NORTH);
    let mallory = key(66);
    let squatter = key(67);

    w.arbiter(&c.pki, "arb-a", 11, NORTH, Stance::A).await;
    // An insider of northwind binds two names: its own, and the id an honest southbank
    // arbiter is about to register under.
    w.write(contributor("mallory", &mallory, NORTH, &north))
        .await
        .applied("register contributor mallory");
    w.write(contributor("arb-b", &squatter, NORTH, &north))
        .await
        .applied("register contributor arb-b (before any arbiter holds that id)");
    let deb = w.debate(2).await;
    // Written under the squatted name while no arbiter holds it: accepted, and it must
    // not keep the arbiter who later registers as arb-b off the panel.
    let squat = definition(&w, &deb, "arb-b", "output", Some(&squatter));
    w.write(squat)
        .await
        .applied("the squatted name's definition");
    w.arbiter(&c.pki, "arb-b", 12, SOUTH, Stance::B).await;

    // Writes under the arbiters' ids: unsigned, signed by the squatter's bound key, or by
    // another contributor's key. All refused as authorship, naming the arbiter's key.
    let unsigned = definition(&w, &deb, "arb-a", "week", None);
    let (code, m) = w
        .write(unsigned)
        .await
        .refused("an unsigned write as arb-a");
    assert_eq!(code, "authorship", "{m}");
    assert!(m.contains("registered arbiter's id"), "{m}");
    let squatted = definition(&w, &deb, "arb-b", "week", Some(&squatter));
    let (code, m) = w
        .write(squatted)
        .await
        .refused("the squatter writing as arb-b");
    assert_eq!(code, "authorship", "{m}");
    assert!(m.contains("arb-b"), "{m}");
    let foreign = definition(&w, &deb, "arb-a", "hour", Some(&mallory));
    let (code, m) = w.write(foreign).await.refused("mallory writing as arb-a");
    assert_eq!(code, "authorship", "{m}");
    // Nor can the arbiter's id be bound as a contributor name now, and no name is
    // claimed on first use.
    let (code, m) = w
        .write(contributor("arb-a", &key(68), NORTH, &north))
        .await
        .refused("binding arb-a as a contributor name");
    assert_eq!(code, "charter", "{m}");
    assert!(m.contains("arbiter's id"), "{m}");
    let first_use = definition(&w, &deb, "zed", "hour", None);
    let (code, m) = w
        .write(first_use)
        .await
        .refused("a name claimed on first use");
    assert_eq!(code, "charter", "{m}");
    assert!(m.contains("not registered"), "{m}");
    let first_signed = definition(&w, &deb, "zed", "hour", Some(&key(69)));
    let (_, m) = w
        .write(first_signed)
        .await
        .refused("a name claimed by a first signed use");
    assert!(m.contains("not registered"), "{m}");

    // The honest contributor is served.
    let honest = definition(&w, &deb, "mallory", "employee", Some(&mallory));
    w.write(honest).await.applied("mallory's own definition");

    // The draw is not blocked and recuses nobody: both arbiters sit.
    let v = w.ask(&deb, "asker").await.applied("AskPanel on the debate");
    let motion = w.motion(v["motion_id"].as_str().expect("motion id")).await;
    assert_eq!(
        seated(&motion),
        BTreeSet::from(["arb-a".to_string(), "arb-b".to_string()]),
        "{motion}"
    );
    assert_eq!(motion["spec"]["contributors"], json!([]), "{motion}");

    // Control: recusal follows the signing key. Where arb-a signed a contribution with its
    // own key, it is recused and the two-arbiter pool cannot seat stance A.
    let deb2 = w.debate(2).await;
    let own = definition(&w, &deb2, "arb-a", "output", Some(&key(11)));
    w.write(own).await.applied("arb-a's own signed definition");
    let (code, m) = w
        .ask(&deb2, "asker")
        .await
        .refused("AskPanel where arb-a contributed");
    assert_eq!(code, "draw_failed", "{m}");
    assert!(m.contains("stance A"), "{m}");
}

/// Hole "a one-organisation coalition": an organisation holding arbiters of both stances
/// filled every seat and carried the motion alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_one_organisation_coalition_cannot_seat_a_panel_alone() {
    let root = tempfile::tempdir().unwrap();
    let c = group(root.path(), &[], &["--test-commands"]);
    let mut w = Client::new(&c, pki::LOCAL_CLIENT, "coalition-test");
    for (i, (id, stance)) in [
        ("nw-a1", Stance::A),
        ("nw-a2", Stance::A),
        ("nw-b1", Stance::B),
        ("nw-b2", Stance::B),
    ]
    .into_iter()
    .enumerate()
    {
        w.arbiter(&c.pki, id, 21 + i as u8, NORTH, stance).await;
    }
    let small = w.debate(2).await;
    let large = w.debate(4).await;
    for deb in [&small, &large] {
        let (code, m) = w
            .ask(deb, "coalition")
            .await
            .refused("a panel of one organisation");
        assert_eq!(code, "draw_failed", "{m}");
        assert!(m.contains("cannot seat 2 organisations"), "{m}");
        assert!(m.contains("best: 1"), "{m}");
        assert!(w.motions_of(deb).await.is_empty(), "no motion opened");
    }
    // Nor may a debate ask for less agreement than the charter's floor.
    let (code, m) = w
        .send(&json!({"CreateDebate": {
            "resolution": "Resolved: a four-day week raises output per employee.",
            "pos_a": "yes", "pos_b": "no", "seats": 2, "min_per_stance": 1,
            "convener": "coalition",
            "policy": {"quorum": null, "min_net_support_per_side": 0},
        }}))
        .await
        .refused("a debate below the floor");
    assert_eq!(code, "charter", "{m}");
    assert!(m.contains("below the charter's floor"), "{m}");

    // One arbiter of another organisation joins: every panel now seats it, so the
    // coalition never holds all the seats.
    w.arbiter(&c.pki, "sb-b1", 31, SOUTH, Stance::B).await;
    let mut debates = vec![small];
    for _ in 0..3 {
        debates.push(w.debate(2).await);
    }
    for deb in &debates {
        let v = w.ask(deb, "asker").await.applied("AskPanel");
        let motion = w.motion(v["motion_id"].as_str().expect("motion id")).await;
        assert_eq!(
            organisations_seated(&motion),
            BTreeSet::from([NORTH.to_string(), SOUTH.to_string()]),
            "{motion}"
        );
        assert!(seated(&motion).contains("sb-b1"), "{motion}");
    }
}

/// Hole "an `AskPanel` flood": 3 s of panel requests opened 1,516 motions, most of them
/// open for good.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ask_panel_flood_stops_at_the_open_motion_caps() {
    let root = tempfile::tempdir().unwrap();
    // Long windows: no node answers, and the motions must stay open while the test asks.
    let c = group(
        root.path(),
        &[("honest-asker", SOUTH)],
        &[
            "--test-commands",
            "--open-motions-per-question",
            "1",
            "--open-motions-per-identity",
            "3",
            "--commit-window-ms",
            "60000",
            "--reveal-window-ms",
            "60000",
        ],
    );
    let mut w = Client::new(&c, pki::LOCAL_CLIENT, "flood-setup");
    w.arbiter(&c.pki, "arb-a", 41, NORTH, Stance::A).await;
    w.arbiter(&c.pki, "arb-b", 42, SOUTH, Stance::B).await;
    let mut debates = Vec::new();
    for _ in 0..5 {
        debates.push(w.debate(2).await);
    }

    // One question: the first request opens a motion, the rest are refused in apply with
    // the limit named and when to ask again, whatever client id or author they use.
    let mut flooder = Client::new(&c, pki::LOCAL_CLIENT, "flooder");
    flooder
        .ask(&debates[0], "flooder")
        .await
        .applied("the first request");
    let mut first = None;
    for n in 0..15 {
        flooder.client_id = format!("flooder-{n}");
        let (code, m) = flooder
            .ask(&debates[0], &format!("author-{n}"))
            .await
            .refused("a second request on one question");
        first.get_or_insert((code, m));
    }
    let (code, m) = first.unwrap();
    assert_eq!(code, "quota_exceeded", "{m}");
    assert!(
        m.contains("advance-phase")
            && m.contains(&debates[0])
            && m.contains("(at most 1, replica option --open-motions-per-question)"),
        "{m}"
    );
    assert!(m.contains("ask again once they are decided"), "{m}");
    assert_eq!(w.motions_of(&debates[0]).await.len(), 1);

    // Across questions: the identity's cap of three open requests binds.
    for deb in &debates[1..3] {
        flooder.ask(deb, "flooder").await.applied("a request");
    }
    let mut refusals = Vec::new();
    for n in 0..15 {
        flooder.client_id = format!("rotated-{n}");
        let deb = &debates[3 + n % 2];
        refusals.push(
            flooder
                .ask(deb, &format!("rotated-{n}"))
                .await
                .refused("a fourth open request"),
        );
    }
    for (code, m) in &refusals {
        assert_eq!(code, "quota_exceeded", "{m}");
        assert!(
            m.contains("already has 3 open panel requests (at most 3, replica option --open-motions-per-identity)"),
            "{m}"
        );
        assert!(m.contains("ask again once some are decided"), "{m}");
    }
    for deb in &debates[3..] {
        assert!(w.motions_of(deb).await.is_empty(), "{deb} got a motion");
    }
    let open: usize = {
        let mut n = 0;
        for deb in &debates {
            n += w
                .motions_of(deb)
                .await
                .iter()
                .filter(|m| m["status"] == "Open")
                .count();
        }
        n
    };
    assert_eq!(open, 3, "the flood opened {open} motions");

    // Another identity is still served on the questions the flooder was refused.
    let mut honest = Client::new(&c, "honest-asker", "honest");
    let v = honest
        .ask(&debates[3], "honest")
        .await
        .applied("the honest identity's request");
    let motion = w.motion(v["motion_id"].as_str().expect("motion id")).await;
    assert_eq!(motion["status"], "Open", "{motion}");
}

/// Hole "organisation admission": a new organisation must carry the endorsements of the
/// charter's threshold of distinct member organisations, and one fewer is not enough.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admitting_an_organisation_takes_the_charters_threshold_of_endorsements() {
    let root = tempfile::tempdir().unwrap();
    // Three founders, so the threshold (a majority: two) is neither one nor all.
    let mut plan = pki::local_plan(3, &[]);
    plan.organisations.push("eastwood".into());
    let issued = pki::issue(&plan, &root.path().join("pki")).expect("issue");
    assert_eq!(issued.charter.admission_threshold, 2);
    let c = start_issued(root.path(), issued, &[]);
    let mut w = Client::new(&c, pki::LOCAL_CLIENT, "admission-test");

    let westmark_roster = key(150);
    let mut adm: OrganisationAdmission = serde_json::from_value(json!({
        "organisation": {
            "name": "westmark",
            "ca_sha256": hex::encode([9u8; 32]),
            "signing_key": hex::encode(westmark_roster.verifying_key().to_bytes()),
        },
        "endorsements": [],
    }))
    .expect("admission");
    let by = |adm: &OrganisationAdmission, name: &str, signer: &SigningKey| Endorsement {
        by: name.into(),
        signature: endorse(&adm.organisation, signer).expect("endorse"),
    };
    let north = roster(&c.pki, NORTH);
    let south = roster(&c.pki, SOUTH);
    let newcomer_arbiter =
        || registration("wm-a1", &key(151), "westmark", &westmark_roster, Stance::A);

    // Not a member yet: its arbiters are refused.
    let (code, m) = w
        .write(newcomer_arbiter())
        .await
        .refused("an arbiter of a non-member");
    assert_eq!(code, "charter", "{m}");
    assert!(m.contains("not in the federation charter"), "{m}");

    let tries: Vec<(&str, Vec<Endorsement>, &str)> = vec![
        // k - 1 endorsements.
        (
            "one endorsement",
            vec![by(&adm, NORTH, &north)],
            "requires 2",
        ),
        // k - 1 distinct endorsers, one of them twice.
        (
            "one founder twice",
            vec![by(&adm, NORTH, &north), by(&adm, NORTH, &north)],
            "1 distinct member organisation(s)",
        ),
        // Two names, one key: southbank's endorsement made with northwind's key.
        (
            "a forged second endorsement",
            vec![by(&adm, NORTH, &north), by(&adm, SOUTH, &north)],
            "endorsements[1]",
        ),
        // The newcomer endorsing itself.
        (
            "a self-endorsement",
            vec![
                by(&adm, NORTH, &north),
                by(&adm, "westmark", &westmark_roster),
            ],
            "not a member",
        ),
    ];
    for (what, endorsements, expect) in tries {
        adm.endorsements = endorsements;
        let (code, m) = w
            .write(ClientCommand::AdmitOrganisation(adm.clone()))
            .await
            .refused(what);
        assert_eq!(code, "charter", "{what}: {m}");
        assert!(m.contains("organisation admission refused"), "{what}: {m}");
        assert!(m.contains(expect), "{what}: {m}");
    }
    let (_, m) = w
        .write(newcomer_arbiter())
        .await
        .refused("an arbiter of a refused organisation");
    assert!(m.contains("not in the federation charter"), "{m}");

    // Exactly k: admitted, and its roster key now endorses its arbiters.
    adm.endorsements = vec![by(&adm, NORTH, &north), by(&adm, SOUTH, &south)];
    let v = w
        .write(ClientCommand::AdmitOrganisation(adm.clone()))
        .await
        .applied("the admission with the threshold's endorsements");
    assert_eq!(v["organisation"], "westmark", "{v}");
    assert_eq!(v["endorsed_by"], json!([NORTH, SOUTH]), "{v}");
    w.write(newcomer_arbiter())
        .await
        .applied("an arbiter of the admitted organisation");
    let (_, m) = w
        .write(ClientCommand::AdmitOrganisation(adm.clone()))
        .await
        .refused("a second admission");
    assert!(m.contains("already a member"), "{m}");
    let arbiters = w.query(Query::Arbiters).await;
    let listed = arbiters["arbiters"].as_array().expect("arbiters");
    assert!(
        listed
            .iter()
            .any(|a| a["registration"]["organisation"] == "westmark"),
        "{arbiters}"
    );

    // The record replays to the same state under the trusted charter.
    let record = root.path().join("record.json");
    let out = panel()
        .args(["export", "--out"])
        .arg(&record)
        .arg("--addr")
        .arg(c.addrs.join(","))
        .arg("--tls")
        .arg(c.pki.dir(pki::LOCAL_CLIENT))
        .output()
        .expect("run panel export");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = panel()
        .arg("verify")
        .arg(&record)
        .arg("--charter")
        .arg(c.pki.charter_path())
        .output()
        .expect("run panel verify");
    assert!(
        out.status.success(),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
}
