//! Import of a FlashInfer-Trace definition (JSON) and its workload traces (JSONL) into a task
//! file (YAML).
//!
//! FlashInfer-Trace describes what PTXBench tasks also describe (named const/var axes, typed
//! tensors with shapes over them, a PyTorch reference, workloads binding the var axes) but not
//! how a result is judged or proven. The importer infers the family and op from `op_type`, the
//! name and the tags, fills what FlashInfer lacks (tolerances, distributions, baseline, FLOP and
//! byte formulas, targets, correctness workloads) from the family's defaults, and returns one
//! note per default it chose. The YAML it returns has passed validation.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use super::file::{
    AxisFile, BaselineFile, DistributionFile, OpFile, OrderedMap, SCHEMA, TargetFamilyFile,
    TargetFile, TaskFile, TensorFile, Text, ToleranceFile, WorkloadFile,
};
use super::model::{DType, Op, TaskFamily};
use super::signature;
use super::validate::{Problem, is_identifier, parse_task};

/// Why a FlashInfer definition could not be imported.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ImportError {
    #[error("definition JSON: {0}")]
    Json(String),
    #[error("workloads JSONL line {line}: {reason}")]
    Workload { line: usize, reason: String },
    #[error("{field}: unknown dtype `{dtype}` (importable: {})", DTYPES.iter().map(|(f, _)| *f).collect::<Vec<_>>().join(", "))]
    UnknownDType { field: String, dtype: String },
    #[error(
        "op_type: `{op_type}` is not an op PTXBench has (gemm; dense attention: mha, attention)"
    )]
    UnknownOpType { op_type: String },
    #[error("{field}: {reason}")]
    Unsupported { field: String, reason: String },
    #[error("cannot write the task as YAML: {0}")]
    Yaml(String),
    #[error("the imported task does not validate:\n{}", .0.iter().map(|p| format!("  {p}")).collect::<Vec<_>>().join("\n"))]
    Invalid(Vec<Problem>),
}

/// FlashInfer dtype names and ours.
const DTYPES: &[(&str, DType)] = &[
    ("bfloat16", DType::Bf16),
    ("float16", DType::F16),
    ("float32", DType::F32),
    ("float8_e4m3fn", DType::E4m3),
    ("float8_e4m3", DType::E4m3),
    ("float8_e5m2", DType::E5m2),
    ("int32", DType::I32),
];

#[derive(Debug, Deserialize)]
struct FiDefinition {
    name: String,
    #[serde(alias = "type")]
    op_type: String,
    axes: OrderedMap<FiAxis>,
    inputs: OrderedMap<FiTensor>,
    outputs: OrderedMap<FiTensor>,
    reference: String,
    #[serde(default)]
    tags: Option<Vec<String>>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    constraints: Option<Vec<String>>,
}

#[derive(Debug, Deserialize)]
struct FiAxis {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    value: Option<i64>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    parent: Option<String>,
}

#[derive(Debug, Deserialize)]
struct FiTensor {
    #[serde(default)]
    shape: Option<Vec<String>>,
    dtype: String,
    #[serde(default)]
    description: Option<String>,
}

#[derive(Debug, Deserialize)]
struct FiWorkload {
    #[serde(default)]
    uuid: Option<String>,
    axes: OrderedMap<i64>,
    #[serde(default)]
    inputs: Option<serde_json::Map<String, serde_json::Value>>,
}

/// A tensor after dtype mapping and renaming.
struct Tensor {
    name: String,
    dtype: DType,
    shape: Vec<String>,
    description: Option<String>,
}

/// Imports a FlashInfer-Trace definition and, optionally, its workload traces (one JSON object
/// per line: a trace `{"definition", "workload": {"uuid", "axes", "inputs"}, ...}` or a bare
/// workload). Returns the task file as YAML and a note for every default the importer chose.
pub fn import_flashinfer(
    definition_json: &str,
    workloads_jsonl: Option<&str>,
) -> Result<(String, Vec<String>), ImportError> {
    let def: FiDefinition =
        serde_json::from_str(definition_json).map_err(|e| ImportError::Json(e.to_string()))?;
    let mut notes = Vec::new();

    let id = task_id(&def.name, &mut notes)?;
    let tags = def.tags.clone().unwrap_or_default();
    let family = infer_family(&def, &tags)?;
    let mut inputs = tensors("inputs", &def.inputs, &mut notes)?;
    let mut outputs = tensors("outputs", &def.outputs, &mut notes)?;
    unit_shapes(&def.axes, &mut inputs, &mut notes);
    if family == TaskFamily::AttentionDecode {
        drop_decode_extras(&def.axes, &mut inputs, &mut notes)?;
    }
    let op = infer_op(family, &def, &tags, &inputs, &mut notes)?;
    rename_to_signature(&op, &mut inputs, &mut outputs, &mut notes)?;

    let used: Vec<&str> = inputs
        .iter()
        .chain(&outputs)
        .flat_map(|t| t.shape.iter().map(String::as_str))
        .collect();
    let mut axes = OrderedMap::default();
    for (name, a) in def.axes.iter() {
        let field = format!("axes.{name}");
        if !is_identifier(name) {
            return Err(ImportError::Unsupported {
                field,
                reason: "axis names must be identifiers to appear in formulas".into(),
            });
        }
        if !used.contains(&name) {
            notes.push(format!(
                "axis `{name}` is used by no tensor shape and was dropped"
            ));
            continue;
        }
        if let Some(p) = &a.parent {
            notes.push(format!(
                "axis `{name}`: parent `{p}` is not represented and was dropped"
            ));
        }
        let value = match a.kind.as_str() {
            "const" => match a.value {
                Some(v) if v > 0 => Some(v),
                other => {
                    return Err(ImportError::Unsupported {
                        field: format!("{field}.value"),
                        reason: format!("a const axis needs a positive value, found {other:?}"),
                    });
                }
            },
            "var" => None,
            other => {
                return Err(ImportError::Unsupported {
                    field: format!("{field}.type"),
                    reason: format!("unknown axis type `{other}` (known: const, var)"),
                });
            }
        };
        axes.0.push((
            name.to_string(),
            AxisFile {
                kind: if value.is_some() { "const" } else { "var" }.to_string(),
                value,
                description: a.description.clone(),
            },
        ));
    }
    if let Some(c) = def.constraints.as_ref().filter(|c| !c.is_empty()) {
        notes.push(format!(
            "constraints are not represented and were dropped: {}",
            c.join("; ")
        ));
    }

    let consts: BTreeMap<String, i64> = axes
        .iter()
        .filter_map(|(n, a)| a.value.map(|v| (n.to_string(), v)))
        .collect();
    let vars: Vec<String> = axes
        .iter()
        .filter(|(_, a)| a.value.is_none())
        .map(|(n, _)| n.to_string())
        .collect();
    let roles = roles(&op, &inputs);

    let decode = matches!(op, Op::AttentionDecode { .. });
    let perf = match workloads_jsonl {
        Some(_) if decode => {
            return Err(ImportError::Workload {
                line: 1,
                reason: "decode traces keep kv_indptr in a safetensors blob, and PTXBench needs each sequence's KV length (`kv_lens`): import without the JSONL for default workloads, then write the lengths".into(),
            });
        }
        Some(text) => read_workloads(text, &def.name, &def.axes, &consts, &vars, &mut notes)?,
        None if decode => decode_workloads(&roles, &vars, false)?,
        None => default_perf(&op, &roles, &vars, &mut notes)?,
    };
    let correctness = if decode {
        decode_workloads(&roles, &vars, true)?
    } else {
        default_correctness(&op, &roles, &vars, &perf)
    };
    notes.push(format!(
        "correctness workloads are PTXBench defaults for {}: {}",
        family,
        correctness
            .iter()
            .map(|w| w.name.clone())
            .collect::<Vec<_>>()
            .join(", ")
    ));
    let workloads: Vec<WorkloadFile> = correctness.into_iter().chain(perf).collect();

    let (flops, flop_words) = flops(&op, &roles);
    notes.push(format!("flops: `{flops}` ({flop_words})"));
    let bytes = if decode {
        let r = |s| role(&roles, s);
        let b = format!(
            "4*{t}*{hkv}*{d} + 4*{b}*{h}*{d} + 4*{b}*{h} + 4*{p} + 4*{t}",
            t = r("tokens"),
            hkv = r("kv_heads"),
            d = r("d"),
            b = r("b"),
            h = r("h"),
            p = r("indptr"),
        );
        notes.push(format!(
            "bytes: `{b}` (the K and V rows of the tokens in use, not the whole cache; q, output, lse and the page table)"
        ));
        b
    } else {
        let b = bytes(&inputs, &outputs);
        notes.push(format!(
            "bytes: `{b}` (every input read once, every output written once)"
        ));
        b
    };
    let distribution = default_distribution(&op);
    notes.push(format!(
        "distribution: {} (PTXBench default for {family})",
        describe_distribution(&distribution)
    ));
    let baseline = default_baseline(&op, &inputs);
    notes.push(format!(
        "baseline: {} `{}`",
        baseline.library, baseline.operation
    ));
    let targets = default_targets(&op);
    notes.push(if decode {
        "targets: tma on sm_90a and sm_100a (decode is memory-bound; PTXBench default)".to_string()
    } else {
        "targets: sm_90a wgmma + tma, sm_100a tcgen05 + tma (PTXBench defaults)".to_string()
    });

    let input_files: OrderedMap<TensorFile> = inputs
        .iter()
        .map(|t| {
            let distribution =
                (op == Op::GemmFp8 {
                    per_tensor_scales: true,
                } && t.name.starts_with("scale_"))
                .then(|| {
                    notes.push(format!("inputs.{}: distribution uniform(0.5, 2)", t.name));
                    uniform(0.5, 2.0)
                });
            (t.name.clone(), tensor_file(t, distribution, None))
        })
        .collect();
    let output_files: OrderedMap<TensorFile> = outputs
        .iter()
        .map(|t| {
            let tol = default_tolerance(&op, t);
            notes.push(format!(
                "outputs.{}: tolerance {} (PTXBench default)",
                t.name,
                describe_tolerance(&tol)
            ));
            (t.name.clone(), tensor_file(t, None, Some(tol)))
        })
        .collect();

    let description = {
        let mut d = def
            .description
            .clone()
            .filter(|d| !d.trim().is_empty())
            .unwrap_or_else(|| format!("FlashInfer-Trace definition `{}`.", def.name));
        d.push_str(&format!(
            "\n\nImported from FlashInfer-Trace (op_type `{}`{}). FLOP convention: {flop_words}. \
             Tensors are dense and row-major.",
            def.op_type,
            if tags.is_empty() {
                String::new()
            } else {
                format!(", tags: {}", tags.join(", "))
            }
        ));
        d
    };

    let file = TaskFile {
        schema: SCHEMA,
        id: id.clone(),
        family: family.as_str().to_string(),
        title: title(&op, &inputs, &axes),
        description,
        axes,
        inputs: input_files,
        outputs: output_files,
        op: OpFile::from(&op),
        reference: if decode {
            notes.push("reference: PTXBench's decode semantics (natural-log lse; upstream's reference returns it in base 2)".into());
            "scale = 1/sqrt(head_dim); for sequence b and query head h, over its pages p_j: s_j = scale * q[b,h,:] . k_cache[p_j,0,h/(num_qo_heads/num_kv_heads),:]; lse[b,h] = log(sum_j exp(s_j)); output[b,h,:] = sum_j exp(s_j - lse[b,h]) * v_cache[p_j,0,h/(num_qo_heads/num_kv_heads),:]; all in fp32".to_string()
        } else {
            def.reference.clone()
        },
        distribution,
        baseline,
        flops: Text(flops),
        bytes: Text(bytes),
        workloads,
        targets,
    };
    let yaml = serde_saphyr::to_string(&file).map_err(|e| ImportError::Yaml(e.to_string()))?;
    let source = format!("{id}.yaml");
    parse_task(&yaml, Path::new(&source), Path::new(&source)).map_err(ImportError::Invalid)?;
    Ok((yaml, notes))
}

fn task_id(name: &str, notes: &mut Vec<String>) -> Result<String, ImportError> {
    let id: String = name
        .chars()
        .map(|c| {
            let c = c.to_ascii_lowercase();
            if c.is_ascii_lowercase() || c.is_ascii_digit() {
                c
            } else {
                '_'
            }
        })
        .collect();
    if id.is_empty() || id.len() > super::model::MAX_ID_LEN {
        return Err(ImportError::Unsupported {
            field: "name".into(),
            reason: format!("`{name}` cannot become a task id (1-64 of a-z 0-9 _)"),
        });
    }
    if id != name {
        notes.push(format!("id: `{name}` became `{id}`"));
    }
    Ok(id)
}

fn dtype(field: &str, name: &str) -> Result<DType, ImportError> {
    DTYPES
        .iter()
        .find(|(f, _)| *f == name)
        .map(|(_, d)| *d)
        .ok_or_else(|| ImportError::UnknownDType {
            field: field.to_string(),
            dtype: name.to_string(),
        })
}

fn tensors(
    section: &str,
    raw: &OrderedMap<FiTensor>,
    notes: &mut Vec<String>,
) -> Result<Vec<Tensor>, ImportError> {
    raw.iter()
        .map(|(name, t)| {
            let field = format!("{section}.{name}");
            let shape = match &t.shape {
                Some(s) if !s.is_empty() => s.clone(),
                _ => {
                    notes.push(format!("{field}: a scalar, given shape [1]"));
                    vec!["1".to_string()]
                }
            };
            Ok(Tensor {
                name: name.to_string(),
                dtype: dtype(&format!("{field}.dtype"), &t.dtype)?,
                shape,
                description: t.description.clone(),
            })
        })
        .collect()
}

/// A shape made only of const axes of value 1 (upstream's per-tensor scales are
/// `(one, one, one, one)`) becomes `[1]`.
fn unit_shapes(axes: &OrderedMap<FiAxis>, inputs: &mut [Tensor], notes: &mut Vec<String>) {
    for t in inputs {
        let unit = t.shape.len() > 1
            && t.shape.iter().all(|a| {
                a == "1"
                    || axes
                        .get(a)
                        .is_some_and(|x| x.kind == "const" && x.value == Some(1))
            });
        if unit {
            notes.push(format!(
                "inputs.{}: shape [{}] (all of size 1) became [1]",
                t.name,
                t.shape.join(", ")
            ));
            t.shape = vec!["1".to_string()];
        }
    }
}

/// Decode inputs the op does not take: `sm_scale` (a constant 1/sqrt(head_dim) here) and
/// `last_page_len` (every page holds one token at page size 1).
fn drop_decode_extras(
    axes: &OrderedMap<FiAxis>,
    inputs: &mut Vec<Tensor>,
    notes: &mut Vec<String>,
) -> Result<(), ImportError> {
    let page_size = axes.get("page_size").and_then(|a| a.value);
    let mut kept = Vec::new();
    for t in inputs.drain(..) {
        match t.name.as_str() {
            "sm_scale" => notes.push(
                "inputs.sm_scale: dropped; the scale is the constant 1/sqrt(head_dim)".into(),
            ),
            "last_page_len" if page_size == Some(1) => notes.push(
                "inputs.last_page_len: dropped; at page size 1 every last page holds one token"
                    .into(),
            ),
            "last_page_len" => {
                return Err(ImportError::Unsupported {
                    field: "inputs.last_page_len".into(),
                    reason: "partly filled pages need page size 1 here".into(),
                });
            }
            _ => kept.push(t),
        }
    }
    *inputs = kept;
    Ok(())
}

/// Paged decode workloads with ragged KV lengths (page size 1, twice the pages in use):
/// correctness ones small and odd, performance ones at batch 1, 16 and 64.
fn decode_workloads(
    roles: &BTreeMap<&'static str, String>,
    vars: &[String],
    correctness: bool,
) -> Result<Vec<WorkloadFile>, ImportError> {
    let lens: Vec<Vec<i64>> = if correctness {
        vec![vec![1], vec![5, 130, 77], vec![1, 33, 97, 2, 64, 29, 11]]
    } else {
        let spread = |b: i64| (0..b).map(|i| 64 + (i * 977) % 1901).collect::<Vec<_>>();
        vec![vec![4096], spread(16), spread(64)]
    };
    let role_of = |axis: &str| {
        roles
            .iter()
            .find(|(_, a)| a.as_str() == axis)
            .map(|(r, _)| *r)
    };
    let mut out = Vec::new();
    for l in lens {
        let tokens: i64 = l.iter().sum();
        let b = l.len() as i64;
        let mut axes = OrderedMap::default();
        for v in vars {
            let value = match role_of(v) {
                Some("b") => b,
                Some("pages") => 2 * tokens + 3,
                Some("indptr") => b + 1,
                Some("tokens") => tokens,
                _ => {
                    return Err(ImportError::Unsupported {
                        field: format!("axes.{v}"),
                        reason:
                            "a var axis a paged decode does not size (batch, pages, indptr, tokens)"
                                .into(),
                    });
                }
            };
            axes.0.push((v.clone(), value));
        }
        let name = format!("B{b}_T{tokens}");
        out.push(WorkloadFile {
            name,
            kind: if correctness {
                "correctness"
            } else {
                "performance"
            }
            .into(),
            axes,
            uuid: None,
            kv_lens: Some(l),
            qo_lens: None,
            seq_lens: None,
        });
    }
    Ok(out)
}

fn has_tag(tags: &[String], tag: &str) -> bool {
    tags.iter().any(|t| t.eq_ignore_ascii_case(tag))
}

fn infer_family(def: &FiDefinition, tags: &[String]) -> Result<TaskFamily, ImportError> {
    let op_type = def.op_type.to_ascii_lowercase();
    let name = def.name.to_ascii_lowercase();
    let first_input_fp8 = def
        .inputs
        .iter()
        .next()
        .is_some_and(|(_, t)| t.dtype.starts_with("float8"));
    match op_type.as_str() {
        "gemm" | "matmul" | "mm" if first_input_fp8 => Ok(TaskFamily::GemmFp8),
        "gemm" | "matmul" | "mm" => Ok(TaskFamily::Gemm),
        "attention" | "mha" | "sdpa" | "flash_attention" | "mha_with_lse" | "mha_bwd" => {
            let backward = has_tag(tags, "direction:backward")
                || name.contains("bwd")
                || name.contains("backward")
                || op_type == "mha_bwd";
            Ok(if backward {
                TaskFamily::AttentionBwd
            } else if first_input_fp8 {
                TaskFamily::AttentionFwdFp8
            } else {
                TaskFamily::AttentionFwd
            })
        }
        "gqa" | "gqa_paged" | "attention_decode"
            if name.contains("decode") || has_tag(tags, "stage:decode") =>
        {
            Ok(TaskFamily::AttentionDecode)
        }
        "mla" | "mla_paged" => Err(ImportError::Unsupported {
            field: "op_type".into(),
            reason: format!(
                "`{}` is {} multi-head latent attention; the suite's MLA decode tasks are written by tasks/generate.py, since their workloads need each sequence's KV length (`kv_lens`), which traces keep in safetensors blobs",
                def.name, def.op_type
            ),
        }),
        "gdn" => Err(ImportError::Unsupported {
            field: "op_type".into(),
            reason: format!(
                "`{}` is a gated delta net; the suite's GDN prefill tasks are written by tasks/generate.py, since their workloads need each sequence's length (`seq_lens`), which traces keep in safetensors blobs",
                def.name
            ),
        }),
        "gqa" | "gqa_paged" => Err(ImportError::Unsupported {
            field: "op_type".into(),
            reason: format!(
                "`{}` is {} grouped-query attention; the import maps paged decode (a `decode` name or a `stage:decode` tag) only: the suite's paged and ragged prefill tasks are written by tasks/generate.py, since their workloads need each sequence's query and KV lengths (`qo_lens`, `kv_lens`), which traces keep in safetensors blobs",
                def.name, def.op_type
            ),
        }),
        _ => Err(ImportError::UnknownOpType {
            op_type: def.op_type.clone(),
        }),
    }
}

fn infer_op(
    family: TaskFamily,
    def: &FiDefinition,
    tags: &[String],
    inputs: &[Tensor],
    notes: &mut Vec<String>,
) -> Result<Op, ImportError> {
    let causal = || {
        if has_tag(tags, "causal:true") {
            true
        } else if has_tag(tags, "causal:false") {
            false
        } else {
            def.name.to_ascii_lowercase().contains("causal")
        }
    };
    Ok(match family {
        TaskFamily::Gemm => {
            let (a, b) = match inputs {
                [a, b] => (a, b),
                _ => {
                    return Err(ImportError::Unsupported {
                        field: "inputs".into(),
                        reason: format!("a gemm takes two inputs (A, B), found {}", inputs.len()),
                    });
                }
            };
            let (ak, bk) = (a.shape.get(1), &b.shape);
            let transpose_b = if a.shape.len() == 2 && b.shape.len() == 2 && ak == bk.get(1) {
                true
            } else if a.shape.len() == 2 && b.shape.len() == 2 && ak == bk.first() {
                false
            } else {
                return Err(ImportError::Unsupported {
                    field: "inputs".into(),
                    reason: format!(
                        "cannot tell the reduction axis: A is {:?}, B is {:?}",
                        a.shape, b.shape
                    ),
                });
            };
            notes.push(format!(
                "op: gemm with transpose_b = {transpose_b} (from the shapes of A and B)"
            ));
            Op::Gemm { transpose_b }
        }
        TaskFamily::GemmFp8 => {
            let per_tensor_scales = match inputs.len() {
                2 => false,
                4 if inputs[2..].iter().all(|t| t.shape == ["1"]) => true,
                _ => {
                    return Err(ImportError::Unsupported {
                        field: "inputs".into(),
                        reason: "an fp8 gemm takes A, B and optionally two per-tensor scales of shape [1]; block or group scales are not supported".into(),
                    });
                }
            };
            Op::GemmFp8 { per_tensor_scales }
        }
        TaskFamily::AttentionFwd => {
            let causal = causal();
            notes.push(format!(
                "op: attention forward, causal = {causal} (from tags and name)"
            ));
            Op::AttentionFwd { causal }
        }
        TaskFamily::AttentionBwd => {
            let causal = causal();
            notes.push(format!(
                "op: attention backward, causal = {causal} (from tags and name)"
            ));
            Op::AttentionBwd { causal }
        }
        TaskFamily::AttentionFwdFp8 => {
            let causal = causal();
            notes.push(format!(
                "op: fp8 attention forward, causal = {causal} (from tags and name); the harness quantizes Q, K, V per tensor (scale 448/amax) and computes the descales"
            ));
            Op::AttentionFwdFp8 { causal }
        }
        TaskFamily::AttentionDecode => {
            let page_size = inputs
                .iter()
                .find(|t| t.name == "k_cache")
                .and_then(|t| t.shape.get(1))
                .and_then(|a| def.axes.get(a))
                .and_then(|a| a.value);
            if page_size != Some(1) {
                return Err(ImportError::Unsupported {
                    field: "axes.page_size".into(),
                    reason: format!(
                        "the harness draws page tables of page size 1; this definition's k_cache page size is {}",
                        page_size.map_or("not a const".to_string(), |p| p.to_string())
                    ),
                });
            }
            notes.push("op: paged grouped-query decode, page size 1".into());
            Op::AttentionDecode { paged: true }
        }
        TaskFamily::AttentionPrefill => {
            return Err(ImportError::Unsupported {
                field: "op_type".into(),
                reason: "prefill definitions are written by tasks/generate.py, not imported".into(),
            });
        }
        TaskFamily::AttentionMlaDecode => {
            return Err(ImportError::Unsupported {
                field: "op_type".into(),
                reason: "MLA decode definitions are written by tasks/generate.py, not imported"
                    .into(),
            });
        }
        TaskFamily::GdnPrefill => {
            return Err(ImportError::Unsupported {
                field: "op_type".into(),
                reason: "GDN prefill definitions are written by tasks/generate.py, not imported"
                    .into(),
            });
        }
    })
}

/// Gives the tensors the names the op binds, by position where FlashInfer names differ.
fn rename_to_signature(
    op: &Op,
    inputs: &mut [Tensor],
    outputs: &mut [Tensor],
    notes: &mut Vec<String>,
) -> Result<(), ImportError> {
    let slots = signature::slots(op);
    for (output, list) in [(false, inputs), (true, outputs)] {
        let section = if output { "outputs" } else { "inputs" };
        let expected: Vec<&str> = slots
            .iter()
            .filter(|s| s.output == output)
            .map(|s| s.name)
            .collect();
        if expected.len() != list.len() {
            return Err(ImportError::Unsupported {
                field: section.into(),
                reason: format!(
                    "op `{}` has {section} {}; the definition has {}",
                    op.family(),
                    expected.join(", "),
                    list.iter()
                        .map(|t| t.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            });
        }
        for (t, want) in list.iter_mut().zip(expected) {
            if t.name != want {
                notes.push(format!("{section}.{}: renamed to `{want}`", t.name));
                t.name = want.to_string();
            }
        }
    }
    Ok(())
}

/// Role letter (`m`, `n`, `k`, `b`, `h`, `s`, `d`) to axis entry, from the op's signature.
fn roles(op: &Op, inputs: &[Tensor]) -> BTreeMap<&'static str, String> {
    let mut out = BTreeMap::new();
    for s in signature::slots(op).iter().filter(|s| !s.output) {
        if let Some(t) = inputs.iter().find(|t| t.name == s.name) {
            for (sym, entry) in s.dims.iter().zip(&t.shape) {
                if *sym != "1" {
                    out.entry(*sym).or_insert_with(|| entry.clone());
                }
            }
        }
    }
    out
}

fn role<'a>(roles: &'a BTreeMap<&'static str, String>, sym: &str) -> &'a str {
    roles.get(sym).map(String::as_str).unwrap_or("1")
}

fn flops(op: &Op, roles: &BTreeMap<&'static str, String>) -> (String, String) {
    let r = |s| role(roles, s);
    match op {
        Op::Gemm { .. } | Op::GemmFp8 { .. } => (
            format!("2*{}*{}*{}", r("m"), r("n"), r("k")),
            "one multiply and one add per term".into(),
        ),
        Op::AttentionFwd { causal } | Op::AttentionFwdFp8 { causal } => {
            let (c, words) = if *causal {
                (2, "4*B*H*S*S*D halved for the causal mask")
            } else {
                (4, "4*B*H*S*S*D (two S x S x D matmuls, 2 FLOPs per term)")
            };
            (
                format!("{c}*{}*{}*{}*{}*{}", r("b"), r("h"), r("s"), r("s"), r("d")),
                words.into(),
            )
        }
        Op::AttentionBwd { causal } => {
            let (c, words) = if *causal {
                (
                    5,
                    "2.5 x the forward's 4*B*H*S*S*D, halved for the causal mask",
                )
            } else {
                (
                    10,
                    "2.5 x the forward's 4*B*H*S*S*D (five S x S x D matmuls)",
                )
            };
            (
                format!("{c}*{}*{}*{}*{}*{}", r("b"), r("h"), r("s"), r("s"), r("d")),
                words.into(),
            )
        }
        Op::AttentionDecode { .. } => (
            format!("4*{}*{}*{}", r("tokens"), r("h"), r("d")),
            "two dot products of head_dim per KV token and query head, 2 FLOPs per term".into(),
        ),
        Op::AttentionPrefill { .. } => (
            format!("4*{}*{}*{}", crate::task::ATTENDED_PAIRS, r("h"), r("d")),
            "two dot products of head_dim per attended (query, key) pair and query head".into(),
        ),
        Op::AttentionMlaDecode { .. } => (
            format!(
                "2*{t}*{h}*(2*{d}+{p})",
                t = r("tokens"),
                h = r("h"),
                d = r("d"),
                p = r("d_pe")
            ),
            "a logit of ckv_dim + kpe_dim and an output row of ckv_dim per KV token and query head, 2 FLOPs per term".into(),
        ),
        Op::GdnPrefill => (
            format!("6*{}*{}*{d}*{d}", r("q_tokens"), r("v_heads"), d = r("d")),
            "three products of the state with a vector (S^T k, the rank-1 update, S^T q) per token and value head, 2 FLOPs per term".into(),
        ),
    }
}

/// Bytes of every tensor, like terms added up: `16*B*H*S*D + 4*B*H*S`.
fn bytes(inputs: &[Tensor], outputs: &[Tensor]) -> String {
    // (product of the dims, total bytes per element of that product), in first-seen order.
    let mut terms: Vec<(String, u64)> = Vec::new();
    for t in inputs.iter().chain(outputs) {
        let dims: Vec<&str> = t
            .shape
            .iter()
            .map(String::as_str)
            .filter(|d| *d != "1")
            .collect();
        let product = dims.join("*");
        match terms.iter_mut().find(|(p, _)| *p == product) {
            Some((_, size)) => *size += t.dtype.size_bytes(),
            None => terms.push((product, t.dtype.size_bytes())),
        }
    }
    terms
        .into_iter()
        .map(|(product, size)| match product.is_empty() {
            true => size.to_string(),
            false => format!("{size}*{product}"),
        })
        .collect::<Vec<_>>()
        .join(" + ")
}

fn uniform(lo: f64, hi: f64) -> DistributionFile {
    DistributionFile {
        kind: "uniform".into(),
        std: None,
        spike_std: None,
        spike_prob: None,
        lo: Some(lo),
        hi: Some(hi),
    }
}

fn default_distribution(op: &Op) -> DistributionFile {
    match op {
        // FA3's fp8 benchmark inputs, as the paper's code release draws them.
        Op::AttentionFwdFp8 { .. } => DistributionFile {
            kind: "spiky".into(),
            std: Some(1.0),
            spike_std: Some(100.0),
            spike_prob: Some(0.001),
            lo: None,
            hi: None,
        },
        Op::AttentionBwd { .. } => DistributionFile {
            kind: "spiky".into(),
            std: Some(1.0),
            spike_std: Some(10.0),
            spike_prob: Some(0.001),
            lo: None,
            hi: None,
        },
        _ => DistributionFile {
            kind: "randn".into(),
            std: Some(1.0),
            spike_std: None,
            spike_prob: None,
            lo: None,
            hi: None,
        },
    }
}

fn describe_distribution(d: &DistributionFile) -> String {
    match d.kind.as_str() {
        "spiky" => "spiky N(0,1) + N(0,100) * Bernoulli(0.001)".into(),
        _ => "randn N(0,1)".into(),
    }
}

fn default_tolerance(op: &Op, t: &Tensor) -> ToleranceFile {
    let allclose = |v: f64| ToleranceFile {
        metric: "allclose".into(),
        rtol: Some(v),
        atol: Some(v),
        max: None,
        min_match: None,
        relnorm_max: None,
    };
    // The suite's bound on the norm where the elementwise one is as large as the values
    // (tasks/generate.py says how it was sized).
    let o_rule = || ToleranceFile {
        relnorm_max: Some(crate::task::ATTENTION_O_RELNORM_MAX),
        ..allclose(2e-2)
    };
    match op {
        Op::Gemm { .. } => allclose(1e-2),
        Op::GemmFp8 { .. } => allclose(2e-2),
        Op::AttentionFwd { .. } if t.dtype == DType::F32 => allclose(1e-3),
        Op::AttentionFwd { .. } => o_rule(),
        Op::AttentionBwd { .. } => ToleranceFile {
            metric: "relnorm".into(),
            rtol: None,
            atol: None,
            max: Some(0.02),
            min_match: None,
            relnorm_max: None,
        },
        Op::AttentionDecode { .. }
        | Op::AttentionPrefill { .. }
        | Op::AttentionMlaDecode { .. }
            if t.dtype == DType::F32 =>
        {
            allclose(1e-3)
        }
        Op::AttentionDecode { .. }
        | Op::AttentionPrefill { .. }
        | Op::AttentionMlaDecode { .. } => o_rule(),
        // The recurrence's state grows with the sequence: bounded by the norm (the output
        // also elementwise, as attention's O).
        Op::GdnPrefill if t.dtype == DType::F32 => ToleranceFile {
            metric: "relnorm".into(),
            rtol: None,
            atol: None,
            max: Some(crate::task::GDN_RELNORM_MAX),
            min_match: None,
            relnorm_max: None,
        },
        Op::GdnPrefill => ToleranceFile {
            relnorm_max: Some(crate::task::GDN_RELNORM_MAX),
            ..allclose(2e-2)
        },
        // Upstream's rule: Hopper's fp8 MMA accumulation misses 1e-3 on spiky inputs.
        Op::AttentionFwdFp8 { .. } if t.dtype == DType::F32 => allclose(1e-2),
        // One e4m3 ulp (2^-3 relative) on 99.5% of the elements (upstream's matched ratio).
        Op::AttentionFwdFp8 { .. } => ToleranceFile {
            min_match: Some(0.995),
            atol: Some(0.01),
            ..allclose(0.125)
        },
    }
}

fn describe_tolerance(t: &ToleranceFile) -> String {
    match t.max {
        Some(max) => format!("relnorm max {max}"),
        None if t.relnorm_max.is_some() => format!(
            "allclose rtol {} atol {} and relnorm max {}",
            t.rtol.unwrap_or_default(),
            t.atol.unwrap_or_default(),
            t.relnorm_max.unwrap_or_default()
        ),
        None => format!(
            "allclose rtol {} atol {}",
            t.rtol.unwrap_or_default(),
            t.atol.unwrap_or_default()
        ),
    }
}

fn default_baseline(op: &Op, inputs: &[Tensor]) -> BaselineFile {
    let dt = inputs.first().map(|t| t.dtype.as_str()).unwrap_or("bf16");
    let (library, operation) = match op {
        Op::Gemm { transpose_b } => (
            "cublaslt",
            format!(
                "{dt} {} matmul, fp32 accumulate",
                if *transpose_b { "TN" } else { "NN" }
            ),
        ),
        Op::GemmFp8 { .. } => (
            "cublaslt",
            format!("{dt} TN matmul with per-tensor scales, fp32 accumulate"),
        ),
        Op::AttentionFwd { .. } => ("cudnn", "SDPA forward with softmax stats (LSE)".into()),
        Op::AttentionBwd { .. } => ("cudnn", "SDPA backward".into()),
        Op::AttentionFwdFp8 { .. } => ("cudnn", "fp8 SDPA forward with softmax stats (LSE)".into()),
        Op::AttentionDecode { .. } => ("cudnn", "SDPA forward with paged K/V, one query".into()),
        Op::AttentionPrefill { .. } => (
            "cudnn",
            "SDPA forward with ragged offsets or paged K/V, causal".into(),
        ),
        Op::AttentionMlaDecode { .. } => (
            "composed",
            "cuBLASLt for the two products with harness kernels for the softmax".into(),
        ),
        Op::GdnPrefill => (
            "composed",
            "chunked gated delta rule from cuBLASLt products and harness kernels".into(),
        ),
    };
    BaselineFile {
        library: library.into(),
        operation,
    }
}

fn target(families: &[(&str, &[&str])], notes: &str) -> TargetFile {
    TargetFile {
        required: families
            .iter()
            .map(|(f, sass)| TargetFamilyFile {
                family: f.to_string(),
                sass: sass.iter().map(|s| s.to_string()).collect(),
            })
            .collect(),
        notes: Some(notes.to_string()),
    }
}

const TMA_SASS: &[&str] = &["UTMALDG", "UTMASTG", "UTMAREDG"];

fn default_targets(op: &Op) -> OrderedMap<TargetFile> {
    if let Op::AttentionDecode { .. } = op {
        return OrderedMap(vec![
            (
                "sm_90a".into(),
                target(
                    &[("tma", TMA_SASS)],
                    "Hopper: the K and V rows arrive by TMA (cp.async.bulk.tensor); decode is memory-bound, no MMA is required.",
                ),
            ),
            (
                "sm_100a".into(),
                target(
                    &[("tma", TMA_SASS)],
                    "Blackwell: the K and V rows arrive by TMA (cp.async.bulk.tensor).",
                ),
            ),
        ]);
    }
    OrderedMap(vec![
        (
            "sm_90a".into(),
            target(
                &[("wgmma", &["*GMMA*"]), ("tma", TMA_SASS)],
                "Hopper: matrix products on the warpgroup MMA unit (wgmma.mma_async), operands moved by TMA (cp.async.bulk.tensor).",
            ),
        ),
        (
            "sm_100a".into(),
            target(
                &[("tcgen05", &["UTC*", "LDTM", "STTM"]), ("tma", TMA_SASS)],
                "Blackwell: matrix products on the fifth-generation tensor core (tcgen05.mma, accumulators in tensor memory), operands moved by TMA.",
            ),
        ),
    ])
}

fn title(op: &Op, inputs: &[Tensor], axes: &OrderedMap<AxisFile>) -> String {
    let dt = inputs.first().map(|t| t.dtype.as_str()).unwrap_or("bf16");
    let consts: String = axes
        .iter()
        .filter_map(|(k, a)| a.value.map(|v| format!(", {k}={v}")))
        .collect();
    match op {
        Op::Gemm { transpose_b } => format!(
            "{dt} GEMM C = A @ B{}{consts}",
            if *transpose_b { "^T" } else { "" }
        ),
        Op::GemmFp8 { .. } => format!("fp8 GEMM C = A @ B^T{consts}"),
        Op::AttentionFwd { causal } => format!(
            "Attention forward with LSE, {dt}{consts}{}",
            if *causal { ", causal" } else { "" }
        ),
        Op::AttentionBwd { causal } => format!(
            "Attention backward, {dt}{consts}{}",
            if *causal { ", causal" } else { "" }
        ),
        Op::AttentionFwdFp8 { causal } => format!(
            "fp8 attention forward with LSE{consts}{}",
            if *causal { ", causal" } else { "" }
        ),
        Op::AttentionDecode { .. } => format!("Paged GQA decode, {dt}{consts}"),
        Op::AttentionPrefill { paged, .. } => format!(
            "{} GQA prefill, causal, {dt}{consts}",
            if *paged { "Paged" } else { "Ragged" }
        ),
        Op::AttentionMlaDecode { .. } => format!("Paged MLA decode, {dt}{consts}"),
        Op::GdnPrefill => format!("GDN prefill (gated delta rule), {dt}{consts}"),
    }
}

fn tensor_file(
    t: &Tensor,
    distribution: Option<DistributionFile>,
    tolerance: Option<ToleranceFile>,
) -> TensorFile {
    TensorFile {
        dtype: t.dtype.as_str().to_string(),
        shape: t.shape.iter().map(|s| Text(s.clone())).collect(),
        description: t.description.clone(),
        distribution,
        tolerance,
    }
}

fn workload_name(axes: &OrderedMap<i64>) -> String {
    axes.iter()
        .map(|(k, v)| format!("{k}{v}"))
        .collect::<Vec<_>>()
        .join("_")
}

fn workload(kind: &str, axes: OrderedMap<i64>, uuid: Option<String>) -> WorkloadFile {
    WorkloadFile {
        name: workload_name(&axes),
        kind: kind.into(),
        axes,
        uuid,
        kv_lens: None,
        qo_lens: None,
        seq_lens: None,
    }
}

fn read_workloads(
    text: &str,
    definition: &str,
    def_axes: &OrderedMap<FiAxis>,
    consts: &BTreeMap<String, i64>,
    vars: &[String],
    notes: &mut Vec<String>,
) -> Result<Vec<WorkloadFile>, ImportError> {
    let mut out: Vec<WorkloadFile> = Vec::new();
    let mut from_files = 0usize;
    for (i, line) in text.lines().enumerate() {
        let line_no = i + 1;
        let err = |reason: String| ImportError::Workload {
            line: line_no,
            reason,
        };
        if line.trim().is_empty() {
            continue;
        }
        let value: serde_json::Value =
            serde_json::from_str(line).map_err(|e| err(e.to_string()))?;
        let body = match value.get("workload") {
            Some(w) => {
                if let Some(d) = value.get("definition").and_then(|d| d.as_str())
                    && d != definition
                {
                    return Err(err(format!(
                        "is a workload of `{d}`, not of `{definition}`"
                    )));
                }
                w.clone()
            }
            None => value,
        };
        let w: FiWorkload = serde_json::from_value(body).map_err(|e| err(e.to_string()))?;
        let mut axes = OrderedMap::default();
        for (name, v) in w.axes.iter() {
            if let Some(c) = consts.get(name) {
                if c != v {
                    return Err(err(format!(
                        "axis `{name}` = {v}, but the definition fixes it to {c}"
                    )));
                }
            } else if vars.iter().any(|n| n == name) {
                axes.0.push((name.to_string(), *v));
            } else if def_axes.get(name).is_none() {
                return Err(err(format!("`{name}` is not an axis of `{definition}`")));
            }
        }
        for v in vars {
            if axes.get(v).is_none() {
                return Err(err(format!("no value for var axis `{v}`")));
            }
        }
        if w.inputs.as_ref().is_some_and(|inputs| {
            inputs
                .values()
                .any(|i| i.get("type").and_then(|t| t.as_str()) != Some("random"))
        }) {
            from_files += 1;
        }
        if let Some(dup) = out.iter().find(|o| o.axes == axes) {
            notes.push(format!(
                "workloads line {line_no}: same axes as `{}`, skipped",
                dup.name
            ));
            continue;
        }
        out.push(workload("performance", axes, w.uuid));
    }
    if out.is_empty() {
        return Err(ImportError::Workload {
            line: 0,
            reason: "no workloads in the JSONL".into(),
        });
    }
    notes.push(format!(
        "{} performance workload(s) from the JSONL, with their uuids",
        out.len()
    ));
    if from_files > 0 {
        notes.push(format!(
            "{from_files} workload(s) load inputs from files; PTXBench draws all inputs from the task's distribution instead"
        ));
    }
    Ok(out)
}

/// Per-role sizes for performance workloads when there is no JSONL.
fn default_perf(
    op: &Op,
    roles: &BTreeMap<&'static str, String>,
    vars: &[String],
    notes: &mut Vec<String>,
) -> Result<Vec<WorkloadFile>, ImportError> {
    let role_of = |axis: &str| {
        roles
            .iter()
            .find(|(_, a)| a.as_str() == axis)
            .map(|(r, _)| *r)
    };
    let values = |r: Option<&str>| -> Option<Vec<i64>> {
        match (op, r) {
            (Op::Gemm { .. } | Op::GemmFp8 { .. }, Some("m")) => Some(vec![70, 952, 8192]),
            (Op::AttentionFwd { .. } | Op::AttentionBwd { .. }, Some("b")) => Some(vec![4, 4]),
            (Op::AttentionFwd { .. } | Op::AttentionBwd { .. }, Some("h")) => Some(vec![48, 48]),
            (Op::AttentionFwd { .. } | Op::AttentionBwd { .. }, Some("s")) => {
                Some(vec![2048, 4096])
            }
            _ => None,
        }
    };
    let mut columns = Vec::new();
    for v in vars {
        let column = values(role_of(v)).ok_or_else(|| ImportError::Unsupported {
            field: "workloads".into(),
            reason: format!("no default size for var axis `{v}`; give a workloads JSONL"),
        })?;
        columns.push((v.clone(), column));
    }
    let n = columns.iter().map(|(_, c)| c.len()).min().unwrap_or(0);
    let mut out: Vec<WorkloadFile> = Vec::new();
    for i in 0..n {
        let axes: OrderedMap<i64> = columns.iter().map(|(k, c)| (k.clone(), c[i])).collect();
        if !out.iter().any(|o| o.axes == axes) {
            out.push(workload("performance", axes, None));
        }
    }
    if out.is_empty() {
        return Err(ImportError::Unsupported {
            field: "workloads".into(),
            reason: "the definition has no var axis, so there is nothing to time; give a workloads JSONL".into(),
        });
    }
    notes.push(format!(
        "no workloads JSONL: performance workloads are PTXBench defaults ({})",
        out.iter()
            .map(|w| w.name.clone())
            .collect::<Vec<_>>()
            .join(", ")
    ));
    Ok(out)
}

/// Small, tile-unfriendly sizes for the var axes; axes without a role take the smallest
/// performance value (always a size the kernel must support).
fn default_correctness(
    op: &Op,
    roles: &BTreeMap<&'static str, String>,
    vars: &[String],
    perf: &[WorkloadFile],
) -> Vec<WorkloadFile> {
    let role_of = |axis: &str| {
        roles
            .iter()
            .find(|(_, a)| a.as_str() == axis)
            .map(|(r, _)| *r)
    };
    let attention = matches!(op, Op::AttentionFwd { .. } | Op::AttentionBwd { .. });
    let mut out: Vec<WorkloadFile> = Vec::new();
    for i in 0..3 {
        let mut axes = OrderedMap::default();
        for v in vars {
            let value = match (attention, role_of(v)) {
                (false, Some("m")) => [1, 77, 129][i],
                (true, Some("b")) => [1, 2, 1][i],
                (true, Some("h")) => [2, 3, 1][i],
                (true, Some("s")) => [200, 77, 1][i],
                _ => perf
                    .iter()
                    .filter_map(|w| w.axes.get(v).copied())
                    .min()
                    .unwrap_or(1),
            };
            axes.0.push((v.clone(), value));
        }
        if !out.iter().any(|o| o.axes == axes) {
            out.push(workload("correctness", axes, None));
        }
    }
    // A correctness workload may not share its name with a performance one.
    for w in &mut out {
        if perf.iter().any(|p| p.name == w.name) {
            w.name = format!("check_{}", w.name);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::task::model::{Distribution, Tolerance, WorkloadKind};

    fn fixture(name: &str) -> String {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/tasks/flashinfer")
            .join(name);
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    fn task_of(yaml: &str, id: &str) -> crate::task::Task {
        let source = format!("{id}.yaml");
        parse_task(yaml, Path::new(&source), Path::new(&source)).expect("imported YAML validates")
    }

    #[test]
    fn imports_a_gemm_definition_with_workloads() {
        let (yaml, notes) = import_flashinfer(
            &fixture("gemm_n4096_k4096.json"),
            Some(&fixture("gemm_n4096_k4096.jsonl")),
        )
        .expect("imports");
        let t = task_of(&yaml, "gemm_n4096_k4096");
        assert_eq!(t.family, TaskFamily::Gemm);
        assert_eq!(t.op, Op::Gemm { transpose_b: true });
        assert_eq!(t.flops.source(), "2*M*N*K");
        assert_eq!(t.bytes.source(), "2*M*K + 2*N*K + 2*M*N");
        assert!(
            yaml.contains("shape: [M, K]"),
            "flow style for small lists:\n{yaml}"
        );
        let perf: Vec<_> = t.workloads_of(WorkloadKind::Performance).collect();
        assert_eq!(perf.len(), 2);
        assert_eq!(
            perf[0].uuid.as_deref(),
            Some("897b6544-56c2-4d96-98fd-453ae3418e4b")
        );
        assert_eq!(perf[1].axes["M"], 8192);
        assert!(t.workloads_of(WorkloadKind::Correctness).count() >= 2);
        assert!(t.reference.contains("def run(A, B)"), "{}", t.reference);
        assert!(
            notes.iter().any(|n| n.contains("tolerance")),
            "notes name the defaults: {notes:?}"
        );
        assert!(notes.iter().any(|n| n.contains("targets")), "{notes:?}");
        // Axis order survives (M, N, K as in the JSON, not sorted).
        let names: Vec<_> = t.axes.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(names, ["M", "N", "K"]);
    }

    #[test]
    fn imports_a_paper_style_attention_backward() {
        let (yaml, notes) = import_flashinfer(
            &fixture("mha_bwd_d64_causal.json"),
            Some(&fixture("mha_bwd_d64_causal.jsonl")),
        )
        .expect("imports");
        let t = task_of(&yaml, "mha_bwd_d64_causal");
        assert_eq!(t.op, Op::AttentionBwd { causal: true });
        assert!(t.tensor("LSE").is_some(), "L renamed to LSE");
        assert!(
            notes.iter().any(|n| n.contains("renamed to `LSE`")),
            "{notes:?}"
        );
        assert_eq!(t.flops.source(), "5*B*H*S*S*d");
        assert_eq!(t.bytes.source(), "16*B*H*S*d + 4*B*H*S");
        assert!(matches!(t.distribution, Distribution::Spiky { .. }));
        assert_eq!(
            t.tensor("dQ").and_then(|o| o.tolerance.clone()),
            Some(Tolerance::Relnorm { max: 0.02 })
        );
        // B and H are const in the definition: workloads bind only S, and the const values
        // repeated in the JSONL are accepted.
        assert!(t.workloads.iter().all(|w| w.axes.keys().eq(["S"])));
        assert_eq!(t.workloads_of(WorkloadKind::Performance).count(), 2);
    }

    #[test]
    fn imports_the_papers_fp8_attention_definition() {
        let (yaml, notes) = import_flashinfer(
            &fixture("fp8_mha_with_lse_d128_causal.json"),
            Some(&fixture("fp8_mha_with_lse_d128_causal.jsonl")),
        )
        .expect("imports");
        let t = task_of(&yaml, "fp8_mha_with_lse_d128_causal");
        assert_eq!(t.op, Op::AttentionFwdFp8 { causal: true });
        // Upstream's (one, one, one, one) descales become [1], and the axis goes.
        assert_eq!(
            t.tensor("descale_q").map(|x| x.shape.clone()),
            Some(vec!["1".to_string()])
        );
        assert!(t.axes.iter().all(|a| a.name != "one"), "{:?}", t.axes);
        assert!(notes.iter().any(|n| n.contains("became [1]")), "{notes:?}");
        assert!(matches!(
            t.distribution,
            Distribution::Spiky { spike_std, .. } if spike_std == 100.0
        ));
        assert_eq!(
            t.tensor("O").and_then(|o| o.tolerance.clone()),
            Some(Tolerance::AllcloseFraction {
                rtol: 0.125,
                atol: 0.01,
                min_match: 0.995
            })
        );
        assert_eq!(t.flops.source(), "2*B*H*L*L*D");
        assert_eq!(
            t.workloads_of(WorkloadKind::Performance)
                .filter_map(|w| w.uuid.clone())
                .collect::<Vec<_>>(),
            ["504c5595-5bf7-4234-98a4-ee6254af8c8f"]
        );
    }

    #[test]
    fn imports_a_flashinfer_paged_decode_definition() {
        let (yaml, notes) =
            import_flashinfer(&fixture("gqa_paged_decode_h32_kv8_d128_ps1.json"), None)
                .expect("imports");
        let t = task_of(&yaml, "gqa_paged_decode_h32_kv8_d128_ps1");
        assert_eq!(t.op, Op::AttentionDecode { paged: true });
        let names: Vec<&str> = t.inputs.iter().map(|x| x.name.as_str()).collect();
        assert_eq!(
            names,
            ["q", "k_cache", "v_cache", "kv_indptr", "kv_indices"]
        );
        for dropped in ["sm_scale", "last_page_len"] {
            assert!(
                notes
                    .iter()
                    .any(|n| n.contains(dropped) && n.contains("dropped")),
                "{dropped}: {notes:?}"
            );
        }
        // The upstream reference returns a base-2 lse; the task's is the natural log.
        assert!(t.reference.contains("log(sum_j"), "{}", t.reference);
        assert!(!t.reference.contains("def run"), "{}", t.reference);
        for w in &t.workloads {
            let lens = w.kv_lens.as_ref().expect("kv_lens");
            assert_eq!(lens.len() as i64, w.axes["batch_size"]);
            assert_eq!(lens.iter().sum::<u64>() as i64, w.axes["num_kv_indices"]);
        }
        let families: Vec<&str> = t.targets[0]
            .required
            .iter()
            .map(|f| f.family.as_str())
            .collect();
        assert_eq!(families, ["tma"]);
        // Traces keep kv_indptr in a blob: refused with the reason, not imported wrong.
        let line = r#"{"definition": "gqa_paged_decode_h32_kv8_d128_ps1", "workload": {"axes": {"batch_size": 1}}}"#;
        let e = import_flashinfer(
            &fixture("gqa_paged_decode_h32_kv8_d128_ps1.json"),
            Some(line),
        )
        .expect_err("no lengths");
        assert!(e.to_string().contains("kv_lens"), "{e}");
        // A page size other than 1 is named.
        let big = fixture("gqa_paged_decode_h32_kv8_d128_ps1.json")
            .replace("\"value\": 1\n", "\"value\": 64\n");
        let e = import_flashinfer(&big, None).expect_err("page size 64");
        assert!(e.to_string().contains("page size"), "{e}");
    }

    #[test]
    fn without_workloads_uses_family_defaults() {
        let (yaml, notes) =
            import_flashinfer(&fixture("gemm_n4096_k4096.json"), None).expect("imports");
        let t = task_of(&yaml, "gemm_n4096_k4096");
        let perf: Vec<i64> = t
            .workloads_of(WorkloadKind::Performance)
            .map(|w| w.axes["M"])
            .collect();
        assert_eq!(perf, [70, 952, 8192]);
        assert!(
            notes.iter().any(|n| n.contains("no workloads JSONL")),
            "{notes:?}"
        );
    }

    #[test]
    fn unknown_dtype_and_op_type_are_named() {
        let def = fixture("gemm_n4096_k4096.json");
        let bad = def.replacen("\"bfloat16\"", "\"float4_e2m1\"", 1);
        match import_flashinfer(&bad, None) {
            Err(ImportError::UnknownDType { field, dtype }) => {
                assert_eq!(field, "inputs.A.dtype");
                assert_eq!(dtype, "float4_e2m1");
            }
            other => panic!("expected an unknown dtype, got {other:?}"),
        }
        let bad = def.replace("\"op_type\": \"gemm\"", "\"op_type\": \"rmsnorm\"");
        let e = import_flashinfer(&bad, None).expect_err("unknown op");
        assert!(matches!(e, ImportError::UnknownOpType { .. }), "{e}");
        assert!(e.to_string().starts_with("op_type:"), "{e}");
    }

    #[test]
    fn workloads_must_fit_the_definition() {
        let def = fixture("mha_bwd_d64_causal.json");
        let line = r#"{"definition": "mha_bwd_d64_causal", "workload": {"uuid": "c4f6b939-51f4-5e23-923c-38fe7540a177", "axes": {"B": 8, "S": 1024}, "inputs": {}}}"#;
        let e = import_flashinfer(&def, Some(line)).expect_err("B is const 4");
        assert!(
            matches!(&e, ImportError::Workload { line: 1, reason } if reason.contains("`B`")),
            "{e}"
        );
        let other = line.replace(
            "\"definition\": \"mha_bwd_d64_causal\"",
            "\"definition\": \"x\"",
        );
        assert!(import_flashinfer(&def, Some(&other)).is_err());
        assert!(matches!(
            import_flashinfer("{", None),
            Err(ImportError::Json(_))
        ));
    }
}
