//! The optional semantic screen (SPEC section 8.1): advisory, never normative.
//!
//! The deterministic rules catch what is stated; a language model can notice what is
//! only implied (a veiled attack, sarcasm carried by structure). This module holds the
//! protocol side of such a screen: the rule ids, the instruction text, a request builder
//! with no transport, and a tolerant parser. A failed or garbled screen never blocks a
//! submission that passed the Gate, so parsing never fails: it reports `Skipped`.

use serde::Serialize;
use serde_json::Value;

use super::GateField;

/// The advisory rule ids a screen may return, with what each covers.
pub const S_RULES: [(&str, &str); 5] = [
    (
        "S1-veiled-attack",
        "A person or their motives attacked by implication rather than openly.",
    ),
    (
        "S2-sarcasm",
        "Irony or sarcasm that belittles instead of informing.",
    ),
    (
        "S3-loaded-framing",
        "Charged framing carried by neutral-looking words.",
    ),
    (
        "S4-misrepresentation",
        "A source described in a way its own title or venue makes unlikely.",
    ),
    (
        "S5-insinuation",
        "A claim suggested by implication instead of stated in a form that can be checked.",
    ),
];

/// Instructions for the screening model. Part of the protocol, not of any vendor.
pub const SCREEN_SYSTEM: &str = "You screen submissions to a Crucible Protocol debate record. \
The text below has already passed the deterministic Gate, which catches stated insults, \
outrage words, jokes, shouting and appeals to popularity. Look only for what those word \
lists cannot see:\n\
- S1-veiled-attack: a person or their motives attacked by implication;\n\
- S2-sarcasm: irony or sarcasm that belittles instead of informing;\n\
- S3-loaded-framing: charged framing carried by neutral-looking words;\n\
- S4-misrepresentation: a cited source described in a way its title or venue makes unlikely;\n\
- S5-insinuation: a claim suggested by implication instead of stated in checkable form.\n\
Judge form only. Never report a position, a conclusion or the strength of evidence, \
whether or not you agree with it.\n\
Answer with one JSON object and nothing else: \
{\"pass\": true|false, \"violations\": [{\"rule\": \"<one of the five ids above>\", \
\"excerpt\": \"<quoted text>\", \"explanation\": \"<why>\", \"fix\": \"<how to restate>\"}]}. \
When nothing is wrong answer {\"pass\": true, \"violations\": []}.";

/// One chat message of a screen request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ScreenMessage {
    pub role: &'static str,
    pub content: String,
}

/// What a host sends to its model: the instructions and the text. No endpoint, model
/// name or key: transport belongs to the host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ScreenRequest {
    pub system: &'static str,
    pub messages: Vec<ScreenMessage>,
}

/// Builds the request for `text` (an absent text is sent as empty).
pub fn build_screen_request(text: Option<&str>) -> ScreenRequest {
    ScreenRequest {
        system: SCREEN_SYSTEM,
        messages: vec![ScreenMessage {
            role: "user",
            content: text.unwrap_or_default().to_owned(),
        }],
    }
}

/// The result of parsing a model's answer.
#[derive(Debug, Clone, PartialEq)]
pub enum ScreenOutcome {
    /// The answer held a JSON object. `pass` is true only for a literal `true`;
    /// `violations` is the `violations` array or empty.
    Screened { pass: bool, violations: Vec<Value> },
    /// No usable object; the screen is treated as not run.
    Skipped { error: &'static str },
}

impl ScreenOutcome {
    pub fn is_skipped(&self) -> bool {
        matches!(self, ScreenOutcome::Skipped { .. })
    }
}

/// Parses a raw model answer. Models wrap JSON in prose, so the span from the first `{`
/// to the last `}` is parsed; an answer without such a span, or whose span is not a JSON
/// object, is `Skipped`.
pub fn parse_screen_response(raw: Option<&str>) -> ScreenOutcome {
    const UNPARSEABLE: ScreenOutcome = ScreenOutcome::Skipped {
        error: "the screen's answer holds no JSON object",
    };
    let text = raw.unwrap_or_default();
    let (Some(open), Some(close)) = (text.find('{'), text.rfind('}')) else {
        return UNPARSEABLE;
    };
    if close < open {
        return UNPARSEABLE;
    }
    match serde_json::from_str::<Value>(&text[open..=close]) {
        Ok(Value::Object(obj)) => ScreenOutcome::Screened {
            pass: obj.get("pass") == Some(&Value::Bool(true)),
            violations: match obj.get("violations") {
                Some(Value::Array(items)) => items.clone(),
                _ => Vec::new(),
            },
        },
        _ => UNPARSEABLE,
    }
}

/// Renders fields as the single text block the screen reads: `Label: text` blocks
/// separated by a blank line. No fields give an empty string.
pub fn fields_to_screen_text(fields: Option<&[GateField]>) -> String {
    fields
        .unwrap_or_default()
        .iter()
        .map(|f| format!("{}: {}", f.label, f.text))
        .collect::<Vec<_>>()
        .join("\n\n")
}
