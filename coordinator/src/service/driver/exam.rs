//! The exam driver: seals a pool, puts each due arbiter's draw to its node under
//! commit-reveal and submits the answers, then reveals the key (docs/coordinator/state-machine.md
//! "Sealed exams"); the machine decides each step (`exam_sitting::next_step`).

use super::*;
use panel_machine::RevealBytes;

/// The in-flight key of the sitting task (a seal or a reveal being proposed).
pub(super) const SITTING_TASK: &str = "exam-sitting";

/// One pass of the sealed exam sittings (`panel_machine::features::exam_sitting`): seal a pool when
/// arbiters are due and none is open, examine the due arbiters in the open sitting, or
/// reveal its key once the held exams are in. The decision is the machine's
/// [`next_step`](panel_machine::features::exam_sitting::next_step); this only carries it out.
pub(super) fn drive_sittings(s: &Arc<Shared>) {
    let in_flight = |key: &str| {
        s.in_flight
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(key)
    };
    if in_flight(SITTING_TASK) {
        return;
    }
    let now = s.now_ms().max(0) as u64;
    let due = awaiting_exam(s, now);
    let exams_in_flight = s
        .in_flight
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .iter()
        .any(|k| k.starts_with("exam:"));
    // A held exam waits at most this long for the others before the key is revealed.
    let patience =
        (s.opts.exam_window + s.opts.reveal_window + Duration::from_secs(30)).as_millis() as u64;
    let step = s.sm.read(|a| {
        panel_machine::features::exam_sitting::next_step(
            &a.state,
            &s.pools,
            !due.is_empty(),
            exams_in_flight,
            now,
            patience,
        )
    });
    match step {
        SittingStep::Idle => {}
        SittingStep::NoPool => {
            if !s
                .no_pool_warned
                .swap(true, std::sync::atomic::Ordering::Relaxed)
            {
                warn!(
                    waiting = due.len(),
                    "every exam pool is spent: add a fresh pool to exam_pools on every replica (docs/coordinator/state-machine.md \"Sealed exams\")"
                );
            }
        }
        SittingStep::Seal { number, pool } => {
            s.no_pool_warned
                .store(false, std::sync::atomic::Ordering::Relaxed);
            let command = InternalCommand::SealExamPool(Box::new(pool));
            spawn_sitting_task(s, format!("seal:{number}"), command);
        }
        SittingStep::Reveal(reveal) => {
            let request = format!("reveal:{}", reveal.sitting);
            spawn_sitting_task(s, request, InternalCommand::RevealExamKey(Box::new(reveal)));
        }
        SittingStep::SealFromOrganisation { number } => {
            let due: BTreeSet<String> = s.sm.read(|a| {
                due.iter()
                    .filter_map(|(id, _)| a.state.arbiters.get(id))
                    .map(|arb| arb.registration.organisation.clone())
                    .collect()
            });
            let fetching = s.clone();
            spawn_sitting_fetch(s, async move {
                let fetched = org_pool::sealed_pool(&fetching, number, &due).await;
                if fetched.is_ok() {
                    fetching
                        .no_pool_warned
                        .store(false, std::sync::atomic::Ordering::Relaxed);
                } else if fetching
                    .no_pool_warned
                    .swap(true, std::sync::atomic::Ordering::Relaxed)
                {
                    // Logged once until a pool is sealed again.
                    return Err(None);
                }
                fetched.map_err(Some)
            });
        }
        SittingStep::Close(sitting) => {
            let close = panel_machine::log::exam_pool::SittingClose { sitting };
            spawn_sitting_task(
                s,
                format!("close:{sitting}"),
                InternalCommand::CloseExamSitting(close),
            );
        }
        SittingStep::RevealFromOrganisation {
            sitting,
            organisation,
        } => {
            let fetching = s.clone();
            spawn_sitting_fetch(s, async move {
                let key = org_pool::revealed_key(&fetching, sitting, &organisation)
                    .await
                    .map_err(Some)?;
                Ok((
                    format!("reveal:{sitting}"),
                    InternalCommand::RevealExamKey(Box::new(key)),
                ))
            });
        }
        SittingStep::Examine(number) => {
            for (arbiter_id, endpoint) in due {
                spawn_exam(s, arbiter_id, endpoint, number);
            }
        }
    }
}

/// Proposes a seal or a reveal under a request id derived from `request`, so a new
/// leader repeating it applies it at most once.
pub(super) fn spawn_sitting_task(s: &Arc<Shared>, request: String, command: InternalCommand) {
    spawn_sitting_fetch(s, async move { Ok((request, command)) });
}

/// [`spawn_sitting_task`] for a step whose command is fetched first (from other
/// organisations' replicas, `org_pool.rs`); a failed fetch is logged (unless `None`, already
/// logged) and tried again on a later pass.
fn spawn_sitting_fetch<F>(s: &Arc<Shared>, fetch: F)
where
    F: std::future::Future<Output = Result<(String, InternalCommand), Option<DriveError>>>
        + Send
        + 'static,
{
    s.in_flight
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(SITTING_TASK.to_owned());
    let s = s.clone();
    tokio::spawn(async move {
        match fetch.await {
            Ok((request, command)) => propose_sitting_step(&s, request, command).await,
            Err(Some(e)) => warn!("exam sitting step not ready: {e}"),
            Err(None) => {}
        }
        s.in_flight
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(SITTING_TASK);
    });
}

/// Proposes one sitting step unless this leader saw apply refuse it before.
async fn propose_sitting_step(s: &Arc<Shared>, request: String, command: InternalCommand) {
    let refused_before = s
        .refused_sitting_steps
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .contains(&request);
    if refused_before {
        return;
    }
    let span = info_span!("exam_sitting", step = %request);
    async move {
            let bytes = serde_json::to_vec(&command).map_or(0, |b| b.len());
            let item = Item {
                client_id: "exam-driver".into(),
                request_id: leading_u64(&Sha256::digest(request.as_bytes())),
                command: command.into(),
                writer: None,
            };
            match s.proposer.submit(item, bytes).await {
                Ok(out) => match &out.reply {
                    ItemReply::Refused { code, message } => {
                        tracing::error!(
                            %code,
                            "exam sitting step refused, not proposed again by this leader: {message}; check that every replica holds the same exam_pools"
                        );
                        s.refused_sitting_steps
                            .lock()
                            .unwrap_or_else(PoisonError::into_inner)
                            .insert(request.clone());
                    }
                    ItemReply::Applied(reply) => {
                    info!(log_index = out.log_index, %reply, "exam sitting step applied")
                }
                },
                Err(e) => warn!("exam sitting step not proposed: {e}"),
            }
    }
    .instrument(span)
    .await;
}

/// Examines one due arbiter in sitting `number`, unless its exam is already in flight.
pub(super) fn spawn_exam(s: &Arc<Shared>, arbiter_id: String, endpoint: String, number: u32) {
    if is_link_endpoint(&endpoint) && !s.linked(&arbiter_id) {
        return;
    }
    let backing_off = s
        .exam_backoff
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get(&arbiter_id)
        .is_some_and(|(_, next)| tokio::time::Instant::now() < *next);
    if backing_off {
        return;
    }
    let key = format!("exam:{arbiter_id}");
    let span = info_span!("exam", arbiter = %arbiter_id, sitting = number);
    spawn_once(s, key, span, move |s| async move {
        let outcome = administer_exam(&s, &arbiter_id, &endpoint, number).await;
        let mut backoff = s
            .exam_backoff
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        match outcome {
            Ok(()) => {
                backoff.remove(&arbiter_id);
            }
            Err(e) => {
                let failures = backoff.get(&arbiter_id).map_or(0, |(n, _)| *n) + 1;
                let wait = Duration::from_secs(1 << (failures - 1).min(10)).min(EXAM_RETRY_MAX);
                warn!(
                    failures,
                    retry_in_s = wait.as_secs(),
                    "exam not completed: {e}"
                );
                let next = tokio::time::Instant::now() + wait;
                backoff.insert(arbiter_id.clone(), (failures, next));
            }
        }
    });
}

/// Registered arbiters with a node endpoint that are due an exam
/// ([`exam_due`](panel_machine::features::exam_sitting::exam_due)) and have none held in the open
/// sitting.
pub(super) fn awaiting_exam(s: &Shared, now_ms: u64) -> Vec<(String, String)> {
    s.sm.read(|a| {
        let open = panel_machine::features::exam_sitting::open_sitting(&a.state);
        a.state
            .arbiters
            .iter()
            .filter(|(id, arb)| {
                !arb.registration.endpoint.is_empty()
                    && panel_machine::features::exam_sitting::exam_due(arb, now_ms).is_ok()
                    && !open.is_some_and(|o| {
                        o.held.contains_key(id.as_str())
                            || panel_machine::features::org_pools::may_sit(
                                o,
                                id,
                                &arb.registration.organisation,
                            )
                            .is_err()
                    })
            })
            .map(|(id, arb)| (id.clone(), arb.registration.endpoint.clone()))
            .collect()
    })
}

/// What one arbiter is asked in a sitting: the signed-to-be motions in asking order.
pub(super) fn exam_sheet(
    s: &Shared,
    arbiter_id: &str,
    number: u32,
    window: Window,
) -> Result<Vec<pb::Motion>, DriveError> {
    s.sm.read(|a| {
        let open = panel_machine::features::exam_sitting::open_sitting(&a.state)
            .filter(|o| o.number == number)
            .ok_or(DriveError::SittingClosed(number))?;
        let arbiter = a
            .state
            .arbiters
            .get(arbiter_id)
            .ok_or_else(|| DriveError::UnknownArbiter(arbiter_id.to_owned()))?;
        let key = panel_machine::rules::ruling::parse_public_key(
            arbiter_id,
            &arbiter.registration.public_key,
        )?;
        let asked = open.asked(arbiter_id, &key)?;
        let pool = s.pools.for_sitting(open);
        let token_key = panel_machine::features::org_pools::token_key(open, pool.map(|p| p.salt()))
            .ok_or(DriveError::PoolNotHeld(number))?;
        Ok(asked
            .iter()
            .filter_map(|id| open.public.item(id))
            .map(|item| {
                // Scripted judges in a simulation get the gold as a hint.
                let hint = pool
                    .filter(|_| s.opts.simulation)
                    .and_then(|p| p.exam.item(&item.id))
                    .map(|i| panel_machine::features::admission::expected_answer(&i.gold));
                let deadlines = (window.commit_deadline_ms, window.reveal_deadline_ms);
                open.motion(arbiter_id, &key, item, &token_key, deadlines, hint)
            })
            .collect::<Result<_, _>>()?)
    })
}

/// Puts the arbiter's draw of the open sitting to its node (commit, then reveal after the
/// window) and proposes the answers, which apply holds until the key is revealed. The
/// round's schedule is [`Round`]'s ([`RoundKind::Exam`]); this function only does what it
/// says.
pub(super) async fn administer_exam(
    s: &Arc<Shared>,
    arbiter_id: &str,
    endpoint: &str,
    number: u32,
) -> Result<(), DriveError> {
    let mut c = s.route(arbiter_id, endpoint).await?;
    c.ready().await.map_err(DriveError::NodeNotReady)?;
    let motion_key = s.motion_key_for(u64::MAX)?;
    let window = Window::starting(
        s.now_ms(),
        s.opts.exam_window.as_millis() as i64,
        s.opts.reveal_window.as_millis() as i64,
    );
    let sheet = exam_sheet(s, arbiter_id, number, window)?;
    let asked = sheet.len();
    let mut round = Round::new(RoundKind::Exam, window);
    let mut committed: Vec<pb::Motion> = Vec::new();
    let mut answers = ExamAnswers::default();
    let mut sheet = Some(sheet);
    loop {
        match round.poll(s.now_ms()) {
            Step::AskCommitments => {
                let motions = sheet
                    .take()
                    .unwrap_or_default()
                    .into_iter()
                    // Signed like debate motions: the node refuses anything else.
                    .map(|m| sign_motion(motion_key, m))
                    .collect();
                // Sealed by the charter's log quorum, as debate motions are (`seal.rs`).
                let motions = seal::sealed(s, motions).await?;
                committed = commit_exam_items(s, &c, motions, window).await;
                if committed.is_empty() {
                    return Err(DriveError::NoExamItem);
                }
                round.on_commitments();
            }
            Step::WaitUntil(t) => s.sleep_until(t).await,
            Step::AskReveals => {
                answers = reveal_exam_items(&c, &committed).await;
                round.on_reveals(s.now_ms(), 0);
            }
            Step::Finish => {
                if answers.reveals.len() < asked {
                    warn!(
                        answered = answers.reveals.len(),
                        items = asked,
                        "exam submitted with unanswered items (scored as missing)"
                    );
                }
                submit_exam(s, arbiter_id, number, std::mem::take(&mut answers)).await?;
                round.on_finished();
            }
            Step::Done => return Ok(()),
            step @ (Step::LogCommitments | Step::Recheck) => {
                return Err(DriveError::UnexpectedStep(step));
            }
        }
    }
}

/// The revealed answers of an exam and the signed motions they answer, hex-encoded as
/// `SubmitExam` carries them.
#[derive(Default)]
pub(super) struct ExamAnswers {
    reveals: Vec<RevealBytes>,
    motions: Vec<panel_machine::rules::signed_motion::WireMotion>,
}

/// Items go to the node together (at most `exam_concurrency` in flight); the node judges
/// them within its own limit. An item the node could not answer in the window is left
/// out (scored as missing) rather than sinking the exam: its motion id is spent, since
/// the node refuses a second motion under it. Returns the committed items.
pub(super) async fn commit_exam_items(
    s: &Shared,
    c: &Route,
    motions: Vec<pb::Motion>,
    window: Window,
) -> Vec<pb::Motion> {
    let limit = s.opts.exam_concurrency.max(1);
    let mut todo = motions.into_iter();
    let mut in_flight = futures::stream::FuturesUnordered::new();
    let mut committed = Vec::new();
    loop {
        while in_flight.len() < limit {
            let Some(m) = todo.next() else { break };
            let mut route = c.clone_route();
            let wait = commit_wait(window, s.now_ms());
            let span = info_span!("exam_item", motion = %m.motion_id);
            in_flight.push(
                async move {
                    let r = route.commit(m.clone(), wait).await;
                    (m, r)
                }
                .instrument(span),
            );
        }
        match in_flight.next().await {
            Some((m, Ok(_))) => committed.push(m),
            Some((m, Err(e))) => warn!(motion = %m.motion_id, "exam item not committed: {e}"),
            None => return committed,
        }
    }
}

/// Asks the node for the reveal of every committed item.
pub(super) async fn reveal_exam_items(c: &Route, committed: &[pb::Motion]) -> ExamAnswers {
    let mut answers = ExamAnswers::default();
    let mut route = c.clone_route();
    for m in committed {
        match route
            .reveal(&m.motion_id, &motion_digest(m))
            .instrument(info_span!("exam_item", motion = %m.motion_id))
            .await
        {
            Ok(r) => {
                answers.reveals.push(RevealBytes::new(r.encode_to_vec()));
                // Apply checks each answer against the motion it answers (`rules.rs`).
                answers
                    .motions
                    .push(panel_machine::rules::signed_motion::encode(m));
            }
            Err(e) => warn!(motion = %m.motion_id, "exam item not revealed: {e}"),
        }
    }
    answers
}

/// Proposes the exam's answers for scoring in apply (`SubmitExam`).
pub(super) async fn submit_exam(
    s: &Shared,
    arbiter_id: &str,
    number: u32,
    answers: ExamAnswers,
) -> Result<(), DriveError> {
    let bytes = answers
        .reveals
        .iter()
        .map(RevealBytes::hex_len)
        .sum::<usize>()
        + answers.motions.iter().map(|m| m.hex_len()).sum::<usize>();
    let out = s
        .proposer
        .submit(
            Item {
                client_id: "exam-driver".into(),
                request_id: exam_request_id(arbiter_id, number),
                command: InternalCommand::SubmitExam {
                    arbiter_id: arbiter_id.to_string(),
                    reveals: answers.reveals,
                    motions: answers.motions,
                    sitting: Some(number),
                }
                .into(),
                writer: None,
            },
            bytes,
        )
        .await?;
    match out.reply {
        ItemReply::Refused { code, message } => Err(DriveError::ExamRefused { code, message }),
        _ => {
            info!(
                log_index = out.log_index,
                "exam answers held for the sitting's reveal"
            );
            Ok(())
        }
    }
}

/// The deduplication id of an arbiter's exam submission (one per arbiter, as the log has
/// always named it).
pub(super) fn exam_request_id(arbiter_id: &str, sitting: u32) -> u64 {
    leading_u64(&Sha256::digest(
        format!("exam:{arbiter_id}:s{sitting}").as_bytes(),
    ))
}
