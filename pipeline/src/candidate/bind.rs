//! Binding a launch plan to the PTX it launches, and evaluating it for one workload.
//!
//! [`check_module`] compares the plan with the entries' declared parameters (count, type,
//! size, alignment; tensor maps are 128-byte, 64-aligned by-value parameters or pointers to a
//! map in global memory) and the module's `.target`/`.version` with the architecture.
//! [`resolve`] evaluates every expression for a workload and checks the numbers against the
//! architecture's limits and the entry's performance directives; what it returns is exactly
//! what the engine launches.

use std::collections::BTreeMap;

use ptxbench_ptx::{Function, Module, Param as PtxParam, ParamType};

use super::plan::{
    Binding, LaunchPlan, PlanProblem, ScalarType, TensorMapSpec, Workspace, WorkspaceInit,
};
use crate::arch::Arch;
use crate::cuda::TensorMapDesc;
use crate::expr::{Bindings, Expr};
use crate::task::{Task, Workload};

/// Largest workspace a plan may ask for (bytes); above it the request is absurd, not a kernel.
pub const MAX_WORKSPACE_BYTES: u64 = 16 << 30;

fn problem(field: impl Into<String>, reason: impl Into<String>) -> PlanProblem {
    PlanProblem {
        field: field.into(),
        reason: reason.into(),
    }
}

/// Checks `plan` against the parsed PTX (no workload needed). Empty means it binds.
pub fn check_module(plan: &LaunchPlan, module: &Module, arch: Arch) -> Vec<PlanProblem> {
    let mut out = Vec::new();
    if module.targets.is_empty() {
        out.push(problem("ptx.target", "the PTX has no `.target` directive"));
    }
    if let Some(t) = module.targets.iter().find(|t| t.starts_with("sm_"))
        && let Err(e) = arch.accepts_target(t)
    {
        out.push(problem("ptx.target", e));
    }
    match module.version {
        None => out.push(problem(
            "ptx.version",
            "the PTX has no `.version` directive",
        )),
        Some(v) if v < arch.min_ptx_version() => out.push(problem(
            "ptx.version",
            format!(
                "PTX ISA {}.{} cannot target {arch}; it needs {}.{} or later",
                v.0,
                v.1,
                arch.min_ptx_version().0,
                arch.min_ptx_version().1
            ),
        )),
        Some(_) => {}
    }
    if module.address_size.is_some_and(|a| a != 64) {
        out.push(problem(
            "ptx.address_size",
            "only `.address_size 64` can run here",
        ));
    }
    for (li, launch) in plan.launches.iter().enumerate() {
        let f = format!("launches[{li}]");
        let Some(entry) = module.entry(&launch.entry) else {
            let names: Vec<&str> = module.entries().map(|e| e.name.as_str()).collect();
            out.push(problem(
                format!("{f}.entry"),
                format!(
                    "the PTX has no `.entry {}` (entries: {})",
                    launch.entry,
                    if names.is_empty() {
                        "none".to_string()
                    } else {
                        names.join(", ")
                    }
                ),
            ));
            continue;
        };
        if launch.params.len() != entry.params.len() {
            out.push(problem(
                format!("{f}.params"),
                format!(
                    "{} bindings for `{}`, which declares {} parameters ({})",
                    launch.params.len(),
                    entry.name,
                    entry.params.len(),
                    entry
                        .params
                        .iter()
                        .map(describe_param)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
        for (pi, (bound, declared)) in launch.params.iter().zip(&entry.params).enumerate() {
            let pf = format!("{f}.params[{pi}]");
            if let Some(name) = &bound.name
                && *name != declared.name
            {
                out.push(problem(
                    format!("{pf}.name"),
                    format!(
                        "says `{name}`, but parameter {pi} of `{}` is `{}`",
                        entry.name, declared.name
                    ),
                ));
            }
            if let Err(reason) = binding_fits(&bound.binding, declared) {
                out.push(problem(pf, reason));
            }
        }
        if entry.directive("explicitcluster").is_some() && launch.cluster.is_none() {
            out.push(problem(
                format!("{f}.cluster"),
                format!(
                    "`{}` declares `.explicitcluster`, so the plan must give a cluster shape",
                    entry.name
                ),
            ));
        }
    }
    out
}

fn describe_param(p: &PtxParam) -> String {
    match p.array_len {
        Some(n) => format!("{} .{}[{n}]", p.name, p.ty),
        None => format!("{} .{}", p.name, p.ty),
    }
}

/// Whether a binding can be passed in the declared parameter.
fn binding_fits(b: &Binding, p: &PtxParam) -> Result<(), String> {
    let decl = describe_param(p);
    let size = p.size_bytes();
    let is_bits = matches!(
        p.ty,
        ParamType::B8 | ParamType::B16 | ParamType::B32 | ParamType::B64
    );
    match b {
        Binding::Tensor(_) | Binding::Workspace(_) | Binding::Null => {
            if size != 8 || p.array_len.is_some() {
                return Err(format!(
                    "a {} is a 64-bit address, but `{decl}` holds {size} bytes",
                    match b {
                        Binding::Null => "null",
                        _ => "pointer",
                    }
                ));
            }
            if matches!(p.ty, ParamType::F64) {
                return Err(format!(
                    "a pointer cannot go in the float parameter `{decl}`"
                ));
            }
            Ok(())
        }
        Binding::Scalar { ty, .. } => {
            if size != ty.size_bytes() || p.array_len.is_some() {
                return Err(format!(
                    "a {} scalar is {} bytes, but `{decl}` holds {size}",
                    ty.as_str(),
                    ty.size_bytes()
                ));
            }
            let declared_float = matches!(p.ty, ParamType::F32 | ParamType::F64);
            if !is_bits && declared_float != ty.is_float() {
                return Err(format!(
                    "a {} value does not match `{decl}` (use a {} type)",
                    ty.as_str(),
                    if declared_float { "float" } else { "integer" }
                ));
            }
            Ok(())
        }
        Binding::TensorMap(_) => {
            if size == 128 {
                if p.alignment() < 64 {
                    return Err(format!(
                        "a CUtensorMap passed by value needs 64-byte alignment; declare `.param .align 64 .b8 {}[128]`",
                        p.name
                    ));
                }
                Ok(())
            } else if size == 8 && p.array_len.is_none() {
                // A map in global memory is writable (`tensormap.replace`, plain stores): a
                // kernel could change it between the launches that are checked or counted
                // and those that are timed (integrity v4).
                Err(format!(
                    "a tensor map is passed by value only (`.param .align 64 .b8 {}[128]`, a `const __grid_constant__ CUtensorMap`): by pointer it would live in global memory the kernel can rewrite between launches",
                    p.name
                ))
            } else {
                Err(format!(
                    "a tensor map is a 128-byte parameter (`.param .align 64 .b8 {}[128]`) or a 64-bit pointer to one, but `{decl}` holds {size} bytes",
                    p.name
                ))
            }
        }
    }
}

/// One launch with every number known: what the engine hands to the driver.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ResolvedLaunch {
    pub entry: String,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    /// Dynamic shared memory in bytes.
    pub shared_mem: u32,
    /// Static shared memory the entry declares, for the limit check.
    pub static_shared: u64,
    pub cluster: Option<[u32; 3]>,
    pub non_portable_cluster: bool,
    pub params: Vec<ResolvedParam>,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ResolvedParam {
    /// Device address of a task tensor.
    Tensor { name: String, bytes: u64 },
    /// Device address of a plan workspace.
    Workspace {
        name: String,
        bytes: u64,
        init: WorkspaceInit,
    },
    /// Raw little-endian bytes of a scalar, with the value for display.
    Scalar {
        ty: ScalarType,
        bytes: Vec<u8>,
        value: String,
    },
    /// An encoded tensor map, by value (128 bytes) or by address of a copy in global memory.
    TensorMap {
        by_value: bool,
        map: ResolvedTensorMap,
    },
    /// A zero of the parameter's size.
    Null { bytes: u64 },
}

/// A tensor map with every extent known and every TMA rule checked, bound to a task tensor.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ResolvedTensorMap {
    pub tensor: String,
    pub desc: TensorMapDesc,
}

/// Evaluates `plan` for `workload` and checks every number. `check_module` must pass first.
pub fn resolve(
    plan: &LaunchPlan,
    module: &Module,
    task: &Task,
    workload: &Workload,
    arch: Arch,
) -> Result<Vec<ResolvedLaunch>, Vec<PlanProblem>> {
    let env = task.bindings(workload);
    let mut r = Resolver {
        env: &env,
        task,
        workspaces: plan
            .workspaces
            .iter()
            .map(|w| (w.name.as_str(), w))
            .collect(),
        arch,
        problems: Vec::new(),
        prefix: format!("workload {}: ", workload.name),
    };
    let mut launches = Vec::new();
    for (li, launch) in plan.launches.iter().enumerate() {
        let Some(entry) = module.entry(&launch.entry) else {
            r.problem(
                format!("launches[{li}].entry"),
                format!("no entry `{}`", launch.entry),
            );
            continue;
        };
        if let Some(l) = r.launch(li, launch, entry) {
            launches.push(l);
        }
    }
    if r.problems.is_empty() {
        Ok(launches)
    } else {
        Err(r.problems)
    }
}

struct Resolver<'a> {
    env: &'a Bindings,
    task: &'a Task,
    /// The plan's workspaces by name (looked up per parameter; a plan may declare thousands).
    workspaces: BTreeMap<&'a str, &'a Workspace>,
    arch: Arch,
    problems: Vec<PlanProblem>,
    prefix: String,
}

impl Resolver<'_> {
    fn problem(&mut self, field: String, reason: String) {
        self.problems
            .push(problem(field, format!("{}{reason}", self.prefix)));
    }

    /// Evaluates to an integer in `lo..=hi`, recording a problem otherwise.
    fn int(&mut self, field: &str, e: &Expr, lo: i64, hi: i64) -> Option<i64> {
        match e.eval_int(self.env) {
            Ok(v) if (lo..=hi).contains(&v) => Some(v),
            Ok(v) => {
                self.problem(field.into(), format!("`{e}` = {v}, outside {lo}..={hi}"));
                None
            }
            Err(err) => {
                self.problem(field.into(), err.to_string());
                None
            }
        }
    }

    fn dim3(&mut self, field: &str, dims: &[Expr; 3], max: [u64; 3]) -> Option<[u32; 3]> {
        let mut out = [1u32; 3];
        let mut ok = true;
        for i in 0..3 {
            let hi = i64::try_from(max[i]).unwrap_or(i64::MAX);
            match self.int(&format!("{field}[{i}]"), &dims[i], 1, hi) {
                Some(v) => out[i] = u32::try_from(v).unwrap_or(u32::MAX),
                None => ok = false,
            }
        }
        ok.then_some(out)
    }

    fn launch(
        &mut self,
        li: usize,
        l: &super::plan::Launch,
        entry: &Function,
    ) -> Option<ResolvedLaunch> {
        let f = format!("launches[{li}]");
        let lim = self.arch.limits();
        let grid = self.dim3(&format!("{f}.grid"), &l.grid, lim.max_grid_dims);
        let block = self.dim3(&format!("{f}.block"), &l.block, lim.max_block_dims);
        let static_shared = entry.static_shared_bytes();
        let smem_max = i64::try_from(lim.max_shared_per_block).unwrap_or(i64::MAX);
        let shared_mem = self.int(&format!("{f}.shared_mem"), &l.shared_mem, 0, smem_max);
        if let Some(s) = shared_mem {
            let total = u64::try_from(s).unwrap_or(0).saturating_add(static_shared);
            if total > lim.max_shared_per_block {
                self.problem(
                    format!("{f}.shared_mem"),
                    format!(
                        "{s} dynamic + {static_shared} static bytes of shared memory exceed the {} bytes a block may use on {}",
                        lim.max_shared_per_block, self.arch
                    ),
                );
            }
        }
        if let Some(b) = block {
            let threads: u64 = b.iter().map(|&x| u64::from(x)).product();
            if threads > lim.max_threads_per_block {
                self.problem(
                    format!("{f}.block"),
                    format!(
                        "{threads} threads per block; at most {}",
                        lim.max_threads_per_block
                    ),
                );
            }
            if let Some(d) = entry.directive("reqntid") {
                let want = pad3(&d.values);
                if want.map(u64::from) != b.map(u64::from) {
                    self.problem(
                        format!("{f}.block"),
                        format!(
                            "{b:?} but `{}` declares `.reqntid {:?}`",
                            entry.name, d.values
                        ),
                    );
                }
            }
            if let Some(d) = entry.directive("maxntid") {
                let max: u64 = pad3(&d.values).iter().map(|&x| u64::from(x)).product();
                if threads > max {
                    self.problem(
                        format!("{f}.block"),
                        format!(
                            "{threads} threads but `{}` declares `.maxntid {:?}`",
                            entry.name, d.values
                        ),
                    );
                }
            }
        }
        let cluster = match &l.cluster {
            None => None,
            Some(c) => {
                let cl = self.dim3(&format!("{f}.cluster"), c, [16, 16, 16]);
                if let Some(cl) = cl {
                    let size: u64 = cl.iter().map(|&x| u64::from(x)).product();
                    let max = if l.non_portable_cluster {
                        lim.max_cluster
                    } else {
                        lim.max_cluster_portable
                    };
                    if size > max {
                        self.problem(
                            format!("{f}.cluster"),
                            format!(
                                "a cluster of {size} blocks; at most {max}{}",
                                if l.non_portable_cluster {
                                    ""
                                } else {
                                    " (set non_portable_cluster: true for up to 16)"
                                }
                            ),
                        );
                    }
                    if let Some(g) = grid
                        && (0..3).any(|i| !g[i].is_multiple_of(cl[i]))
                    {
                        self.problem(
                            format!("{f}.cluster"),
                            format!(
                                "grid {g:?} is not a multiple of cluster {cl:?} in every dimension"
                            ),
                        );
                    }
                    if let Some(d) = entry.directive("reqnctapercluster")
                        && pad3(&d.values) != cl
                    {
                        self.problem(
                            format!("{f}.cluster"),
                            format!(
                                "{cl:?} but `{}` declares `.reqnctapercluster {:?}`",
                                entry.name, d.values
                            ),
                        );
                    }
                }
                cl
            }
        };
        let mut params = Vec::new();
        let mut ok = true;
        for (pi, (p, declared)) in l.params.iter().zip(&entry.params).enumerate() {
            match self.param(&format!("{f}.params[{pi}]"), &p.binding, declared) {
                Some(rp) => params.push(rp),
                None => ok = false,
            }
        }
        Some(ResolvedLaunch {
            entry: l.entry.clone(),
            grid: grid?,
            block: block?,
            shared_mem: u32::try_from(shared_mem?).unwrap_or(u32::MAX),
            static_shared,
            cluster,
            non_portable_cluster: l.non_portable_cluster,
            params: if ok { params } else { return None },
        })
    }

    fn tensor_bytes(&mut self, field: &str, name: &str) -> Option<u64> {
        if let Some(t) = self.task.tensor(name) {
            match self.task.size_bytes(t, self.env) {
                Ok(b) => Some(b),
                Err(e) => {
                    self.problem(field.into(), format!("size of `{name}`: {e}"));
                    None
                }
            }
        } else {
            let w = *self.workspaces.get(name)?;
            let max = i64::try_from(MAX_WORKSPACE_BYTES).unwrap_or(i64::MAX);
            self.int(
                &format!("{field} (workspace `{name}` bytes)"),
                &w.bytes.clone(),
                0,
                max,
            )
            .map(|v| u64::try_from(v).unwrap_or(0))
        }
    }

    fn param(&mut self, f: &str, b: &Binding, declared: &PtxParam) -> Option<ResolvedParam> {
        Some(match b {
            Binding::Tensor(name) => ResolvedParam::Tensor {
                name: name.clone(),
                bytes: self.tensor_bytes(f, name)?,
            },
            Binding::Workspace(name) => {
                let init = self.workspaces.get(name.as_str())?.init;
                ResolvedParam::Workspace {
                    name: name.clone(),
                    bytes: self.tensor_bytes(f, name)?,
                    init,
                }
            }
            Binding::Null => ResolvedParam::Null {
                bytes: declared.size_bytes(),
            },
            Binding::Scalar { value, ty } => self.scalar(f, value, *ty)?,
            Binding::TensorMap(m) => ResolvedParam::TensorMap {
                by_value: declared.size_bytes() == 128,
                map: self.tensor_map(&format!("{f}.tensor_map"), m)?,
            },
        })
    }

    fn scalar(&mut self, f: &str, value: &Expr, ty: ScalarType) -> Option<ResolvedParam> {
        if ty.is_float() {
            let v = match value.eval_f64(self.env) {
                Ok(v) if v.is_finite() => v,
                Ok(v) => {
                    self.problem(f.into(), format!("`{value}` = {v}, not a finite number"));
                    return None;
                }
                Err(e) => {
                    self.problem(f.into(), e.to_string());
                    return None;
                }
            };
            let bytes = if ty == ScalarType::F32 {
                (v as f32).to_le_bytes().to_vec()
            } else {
                v.to_le_bytes().to_vec()
            };
            return Some(ResolvedParam::Scalar {
                ty,
                bytes,
                value: v.to_string(),
            });
        }
        let (lo, hi) = ty.int_range();
        let v = match value.eval_int(self.env) {
            Ok(v) => v,
            Err(e) => {
                self.problem(f.into(), e.to_string());
                return None;
            }
        };
        if !(lo..=hi).contains(&i128::from(v)) {
            self.problem(
                f.into(),
                format!("`{value}` = {v} does not fit in {}", ty.as_str()),
            );
            return None;
        }
        let n = usize::try_from(ty.size_bytes()).unwrap_or(8);
        Some(ResolvedParam::Scalar {
            ty,
            bytes: v.to_le_bytes()[..n].to_vec(),
            value: v.to_string(),
        })
    }

    fn list(&mut self, f: &str, name: &str, v: &[Expr], lo: i64, hi: i64) -> Option<Vec<u64>> {
        let mut out = Vec::new();
        let mut ok = true;
        for (i, e) in v.iter().enumerate() {
            match self.int(&format!("{f}.{name}[{i}]"), e, lo, hi) {
                Some(x) => out.push(u64::try_from(x).unwrap_or(0)),
                None => ok = false,
            }
        }
        ok.then_some(out)
    }

    fn tensor_map(&mut self, f: &str, m: &TensorMapSpec) -> Option<ResolvedTensorMap> {
        // The expressions must evaluate; TensorMapDesc::new checks every TMA rule.
        let dims = self.list(f, "dims", &m.dims, 0, i64::MAX);
        let strides = self.list(f, "strides", &m.strides, 0, i64::MAX);
        let box_dims = self.list(f, "box", &m.box_dims, 0, i64::MAX);
        let element_strides = self.list(f, "element_strides", &m.element_strides, 0, i64::MAX);
        let desc = TensorMapDesc::new(
            m.dtype.into(),
            dims?,
            strides?,
            box_dims?,
            element_strides?,
            m.interleave,
            m.swizzle,
            m.l2_promotion,
            m.oob_fill,
        );
        let desc = match desc {
            Ok(d) => d,
            Err(problems) => {
                for p in problems {
                    self.problem(format!("{f}.{}", p.field), p.reason);
                }
                return None;
            }
        };
        // The map must not reach past the buffer it describes: TMA would read or write there.
        let footprint = desc.footprint_bytes();
        if let Some(size) = self.tensor_bytes(f, &m.tensor)
            && footprint > size
        {
            self.problem(
                format!("{f}.dims"),
                format!(
                    "the map spans {footprint} bytes but `{}` has {size} bytes for this workload",
                    m.tensor
                ),
            );
            return None;
        }
        Some(ResolvedTensorMap {
            tensor: m.tensor.clone(),
            desc,
        })
    }
}

fn pad3(v: &[u64]) -> [u32; 3] {
    let mut out = [1u32; 3];
    for (o, x) in out.iter_mut().zip(v) {
        *o = u32::try_from(*x).unwrap_or(u32::MAX);
    }
    out
}
