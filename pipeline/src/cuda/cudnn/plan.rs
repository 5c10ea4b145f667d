//! Engine configurations: heuristics mode A's (the fallback list's when none of A's finalizes),
//! up to [`CONFIGS`] whose execution plans finalize, each described in words (global index,
//! mode, plan JSON), for the baseline to time and keep the fastest.

use cudarc::cudnn::sys;
use sys::cudnnBackendAttributeName_t as A;
use sys::cudnnBackendAttributeType_t as T;
use sys::cudnnBackendDescriptorType_t as D;

use super::graph::SdpaKind;
use super::{Api, Desc, DnnError, Handle};

/// How many finalized engine configurations are kept to be timed.
pub const CONFIGS: usize = 6;

/// One finalized execution plan and its engine in words.
pub(super) struct Plan {
    pub(super) desc: Desc,
    pub(super) words: String,
    pub(super) workspace: i64,
}

/// Heuristics mode A's configurations whose plans finalize (the first [`CONFIGS`], in the
/// heuristic's order, an engine with the same knobs once), or the fallback list's when none of
/// A's does: the fallback engines are slower by design, and each finalized plan costs setup
/// time (some engines are compiled at run time). At least one, or why none.
pub(super) fn candidate_plans(
    api: &'static Api,
    handle: &Handle,
    graph: &Desc,
    kind: SdpaKind,
) -> Result<Vec<Plan>, DnnError> {
    let mut tried = Vec::new();
    let mut plans: Vec<Plan> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for (mode, mode_name) in [
        (sys::cudnnBackendHeurMode_t::CUDNN_HEUR_MODE_A, "A"),
        (
            sys::cudnnBackendHeurMode_t::CUDNN_HEUR_MODE_FALLBACK,
            "fallback",
        ),
    ] {
        if !plans.is_empty() {
            break;
        }
        let configs = match heuristic_configs(api, graph, mode) {
            Ok(c) => c,
            Err(e) => {
                tried.push(format!("heuristics {mode_name}: {e}"));
                continue;
            }
        };
        if configs.is_empty() {
            tried.push(format!("heuristics {mode_name}: no configurations"));
        }
        for (i, cfg) in configs.iter().enumerate() {
            if plans.len() >= CONFIGS {
                break;
            }
            let attempt = (|| -> Result<Desc, DnnError> {
                let plan = Desc::new(api, D::CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR)?;
                plan.set(
                    A::CUDNN_ATTR_EXECUTION_PLAN_HANDLE,
                    T::CUDNN_TYPE_HANDLE,
                    &[handle.raw],
                )?;
                plan.set_desc(A::CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, &[cfg])?;
                plan.finalize("execution plan")?;
                Ok(plan)
            })();
            match attempt {
                Ok(plan) => {
                    let index = engine_index(api, cfg).map_or_else(
                        |e| format!("engine index unknown ({e})"),
                        |g| format!("engine {g}"),
                    );
                    let json = plan_json(api, &plan).unwrap_or_default();
                    // The same engine with the same knobs, offered twice, is timed once.
                    if !seen.insert(format!("{index} {json}")) {
                        continue;
                    }
                    let workspace = plan.get_i64(A::CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE)?;
                    let mut words = format!(
                        "{index} (heuristics mode {mode_name}, configuration {} of {})",
                        i + 1,
                        configs.len()
                    );
                    if !json.is_empty() {
                        words.push_str(&format!(", plan {json}"));
                    }
                    plans.push(Plan {
                        desc: plan,
                        words,
                        workspace,
                    });
                }
                Err(e) => tried.push(format!("mode {mode_name} configuration {}: {e}", i + 1)),
            }
        }
    }
    if plans.is_empty() {
        return Err(DnnError::NoEngine {
            graph: kind.graph_name(),
            tried: tried.join("; "),
        });
    }
    Ok(plans)
}

fn heuristic_configs(
    api: &'static Api,
    graph: &Desc,
    mode: sys::cudnnBackendHeurMode_t,
) -> Result<Vec<Desc>, DnnError> {
    let heur = Desc::new(api, D::CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR)?;
    heur.set_desc(A::CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, &[graph])?;
    heur.set(
        A::CUDNN_ATTR_ENGINEHEUR_MODE,
        T::CUDNN_TYPE_HEUR_MODE,
        &[mode],
    )?;
    heur.finalize("engine heuristics")?;
    let mut count = 0i64;
    // SAFETY: a count query with no output array.
    api.check("get heuristic result count", unsafe {
        (api.get_attr)(
            heur.raw,
            A::CUDNN_ATTR_ENGINEHEUR_RESULTS,
            T::CUDNN_TYPE_BACKEND_DESCRIPTOR,
            0,
            &mut count,
            std::ptr::null_mut(),
        )
    })?;
    let count = count.clamp(0, 64);
    let configs: Vec<Desc> = (0..count)
        .map(|_| Desc::new(api, D::CUDNN_BACKEND_ENGINECFG_DESCRIPTOR))
        .collect::<Result<_, _>>()?;
    let mut raws: Vec<sys::cudnnBackendDescriptor_t> = configs.iter().map(|c| c.raw).collect();
    let mut got = 0i64;
    // SAFETY: `raws` holds `count` engine-config descriptors for cuDNN to fill.
    api.check("get heuristic results", unsafe {
        (api.get_attr)(
            heur.raw,
            A::CUDNN_ATTR_ENGINEHEUR_RESULTS,
            T::CUDNN_TYPE_BACKEND_DESCRIPTOR,
            count,
            &mut got,
            raws.as_mut_ptr().cast(),
        )
    })?;
    let mut configs = configs;
    configs.truncate(usize::try_from(got.clamp(0, count)).unwrap_or(0));
    Ok(configs)
}

fn engine_index(api: &'static Api, cfg: &Desc) -> Result<i64, DnnError> {
    let engine = Desc::new(api, D::CUDNN_BACKEND_ENGINE_DESCRIPTOR)?;
    let mut n = 0i64;
    let mut raw = engine.raw;
    // SAFETY: one descriptor out-value, created above for cuDNN to fill.
    api.check("get engine", unsafe {
        (api.get_attr)(
            cfg.raw,
            A::CUDNN_ATTR_ENGINECFG_ENGINE,
            T::CUDNN_TYPE_BACKEND_DESCRIPTOR,
            1,
            &mut n,
            (&raw mut raw).cast(),
        )
    })?;
    engine.get_i64(A::CUDNN_ATTR_ENGINE_GLOBAL_INDEX)
}

/// The plan's own JSON description (engine name and knob choices), when cuDNN gives one.
fn plan_json(api: &'static Api, plan: &Desc) -> Option<String> {
    let get = |buf: &mut [u8], n: &mut i64| {
        // SAFETY: a character array of `buf.len()` bytes (none for the size query) for cuDNN
        // to fill.
        unsafe {
            (api.get_attr)(
                plan.raw,
                A::CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION,
                T::CUDNN_TYPE_CHAR,
                buf.len() as i64,
                n,
                if buf.is_empty() {
                    std::ptr::null_mut()
                } else {
                    buf.as_mut_ptr().cast()
                },
            )
        }
    };
    let mut n = 0i64;
    if get(&mut [], &mut n) != sys::cudnnStatus_t::CUDNN_STATUS_SUCCESS || n <= 0 {
        return None;
    }
    let mut buf = vec![0u8; usize::try_from(n).ok()?.min(1 << 16) + 1];
    if get(&mut buf, &mut n) != sys::cudnnStatus_t::CUDNN_STATUS_SUCCESS {
        return None;
    }
    let end = buf.iter().position(|&c| c == 0).unwrap_or(buf.len());
    let text = String::from_utf8_lossy(&buf[..end]).trim().to_string();
    (!text.is_empty()).then_some(text)
}
