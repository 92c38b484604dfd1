//! Asking the charter's other organisations (`seating.rs`, `seal.rs`): the leader's
//! calls to one replica of each further organisation until the charter's log quorum is
//! covered, each asked again while that replica has not applied the entry it is about.

use super::*;

/// How often, and how far apart, the leader asks again a replica that has not applied the
/// entry yet (FAILED_PRECONDITION): a follower applies it within milliseconds, and the
/// sooner the answer, the fewer other entries come between.
const NOT_YET_TRIES: u32 = 25;
const NOT_YET_PAUSE: Duration = Duration::from_millis(20);

/// `call`'s answer, asked again while it says "not applied here yet".
pub(super) async fn until_applied<T, F, Fut>(mut call: F) -> Result<T, tonic::Status>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, tonic::Status>>,
{
    let mut tries = 0;
    loop {
        match call().await {
            Err(e) if e.code() == tonic::Code::FailedPrecondition && tries < NOT_YET_TRIES => {
                tries += 1;
                tokio::time::sleep(NOT_YET_PAUSE).await;
            }
            other => return other,
        }
    }
}

/// What the charter's other organisations' replicas answered.
pub(super) struct QuorumAnswers<T> {
    /// Distinct organisations counted, this replica's included.
    pub covered: usize,
    /// Each answering replica's answer, in ascending replica id.
    pub answers: Vec<(u64, T)>,
}

/// Asks the replicas in `replicas` (id, organisation), in ascending id, one per
/// organisation other than this replica's, until `needed` organisations are covered. A
/// replica that is not a member now, or whose `ask` fails, is passed over.
pub(super) async fn from_other_organisations<T, F, Fut>(
    s: &Shared,
    replicas: &[(u64, String)],
    needed: usize,
    mut ask: F,
) -> QuorumAnswers<T>
where
    F: FnMut(u64, String) -> Fut,
    Fut: std::future::Future<Output = Result<T, tonic::Status>>,
{
    let mut sorted = replicas.to_vec();
    sorted.sort();
    let mut covered: BTreeSet<String> = sorted
        .iter()
        .filter(|(id, _)| *id == s.id)
        .map(|(_, org)| org.clone())
        .collect();
    let mut answers = Vec::new();
    let members = crate::raft::status(&s.raft).nodes;
    for (id, org) in &sorted {
        if covered.len() >= needed {
            break;
        }
        if covered.contains(org) {
            continue;
        }
        let Some(member) = members.get(id) else {
            continue;
        };
        match ask(*id, member.addr.clone()).await {
            Ok(answer) => {
                covered.insert(org.clone());
                answers.push((*id, answer));
            }
            Err(e) => info!("replica {id} gave no answer (yet): {}", e.message()),
        }
    }
    QuorumAnswers {
        covered: covered.len(),
        answers,
    }
}
