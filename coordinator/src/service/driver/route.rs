//! How the leader reaches one arbiter's node: its gRPC endpoint, or the link its node
//! opened to this replica (README.md "A node behind a firewall").

use super::*;

/// How the leader reaches one arbiter's node.
pub(super) enum Route {
    /// The node serves `ArbiterNode` at its registered endpoint.
    Grpc(ArbiterNodeClient<Channel>),
    /// The node connected out; requests go over its link to this replica.
    Link {
        arbiter_id: String,
        links: Arc<LinkRegistry>,
    },
}

/// Why a seat gave no commitment or reveal.
#[derive(Debug, thiserror::Error)]
pub enum ReachError {
    #[error("{}", .0.message())]
    Grpc(tonic::Status),
    #[error(transparent)]
    Link(#[from] LinkError),
}

impl Route {
    /// Asks for a commitment, waiting `wait` for the node's judge (until the motion's
    /// commit deadline plus a grace, [`commit_wait`]), however long the window.
    pub(super) async fn commit(
        &mut self,
        m: pb::Motion,
        wait: Duration,
    ) -> Result<pb::Commitment, ReachError> {
        match self {
            Route::Grpc(c) => {
                let mut req = tonic::Request::new(m);
                req.set_timeout(wait);
                c.commit(req)
                    .await
                    .map(|r| r.into_inner())
                    .map_err(ReachError::Grpc)
            }
            Route::Link { arbiter_id, links } => Ok(links.commit(arbiter_id, m, wait).await?),
        }
    }

    /// Whether the node answers at all (its `Identity`), before an exam spends the motion
    /// ids of its items on a node that is not listening yet. A link is ready once open.
    pub(super) async fn ready(&mut self) -> Result<(), ReachError> {
        match self {
            Route::Grpc(c) => {
                let mut req = tonic::Request::new(pb::IdentityRequest {});
                req.set_timeout(Duration::from_secs(5));
                c.identity(req).await.map(|_| ()).map_err(ReachError::Grpc)
            }
            Route::Link { .. } => Ok(()),
        }
    }

    pub(super) fn clone_route(&self) -> Route {
        match self {
            Route::Grpc(c) => Route::Grpc(c.clone()),
            Route::Link { arbiter_id, links } => Route::Link {
                arbiter_id: arbiter_id.clone(),
                links: links.clone(),
            },
        }
    }

    /// Asks for the reveal on the signed motion with `digest` (the node refuses if it
    /// committed on another motion under the same id).
    pub(super) async fn reveal(
        &mut self,
        motion_id: &str,
        digest: &[u8; 32],
    ) -> Result<pb::Reveal, ReachError> {
        match self {
            Route::Grpc(c) => {
                let mut req = tonic::Request::new(pb::RevealRequest {
                    motion_id: motion_id.to_owned(),
                    motion_digest: digest.to_vec(),
                });
                req.set_timeout(MIN_REQUEST_WAIT);
                c.reveal(req)
                    .await
                    .map(|r| r.into_inner())
                    .map_err(ReachError::Grpc)
            }
            Route::Link { arbiter_id, links } => {
                Ok(links.reveal(arbiter_id, motion_id, digest).await?)
            }
        }
    }
}
