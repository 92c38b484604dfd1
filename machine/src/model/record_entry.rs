//! One entry of the verifiable record, as the state holds it before it is handed to a
//! replica's store (docs/WIRE.md "Record entries").

use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::command::{Command, ItemReply};

pub(crate) fn is_zero<T: Default + PartialEq>(n: &T) -> bool {
    *n == T::default()
}

/// One applied command on the record, with everything needed to re-apply it offline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordEntry {
    pub seq: u64,
    pub log_index: u64,
    pub item_index: u32,
    pub time_ms: u64,
    pub seed: u64,
    pub client_id: String,
    pub request_id: u64,
    pub command: Command,
    pub reply: ItemReply,
    /// The rule set in force when the entry applied (`rules.rs`); absent (0) in entries
    /// applied before rule sets were stamped, so their leaf bytes are unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rules: Option<u32>,
}

/// Why a record entry has no leaf bytes: its command cannot be written as JSON. `apply`
/// refuses such a command before it changes anything (`unencodable`), so an entry it
/// recorded always has its leaf; this error reaches readers of foreign or damaged records.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("record entry {seq}'s command cannot be encoded as JSON ({reason}), so it has no leaf")]
pub struct LeafError {
    pub seq: u64,
    pub reason: String,
}

/// A command's JSON as the leaf carries it, written once: `apply` encodes each command
/// bound for the record before applying it and refuses one that fails.
pub fn encode_command(command: &Command) -> Result<Box<RawValue>, serde_json::Error> {
    serde_json::value::to_raw_value(command)
}

impl RecordEntry {
    /// The bytes hashed into the transparency log: the entry's JSON (docs/WIRE.md "Record
    /// entries"), or why its command has none.
    pub fn leaf_bytes(&self) -> Result<Vec<u8>, LeafError> {
        let command = encode_command(&self.command).map_err(|e| LeafError {
            seq: self.seq,
            reason: e.to_string(),
        })?;
        Ok(self.leaf_bytes_with(&command))
    }

    /// The leaf bytes given the command's JSON: the bytes `serde_json::to_vec(self)`
    /// writes, assembled from parts whose writing cannot fail (numbers, strings and the
    /// reply through `Value`'s `Display`), so no leaf is ever empty.
    pub fn leaf_bytes_with(&self, command: &RawValue) -> Vec<u8> {
        let reply = match &self.reply {
            ItemReply::Applied(v) => format!("{{\"Applied\":{v}}}"),
            ItemReply::Refused { code, message } => format!(
                "{{\"Refused\":{{\"code\":{},\"message\":{}}}}}",
                json_string(code.as_str()),
                json_string(message)
            ),
        };
        let mut out = format!(
            "{{\"seq\":{},\"log_index\":{},\"item_index\":{},\"time_ms\":{},\"seed\":{},\
             \"client_id\":{},\"request_id\":{},\"command\":{},\"reply\":{reply}",
            self.seq,
            self.log_index,
            self.item_index,
            self.time_ms,
            self.seed,
            json_string(&self.client_id),
            self.request_id,
            command.get(),
        );
        if let Some(rules) = self.rules {
            out.push_str(&format!(",\"rules\":{rules}"));
        }
        out.push('}');
        out.into_bytes()
    }
}

/// `s` as a JSON string literal, escaped as serde_json escapes it.
fn json_string(s: &str) -> String {
    Value::String(s.to_owned()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command::ClientCommand;
    use serde_json::json;

    fn entry(command: Command, reply: ItemReply, rules: Option<u32>) -> RecordEntry {
        RecordEntry {
            seq: 7,
            log_index: 12,
            item_index: 3,
            time_ms: 1_765_000_000_123,
            seed: u64::MAX,
            client_id: "cli \"quoted\" \\ \u{1} é 🙂".into(),
            request_id: 9,
            command,
            reply,
            rules,
        }
    }

    /// The assembled leaf is byte for byte what serde_json writes for the whole entry, so
    /// records written before it (hashed from `to_vec`) verify unchanged.
    #[test]
    fn the_assembled_leaf_is_the_entrys_json() {
        let commands: Vec<Command> = vec![
            Command::Client(ClientCommand::CheckPriors),
            serde_json::from_value(json!({"Note": {"topic": "t\n", "text": "\u{7f}\t<>&"}}))
                .expect("a note"),
        ];
        let replies = [
            ItemReply::Applied(json!({"b": 1.5e-7, "a": [null, true, "x\"y"], "n": -3})),
            ItemReply::Applied(serde_json::Value::Null),
            ItemReply::Refused {
                code: crate::log::refusal_code::RefusalCode::DrawFailed,
                message: "line\nbreak \"and\" \\ \u{0} tab\t".into(),
            },
        ];
        for command in &commands {
            for reply in &replies {
                for rules in [None, Some(0), Some(27)] {
                    let e = entry(command.clone(), reply.clone(), rules);
                    let expected = serde_json::to_vec(&e).expect("encodes");
                    assert_eq!(
                        String::from_utf8(e.leaf_bytes().expect("leaf")).unwrap(),
                        String::from_utf8(expected).unwrap()
                    );
                }
            }
        }
    }
}
