//! The node trusts the organisations the record holds (docs/FEDERATION.md "Trust follows
//! the record"): every [`REFRESH`] it asks each replica it writes to for the organisations
//! in force (`Query::Organisations`) and puts in force the set a majority of those replicas
//! report, so a node of an organisation admitted by entry can deliver rulings to this node
//! and one removed is cut off (open connections too, `panel_transport::incoming`), with no
//! restart. One replica alone cannot change what the node trusts, and while no majority
//! agrees (or the record has no charter yet) the set in force stays as it was.

use std::time::Duration;

use panel_federation::Organisation;
use panel_machine::Query;
use panel_machine::read::query::OrganisationsReply;
use panel_proto::coordinator_pb::ReadRequest;
use panel_proto::coordinator_pb::coordinator_client::CoordinatorClient;
use panel_transport::{LiveTrust, Peer};
use tracing::{info, warn};

use crate::channels::Channels;

/// How often the node asks.
pub const REFRESH: Duration = Duration::from_secs(5);

/// Follows the record's organisations from `coordinators` into `trust`, in the background.
pub fn spawn(channels: Channels, coordinators: Vec<String>, trust: LiveTrust) {
    if coordinators.is_empty() {
        return;
    }
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(REFRESH);
        loop {
            tick.tick().await;
            let mut answers = Vec::with_capacity(coordinators.len());
            for addr in &coordinators {
                if let Some(orgs) = ask(&channels, addr).await {
                    answers.push(orgs);
                }
            }
            let Some(agreed) = majority(answers, coordinators.len()) else {
                continue;
            };
            if let Some(closed) = trust.set_organisations(agreed.iter()) {
                info!(
                    organisations = agreed.len(),
                    closed, "the record changed the organisations this node trusts"
                );
            }
        }
    });
}

/// One replica's organisations in force, or `None` (unreachable, no charter yet, or an
/// answer that does not decode).
async fn ask(channels: &Channels, addr: &str) -> Option<Vec<Organisation>> {
    let channel = channels
        .get(addr, Peer::Replicas, |e| e.timeout(Duration::from_secs(5)))
        .ok()?;
    let query_json = serde_json::to_string(&Query::Organisations).ok()?;
    let reply = CoordinatorClient::new(channel)
        .read(ReadRequest {
            query_json,
            ..ReadRequest::default()
        })
        .await;
    let reply = match reply {
        Ok(r) => r.into_inner(),
        Err(e) => {
            warn!(%addr, error = %e.message(), "asking a replica for the organisations in force");
            return None;
        }
    };
    let orgs: OrganisationsReply = serde_json::from_str(&reply.result_json).ok()?;
    orgs.chartered.then_some(orgs.organisations)
}

/// The set more than half of `asked` replicas reported (as a set: order aside), if any.
pub fn majority(answers: Vec<Vec<Organisation>>, asked: usize) -> Option<Vec<Organisation>> {
    let mut sets: Vec<(Vec<Organisation>, usize)> = Vec::new();
    for mut orgs in answers {
        orgs.sort_by(|a, b| a.name.cmp(&b.name));
        match sets.iter_mut().find(|(s, _)| *s == orgs) {
            Some((_, n)) => *n += 1,
            None => sets.push((orgs, 1)),
        }
    }
    sets.into_iter()
        .find(|(_, n)| *n * 2 > asked)
        .map(|(orgs, _)| orgs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn org(name: &str, fp: u8) -> Organisation {
        Organisation {
            name: name.into(),
            ca_sha256: panel_federation::Fingerprint([fp; 32]),
            signing_key: String::new(),
        }
    }

    /// A set counts only when more than half of the replicas asked report it; one lying
    /// replica, or two of three unreachable, change nothing.
    #[test]
    fn only_a_majority_of_the_replicas_asked_sets_the_trust() {
        let founders = vec![org("north", 1), org("south", 2)];
        let mut reordered = founders.clone();
        reordered.reverse();
        let rogue = vec![org("north", 1), org("south", 2), org("rogue", 9)];
        assert_eq!(
            majority(vec![founders.clone(), reordered, rogue.clone()], 3),
            Some(founders.clone())
        );
        assert_eq!(majority(vec![rogue.clone()], 3), None);
        assert_eq!(majority(vec![founders.clone(), rogue], 3), None);
        assert_eq!(majority(vec![founders.clone()], 1), Some(founders));
        assert_eq!(majority(vec![], 3), None);
    }
}
