//! The launch plan: the declarative replacement for host code.
//!
//! A plan lists the kernel launches of one evaluation, in order. Each names a PTX entry, its
//! grid, block, dynamic shared memory and optional cluster as expressions over the task's axes,
//! and binds every entry parameter, in order, to a task tensor, a declared workspace, a scalar
//! expression with its type, a TMA tensor map the harness encodes, or null. [`PlanFile`] is the
//! YAML as written; [`LaunchPlan`] is the checked form (names resolved against the task).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde::Deserialize;

pub use crate::cuda::tensor_map::{Interleave, L2Promotion, OobFill, Swizzle};
use crate::expr::Expr;
use crate::task::{DType, Task};
use crate::text_enum::text_enum;

/// The YAML form, as a model or a person writes it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanFile {
    pub launches: Vec<LaunchFile>,
    #[serde(default)]
    pub workspaces: Vec<WorkspaceFile>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LaunchFile {
    pub entry: String,
    pub grid: Vec<Expr>,
    pub block: Vec<Expr>,
    #[serde(default)]
    pub shared_mem: Option<Expr>,
    #[serde(default)]
    pub cluster: Option<Vec<Expr>>,
    #[serde(default)]
    pub non_portable_cluster: bool,
    pub params: Vec<Option<ParamFile>>,
}

/// One parameter binding; exactly one of `tensor`, `workspace`, `scalar`, `tensor_map`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ParamFile {
    /// Optional: the PTX parameter name this binding is meant for (checked when given).
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub tensor: Option<String>,
    #[serde(default)]
    pub workspace: Option<String>,
    #[serde(default)]
    pub scalar: Option<Expr>,
    #[serde(default, rename = "type")]
    pub ty: Option<String>,
    #[serde(default)]
    pub tensor_map: Option<TensorMapFile>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkspaceFile {
    pub name: String,
    pub bytes: Expr,
    #[serde(default)]
    pub init: Option<String>,
}

/// A TMA descriptor, as `cuTensorMapEncodeTiled` takes it; dimensions innermost first.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TensorMapFile {
    /// A task tensor or a workspace.
    pub tensor: String,
    #[serde(default)]
    pub dtype: Option<String>,
    /// Global extent per dimension, in elements, innermost first.
    pub dims: Vec<Expr>,
    /// Byte strides of dimensions 1.., innermost first (rank - 1 entries).
    #[serde(default)]
    pub strides: Vec<Expr>,
    /// Box (tile) extent per dimension, in elements, innermost first.
    #[serde(rename = "box")]
    pub box_dims: Vec<Expr>,
    #[serde(default)]
    pub element_strides: Option<Vec<Expr>>,
    #[serde(default)]
    pub interleave: Option<String>,
    #[serde(default)]
    pub swizzle: Option<String>,
    #[serde(default)]
    pub l2_promotion: Option<String>,
    #[serde(default)]
    pub oob_fill: Option<String>,
}

/// A scalar parameter's PTX type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ScalarType {
    U8,
    U16,
    U32,
    U64,
    S8,
    S16,
    S32,
    S64,
    F32,
    F64,
}

impl ScalarType {
    pub const ALL: [ScalarType; 10] = [
        ScalarType::U8,
        ScalarType::U16,
        ScalarType::U32,
        ScalarType::U64,
        ScalarType::S8,
        ScalarType::S16,
        ScalarType::S32,
        ScalarType::S64,
        ScalarType::F32,
        ScalarType::F64,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ScalarType::U8 => "u8",
            ScalarType::U16 => "u16",
            ScalarType::U32 => "u32",
            ScalarType::U64 => "u64",
            ScalarType::S8 => "s8",
            ScalarType::S16 => "s16",
            ScalarType::S32 => "s32",
            ScalarType::S64 => "s64",
            ScalarType::F32 => "f32",
            ScalarType::F64 => "f64",
        }
    }

    pub fn size_bytes(self) -> u64 {
        match self {
            ScalarType::U8 | ScalarType::S8 => 1,
            ScalarType::U16 | ScalarType::S16 => 2,
            ScalarType::U32 | ScalarType::S32 | ScalarType::F32 => 4,
            ScalarType::U64 | ScalarType::S64 | ScalarType::F64 => 8,
        }
    }

    pub fn is_float(self) -> bool {
        matches!(self, ScalarType::F32 | ScalarType::F64)
    }

    /// The inclusive integer range the type holds (floats: any finite value).
    pub fn int_range(self) -> (i128, i128) {
        match self {
            ScalarType::U8 => (0, u8::MAX.into()),
            ScalarType::U16 => (0, u16::MAX.into()),
            ScalarType::U32 => (0, u32::MAX.into()),
            ScalarType::U64 => (0, u64::MAX.into()),
            ScalarType::S8 => (i8::MIN.into(), i8::MAX.into()),
            ScalarType::S16 => (i16::MIN.into(), i16::MAX.into()),
            ScalarType::S32 => (i32::MIN.into(), i32::MAX.into()),
            ScalarType::S64 | ScalarType::F32 | ScalarType::F64 => {
                (i64::MIN.into(), i64::MAX.into())
            }
        }
    }
}

impl std::str::FromStr for ScalarType {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim_start_matches('.');
        ScalarType::ALL
            .into_iter()
            .find(|t| t.as_str() == s)
            .ok_or_else(|| {
                format!(
                    "unknown scalar type `{s}` (known: {})",
                    ScalarType::ALL.map(|t| t.as_str()).join(", ")
                )
            })
    }
}

text_enum!(
    /// How a workspace is filled before each launch sequence.
    WorkspaceInit { Zero => "zero", Poison => "poison" }
);

/// A checked plan: every name resolves in the task, every expression uses only its axes.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct LaunchPlan {
    pub launches: Vec<Launch>,
    pub workspaces: Vec<Workspace>,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Launch {
    pub entry: String,
    pub grid: [Expr; 3],
    pub block: [Expr; 3],
    pub shared_mem: Expr,
    pub cluster: Option<[Expr; 3]>,
    pub non_portable_cluster: bool,
    pub params: Vec<Param>,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Param {
    /// The PTX parameter name the plan says this is for, if it says.
    pub name: Option<String>,
    pub binding: Binding,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Binding {
    /// Device pointer to a task input or output.
    Tensor(String),
    /// Device pointer to a workspace the plan declares.
    Workspace(String),
    Scalar {
        value: Expr,
        ty: ScalarType,
    },
    TensorMap(TensorMapSpec),
    Null,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct TensorMapSpec {
    pub tensor: String,
    pub dtype: DType,
    pub dims: Vec<Expr>,
    pub strides: Vec<Expr>,
    pub box_dims: Vec<Expr>,
    pub element_strides: Vec<Expr>,
    pub interleave: Interleave,
    pub swizzle: Swizzle,
    pub l2_promotion: L2Promotion,
    pub oob_fill: OobFill,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Workspace {
    pub name: String,
    pub bytes: Expr,
    pub init: WorkspaceInit,
}

/// One thing wrong with a plan, located by a dotted field path.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PlanProblem {
    pub field: String,
    pub reason: String,
}

impl fmt::Display for PlanProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.reason)
    }
}

/// Why a plan was rejected: every problem found, not only the first.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("launch plan rejected:\n{}", .problems.iter().map(|p| format!("  - {p}")).collect::<Vec<_>>().join("\n"))]
pub struct PlanError {
    pub problems: Vec<PlanProblem>,
}

/// Maximum number of launches in one plan (attention backward needs a few, not hundreds).
pub const MAX_LAUNCHES: usize = 16;

impl LaunchPlan {
    /// Parses the YAML text of a plan and checks it against `task`; a YAML error is located as
    /// `plan YAML`.
    pub fn parse(text: &str, task: &Task) -> Result<LaunchPlan, PlanError> {
        LaunchPlan::parse_from(text, task, "plan YAML")
    }

    /// Like [`LaunchPlan::parse`], with a YAML error located at `source` (the plan's file, or
    /// which block of which response).
    pub fn parse_from(text: &str, task: &Task, source: &str) -> Result<LaunchPlan, PlanError> {
        // YAML 1.2 booleans: an axis called `N` or `y` stays a name, not `false`/`true`;
        // a key written twice is an error, not a silent last-wins.
        let options = serde_saphyr::options! {
            strict_booleans: true,
            duplicate_keys: serde_saphyr::DuplicateKeyPolicy::Error,
            with_snippet: false,
        };
        let file: PlanFile =
            serde_saphyr::from_str_with_options(text, options).map_err(|e| PlanError {
                problems: vec![PlanProblem {
                    field: source.to_string(),
                    reason: e.to_string(),
                }],
            })?;
        LaunchPlan::from_file(file, task)
    }

    /// Checks a parsed plan against `task`.
    pub fn from_file(file: PlanFile, task: &Task) -> Result<LaunchPlan, PlanError> {
        let mut workspace_names: BTreeMap<String, usize> = BTreeMap::new();
        for w in &file.workspaces {
            *workspace_names.entry(w.name.clone()).or_default() += 1;
        }
        let mut v = Validator {
            task,
            problems: Vec::new(),
            workspace_names,
        };
        let plan = v.plan(file);
        if v.problems.is_empty() {
            Ok(plan)
        } else {
            Err(PlanError {
                problems: v.problems,
            })
        }
    }

    /// Tensors and workspaces each launch can write through (pointer or tensor map).
    pub fn bound_names(&self) -> impl Iterator<Item = &str> {
        self.launches
            .iter()
            .flat_map(|l| l.params.iter())
            .filter_map(|p| match &p.binding {
                Binding::Tensor(n) | Binding::Workspace(n) => Some(n.as_str()),
                Binding::TensorMap(m) => Some(m.tensor.as_str()),
                _ => None,
            })
    }
}

struct Validator<'a> {
    task: &'a Task,
    problems: Vec<PlanProblem>,
    /// How often each workspace name is declared (a map, not a list to scan: a plan may
    /// declare tens of thousands).
    workspace_names: BTreeMap<String, usize>,
}

impl Validator<'_> {
    fn problem(&mut self, field: impl Into<String>, reason: impl Into<String>) {
        self.problems.push(PlanProblem {
            field: field.into(),
            reason: reason.into(),
        });
    }

    fn axes(&self) -> Vec<String> {
        self.task.axes.iter().map(|a| a.name.clone()).collect()
    }

    fn expr(&mut self, field: &str, e: Expr) -> Expr {
        let axes = self.axes();
        if let Err(err) = e.check_variables(axes.iter().map(String::as_str)) {
            self.problem(field, err.to_string());
        }
        e
    }

    fn dim3(&mut self, field: &str, v: Vec<Expr>) -> [Expr; 3] {
        if v.is_empty() || v.len() > 3 {
            self.problem(field, format!("needs 1 to 3 entries, has {}", v.len()));
        }
        let one = || Expr::parse("1").expect("`1` is a valid expression");
        let mut it = v.into_iter();
        let mut out = [one(), one(), one()];
        for (i, slot) in out.iter_mut().enumerate() {
            if let Some(e) = it.next() {
                *slot = self.expr(&format!("{field}[{i}]"), e);
            }
        }
        out
    }

    fn plan(&mut self, file: PlanFile) -> LaunchPlan {
        if file.launches.is_empty() {
            self.problem("launches", "the plan has no launch");
        }
        if file.launches.len() > MAX_LAUNCHES {
            self.problem(
                "launches",
                format!("{} launches; at most {MAX_LAUNCHES}", file.launches.len()),
            );
        }
        let mut workspaces = Vec::new();
        let mut named = BTreeSet::new();
        for (i, w) in file.workspaces.into_iter().enumerate() {
            let f = format!("workspaces[{i}]");
            if !is_name(&w.name) {
                self.problem(
                    format!("{f}.name"),
                    format!("`{}` is not a valid name", w.name),
                );
            }
            if self.task.tensor(&w.name).is_some() {
                self.problem(
                    format!("{f}.name"),
                    format!("`{}` is already a tensor of the task", w.name),
                );
            }
            // Said once, at the first declaration of the name.
            let first = named.insert(w.name.clone());
            if first && self.workspace_names.get(&w.name).is_some_and(|n| *n > 1) {
                self.problem(
                    format!("{f}.name"),
                    format!("workspace `{}` is declared twice", w.name),
                );
            }
            let bytes = self.expr(&format!("{f}.bytes"), w.bytes);
            let init = match w.init.as_deref() {
                None => WorkspaceInit::Poison,
                Some(s) => WorkspaceInit::parse("init", s).unwrap_or_else(|e| {
                    self.problem(format!("{f}.init"), e);
                    WorkspaceInit::Poison
                }),
            };
            workspaces.push(Workspace {
                name: w.name,
                bytes,
                init,
            });
        }
        let launches = file
            .launches
            .into_iter()
            .enumerate()
            .map(|(i, l)| self.launch(&format!("launches[{i}]"), l))
            .collect::<Vec<_>>();
        let plan = LaunchPlan {
            launches,
            workspaces,
        };
        let bound: Vec<String> = plan.bound_names().map(str::to_string).collect();
        for out in &self.task.outputs {
            if !bound.contains(&out.name) {
                self.problem(
                    "launches",
                    format!(
                        "output `{}` is bound to no parameter of any launch, so nothing can write it",
                        out.name
                    ),
                );
            }
        }
        plan
    }

    fn launch(&mut self, f: &str, l: LaunchFile) -> Launch {
        if l.entry.trim().is_empty() {
            self.problem(format!("{f}.entry"), "is empty");
        }
        let grid = self.dim3(&format!("{f}.grid"), l.grid);
        let block = self.dim3(&format!("{f}.block"), l.block);
        let shared_mem = match l.shared_mem {
            Some(e) => self.expr(&format!("{f}.shared_mem"), e),
            None => Expr::parse("0").expect("`0` is a valid expression"),
        };
        let cluster = l.cluster.map(|c| self.dim3(&format!("{f}.cluster"), c));
        let params = l
            .params
            .into_iter()
            .enumerate()
            .map(|(i, p)| self.param(&format!("{f}.params[{i}]"), p))
            .collect();
        Launch {
            entry: l.entry,
            grid,
            block,
            shared_mem,
            cluster,
            non_portable_cluster: l.non_portable_cluster,
            params,
        }
    }

    fn param(&mut self, f: &str, p: Option<ParamFile>) -> Param {
        let Some(p) = p else {
            return Param {
                name: None,
                binding: Binding::Null,
            };
        };
        let kinds = [
            p.tensor.is_some(),
            p.workspace.is_some(),
            p.scalar.is_some(),
            p.tensor_map.is_some(),
        ]
        .iter()
        .filter(|b| **b)
        .count();
        if kinds != 1 {
            self.problem(
                f,
                format!("needs exactly one of tensor, workspace, scalar, tensor_map (has {kinds}); write `null` for an unused parameter"),
            );
        }
        if p.ty.is_some() && p.scalar.is_none() {
            self.problem(format!("{f}.type"), "only a scalar has a type");
        }
        let binding = if let Some(t) = p.tensor {
            if self.task.tensor(&t).is_none() {
                self.problem(
                    format!("{f}.tensor"),
                    format!(
                        "the task has no tensor `{t}` (it has: {})",
                        self.tensor_names()
                    ),
                );
            }
            Binding::Tensor(t)
        } else if let Some(w) = p.workspace {
            if !self.workspace_names.contains_key(&w) {
                self.problem(
                    format!("{f}.workspace"),
                    format!("no workspace `{w}` is declared"),
                );
            }
            Binding::Workspace(w)
        } else if let Some(value) = p.scalar {
            let value = self.expr(&format!("{f}.scalar"), value);
            let ty = match p.ty.as_deref() {
                None => {
                    self.problem(
                        format!("{f}.type"),
                        "a scalar needs a type (u32, s32, u64, f32, ...)",
                    );
                    ScalarType::U32
                }
                Some(s) => s.parse().unwrap_or_else(|e: String| {
                    self.problem(format!("{f}.type"), e);
                    ScalarType::U32
                }),
            };
            Binding::Scalar { value, ty }
        } else if let Some(m) = p.tensor_map {
            Binding::TensorMap(self.tensor_map(&format!("{f}.tensor_map"), m))
        } else {
            Binding::Null
        };
        Param {
            name: p.name,
            binding,
        }
    }

    /// Parses an optional keyword field, recording a problem and using `default` if it is bad.
    fn choice<T: Copy>(
        &mut self,
        f: &str,
        name: &str,
        text: Option<String>,
        default: T,
        parse: fn(&str, &str) -> Result<T, String>,
    ) -> T {
        match text {
            None => default,
            Some(s) => parse(name, &s).unwrap_or_else(|e| {
                self.problem(format!("{f}.{name}"), e);
                default
            }),
        }
    }

    fn tensor_names(&self) -> String {
        self.task
            .inputs
            .iter()
            .chain(&self.task.outputs)
            .map(|t| t.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }

    fn tensor_map(&mut self, f: &str, m: TensorMapFile) -> TensorMapSpec {
        let tensor_dtype = self.task.tensor(&m.tensor).map(|t| t.dtype);
        if tensor_dtype.is_none() && !self.workspace_names.contains_key(&m.tensor) {
            self.problem(
                format!("{f}.tensor"),
                format!(
                    "`{}` is neither a tensor of the task ({}) nor a declared workspace",
                    m.tensor,
                    self.tensor_names()
                ),
            );
        }
        let dtype = match (m.dtype.as_deref(), tensor_dtype) {
            (Some(s), _) => s.parse::<DType>().unwrap_or_else(|e| {
                self.problem(format!("{f}.dtype"), e.to_string());
                DType::Bf16
            }),
            (None, Some(d)) => d,
            (None, None) => {
                self.problem(
                    format!("{f}.dtype"),
                    "a tensor map over a workspace needs a dtype",
                );
                DType::Bf16
            }
        };
        let rank = m.dims.len();
        if !(1..=5).contains(&rank) {
            self.problem(
                format!("{f}.dims"),
                format!("rank {rank}; TMA supports 1 to 5"),
            );
        }
        if m.strides.len() + 1 != rank && rank > 0 {
            self.problem(
                format!("{f}.strides"),
                format!(
                    "has {} entries; a rank-{rank} map needs {} (byte strides of dims 1..)",
                    m.strides.len(),
                    rank - 1
                ),
            );
        }
        if m.box_dims.len() != rank {
            self.problem(
                format!("{f}.box"),
                format!("has {} entries; dims has {rank}", m.box_dims.len()),
            );
        }
        let exprs = |v: &mut Self, name: &str, list: Vec<Expr>| -> Vec<Expr> {
            list.into_iter()
                .enumerate()
                .map(|(i, e)| v.expr(&format!("{f}.{name}[{i}]"), e))
                .collect()
        };
        let dims = exprs(self, "dims", m.dims);
        let strides = exprs(self, "strides", m.strides);
        let box_dims = exprs(self, "box", m.box_dims);
        let element_strides = match m.element_strides {
            Some(es) => {
                if es.len() != rank {
                    self.problem(
                        format!("{f}.element_strides"),
                        format!("has {} entries; dims has {rank}", es.len()),
                    );
                }
                exprs(self, "element_strides", es)
            }
            None => (0..rank)
                .map(|_| Expr::parse("1").expect("`1` parses"))
                .collect(),
        };
        let interleave = self.choice(
            f,
            "interleave",
            m.interleave,
            Interleave::None,
            Interleave::parse,
        );
        let swizzle = self.choice(f, "swizzle", m.swizzle, Swizzle::None, Swizzle::parse);
        let l2_promotion = self.choice(
            f,
            "l2_promotion",
            m.l2_promotion,
            L2Promotion::None,
            L2Promotion::parse,
        );
        let oob_fill = self.choice(f, "oob_fill", m.oob_fill, OobFill::Zero, OobFill::parse);
        TensorMapSpec {
            tensor: m.tensor,
            dtype,
            dims,
            strides,
            box_dims,
            element_strides,
            interleave,
            swizzle,
            l2_promotion,
            oob_fill,
        }
    }
}

fn is_name(s: &str) -> bool {
    !s.is_empty()
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !s.starts_with(|c: char| c.is_ascii_digit())
}
