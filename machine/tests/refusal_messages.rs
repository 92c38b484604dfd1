//! Every error names its fix (docs/REFUSALS.md): each stable refusal code a client can receive
//! from `apply` has a case here whose message must name what resolves it (a `panel ...`
//! command, a flag, a charter or replica setting, or what to send instead), and a row in
//! docs/REFUSALS.md. A new code, a new `ApplyError` variant or a new protocol code fails
//! this test until it has both, so no refusal ships without saying how to get past it.

use panel_machine::RefusalCode;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use panel_machine::apply::{RevocationError, RotationError, RoundError};

use panel_machine::State;
use panel_machine::authorship::AuthorshipError;
use panel_machine::debates::DebateError;
use panel_machine::features::admission::{ExamMotionError, ExamRefusal};
use panel_machine::features::appeal_credits::AppealCreditError;
use panel_machine::features::beacon::BeaconError;
use panel_machine::features::breakers::BreakerError;
use panel_machine::features::charter_rules::CharterRuleError;
use panel_machine::features::checkpoints::CheckpointError;
use panel_machine::features::declared_priors::DeclarationRefusal;
use panel_machine::features::exam_sitting::SittingError;
use panel_machine::features::last_word::LastWordError;
use panel_machine::features::limits::LimitError;
use panel_machine::features::priors::PriorCheckError;
use panel_machine::features::run_convener::ConvenerError;
use panel_machine::features::run_roles::RoleError;
use panel_machine::model::ReplyText;
use panel_machine::rules::draw::DrawError;
use panel_machine::rules::ruling::{RevealError, RulingError};
use panel_machine::rules::signed_motion::MotionError;
use panel_machine::{ApplyError, apply_batch};
use panel_machine::{Batch, ClientCommand, Command, Item, ItemReply, TestCommand};
use panel_machine::{Policy, Stance};
use panel_procedures::{ContractError, Finding, ProcedureError};
use panel_proto::VerifiedMemo;
use serde_json::json;

/// One refusal as a client receives it, with what its message must contain to name the fix.
struct Case {
    /// Where the case comes from, for failure messages.
    what: String,
    code: String,
    message: String,
    /// Every needle must appear in the message.
    needles: &'static [&'static str],
}

fn case(e: ApplyError, needles: &'static [&'static str]) -> Case {
    Case {
        what: format!("{e:?}"),
        code: e.code().to_string(),
        message: e.to_string(),
        needles,
    }
}

fn from_reply(
    what: &str,
    r: ItemReply<panel_machine::Reply>,
    needles: &'static [&'static str],
) -> Case {
    let ItemReply::Refused { code, message } = r else {
        panic!("{what}: expected a refusal, got {r:?}");
    };
    Case {
        what: what.to_owned(),
        code: code.to_string(),
        message,
        needles,
    }
}

fn s(v: &str) -> String {
    v.to_owned()
}

// ---- driving the real apply ----

fn write(
    state: &mut State,
    n: u64,
    command: impl Into<Command>,
) -> ItemReply<panel_machine::Reply> {
    let batch = Batch {
        time_ms: 1_000 + n,
        seed: n,
        items: vec![Item {
            client_id: "refusals".into(),
            request_id: n,
            command: command.into(),
            writer: None,
        }],
        limits: None,
        checkpoints: None,
        rules: None,
    };
    let r = apply_batch(state, n, &batch, &VerifiedMemo::default());
    r.items.into_iter().next().expect("one item").reply
}

fn applied(r: ItemReply<panel_machine::Reply>) -> serde_json::Value {
    match r {
        ItemReply::Applied(v) => v.to_json(),
        other => panic!("refused: {other:?}"),
    }
}

fn key_hex(i: u8) -> String {
    let key = ed25519_dalek::SigningKey::from_bytes(&[i + 1; 32]);
    hex::encode(key.verifying_key().to_bytes())
}

fn registration(i: u8, id: &str, org: &str) -> ClientCommand {
    ClientCommand::RegisterArbiter(
        serde_json::from_value(json!({
            "arbiter_id": id, "public_key": key_hex(i), "organisation": org,
            "model_family": format!("fam-{id}"), "stance": "A",
        }))
        .expect("registration"),
    )
}

/// Four admitted arbiters registered as stance A, none of which declared a stance.
fn admitted_pool() -> State {
    let mut s = State::default();
    for (i, (id, org)) in [("a1", "o1"), ("a2", "o2"), ("a3", "o1"), ("a4", "o2")]
        .into_iter()
        .enumerate()
    {
        let n = 2 * i as u64 + 1;
        applied(write(&mut s, n, registration(i as u8, id, org)));
        applied(write(
            &mut s,
            n + 1,
            TestCommand::SetAdmission {
                arbiter_id: id.into(),
                admitted: true,
                score_milli: 900,
            },
        ));
    }
    s
}

/// The refusals produced by real commands through `apply_batch`.
fn driven() -> Vec<Case> {
    let mut out = Vec::new();
    let mut s = admitted_pool();
    // A debate under declared stances, and a motion on it before anyone declared.
    let spec = serde_json::from_value(json!({
        "resolution": "Resolved: shorter weeks raise output.", "pos_a": "yes", "pos_b": "no",
        "seats": 2, "min_per_stance": 1, "convener": "c", "policy": Policy::independent(),
    }))
    .expect("debate");
    let v = applied(write(&mut s, 20, ClientCommand::CreateDebate(spec)));
    let debate = v["debate_id"].as_str().expect("debate id").to_owned();
    let motion = serde_json::from_value(json!({
        "motion_id": "m1", "debate_id": debate, "kind": "Merge", "state_hash": "ab".repeat(32),
        "seats": 2, "min_per_stance": 1, "contributors": [], "author_model_family": null,
        "policy": Policy::independent(), "question": null,
    }))
    .expect("motion");
    let r = write(&mut s, 21, TestCommand::OpenMotion(Box::new(motion)));
    // The brief's own example: a draw failure names the missing declarations and the
    // command that makes them.
    out.push(from_reply(
        "draw with no declarations",
        r,
        &["panel arbiter declare", "a1, a2, a3, a4", "--debate"],
    ));
    out.push(from_reply(
        "reissue on a missing debate",
        write(
            &mut s,
            22,
            ClientCommand::ReissueVerdict {
                debate_id: "deb_nope".into(),
                author: "x".into(),
            },
        ),
        &["panel debate list", "panel debate new"],
    ));
    out.push(from_reply(
        "register an id twice",
        write(&mut s, 23, registration(9, "a1", "o1")),
        &["panel arbiter register --id NEW_ID", "panel node rotate"],
    ));
    out.push(from_reply(
        "register another id with a taken key",
        write(&mut s, 24, registration(0, "z9", "o1")),
        &["panel node keygen"],
    ));
    out.push(from_reply(
        "admit an unregistered arbiter",
        write(
            &mut s,
            25,
            TestCommand::SetAdmission {
                arbiter_id: "ghost".into(),
                admitted: true,
                score_milli: 900,
            },
        ),
        &["panel arbiter register --id ghost"],
    ));
    out.push(from_reply(
        "a stored reply that does not decode",
        serde_json::from_str::<ReplyText>("42")
            .expect("raw json")
            .reply()
            .into_typed(),
        &["panel coordinator run --restore"],
    ));
    out
}

// ---- constructed values, one or more per code ----

fn constructed() -> Vec<Case> {
    let motion = || s("m1");
    let arbiter = || s("a1");
    let rounds: Vec<(RoundError, &'static [&'static str])> = vec![
        (
            RoundError::Unsealed(panel_federation::motion_seal::SealError::Quorum {
                motion_id: motion(),
                source: panel_tlog::LogQuorumError::TooFew {
                    found: 1,
                    required: 2,
                    signed_by: vec![s("north")],
                },
            }),
            &[
                "collect the signatures of the other organisations' replicas",
                "sealed it",
            ],
        ),
        (
            RoundError::AlreadyLogged {
                motion: motion(),
                log_index: 3,
            },
            &["send reveals"],
        ),
        (
            RoundError::Expired {
                motion: motion(),
                reveal_deadline: 1,
                now: 2,
            },
            &["put a fresh round"],
        ),
        (
            RoundError::BadCommitment {
                motion: motion(),
                index: 0,
                reason: s("not hex"),
            },
            &["send each commitment exactly as the seat signed it"],
        ),
        (
            RoundError::NotSeated {
                motion: motion(),
                index: 0,
                fingerprint: s("ab12"),
            },
            &["leave it out"],
        ),
        (
            RoundError::SecondCommitment {
                motion: motion(),
                arbiter: arbiter(),
            },
            &["send one commitment per seat"],
        ),
        (
            RoundError::Late {
                motion: motion(),
                arbiter: arbiter(),
                at: 5,
                deadline: 4,
            },
            &["--commit-window"],
        ),
        (RoundError::NoRound(motion()), &["LogCommitments"]),
        (
            RoundError::OutsideWindow {
                motion: motion(),
                now: 1,
                commit_deadline: 2,
                reveal_deadline: 3,
            },
            &["reveal inside it"],
        ),
        (
            RoundError::WithoutCommitment {
                motion: motion(),
                arbiter: arbiter(),
            },
            &["only a logged commitment can be revealed"],
        ),
        (
            RoundError::Mismatch {
                motion: motion(),
                arbiter: arbiter(),
                reason: s("salt"),
            },
            &["send the signed ruling and salt"],
        ),
        (
            RoundError::AlreadyRevealed {
                motion: motion(),
                arbiter: arbiter(),
                submitted_by: s("node"),
                log_index: 4,
            },
            &["a repeated reveal changes nothing"],
        ),
        (
            RoundError::Equivocation {
                motion: motion(),
                arbiter: arbiter(),
            },
            &["already on the record"],
        ),
        (
            RoundError::TooEarly {
                motion: motion(),
                now: 1,
                deadline: 2,
                pending: vec![arbiter()],
            },
            &["close after the deadline"],
        ),
        (
            RoundError::RoundRequired {
                motion: motion(),
                logged_at: Some(3),
            },
            &["close it with CloseMotion"],
        ),
    ];
    let limits: Vec<(LimitError, &'static [&'static str])> = vec![
        (
            LimitError::RateLimited {
                limit: "per-identity",
                who: s("identity x"),
                per_minute: 60,
                burst: 10,
                retry_secs: 2,
            },
            &["retry in 2 s"],
        ),
        (
            LimitError::FairShare {
                limit: s("all writers' debates"),
                who: s("organisation o1"),
                share_burst: 2,
                share_per_minute: 3,
                weight: 1,
                total_weight: 2,
                classes: 2,
                retry_secs: 4,
            },
            &["retry in 4 s"],
        ),
        (
            LimitError::StoredReplies {
                who: s("identity x"),
                bound_of: "one identity",
                rows: 10,
                bound: 10,
                retry_secs: 9,
            },
            &["retry in 9 s"],
        ),
        (
            LimitError::DebatesPerIdentity {
                identity: s("x"),
                count: 5,
            },
            &["--debates-per-identity"],
        ),
        (
            LimitError::ContributionsPerDebate {
                debate: s("deb_1"),
                count: 5,
            },
            &["--contributions-per-debate"],
        ),
        (
            LimitError::OpenMotionsPerQuestion {
                debate: s("deb_1"),
                question: s("q"),
                open: 2,
                max: 2,
            },
            &["--open-motions-per-question"],
        ),
        (
            LimitError::OpenMotionsPerIdentity {
                identity: s("x"),
                open: 2,
                max: 2,
            },
            &["--open-motions-per-identity"],
        ),
    ];
    let mut out: Vec<Case> = vec![
        case(
            ApplyError::Empty { field: "debate_id" },
            &["give a non-empty debate_id"],
        ),
        case(
            ApplyError::ArbiterExists(arbiter()),
            &["panel arbiter register", "panel node rotate"],
        ),
        case(
            ApplyError::UnknownArbiter(arbiter()),
            &["panel arbiter register --id a1", "panel arbiter list"],
        ),
        case(ApplyError::MotionExists(motion()), &["fresh motion id"]),
        case(
            ApplyError::UnknownMotion(motion()),
            &["panel motion list --debate", "panel ask"],
        ),
        case(
            ApplyError::MotionClosed(motion()),
            &["panel motion show m1", "panel ask"],
        ),
        case(
            ApplyError::DuplicateRuling(arbiter()),
            &["send one ruling per arbiter"],
        ),
        case(
            ApplyError::Ruling(RulingError::Malformed { reason: s("odd") }),
            &["send panel-proto's SignedRuling"],
        ),
        case(
            ApplyError::Draw(DrawError::NotEnoughOfStance {
                stance: Stance::A,
                needed: 2,
                available: 1,
            }),
            &["panel arbiter register", "--min-per-stance"],
        ),
        case(
            ApplyError::Draw(DrawError::PoolTooSmall {
                needed: 4,
                available: 2,
            }),
            &["panel arbiter register", "--seats"],
        ),
        case(
            ApplyError::Draw(DrawError::SeatsBelowStanceMinimum {
                seats: 2,
                min_per_stance: 2,
            }),
            &["panel debate new --seats"],
        ),
        case(
            ApplyError::Draw(DrawError::NotEnoughOrganisations {
                needed: 2,
                reached: 1,
            }),
            &["panel arbiter register --organisation", "panel org admit"],
        ),
        case(
            ApplyError::Undeclared {
                debate: s("deb_1"),
                stance: Stance::B,
                needed: 2,
                available: 0,
                declared: 1,
                undeclared: (0..10).map(|i| format!("x{i}")).collect(),
            },
            &[
                "panel arbiter declare --id ID --key-file FILE --debate deb_1",
                "x0, x1",
                "and 2 more",
            ],
        ),
        case(
            ApplyError::BadStateHash(s("xyz")),
            &["send the SHA-256 of the debate document"],
        ),
        case(
            ApplyError::Debate(DebateError::UnknownDebate(s("deb_9"))),
            &["panel debate list", "panel debate new"],
        ),
        case(
            ApplyError::Debate(DebateError::Gate(crucible::gate::GateRefusal {
                violations: vec![crucible::gate::Violation {
                    rule: crucible::gate::RuleId::G1,
                    rule_name: "rule",
                    field: s("Assertion"),
                    excerpt: s("..."),
                    message: s("too short"),
                    fix: "write a full sentence",
                }],
            })),
            &["write a full sentence", "panel gate"],
        ),
        case(
            ApplyError::Debate(DebateError::NoQuestion(motion())),
            &["panel motion show m1"],
        ),
        case(
            ApplyError::Exam(ExamRefusal::Motion(ExamMotionError::Malformed {
                index: 0,
                reason: s("odd"),
            })),
            &["panel arbiter show"],
        ),
        case(
            ApplyError::Sitting(SittingError::PublicPool(s("public"))),
            &["exam_pools"],
        ),
        case(
            ApplyError::Sitting(SittingError::StillOpen(2)),
            &["reveal its key"],
        ),
        case(
            ApplyError::Sitting(SittingError::NoneOpen),
            &["the driver seals a pool first"],
        ),
        case(
            ApplyError::PriorCheck(PriorCheckError::NoHistory),
            &["panel coordinator write", "CheckPriors"],
        ),
        case(
            ApplyError::Revocation(RevocationError::UnknownKey { key: s("ab") }),
            &["panel node revoke"],
        ),
        case(
            ApplyError::Rotation(RotationError::UnknownOldKey {
                fingerprint: s("ab"),
            }),
            &["panel node rotate --old"],
        ),
        case(ApplyError::KeyInUse(arbiter()), &["panel node keygen"]),
        case(
            ApplyError::Revoked(arbiter()),
            &["panel node keygen", "panel arbiter register"],
        ),
        case(
            ApplyError::CommitmentRequired(motion()),
            &["submit reveals"],
        ),
        case(
            ApplyError::BadReveal {
                motion: motion(),
                reason: RevealError::Incomplete,
            },
            &["send the reveal exactly as the node made it"],
        ),
        case(
            ApplyError::Motion(MotionError::NotHex),
            &["send the motion exactly as the driver signed it"],
        ),
        case(
            ApplyError::Authorship(AuthorshipError::ArbiterName { author: arbiter() }),
            &["--key FILE"],
        ),
        case(
            ApplyError::TooManyOpenMotions {
                debate: s("deb_1"),
                open: 64,
                max: 64,
            },
            &["panel motion list --debate deb_1"],
        ),
        case(
            ApplyError::Charter(CharterRuleError::UnregisteredContributor(s("alice"))),
            &["panel org register-contributor --name alice", "--key FILE"],
        ),
        case(
            ApplyError::Charter(CharterRuleError::Unattested(arbiter())),
            &["panel arbiter register --key-file", "--org-key"],
        ),
        case(
            ApplyError::Charter(CharterRuleError::NameTaken(s("alice"))),
            &["panel org register-contributor", "--key FILE"],
        ),
        case(
            ApplyError::Checkpoint(CheckpointError::UnknownWitness {
                line: 1,
                name: s("w"),
            }),
            &["drop the line"],
        ),
        case(
            ApplyError::Checkpoint(CheckpointError::NoCheckpoint(9)),
            &["panel monitor"],
        ),
        case(
            ApplyError::UnknownRun(s("run_9")),
            &["panel runs", "panel crux run"],
        ),
        case(
            ApplyError::TooManyRuns { max: 10_000 },
            &["panel coordinator init"],
        ),
        case(
            ApplyError::Procedure(ProcedureError::Contract(ContractError::Rule {
                what: "crux input",
                path: s("$.positions"),
                rule: s("two positions"),
            })),
            &["fix the input at that JSON path", "docs/PROCEDURES.md"],
        ),
        case(
            ApplyError::Procedure(ProcedureError::Refused(vec![Finding {
                rule: s("crux.length_ratio"),
                at: s("positions[1]"),
                reason: s("too long"),
            }])),
            &["change the input as the findings say"],
        ),
        case(
            ApplyError::Procedure(ProcedureError::OutOfOrder {
                input: s("nomination"),
                awaiting: s("form"),
            }),
            &["it waits for form", "panel runs"],
        ),
        case(
            ApplyError::Procedure(ProcedureError::UnknownQuestion(s("q9"))),
            &["panel runs", "panel crux show"],
        ),
        case(
            ApplyError::RunRole(RoleError::Unsigned {
                run: s("run_1"),
                role: s("critic"),
                fingerprint: s("ab"),
            }),
            &["panel runs submit", "--key"],
        ),
        case(
            ApplyError::RunConvener(ConvenerError::Unsigned { convener: s("c") }),
            &[
                "--convener NAME --key FILE",
                "panel org register-contributor",
            ],
        ),
        case(
            ApplyError::NoFreshPanel {
                contested_sitters: 4,
            },
            &["admit more arbiters"],
        ),
        case(
            ApplyError::Declaration(DeclarationRefusal::UnknownArbiter(arbiter())),
            &["panel arbiter register --id a1"],
        ),
        case(
            ApplyError::Declaration(DeclarationRefusal::UnknownDebate(s("deb_9"))),
            &["panel debate list"],
        ),
        case(
            ApplyError::Breaker(BreakerError::Paused {
                scope: "motions",
                reason: s("drill"),
                by: s("o1, o2"),
                log_index: 4,
                required: 2,
            }),
            &[
                "panel org endorse-breaker --lift",
                "panel org breaker --lift",
            ],
        ),
        case(
            ApplyError::Breaker(BreakerError::TooFewEndorsers {
                endorsers: s("o1"),
                found: 1,
                required: 2,
            }),
            &["panel org endorse-breaker"],
        ),
        case(
            ApplyError::LastWord(LastWordError::NoAuthority),
            &["panel pki init --last-word NAME"],
        ),
        case(
            ApplyError::LastWord(LastWordError::Signature(s("another key"))),
            &["panel debate last-word --key FILE"],
        ),
        case(
            ApplyError::Beacon(BeaconError::NotAwaiting(s("m1"))),
            &["panel motion show m1"],
        ),
        case(
            ApplyError::Beacon(BeaconError::NoShares),
            &["send the proof"],
        ),
        case(
            ApplyError::Beacon(BeaconError::NoKey(4)),
            &["panel pki init"],
        ),
        case(
            ApplyError::Beacon(BeaconError::Organisations { got: 1, needed: 2 }),
            &["keep a replica of each of 2 organisations up"],
        ),
        case(
            ApplyError::Beacon(BeaconError::Share {
                replica: 2,
                source: panel_federation::beacon_key::BeaconKeyError::Invalid,
            }),
            &["with the key its charter entry names"],
        ),
        case(
            ApplyError::from(AppealCreditError::Short {
                organisation: s("north"),
                debate: s("deb_1"),
                round: 2,
                price: 4,
                first: 2,
                balance: 1,
                per_period: 1,
                period_ms: 86_400_000,
                next_at_ms: 1_790_086_400_000,
                cap: 8,
                affordable_at_ms: Some(1_790_259_200_000),
            }),
            &[
                "holds 1",
                "costs 4",
                "next at",
                "file the appeal again then",
                "panel debate show deb_1",
            ],
        ),
        case(
            ApplyError::from(AppealCreditError::Short {
                organisation: s("north"),
                debate: s("deb_1"),
                round: 4,
                price: 16,
                first: 2,
                balance: 8,
                per_period: 1,
                period_ms: 86_400_000,
                next_at_ms: 1_790_086_400_000,
                cap: 8,
                affordable_at_ms: None,
            }),
            &["costs 16", "no budget ever holds that much"],
        ),
        case(
            ApplyError::from(AppealCreditError::NoOrganisation { author: s("alice") }),
            &["panel org register-contributor"],
        ),
        case(
            ApplyError::from(
                panel_machine::features::sample_appeals::SampleAppealError::NotAnAppeal {
                    op: s("definition"),
                },
            ),
            &["only an appeal", "without it"],
        ),
        case(
            ApplyError::from(
                panel_machine::features::sample_appeals::SampleAppealError::NotInForce {
                    rules: 21,
                },
            ),
            &["rule set 22", "without --random-sample"],
        ),
        case(
            ApplyError::Unencodable {
                what: "the command",
                reason: s("key must be a string"),
            },
            &["nothing was applied", "plain values"],
        ),
    ];
    out.extend(rounds.into_iter().map(|(e, n)| case(e.into(), n)));
    out.extend(limits.into_iter().map(|(e, n)| case(e.into(), n)));
    out
}

// ---- the source and the docs, to hold the cases complete ----

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(root().join(rel)).unwrap_or_else(|e| panic!("read {rel}: {e}"))
}

/// Every code of the machine's own: the typed list every refusal is made from
/// (`RefusalCode::KNOWN`; the engine's codes are `protocol_codes`).
fn codes_in_machine_source() -> BTreeSet<String> {
    RefusalCode::KNOWN
        .iter()
        .map(|c| c.as_str().to_owned())
        .collect()
}

/// The protocol writers' codes (crucible's `Code::as_str`).
fn protocol_codes() -> BTreeSet<String> {
    crucible::Code::ALL
        .iter()
        .map(|c| c.as_str().to_owned())
        .collect()
}

/// The variant names of `pub enum ApplyError` in apply/error.rs.
fn apply_error_variants() -> BTreeSet<String> {
    let text = read("machine/src/apply/error.rs");
    let body = text
        .split("pub enum ApplyError {")
        .nth(1)
        .and_then(|b| b.split("\n}\n").next())
        .expect("ApplyError in apply/error.rs");
    body.lines()
        .filter_map(|l| l.strip_prefix("    "))
        .filter(|l| l.starts_with(|c: char| c.is_ascii_uppercase()))
        .map(|l| {
            l.split(|c: char| !c.is_ascii_alphanumeric())
                .next()
                .unwrap_or_default()
                .to_owned()
        })
        .collect()
}

/// Codes of the table rows (`| \`code\` | ...`) under each `## ` heading of REFUSALS.md.
fn doc_rows() -> BTreeMap<String, BTreeSet<String>> {
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut section = String::new();
    for line in read("docs/REFUSALS.md").lines() {
        if let Some(h) = line.strip_prefix("## ") {
            section = h.trim().to_owned();
        } else if let Some(code) = line
            .strip_prefix("| `")
            .and_then(|rest| rest.split('`').next())
        {
            out.entry(section.clone())
                .or_default()
                .insert(code.to_owned());
        }
    }
    out
}

fn all_cases() -> Vec<Case> {
    let mut cases = driven();
    cases.extend(constructed());
    cases
}

#[test]
fn every_refusal_message_names_its_fix() {
    let mut failures = Vec::new();
    for c in all_cases() {
        for needle in c.needles {
            if !c.message.contains(needle) {
                failures.push(format!(
                    "{} ({}): message does not name {needle:?}:\n    {}",
                    c.code, c.what, c.message
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_code_in_the_source_has_a_case() {
    let covered: BTreeSet<String> = all_cases().into_iter().map(|c| c.code).collect();
    let codes = codes_in_machine_source();
    assert!(codes.len() > 40, "parsed only {codes:?}");
    let missing: Vec<_> = codes.into_iter().filter(|c| !covered.contains(c)).collect();
    assert!(
        missing.is_empty(),
        "refusal codes without a case in machine/tests/refusal_messages.rs: {missing:?}"
    );
}

#[test]
fn every_apply_error_variant_has_a_case() {
    let covered: BTreeSet<String> = all_cases()
        .into_iter()
        .map(|c| {
            c.what
                .split(|ch: char| !ch.is_ascii_alphanumeric())
                .next()
                .unwrap_or_default()
                .to_owned()
        })
        .collect();
    let variants = apply_error_variants();
    assert!(variants.len() > 30, "parsed {variants:?}");
    let missing: Vec<_> = variants.difference(&covered).collect();
    assert!(
        missing.is_empty(),
        "ApplyError variants without a case here: {missing:?}"
    );
}

#[test]
fn the_refusal_table_lists_every_code_and_no_other() {
    let rows = doc_rows();
    let table = |heading: &str| {
        rows.get(heading)
            .cloned()
            .unwrap_or_else(|| panic!("docs/REFUSALS.md has no section {heading:?}"))
    };
    let apply_rows = table("Refusals from apply");
    let protocol_rows = table("Protocol refusals");
    let mut apply_codes = codes_in_machine_source();
    apply_codes.extend(all_cases().into_iter().map(|c| c.code));
    let protocol = protocol_codes();
    assert!(protocol.len() > 20, "parsed {protocol:?}");
    apply_codes.retain(|c| !protocol.contains(c));
    assert_eq!(
        apply_rows, apply_codes,
        "docs/REFUSALS.md \"Refusals from apply\" rows differ from the codes apply returns"
    );
    assert_eq!(
        protocol_rows, protocol,
        "docs/REFUSALS.md \"Protocol refusals\" rows differ from crucible's codes"
    );
}
