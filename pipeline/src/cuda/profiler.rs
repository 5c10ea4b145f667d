//! The GPU's own counters for one kernel launch, through CUPTI's range profiler (the profiler
//! host API evaluates the metrics; no Perfworks calls of our own).
//!
//! One [`Profiler`] is made per timed workload, with metric names the device offers (read with
//! [`base_metrics`]); its configuration must fit one pass, so a measured launch runs once, with
//! no replay, exactly as it would unmeasured. [`Profiler::measure`] brackets one launch in a
//! user range (start, push, launch, synchronise, pop, stop), decodes the counter data and
//! evaluates every metric for that range. What the counts mean is `evidence::hardware`'s
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

/// A parameter struct with its `structSize` set and everything else zeroed, as CUPTI expects.
macro_rules! params {
    ($t:ty) => {{
        // SAFETY: these are plain C structs of integers and pointers; all-zero is their
        // documented initial state.
        let mut p: $t = unsafe { std::mem::zeroed() };
        p.structSize = std::mem::size_of::<$t>();
        p
    }};
}

/// Loads CUPTI and initialises its profiler on the current context's device.
fn initialise() -> Result<(), ProfilerError> {
    library::load(CudaLibrary::Driver)?;
    library::load(CudaLibrary::Cupti)?;
    let mut p = params!(sys::CUpti_Profiler_Initialize_Params);
    // SAFETY: a valid parameter struct; CUPTI keeps no pointer into it.
    check("cuptiProfilerInitialize", unsafe {
        sys::cuptiProfilerInitialize(&mut p)
    })
}

/// The device's chip name (`gh100`) and counter-availability image, read on `gpu`'s context.
fn chip_and_availability(gpu: &Gpu) -> Result<(CString, Vec<u8>), ProfilerError> {
    let mut chip = params!(sys::CUpti_Device_GetChipName_Params);
    chip.deviceIndex = usize::try_from(gpu.device()).unwrap_or(0);
    // SAFETY: valid parameters; the chip name points to CUPTI's static storage.
    check("cuptiDeviceGetChipName", unsafe {
        sys::cuptiDeviceGetChipName(&mut chip)
    })?;
    // SAFETY: non-null on success and NUL-terminated.
    let name = unsafe { CStr::from_ptr(chip.pChipName) }.to_owned();
    let mut avail = params!(sys::CUpti_Profiler_GetCounterAvailability_Params);
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
        let mut p = params!(sys::CUpti_Profiler_Host_Initialize_Params);
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
        let mut p = params!(sys::CUpti_Profiler_Host_Deinitialize_Params);
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
    let mut p = params!(sys::CUpti_Profiler_Host_GetBaseMetrics_Params);
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

/// A range profiler configured for one set of metrics on one context.
pub struct Profiler {
    host: Host,
    object: *mut sys::CUpti_RangeProfiler_Object,
    names: Vec<CString>,
    config: Vec<u8>,
    counter_data: Vec<u8>,
}

impl std::fmt::Debug for Profiler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Profiler")
            .field("metrics", &self.names)
            .finish_non_exhaustive()
    }
}

impl Profiler {
    /// A profiler of `metrics` (full names with their rollup: `sm__inst_executed.sum`) on
    /// `gpu`'s context. Fails when they do not fit one pass.
    pub fn new(gpu: &Gpu, metrics: &[String]) -> Result<Profiler, ProfilerError> {
        initialise()?;
        let names = metrics
            .iter()
            .map(|m| CString::new(m.as_str()).map_err(|_| ProfilerError::Name(m.clone())))
            .collect::<Result<Vec<_>, _>>()?;
        let mut pointers: Vec<*const c_char> = names.iter().map(|n| n.as_ptr()).collect();
        let (chip, availability) = chip_and_availability(gpu)?;
        let host = Host::new(&chip, &availability)?;

        let mut add = params!(sys::CUpti_Profiler_Host_ConfigAddMetrics_Params);
        add.pHostObject = host.0;
        add.ppMetricNames = pointers.as_mut_ptr();
        add.numMetrics = pointers.len();
        // SAFETY: `pointers` holds `numMetrics` live NUL-terminated names.
        check("cuptiProfilerHostConfigAddMetrics", unsafe {
            sys::cuptiProfilerHostConfigAddMetrics(&mut add)
        })?;
        let mut size = params!(sys::CUpti_Profiler_Host_GetConfigImageSize_Params);
        size.pHostObject = host.0;
        // SAFETY: valid parameters.
        check("cuptiProfilerHostGetConfigImageSize", unsafe {
            sys::cuptiProfilerHostGetConfigImageSize(&mut size)
        })?;
        let mut config = vec![0u8; size.configImageSize];
        let mut image = params!(sys::CUpti_Profiler_Host_GetConfigImage_Params);
        image.pHostObject = host.0;
        image.configImageSize = config.len();
        image.pConfigImage = config.as_mut_ptr();
        // SAFETY: the buffer has the size CUPTI asked for.
        check("cuptiProfilerHostGetConfigImage", unsafe {
            sys::cuptiProfilerHostGetConfigImage(&mut image)
        })?;
        let mut passes = params!(sys::CUpti_Profiler_Host_GetNumOfPasses_Params);
        passes.configImageSize = config.len();
        passes.pConfigImage = config.as_mut_ptr();
        // SAFETY: the config image just written.
        check("cuptiProfilerHostGetNumOfPasses", unsafe {
            sys::cuptiProfilerHostGetNumOfPasses(&mut passes)
        })?;
        if passes.numOfPasses != 1 {
            return Err(ProfilerError::Passes {
                passes: passes.numOfPasses,
                metrics: metrics.join(", "),
            });
        }

        let mut enable = params!(sys::CUpti_RangeProfiler_Enable_Params);
        enable.ctx = gpu.raw_context();
        // SAFETY: our context, current on this thread.
        check("cuptiRangeProfilerEnable", unsafe {
            sys::cuptiRangeProfilerEnable(&mut enable)
        })?;
        let mut profiler = Profiler {
            host,
            object: enable.pRangeProfilerObject,
            names,
            config,
            counter_data: Vec::new(),
        };
        let mut data = params!(sys::CUpti_RangeProfiler_GetCounterDataSize_Params);
        data.pRangeProfilerObject = profiler.object;
        data.pMetricNames = pointers.as_mut_ptr();
        data.numMetrics = pointers.len();
        data.maxNumOfRanges = 1;
        data.maxNumRangeTreeNodes = 1;
        // SAFETY: the enabled object and live names.
        check("cuptiRangeProfilerGetCounterDataSize", unsafe {
            sys::cuptiRangeProfilerGetCounterDataSize(&mut data)
        })?;
        profiler.counter_data = vec![0u8; data.counterDataSize];
        Ok(profiler)
    }

    /// Runs `launch` (which enqueues the candidate's launches on the context's stream and
    /// waits for them) inside one profiled range and returns each metric's value for it, in the
    /// order given to [`Profiler::new`]. The outer error is `launch`'s own (the candidate's),
    /// the inner one the profiler's.
    pub fn measure<E>(
        &mut self,
        launch: impl FnOnce() -> Result<(), E>,
    ) -> Result<Result<Vec<f64>, ProfilerError>, E> {
        match self.measure_range(launch) {
            Ok(values) => Ok(Ok(values)),
            Err(Failed::Launch(e)) => Err(e),
            Err(Failed::Profiler(e)) => Ok(Err(e)),
        }
    }

    fn measure_range<E>(
        &mut self,
        launch: impl FnOnce() -> Result<(), E>,
    ) -> Result<Vec<f64>, Failed<E>> {
        let mut init = params!(sys::CUpti_RangeProfiler_CounterDataImage_Initialize_Params);
        init.pRangeProfilerObject = self.object;
        init.counterDataSize = self.counter_data.len();
        init.pCounterData = self.counter_data.as_mut_ptr();
        // SAFETY: the counter data buffer has the size CUPTI asked for.
        check("cuptiRangeProfilerCounterDataImageInitialize", unsafe {
            sys::cuptiRangeProfilerCounterDataImageInitialize(&mut init)
        })?;
        let mut set = params!(sys::CUpti_RangeProfiler_SetConfig_Params);
        set.pRangeProfilerObject = self.object;
        set.configSize = self.config.len();
        set.pConfig = self.config.as_ptr();
        set.counterDataImageSize = self.counter_data.len();
        set.pCounterDataImage = self.counter_data.as_mut_ptr();
        set.range = sys::CUpti_ProfilerRange::CUPTI_UserRange;
        set.replayMode = sys::CUpti_ProfilerReplayMode::CUPTI_UserReplay;
        set.maxRangesPerPass = 1;
        set.numNestingLevels = 1;
        set.minNestingLevel = 1;
        set.passIndex = 0;
        set.targetNestingLevel = 1;
        // SAFETY: both images live in `self` for as long as the object uses them.
        check("cuptiRangeProfilerSetConfig", unsafe {
            sys::cuptiRangeProfilerSetConfig(&mut set)
        })?;
        let mut start = params!(sys::CUpti_RangeProfiler_Start_Params);
        start.pRangeProfilerObject = self.object;
        // SAFETY: the configured object.
        check("cuptiRangeProfilerStart", unsafe {
            sys::cuptiRangeProfilerStart(&mut start)
        })?;
        let range = c"timed-launch";
        let mut push = params!(sys::CUpti_RangeProfiler_PushRange_Params);
        push.pRangeProfilerObject = self.object;
        push.pRangeName = range.as_ptr();
        // SAFETY: a static name.
        let pushed = check("cuptiRangeProfilerPushRange", unsafe {
            sys::cuptiRangeProfilerPushRange(&mut push)
        });
        let mut popped = Ok(());
        let launched = match pushed {
            Ok(()) => {
                let launched = launch();
                let mut pop = params!(sys::CUpti_RangeProfiler_PopRange_Params);
                pop.pRangeProfilerObject = self.object;
                // SAFETY: closes the range pushed above.
                popped = check("cuptiRangeProfilerPopRange", unsafe {
                    sys::cuptiRangeProfilerPopRange(&mut pop)
                });
                Some(launched)
            }
            Err(_) => None,
        };
        let mut stop = params!(sys::CUpti_RangeProfiler_Stop_Params);
        stop.pRangeProfilerObject = self.object;
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
        let mut decode = params!(sys::CUpti_RangeProfiler_DecodeData_Params);
        decode.pRangeProfilerObject = self.object;
        // SAFETY: the pass has ended.
        check("cuptiRangeProfilerDecodeData", unsafe {
            sys::cuptiRangeProfilerDecodeData(&mut decode)
        })?;
        let mut info = params!(sys::CUpti_RangeProfiler_GetCounterDataInfo_Params);
        info.pCounterDataImage = self.counter_data.as_ptr();
        info.counterDataImageSize = self.counter_data.len();
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
        let mut pointers: Vec<*const c_char> = self.names.iter().map(|n| n.as_ptr()).collect();
        let mut values = vec![f64::NAN; pointers.len()];
        let mut eval = params!(sys::CUpti_Profiler_Host_EvaluateToGpuValues_Params);
        eval.pHostObject = self.host.0;
        eval.pCounterDataImage = self.counter_data.as_ptr();
        eval.counterDataImageSize = self.counter_data.len();
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

impl Drop for Profiler {
    fn drop(&mut self) {
        let mut p = params!(sys::CUpti_RangeProfiler_Disable_Params);
        p.pRangeProfilerObject = self.object;
        // SAFETY: the object `new` enabled, disabled once.
        let _ = unsafe { sys::cuptiRangeProfilerDisable(&mut p) };
    }
}
