//! Canonical bytes of a JSON value, for content hashes.
//!
//! Rules: object keys sorted by their UTF-8 bytes, no insignificant whitespace, strings
//! escaped as serde_json writes them, numbers as serde_json writes them (integers as
//! integers, floats in shortest round-trip form, so `1.50` and `1.5` agree but `1` and `1.0`
//! do not). Close to RFC 8785 but not identical in number formatting, so the hash is
//! defined by this crate, not by JCS.

use serde_json::Value;

/// Append the canonical form of `value` to `out`.
pub fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String((*key).clone()).to_string());
                out.push(':');
                write_canonical(&map[key.as_str()], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

/// The canonical form of `value` as a string.
pub fn canonical(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_order_and_whitespace_do_not_matter() {
        let a: Value =
            serde_json::from_str(r#"{"b": [1, 2.50, "x"], "a": {"d": null, "c": true}}"#).unwrap();
        let b: Value =
            serde_json::from_str(r#"{"a":{"c":true,"d":null},"b":[1,2.5,"x"]}"#).unwrap();
        assert_eq!(canonical(&a), canonical(&b));
        assert_eq!(
            canonical(&a),
            r#"{"a":{"c":true,"d":null},"b":[1,2.5,"x"]}"#
        );
    }
}
