//! A YAML document read into an order-preserving tree with source lines, and a serde
//! `Deserializer` over that tree which names the dotted path (`outputs.O.tolerance.rtol`,
//! `workloads[3].axes.M`) and line of whatever it rejects.
//!
//! Reading happens in two steps so that every error can name its field: serde-saphyr turns the
//! text into a [`Located`] tree (a syntax error carries line and column), [`duplicate_keys`]
//! walks the tree, and the raw `*File` structs are then deserialized from the tree by
//! [`from_tree`], which tags each error with the path of the node it came from.

use std::collections::BTreeSet;
use std::fmt;

use serde::de::{self, DeserializeOwned, DeserializeSeed, IntoDeserializer, Visitor};
use serde_saphyr::Spanned;

/// A YAML value. Maps keep their entries in document order, duplicates included (they are
/// reported by [`duplicate_keys`], never silently merged).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Node {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Seq(Vec<Located>),
    Map(Vec<Entry>),
}

/// A node and the (1-based) line it starts on.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Located {
    pub node: Node,
    pub line: u64,
}

/// One `key: value` pair of a map.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Entry {
    pub key: String,
    pub key_line: u64,
    pub value: Located,
}

/// Text that is not a YAML document (bad indentation, an unclosed quote, a tab...).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SyntaxError {
    pub line: u64,
    pub column: u64,
    pub message: String,
}

impl fmt::Display for SyntaxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "YAML syntax error at line {}, column {}: {}",
            self.line, self.column, self.message
        )
    }
}

/// How deep collections may nest in a task file. The deepest field of the format
/// (`targets[i].required[j].sass[k]`) is 6 levels down. Reading a [`Located`] tree takes some
/// 17 stack frames per level, so serde-saphyr's default of 64 levels overflowed a thread's
/// 2 MiB stack in a debug build; 16 levels take a quarter of that.
pub(crate) const MAX_DEPTH: usize = 16;

/// Parses `text` as one YAML document. Duplicate keys are kept (see [`duplicate_keys`]);
/// booleans are YAML 1.2 only (`no` is a string, not `false`); collections nest at most
/// [`MAX_DEPTH`] deep.
pub(crate) fn parse(text: &str) -> Result<Located, SyntaxError> {
    let options = serde_saphyr::options! {
        duplicate_keys: serde_saphyr::DuplicateKeyPolicy::PassThrough,
        strict_booleans: true,
        with_snippet: false,
        budget: serde_saphyr::budget! { max_depth: MAX_DEPTH },
    };
    match serde_saphyr::from_str_with_options::<Spanned<Node>>(text, options) {
        Ok(s) => Ok(Located {
            node: s.value,
            line: s.referenced.line(),
        }),
        Err(e) => {
            let (line, column) = e
                .location()
                .map(|l| (l.line(), l.column()))
                .unwrap_or((1, 1));
            // The rendered message repeats the location; keep only the first line of it.
            let rendered = e.without_snippet().to_string();
            let message = rendered.lines().next().unwrap_or("").trim().to_string();
            Err(SyntaxError {
                line: line.max(1),
                column: column.max(1),
                message,
            })
        }
    }
}

/// Every key that appears twice in the same map: (dotted path of the repeated key, line of the
/// repetition).
pub(crate) fn duplicate_keys(root: &Located) -> Vec<(String, u64)> {
    fn walk(node: &Located, path: &str, out: &mut Vec<(String, u64)>) {
        match &node.node {
            Node::Seq(items) => {
                for (i, item) in items.iter().enumerate() {
                    walk(item, &index_path(path, i), out);
                }
            }
            Node::Map(entries) => {
                // A set, not a scan of the keys before: a map may have 100,000 keys.
                let mut seen = BTreeSet::new();
                for e in entries {
                    if !seen.insert(e.key.as_str()) {
                        out.push((key_path(path, &e.key), e.key_line));
                    }
                    walk(&e.value, &key_path(path, &e.key), out);
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(root, "", &mut out);
    out
}

/// `path.key`, or `key` at the root.
pub(crate) fn key_path(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// `path[i]`.
pub(crate) fn index_path(path: &str, i: usize) -> String {
    format!("{path}[{i}]")
}

/// Deserializes `T` from the tree; the error names the dotted path of the offending field.
pub(crate) fn from_tree<T: DeserializeOwned>(root: &Located) -> Result<T, DeError> {
    T::deserialize(NodeDe {
        node: root,
        path: String::new(),
    })
}

/// A deserialization error with the place it happened.
///
/// `path` is the node being read when the error was raised; `pending` is the struct field a
/// serde-generated visitor complained about (unknown, missing or repeated), appended to `path`
/// when the field is named.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DeError {
    path: Option<String>,
    line: Option<u64>,
    pending: Option<String>,
    message: String,
}

impl DeError {
    fn at(mut self, path: &str, line: u64) -> Self {
        if self.path.is_none() {
            self.path = Some(path.to_string());
            self.line = Some(line);
        }
        self
    }

    /// The dotted path of the offending field (empty for the document itself).
    pub fn field(&self) -> String {
        let path = self.path.as_deref().unwrap_or("");
        match &self.pending {
            Some(f) => key_path(path, f),
            None => path.to_string(),
        }
    }

    /// What is wrong, with the line where known.
    pub fn reason(&self) -> String {
        match self.line {
            Some(line) => format!("{} (line {line})", self.message),
            None => self.message.clone(),
        }
    }
}

impl fmt::Display for DeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field(), self.reason())
    }
}

impl std::error::Error for DeError {}

impl de::Error for DeError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        DeError {
            path: None,
            line: None,
            pending: None,
            message: msg.to_string(),
        }
    }

    fn unknown_field(field: &str, expected: &'static [&'static str]) -> Self {
        DeError {
            pending: Some(field.to_string()),
            ..DeError::custom(format!(
                "unknown field (expected one of: {})",
                expected.join(", ")
            ))
        }
    }

    fn missing_field(field: &'static str) -> Self {
        DeError {
            pending: Some(field.to_string()),
            ..DeError::custom("missing required field")
        }
    }

    fn duplicate_field(field: &'static str) -> Self {
        DeError {
            pending: Some(field.to_string()),
            ..DeError::custom("field given twice")
        }
    }
}

// ---- reading the saphyr event stream into the tree ----

impl<'de> de::Deserialize<'de> for Node {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Node, D::Error> {
        d.deserialize_any(NodeVisitor)
    }
}

struct NodeVisitor;

impl<'de> Visitor<'de> for NodeVisitor {
    type Value = Node;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a YAML value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Node, E> {
        Ok(Node::Bool(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Node, E> {
        Ok(Node::Int(v))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Node, E> {
        i64::try_from(v)
            .map(Node::Int)
            .map_err(|_| E::custom(format!("integer {v} is too large")))
    }

    fn visit_i128<E: de::Error>(self, v: i128) -> Result<Node, E> {
        i64::try_from(v)
            .map(Node::Int)
            .map_err(|_| E::custom(format!("integer {v} is too large")))
    }

    fn visit_u128<E: de::Error>(self, v: u128) -> Result<Node, E> {
        i64::try_from(v)
            .map(Node::Int)
            .map_err(|_| E::custom(format!("integer {v} is too large")))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Node, E> {
        Ok(Node::Float(v))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Node, E> {
        Ok(Node::Str(v.to_string()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Node, E> {
        Ok(Node::Str(v))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Node, E> {
        Ok(Node::Null)
    }

    fn visit_none<E: de::Error>(self) -> Result<Node, E> {
        Ok(Node::Null)
    }

    fn visit_some<D: de::Deserializer<'de>>(self, d: D) -> Result<Node, D::Error> {
        d.deserialize_any(NodeVisitor)
    }

    fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Node, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Spanned<Node>>()? {
            items.push(Located {
                node: item.value,
                line: item.referenced.line(),
            });
        }
        Ok(Node::Seq(items))
    }

    fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<Node, A::Error> {
        let mut entries = Vec::new();
        while let Some(key) = map.next_key::<Spanned<String>>()? {
            let value = map.next_value::<Spanned<Node>>()?;
            entries.push(Entry {
                key: key.value,
                key_line: key.referenced.line(),
                value: Located {
                    node: value.value,
                    line: value.referenced.line(),
                },
            });
        }
        Ok(Node::Map(entries))
    }
}

impl Node {
    fn describe(&self) -> de::Unexpected<'_> {
        match self {
            Node::Null => de::Unexpected::Unit,
            Node::Bool(b) => de::Unexpected::Bool(*b),
            Node::Int(i) => de::Unexpected::Signed(*i),
            Node::Float(f) => de::Unexpected::Float(*f),
            Node::Str(s) => de::Unexpected::Str(s),
            Node::Seq(_) => de::Unexpected::Seq,
            Node::Map(_) => de::Unexpected::Map,
        }
    }
}

// ---- deserializing typed structs from the tree ----

struct NodeDe<'a> {
    node: &'a Located,
    path: String,
}

impl<'a> NodeDe<'a> {
    fn visit<'de, V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        let line = self.node.line;
        let path = self.path;
        let result = match &self.node.node {
            Node::Null => visitor.visit_unit(),
            Node::Bool(b) => visitor.visit_bool(*b),
            Node::Int(i) => visitor.visit_i64(*i),
            Node::Float(f) => visitor.visit_f64(*f),
            Node::Str(s) => visitor.visit_str(s),
            Node::Seq(items) => visitor.visit_seq(SeqDe {
                items: items.iter().enumerate(),
                path: &path,
            }),
            Node::Map(entries) => visitor.visit_map(MapDe {
                entries: entries.iter(),
                value: None,
                path: &path,
            }),
        };
        result.map_err(|e| e.at(&path, line))
    }
}

impl<'de, 'a> de::Deserializer<'de> for NodeDe<'a> {
    type Error = DeError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.visit(visitor)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        if self.node.node == Node::Null {
            visitor.visit_none()
        } else {
            let (path, line) = (self.path.clone(), self.node.line);
            visitor.visit_some(self).map_err(|e| e.at(&path, line))
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, DeError> {
        let (path, line) = (self.path.clone(), self.node.line);
        visitor
            .visit_newtype_struct(self)
            .map_err(|e| e.at(&path, line))
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DeError> {
        // Only unit variants written as a plain string; the raw structs use nothing else.
        match &self.node.node {
            Node::Str(s) => visitor
                .visit_enum(s.as_str().into_deserializer())
                .map_err(|e: DeError| e.at(&self.path, self.node.line)),
            other => Err(<DeError as de::Error>::invalid_type(
                other.describe(),
                &"a name (string)",
            )
            .at(&self.path, self.node.line)),
        }
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct seq tuple tuple_struct map struct
        identifier ignored_any
    }
}

struct SeqDe<'a, I> {
    items: I,
    path: &'a str,
}

impl<'de, 'a, I> de::SeqAccess<'de> for SeqDe<'a, I>
where
    I: Iterator<Item = (usize, &'a Located)>,
{
    type Error = DeError;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, DeError> {
        let Some((i, item)) = self.items.next() else {
            return Ok(None);
        };
        let path = index_path(self.path, i);
        seed.deserialize(NodeDe {
            node: item,
            path: path.clone(),
        })
        .map(Some)
        .map_err(|e| e.at(&path, item.line))
    }
}

struct MapDe<'a, I> {
    entries: I,
    value: Option<&'a Entry>,
    path: &'a str,
}

impl<'de, 'a, I> de::MapAccess<'de> for MapDe<'a, I>
where
    I: Iterator<Item = &'a Entry>,
{
    type Error = DeError;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, DeError> {
        let Some(entry) = self.entries.next() else {
            return Ok(None);
        };
        self.value = Some(entry);
        let key: de::value::StrDeserializer<'_, DeError> = entry.key.as_str().into_deserializer();
        seed.deserialize(key)
            .map(Some)
            // An unknown field is named by the error itself; the place is this map.
            .map_err(|e| e.at(self.path, entry.key_line))
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, DeError> {
        let Some(entry) = self.value.take() else {
            return Err(de::Error::custom(
                "a map value was requested before its key",
            ));
        };
        let path = key_path(self.path, &entry.key);
        seed.deserialize(NodeDe {
            node: &entry.value,
            path: path.clone(),
        })
        .map_err(|e| e.at(&path, entry.value.line))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Outer {
        #[allow(dead_code)]
        name: String,
        inner: Vec<Inner>,
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Inner {
        #[allow(dead_code)]
        rtol: f64,
        #[allow(dead_code)]
        #[serde(default)]
        atol: Option<f64>,
    }

    fn read(text: &str) -> Result<Outer, DeError> {
        from_tree(&parse(text).expect("parses"))
    }

    #[test]
    fn keeps_map_order_and_lines() {
        let doc = parse("b: 1\na: [x, 2.5]\nc:\n  d: ~\n").expect("parses");
        let Node::Map(entries) = &doc.node else {
            panic!("a map")
        };
        let keys: Vec<_> = entries.iter().map(|e| e.key.as_str()).collect();
        assert_eq!(keys, ["b", "a", "c"]);
        assert_eq!(entries[2].key_line, 3);
        assert_eq!(
            entries[1].value.node,
            Node::Seq(vec![
                Located {
                    node: Node::Str("x".into()),
                    line: 2
                },
                Located {
                    node: Node::Float(2.5),
                    line: 2
                },
            ])
        );
    }

    #[test]
    fn names_the_path_of_a_bad_value() {
        let e = read("name: x\ninner:\n  - {rtol: 1}\n  - {rtol: abc}\n").expect_err("bad");
        assert_eq!(e.field(), "inner[1].rtol");
        assert!(e.reason().contains("line 4"), "{}", e.reason());
    }

    #[test]
    fn names_unknown_and_missing_fields() {
        let e = read("name: x\ninner:\n  - {rtol: 1, rtoll: 2}\n").expect_err("unknown");
        assert_eq!(e.field(), "inner[0].rtoll");
        assert!(e.reason().contains("unknown field"), "{}", e.reason());
        let e = read("name: x\ninner:\n  - {atol: 1}\n").expect_err("missing");
        assert_eq!(e.field(), "inner[0].rtol");
        assert!(e.reason().contains("missing"), "{}", e.reason());
        let e = read("inner: []\n").expect_err("missing name");
        assert_eq!(e.field(), "name");
    }

    #[test]
    fn finds_duplicate_keys_anywhere() {
        let doc = parse("a: 1\nb:\n  - {x: 1, x: 2}\na: 3\n").expect("parses");
        assert_eq!(
            duplicate_keys(&doc),
            vec![("b[0].x".to_string(), 3), ("a".to_string(), 4)]
        );
    }

    #[test]
    fn syntax_errors_carry_a_line() {
        let e = parse("a: 1\nb: [1, 2\nc: 3\n").expect_err("unclosed");
        assert!(e.line >= 2, "{e}");
        let e = parse("a: 1\n\tb: 2\n").expect_err("tab");
        assert!(e.line >= 1, "{e}");
    }

    #[test]
    fn strict_booleans_keep_no_a_string() {
        let doc = parse("a: no\nb: true\n").expect("parses");
        let Node::Map(entries) = &doc.node else {
            panic!("a map")
        };
        assert_eq!(entries[0].value.node, Node::Str("no".into()));
        assert_eq!(entries[1].value.node, Node::Bool(true));
    }
}
