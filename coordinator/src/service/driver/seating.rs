//! Seating the motions that opened awaiting a beacon (`panel_machine::beacon`;
//! docs/SECURITY.md "The draw cannot be steered"): the leader proves over each one's
//! question key with its beacon key and proposes the `SeatMotion` that draws the panel.
//! Until that entry applies the motion has no seats, so the round driver leaves it alone.

use super::*;

use panel_machine::beacon::{BeaconShare, Seating};

/// Open debate and run motions that await their seats, with their question keys (hex).
pub(super) fn awaiting_seats(s: &Shared) -> Vec<(String, String)> {
    s.sm.read(|a| {
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
    })
}

/// Whether a motion still awaits its seats (the round driver skips it until seated).
pub(super) fn seated(m: &Motion) -> bool {
    m.beacon.as_ref().is_none_or(|b| !b.pending())
}

/// Proposes the `SeatMotion` for one awaiting motion, with this replica's share.
pub(super) async fn seat(
    s: &Shared,
    motion_id: String,
    question: String,
) -> Result<(), DriveError> {
    let Some(secret) = s.opts.beacon.as_ref() else {
        warn!(
            motion = %motion_id,
            "the motion awaits a beacon seating, but this replica has no beacon key in the \
             charter; start it with the --log-key its charter entry names"
        );
        return Ok(());
    };
    let Some(key) = hex::decode(&question)
        .ok()
        .and_then(|b| <[u8; 32]>::try_from(b).ok())
    else {
        warn!(motion = %motion_id, "the stored question key is not 32 bytes of hex");
        return Ok(());
    };
    let proof = secret.prove_hex(&panel_machine::beacon::input(&key));
    let item = Item {
        client_id: "motion-driver".into(),
        request_id: request_id(&["seat", &motion_id, &question]),
        command: InternalCommand::SeatMotion(Seating {
            motion_id: motion_id.clone(),
            shares: vec![BeaconShare {
                replica: s.id,
                proof,
            }],
        })
        .into(),
        writer: None,
    };
    let out = s.proposer.submit(item, 256).await?;
    match &out.reply {
        ItemReply::Refused { code, message } => {
            warn!(motion = %motion_id, %code, "seating refused: {message}")
        }
        ItemReply::Applied(_) => info!(motion = %motion_id, log_index = out.log_index, "seated"),
    }
    Ok(())
}
