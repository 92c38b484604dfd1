//! Attacks on a real `panel node run` process over gRPC: forged and misattributed
//! rulings, every signed field tampered, replays onto another motion or state, reveals
//! without or against their commitment, second commitments, outsiders, late and early
//! messages, oversized and malformed messages; unsigned, foreign-signed and altered
//! motions, and the pre-commit attack on a predicted motion id (docs/SECURITY.md). Each is
//! refused with a specific error.

mod node_support;

use node_support::*;
use panel_proto::commit_reveal;
use panel_proto::pb::arbiter_node_client::ArbiterNodeClient;
use panel_proto::pb::{
    ContentProjection, Decision, ListRulingsRequest, Motion, MotionKind, PanelSeat, RecordSource,
    Reveal, RevealRequest, Ruling,
};
use panel_proto::{SigningKey, sign_ruling};
use tonic::transport::Channel;
use tonic::{Code, Status};

/// A peer arbiter played by the test: holds its key in memory, runs no node.
fn peer_key(label: u8) -> SigningKey {
    SigningKey::from_bytes(&[label; 32])
}

fn seat(k: &SigningKey) -> PanelSeat {
    PanelSeat {
        public_key: k.verifying_key().to_bytes().to_vec(),
        endpoint: String::new(),
    }
}

fn ruling_for(m: &Motion) -> Ruling {
    Ruling {
        motion_id: m.motion_id.clone(),
        debate_id: m.debate_id.clone(),
        kind: m.kind,
        state_hash: m.state_hash.clone(),
        decision: Decision::Reject as i32,
        probability: 0.3,
        relevance: None,
        tier: None,
        quantiles: vec![],
        receipt: None,
        rationale: "The candidate's new source does not support its claim.".into(),
        arbiter_key: vec![],
        issued_at_unix_ms: m.commit_deadline_unix_ms - 1_000,
        // Envelope v2: bound to the signed motion the peer judged.
        motion_digest: panel_proto::motion_digest(m).to_vec(),
        provenance: None,
    }
}

/// An honest delivery from `key`: signed ruling, salt, and the commitment it opens.
fn delivery(key: &SigningKey, r: Ruling, salt: u8) -> Reveal {
    let sr = sign_ruling(key, r.clone()).unwrap();
    let c = commit_reveal::commit(key, &sr, &[salt; 32], r.issued_at_unix_ms).unwrap();
    Reveal {
        signed_ruling: Some(sr),
        salt: vec![salt; 32],
        commitment: Some(c),
    }
}

fn expect(res: Result<impl std::fmt::Debug, Status>, code: Code, needle: &str, what: &str) {
    match res {
        Ok(v) => panic!("{what}: accepted ({v:?}), expected {code:?}"),
        Err(s) => {
            assert_eq!(s.code(), code, "{what}: {s}");
            assert!(
                s.message().contains(needle),
                "{what}: message {:?} lacks {needle:?}",
                s.message()
            );
        }
    }
}

async fn deliver(
    c: &mut ArbiterNodeClient<Channel>,
    d: Reveal,
) -> Result<panel_proto::pb::DeliverAck, Status> {
    c.deliver(d).await.map(|r| r.into_inner())
}

/// Own records the node holds for a motion id (none means nothing was judged or stored).
async fn own_records(c: &mut ArbiterNodeClient<Channel>, motion_id: &str) -> usize {
    c.list_rulings(ListRulingsRequest {
        motion_id: motion_id.into(),
        source: RecordSource::Own as i32,
        ..Default::default()
    })
    .await
    .unwrap()
    .into_inner()
    .records
    .len()
}

/// docs/SECURITY.md: a node judges only motions its coordinator signed, exactly as signed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unsigned_unknown_key_and_altered_motions_are_refused_before_judging() {
    let root = tempfile::tempdir().unwrap();
    let node = start_node(root.path(), "victim", SCRIPTED_PERFECT, "").await;
    let mut c = node.client().await;
    let panel = vec![node.seat(), seat(&peer_key(21))];
    let real = merge_motion("m-s", state(1), panel.clone(), 3_000);

    expect(
        c.commit(real.clone()).await,
        Code::Unauthenticated,
        "is unsigned",
        "unsigned motion",
    );
    let rogue = panel_proto::sign_motion(&peer_key(66), real.clone());
    expect(
        c.commit(rogue).await,
        Code::Unauthenticated,
        "coordinator_keys",
        "motion signed by an unknown key",
    );
    type Alter = (&'static str, fn(&mut Motion));
    let alterations: &[Alter] = &[
        ("projection text", |m| {
            m.projection.as_mut().unwrap().items[0].text = "Cites nothing at all.".into()
        }),
        ("truth hint", |m| {
            m.projection
                .as_mut()
                .unwrap()
                .expected
                .as_mut()
                .unwrap()
                .decision = Decision::Reject as i32
        }),
        ("commit deadline", |m| m.commit_deadline_unix_ms += 60_000),
        ("reveal deadline", |m| m.reveal_deadline_unix_ms += 1),
        ("seat endpoint", |m| {
            m.panel[1].endpoint = "http://127.0.0.1:9".into()
        }),
    ];
    for (what, alter) in alterations {
        let mut m = sign(real.clone());
        alter(&mut m);
        expect(
            c.commit(m).await,
            Code::Unauthenticated,
            "does not verify",
            what,
        );
    }
    // None of the refusals left a record: the honest signed motion is judged afresh.
    assert_eq!(own_records(&mut c, "m-s").await, 0);
    c.commit(sign(real.clone()))
        .await
        .expect("the signed motion is judged");
    assert_eq!(own_records(&mut c, "m-s").await, 1);
}

/// The pre-commit attack: an attacker predicts a motion id and commits the node on it with
/// the real state hash and altered content, to learn the ruling early and have the
/// coordinator record the altered content's answer. Nothing is judged on the forgery; the
/// real motion is judged on its own content and its ruling binds the real motion's digest.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pre_commit_on_a_predicted_motion_id_leaks_nothing() {
    let root = tempfile::tempdir().unwrap();
    let node = start_node(root.path(), "victim", SCRIPTED_PERFECT, "").await;
    let mut c = node.client().await;
    let panel = vec![node.seat(), seat(&peer_key(31))];
    // The real motion: the perfect judge answers its truth hint, ACCEPT.
    let real = sign(merge_motion("m-x", state(3), panel.clone(), 2_500));
    let mut forged = real.clone();
    {
        let p = forged.projection.as_mut().unwrap();
        p.items[0].text = "The candidate fabricates its source.".into();
        p.expected.as_mut().unwrap().decision = Decision::Reject as i32;
    }
    // With the real signature, unsigned, and re-signed by the attacker's own key.
    let mut unsigned = forged.clone();
    unsigned.signature.clear();
    unsigned.signer_key.clear();
    for (what, m) in [
        ("forged content under the real signature", forged.clone()),
        ("forged content unsigned", unsigned),
        (
            "forged content signed by the attacker",
            panel_proto::sign_motion(&peer_key(99), forged.clone()),
        ),
    ] {
        expect(c.commit(m).await, Code::Unauthenticated, "motion", what);
    }
    assert_eq!(own_records(&mut c, "m-x").await, 0, "nothing was judged");

    let commitment = c
        .commit(real.clone())
        .await
        .expect("real motion")
        .into_inner();
    // A second, differently signed motion under the same id (another round's deadlines)
    // is refused and carries nothing of the stored ruling.
    let mut other_round = real.clone();
    other_round.commit_deadline_unix_ms += 1;
    let other_round = sign(other_round);
    match c.commit(other_round.clone()).await {
        Ok(v) => panic!("second motion under m-x accepted: {v:?}"),
        Err(s) => {
            assert_eq!(s.code(), Code::AlreadyExists, "{s}");
            assert!(s.message().contains("second commitment refused"), "{s}");
            assert!(!s.message().contains("ACCEPT"), "{s}");
            assert!(s.details().is_empty(), "{s}");
        }
    }
    // Re-Commit of the very same motion is idempotent.
    let again = c
        .commit(real.clone())
        .await
        .expect("same motion")
        .into_inner();
    assert_eq!(again, commitment);

    wait_past(real.commit_deadline_unix_ms).await;
    expect(
        c.reveal(RevealRequest {
            motion_id: "m-x".into(),
            motion_digest: panel_proto::motion_digest(&other_round).to_vec(),
        })
        .await,
        Code::FailedPrecondition,
        "committed on another motion",
        "reveal asked for another motion under the id",
    );
    let reveal = c
        .reveal(RevealRequest {
            motion_id: "m-x".into(),
            motion_digest: panel_proto::motion_digest(&real).to_vec(),
        })
        .await
        .expect("reveal of the real motion")
        .into_inner();
    let sr = reveal.signed_ruling.unwrap();
    assert_eq!(sr.envelope_version, 2);
    let ruling = panel_proto::verify_ruling(&sr, &panel_proto::VerifiedMemo::default()).unwrap();
    assert_eq!(
        ruling.decision,
        Decision::Accept as i32,
        "judged on the real content"
    );
    assert_eq!(
        ruling.motion_digest,
        panel_proto::motion_digest(&real).to_vec()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_refuses_attacks_with_specific_errors() {
    let root = tempfile::tempdir().unwrap();
    let node = start_node(
        root.path(),
        "victim",
        SCRIPTED_PERFECT,
        "max_message_bytes = 65536",
    )
    .await;
    let mut c = node.client().await;
    let (p, q, outsider) = (peer_key(11), peer_key(12), peer_key(13));
    let panel = vec![node.seat(), seat(&p), seat(&q)];

    let m1 = sign(merge_motion("m-1", state(1), panel.clone(), 2_500));
    let m2 = sign(merge_motion("m-2", state(2), panel.clone(), 2_500));
    c.commit(sign(m1.clone())).await.expect("commit m-1");
    c.commit(sign(m2.clone())).await.expect("commit m-2");

    // --- Before the window closes -------------------------------------------------------
    expect(
        deliver(&mut c, delivery(&p, ruling_for(&m1), 1)).await,
        Code::FailedPrecondition,
        "before the commit window",
        "early delivery",
    );
    expect(
        c.reveal(RevealRequest {
            motion_id: "m-1".into(),
            motion_digest: Vec::new(),
        })
        .await,
        Code::FailedPrecondition,
        "reveal before the commit window closes",
        "early reveal",
    );

    // --- Commit-side attacks on the node itself ----------------------------------------
    let mut other_state = m1.clone();
    other_state.state_hash = state(9);
    expect(
        c.commit(sign(other_state)).await,
        Code::AlreadyExists,
        "second commitment refused",
        "second commitment on m-1",
    );
    let mut not_on_panel = merge_motion("m-np", state(3), vec![seat(&p), seat(&q)], 2_500);
    not_on_panel.debate_id = "d-1".into();
    expect(
        c.commit(sign(not_on_panel)).await,
        Code::PermissionDenied,
        "not on the motion's panel",
        "not on panel",
    );
    let late = merge_motion("m-late", state(4), panel.clone(), -10);
    expect(
        c.commit(sign(late)).await,
        Code::FailedPrecondition,
        "commit window",
        "late commit",
    );
    let mut short_hash = merge_motion("m-sh", vec![1, 2, 3, 4, 5], panel.clone(), 2_500);
    short_hash.kind = MotionKind::Merge as i32;
    expect(
        c.commit(sign(short_hash)).await,
        Code::InvalidArgument,
        "state_hash is 5 bytes",
        "short state hash",
    );
    let mut bad_kind = merge_motion("m-bk", state(5), panel.clone(), 2_500);
    bad_kind.kind = 42;
    expect(
        c.commit(sign(bad_kind)).await,
        Code::InvalidArgument,
        "motion kind 42",
        "unknown kind",
    );
    let mut window = merge_motion("m-w", state(6), panel.clone(), 2_500);
    window.reveal_deadline_unix_ms = window.commit_deadline_unix_ms - 1;
    expect(
        c.commit(sign(window)).await,
        Code::InvalidArgument,
        "reveal deadline lies before",
        "inverted window",
    );

    // Oversized: a motion beyond the node's 64 KiB message limit.
    let mut huge = merge_motion("m-huge", state(7), panel.clone(), 2_500);
    huge.projection = Some(ContentProjection {
        question: "x".repeat(100_000),
        ..Default::default()
    });
    expect(
        c.commit(sign(huge)).await,
        Code::OutOfRange,
        "message length too large",
        "oversized motion",
    );

    // Malformed: bytes that are not a protobuf Motion.
    let malformed = raw::unary(
        &node.endpoint(),
        "/crucible.panel.v1.ArbiterNode/Commit",
        vec![0xff; 64],
    )
    .await;
    expect(malformed, Code::Internal, "decod", "malformed protobuf");
    let malformed = raw::unary(
        &node.endpoint(),
        "/crucible.panel.v1.ArbiterNode/Deliver",
        vec![0x0a, 0x10, 0x01],
    )
    .await;
    expect(malformed, Code::Internal, "decod", "truncated protobuf");

    wait_past(m1.commit_deadline_unix_ms).await;

    // --- Deliveries after the window -----------------------------------------------------
    let honest = delivery(&p, ruling_for(&m1), 1);
    let ack = deliver(&mut c, honest.clone())
        .await
        .expect("honest delivery stored");
    assert!(ack.stored && !ack.duplicate);
    let ack = deliver(&mut c, honest.clone())
        .await
        .expect("re-delivery is idempotent");
    assert!(ack.duplicate);

    // Forged signature.
    let mut forged = delivery(&q, ruling_for(&m1), 2);
    forged.signed_ruling.as_mut().unwrap().signature[7] ^= 0x20;
    expect(
        deliver(&mut c, forged).await,
        Code::Unauthenticated,
        "signature does not verify",
        "forged signature",
    );

    // Wrong key: signed by the outsider, labelled as arbiter q's.
    let mut wrong_key = delivery(&outsider, ruling_for(&m1), 2);
    wrong_key
        .signed_ruling
        .as_mut()
        .unwrap()
        .ruling
        .as_mut()
        .unwrap()
        .arbiter_key = q.verifying_key().to_bytes().to_vec();
    expect(
        deliver(&mut c, wrong_key).await,
        Code::Unauthenticated,
        "signature does not verify",
        "wrong key",
    );

    // Every signed field tampered after signing.
    type Tamper = (&'static str, fn(&mut Ruling));
    let tampers: &[Tamper] = &[
        ("motion_id", |r| r.motion_id = "m-2".into()),
        ("debate_id", |r| r.debate_id = "d-2".into()),
        ("kind", |r| r.kind = MotionKind::Reject as i32),
        ("state_hash", |r| r.state_hash[0] ^= 1),
        ("decision", |r| r.decision = Decision::Accept as i32),
        ("probability", |r| r.probability = 0.31),
        ("relevance", |r| r.relevance = Some(2)),
        ("tier", |r| r.tier = Some(2)),
        ("rationale", |r| r.rationale.push('!')),
        ("issued_at", |r| r.issued_at_unix_ms += 1),
    ];
    for (field, tamper) in tampers {
        let mut d = delivery(&q, ruling_for(&m1), 3);
        tamper(d.signed_ruling.as_mut().unwrap().ruling.as_mut().unwrap());
        expect(
            deliver(&mut c, d).await,
            Code::Unauthenticated,
            "signature does not verify",
            field,
        );
    }

    // Replays: a validly signed ruling on another state of m-1, and one for m-2 carrying
    // m-1's state (a ruling moved onto another motion).
    let mut stale = ruling_for(&m1);
    stale.state_hash = state(99);
    expect(
        deliver(&mut c, delivery(&q, stale, 4)).await,
        Code::InvalidArgument,
        "replayed ruling refused",
        "replay onto another state hash",
    );
    let mut moved = ruling_for(&m1);
    moved.motion_id = "m-2".into();
    expect(
        deliver(&mut c, delivery(&q, moved, 4)).await,
        Code::InvalidArgument,
        "cannot be replayed onto another",
        "replay onto another motion",
    );

    // Reveal without commitment; mismatching reveal; commitment forged for someone else.
    let mut no_commit = delivery(&q, ruling_for(&m1), 5);
    no_commit.commitment = None;
    expect(
        deliver(&mut c, no_commit).await,
        Code::FailedPrecondition,
        "reveal without commitment",
        "no commitment",
    );
    let mut wrong_salt = delivery(&q, ruling_for(&m1), 5);
    wrong_salt.salt = vec![0x66; 32];
    expect(
        deliver(&mut c, wrong_salt).await,
        Code::InvalidArgument,
        "does not match the commitment",
        "mismatching reveal",
    );
    let mut changed_mind = delivery(&q, ruling_for(&m1), 5);
    let mut flipped = ruling_for(&m1);
    flipped.decision = Decision::Accept as i32;
    flipped.probability = 0.9;
    changed_mind.signed_ruling = Some(sign_ruling(&q, flipped).unwrap());
    expect(
        deliver(&mut c, changed_mind).await,
        Code::InvalidArgument,
        "does not match the commitment",
        "ruling swapped after commit",
    );
    let mut stolen_commitment = delivery(&q, ruling_for(&m1), 5);
    stolen_commitment.commitment.as_mut().unwrap().arbiter_key =
        p.verifying_key().to_bytes().to_vec();
    expect(
        deliver(&mut c, stolen_commitment).await,
        Code::Unauthenticated,
        "commitment signature does not verify",
        "forged commitment",
    );

    // An outsider's perfectly valid ruling.
    expect(
        deliver(&mut c, delivery(&outsider, ruling_for(&m1), 6)).await,
        Code::PermissionDenied,
        "not on the panel",
        "outsider",
    );

    // Second commitment by p: a different ruling with its own valid commitment.
    let mut second = ruling_for(&m1);
    second.probability = 0.25;
    expect(
        deliver(&mut c, delivery(&p, second, 7)).await,
        Code::AlreadyExists,
        "second commitment refused",
        "second commitment by peer",
    );

    // A motion this node never saw, and the node's own ruling delivered back.
    let unknown = merge_motion("m-unknown", state(8), panel.clone(), -5_000);
    expect(
        deliver(&mut c, delivery(&q, ruling_for(&unknown), 8)).await,
        Code::FailedPrecondition,
        "unknown motion",
        "unknown motion",
    );
    let own = c
        .reveal(RevealRequest {
            motion_id: "m-1".into(),
            motion_digest: Vec::new(),
        })
        .await
        .unwrap()
        .into_inner();
    expect(
        deliver(&mut c, own).await,
        Code::InvalidArgument,
        "this node's own",
        "own ruling delivered back",
    );
    expect(
        c.reveal(RevealRequest {
            motion_id: "m-none".into(),
            motion_digest: Vec::new(),
        })
        .await,
        Code::NotFound,
        "reveal without commitment",
        "reveal of a motion never committed",
    );

    // Only the honest delivery was stored.
    let stored = c
        .list_rulings(ListRulingsRequest {
            source: RecordSource::Peer as i32,
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
        .records;
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0].signed_ruling, honest.signed_ruling);
}

/// A gRPC client that sends raw bytes, to put malformed protobuf on the wire.
mod raw {
    use prost::bytes::{Buf, BufMut};
    use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
    use tonic::{Status, client::Grpc, transport::Endpoint};

    #[derive(Default, Clone)]
    pub struct RawCodec;
    pub struct RawEnc;
    pub struct RawDec;

    impl Encoder for RawEnc {
        type Item = Vec<u8>;
        type Error = Status;
        fn encode(&mut self, item: Vec<u8>, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
            dst.put_slice(&item);
            Ok(())
        }
    }
    impl Decoder for RawDec {
        type Item = Vec<u8>;
        type Error = Status;
        fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Vec<u8>>, Status> {
            let v = src.chunk().to_vec();
            src.advance(v.len());
            Ok(Some(v))
        }
    }
    impl Codec for RawCodec {
        type Encode = Vec<u8>;
        type Decode = Vec<u8>;
        type Encoder = RawEnc;
        type Decoder = RawDec;
        fn encoder(&mut self) -> RawEnc {
            RawEnc
        }
        fn decoder(&mut self) -> RawDec {
            RawDec
        }
    }

    pub async fn unary(
        endpoint: &str,
        path: &'static str,
        body: Vec<u8>,
    ) -> Result<Vec<u8>, Status> {
        let ch = Endpoint::from_shared(endpoint.to_owned())
            .unwrap()
            .connect()
            .await
            .unwrap();
        let mut g = Grpc::new(ch);
        g.ready().await.unwrap();
        g.unary(tonic::Request::new(body), path.parse().unwrap(), RawCodec)
            .await
            .map(|r| r.into_inner())
    }
}
