//! The GPU's own counters for one kernel launch, through CUPTI's range profiler (the profiler
//! host API evaluates the metrics; no Perfworks calls of our own).
//!
//! One [`Profiler`] is made per timed workload, with groups of metric names the device offers
//! (read with [`base_metrics`]); it keeps one configuration per group and enables a range
//! profiler on the context for each measurement. Each group must fit one pass, so a measured launch runs once, with
//! no replay, exactly as it would unmeasured. [`Profiler::measure`] sets one group's
//! configuration, brackets one launch in a user range (start, push, launch, synchronise, pop,
//! stop), decodes the counter data and evaluates the group's metrics for that range.
//!
//! Every parameter struct carries CUPTI's own `..._STRUCT_SIZE` (the offset of its last field
//! plus that field's size), never Rust's `size_of`, which counts trailing padding: CUPTI reads
//! the size as the struct's version. What the counts mean is `evidence::hardware`'s
//! business; this module only reads them.
//!
//! Every call's status is checked and named in the error, so a device or driver that refuses
//! profiling (a sandboxed runtime, another profiler attached, counters locked to admins) says
//! which call refused and why.

use std::ffi::{CStr, CString, c_char};

use cudarc::cupti::sys;

use super::driver::Gpu;
use super::library::{self, CudaLibrary, LibraryNotFound};

/// A CUPTI call that failed, or CUPTI that could not be loaded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProfilerError {
    #[error("{call} failed: {name} ({description})")]
    Call {
        call: &'static str,
        name: String,
        description: String,
    },
    #[error("{0}")]
    Library(String),
    #[error(
        "the metrics need {passes} passes of the profiled launch; the measurement takes one (no replay): {metrics}"
    )]
    Passes { passes: usize, metrics: String },
    #[error("metric name {0:?} holds a NUL byte")]
    Name(String),
    #[error("cuptiRangeProfilerSetConfig refused every configuration offered: {0}")]
    Config(String),
    #[error("the profiler returned {got} ranges for one profiled launch")]
    Ranges { got: usize },
}

impl From<LibraryNotFound> for ProfilerError {
    fn from(e: LibraryNotFound) -> Self {
        ProfilerError::Library(e.to_string())
    }
}

fn check(call: &'static str, r: sys::CUptiResult) -> Result<(), ProfilerError> {
    if r == sys::CUptiResult::CUPTI_SUCCESS {
        return Ok(());
    }
    let mut p: *const c_char = std::ptr::null();
    // SAFETY: CUPTI writes a pointer to a static string, or leaves it null.
    let ok = unsafe { sys::cuptiGetResultString(r, &mut p) } == sys::CUptiResult::CUPTI_SUCCESS;
    let description = if ok && !p.is_null() {
        // SAFETY: non-null and NUL-terminated, owned by CUPTI for the process's life.
        unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
    } else {
        String::new()
    };
    Err(ProfilerError::Call {
        call,
        name: format!("{r:?}"),
        description,
    })
}

/// A parameter struct with CUPTI's `structSize` for it (the header's `..._STRUCT_SIZE`) and
/// everything else zeroed, as CUPTI expects.
macro_rules! params {
    ($t:ident, $size:ident) => {{
        // SAFETY: these are plain C structs of integers and pointers; all-zero is their
        // documented initial state.
        let mut p: sys::$t = unsafe { std::mem::zeroed() };
        p.structSize = sys::$size as usize;
        p
    }};
}

/// Loads CUPTI and initialises its profiler on the current context's device.
fn initialise() -> Result<(), ProfilerError> {
    library::load(CudaLibrary::Driver)?;
    library::load(CudaLibrary::Cupti)?;
    let mut p = params!(
        CUpti_Profiler_Initialize_Params,
        Profiler_Initialize_Params_STRUCT_SIZE
    );
    // SAFETY: a valid parameter struct; CUPTI keeps no pointer into it.
    check("cuptiProfilerInitialize", unsafe {
        sys::cuptiProfilerInitialize(&mut p)
    })
}

/// The device's chip name (`gh100`) and counter-availability image, read on `gpu`'s context.
fn chip_and_availability(gpu: &Gpu) -> Result<(CString, Vec<u8>), ProfilerError> {
    let mut chip = params!(
        CUpti_Device_GetChipName_Params,
        Device_GetChipName_Params_STRUCT_SIZE
    );
    chip.deviceIndex = usize::try_from(gpu.device()).unwrap_or(0);
    // SAFETY: valid parameters; the chip name points to CUPTI's static storage.
    check("cuptiDeviceGetChipName", unsafe {
        sys::cuptiDeviceGetChipName(&mut chip)
    })?;
    // SAFETY: non-null on success and NUL-terminated.
    let name = unsafe { CStr::from_ptr(chip.pChipName) }.to_owned();
    let mut avail = params!(
        CUpti_Profiler_GetCounterAvailability_Params,
        Profiler_GetCounterAvailability_Params_STRUCT_SIZE
    );
    avail.ctx = gpu.raw_context();
    // SAFETY: the first call asks for the size (null image).
    check("cuptiProfilerGetCounterAvailability", unsafe {
        sys::cuptiProfilerGetCounterAvailability(&mut avail)
    })?;
    let mut image = vec![0u8; avail.counterAvailabilityImageSize];
    avail.pCounterAvailabilityImage = image.as_mut_ptr();
    // SAFETY: the image has the size CUPTI asked for and outlives the call.
    check("cuptiProfilerGetCounterAvailability", unsafe {
        sys::cuptiProfilerGetCounterAvailability(&mut avail)
    })?;
    Ok((name, image))
}

/// The profiler host object for `chip`, freed on drop.
struct Host(*mut sys::CUpti_Profiler_Host_Object);

impl Host {
    fn new(chip: &CStr, availability: &[u8]) -> Result<Host, ProfilerError> {
        let mut p = params!(
            CUpti_Profiler_Host_Initialize_Params,
            Profiler_Host_Initialize_Params_STRUCT_SIZE
        );
        p.profilerType = sys::CUpti_ProfilerType::CUPTI_PROFILER_TYPE_RANGE_PROFILER;
        p.pChipName = chip.as_ptr();
        p.pCounterAvailabilityImage = availability.as_ptr();
        // SAFETY: the chip name and image outlive the call; CUPTI copies what it keeps.
        check("cuptiProfilerHostInitialize", unsafe {
            sys::cuptiProfilerHostInitialize(&mut p)
        })?;
        Ok(Host(p.pHostObject))
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        let mut p = params!(
            CUpti_Profiler_Host_Deinitialize_Params,
            Profiler_Host_Deinitialize_Params_STRUCT_SIZE
        );
        p.pHostObject = self.0;
        // SAFETY: the object this struct created, freed once.
        let _ = unsafe { sys::cuptiProfilerHostDeinitialize(&mut p) };
    }
}

/// The counter metrics (base names, without a rollup such as `.sum`) this device offers.
pub fn base_metrics(gpu: &Gpu) -> Result<Vec<String>, ProfilerError> {
    initialise()?;
    let (chip, availability) = chip_and_availability(gpu)?;
    let host = Host::new(&chip, &availability)?;
    let mut p = params!(
        CUpti_Profiler_Host_GetBaseMetrics_Params,
        Profiler_Host_GetBaseMetrics_Params_STRUCT_SIZE
    );
    p.pHostObject = host.0;
    p.metricType = sys::CUpti_MetricType::CUPTI_METRIC_TYPE_COUNTER;
    // SAFETY: valid parameters; the names point into the host object, read before it drops.
    check("cuptiProfilerHostGetBaseMetrics", unsafe {
        sys::cuptiProfilerHostGetBaseMetrics(&mut p)
    })?;
    let mut names = Vec::with_capacity(p.numMetrics);
    for i in 0..p.numMetrics {
        // SAFETY: CUPTI returned `numMetrics` valid NUL-terminated names.
        let name = unsafe { CStr::from_ptr(*p.ppMetricNames.add(i)) };
        names.push(name.to_string_lossy().into_owned());
    }
    Ok(names)
}

/// One group of metrics: its names, its configuration image and its counter data image.
struct Group {
    /// The host object the configuration was made with; it evaluates the group's values.
    host: Host,
    names: Vec<CString>,
    config: Vec<u8>,
    counter_data: Vec<u8>,
}

/// One range profiler on one context, configured for groups of metrics that each fit a pass.
pub struct Profiler {
    /// The context the range profilers are enabled on (the GPU's, current on this thread).
    context: cudarc::driver::sys::CUcontext,
    groups: Vec<Group>,
    /// The target nesting level `cuptiRangeProfilerSetConfig` accepted, once one was.
    nesting: Option<u16>,
}

impl std::fmt::Debug for Profiler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&[CString]> = self.groups.iter().map(|g| g.names.as_slice()).collect();
        f.debug_struct("Profiler")
            .field("groups", &names)
            .finish_non_exhaustive()
    }
}

fn c_names(metrics: &[String]) -> Result<Vec<CString>, ProfilerError> {
    metrics
        .iter()
        .map(|m| CString::new(m.as_str()).map_err(|_| ProfilerError::Name(m.clone())))
        .collect()
}

/// The configuration image of `names` on `host`; fails unless it fits one pass.
fn config_image(host: &Host, names: &[CString]) -> Result<Vec<u8>, ProfilerError> {
    let mut pointers: Vec<*const c_char> = names.iter().map(|n| n.as_ptr()).collect();
    let mut add = params!(
        CUpti_Profiler_Host_ConfigAddMetrics_Params,
        Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE
    );
    add.pHostObject = host.0;
    add.ppMetricNames = pointers.as_mut_ptr();
    add.numMetrics = pointers.len();
    // SAFETY: `pointers` holds `numMetrics` live NUL-terminated names.
    check("cuptiProfilerHostConfigAddMetrics", unsafe {
        sys::cuptiProfilerHostConfigAddMetrics(&mut add)
    })?;
    let mut size = params!(
        CUpti_Profiler_Host_GetConfigImageSize_Params,
        Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE
    );
    size.pHostObject = host.0;
    // SAFETY: valid parameters.
    check("cuptiProfilerHostGetConfigImageSize", unsafe {
        sys::cuptiProfilerHostGetConfigImageSize(&mut size)
    })?;
    let mut config = vec![0u8; size.configImageSize];
    let mut image = params!(
        CUpti_Profiler_Host_GetConfigImage_Params,
        Profiler_Host_GetConfigImage_Params_STRUCT_SIZE
    );
    image.pHostObject = host.0;
    image.configImageSize = config.len();
    image.pConfigImage = config.as_mut_ptr();
    // SAFETY: the buffer has the size CUPTI asked for.
    check("cuptiProfilerHostGetConfigImage", unsafe {
        sys::cuptiProfilerHostGetConfigImage(&mut image)
    })?;
    let mut passes = params!(
        CUpti_Profiler_Host_GetNumOfPasses_Params,
        Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE
    );
    passes.configImageSize = config.len();
    passes.pConfigImage = config.as_mut_ptr();
    // SAFETY: the config image just written.
    check("cuptiProfilerHostGetNumOfPasses", unsafe {
        sys::cuptiProfilerHostGetNumOfPasses(&mut passes)
    })?;
    if passes.numOfPasses != 1 {
        return Err(ProfilerError::Passes {
            passes: passes.numOfPasses,
            metrics: names
                .iter()
                .map(|n| n.to_string_lossy())
                .collect::<Vec<_>>()
                .join(", "),
        });
    }
    Ok(config)
}

/// The counter data image size for `names` on the enabled `object` (one range, one node).
fn counter_data_size(
    object: *mut sys::CUpti_RangeProfiler_Object,
    names: &[CString],
) -> Result<usize, ProfilerError> {
    let mut pointers: Vec<*const c_char> = names.iter().map(|n| n.as_ptr()).collect();
    let mut data = params!(
        CUpti_RangeProfiler_GetCounterDataSize_Params,
        RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE
    );
    data.pRangeProfilerObject = object;
    data.pMetricNames = pointers.as_mut_ptr();
    data.numMetrics = pointers.len();
    data.maxNumOfRanges = 1;
    data.maxNumRangeTreeNodes = 1;
    // SAFETY: the enabled object and live names.
    check("cuptiRangeProfilerGetCounterDataSize", unsafe {
        sys::cuptiRangeProfilerGetCounterDataSize(&mut data)
    })?;
    Ok(data.counterDataSize)
}

impl Profiler {
    /// A profiler of `groups` of metrics (full names with their rollup:
    /// `sm__inst_executed.sum`) on `gpu`'s context. Fails, before anything is enabled, when a
    /// group does not fit one pass.
    pub fn new(gpu: &Gpu, groups: &[Vec<String>]) -> Result<Profiler, ProfilerError> {
        initialise()?;
        let (chip, availability) = chip_and_availability(gpu)?;
        // One host object per configuration: metrics added to a host object accumulate.
        let mut prepared = Vec::with_capacity(groups.len());
        for metrics in groups {
            let names = c_names(metrics)?;
            let host = Host::new(&chip, &availability)?;
            let config = config_image(&host, &names)?;
            prepared.push((host, names, config));
        }

        let mut profiler = Profiler {
            context: gpu.raw_context(),
            groups: Vec::with_capacity(prepared.len()),
            nesting: None,
        };
        for (host, names, config) in prepared {
            profiler.groups.push(Group {
                host,
                names,
                config,
                counter_data: Vec::new(),
            });
        }
        Ok(profiler)
    }

    /// How many groups this profiler measures.
    pub fn groups(&self) -> usize {
        self.groups.len()
    }

    /// Runs `launch` (which enqueues the candidate's launches on the context's stream and
    /// waits for them) inside one profiled range under group `group`'s configuration and
    /// returns each of its metrics' values for it, in the order given to [`Profiler::new`].
    /// The outer error is `launch`'s own (the candidate's), the inner one the profiler's.
    pub fn measure<E>(
        &mut self,
        group: usize,
        launch: impl FnOnce() -> Result<(), E>,
    ) -> Result<Result<Vec<f64>, ProfilerError>, E> {
        match self.measure_range(group, launch) {
            Ok(values) => Ok(Ok(values)),
            Err(Failed::Launch(e)) => Err(e),
            Err(Failed::Profiler(e)) => Ok(Err(e)),
        }
    }

    fn measure_range<E>(
        &mut self,
        group: usize,
        launch: impl FnOnce() -> Result<(), E>,
    ) -> Result<Vec<f64>, Failed<E>> {
        // A range profiler of its own for each measurement: with one object enabled for all
        // of them, an H100 returned values for the first group configured and none for the
        // second, on every launch.
        let enabled = Enabled::new(self.context)?;
        let object = enabled.0;
        let Group {
            host,
            names,
            config,
            counter_data,
        } = &mut self.groups[group];
        let host = host.0;
        // The image is sized for this group on this object right before it is initialised,
        // as in CUPTI's own samples (an object initialises an image for the metrics of its
        // last size query).
        let size = counter_data_size(object, names)?;
        counter_data.clear();
        counter_data.resize(size, 0);
        let mut init = params!(
            CUpti_RangeProfiler_CounterDataImage_Initialize_Params,
            RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE
        );
        init.pRangeProfilerObject = object;
        init.counterDataSize = counter_data.len();
        init.pCounterData = counter_data.as_mut_ptr();
        // SAFETY: the counter data buffer has the size CUPTI asked for.
        check("cuptiRangeProfilerCounterDataImageInitialize", unsafe {
            sys::cuptiRangeProfilerCounterDataImageInitialize(&mut init)
        })?;
        let mut set = params!(
            CUpti_RangeProfiler_SetConfig_Params,
            RangeProfiler_SetConfig_Params_STRUCT_SIZE
        );
        set.pRangeProfilerObject = object;
        set.configSize = config.len();
        set.pConfig = config.as_ptr();
        set.counterDataImageSize = counter_data.len();
        set.pCounterDataImage = counter_data.as_mut_ptr();
        set.range = sys::CUpti_ProfilerRange::CUPTI_UserRange;
        set.replayMode = sys::CUpti_ProfilerReplayMode::CUPTI_UserReplay;
        set.maxRangesPerPass = 1;
        set.numNestingLevels = 1;
        set.minNestingLevel = 1;
        set.passIndex = 0;
        // The level of the one range profiled: 1 with one level starting at 1. CUPTI's own
        // samples pass 0 here; a CUPTI that refuses one value is offered the other, and the
        // accepted one is kept for this profiler's later launches.
        let levels = match self.nesting {
            Some(level) => vec![level],
            None => vec![1, 0],
        };
        let mut refused = Vec::new();
        for level in levels {
            set.targetNestingLevel = level;
            // SAFETY: both images live in `self` for as long as the object uses them.
            match check("cuptiRangeProfilerSetConfig", unsafe {
                sys::cuptiRangeProfilerSetConfig(&mut set)
            }) {
                Ok(()) => {
                    self.nesting = Some(level);
                    refused.clear();
                    break;
                }
                Err(e) => refused.push(format!("target nesting level {level}: {e}")),
            }
        }
        if !refused.is_empty() {
            return Err(ProfilerError::Config(refused.join("; ")).into());
        }
        let mut start = params!(
            CUpti_RangeProfiler_Start_Params,
            RangeProfiler_Start_Params_STRUCT_SIZE
        );
        start.pRangeProfilerObject = object;
        // SAFETY: the configured object.
        check("cuptiRangeProfilerStart", unsafe {
            sys::cuptiRangeProfilerStart(&mut start)
        })?;
        let range = c"timed-launch";
        let mut push = params!(
            CUpti_RangeProfiler_PushRange_Params,
            RangeProfiler_PushRange_Params_STRUCT_SIZE
        );
        push.pRangeProfilerObject = object;
        push.pRangeName = range.as_ptr();
        // SAFETY: a static name.
        let pushed = check("cuptiRangeProfilerPushRange", unsafe {
            sys::cuptiRangeProfilerPushRange(&mut push)
        });
        let mut popped = Ok(());
        let launched = match pushed {
            Ok(()) => {
                let launched = launch();
                let mut pop = params!(
                    CUpti_RangeProfiler_PopRange_Params,
                    RangeProfiler_PopRange_Params_STRUCT_SIZE
                );
                pop.pRangeProfilerObject = object;
                // SAFETY: closes the range pushed above.
                popped = check("cuptiRangeProfilerPopRange", unsafe {
                    sys::cuptiRangeProfilerPopRange(&mut pop)
                });
                Some(launched)
            }
            Err(_) => None,
        };
        let mut stop = params!(
            CUpti_RangeProfiler_Stop_Params,
            RangeProfiler_Stop_Params_STRUCT_SIZE
        );
        stop.pRangeProfilerObject = object;
        // SAFETY: ends the pass started above.
        let stopped = check("cuptiRangeProfilerStop", unsafe {
            sys::cuptiRangeProfilerStop(&mut stop)
        });
        if let Some(Err(e)) = launched {
            return Err(Failed::Launch(e));
        }
        pushed?;
        popped?;
        stopped?;
        let mut decode = params!(
            CUpti_RangeProfiler_DecodeData_Params,
            RangeProfiler_DecodeData_Params_STRUCT_SIZE
        );
        decode.pRangeProfilerObject = object;
        // SAFETY: the pass has ended.
        check("cuptiRangeProfilerDecodeData", unsafe {
            sys::cuptiRangeProfilerDecodeData(&mut decode)
        })?;
        let mut info = params!(
            CUpti_RangeProfiler_GetCounterDataInfo_Params,
            RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE
        );
        info.pCounterDataImage = counter_data.as_ptr();
        info.counterDataImageSize = counter_data.len();
        // SAFETY: the decoded counter data.
        check("cuptiRangeProfilerGetCounterDataInfo", unsafe {
            sys::cuptiRangeProfilerGetCounterDataInfo(&mut info)
        })?;
        if info.numTotalRanges != 1 {
            return Err(ProfilerError::Ranges {
                got: info.numTotalRanges,
            }
            .into());
        }
        let mut pointers: Vec<*const c_char> = names.iter().map(|n| n.as_ptr()).collect();
        let mut values = vec![f64::NAN; pointers.len()];
        let mut eval = params!(
            CUpti_Profiler_Host_EvaluateToGpuValues_Params,
            Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE
        );
        eval.pHostObject = host;
        eval.pCounterDataImage = counter_data.as_ptr();
        eval.counterDataImageSize = counter_data.len();
        eval.rangeIndex = 0;
        eval.ppMetricNames = pointers.as_mut_ptr();
        eval.numMetrics = pointers.len();
        eval.pMetricValues = values.as_mut_ptr();
        // SAFETY: one output slot per name; all buffers outlive the call.
        check("cuptiProfilerHostEvaluateToGpuValues", unsafe {
            sys::cuptiProfilerHostEvaluateToGpuValues(&mut eval)
        })?;
        Ok(values)
    }
}

/// Why a measured range produced no values.
enum Failed<E> {
    Launch(E),
    Profiler(ProfilerError),
}

impl<E> From<ProfilerError> for Failed<E> {
    fn from(e: ProfilerError) -> Self {
        Failed::Profiler(e)
    }
}

/// A range profiler enabled on a context for one measurement, disabled on drop.
struct Enabled(*mut sys::CUpti_RangeProfiler_Object);

impl Enabled {
    fn new(context: cudarc::driver::sys::CUcontext) -> Result<Enabled, ProfilerError> {
        let mut enable = params!(
            CUpti_RangeProfiler_Enable_Params,
            RangeProfiler_Enable_Params_STRUCT_SIZE
        );
        enable.ctx = context;
        // SAFETY: the profiler's context, current on this thread.
        check("cuptiRangeProfilerEnable", unsafe {
            sys::cuptiRangeProfilerEnable(&mut enable)
        })?;
        Ok(Enabled(enable.pRangeProfilerObject))
    }
}

impl Drop for Enabled {
    fn drop(&mut self) {
        let mut p = params!(
            CUpti_RangeProfiler_Disable_Params,
            RangeProfiler_Disable_Params_STRUCT_SIZE
        );
        p.pRangeProfilerObject = self.0;
        // SAFETY: the object `new` enabled, disabled once.
        let _ = unsafe { sys::cuptiRangeProfilerDisable(&mut p) };
    }
}

#[cfg(test)]
mod tests {
    use super::sys;
    use std::mem::offset_of;

    /// CUPTI's `CUPTI_PROFILER_STRUCT_SIZE(type, last)`: the offset of the last field plus its
    /// size, without trailing padding.
    macro_rules! header_size {
        ($t:ident, $last:ident) => {{
            let p: sys::$t = unsafe { std::mem::zeroed() };
            offset_of!(sys::$t, $last) + std::mem::size_of_val(&p.$last)
        }};
    }

    #[test]
    fn every_parameter_struct_carries_the_headers_size_not_rusts() {
        let cases = [
            (
                "Profiler_Initialize",
                sys::Profiler_Initialize_Params_STRUCT_SIZE,
                header_size!(CUpti_Profiler_Initialize_Params, pPriv),
            ),
            (
                "Device_GetChipName",
                sys::Device_GetChipName_Params_STRUCT_SIZE,
                header_size!(CUpti_Device_GetChipName_Params, pChipName),
            ),
            (
                "Profiler_GetCounterAvailability",
                sys::Profiler_GetCounterAvailability_Params_STRUCT_SIZE,
                header_size!(
                    CUpti_Profiler_GetCounterAvailability_Params,
                    pCounterAvailabilityImage
                ),
            ),
            (
                "Profiler_Host_Initialize",
                sys::Profiler_Host_Initialize_Params_STRUCT_SIZE,
                header_size!(CUpti_Profiler_Host_Initialize_Params, pHostObject),
            ),
            (
                "Profiler_Host_ConfigAddMetrics",
                sys::Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE,
                header_size!(CUpti_Profiler_Host_ConfigAddMetrics_Params, numMetrics),
            ),
            (
                "Profiler_Host_GetConfigImage",
                sys::Profiler_Host_GetConfigImage_Params_STRUCT_SIZE,
                header_size!(CUpti_Profiler_Host_GetConfigImage_Params, pConfigImage),
            ),
            (
                "Profiler_Host_EvaluateToGpuValues",
                sys::Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE,
                header_size!(
                    CUpti_Profiler_Host_EvaluateToGpuValues_Params,
                    pMetricValues
                ),
            ),
            (
                "RangeProfiler_Enable",
                sys::RangeProfiler_Enable_Params_STRUCT_SIZE,
                header_size!(CUpti_RangeProfiler_Enable_Params, pRangeProfilerObject),
            ),
            (
                "RangeProfiler_GetCounterDataSize",
                sys::RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE,
                header_size!(
                    CUpti_RangeProfiler_GetCounterDataSize_Params,
                    counterDataSize
                ),
            ),
            (
                "RangeProfiler_SetConfig",
                sys::RangeProfiler_SetConfig_Params_STRUCT_SIZE,
                header_size!(CUpti_RangeProfiler_SetConfig_Params, targetNestingLevel),
            ),
            (
                "RangeProfiler_Stop",
                sys::RangeProfiler_Stop_Params_STRUCT_SIZE,
                header_size!(CUpti_RangeProfiler_Stop_Params, isAllPassSubmitted),
            ),
        ];
        for (name, constant, computed) in cases {
            assert_eq!(constant as usize, computed, "{name}");
        }
        // The struct whose padding the first device runs sent: 90 bytes, not 96.
        assert_eq!(sys::RangeProfiler_SetConfig_Params_STRUCT_SIZE, 90);
        assert_ne!(
            sys::RangeProfiler_SetConfig_Params_STRUCT_SIZE as usize,
            std::mem::size_of::<sys::CUpti_RangeProfiler_SetConfig_Params>()
        );
    }
}
