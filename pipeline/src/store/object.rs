//! Typed objects: blobs that are canonical JSON with a schema, and the reference convention.
//!
//! **What makes a blob an object.** Its bytes start with `{"schema":"ptxbench.` and parse as a
//! JSON object whose `schema` is `ptxbench.<kind>/<version>` (kinds: `record`, `run`, `import`,
//! or any other lowercase name). Every other blob (PTX, cubins, logs, CSVs, arbitrary JSON) is a
//! plain blob and is never parsed for references.
//!
//! **Canonical JSON.** An object's bytes are `serde_json::to_vec` of a Rust value: compact (no
//! whitespace), struct fields in declaration order with `schema` declared first, maps as
//! `BTreeMap` (sorted keys), no `HashMap`. Floats are written by serde_json's shortest
//! round-trip formatter, so one `f64` always has one spelling; producers must not put values that
//! vary between identical runs (wall-clock time, hostnames, absolute paths, unseeded randomness)
//! into an object. The digest covers exactly these bytes and nothing else (no file metadata).
//!
//! **References.** So that closures need no per-kind code, references are found by key name
//! anywhere in the object (nested objects and arrays included):
//! - a key ending in `_digest` holds a digest string (64 lowercase hex) or `null` (no reference);
//! - a key ending in `_digests` holds an array of digest strings.
//!
//! Any other shape under such a key makes the object malformed. Every reference must name an
//! object in the store: a hash that is not a store object (e.g. a suite hash) goes under a key
//! ending in `_hash` instead.

use std::fmt;
use std::str::FromStr;

use serde_json::Value;

use crate::digest::Digest;

/// The bytes every object starts with.
pub const OBJECT_PREFIX: &[u8] = b"{\"schema\":\"ptxbench.";

/// What kind of object a schema names.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ObjectKind {
    /// One evaluation of one candidate (`ptxbench.record/N`).
    Record,
    /// A set of records produced together (`ptxbench.run/N`).
    Run,
    /// External data imported byte-for-byte (`ptxbench.import/N`).
    Import,
    /// Any other schema name (lowercase letters, digits, `_`, `-`).
    Other(String),
}

impl ObjectKind {
    pub fn name(&self) -> &str {
        match self {
            ObjectKind::Record => "record",
            ObjectKind::Run => "run",
            ObjectKind::Import => "import",
            ObjectKind::Other(s) => s,
        }
    }
}

impl fmt::Display for ObjectKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A schema tag, `ptxbench.<kind>/<version>`. Invariant: version ≥ 1, kind non-empty.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Schema {
    pub kind: ObjectKind,
    pub version: u32,
}

impl Schema {
    pub fn new(kind: ObjectKind, version: u32) -> Schema {
        Schema { kind, version }
    }
}

impl fmt::Display for Schema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ptxbench.{}/{}", self.kind, self.version)
    }
}

impl FromStr for Schema {
    type Err = ObjectError;
    fn from_str(s: &str) -> Result<Schema, ObjectError> {
        let bad = || ObjectError::BadSchema {
            schema: s.chars().take(80).collect(),
        };
        let rest = s.strip_prefix("ptxbench.").ok_or_else(bad)?;
        let (kind, version) = rest.split_once('/').ok_or_else(bad)?;
        let kind_ok = !kind.is_empty()
            && kind
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-');
        let version_ok = !version.is_empty()
            && version.bytes().all(|b| b.is_ascii_digit())
            && !version.starts_with('0');
        if !kind_ok || !version_ok {
            return Err(bad());
        }
        let version: u32 = version.parse().map_err(|_| bad())?;
        let kind = match kind {
            "record" => ObjectKind::Record,
            "run" => ObjectKind::Run,
            "import" => ObjectKind::Import,
            other => ObjectKind::Other(other.to_string()),
        };
        Ok(Schema { kind, version })
    }
}

/// One reference inside an object: where it is (a JSON path like `files[2].content_digest`)
/// and what it names.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Reference {
    pub field: String,
    pub digest: Digest,
}

/// A parsed object: its schema, its JSON and its references (in key order).
#[derive(Debug, Clone)]
pub struct Object {
    pub schema: Schema,
    pub value: Value,
    pub references: Vec<Reference>,
}

/// What a blob is.
#[derive(Debug, Clone)]
pub enum Content {
    Object(Box<Object>),
    /// Valid UTF-8 without NUL bytes.
    Text,
    Binary,
}

/// The largest typed object (JSON with a schema) that is parsed: parsing holds about 20 times
/// an object's size in memory, so this bounds what `import`, `verify` and `site` take for one
/// object at about 1.3 GB. The largest real object (the paper's imported data) is a few MB; a
/// larger blob is still stored and verified by its hash, only never parsed as an object.
pub const MAX_OBJECT_BYTES: usize = 64 << 20;

/// Why a blob that claims to be an object is not a valid one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ObjectError {
    #[error(
        "an object of {bytes} bytes is over the {} MiB parsed for one object (MAX_OBJECT_BYTES)",
        MAX_OBJECT_BYTES >> 20
    )]
    TooLarge { bytes: usize },
    #[error("not JSON: {message}")]
    NotJson { message: String },
    #[error("`{schema}` is not a schema tag like ptxbench.record/1")]
    BadSchema { schema: String },
    #[error("the first field must be `schema` (a string)")]
    NoSchema,
    #[error("field `{field}` must hold {expected}")]
    BadReference {
        field: String,
        expected: &'static str,
    },
}

/// Whether `bytes` claim to be an object (start with [`OBJECT_PREFIX`]).
pub fn looks_like_object(bytes: &[u8]) -> bool {
    bytes.starts_with(OBJECT_PREFIX)
}

/// Classifies a blob: an object (parsed, references collected), text or binary.
pub fn classify(bytes: &[u8]) -> Result<Content, ObjectError> {
    if looks_like_object(bytes) {
        return parse_object(bytes).map(|o| Content::Object(Box::new(o)));
    }
    let text = std::str::from_utf8(bytes).is_ok() && !bytes.contains(&0);
    Ok(if text { Content::Text } else { Content::Binary })
}

/// Parses an object's bytes: checks the schema and collects references.
pub fn parse_object(bytes: &[u8]) -> Result<Object, ObjectError> {
    if !looks_like_object(bytes) {
        return Err(ObjectError::NoSchema);
    }
    if bytes.len() > MAX_OBJECT_BYTES {
        return Err(ObjectError::TooLarge { bytes: bytes.len() });
    }
    let value: Value = serde_json::from_slice(bytes).map_err(|e| ObjectError::NotJson {
        message: e.to_string(),
    })?;
    let schema = value
        .get("schema")
        .and_then(Value::as_str)
        .ok_or(ObjectError::NoSchema)?
        .parse::<Schema>()?;
    let references = references(&value)?;
    Ok(Object {
        schema,
        value,
        references,
    })
}

/// Every reference in `value`, by the key convention in the module doc.
pub fn references(value: &Value) -> Result<Vec<Reference>, ObjectError> {
    let mut out = Vec::new();
    walk(value, &mut String::new(), &mut out)?;
    Ok(out)
}

fn walk(value: &Value, path: &mut String, out: &mut Vec<Reference>) -> Result<(), ObjectError> {
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                let len = path.len();
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(key);
                if key.ends_with("_digests") {
                    digests_field(child, path, out)?;
                } else if key.ends_with("_digest") {
                    digest_field(child, path, out)?;
                } else {
                    walk(child, path, out)?;
                }
                path.truncate(len);
            }
        }
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                let len = path.len();
                path.push_str(&format!("[{i}]"));
                walk(child, path, out)?;
                path.truncate(len);
            }
        }
        _ => {}
    }
    Ok(())
}

fn digest_field(v: &Value, path: &str, out: &mut Vec<Reference>) -> Result<(), ObjectError> {
    let bad = || ObjectError::BadReference {
        field: path.to_string(),
        expected: "a digest (64 lowercase hex characters) or null",
    };
    match v {
        Value::Null => Ok(()),
        Value::String(s) => {
            let digest = s.parse().map_err(|_| bad())?;
            out.push(Reference {
                field: path.to_string(),
                digest,
            });
            Ok(())
        }
        _ => Err(bad()),
    }
}

fn digests_field(v: &Value, path: &str, out: &mut Vec<Reference>) -> Result<(), ObjectError> {
    let bad = || ObjectError::BadReference {
        field: path.to_string(),
        expected: "an array of digests (64 lowercase hex characters)",
    };
    let items = v.as_array().ok_or_else(bad)?;
    for (i, item) in items.iter().enumerate() {
        let digest = item.as_str().and_then(|s| s.parse().ok()).ok_or_else(bad)?;
        out.push(Reference {
            field: format!("{path}[{i}]"),
            digest,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 55, finding 6: a 256 MiB object, inside every other limit, took 4.5 GB to import.
    #[test]
    fn issue_55_an_object_over_the_limit_is_refused_before_it_is_parsed() {
        let mut big = br#"{"schema":"ptxbench.record/2","pad":""#.to_vec();
        big.resize(MAX_OBJECT_BYTES + 1, b'a');
        big.extend_from_slice(b"\"}");
        match parse_object(&big) {
            Err(ObjectError::TooLarge { bytes }) => assert_eq!(bytes, big.len()),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn schema_round_trips_and_rejects_junk() {
        for s in [
            "ptxbench.record/1",
            "ptxbench.run/2",
            "ptxbench.env_info/10",
        ] {
            assert_eq!(s.parse::<Schema>().expect("valid").to_string(), s);
        }
        for s in [
            "ptxbench.record",
            "ptxbench.Record/1",
            "ptxbench.record/01",
            "ptxbench.record/0",
            "other.record/1",
            "ptxbench./1",
        ] {
            assert!(s.parse::<Schema>().is_err(), "{s}");
        }
    }

    #[test]
    fn finds_references_by_key_convention() {
        let a = Digest::of(b"a");
        let b = Digest::of(b"b");
        let json = format!(
            r#"{{"schema":"ptxbench.run/1","record_digests":["{a}","{b}"],"env":{{"log_digest":null,"gpu_digest":"{a}"}},"files":[{{"content_digest":"{b}"}}],"suite_hash":"zz"}}"#
        );
        let o = parse_object(json.as_bytes()).expect("valid object");
        assert_eq!(o.schema.kind, ObjectKind::Run);
        let fields: Vec<_> = o.references.iter().map(|r| r.field.as_str()).collect();
        assert_eq!(
            fields,
            [
                "env.gpu_digest",
                "files[0].content_digest",
                "record_digests[0]",
                "record_digests[1]"
            ]
        );
    }

    #[test]
    fn malformed_references_are_errors() {
        let bad = r#"{"schema":"ptxbench.run/1","ptx_digest":"ABC"}"#;
        assert!(matches!(
            parse_object(bad.as_bytes()),
            Err(ObjectError::BadReference { .. })
        ));
        let bad = r#"{"schema":"ptxbench.run/1","ptx_digests":"x"}"#;
        assert!(parse_object(bad.as_bytes()).is_err());
    }

    #[test]
    fn plain_blobs_are_text_or_binary() {
        assert!(matches!(classify(b"{\"a\":1}"), Ok(Content::Text)));
        assert!(matches!(classify(&[0, 159, 146, 150]), Ok(Content::Binary)));
    }
}
