//! A node declares its configured stances itself (docs/WIRE.md "Stance declaration";
//! docs/coordinator/acceptance.md "Declared priors"): at start it signs each `[[stances]]` entry with
//! its own key and writes `DeclareStance` to its coordinators. An entry with
//! `debate_id = "*"` is a standing stance, which every debate created later starts with,
//! so a new debate under the independent policy can seat the node without hand work.
//!
//! Each write's request id is derived from the signed declaration, so a restarted node
//! repeats the same write (deduplicated) instead of adding one.

use panel_machine::command::StanceDeclaration;

use panel_machine::ClientCommand;
use panel_machine::Stance;
use panel_proto::stance_declaration::{DeclarationClaim, DeclarationError};

use crate::arbiter::Arbiter;
use crate::config::StanceConfig;
use crate::submit::WriteRequest;

/// Why a configured stance cannot be written.
#[derive(Debug, thiserror::Error)]
pub enum DeclareError {
    #[error(transparent)]
    Claim(#[from] DeclarationError),
    #[error("the DeclareStance command does not encode: {0}")]
    Encode(#[from] serde_json::Error),
}

/// The `DeclareStance` write of one configured stance, signed by `arbiter`'s key.
pub fn declaration_request(
    arbiter: &Arbiter,
    arbiter_id: &str,
    stance: &StanceConfig,
) -> Result<WriteRequest, DeclareError> {
    let (side, wire) = match stance.side.as_str() {
        "A" | "a" => ("A", Stance::A),
        "B" | "b" => ("B", Stance::B),
        _ => ("none", Stance::None),
    };
    let credence_permille = (stance.credence.clamp(0.0, 1.0) * 1000.0).round() as u16;
    let claim = DeclarationClaim {
        arbiter_id,
        debate_id: &stance.debate_id,
        side,
        credence_permille,
    };
    let signature = hex::encode(arbiter.sign_declaration(&claim)?);
    let command = ClientCommand::DeclareStance(StanceDeclaration {
        arbiter_id: arbiter_id.to_owned(),
        debate_id: stance.debate_id.clone(),
        stance: wire,
        credence_permille,
        signature: signature.clone().into(),
    });
    let digest = <sha2::Sha256 as sha2::Digest>::digest(
        [b"declare-stance\0".as_slice(), signature.as_bytes()].concat(),
    );
    let mut rid = [0u8; 8];
    rid.copy_from_slice(&digest[..8]);
    let key = arbiter.verifying_key().to_bytes();
    Ok(WriteRequest {
        client_id: format!("node-{}", hex::encode(&key[..8])),
        request_id: u64::from_be_bytes(rid),
        command_json: serde_json::to_string(&command)?,
        ..WriteRequest::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_configured_standing_stance_is_a_declaration_the_machine_accepts() {
        let key = panel_proto::SigningKey::from_bytes(&[5; 32]);
        let arbiter = Arbiter::new(key.clone(), None, Default::default());
        let stance = StanceConfig {
            debate_id: "*".into(),
            side: "B".into(),
            credence: 0.7,
        };
        let req = declaration_request(&arbiter, "arb-x", &stance).expect("signed");
        let command: panel_machine::ClientCommand =
            serde_json::from_str(&req.command_json).expect("a DeclareStance command");
        let panel_machine::ClientCommand::DeclareStance(d) = command else {
            panic!("{}", req.command_json);
        };
        assert_eq!(
            (d.debate_id.as_str(), d.stance, d.credence_permille),
            ("*", panel_machine::Stance::B, 700)
        );
        let sig = d.signature.bytes().expect("hex");
        panel_proto::stance_declaration::verify_declaration(
            &panel_machine::features::declared_priors::claim(&d),
            &sig,
            &key.verifying_key(),
        )
        .expect("verifies under the node's key");
        // The same declaration is the same write after a restart.
        let again = declaration_request(&arbiter, "arb-x", &stance).expect("signed");
        assert_eq!(again.request_id, req.request_id);
        let other = StanceConfig {
            side: "A".into(),
            ..stance
        };
        let other = declaration_request(&arbiter, "arb-x", &other).expect("signed");
        assert_ne!(other.request_id, req.request_id);
    }
}
