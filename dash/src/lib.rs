//! `panel dash`: a read-only dashboard of a running Crucible Panel cluster in the browser
//! (docs/DASHBOARD.md).
//!
//! Every page is rendered on the server from linearizable reads of the coordinator
//! ([`source`]), decoded into the machine's own types (`panel_machine::read::query`'s replies),
//! and escaped ([`html::escape`]) wherever text from the cluster appears. There is no
//! script and no external asset: charts are inline SVG ([`charts`], and calibration's
//! reliability diagrams), styles are inline, so the page works offline. One module per
//! view under [`views`]; [`server`] routes GET requests to them, answers any other path
//! with 404 and any other method with 405, and turns every failure into a page
//! ([`error::DashError`]): an unreachable coordinator is a 503 naming its address. In
//! front of the routes it refuses requests addressed to hosts other than its own (421,
//! against DNS rebinding), bodies and long addresses, and more than a few requests at
//! once (503), and bounds each request's time (504); it listens on loopback unless told
//! otherwise ([`check_listen`]).

pub mod charts;
pub mod chrome;
pub mod error;
pub mod html;
pub mod paging;
pub mod server;
pub mod source;
pub mod views;

pub use error::DashError;
pub use server::{
    HostPolicy, Options, ServeError, bind_and_serve, check_listen, router, serve, stop_signal,
};
pub use source::{Source, SourceError};

/// State built with the machine's own apply, for the views' tests.
#[cfg(test)]
pub(crate) mod fixtures {
    use panel_machine::State;
    use panel_machine::{Batch, ClientCommand, Command, Item, Query};

    /// `CreateDebate` with `resolution`.
    pub fn debate(resolution: &str) -> ClientCommand {
        ClientCommand::CreateDebate(
            serde_json::from_value(serde_json::json!({
                "resolution": resolution, "pos_a": "yes", "pos_b": "no", "seats": 4,
                "min_per_stance": 2, "convener": "tester",
            }))
            .expect("debate spec"),
        )
    }

    /// An unchartered state after applying `commands`, one batch each.
    pub fn state(commands: Vec<ClientCommand>) -> State {
        let mut st = State::default();
        let memo = panel_proto::VerifiedMemo::default();
        for (i, c) in commands.into_iter().enumerate() {
            let i = i as u64 + 1;
            let batch = Batch {
                time_ms: 1_700_000_000_000 + i,
                seed: i,
                items: vec![Item {
                    client_id: "fixture".into(),
                    request_id: i,
                    command: Command::Client(c),
                    writer: None,
                }],
                limits: None,
                checkpoints: None,
                rules: None,
            };
            panel_machine::apply_batch(&mut st, i, &batch, &memo);
        }
        st
    }

    /// The only debate of a state made by [`state`] from one [`debate`], as the view reads
    /// it, with its id.
    pub fn only_debate(st: &State) -> (String, panel_machine::DebateRecord) {
        let list: panel_machine::read::query::DebatesReply = read(st, &Query::Debates);
        let id = list.debates[0].id.clone();
        let reply: panel_machine::read::query::DebateReply = read(
            st,
            &Query::Debate {
                debate_id: id.clone(),
            },
        );
        (id, reply.debate.expect("the debate"))
    }

    /// The machine's answer to `q`, decoded as a reader decodes it.
    pub fn read<T: serde::de::DeserializeOwned>(st: &State, q: &Query) -> T {
        serde_json::from_value(panel_machine::read::query::query(st, q)).expect("the reply decodes")
    }
}
