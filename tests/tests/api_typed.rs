//! The typed debate API and streamed writes on a real 3-replica cluster: every call goes
//! to a follower (forwarding included), a Gate refusal carries its violations as a
//! structured `GateReport`, contributor signatures bind an author name to a key (and
//! forged, unsigned and replayed writes under that name are refused), and `WriteStream`
//! answers many writes on one stream, matched by request id.

use std::time::{Duration, Instant};

use crucible::contribution::Contribution;
use ed25519_dalek::SigningKey;
use panel_coordinator::pb::coordinator as pb;
use panel_coordinator::pb::coordinator::coordinator_client::CoordinatorClient;
use panel_coordinator::pb::coordinator::debates_client::DebatesClient;
use panel_machine::Policy;
use panel_machine::authorship;
use panel_machine::rules::acceptance::Rule;
use panel_machine::{ContributionSubmission, Query, TestCommand};
use panel_tests::{ChildGuard, init_cluster, loopback_addrs, spawn_replicas};
use prost::Message;
use serde_json::Value;
use tonic::transport::Channel;

fn start(root: &std::path::Path) -> (Vec<ChildGuard>, Vec<String>) {
    let addrs = loopback_addrs(3);
    let guards = spawn_replicas(root, &addrs, |_, _| {});
    init_cluster(&addrs);
    (guards, addrs)
}

/// A follower's address, once a leader is elected.
async fn follower(addrs: &[String]) -> String {
    let t = Instant::now();
    loop {
        for a in addrs {
            if let Ok(s) =
                panel_coordinator::client::status(&panel_transport::Transport::InsecureLoopback, a)
                    .await
                && s.has_leader
                && s.role == "Follower"
            {
                return a.clone();
            }
        }
        assert!(t.elapsed() < Duration::from_secs(30), "no follower");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn by(debate: &str, author: &str, rid: u64) -> pb::Authored {
    pb::Authored {
        client_id: "typed-test".into(),
        request_id: rid,
        debate_id: debate.into(),
        author: author.into(),
        side: "A".into(),
        ..Default::default()
    }
}

/// The submission the server builds from a `DefineRequest`, for signing.
fn definition(debate: &str, author: &str, text: &str) -> ContributionSubmission {
    ContributionSubmission {
        debate_id: debate.into(),
        author: author.into(),
        side: "A".into(),
        model_family: None,
        contribution: Contribution::Definition {
            term: "harm".into(),
            definition: text.into(),
        },
        hints: Default::default(),
        signature: None,
        random_sample: false,
    }
}

fn signed_define(
    key: &SigningKey,
    debate: &str,
    author: &str,
    text: &str,
    signed_rid: u64,
    sent_rid: u64,
) -> pb::DefineRequest {
    let s = authorship::sign(
        key,
        &definition(debate, author, text),
        "typed-test",
        signed_rid,
    )
    .unwrap();
    let mut b = by(debate, author, sent_rid);
    b.signature = Some(pb::ContributorSignature {
        public_key: s.public_key.bytes().unwrap().into_owned(),
        signature: s.signature.bytes().unwrap().into_owned(),
    });
    pb::DefineRequest {
        by: Some(b),
        term: "harm".into(),
        definition: text.into(),
    }
}

fn result(r: &pb::WriteReply) -> Value {
    serde_json::from_str(&r.result_json).unwrap()
}

#[test]
fn typed_api_signed_writes_and_write_stream() {
    let dir = tempfile::tempdir().unwrap();
    let (_guards, addrs) = start(dir.path());
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let addr = follower(&addrs).await;
        let ch: Channel = Channel::from_shared(format!("http://{addr}"))
            .unwrap()
            .connect()
            .await
            .unwrap();
        let mut api = DebatesClient::new(ch.clone());

        let created = api
            .create_debate(pb::CreateDebateRequest {
                client_id: "typed-test".into(),
                request_id: 1,
                convener: "conv".into(),
                resolution: "A four-day week raises output".into(),
                pos_a: "It does".into(),
                pos_b: "It does not".into(),
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner();
        assert!(created.applied, "{}", created.result_json);
        let debate = result(&created)["debate_id"].as_str().unwrap().to_string();
        // A request that does not name a rule gets the independent one; the older rule only
        // by name; a rule that does not exist is refused and creates nothing.
        let mut reads = CoordinatorClient::new(ch.clone());
        let policy_of = |debate_id: String| {
            let mut reads = reads.clone();
            async move {
                let q = serde_json::to_string(&Query::Debate { debate_id }).unwrap();
                let r = reads
                    .read(pb::ReadRequest {
                        query_json: q,
                        ..Default::default()
                    })
                    .await
                    .unwrap()
                    .into_inner();
                serde_json::from_str::<Value>(&r.result_json).unwrap()["debate"]["policy"].clone()
            }
        };
        let as_json = |p: Policy| serde_json::to_value(p).unwrap();
        assert_eq!(
            policy_of(debate.clone()).await,
            as_json(Rule::Independent.policy())
        );
        let ask = |request_id: u64, rule: i32| pb::CreateDebateRequest {
            client_id: "typed-test".into(),
            request_id,
            convener: "conv".into(),
            resolution: "A four-day week raises output".into(),
            pos_a: "It does".into(),
            pos_b: "It does not".into(),
            rule,
            ..Default::default()
        };
        let old = api
            .create_debate(ask(50, pb::AcceptanceRule::HeadCount as i32))
            .await
            .unwrap()
            .into_inner();
        assert!(old.applied, "{}", old.result_json);
        let old_id = result(&old)["debate_id"].as_str().unwrap().to_string();
        assert_eq!(policy_of(old_id).await, as_json(Rule::HeadCount.policy()));
        let err = api.create_debate(ask(51, 7)).await.unwrap_err();
        assert_eq!(err.code(), tonic::Code::InvalidArgument);
        assert!(err.message().contains("rule: 7"), "{}", err.message());
        let listed = reads
            .read(pb::ReadRequest {
                query_json: serde_json::to_string(&Query::Debates).unwrap(),
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner();
        let listed: Value = serde_json::from_str(&listed.result_json).unwrap();
        assert_eq!(
            listed["debates"].as_array().map(Vec::len),
            Some(2),
            "{listed}"
        );

        // An unsigned write through a typed call (the debate is in framing: definitions).
        let claim = |assertion: &str| pb::Claim {
            r#type: "logical".into(),
            assertion: assertion.into(),
            grounds: "Shorter weeks reduce fatigue according to the cited trial data.".into(),
            warrant: "Less fatigue raises output per hour.".into(),
            evidence: vec![],
            qualifier: "probable".into(),
        };
        let t = api
            .define(pb::DefineRequest {
                by: Some(by(&debate, "carol", 2)),
                term: "output".into(),
                definition: "goods and services produced per hour worked".into(),
            })
            .await
            .unwrap()
            .into_inner();
        assert!(t.applied, "{}", t.result_json);
        assert!(result(&t)["signed_by"].is_null());

        // A Gate refusal (before proposal, whatever the phase): the status names the rule,
        // and its details are a GateReport with rule, field, excerpt and fix. Nothing is
        // recorded.
        let long = "word ".repeat(60);
        let err = api
            .open_thread(pb::OpenThreadRequest {
                by: Some(by(&debate, "carol", 3)),
                title: "Too long".into(),
                claim: Some(claim(long.trim())),
            })
            .await
            .unwrap_err();
        assert_eq!(err.code(), tonic::Code::InvalidArgument);
        assert!(err.message().contains("G3"), "{}", err.message());
        let report = pb::GateReport::decode(err.details()).unwrap();
        let g3 = report
            .violations
            .iter()
            .find(|v| v.rule == "G3")
            .expect("a G3 violation in the report");
        assert!(!g3.fix.is_empty() && !g3.excerpt.is_empty() && !g3.field.is_empty());
        let doc = api
            .get_debate(pb::DebateRef {
                debate_id: debate.clone(),
            })
            .await
            .unwrap()
            .into_inner();
        let doc: Value = serde_json::from_str(&doc.document_json).unwrap();
        assert!(doc["threads"].as_array().is_none_or(Vec::is_empty), "{doc}");

        // Signed writes: alice's first signed write binds her name to her key.
        let alice = SigningKey::from_bytes(&[41; 32]);
        let mallory = SigningKey::from_bytes(&[42; 32]);
        let ok = api
            .define(signed_define(
                &alice,
                &debate,
                "alice",
                "measurable injury",
                10,
                10,
            ))
            .await
            .unwrap()
            .into_inner();
        assert!(ok.applied, "{}", ok.result_json);
        assert_eq!(
            result(&ok)["signed_by"].as_str().unwrap(),
            hex::encode(alice.verifying_key().to_bytes())
        );
        // The same request again is the same write (deduplicated), not a second one.
        let again = api
            .define(signed_define(
                &alice,
                &debate,
                "alice",
                "measurable injury",
                10,
                10,
            ))
            .await
            .unwrap()
            .into_inner();
        assert!(again.duplicate);
        // Unsigned, signed by another key, replayed under new ids, or altered: refused, and
        // the refusal names the problem.
        let unsigned = api
            .define(pb::DefineRequest {
                by: Some(by(&debate, "alice", 11)),
                term: "harm".into(),
                definition: "anything at all".into(),
            })
            .await
            .unwrap()
            .into_inner();
        assert!(!unsigned.applied);
        assert!(unsigned.result_json.contains("signs its writes with key"));
        let forged = api
            .define(signed_define(
                &mallory, &debate, "alice", "anything", 12, 12,
            ))
            .await
            .unwrap()
            .into_inner();
        assert!(!forged.applied);
        assert!(
            forged.result_json.contains("is bound to key"),
            "{}",
            forged.result_json
        );
        let replayed = api
            .define(signed_define(
                &alice,
                &debate,
                "alice",
                "measurable injury",
                10,
                13,
            ))
            .await
            .unwrap()
            .into_inner();
        assert!(!replayed.applied);
        assert!(replayed.result_json.contains("does not verify"));
        let mut altered = signed_define(&alice, &debate, "alice", "measurable injury", 14, 14);
        altered.definition = "anything at all".into();
        let altered = api.define(altered).await.unwrap().into_inner();
        assert!(!altered.applied);
        assert!(altered.result_json.contains("does not verify"));

        // Reads.
        let doc = api
            .get_debate(pb::DebateRef {
                debate_id: debate.clone(),
            })
            .await
            .unwrap()
            .into_inner();
        let doc: Value = serde_json::from_str(&doc.document_json).unwrap();
        let defs = doc["definitions"].to_string();
        assert!(defs.contains("measurable injury") && !defs.contains("anything at all"));
        let list = api
            .list_debates(pb::ListDebatesRequest {})
            .await
            .unwrap()
            .into_inner();
        assert!(list.debates.iter().any(|d| d.debate_id == debate));
        api.list_motions(pb::DebateRef {
            debate_id: debate.clone(),
        })
        .await
        .unwrap();
        let verdicts = api
            .get_verdicts(pb::DebateRef {
                debate_id: debate.clone(),
            })
            .await
            .unwrap()
            .into_inner();
        assert!(verdicts.verdict_json.is_empty());
        let missing = api
            .get_debate(pb::DebateRef {
                debate_id: "deb_nope".into(),
            })
            .await
            .unwrap_err();
        assert_eq!(missing.code(), tonic::Code::NotFound);
        let export = api
            .export_record(pb::ExportRequest {})
            .await
            .unwrap()
            .into_inner();
        let bundle: Value = serde_json::from_str(&export.bundle_json).unwrap();
        assert!(bundle["entries"].as_array().unwrap().len() >= 3);
        // Record format v2: the log's signed checkpoints (C2SP notes), the last one covering
        // every entry (docs/WIRE.md section 11).
        let last = bundle["checkpoints"]
            .as_array()
            .and_then(|c| c.last())
            .and_then(Value::as_str)
            .unwrap_or_else(|| panic!("no checkpoints in {bundle}"));
        assert!(last.contains("\n\n\u{2014} "), "not a signed note: {last}");

        // Many writes on one stream, plus one malformed: every request gets its own answer.
        let mut c = CoordinatorClient::new(ch);
        let mut reqs: Vec<pb::WriteRequest> = (0..20u64)
            .map(|i| pb::WriteRequest {
                client_id: "stream-test".into(),
                request_id: i,
                command_json: serde_json::to_string(&TestCommand::Note {
                    topic: "stream".into(),
                    text: format!("n{i}"),
                })
                .unwrap(),
                forwarded: false,
                ..Default::default()
            })
            .collect();
        reqs.push(pb::WriteRequest {
            client_id: "stream-test".into(),
            request_id: 99,
            command_json: "{not json".into(),
            forwarded: false,
            ..Default::default()
        });
        let mut replies = c
            .write_stream(tokio_stream::iter(reqs))
            .await
            .unwrap()
            .into_inner();
        let mut seen = std::collections::BTreeMap::new();
        while let Some(r) = replies.message().await.unwrap() {
            seen.insert(r.request_id, r);
        }
        assert_eq!(seen.len(), 21);
        for i in 0..20u64 {
            let r = seen[&i].reply.as_ref().expect("applied");
            assert!(r.applied, "{}", r.result_json);
        }
        assert_eq!(seen[&99].error_code, tonic::Code::InvalidArgument as i32);
        assert!(seen[&99].error_message.contains("not a client command"));
    });
}
