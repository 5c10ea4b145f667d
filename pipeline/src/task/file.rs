//! A task file as written: raw serde structs that mirror the YAML (`tasks/<family>/<id>.yaml`
//! and `tasks/suite.yaml`). Reading is strict about structure (an unknown field is an error)
//! and lenient about content: names, kinds and numbers stay as written, and `validate.rs`
//! turns them into the domain types, reporting every problem at once.

use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};

use super::model::{Distribution, Op, Task, TensorSpec, Tolerance};

/// The version of the task file format this code reads.
pub const SCHEMA: i64 = 1;

/// `tasks/suite.yaml`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SuiteFile {
    /// Semantic version of the suite (`1.0.0`); bump it when any task changes.
    pub version: String,
    pub description: String,
}

/// One task file.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TaskFile {
    /// Format version; must be [`SCHEMA`].
    pub schema: i64,
    pub id: String,
    pub family: String,
    pub title: String,
    pub description: String,
    #[serde(serialize_with = "flow_values")]
    pub axes: OrderedMap<AxisFile>,
    pub inputs: OrderedMap<TensorFile>,
    pub outputs: OrderedMap<TensorFile>,
    #[serde(serialize_with = "flow_map")]
    pub op: OpFile,
    pub reference: String,
    #[serde(serialize_with = "flow_map")]
    pub distribution: DistributionFile,
    #[serde(serialize_with = "flow_map")]
    pub baseline: BaselineFile,
    pub flops: Text,
    pub bytes: Text,
    #[serde(serialize_with = "flow_items")]
    pub workloads: Vec<WorkloadFile>,
    /// Keyed by arch (`sm_90a`, `sm_100a`).
    pub targets: OrderedMap<TargetFile>,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AxisFile {
    /// `var` or `const`.
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TensorFile {
    pub dtype: String,
    /// Axis names or positive integer literals.
    #[serde(serialize_with = "flow_seq")]
    pub shape: Vec<Text>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "flow_map"
    )]
    pub distribution: Option<DistributionFile>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "flow_map"
    )]
    pub tolerance: Option<ToleranceFile>,
}

/// `kind` selects which of the other fields apply.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct OpFile {
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transpose_b: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_tensor_scales: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub causal: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paged: Option<bool>,
}

/// `kind` (`randn`, `spiky`, `uniform`) selects which of the other fields apply.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DistributionFile {
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub std: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spike_std: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spike_prob: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lo: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hi: Option<f64>,
}

/// `metric` (`allclose`, `relnorm`) selects which of the other fields apply.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ToleranceFile {
    pub metric: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rtol: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub atol: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<f64>,
    /// allclose only: the share of elements that must be within the bound (default: all).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_match: Option<f64>,
    /// allclose only: a bound on the relative L2 error as well (`||got - ref|| / ||ref||`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relnorm_max: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct BaselineFile {
    pub library: String,
    pub operation: String,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct WorkloadFile {
    pub name: String,
    /// `correctness` or `performance`.
    pub kind: String,
    #[serde(deserialize_with = "integer_axes")]
    pub axes: OrderedMap<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uuid: Option<String>,
    /// Paged decode and prefill: the KV length of each sequence.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "flow_opt_seq"
    )]
    pub kv_lens: Option<Vec<i64>>,
    /// Prefill: the query length of each sequence.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "flow_opt_seq"
    )]
    pub qo_lens: Option<Vec<i64>>,
    /// GDN prefill: the token count of each sequence.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "flow_opt_seq"
    )]
    pub seq_lens: Option<Vec<i64>>,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TargetFile {
    #[serde(serialize_with = "flow_items")]
    pub required: Vec<TargetFamilyFile>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notes: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TargetFamilyFile {
    pub family: String,
    pub sass: Vec<String>,
}

// Writing YAML: small maps and lists in flow style (`{dtype: bf16, shape: [M, K]}`), as the
// hand-written task files are; reading accepts either style.

fn flow_opt_seq<S: Serializer>(v: &Option<Vec<i64>>, s: S) -> Result<S::Ok, S::Error> {
    match v {
        Some(v) => flow_seq(v, s),
        None => s.serialize_none(),
    }
}

fn flow_seq<T: Serialize, S: Serializer>(v: &T, s: S) -> Result<S::Ok, S::Error> {
    serde_saphyr::FlowSeq(v).serialize(s)
}

fn flow_map<T: Serialize, S: Serializer>(v: &T, s: S) -> Result<S::Ok, S::Error> {
    serde_saphyr::FlowMap(v).serialize(s)
}

fn flow_items<T: Serialize, S: Serializer>(v: &[T], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(v.iter().map(serde_saphyr::FlowMap))
}

fn flow_values<T: Serialize, S: Serializer>(m: &OrderedMap<T>, s: S) -> Result<S::Ok, S::Error> {
    let mut out = s.serialize_map(Some(m.len()))?;
    for (k, v) in m.iter() {
        out.serialize_entry(k, &serde_saphyr::FlowMap(v))?;
    }
    out.end()
}

/// A scalar written either as a string or as an integer (`shape: [M, 1]`, `flops: 1024`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Text(pub String);

impl fmt::Display for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct TextVisitor;
        impl Visitor<'_> for TextVisitor {
            type Value = Text;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string or an integer")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Text, E> {
                Ok(Text(v.to_string()))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Text, E> {
                Ok(Text(v.to_string()))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Text, E> {
                Ok(Text(v.to_string()))
            }
        }
        d.deserialize_any(TextVisitor)
    }
}

impl Serialize for Text {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        // A literal stays an integer in the YAML (`[M, 1]`), a name stays a string.
        match self.0.parse::<i64>() {
            Ok(v) if v.to_string() == self.0 => s.serialize_i64(v),
            _ => s.serialize_str(&self.0),
        }
    }
}

/// The axis values of a workload (`axes: {M: 77}`), each an integer: one beyond the range of
/// `i64` (which YAML reads as a float) is out of range, said so.
fn integer_axes<'de, D: Deserializer<'de>>(d: D) -> Result<OrderedMap<i64>, D::Error> {
    let axes = OrderedMap::<AxisValue>::deserialize(d)?;
    Ok(axes.0.into_iter().map(|(k, v)| (k, v.0)).collect())
}

/// One integer axis value (see [`integer_axes`]).
struct AxisValue(i64);

impl<'de> Deserialize<'de> for AxisValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct AxisVisitor;
        fn out_of_range<E: de::Error>(v: impl fmt::Display) -> E {
            E::custom(format!(
                "{v} is out of range for an integer axis ({} to {})",
                i64::MIN,
                i64::MAX
            ))
        }
        impl Visitor<'_> for AxisVisitor {
            type Value = AxisValue;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an integer")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<AxisValue, E> {
                Ok(AxisValue(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<AxisValue, E> {
                i64::try_from(v).map(AxisValue).map_err(|_| out_of_range(v))
            }
            fn visit_i128<E: de::Error>(self, v: i128) -> Result<AxisValue, E> {
                i64::try_from(v).map(AxisValue).map_err(|_| out_of_range(v))
            }
            fn visit_u128<E: de::Error>(self, v: u128) -> Result<AxisValue, E> {
                i64::try_from(v).map(AxisValue).map_err(|_| out_of_range(v))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<AxisValue, E> {
                // YAML reads an integer too large for 64 bits as a float; print it whole.
                if v.is_finite() && v.fract() == 0.0 {
                    Err(out_of_range(format!("{v:.0}")))
                } else {
                    Err(E::custom(format!(
                        "{v} is not an integer; an axis is an integer"
                    )))
                }
            }
        }
        d.deserialize_any(AxisVisitor)
    }
}

/// A YAML map read in document order (parameter order in prompts follows it). A repeated key
/// is an error.
#[derive(Debug, Clone, PartialEq)]
pub struct OrderedMap<V>(pub Vec<(String, V)>);

impl<V> OrderedMap<V> {
    pub fn get(&self, key: &str) -> Option<&V> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &V)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v))
    }

    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(|(k, _)| k.as_str())
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl<V> Default for OrderedMap<V> {
    fn default() -> Self {
        OrderedMap(Vec::new())
    }
}

impl<V> FromIterator<(String, V)> for OrderedMap<V> {
    fn from_iter<I: IntoIterator<Item = (String, V)>>(iter: I) -> Self {
        OrderedMap(iter.into_iter().collect())
    }
}

impl<'de, V: Deserialize<'de>> Deserialize<'de> for OrderedMap<V> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct MapVisitor<V>(PhantomData<V>);
        impl<'de, V: Deserialize<'de>> Visitor<'de> for MapVisitor<V> {
            type Value = OrderedMap<V>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a map")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut out: Vec<(String, V)> = Vec::new();
                while let Some(key) = map.next_key::<String>()? {
                    if out.iter().any(|(k, _)| *k == key) {
                        return Err(de::Error::custom(format!("key `{key}` is given twice")));
                    }
                    let value = map.next_value::<V>()?;
                    out.push((key, value));
                }
                Ok(OrderedMap(out))
            }
        }
        d.deserialize_map(MapVisitor(PhantomData))
    }
}

impl<V: Serialize> Serialize for OrderedMap<V> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

// ---- domain back to file: the inverse of validation, for writing YAML ----

impl From<&Distribution> for DistributionFile {
    fn from(d: &Distribution) -> Self {
        let blank = |kind: &str| DistributionFile {
            kind: kind.to_string(),
            std: None,
            spike_std: None,
            spike_prob: None,
            lo: None,
            hi: None,
        };
        match *d {
            Distribution::Randn { std } => DistributionFile {
                std: Some(std),
                ..blank("randn")
            },
            Distribution::Spiky {
                std,
                spike_std,
                spike_prob,
            } => DistributionFile {
                std: Some(std),
                spike_std: Some(spike_std),
                spike_prob: Some(spike_prob),
                ..blank("spiky")
            },
            Distribution::Uniform { lo, hi } => DistributionFile {
                lo: Some(lo),
                hi: Some(hi),
                ..blank("uniform")
            },
        }
    }
}

impl From<&Tolerance> for ToleranceFile {
    fn from(t: &Tolerance) -> Self {
        match *t {
            Tolerance::Allclose { rtol, atol } => ToleranceFile {
                metric: "allclose".into(),
                rtol: Some(rtol),
                atol: Some(atol),
                max: None,
                min_match: None,
                relnorm_max: None,
            },
            Tolerance::AllcloseFraction {
                rtol,
                atol,
                min_match,
            } => ToleranceFile {
                metric: "allclose".into(),
                rtol: Some(rtol),
                atol: Some(atol),
                max: None,
                min_match: Some(min_match),
                relnorm_max: None,
            },
            Tolerance::Relnorm { max } => ToleranceFile {
                metric: "relnorm".into(),
                rtol: None,
                atol: None,
                max: Some(max),
                min_match: None,
                relnorm_max: None,
            },
            Tolerance::AllcloseRelnorm { rtol, atol, max } => ToleranceFile {
                metric: "allclose".into(),
                rtol: Some(rtol),
                atol: Some(atol),
                max: None,
                min_match: None,
                relnorm_max: Some(max),
            },
        }
    }
}

impl From<&Op> for OpFile {
    fn from(op: &Op) -> Self {
        let blank = OpFile {
            kind: op.family().as_str().to_string(),
            transpose_b: None,
            per_tensor_scales: None,
            causal: None,
            paged: None,
        };
        match *op {
            Op::Gemm { transpose_b } => OpFile {
                transpose_b: Some(transpose_b),
                ..blank
            },
            Op::GemmFp8 { per_tensor_scales } => OpFile {
                per_tensor_scales: Some(per_tensor_scales),
                ..blank
            },
            Op::AttentionFwd { causal }
            | Op::AttentionBwd { causal }
            | Op::AttentionFwdFp8 { causal } => OpFile {
                causal: Some(causal),
                ..blank
            },
            Op::AttentionDecode { paged } | Op::AttentionMlaDecode { paged } => OpFile {
                paged: Some(paged),
                ..blank
            },
            Op::AttentionPrefill { paged, causal } => OpFile {
                paged: Some(paged),
                causal: Some(causal),
                ..blank
            },
            Op::GdnPrefill => blank,
        }
    }
}

fn non_empty(s: &str) -> Option<String> {
    (!s.is_empty()).then(|| s.to_string())
}

fn tensor_file(t: &TensorSpec) -> (String, TensorFile) {
    (
        t.name.clone(),
        TensorFile {
            dtype: t.dtype.as_str().to_string(),
            shape: t.shape.iter().map(|s| Text(s.clone())).collect(),
            description: non_empty(&t.description),
            distribution: t.distribution.as_ref().map(DistributionFile::from),
            tolerance: t.tolerance.as_ref().map(ToleranceFile::from),
        },
    )
}

impl From<&Task> for TaskFile {
    fn from(t: &Task) -> Self {
        TaskFile {
            schema: SCHEMA,
            id: t.id.to_string(),
            family: t.family.as_str().to_string(),
            title: t.title.clone(),
            description: t.description.clone(),
            axes: t
                .axes
                .iter()
                .map(|a| {
                    let file = AxisFile {
                        kind: if a.is_var() { "var" } else { "const" }.to_string(),
                        value: a.value,
                        description: non_empty(&a.description),
                    };
                    (a.name.clone(), file)
                })
                .collect(),
            inputs: t.inputs.iter().map(tensor_file).collect(),
            outputs: t.outputs.iter().map(tensor_file).collect(),
            op: OpFile::from(&t.op),
            reference: t.reference.clone(),
            distribution: DistributionFile::from(&t.distribution),
            baseline: BaselineFile {
                library: t.baseline.library.clone(),
                operation: t.baseline.operation.clone(),
            },
            flops: Text(t.flops.source().to_string()),
            bytes: Text(t.bytes.source().to_string()),
            workloads: t
                .workloads
                .iter()
                .map(|w| WorkloadFile {
                    name: w.name.clone(),
                    kind: w.kind.as_str().to_string(),
                    axes: w.axes.iter().map(|(k, v)| (k.clone(), *v)).collect(),
                    uuid: w.uuid.clone(),
                    kv_lens: w
                        .kv_lens
                        .as_ref()
                        .map(|l| l.iter().map(|&v| v as i64).collect()),
                    qo_lens: w
                        .qo_lens
                        .as_ref()
                        .map(|l| l.iter().map(|&v| v as i64).collect()),
                    seq_lens: w
                        .seq_lens
                        .as_ref()
                        .map(|l| l.iter().map(|&v| v as i64).collect()),
                })
                .collect(),
            targets: t
                .targets
                .iter()
                .map(|target| {
                    let file = TargetFile {
                        required: target
                            .required
                            .iter()
                            .map(|f| TargetFamilyFile {
                                family: f.family.clone(),
                                sass: f.sass.clone(),
                            })
                            .collect(),
                        notes: non_empty(&target.notes),
                    };
                    (target.arch.as_str().to_string(), file)
                })
                .collect(),
        }
    }
}
