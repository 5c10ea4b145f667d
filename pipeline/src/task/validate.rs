//! Task file text into a validated [`Task`]: YAML syntax, structure (unknown or duplicate keys),
//! then meaning. Every problem found is reported, each naming its file and the dotted path of
//! the field (`outputs.O.tolerance.rtol`, `workloads[3].axes.M`); validation does not stop at
//! the first.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::document;
use super::file::{
    DistributionFile, OpFile, OrderedMap, SCHEMA, TargetFile, TaskFile, TensorFile, ToleranceFile,
    WorkloadFile,
};
use super::model::{
    ATTENDED_PAIRS, Axis, BASELINE_LIBRARIES, Baseline, DType, Distribution, KNOWN_FAMILIES,
    MAX_WORKLOAD_BYTES, Op, Target, TargetFamily, Task, TaskFamily, TaskId, TensorSpec, Tolerance,
    Workload, WorkloadKind, family_available,
};
use super::signature;
use crate::arch::Arch;
use crate::expr::{Expr, FUNCTIONS};

/// One thing wrong with a task file.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct Problem {
    pub file: PathBuf,
    /// Dotted path of the field (`outputs.O.tolerance.rtol`, `workloads[3].axes.M`); empty when
    /// the problem is the file itself (unreadable, not YAML).
    pub field: String,
    pub reason: String,
}

impl Problem {
    pub fn new(file: &Path, field: impl Into<String>, reason: impl Into<String>) -> Problem {
        Problem {
            file: file.to_path_buf(),
            field: field.into(),
            reason: reason.into(),
        }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.field.is_empty() {
            write!(f, "{}: {}", self.file.display(), self.reason)
        } else {
            write!(
                f,
                "{}: {}: {}",
                self.file.display(),
                self.field,
                self.reason
            )
        }
    }
}

/// Parses and validates one task file.
///
/// `file` is how problems name the file; `source` (the path relative to the suite directory) is
/// kept in [`Task::source`], and when it ends in `.yaml` the task id must equal its stem.
pub fn parse_task(text: &str, file: &Path, source: &Path) -> Result<Task, Vec<Problem>> {
    let raw = read_yaml::<TaskFile>(text, file)?;
    validate(&raw, file, source)
}

/// YAML text into a raw file struct; a syntax error names its line, a structural one its field.
pub(crate) fn read_yaml<T: serde::de::DeserializeOwned>(
    text: &str,
    file: &Path,
) -> Result<T, Vec<Problem>> {
    let tree = document::parse(text).map_err(|e| vec![Problem::new(file, "", e.to_string())])?;
    let dups = document::duplicate_keys(&tree);
    if !dups.is_empty() {
        return Err(dups
            .into_iter()
            .map(|(field, line)| {
                Problem::new(file, field, format!("key given twice (line {line})"))
            })
            .collect());
    }
    document::from_tree::<T>(&tree).map_err(|e| vec![Problem::new(file, e.field(), e.reason())])
}

/// Checks a raw task file and builds the task, or returns every problem found.
pub fn validate(raw: &TaskFile, file: &Path, source: &Path) -> Result<Task, Vec<Problem>> {
    let mut c = Checker {
        file,
        problems: Vec::new(),
    };
    let task = c.task(raw, source);
    match task {
        Some(t) if c.problems.is_empty() => Ok(t),
        _ if c.problems.is_empty() => Err(vec![Problem::new(file, "", "invalid task")]),
        _ => Err(c.problems),
    }
}

/// Whether `s` can name an axis or tensor (and be used in a formula).
pub fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    let starts_well = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
    starts_well
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && s.len() <= 32
        && !matches!(s, "true" | "false")
        && !FUNCTIONS.iter().any(|(f, _, _)| *f == s)
}

/// Whether `s` looks like a uuid: 32 hex digits, dashes allowed between them.
fn is_uuid(s: &str) -> bool {
    s.chars().all(|c| c.is_ascii_hexdigit() || c == '-')
        && s.chars().filter(char::is_ascii_hexdigit).count() == 32
        && !s.starts_with('-')
        && !s.ends_with('-')
}

fn is_sass_pattern(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || matches!(c, '_' | '.' | '*'))
}

fn is_workload_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '='))
}

struct Checker<'a> {
    file: &'a Path,
    problems: Vec<Problem>,
}

impl Checker<'_> {
    fn bad(&mut self, field: impl Into<String>, reason: impl Into<String>) {
        self.problems.push(Problem::new(self.file, field, reason));
    }

    fn task(&mut self, raw: &TaskFile, source: &Path) -> Option<Task> {
        if raw.schema != SCHEMA {
            self.bad(
                "schema",
                format!("this is schema {SCHEMA}; the file says {}", raw.schema),
            );
        }
        let id = self.id(&raw.id, source);
        let family = raw
            .family
            .parse::<TaskFamily>()
            .map_err(|e| self.bad("family", e))
            .ok();
        self.text_line("title", &raw.title);
        self.text("description", &raw.description);
        self.text("reference", &raw.reference);

        let axes = self.axes(&raw.axes);
        // Names as declared, valid or not: one bad axis is reported once, not at every use.
        let declared: Vec<&str> = raw.axes.keys().collect();
        let before = self.problems.len();
        let inputs = self.tensors("inputs", &raw.inputs, &declared, false);
        let outputs = self.tensors("outputs", &raw.outputs, &declared, true);
        let tensors_ok = self.problems.len() == before;
        self.cross_tensor_names(&raw.inputs, &raw.outputs);
        self.unused_axes(&axes, &raw.inputs, &raw.outputs);

        let op = self.op(&raw.op, family);
        if let Some(op) = &op {
            if tensors_ok {
                for (field, reason) in signature::check(op, &inputs, &outputs) {
                    self.bad(field, reason);
                }
            }
            for name in op.derived_inputs() {
                if raw
                    .inputs
                    .get(name)
                    .is_some_and(|t| t.distribution.is_some())
                {
                    self.bad(
                        format!("inputs.{name}.distribution"),
                        format!(
                            "`{name}` is computed from the other inputs by the reference forward pass; it is not drawn"
                        ),
                    );
                }
            }
        }
        let distribution = self.distribution("distribution", &raw.distribution);
        let baseline = self.baseline(raw);
        // A prefill's formulas may also use the (query, key) pairs its mask keeps, which each
        // workload's lengths fix; an axis may not take that name.
        let mut formula_names = declared.clone();
        if let Some(Op::AttentionPrefill { .. }) = op {
            if declared.contains(&ATTENDED_PAIRS) {
                self.bad(
                    format!("axes.{ATTENDED_PAIRS}"),
                    "a prefill binds this name from its workloads' lengths; choose another axis name",
                );
            }
            formula_names.push(ATTENDED_PAIRS);
        }
        let flops = self.formula("flops", &raw.flops.0, &formula_names);
        let bytes = self.formula("bytes", &raw.bytes.0, &formula_names);
        let workloads = self.workloads(&raw.workloads, &axes, &declared);
        let targets = self.targets(&raw.targets);

        // Formulas and tensor sizes must make sense for every workload.
        let op = op?;
        let roles = if tensors_ok {
            signature::roles(&op, &inputs, &outputs)
        } else {
            Default::default()
        };
        let task = Task {
            id: id?,
            family: family?,
            title: raw.title.trim().to_string(),
            description: raw.description.trim_end().to_string(),
            axes,
            inputs,
            outputs,
            op,
            reference: raw.reference.trim_end().to_string(),
            distribution: distribution?,
            baseline: baseline?,
            flops: flops?,
            bytes: bytes?,
            workloads,
            targets,
            source: source.to_path_buf(),
            roles,
        };
        // Evaluating formulas and sizes over a task that is already wrong only repeats its
        // problems at every workload.
        if self.problems.is_empty() {
            self.per_workload(&task, &raw.workloads);
        }
        Some(task)
    }

    fn id(&mut self, id: &str, source: &Path) -> Option<TaskId> {
        let parsed = TaskId::new(id).map_err(|e| self.bad("id", e)).ok();
        let is_yaml = source.extension().is_some_and(|e| e == "yaml");
        if let (true, Some(stem)) = (is_yaml, source.file_stem().and_then(|s| s.to_str()))
            && stem != id
        {
            self.bad(
                "id",
                format!("`{id}` does not match the file name `{stem}.yaml`"),
            );
        }
        parsed
    }

    fn text_line(&mut self, field: &str, s: &str) {
        if s.trim().is_empty() {
            self.bad(field, "must not be empty");
        } else if s.contains('\n') {
            self.bad(field, "must be a single line");
        }
    }

    fn text(&mut self, field: &str, s: &str) {
        if s.trim().is_empty() {
            self.bad(field, "must not be empty");
        }
    }

    fn axes(&mut self, raw: &OrderedMap<super::file::AxisFile>) -> Vec<Axis> {
        if raw.is_empty() {
            self.bad("axes", "a task needs at least one axis");
        }
        let mut out = Vec::new();
        for (name, a) in raw.iter() {
            let field = format!("axes.{name}");
            if !is_identifier(name) {
                self.bad(
                    &field,
                    "an axis name is an identifier ([A-Za-z_][A-Za-z0-9_]*, at most 32 characters, not a function name)",
                );
                continue;
            }
            let value = match (a.kind.as_str(), a.value) {
                ("var", None) => None,
                ("var", Some(_)) => {
                    self.bad(
                        format!("{field}.value"),
                        "a var axis has no value (workloads bind it)",
                    );
                    continue;
                }
                ("const", Some(v)) if v > 0 => Some(v),
                ("const", Some(v)) => {
                    self.bad(
                        format!("{field}.value"),
                        format!("must be positive, found {v}"),
                    );
                    continue;
                }
                ("const", None) => {
                    self.bad(format!("{field}.value"), "a const axis needs a value");
                    continue;
                }
                (other, _) => {
                    self.bad(
                        format!("{field}.type"),
                        format!("unknown axis type `{other}` (known: var, const)"),
                    );
                    continue;
                }
            };
            out.push(Axis {
                name: name.to_string(),
                value,
                description: a.description.clone().unwrap_or_default().trim().to_string(),
            });
        }
        out
    }

    fn tensors(
        &mut self,
        section: &str,
        raw: &OrderedMap<TensorFile>,
        declared: &[&str],
        output: bool,
    ) -> Vec<TensorSpec> {
        if raw.is_empty() {
            self.bad(section, "a task needs at least one tensor here");
        }
        let mut out = Vec::new();
        for (name, t) in raw.iter() {
            let field = format!("{section}.{name}");
            let before = self.problems.len();
            if !is_identifier(name) {
                self.bad(
                    &field,
                    "a tensor name is an identifier ([A-Za-z_][A-Za-z0-9_]*, at most 32 characters)",
                );
            }
            let dtype = t
                .dtype
                .parse::<DType>()
                .map_err(|e| self.bad(format!("{field}.dtype"), e))
                .ok();
            if t.shape.is_empty() {
                self.bad(
                    format!("{field}.shape"),
                    "a tensor has at least one dimension (write [1] for a scalar)",
                );
            }
            for (i, entry) in t.shape.iter().enumerate() {
                let entry = entry.0.as_str();
                let literal_ok = entry.parse::<i64>().is_ok_and(|v| v > 0);
                if !literal_ok && !declared.contains(&entry) {
                    self.bad(
                        format!("{field}.shape[{i}]"),
                        format!("`{entry}` is neither a declared axis nor a positive integer"),
                    );
                }
            }
            let distribution = match (&t.distribution, output) {
                (Some(_), true) => {
                    self.bad(
                        format!("{field}.distribution"),
                        "outputs are computed, not drawn: only inputs have a distribution",
                    );
                    None
                }
                (Some(d), false) => self.distribution(&format!("{field}.distribution"), d),
                (None, _) => None,
            };
            let tolerance = match (&t.tolerance, output) {
                (Some(_), false) => {
                    self.bad(
                        format!("{field}.tolerance"),
                        "inputs are not checked: only outputs have a tolerance",
                    );
                    None
                }
                (Some(tol), true) => self.tolerance(&format!("{field}.tolerance"), tol),
                (None, true) => {
                    self.bad(
                        format!("{field}.tolerance"),
                        "every output needs a tolerance (metric allclose or relnorm)",
                    );
                    None
                }
                (None, false) => None,
            };
            if let (Some(dtype), true) = (dtype, self.problems.len() == before) {
                out.push(TensorSpec {
                    name: name.to_string(),
                    dtype,
                    shape: t.shape.iter().map(|s| s.0.clone()).collect(),
                    description: t.description.clone().unwrap_or_default().trim().to_string(),
                    distribution,
                    tolerance,
                });
            }
        }
        out
    }

    fn cross_tensor_names(
        &mut self,
        inputs: &OrderedMap<TensorFile>,
        outputs: &OrderedMap<TensorFile>,
    ) {
        for name in outputs.keys() {
            if inputs.get(name).is_some() {
                self.bad(
                    format!("outputs.{name}"),
                    format!("`{name}` is also an input; tensor names are unique across inputs and outputs"),
                );
            }
        }
    }

    fn unused_axes(
        &mut self,
        axes: &[Axis],
        inputs: &OrderedMap<TensorFile>,
        outputs: &OrderedMap<TensorFile>,
    ) {
        for a in axes {
            let used = inputs
                .iter()
                .chain(outputs.iter())
                .any(|(_, t)| t.shape.iter().any(|s| s.0 == a.name));
            if !used {
                self.bad(format!("axes.{}", a.name), "no tensor shape uses this axis");
            }
        }
    }

    fn number(&mut self, field: &str, v: f64) -> Option<f64> {
        if v.is_finite() {
            Some(v)
        } else {
            self.bad(field, format!("must be a finite number, found {v}"));
            None
        }
    }

    /// `value` must be present for this `kind`.
    fn need(&mut self, field: &str, name: &str, value: Option<f64>, kind: &str) -> Option<f64> {
        let f = format!("{field}.{name}");
        match value {
            Some(v) => self.number(&f, v),
            None => {
                self.bad(f, format!("required when {kind}"));
                None
            }
        }
    }

    /// `value` must be absent for this `kind`.
    fn forbid(&mut self, field: &str, name: &str, value: Option<f64>, kind: &str) {
        if value.is_some() {
            self.bad(format!("{field}.{name}"), format!("not used when {kind}"));
        }
    }

    fn distribution(&mut self, field: &str, d: &DistributionFile) -> Option<Distribution> {
        let kind = format!("kind is `{}`", d.kind);
        let k = kind.as_str();
        let before = self.problems.len();
        let out = match d.kind.as_str() {
            "randn" => {
                let std = self.need(field, "std", d.std, k);
                self.forbid(field, "spike_std", d.spike_std, k);
                self.forbid(field, "spike_prob", d.spike_prob, k);
                self.forbid(field, "lo", d.lo, k);
                self.forbid(field, "hi", d.hi, k);
                Distribution::Randn { std: std? }
            }
            "spiky" => {
                let std = self.need(field, "std", d.std, k);
                let spike_std = self.need(field, "spike_std", d.spike_std, k);
                let spike_prob = self.need(field, "spike_prob", d.spike_prob, k);
                self.forbid(field, "lo", d.lo, k);
                self.forbid(field, "hi", d.hi, k);
                Distribution::Spiky {
                    std: std?,
                    spike_std: spike_std?,
                    spike_prob: spike_prob?,
                }
            }
            "uniform" => {
                let lo = self.need(field, "lo", d.lo, k);
                let hi = self.need(field, "hi", d.hi, k);
                self.forbid(field, "std", d.std, k);
                self.forbid(field, "spike_std", d.spike_std, k);
                self.forbid(field, "spike_prob", d.spike_prob, k);
                Distribution::Uniform { lo: lo?, hi: hi? }
            }
            other => {
                self.bad(
                    format!("{field}.kind"),
                    format!("unknown distribution `{other}` (known: randn, spiky, uniform)"),
                );
                return None;
            }
        };
        match out {
            Distribution::Randn { std } | Distribution::Spiky { std, .. } if std <= 0.0 => {
                self.bad(
                    format!("{field}.std"),
                    format!("must be positive, found {std}"),
                );
            }
            _ => {}
        }
        if let Distribution::Spiky {
            spike_std,
            spike_prob,
            ..
        } = out
        {
            if spike_std <= 0.0 {
                self.bad(
                    format!("{field}.spike_std"),
                    format!("must be positive, found {spike_std}"),
                );
            }
            if !(spike_prob > 0.0 && spike_prob < 1.0) {
                self.bad(
                    format!("{field}.spike_prob"),
                    format!("must be strictly between 0 and 1, found {spike_prob}"),
                );
            }
        }
        if let Distribution::Uniform { lo, hi } = out
            && lo >= hi
        {
            self.bad(
                format!("{field}.hi"),
                format!("must be greater than lo ({lo}), found {hi}"),
            );
        }
        (self.problems.len() == before).then_some(out)
    }

    fn tolerance(&mut self, field: &str, t: &ToleranceFile) -> Option<Tolerance> {
        let kind = format!("metric is `{}`", t.metric);
        let k = kind.as_str();
        let before = self.problems.len();
        let bounds: Vec<(&str, Option<f64>)>;
        let out = match t.metric.as_str() {
            "allclose" => {
                let rtol = self.need(field, "rtol", t.rtol, k);
                let atol = self.need(field, "atol", t.atol, k);
                self.forbid(field, "max", t.max, k);
                bounds = vec![
                    ("rtol", rtol),
                    ("atol", atol),
                    ("relnorm_max", t.relnorm_max),
                ];
                match (t.min_match, t.relnorm_max) {
                    (Some(_), Some(_)) => {
                        self.bad(
                            format!("{field}.relnorm_max"),
                            "cannot be given with min_match (give one of them)",
                        );
                        None
                    }
                    (None, Some(max)) => rtol
                        .zip(atol)
                        .map(|(rtol, atol)| Tolerance::AllcloseRelnorm { rtol, atol, max }),
                    (None, None) => rtol
                        .zip(atol)
                        .map(|(rtol, atol)| Tolerance::Allclose { rtol, atol }),
                    // Below 0.9 a kernel could skip a tenth of the work and pass.
                    (Some(m), None) if !(0.9..1.0).contains(&m) => {
                        self.bad(
                            format!("{field}.min_match"),
                            format!(
                                "must be at least 0.9 and below 1 (leave it out to require every element), found {m}"
                            ),
                        );
                        None
                    }
                    (Some(min_match), None) => {
                        rtol.zip(atol)
                            .map(|(rtol, atol)| Tolerance::AllcloseFraction {
                                rtol,
                                atol,
                                min_match,
                            })
                    }
                }
            }
            "relnorm" => {
                let max = self.need(field, "max", t.max, k);
                self.forbid(field, "rtol", t.rtol, k);
                self.forbid(field, "atol", t.atol, k);
                self.forbid(field, "min_match", t.min_match, k);
                self.forbid(field, "relnorm_max", t.relnorm_max, k);
                bounds = vec![("max", max)];
                max.map(|max| Tolerance::Relnorm { max })
            }
            other => {
                self.bad(
                    format!("{field}.metric"),
                    format!("unknown metric `{other}` (known: allclose, relnorm)"),
                );
                return None;
            }
        };
        for (name, v) in bounds {
            match v {
                Some(v) if v <= 0.0 => self.bad(
                    format!("{field}.{name}"),
                    format!("must be positive, found {v}"),
                ),
                // A relative bound of 1 accepts an all-zero output; an absolute one of 1 is
                // meaningless at unit-scale data.
                Some(v) if v >= 1.0 => self.bad(
                    format!("{field}.{name}"),
                    format!(
                        "must be below 1 (a bound this loose accepts wrong results), found {v}"
                    ),
                ),
                _ => {}
            }
        }
        if self.problems.len() == before {
            out
        } else {
            None
        }
    }

    fn op(&mut self, raw: &OpFile, family: Option<TaskFamily>) -> Option<Op> {
        let kind = match raw.kind.parse::<TaskFamily>() {
            Ok(k) => k,
            Err(_) => {
                let known: Vec<&str> = TaskFamily::ALL.iter().map(|f| f.as_str()).collect();
                self.bad(
                    "op.kind",
                    format!("unknown op `{}` (known: {})", raw.kind, known.join(", ")),
                );
                return None;
            }
        };
        let own: &[&str] = match kind {
            TaskFamily::Gemm => &["transpose_b"],
            TaskFamily::GemmFp8 => &["per_tensor_scales"],
            TaskFamily::AttentionFwd | TaskFamily::AttentionBwd | TaskFamily::AttentionFwdFp8 => {
                &["causal"]
            }
            TaskFamily::AttentionDecode | TaskFamily::AttentionMlaDecode => &["paged"],
            TaskFamily::AttentionPrefill => &["paged", "causal"],
            TaskFamily::GdnPrefill => &[],
        };
        let flags = [
            ("transpose_b", raw.transpose_b),
            ("per_tensor_scales", raw.per_tensor_scales),
            ("causal", raw.causal),
            ("paged", raw.paged),
        ];
        for (name, value) in flags {
            if value.is_some() && !own.contains(&name) {
                self.bad(
                    format!("op.{name}"),
                    format!("not a field of op `{}`", kind.as_str()),
                );
            }
        }
        let mut values = Vec::new();
        for name in own {
            let value = flags.iter().find(|(n, _)| n == name).and_then(|(_, v)| *v);
            match value {
                Some(v) => values.push(v),
                None => self.bad(
                    format!("op.{name}"),
                    format!("op `{}` needs `{name}: true|false`", kind.as_str()),
                ),
            }
        }
        if values.len() != own.len() {
            return None;
        }
        let flag = values.first().copied().unwrap_or(false);
        if let Some(f) = family
            && f != kind
        {
            self.bad(
                "op.kind",
                format!(
                    "op `{}` does not belong to family `{}`",
                    kind.as_str(),
                    f.as_str()
                ),
            );
        }
        Some(match kind {
            TaskFamily::Gemm => Op::Gemm { transpose_b: flag },
            TaskFamily::GemmFp8 => Op::GemmFp8 {
                per_tensor_scales: flag,
            },
            TaskFamily::AttentionFwd => Op::AttentionFwd { causal: flag },
            TaskFamily::AttentionBwd => Op::AttentionBwd { causal: flag },
            TaskFamily::AttentionFwdFp8 => Op::AttentionFwdFp8 { causal: flag },
            TaskFamily::AttentionDecode if !flag => {
                self.bad(
                    "op.paged",
                    "only paged decode is an op (`paged: true`); a dense KV cache is attention_fwd with one query",
                );
                return None;
            }
            TaskFamily::AttentionDecode => Op::AttentionDecode { paged: flag },
            TaskFamily::AttentionPrefill if !values[1] => {
                self.bad(
                    "op.causal",
                    "only causal prefill is an op (`causal: true`), as in the paper's code release",
                );
                return None;
            }
            TaskFamily::AttentionPrefill => Op::AttentionPrefill {
                paged: flag,
                causal: values[1],
            },
            TaskFamily::AttentionMlaDecode if !flag => {
                self.bad(
                    "op.paged",
                    "only paged MLA decode is an op (`paged: true`), as FlashInfer's mla_paged_decode",
                );
                return None;
            }
            TaskFamily::AttentionMlaDecode => Op::AttentionMlaDecode { paged: flag },
            TaskFamily::GdnPrefill => Op::GdnPrefill,
        })
    }

    fn baseline(&mut self, raw: &TaskFile) -> Option<Baseline> {
        let b = &raw.baseline;
        let before = self.problems.len();
        if !BASELINE_LIBRARIES.contains(&b.library.as_str()) {
            self.bad(
                "baseline.library",
                format!(
                    "unknown library `{}` (known: {})",
                    b.library,
                    BASELINE_LIBRARIES.join(", ")
                ),
            );
        }
        self.text_line("baseline.operation", &b.operation);
        (self.problems.len() == before).then(|| Baseline {
            library: b.library.clone(),
            operation: b.operation.trim().to_string(),
        })
    }

    fn formula(&mut self, field: &str, text: &str, declared: &[&str]) -> Option<Expr> {
        let e = Expr::parse(text)
            .map_err(|e| self.bad(field, e.to_string()))
            .ok()?;
        e.check_variables(declared.iter().copied())
            .map_err(|e| self.bad(field, e.to_string()))
            .ok()?;
        Some(e)
    }

    fn workloads(
        &mut self,
        raw: &[WorkloadFile],
        axes: &[Axis],
        declared: &[&str],
    ) -> Vec<Workload> {
        let mut out = Vec::new();
        let mut names: BTreeMap<&str, usize> = BTreeMap::new();
        let mut uuids: BTreeMap<&str, usize> = BTreeMap::new();
        let mut seen: Vec<(usize, WorkloadKind, BTreeMap<String, i64>)> = Vec::new();
        for (i, w) in raw.iter().enumerate() {
            let field = format!("workloads[{i}]");
            let before = self.problems.len();
            if !is_workload_name(&w.name) {
                self.bad(
                    format!("{field}.name"),
                    "a workload name is 1-64 characters of A-Z a-z 0-9 _ - . =",
                );
            } else if let Some(j) = names.insert(&w.name, i) {
                self.bad(
                    format!("{field}.name"),
                    format!("`{}` is also the name of workloads[{j}]", w.name),
                );
            }
            let kind = w
                .kind
                .parse::<WorkloadKind>()
                .map_err(|e| self.bad(format!("{field}.kind"), e))
                .ok();
            let mut bound = BTreeMap::new();
            for (name, value) in w.axes.iter() {
                let f = format!("{field}.axes.{name}");
                match axes.iter().find(|a| a.name == name) {
                    // Declared but invalid: already reported at `axes`.
                    None if declared.contains(&name) => {}
                    None => self.bad(f, format!("`{name}` is not an axis of this task")),
                    Some(Axis { value: Some(c), .. }) => self.bad(
                        f,
                        format!("`{name}` is a const axis (= {c}); workloads bind only var axes"),
                    ),
                    Some(_) if *value <= 0 => {
                        self.bad(f, format!("must be positive, found {value}"))
                    }
                    Some(_) => {
                        bound.insert(name.to_string(), *value);
                    }
                }
            }
            for a in axes.iter().filter(|a| a.is_var()) {
                if w.axes.get(&a.name).is_none() {
                    self.bad(
                        format!("{field}.axes"),
                        format!("missing a value for var axis `{}`", a.name),
                    );
                }
            }
            if let Some(uuid) = &w.uuid {
                if !is_uuid(uuid) {
                    self.bad(
                        format!("{field}.uuid"),
                        format!("`{uuid}` is not a uuid (32 hex digits, dashes allowed)"),
                    );
                } else if let Some(j) = uuids.insert(uuid, i) {
                    self.bad(
                        format!("{field}.uuid"),
                        format!("`{uuid}` is also the uuid of workloads[{j}]"),
                    );
                }
            }
            let Some(kind) = kind else { continue };
            if self.problems.len() != before {
                continue;
            }
            // Compared as written, so axes already reported as invalid do not look equal.
            let written: BTreeMap<String, i64> =
                w.axes.iter().map(|(k, v)| (k.to_string(), *v)).collect();
            if let Some((j, _, _)) = seen.iter().find(|(_, k, a)| *k == kind && *a == written) {
                self.bad(
                    field,
                    format!("binds the same axes as workloads[{j}] (both {kind})"),
                );
                continue;
            }
            seen.push((i, kind, written));
            let kv_lens = match &w.kv_lens {
                None => None,
                Some(l) if l.iter().any(|v| *v <= 0) => {
                    self.bad(
                        format!("{field}.kv_lens"),
                        "every sequence needs at least one KV token",
                    );
                    continue;
                }
                Some(l) => Some(l.iter().map(|&v| v as u64).collect()),
            };
            let qo_lens = match &w.qo_lens {
                None => None,
                Some(l) if l.iter().any(|v| *v <= 0) => {
                    self.bad(
                        format!("{field}.qo_lens"),
                        "every sequence needs at least one query token",
                    );
                    continue;
                }
                Some(l) => Some(l.iter().map(|&v| v as u64).collect()),
            };
            let seq_lens = match &w.seq_lens {
                None => None,
                Some(l) if l.iter().any(|v| *v <= 0) => {
                    self.bad(
                        format!("{field}.seq_lens"),
                        "every sequence needs at least one token",
                    );
                    continue;
                }
                Some(l) => Some(l.iter().map(|&v| v as u64).collect()),
            };
            out.push(Workload {
                name: w.name.clone(),
                kind,
                axes: bound,
                uuid: w.uuid.clone(),
                kv_lens,
                qo_lens,
                seq_lens,
            });
        }
        for kind in WorkloadKind::ALL {
            if !raw.iter().any(|w| w.kind == kind.as_str()) {
                self.bad(
                    "workloads",
                    format!("a task needs at least one {kind} workload"),
                );
            }
        }
        out
    }

    fn targets(&mut self, raw: &OrderedMap<TargetFile>) -> Vec<Target> {
        if raw.is_empty() {
            self.bad("targets", "a task needs a target for at least one arch");
        }
        let mut out = Vec::new();
        for (key, t) in raw.iter() {
            let field = format!("targets.{key}");
            let arch = match key.parse::<Arch>() {
                Ok(a) => a,
                Err(e) => {
                    self.bad(&field, e);
                    continue;
                }
            };
            let before = self.problems.len();
            if t.required.is_empty() {
                self.bad(
                    format!("{field}.required"),
                    "list at least one instruction family",
                );
            }
            let mut required = Vec::new();
            for (i, f) in t.required.iter().enumerate() {
                let ff = format!("{field}.required[{i}]");
                if !KNOWN_FAMILIES.contains(&f.family.as_str()) {
                    self.bad(
                        format!("{ff}.family"),
                        format!(
                            "unknown instruction family `{}` (known: {})",
                            f.family,
                            KNOWN_FAMILIES.join(", ")
                        ),
                    );
                } else if !family_available(&f.family, arch) {
                    self.bad(
                        format!("{ff}.family"),
                        format!("`{}` does not exist on {arch}", f.family),
                    );
                } else if t.required[..i].iter().any(|p| p.family == f.family) {
                    self.bad(
                        format!("{ff}.family"),
                        format!("`{}` is listed twice", f.family),
                    );
                }
                if f.sass.is_empty() {
                    self.bad(
                        format!("{ff}.sass"),
                        "list at least one SASS opcode pattern that proves the family ran",
                    );
                }
                for (j, p) in f.sass.iter().enumerate() {
                    if !is_sass_pattern(p) {
                        self.bad(
                            format!("{ff}.sass[{j}]"),
                            format!("`{p}` is not a SASS opcode pattern ([A-Z0-9_.*]+)"),
                        );
                    }
                }
                required.push(TargetFamily {
                    family: f.family.clone(),
                    sass: f.sass.clone(),
                });
            }
            if self.problems.len() == before {
                out.push(Target {
                    arch,
                    required,
                    notes: t.notes.clone().unwrap_or_default().trim().to_string(),
                });
            }
        }
        out.sort_by_key(|t| t.arch);
        out
    }

    /// Formulas positive and tensor sizes representable for every workload.
    fn per_workload(&mut self, task: &Task, raw: &[WorkloadFile]) {
        for (field, expr) in [("flops", &task.flops), ("bytes", &task.bytes)] {
            // One problem per formula, naming every workload it fails for.
            let mut failures = Vec::new();
            for w in &task.workloads {
                let i = raw.iter().position(|r| r.name == w.name).unwrap_or(0);
                match expr.eval_f64(&task.bindings(w)) {
                    Ok(v) if v.is_finite() && v > 0.0 => {}
                    Ok(v) => failures.push(format!("{v} for workloads[{i}] (`{}`)", w.name)),
                    Err(e) => failures.push(format!("workloads[{i}] (`{}`): {e}", w.name)),
                }
            }
            if !failures.is_empty() {
                self.bad(
                    field,
                    format!(
                        "must be positive for every workload; it is {}",
                        failures.join(", ")
                    ),
                );
            }
        }
        for w in &task.workloads {
            let i = raw.iter().position(|r| r.name == w.name).unwrap_or(0);
            let b = task.bindings(w);
            let mut total = 0u64;
            for t in task.inputs.iter().chain(&task.outputs) {
                match task.size_bytes(t, &b) {
                    Ok(n) => total = total.saturating_add(n),
                    Err(e) => self.bad(format!("workloads[{i}]"), e.to_string()),
                }
            }
            if total > MAX_WORKLOAD_BYTES {
                self.bad(
                    format!("workloads[{i}]"),
                    format!(
                        "`{}` needs {total} bytes of tensors; the harness allows at most {MAX_WORKLOAD_BYTES} ({} GiB) per workload, since it also holds fp32 copies, references and guards on one GPU",
                        w.name,
                        MAX_WORKLOAD_BYTES >> 30
                    ),
                );
            }
            if let Err(e) = task.problem(w) {
                self.bad(format!("workloads[{i}]"), e.to_string());
            }
            self.kv_lens(task, w, &format!("workloads[{i}]"));
            self.seq_lens(task, w, &format!("workloads[{i}]"));
        }
    }

    /// A GDN prefill workload's `seq_lens` agree with its axes: one length per sequence (the
    /// batch axis, `cu_seqlens` one entry longer), summing to the token axis. Other ops take no
    /// `seq_lens`, and a GDN workload no KV or query lengths.
    fn seq_lens(&mut self, task: &Task, w: &Workload, field: &str) {
        let gdn = matches!(task.op, Op::GdnPrefill);
        let Some(lens) = &w.seq_lens else {
            if gdn {
                self.bad(
                    format!("{field}.seq_lens"),
                    "a gdn_prefill workload lists the token count of each sequence",
                );
            }
            return;
        };
        if !gdn {
            self.bad(
                format!("{field}.seq_lens"),
                format!(
                    "only gdn_prefill workloads have sequence lengths, not op `{}`",
                    task.op.family()
                ),
            );
            return;
        }
        let Ok(super::ProblemSize::Gdn(d)) = task.problem(w) else {
            return;
        };
        let mut wrong = Vec::new();
        if lens.len() as u64 != d.batch {
            wrong.push(format!(
                "has {} lengths for a batch of {}",
                lens.len(),
                d.batch
            ));
        }
        let sum: u64 = lens.iter().sum();
        if sum != d.tokens {
            wrong.push(format!("sums to {sum}, but the token axis is {}", d.tokens));
        }
        if d.indptr != d.batch + 1 {
            wrong.push(format!(
                "cu_seqlens has {} entries for a batch of {} (needs batch + 1)",
                d.indptr, d.batch
            ));
        }
        for reason in wrong {
            self.bad(format!("{field}.seq_lens"), reason);
        }
    }

    /// A paged (GQA or MLA) decode workload's `kv_lens`, a prefill's `kv_lens` and `qo_lens`,
    /// agree with its axes: one length per sequence, summing to the token axes, indptrs one
    /// longer than the batch, enough pages, and (prefill) no query longer than its keys.
    fn kv_lens(&mut self, task: &Task, w: &Workload, field: &str) {
        let decode = matches!(
            task.op,
            Op::AttentionDecode { .. } | Op::AttentionMlaDecode { .. }
        );
        let prefill = matches!(task.op, Op::AttentionPrefill { .. });
        if w.qo_lens.is_some() && !prefill {
            self.bad(
                format!("{field}.qo_lens"),
                format!(
                    "only prefill workloads have query lengths, not op `{}`",
                    task.op.family()
                ),
            );
        }
        let Some(lens) = &w.kv_lens else {
            if decode || prefill {
                self.bad(
                    format!("{field}.kv_lens"),
                    format!(
                        "a {} workload lists the KV length of each sequence",
                        task.op.family()
                    ),
                );
            }
            return;
        };
        if !decode && !prefill {
            self.bad(
                format!("{field}.kv_lens"),
                format!(
                    "only paged decode and prefill workloads have KV lengths, not op `{}`",
                    task.op.family()
                ),
            );
            return;
        }
        if prefill {
            self.prefill_lens(task, w, lens, field);
            return;
        }
        // (batch, KV tokens, indptr entries, page size, pages) of a GQA or MLA decode.
        let (batch, tokens, indptr, page_size, pages) = match task.problem(w) {
            Ok(super::ProblemSize::Decode(d)) => {
                (d.batch, d.tokens, d.indptr, d.page_size, d.pages)
            }
            Ok(super::ProblemSize::MlaDecode(d)) => {
                (d.batch, d.tokens, d.indptr, d.page_size, d.pages)
            }
            _ => return,
        };
        let sum: u64 = lens.iter().sum();
        let mut wrong = Vec::new();
        if lens.len() as u64 != batch {
            wrong.push(format!("has {} lengths for a batch of {batch}", lens.len()));
        }
        if sum != tokens {
            wrong.push(format!("sums to {sum}, but the KV-token axis is {tokens}"));
        }
        if indptr != batch + 1 {
            wrong.push(format!(
                "kv_indptr has {indptr} entries for a batch of {batch} (needs batch + 1)"
            ));
        }
        wrong.extend(page_problems(page_size, pages, tokens));
        for reason in wrong {
            self.bad(format!("{field}.kv_lens"), reason);
        }
    }

    /// A prefill workload's lengths: as many query as KV lengths, one per sequence (the
    /// indptrs have one entry more), summing to the query- and KV-token axes, each query no
    /// longer than its keys (the causal mask is aligned to the last key).
    fn prefill_lens(&mut self, task: &Task, w: &Workload, kv: &[u64], field: &str) {
        let Some(qo) = &w.qo_lens else {
            self.bad(
                format!("{field}.qo_lens"),
                "a prefill workload lists the query length of each sequence",
            );
            return;
        };
        let Ok(super::ProblemSize::Prefill(d)) = task.problem(w) else {
            return;
        };
        let batch = d.batch();
        for (name, lens, total, axis) in [
            ("qo_lens", qo.as_slice(), d.qo_tokens, "query-token"),
            ("kv_lens", kv, d.kv_tokens, "KV-token"),
        ] {
            if lens.len() as u64 != batch {
                self.bad(
                    format!("{field}.{name}"),
                    format!(
                        "has {} lengths, but the indptr axis ({}) makes a batch of {batch}",
                        lens.len(),
                        d.indptr
                    ),
                );
            }
            let sum: u64 = lens.iter().sum();
            if sum != total {
                self.bad(
                    format!("{field}.{name}"),
                    format!("sums to {sum}, but the {axis} axis is {total}"),
                );
            }
        }
        if let Some(i) = qo.iter().zip(kv).position(|(q, k)| q > k) {
            self.bad(
                format!("{field}.qo_lens"),
                format!(
                    "sequence {i} has {} queries but {} keys; a prefill's queries are the last of its keys",
                    qo[i], kv[i]
                ),
            );
        }
        if let Some((pages, page_size)) = d.paged {
            for reason in page_problems(page_size, pages, d.kv_tokens) {
                self.bad(format!("{field}.kv_lens"), reason);
            }
        }
    }
}

/// Why a page table of `tokens` distinct pages cannot be drawn from this cache, if it cannot.
fn page_problems(page_size: u64, pages: u64, tokens: u64) -> Vec<String> {
    let mut wrong = Vec::new();
    if page_size != 1 {
        wrong.push(format!(
            "page size {page_size} (the harness draws page tables of page size 1)"
        ));
    }
    if pages < tokens {
        wrong.push(format!(
            "{pages} pages cannot hold {tokens} distinct KV tokens"
        ));
    }
    wrong
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What parsing `text` (the task file `file`) with `from` replaced by `to` refuses, in
    /// words; it must be refused.
    fn refused(text: &str, file: &Path, from: &str, to: &str) -> Vec<String> {
        assert!(text.contains(from), "{from}");
        parse_task(&text.replacen(from, to, 1), file, file)
            .expect_err("refused")
            .iter()
            .map(|p| p.to_string())
            .collect()
    }

    /// Some problem of `p` names `field` and says `words`.
    fn assert_refused(p: &[String], field: &str, words: &str) {
        assert!(
            p.iter().any(|m| m.contains(field) && m.contains(words)),
            "{field} / {words}: {p:?}"
        );
    }

    #[test]
    fn identifiers() {
        for ok in ["M", "seq_len", "_x", "D2"] {
            assert!(is_identifier(ok), "{ok}");
        }
        for bad in ["", "2D", "a-b", "min", "true", "a b"] {
            assert!(!is_identifier(bad), "{bad}");
        }
    }

    #[test]
    fn uuids_with_and_without_dashes() {
        assert!(is_uuid("3817345d-2b16-47dc-ae55-710bf42cfd86"));
        assert!(is_uuid("584d85771a40498fb56ad8b57c4049a4"));
        assert!(!is_uuid("584d85771a40498fb56ad8b57c4049a"));
        assert!(!is_uuid("-584d85771a40498fb56ad8b57c4049a4"));
        assert!(!is_uuid("zz4d85771a40498fb56ad8b57c4049a4"));
    }

    #[test]
    fn empty_and_non_map_documents_are_problems_not_panics() {
        let file = Path::new("x.yaml");
        for text in ["", "hello", "- 1\n- 2\n", "~", "{}"] {
            let problems = parse_task(text, file, file).expect_err("not a task");
            assert!(!problems.is_empty(), "{text:?}");
            assert!(problems.iter().all(|p| p.file == file), "{problems:?}");
        }
    }

    /// MLA decode: the committed task binds its roles (latent and rotary dims, the paged cache),
    /// its FLOPs count both products per KV token and head; workloads whose lengths disagree
    /// with their axes, a dense op, a rotary query of the latent width and query lengths are
    /// refused naming the field.
    #[test]
    fn mla_decode_sizes_lengths_and_op_are_checked() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tasks/attention_mla_decode/mla_paged_decode_h16_ckv512_kpe64_ps1.yaml");
        let text = std::fs::read_to_string(&path).expect("the committed task");
        let file = Path::new("mla_paged_decode_h16_ckv512_kpe64_ps1.yaml");
        let task = parse_task(&text, file, file).expect("the committed task is valid");
        assert_eq!(task.op, Op::AttentionMlaDecode { paged: true });
        let w = task.workload("B3_T212").expect("workload");
        assert_eq!(w.kv_lens.as_deref(), Some(&[17, 65, 130][..]));
        let Ok(super::super::ProblemSize::MlaDecode(d)) = task.problem(w) else {
            panic!("MLA sizes");
        };
        assert_eq!(
            (
                d.batch,
                d.heads,
                d.ckv_dim,
                d.pe_dim,
                d.pages,
                d.page_size,
                d.indptr,
                d.tokens
            ),
            (3, 16, 512, 64, 427, 1, 4, 212)
        );
        assert_eq!(
            task.flops_of(w).expect("flops"),
            (2 * 212 * 16 * (2 * 512 + 64)) as f64
        );
        let problems = |from: &str, to: &str| refused(&text, file, from, to);
        let p = problems("kv_lens: [17, 65, 130]", "kv_lens: [17, 65, 129]");
        assert_refused(&p, "workloads[1].kv_lens", "sums to 211");
        let p = problems("kv_lens: [17, 65, 130]", "kv_lens: [82, 130]");
        assert_refused(&p, "workloads[1].kv_lens", "2 lengths for a batch of 3");
        let p = problems(
            "kv_lens: [17, 65, 130]}",
            "kv_lens: [17, 65, 130], qo_lens: [1, 1, 1]}",
        );
        assert_refused(&p, "workloads[1].qo_lens", "only prefill");
        let p = problems("paged: true}", "paged: false}");
        assert_refused(&p, "op.paged", "only paged MLA decode");
        let p = problems(
            "shape: [batch_size, num_qo_heads, head_dim_kpe]",
            "shape: [batch_size, num_qo_heads, head_dim_ckv]",
        );
        assert_refused(&p, "inputs.kpe_cache.shape[2]", "`d_pe`");
    }

    /// GDN prefill: the committed task binds its roles (query/key and value heads, the packed
    /// tokens, the sequences), its FLOPs count three state products per token and value head;
    /// workloads whose sequence lengths disagree with their axes or are missing, KV lengths on
    /// a GDN workload, a state of the wrong head axis and a flag on the op are refused naming
    /// the field.
    #[test]
    fn gdn_prefill_sizes_lengths_and_op_are_checked() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tasks/gdn_prefill/gdn_prefill_qk4_v8_d128_k_last.yaml");
        let text = std::fs::read_to_string(&path).expect("the committed task");
        let file = Path::new("gdn_prefill_qk4_v8_d128_k_last.yaml");
        let task = parse_task(&text, file, file).expect("the committed task is valid");
        assert_eq!(task.op, Op::GdnPrefill);
        let w = task.workload("B3_T83").expect("workload");
        assert_eq!(w.seq_lens.as_deref(), Some(&[1, 17, 65][..]));
        let Ok(super::super::ProblemSize::Gdn(d)) = task.problem(w) else {
            panic!("GDN sizes");
        };
        assert_eq!(
            (d.batch, d.heads, d.v_heads, d.head_dim, d.indptr, d.tokens),
            (3, 4, 8, 128, 4, 83)
        );
        assert_eq!(
            task.flops_of(w).expect("flops"),
            (6 * 83 * 8 * 128 * 128) as f64
        );
        let problems = |from: &str, to: &str| refused(&text, file, from, to);
        let p = problems("seq_lens: [1, 17, 65]", "seq_lens: [1, 17, 64]");
        assert_refused(&p, "workloads[1].seq_lens", "sums to 82");
        let p = problems("seq_lens: [1, 17, 65]", "seq_lens: [18, 65]");
        assert_refused(&p, "workloads[1].seq_lens", "2 lengths for a batch of 3");
        let p = problems("seq_lens: [1, 17, 65]", "kv_lens: [1, 17, 65]");
        assert_refused(&p, "workloads[1].seq_lens", "token count");
        assert_refused(&p, "workloads[1].kv_lens", "not op `gdn_prefill`");
        let p = problems("seq_lens: [1, 17, 65]", "seq_lens: [1, 0, 82]");
        assert_refused(&p, "workloads[1].seq_lens", "at least one token");
        let p = problems(
            "shape: [num_seqs, num_v_heads, head_size, head_size], description: \"initial",
            "shape: [num_seqs, num_qk_heads, head_size, head_size], description: \"initial",
        );
        assert_refused(&p, "inputs.state.shape[1]", "`v_heads`");
        let p = problems(
            "op: {kind: gdn_prefill}",
            "op: {kind: gdn_prefill, paged: true}",
        );
        assert_refused(&p, "op.paged", "not a field");
    }

    /// Prefill workloads whose lengths disagree with their axes, or whose queries outnumber
    /// their keys, and a non-causal prefill op, are refused naming the field (issue 60).
    #[test]
    fn issue_60_prefill_lengths_and_op_are_checked() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tasks/attention_prefill/gqa_ragged_prefill_causal_h32_kv8_d128.yaml");
        let text = std::fs::read_to_string(&path).expect("the committed task");
        let file = Path::new("gqa_ragged_prefill_causal_h32_kv8_d128.yaml");
        let task = parse_task(&text, file, file).expect("the committed task is valid");
        let w = task.workload("B3_Q148_K171").expect("workload");
        assert_eq!(w.qo_lens.as_deref(), Some(&[1, 17, 130][..]));
        // 1*(1-1) + 1 + 17*23 + 153 + 130*131/2 pairs, bound for the FLOP formula.
        assert_eq!(task.bindings(w)[ATTENDED_PAIRS], 1 + 17 * 23 + 153 + 8515);
        let problems = |from: &str, to: &str| refused(&text, file, from, to);
        let p = problems("qo_lens: [1, 17, 130]", "qo_lens: [1, 100, 47]");
        assert_refused(
            &p,
            "workloads[1].qo_lens",
            "sequence 1 has 100 queries but 40 keys",
        );
        let p = problems("qo_lens: [1, 17, 130]", "qo_lens: [1, 17, 129]");
        assert_refused(&p, "workloads[1].qo_lens", "sums to 147");
        let p = problems(
            "kv_lens: [1, 40, 130], qo_lens",
            "kv_lens: [41, 130], qo_lens",
        );
        assert_refused(&p, "workloads[1].kv_lens", "has 2 lengths");
        let p = problems(", qo_lens: [1, 17, 130]", "");
        assert_refused(
            &p,
            "workloads[1].qo_lens",
            "lists the query length of each sequence",
        );
        let p = problems("causal: true}", "causal: false}");
        assert_refused(&p, "op.causal", "only causal prefill");
        let p = problems("paged: false, ", "");
        assert_refused(&p, "op.paged", "needs `paged: true|false`");
    }

    #[test]
    fn problems_display_file_field_reason() {
        let p = Problem::new(
            Path::new("tasks/gemm/x.yaml"),
            "outputs.C.tolerance",
            "missing",
        );
        assert_eq!(
            p.to_string(),
            "tasks/gemm/x.yaml: outputs.C.tolerance: missing"
        );
        let p = Problem::new(Path::new("x.yaml"), "", "YAML syntax error at line 3");
        assert_eq!(p.to_string(), "x.yaml: YAML syntax error at line 3");
    }
}
