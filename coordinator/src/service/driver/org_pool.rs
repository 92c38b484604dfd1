//! Organisation pools, the leader's side (`panel_machine::features::org_pools`;
//! docs/coordinator/state-machine.md "Organisation pools"): the pool of the next sitting
//! comes from a member organisation's replica (`Replica.OfferExamPool`), sealed by that
//! replica's log key, and its key from the same organisation's replicas once the sitting
//! is closed (`Replica.ExamPoolKey`). The leader holds only its own organisation's pools,
//! and proposes what the others hand it; apply checks both against the seal.

use super::*;

use panel_federation::pool_seal::PoolSealed;
use panel_machine::features::exam_sitting::{KeyReveal, SealedPool};

/// How long the leader waits for one replica's pool or key.
const POOL_TIMEOUT: Duration = Duration::from_secs(5);

/// Why no pool or key could be fetched this pass; the next pass asks again.
#[derive(Debug, thiserror::Error)]
pub enum OrgPoolError {
    #[error(
        "no member organisation offered a pool for sitting {number} (asked: {asked:?}): \
         each organisation's operators give their own replicas private exam_pools"
    )]
    NoPool { number: u32, asked: Vec<String> },
    #[error(
        "no replica of {organisation} handed over the key of its closed sitting {sitting} \
         yet; the reveal waits for one of them"
    )]
    NoKey { sitting: u32, organisation: String },
}

/// The `SealExamPool` of sitting `number`, from the first organisation in
/// [`panel_machine::features::org_pools::seal_order`] that offers one; its request key names the
/// organisation, so a refused seal of one does not stop another's.
pub(super) async fn sealed_pool(
    s: &Shared,
    number: u32,
    due: &BTreeSet<String>,
) -> Result<(String, InternalCommand), DriveError> {
    let order =
        s.sm.read(|a| panel_machine::features::org_pools::seal_order(&a.state, due));
    for organisation in &order {
        let own = (Some(organisation) == own_organisation(s).as_ref())
            .then(|| own_offer(s, number, organisation))
            .flatten();
        let offered = match own {
            Some(pool) => Some(pool),
            None => from_replicas_of(s, organisation, |id, addr| async move {
                s.replicas
                    .offer_exam_pool(id, &addr, number, POOL_TIMEOUT)
                    .await
            })
            .await
            .filter(|p| p.organisation.as_ref() == Some(organisation)),
        };
        if let Some(pool) = offered {
            return Ok((
                format!("seal:{number}:{organisation}"),
                InternalCommand::SealExamPool(Box::new(pool)),
            ));
        }
    }
    Err(OrgPoolError::NoPool {
        number,
        asked: order,
    }
    .into())
}

/// The `RevealExamKey` of `organisation`'s closed sitting, from one of its replicas.
pub(super) async fn revealed_key(
    s: &Shared,
    sitting: u32,
    organisation: &str,
) -> Result<KeyReveal, DriveError> {
    from_replicas_of(s, organisation, |id, addr| async move {
        s.replicas
            .exam_pool_key(id, &addr, sitting, POOL_TIMEOUT)
            .await
    })
    .await
    .ok_or_else(|| {
        OrgPoolError::NoKey {
            sitting,
            organisation: organisation.to_owned(),
        }
        .into()
    })
}

/// This replica's organisation, by its charter entry.
fn own_organisation(s: &Shared) -> Option<String> {
    s.sm.read(|a| {
        let charter = a.state.charter.as_ref()?;
        let me = charter.replicas.iter().find(|r| r.id == s.id)?;
        Some(me.organisation.clone())
    })
}

/// This replica's own offer, sealed with its log key, as another replica would give it.
fn own_offer(s: &Shared, number: u32, organisation: &str) -> Option<SealedPool> {
    let pools = s.opts.exam_pools.as_deref()?;
    let key = s.opts.seal_key.as_ref()?;
    let mut pool =
        s.sm.read(|a| pools.offer(&a.state, organisation, number))
            .map_err(|e| info!("this replica offers no pool: {e}"))
            .ok()?;
    let pool_id = pool
        .public
        .id()
        .map_err(|e| info!("this replica's pool has no id: {e}"))
        .ok()?;
    pool.seal = Some(
        PoolSealed {
            sitting: number,
            pool_id: &pool_id,
            key_commitment: &pool.key_commitment.to_hex(),
        }
        .seal(key),
    );
    Some(pool)
}

/// The answer of `organisation`'s first member replica other than this one that answers,
/// asked in ascending id (`quorum::from_other_organisations` with one organisation to
/// cover), each again while it has not applied the entry the question is about; `None`
/// when none answers or the first says its pools are spent.
async fn from_replicas_of<T, F, Fut>(s: &Shared, organisation: &str, ask: F) -> Option<T>
where
    F: Fn(u64, String) -> Fut + Clone,
    Fut: std::future::Future<Output = Result<T, tonic::Status>>,
{
    let replicas: Vec<(u64, String)> = s.sm.read(|a| {
        a.state.charter.as_ref().map_or_else(Vec::new, |c| {
            c.replicas
                .iter()
                .filter(|r| r.organisation == organisation && r.id != s.id)
                .map(|r| (r.id, r.organisation.clone()))
                .collect()
        })
    });
    let answers = quorum::from_other_organisations(s, &replicas, 1, |id, addr| {
        let ask = ask.clone();
        async move {
            // NOT_FOUND (the organisation's pools are spent) is an answer, not a failure:
            // the driver asks again on every pass, and would log it each time.
            match quorum::until_applied(|| ask(id, addr.clone())).await {
                Ok(answer) => Ok(Some(answer)),
                Err(e) if e.code() == tonic::Code::NotFound => Ok(None),
                Err(e) => Err(e),
            }
        }
    })
    .await;
    answers.answers.into_iter().find_map(|(_, answer)| answer)
}
