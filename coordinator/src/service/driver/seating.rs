//! Seating the motions that opened awaiting a beacon (`panel_machine::features::beacon`;
//! docs/SECURITY.md "The beacon"): the leader proves over each one's question key with
//! its beacon key, asks replicas of the other organisations the charter's log quorum
//! needs for theirs (`Replica.BeaconShare`), and proposes the `SeatMotion` that draws the
//! panel.
//! Until that entry applies the motion has no seats, so the round driver leaves it alone.

use super::*;
use panel_machine::rules::hex_bytes::DigestBytes;

use panel_machine::features::beacon::{BeaconShare, Seating};

/// Open debate and run motions that await their seats, with their question keys (hex);
/// not those whose seating apply refused this leader.
pub(super) fn awaiting_seats(s: &Shared) -> Vec<(String, DigestBytes)> {
    let refused = s
        .refused_sitting_steps
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone();
    let awaiting: Vec<(String, DigestBytes)> = s.sm.read(|a| {
        let debates = a.state.debates.iter().flat_map(|(_, r)| r.open.values());
        let runs = a.state.runs.iter().flat_map(|(_, r)| r.open.values());
        debates
            .chain(runs)
            .filter_map(|id| a.state.motions.get(id))
            .filter(|m| m.status == MotionStatus::Open)
            .filter_map(|m| {
                let b = m.beacon.as_ref().filter(|b| b.pending())?;
                Some((m.spec.motion_id.clone(), b.question.clone()))
            })
            .collect()
    });
    awaiting
        .into_iter()
        .filter(|(id, _)| !refused.contains(&format!("seat:{id}")))
        .collect()
}

/// Whether a motion still awaits its seats (the round driver skips it until seated).
pub(super) fn seated(m: &Motion) -> bool {
    m.beacon.as_ref().is_none_or(|b| !b.pending())
}

/// How long the leader waits for one replica's share.
const SHARE_TIMEOUT: Duration = Duration::from_secs(2);
/// One replica's share, asked again while it has not applied the opening entry.
async fn share_of(
    s: &Shared,
    id: u64,
    addr: &str,
    motion_id: &str,
) -> Result<String, tonic::Status> {
    quorum::until_applied(|| s.replicas.beacon_share(id, addr, motion_id, SHARE_TIMEOUT)).await
}

/// Proposes the `SeatMotion` for one awaiting motion: this replica's share and, from the
/// charter's replicas in ascending id, one share of each further organisation until the
/// charter's quorum of organisations is met (`beacon::organisations_needed`). When too
/// few organisations answer, nothing is proposed and the next pass asks again.
pub(super) async fn seat(
    s: &Shared,
    motion_id: String,
    question: DigestBytes,
) -> Result<(), DriveError> {
    let Some(secret) = s.opts.beacon.as_ref() else {
        warn!(
            motion = %motion_id,
            "the motion awaits a beacon seating, but this replica has no beacon key in the \
             charter; start it with the --log-key its charter entry names"
        );
        return Ok(());
    };
    let Some(key) = question.array::<32>() else {
        warn!(motion = %motion_id, "the stored question key is not 32 bytes of hex");
        return Ok(());
    };
    let (replicas, needed) = s.sm.read(|a| {
        let charter = a.state.charter.as_ref();
        let replicas: Vec<(u64, String)> = charter
            .map(|c| {
                c.replicas
                    .iter()
                    .filter(|r| r.beacon_vkey.is_some())
                    .map(|r| (r.id, r.organisation.clone()))
                    .collect()
            })
            .unwrap_or_default();
        (
            replicas,
            panel_machine::features::beacon::organisations_needed(charter),
        )
    });
    let own = BeaconShare {
        replica: s.id,
        proof: secret
            .prove_hex(&panel_machine::features::beacon::input(&key))
            .into(),
    };
    let asked = quorum::from_other_organisations(s, &replicas, needed, |id, addr| {
        let motion_id = motion_id.clone();
        async move { share_of(s, id, &addr, &motion_id).await }
    })
    .await;
    if asked.covered < needed {
        info!(
            motion = %motion_id,
            "{} of the {needed} organisations' beacon shares: the motion waits unseated",
            asked.covered
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
        return Ok(());
    }
    let mut shares: Vec<BeaconShare> = std::iter::once(own)
        .chain(
            asked
                .answers
                .into_iter()
                .map(|(replica, proof)| BeaconShare {
                    replica,
                    proof: proof.into(),
                }),
        )
        .collect();
    shares.sort_by_key(|sh| sh.replica);
    // Another set of sharing replicas is another request, not a retry of a refused one.
    let sharing = shares
        .iter()
        .map(|sh| sh.replica.to_string())
        .collect::<Vec<_>>()
        .join(",");
    let item = Item {
        client_id: "motion-driver".into(),
        request_id: request_id(&["seat", &motion_id, &question.to_hex(), &sharing]),
        command: InternalCommand::SeatMotion(Seating {
            motion_id: motion_id.clone(),
            shares,
        })
        .into(),
        writer: None,
    };
    let out = s.proposer.submit(item, 512).await?;
    match &out.reply {
        ItemReply::Refused { code, message } => {
            // Refused by apply: asking again with the same shares gets the same refusal,
            // so this leader does not propose it again.
            s.refused_sitting_steps
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(format!("seat:{motion_id}"));
            warn!(motion = %motion_id, %code, "seating refused: {message}")
        }
        ItemReply::Applied(_) => info!(motion = %motion_id, log_index = out.log_index, "seated"),
    }
    Ok(())
}
