//! JSON from clients read strictly: a key given twice in one object is refused (serde_json
//! keeps the last one, so `{"seed": 1, "seed": 2}` would mean what a reader of the first key
//! does not expect), and text fields carry no control characters but newlines and tabs where
//! text is code.

use std::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

/// Parses `bytes` as JSON, refusing duplicate keys (the error names the key).
pub fn parse(bytes: &[u8]) -> Result<Value, String> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let v = Strict.deserialize(&mut de).map_err(|e| e.to_string())?;
    de.end().map_err(|e| e.to_string())?;
    Ok(v)
}

/// Whether `text` holds a control character other than newline, carriage return and tab.
pub fn control_character(text: &str) -> Option<char> {
    text.chars()
        .find(|c| c.is_control() && !matches!(c, '\n' | '\r' | '\t'))
}

struct Strict;

impl<'de> DeserializeSeed<'de> for Strict {
    type Value = Value;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(StrictVisitor)
    }
}

struct StrictVisitor;

impl<'de> Visitor<'de> for StrictVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(v.into())
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(v.into())
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(v) = seq.next_element_seed(Strict)? {
            items.push(v);
        }
        Ok(Value::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(k) = map.next_key::<String>()? {
            if out.contains_key(&k) {
                return Err(de::Error::custom(format!("the key `{k}` is given twice")));
            }
            let v = map.next_value_seed(Strict)?;
            out.insert(k, v);
        }
        Ok(Value::Object(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_56_a_duplicate_key_is_refused_at_any_depth() {
        let e = parse(br#"{"seed": 1, "seed": 2}"#).expect_err("refused");
        assert!(e.contains("`seed` is given twice"), "{e}");
        let e = parse(br#"{"items": [{"task": "a", "task": "b"}]}"#).expect_err("refused");
        assert!(e.contains("`task` is given twice"), "{e}");
        let v = parse(br#"{"a": [1, 2.5, "x", null, true, {"b": {}}]}"#).expect("valid");
        assert_eq!(v["a"][1], 2.5);
        assert!(parse(b"{} x").is_err(), "trailing bytes");
    }

    #[test]
    fn control_characters_are_found() {
        assert_eq!(control_character("tab\tand\nline"), None);
        assert_eq!(control_character("nul\0"), Some('\0'));
        assert_eq!(control_character("esc\u{1b}[31m"), Some('\u{1b}'));
    }
}
