//! What a record says about the hardware a number was measured on: the device, the resources
//! of each compiled kernel, and the GPU's state around timing. Plain data; the GPU boundary
//! (`crate::cuda`) fills it in.

/// What a record says about the device it ran on.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DeviceInfo {
    pub name: String,
    pub ordinal: usize,
    pub compute_capability: (i32, i32),
    pub sm_count: i32,
    pub l2_bytes: i64,
    pub memory_bytes: u64,
    /// Driver API version, e.g. 13000 for CUDA 13.0.
    pub driver_api_version: i32,
    /// Clocks the device reports (kHz): peak SM clock and memory clock.
    pub sm_clock_khz: i32,
    pub memory_clock_khz: i32,
    pub driver_library: String,
    /// PCI bus id, e.g. `0000:19:00.0` (how NVML finds the same device).
    #[serde(default)]
    pub pci_bus_id: String,
}

/// Resources of a compiled kernel, as the driver reports them.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct KernelAttributes {
    pub registers: i32,
    pub static_shared_bytes: i32,
    pub local_bytes: i32,
    pub max_threads_per_block: i32,
}

/// A snapshot of the device's state (NVML: clocks, temperature, power, clock event reasons).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct GpuState {
    pub sm_clock_mhz: u32,
    pub memory_clock_mhz: u32,
    pub temperature_c: u32,
    pub power_mw: u32,
    /// NVML's clock event reasons bit mask (e.g. 0x4 software power cap, 0x20 SW thermal).
    pub clock_event_reasons: u64,
}
