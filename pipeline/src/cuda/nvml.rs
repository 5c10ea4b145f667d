//! GPU state from NVML (the driver's management library), read-only: clocks, temperature,
//! power and the reasons the clocks are held down. Recorded around timing so a reader can see
//! the state a number was measured in. Never changes any setting.

use std::ffi::{CString, c_char, c_int, c_uint, c_ulonglong, c_void};
use std::sync::OnceLock;

use crate::record::device::GpuState;

type Device = *mut c_void;

struct Api {
    _lib: libloading::Library,
    by_pci: unsafe extern "C" fn(*const c_char, *mut Device) -> c_int,
    clock: unsafe extern "C" fn(Device, c_int, *mut c_uint) -> c_int,
    temperature: unsafe extern "C" fn(Device, c_int, *mut c_uint) -> c_int,
    power: unsafe extern "C" fn(Device, *mut c_uint) -> c_int,
    reasons: Option<unsafe extern "C" fn(Device, *mut c_ulonglong) -> c_int>,
}

// SAFETY: the function pointers are plain C entry points of a thread-safe library.
unsafe impl Send for Api {}
// SAFETY: as above.
unsafe impl Sync for Api {}

fn api() -> Option<&'static Api> {
    static API: OnceLock<Option<Api>> = OnceLock::new();
    API.get_or_init(|| {
        // SAFETY: loading NVIDIA's management library and resolving documented symbols with
        // their documented signatures.
        unsafe {
            let lib = libloading::Library::new("libnvidia-ml.so.1").ok()?;
            let init: libloading::Symbol<unsafe extern "C" fn() -> c_int> =
                lib.get(b"nvmlInit_v2").ok()?;
            if init() != 0 {
                return None;
            }
            let by_pci = *lib.get(b"nvmlDeviceGetHandleByPciBusId_v2").ok()?;
            let clock = *lib.get(b"nvmlDeviceGetClockInfo").ok()?;
            let temperature = *lib.get(b"nvmlDeviceGetTemperature").ok()?;
            let power = *lib.get(b"nvmlDeviceGetPowerUsage").ok()?;
            // The newer name first; drivers before 535 only have the older one.
            let reasons = lib
                .get(b"nvmlDeviceGetCurrentClocksEventReasons")
                .or_else(|_| lib.get(b"nvmlDeviceGetCurrentClocksThrottleReasons"))
                .ok()
                .map(|s| *s);
            Some(Api {
                _lib: lib,
                by_pci,
                clock,
                temperature,
                power,
                reasons,
            })
        }
    })
    .as_ref()
}

/// The state of the device at `pci_bus_id` (as `cuDeviceGetPCIBusId` gives it), or `None`
/// where NVML is missing or refuses.
pub fn state(pci_bus_id: &str) -> Option<GpuState> {
    let api = api()?;
    let id = CString::new(pci_bus_id).ok()?;
    let mut dev: Device = std::ptr::null_mut();
    // SAFETY: NVML writes plain integers through out-pointers to locals.
    unsafe {
        if (api.by_pci)(id.as_ptr(), &mut dev) != 0 {
            return None;
        }
        let (mut sm, mut mem, mut temp, mut power, mut reasons) = (0, 0, 0, 0, 0);
        let ok = (api.clock)(dev, 1, &mut sm) == 0
            && (api.clock)(dev, 2, &mut mem) == 0
            && (api.temperature)(dev, 0, &mut temp) == 0;
        if !ok {
            return None;
        }
        // Power and reasons are optional on some boards.
        let _ = (api.power)(dev, &mut power);
        if let Some(f) = api.reasons {
            let _ = f(dev, &mut reasons);
        }
        Some(GpuState {
            sm_clock_mhz: sm,
            memory_clock_mhz: mem,
            temperature_c: temp,
            power_mw: power,
            clock_event_reasons: reasons,
        })
    }
}
