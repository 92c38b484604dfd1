//! C2SP tlog-policy (editor's draft): which logs a verifier accepts, which witnesses it
//! knows, and the quorum of cosignatures a checkpoint needs. The trust anchor of
//! `panel verify --policy` and `panel verify-proof` (docs/SECURITY.md, "The record").
//!
//! ```text
//! log <vkey> [<url>]
//! witness <name> <vkey> [<url>]
//! group <name> all|any|<k> <member>...
//! quorum <name>|none
//! log-signer <organisation> <vkey>
//! log-quorum <k>
//! ```
//!
//! The last two are this project's extension for a log no single replica can sign
//! (`log_quorum`): each `log-signer` is one replica's log key with the organisation that
//! runs it (an organisation may be named on several lines), and `log-quorum k` makes a
//! checkpoint the log's only when keys of `k` distinct organisations signed it. Without
//! `log-quorum`, a signature by any one `log` key suffices, as in the draft.

use std::collections::BTreeSet;

use crate::checkpoint::Checkpoint;
use crate::note::{Note, TYPE_COSIGNATURE_V1, TYPE_ED25519, VerifierKey};

/// One log the policy accepts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyLog {
    pub vkey: VerifierKey,
    pub url: Option<String>,
}

/// One witness the policy knows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyWitness {
    pub name: String,
    pub vkey: VerifierKey,
    pub url: Option<String>,
}

/// A group: satisfied when at least `threshold` members are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    pub name: String,
    pub threshold: usize,
    pub members: Vec<String>,
}

/// A parsed policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    pub logs: Vec<PolicyLog>,
    pub witnesses: Vec<PolicyWitness>,
    pub groups: Vec<Group>,
    /// The witness or group that must be satisfied; `None` for `quorum none`.
    pub quorum: Option<String>,
    /// Replica log keys with their organisations (`log-signer`).
    pub log_signers: Vec<crate::log_quorum::LogSigner>,
    /// Distinct organisations whose `log-signer` keys must sign (`log-quorum`).
    pub log_quorum: Option<usize>,
}

/// Why a policy does not parse, or a checkpoint does not satisfy it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    #[error("policy line {line}: {problem}")]
    Syntax { line: usize, problem: String },
    #[error("the checkpoint is not one: {0}")]
    Checkpoint(String),
    #[error("the checkpoint's origin {0:?} is not a log of the policy")]
    UnknownLog(String),
    #[error("the checkpoint is not signed by the policy's log key for {origin}: {reason}")]
    LogSignature { origin: String, reason: String },
    #[error("the checkpoint is not the log {origin}'s: {reason}")]
    LogQuorum {
        origin: String,
        reason: crate::log_quorum::LogQuorumError,
    },
    #[error("witness {witness}'s cosignature does not verify")]
    BadCosignature { witness: String },
    #[error("the quorum {quorum} is not met: {missing}; cosigned by {cosigned:?}")]
    Quorum {
        quorum: String,
        missing: QuorumMiss,
        cosigned: Vec<String>,
    },
}

/// What keeps a witness or group of the quorum from being satisfied; a group's miss
/// names its members' misses, so the operator sees which cosignatures to collect.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QuorumMiss {
    #[error("no cosignature from witness {0}")]
    NoCosignature(String),
    #[error("{0} is not defined")]
    Undefined(String),
    #[error(
        "group {group} needs {threshold} of {members} members, has {met} ({})",
        join(.misses)
    )]
    Group {
        group: String,
        threshold: usize,
        members: usize,
        met: usize,
        misses: Vec<QuorumMiss>,
    },
}

fn join(misses: &[QuorumMiss]) -> String {
    misses
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

/// What a checkpoint that satisfies the policy established.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    pub checkpoint: Checkpoint,
    /// Names of the policy's witnesses whose cosignatures verified.
    pub witnesses: Vec<String>,
}

fn syntax(line: usize, problem: impl Into<String>) -> PolicyError {
    PolicyError::Syntax {
        line,
        problem: problem.into(),
    }
}

impl Policy {
    /// Parses a policy file. Names must be defined before they are used; keys, witnesses
    /// and members appear once; exactly one quorum line.
    pub fn parse(text: &str) -> Result<Self, PolicyError> {
        let mut p = Policy {
            logs: Vec::new(),
            witnesses: Vec::new(),
            groups: Vec::new(),
            quorum: None,
            log_signers: Vec::new(),
            log_quorum: None,
        };
        let mut quorum_seen = false;
        let mut names: BTreeSet<String> = BTreeSet::new();
        let mut keys: BTreeSet<[u8; 32]> = BTreeSet::new();
        for (i, raw) in text.split('\n').enumerate() {
            let n = i + 1;
            if let Some(b) = raw.bytes().find(|&b| b < 0x20 && b != b'\t') {
                return Err(syntax(n, format!("control character {b:#04x}")));
            }
            let words: Vec<&str> = raw.split([' ', '\t']).filter(|w| !w.is_empty()).collect();
            let Some((&keyword, args)) = words.split_first() else {
                continue;
            };
            if keyword.starts_with('#') {
                continue;
            }
            match keyword {
                "log" => {
                    let (vkey, url) = key_and_url(n, args, TYPE_ED25519, "a log")?;
                    if !keys.insert(vkey.key.to_bytes()) {
                        return Err(syntax(n, "this key is listed twice"));
                    }
                    p.logs.push(PolicyLog { vkey, url });
                }
                "log-signer" => {
                    let [organisation, vkey] = args else {
                        return Err(syntax(n, "expected `log-signer <organisation> <vkey>`"));
                    };
                    let (key, _) = key_and_url(n, &[vkey], TYPE_ED25519, "a log signer")?;
                    if !keys.insert(key.key.to_bytes()) {
                        return Err(syntax(n, "this key is listed twice"));
                    }
                    p.log_signers.push(crate::log_quorum::LogSigner {
                        organisation: organisation.to_string(),
                        key,
                    });
                }
                "log-quorum" => {
                    let [k] = args else {
                        return Err(syntax(n, "expected `log-quorum <k>`"));
                    };
                    if p.log_quorum.is_some() {
                        return Err(syntax(n, "a policy has at most one log-quorum line"));
                    }
                    let k = k.parse::<usize>().ok().filter(|k| *k >= 1).ok_or_else(|| {
                        syntax(
                            n,
                            format!("log-quorum {k:?} is not a count of organisations"),
                        )
                    })?;
                    p.log_quorum = Some(k);
                }
                "witness" => {
                    let (&name, rest) = args
                        .split_first()
                        .ok_or_else(|| syntax(n, "expected `witness <name> <vkey> [<url>]`"))?;
                    define(n, &mut names, name)?;
                    let (vkey, url) = key_and_url(n, rest, TYPE_COSIGNATURE_V1, "a witness")?;
                    if !keys.insert(vkey.key.to_bytes()) {
                        return Err(syntax(n, "this key is listed twice"));
                    }
                    p.witnesses.push(PolicyWitness {
                        name: name.to_string(),
                        vkey,
                        url,
                    });
                }
                "group" => {
                    let [name, k, members @ ..] = args else {
                        return Err(syntax(n, "expected `group <name> all|any|<k> <member>...`"));
                    };
                    if members.is_empty() {
                        return Err(syntax(n, "a group needs at least one member"));
                    }
                    let mut seen = BTreeSet::new();
                    for m in members {
                        if !names.contains(*m) {
                            return Err(syntax(
                                n,
                                format!("{m:?} is not defined on an earlier line"),
                            ));
                        }
                        if !seen.insert(*m) {
                            return Err(syntax(n, format!("{m:?} is listed twice")));
                        }
                    }
                    let threshold = match *k {
                        "all" => members.len(),
                        "any" => 1,
                        k => k
                            .parse::<usize>()
                            .ok()
                            .filter(|t| (1..=members.len()).contains(t))
                            .ok_or_else(|| {
                                syntax(
                                    n,
                                    format!(
                                        "threshold {k:?} is not all, any or 1..={}",
                                        members.len()
                                    ),
                                )
                            })?,
                    };
                    define(n, &mut names, name)?;
                    p.groups.push(Group {
                        name: name.to_string(),
                        threshold,
                        members: members.iter().map(|m| m.to_string()).collect(),
                    });
                }
                "quorum" => {
                    let [name] = args else {
                        return Err(syntax(n, "expected `quorum <name>`"));
                    };
                    if quorum_seen {
                        return Err(syntax(n, "a policy has exactly one quorum line"));
                    }
                    quorum_seen = true;
                    if *name != "none" {
                        if !names.contains(*name) {
                            return Err(syntax(
                                n,
                                format!("{name:?} is not defined on an earlier line"),
                            ));
                        }
                        p.quorum = Some(name.to_string());
                    }
                }
                other => return Err(syntax(n, format!("unknown keyword {other:?}"))),
            }
        }
        let last = text.split('\n').count();
        if !quorum_seen {
            return Err(syntax(last, "the policy has no quorum line"));
        }
        if let Some(k) = p.log_quorum {
            let orgs: BTreeSet<&str> = p
                .log_signers
                .iter()
                .map(|s| s.organisation.as_str())
                .collect();
            if orgs.len() < k {
                return Err(syntax(
                    last,
                    format!(
                        "log-quorum {k} needs log-signer keys of {k} organisations; {} are listed",
                        orgs.len()
                    ),
                ));
            }
        } else if !p.log_signers.is_empty() {
            return Err(syntax(
                last,
                "log-signer lines need a log-quorum line saying how many organisations must sign",
            ));
        }
        Ok(p)
    }

    /// Every log key the policy lists (`log` and `log-signer` lines).
    pub fn log_keys(&self) -> Vec<VerifierKey> {
        self.logs
            .iter()
            .map(|l| l.vkey.clone())
            .chain(self.log_signers.iter().map(|s| s.key.clone()))
            .collect()
    }

    /// The quorum of replica keys a checkpoint of `origin` needs, if the policy sets one.
    pub fn log_quorum_of(&self, origin: &str) -> Option<crate::log_quorum::LogQuorum> {
        let k = self.log_quorum?;
        Some(crate::log_quorum::LogQuorum {
            signers: self
                .log_signers
                .iter()
                .filter(|s| s.key.name == origin)
                .cloned()
                .collect(),
            organisations: k,
        })
    }

    /// Checks that a signed checkpoint is a policy log's: under `log-quorum`, signed by
    /// keys of that many organisations; otherwise by one of the log's `log` keys.
    pub fn check_log(&self, note: &Note) -> Result<Checkpoint, PolicyError> {
        let cp = Checkpoint::parse_body(&note.text)
            .map_err(|e| PolicyError::Checkpoint(e.to_string()))?;
        if let Some(q) = self.log_quorum_of(&cp.origin) {
            if q.signers.is_empty() {
                return Err(PolicyError::UnknownLog(cp.origin));
            }
            q.check(note).map_err(|reason| PolicyError::LogQuorum {
                origin: cp.origin.clone(),
                reason,
            })?;
            return Ok(cp);
        }
        let log_keys: Vec<VerifierKey> = self
            .logs
            .iter()
            .filter(|l| l.vkey.name == cp.origin)
            .map(|l| l.vkey.clone())
            .collect();
        if log_keys.is_empty() {
            return Err(PolicyError::UnknownLog(cp.origin));
        }
        note.verify(&log_keys)
            .map_err(|e| PolicyError::LogSignature {
                origin: cp.origin.clone(),
                reason: e.to_string(),
            })?;
        Ok(cp)
    }

    /// Checks a signed checkpoint: it is a policy log's ([`Policy::check_log`]), every
    /// cosignature by a policy witness verifies, and the quorum is met.
    pub fn check(&self, note: &Note) -> Result<Verified, PolicyError> {
        let cp = self.check_log(note)?;
        let mut cosigned = Vec::new();
        for w in &self.witnesses {
            for line in note.signatures.iter().filter(|l| w.vkey.matches(l)) {
                if !w.vkey.verifies(&note.text, &line.signature) {
                    return Err(PolicyError::BadCosignature {
                        witness: w.name.clone(),
                    });
                }
                if !cosigned.contains(&w.name) {
                    cosigned.push(w.name.clone());
                }
            }
        }
        if let Some(q) = &self.quorum
            && let Err(missing) = self.satisfied(q, &cosigned)
        {
            return Err(PolicyError::Quorum {
                quorum: q.clone(),
                missing,
                cosigned,
            });
        }
        Ok(Verified {
            checkpoint: cp,
            witnesses: cosigned,
        })
    }

    /// Whether `name` (a witness or group) is satisfied by the witnesses that cosigned;
    /// `Err` says what is missing.
    fn satisfied(&self, name: &str, cosigned: &[String]) -> Result<(), QuorumMiss> {
        if self.witnesses.iter().any(|w| w.name == name) {
            return if cosigned.iter().any(|c| c == name) {
                Ok(())
            } else {
                Err(QuorumMiss::NoCosignature(name.to_string()))
            };
        }
        let Some(g) = self.groups.iter().find(|g| g.name == name) else {
            return Err(QuorumMiss::Undefined(name.to_string()));
        };
        let mut misses = Vec::new();
        let met = g
            .members
            .iter()
            .filter(|m| match self.satisfied(m, cosigned) {
                Ok(()) => true,
                Err(why) => {
                    misses.push(why);
                    false
                }
            })
            .count();
        if met >= g.threshold {
            Ok(())
        } else {
            Err(QuorumMiss::Group {
                group: g.name.clone(),
                threshold: g.threshold,
                members: g.members.len(),
                met,
                misses,
            })
        }
    }

    /// The policy file text (for `panel up` and the operator docs).
    pub fn to_text(&self) -> String {
        let mut s = String::new();
        for l in &self.logs {
            s.push_str(&format!("log {}", l.vkey));
            push_url(&mut s, &l.url);
        }
        for w in &self.witnesses {
            s.push_str(&format!("witness {} {}", w.name, w.vkey));
            push_url(&mut s, &w.url);
        }
        for g in &self.groups {
            let k = if g.threshold == g.members.len() {
                "all".to_string()
            } else {
                g.threshold.to_string()
            };
            s.push_str(&format!("group {} {k} {}\n", g.name, g.members.join(" ")));
        }
        s.push_str(&format!(
            "quorum {}\n",
            self.quorum.as_deref().unwrap_or("none")
        ));
        for l in &self.log_signers {
            s.push_str(&format!("log-signer {} {}\n", l.organisation, l.key));
        }
        if let Some(k) = self.log_quorum {
            s.push_str(&format!("log-quorum {k}\n"));
        }
        s
    }
}

fn push_url(s: &mut String, url: &Option<String>) {
    if let Some(u) = url {
        s.push(' ');
        s.push_str(u);
    }
    s.push('\n');
}

fn define(line: usize, names: &mut BTreeSet<String>, name: &str) -> Result<(), PolicyError> {
    if name == "none" {
        return Err(syntax(line, "`none` is reserved"));
    }
    if !names.insert(name.to_string()) {
        return Err(syntax(line, format!("{name:?} is defined twice")));
    }
    Ok(())
}

fn key_and_url(
    line: usize,
    args: &[&str],
    sig_type: u8,
    what: &str,
) -> Result<(VerifierKey, Option<String>), PolicyError> {
    let (vkey, url) = match args {
        [vkey] => (vkey, None),
        [vkey, url] => (vkey, Some(url.to_string())),
        _ => {
            return Err(syntax(
                line,
                format!("expected the vkey of {what} and an optional URL"),
            ));
        }
    };
    let vkey = VerifierKey::parse(vkey).map_err(|e| syntax(line, e.to_string()))?;
    if vkey.sig_type != sig_type {
        return Err(syntax(
            line,
            format!("{what}'s vkey must be of signature type {sig_type:#04x}"),
        ));
    }
    Ok((vkey, url))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cosignature::Cosigner;
    use crate::merkle::Log;
    use crate::note::NoteSigner;
    use ed25519_dalek::SigningKey;

    struct World {
        log: NoteSigner,
        w: Vec<Cosigner>,
        policy: Policy,
    }

    fn world() -> World {
        let log =
            NoteSigner::new("panel.example/log", SigningKey::from_bytes(&[1; 32])).expect("l");
        let w: Vec<Cosigner> = (0..3u8)
            .map(|i| {
                Cosigner::new(
                    &format!("w{i}.example"),
                    SigningKey::from_bytes(&[10 + i; 32]),
                )
                .expect("w")
            })
            .collect();
        let text = format!(
            "# two organisations\nlog {}\nwitness a1 {}\nwitness a2 {}\n\twitness b1 {} http://b1.example\ngroup a any a1 a2\ngroup b all b1\ngroup both all a b\nquorum both\n",
            log.verifier(),
            w[0].verifier(),
            w[1].verifier(),
            w[2].verifier()
        );
        let policy = Policy::parse(&text).expect("policy");
        assert_eq!(
            Policy::parse(&policy.to_text()).expect("round trip"),
            policy
        );
        World { log, w, policy }
    }

    fn note(world: &World, cosigners: &[usize]) -> Note {
        let mut l = Log::new();
        l.append(b"x");
        let mut n = Note::new(Checkpoint::new("panel.example/log", 1, l.root()).body()).expect("n");
        n.add(world.log.sign(&n.text));
        for &i in cosigners {
            n.add(world.w[i].cosign(&n.text, 1_700_000_000));
        }
        n
    }

    #[test]
    fn the_quorum_needs_both_organisations() {
        let world = world();
        assert_eq!(
            world
                .policy
                .check(&note(&world, &[0, 2]))
                .expect("met")
                .witnesses,
            ["a1", "b1"]
        );
        assert_eq!(
            world
                .policy
                .check(&note(&world, &[1, 2]))
                .expect("met")
                .witnesses,
            ["a2", "b1"]
        );
        let err = world
            .policy
            .check(&note(&world, &[0, 1]))
            .expect_err("no b");
        assert!(
            err.to_string().contains("no cosignature from witness b1"),
            "{err}"
        );
        assert!(matches!(
            world.policy.check(&note(&world, &[])),
            Err(PolicyError::Quorum { .. })
        ));
    }

    #[test]
    fn a_checkpoint_re_signed_by_another_key_fails() {
        let world = world();
        let mut n = note(&world, &[0, 2]);
        let other =
            NoteSigner::new("panel.example/log", SigningKey::from_bytes(&[99; 32])).expect("o");
        n.signatures.retain(|s| s.name != "panel.example/log");
        n.add(other.sign(&n.text));
        assert!(matches!(
            world.policy.check(&n),
            Err(PolicyError::LogSignature { .. })
        ));
        let mut tampered = note(&world, &[0, 2]);
        tampered.signatures[2].signature[20] ^= 1;
        assert!(matches!(
            world.policy.check(&tampered),
            Err(PolicyError::BadCosignature { .. })
        ));
    }

    #[test]
    fn malformed_policies_name_the_line() {
        let world = world();
        let v = world.log.verifier().to_string();
        for (text, line) in [
            ("quorum x\n".to_string(), 1),
            (format!("log {v}\nlog {v}\nquorum none\n"), 2),
            ("group g any\nquorum none\n".to_string(), 1),
            (format!("witness w {v}\nquorum w\n"), 1),
            ("quorum none\nquorum none\n".to_string(), 2),
            ("frobnicate\nquorum none\n".to_string(), 1),
        ] {
            match Policy::parse(&text) {
                Err(PolicyError::Syntax { line: l, .. }) => assert_eq!(l, line, "{text}"),
                other => panic!("{text}: {other:?}"),
            }
        }
        assert!(Policy::parse("log x\n").is_err());
    }

    #[test]
    fn a_log_quorum_needs_replica_keys_of_that_many_organisations() {
        let world = world();
        let key = |seed: u8| {
            NoteSigner::new("panel.example/log", SigningKey::from_bytes(&[seed; 32])).expect("k")
        };
        let (n1, n3, s2) = (key(31), key(33), key(32));
        let text = format!(
            "witness b1 {}\nquorum b1\nlog-signer north {}\nlog-signer south {}\nlog-signer north {}\nlog-quorum 2\n",
            world.w[2].verifier(),
            n1.verifier(),
            s2.verifier(),
            n3.verifier()
        );
        let policy = Policy::parse(&text).expect("policy");
        assert_eq!(
            Policy::parse(&policy.to_text()).expect("round trip"),
            policy
        );
        let mut l = Log::new();
        l.append(b"x");
        let body = Checkpoint::new("panel.example/log", 1, l.root()).body();
        let signed = |keys: &[&NoteSigner]| {
            let mut n = Note::new(body.clone()).expect("n");
            for k in keys {
                n.add(k.sign(&body));
            }
            n.add(world.w[2].cosign(&body, 1_700_000_000));
            n
        };
        // One organisation's replicas, even two of them, are not the log.
        let err = policy.check(&signed(&[&n1, &n3])).expect_err("north alone");
        assert!(matches!(err, PolicyError::LogQuorum { .. }), "{err}");
        assert!(err.to_string().contains("quorum is 2"), "{err}");
        assert!(policy.check(&signed(&[&n1, &s2])).is_ok());
        // The draft's single log key does not stand in for the quorum.
        let single = format!("log {}\n{text}", world.log.verifier());
        let with_log = Policy::parse(&single).expect("policy");
        let mut n = Note::new(body.clone()).expect("n");
        n.add(world.log.sign(&body));
        n.add(world.w[2].cosign(&body, 1));
        assert!(with_log.check(&n).is_err());
        for bad in [
            format!("quorum none\nlog-signer north {}\n", n1.verifier()),
            format!(
                "quorum none\nlog-signer north {}\nlog-quorum 2\n",
                n1.verifier()
            ),
            "quorum none\nlog-quorum 0\n".to_string(),
        ] {
            assert!(
                matches!(Policy::parse(&bad), Err(PolicyError::Syntax { .. })),
                "{bad}"
            );
        }
    }
}
