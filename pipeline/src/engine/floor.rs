//! The speed of light: the shortest time the hardware allows for a workload, from its FLOPs at
//! the GPU's dense tensor-core peak for the task's dtype and its compulsory bytes at the peak
//! DRAM bandwidth. A measured time below it is not a win but a verdict of its own: the kernel
//! skipped work or the measurement was fooled (data kept in L2 across the flush, say).
//!
//! Peaks are the vendors' datasheet figures (dense, no sparsity). A datasheet's peak holds at
//! its rated clock; a GPU whose reported maximum clock is higher can compute faster, so the
//! compute peak is scaled up by that ratio (never down), keeping the floor a true lower bound.

pub use super::{Floor, PeakClass};

/// One GPU model's peaks.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GpuPeaks {
    pub model: &'static str,
    /// Every one of these must appear in the device name.
    pub name_contains: &'static [&'static str],
    pub half_tflops: f64,
    pub fp8_tflops: f64,
    pub dram_tb_per_s: f64,
    /// The SM clock the datasheet's FLOP figures hold at.
    pub rated_clock_mhz: f64,
    pub source: &'static str,
}

/// The table, most specific names first.
pub const PEAKS: &[GpuPeaks] = &[
    GpuPeaks {
        model: "H200 SXM",
        name_contains: &["H200"],
        half_tflops: 989.4,
        fp8_tflops: 1978.9,
        dram_tb_per_s: 4.8,
        rated_clock_mhz: 1830.0,
        source: "NVIDIA H200 Tensor Core GPU datasheet (BF16 1,979 and FP8 3,958 TFLOPS are with sparsity; halved here), 4.8 TB/s HBM3e",
    },
    GpuPeaks {
        model: "H100 PCIe",
        name_contains: &["H100", "PCIe"],
        half_tflops: 756.5,
        fp8_tflops: 1513.0,
        dram_tb_per_s: 2.0,
        rated_clock_mhz: 1620.0,
        source: "NVIDIA H100 Tensor Core GPU datasheet, PCIe column (dense), 2.0 TB/s HBM2e",
    },
    GpuPeaks {
        model: "H100 SXM",
        name_contains: &["H100"],
        half_tflops: 989.4,
        fp8_tflops: 1978.9,
        dram_tb_per_s: 3.35,
        rated_clock_mhz: 1830.0,
        source: "NVIDIA H100 Tensor Core GPU datasheet, SXM column (dense), 3.35 TB/s HBM3",
    },
    GpuPeaks {
        model: "B200",
        name_contains: &["B200"],
        half_tflops: 2250.0,
        fp8_tflops: 4500.0,
        dram_tb_per_s: 8.0,
        rated_clock_mhz: 1855.0,
        source: "NVIDIA DGX B200 / HGX B200 datasheets (FP8 72 and BF16 36 PFLOPS with sparsity for 8 GPUs; per GPU and halved here), 8 TB/s HBM3e per GPU",
    },
];

/// The peaks of the GPU named `device_name`, if the table knows it.
pub fn peaks_for(device_name: &str) -> Option<&'static GpuPeaks> {
    PEAKS
        .iter()
        .find(|p| p.name_contains.iter().all(|s| device_name.contains(s)))
}

impl Floor {
    /// The floor of a workload of `flops` and `bytes` on `peaks`, for a device whose maximum
    /// SM clock is `clock_mhz` (0 when unknown).
    pub fn new(
        peaks: &GpuPeaks,
        class: PeakClass,
        clock_mhz: f64,
        flops: f64,
        bytes: f64,
    ) -> Floor {
        let rated = match class {
            PeakClass::Half => peaks.half_tflops,
            PeakClass::Fp8 => peaks.fp8_tflops,
        };
        let scale = (clock_mhz / peaks.rated_clock_mhz).max(1.0);
        let peak_tflops = rated * scale;
        let compute_ms = flops / (peak_tflops * 1e12) * 1e3;
        let memory_ms = bytes / (peaks.dram_tb_per_s * 1e12) * 1e3;
        Floor {
            gpu_model: peaks.model.to_string(),
            peak_class: class,
            peak_tflops,
            dram_tb_per_s: peaks.dram_tb_per_s,
            compute_ms,
            memory_ms,
            floor_ms: compute_ms.max(memory_ms),
        }
    }

    /// Floor over the measured time: 1.0 is the speed of light.
    pub fn fraction(&self, measured_ms: f64) -> f64 {
        self.floor_ms / measured_ms
    }

    /// Whether a measured time is physically impossible.
    pub fn is_beaten_by(&self, measured_ms: f64) -> bool {
        measured_ms < self.floor_ms
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn models_are_found_by_their_device_names() {
        assert_eq!(peaks_for("NVIDIA H200").map(|p| p.model), Some("H200 SXM"));
        assert_eq!(
            peaks_for("NVIDIA H100 80GB HBM3").map(|p| p.model),
            Some("H100 SXM")
        );
        assert_eq!(
            peaks_for("NVIDIA H100 PCIe").map(|p| p.model),
            Some("H100 PCIe")
        );
        assert_eq!(peaks_for("NVIDIA B200").map(|p| p.model), Some("B200"));
        assert_eq!(peaks_for("NVIDIA A100-SXM4-80GB"), None);
    }

    #[test]
    fn the_headline_gemm_is_compute_bound_and_cublas_is_above_its_floor() {
        let h200 = peaks_for("NVIDIA H200").expect("known");
        // gemm_n7168_k5120, M = 8192: 2*M*N*K FLOPs; A, B read and C written in bf16.
        let (m, n, k) = (8192.0, 7168.0, 5120.0);
        let f = Floor::new(
            h200,
            PeakClass::Half,
            1980.0,
            2.0 * m * n * k,
            2.0 * (m * k + n * k + m * n),
        );
        assert!(f.compute_ms > f.memory_ms);
        // 989.4 TFLOP/s scaled to 1980 MHz: 1070.5 TFLOP/s, so about 0.562 ms.
        assert!((f.peak_tflops - 1070.5).abs() < 0.1, "{}", f.peak_tflops);
        assert!((f.floor_ms - 0.5618).abs() < 1e-3, "{}", f.floor_ms);
        // cuBLAS measured 0.735 ms there: about 76% of the speed of light.
        assert!(!f.is_beaten_by(0.735));
        assert!((f.fraction(0.735) - 0.764).abs() < 1e-3);
        // Half the floor is impossible.
        assert!(f.is_beaten_by(f.floor_ms / 2.0));
    }

    #[test]
    fn a_small_gemm_is_memory_bound_and_a_slower_clock_never_lowers_the_peak() {
        let h200 = peaks_for("NVIDIA H200").expect("known");
        let (m, n, k) = (70.0, 7168.0, 5120.0);
        let bytes = 2.0 * (m * k + n * k + m * n);
        let f = Floor::new(h200, PeakClass::Half, 1000.0, 2.0 * m * n * k, bytes);
        assert_eq!(f.peak_tflops, 989.4);
        assert!(f.memory_ms > f.compute_ms);
        assert!((f.floor_ms - bytes / 4.8e12 * 1e3).abs() < 1e-12);
    }
}
