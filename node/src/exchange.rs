//! After its reveal, a node sends its revealed ruling to the other members of the panel,
//! so every organisation holds every ruling on the motions its arbiters took part in.
//! Each receiver verifies before storing (see `service::deliver`). Deliveries to one peer
//! share one channel ([`Channels`]), not a connection each.

use std::collections::BTreeMap;
use std::time::Duration;

use panel_proto::pb::arbiter_node_client::ArbiterNodeClient;
use panel_proto::pb::{Motion, Reveal};
use panel_transport::{Peer, Transport};
use tracing::{Instrument, debug, info, warn};

use crate::channels::Channels;

/// Where to reach peers: configured endpoints win over endpoints named in the motion.
#[derive(Debug, Clone)]
pub struct PeerBook {
    pub configured: BTreeMap<[u8; 32], String>,
    pub attempts: u32,
    pub max_message_bytes: usize,
    /// How this node dials peers and coordinators (mutual TLS with its own certificate),
    /// and the channels it keeps open to them.
    pub channels: Channels,
}

impl PeerBook {
    pub fn new(
        configured: BTreeMap<[u8; 32], String>,
        attempts: u32,
        max_message_bytes: usize,
        transport: Transport,
    ) -> Self {
        Self {
            configured,
            attempts,
            max_message_bytes,
            channels: Channels::new(transport),
        }
    }

    /// How this node dials peers and coordinators.
    pub fn transport(&self) -> &Transport {
        self.channels.transport()
    }

    fn endpoint_for(&self, key: &[u8], seat_endpoint: &str) -> Option<String> {
        let k: Option<[u8; 32]> = key.try_into().ok();
        k.and_then(|k| self.configured.get(&k).cloned())
            .or_else(|| (!seat_endpoint.is_empty()).then(|| seat_endpoint.to_owned()))
    }

    /// Delivers `reveal` to every other seat of `motion`, in the background.
    pub fn spawn_delivery(&self, motion: &Motion, own_key: [u8; 32], reveal: Reveal) {
        for seat in &motion.panel {
            if seat.public_key.as_slice() == own_key.as_slice() {
                continue;
            }
            let Some(endpoint) = self.endpoint_for(&seat.public_key, &seat.endpoint) else {
                debug!(peer = %hex::encode(&seat.public_key), "no endpoint for panel member; not delivering");
                continue;
            };
            let reveal = reveal.clone();
            let attempts = self.attempts.max(1);
            let limit = self.max_message_bytes;
            let channels = self.channels.clone();
            let span = tracing::info_span!("deliver", motion = %motion.motion_id, debate = %motion.debate_id, peer = %endpoint);
            tokio::spawn(
                async move {
                    for attempt in 0..attempts {
                        if attempt > 0 {
                            tokio::time::sleep(Duration::from_millis(200 << attempt.min(6))).await;
                        }
                        match deliver_once(&channels, &endpoint, reveal.clone(), limit).await {
                            Ok(()) => {
                                info!("delivered revealed ruling");
                                return;
                            }
                            // A refusal by the peer is final: it verified and said no.
                            Err((msg, false)) => {
                                warn!(error = %msg, "peer refused delivery");
                                return;
                            }
                            Err((msg, true)) => warn!(attempt, error = %msg, "delivery failed"),
                        }
                    }
                }
                .instrument(span),
            );
        }
    }
}

/// One delivery over the peer's shared channel. Any member's certificate is accepted
/// ([`Peer::AnyMember`]): the charter pins no node certificate, and what is delivered is
/// signed end to end and verified by the receiver. `Err((message, retry))`.
async fn deliver_once(
    channels: &Channels,
    endpoint: &str,
    reveal: Reveal,
    limit: usize,
) -> Result<(), (String, bool)> {
    let channel = channels
        .get(endpoint, Peer::AnyMember, |e| e)
        .map_err(|e| (e.to_string(), false))?;
    let mut client = ArbiterNodeClient::new(channel)
        .max_decoding_message_size(limit)
        .max_encoding_message_size(limit);
    match client.deliver(reveal).await {
        Ok(_) => Ok(()),
        Err(s) if s.code() == tonic::Code::Unavailable => {
            channels.forget(endpoint, &Peer::AnyMember);
            Err((describe(&s), true))
        }
        Err(s) => Err((s.to_string(), false)),
    }
}

/// A status in one line with the causes behind it (a failed connection's status says
/// only "transport error" itself).
pub(crate) fn describe(s: &tonic::Status) -> String {
    use std::error::Error as _;
    match s.source() {
        Some(src) => format!("{}: {}", s.message(), panel_transport::connect_failure(src)),
        None => s.to_string(),
    }
}
