//! A standalone GPU check of the cuDNN SDPA graphs added for suite 1.2.0 (paged GQA decode,
//! fp8 forward): each is planned at a small shape, run once on deterministic data, and compared
//! with a CPU reference (f64) under the suite's tolerances. The engine calls [`check_graphs`]
//! (e.g. from a diagnostic subcommand) and prints the outcomes; nothing here is timed.

use super::cudnn::{PagedDecodeShape, Sdpa, SdpaKind, SdpaShape};
use super::driver::{DeviceBuffer, Gpu};

/// The outcome of one graph's check.
#[derive(Debug, Clone)]
pub struct GraphCheck {
    /// The graph and its shape, in words.
    pub graph: String,
    /// The engine cuDNN chose (when planning succeeded).
    pub engine: Option<String>,
    /// Ok: the error figures, within tolerance. Err: the step that failed, or the figures
    /// that were out of tolerance.
    pub outcome: Result<String, String>,
}

/// Plans, runs and checks the paged decode graph and the fp8 forward graph (non-causal and
/// causal) on `gpu`. Each check stands alone: one failing does not stop the others.
pub fn check_graphs(gpu: &Gpu) -> Vec<GraphCheck> {
    let mut out = Vec::new();
    let paged = PagedDecodeShape {
        b: 3,
        h_q: 32,
        h_kv: 8,
        d: 128,
        num_pages: 64,
        max_pages_per_seq: 16,
        block_size: 1,
    };
    out.push(check_paged_decode(gpu, paged, &[1, 7, 16]));
    for causal in [false, true] {
        let shape = SdpaShape {
            b: 1,
            h: 2,
            s: 256,
            d: 128,
            causal,
        };
        out.push(check_forward_fp8(gpu, shape));
    }
    out
}

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Standard normal (Box-Muller).
    fn normal(&mut self) -> f64 {
        let u = self.unit().max(1e-300);
        let v = self.unit();
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }
}

/// bf16 bits of `x`, rounded to nearest even.
pub(crate) fn bf16_bits(x: f32) -> u16 {
    let b = x.to_bits();
    if x.is_nan() {
        return 0x7fc0;
    }
    ((b + 0x7fff + ((b >> 16) & 1)) >> 16) as u16
}

pub(crate) fn bf16_value(bits: u16) -> f32 {
    f32::from_bits(u32::from(bits) << 16)
}

/// The value of an e4m3 (fn: no infinities, 0x7f/0xff NaN) byte.
pub(crate) fn e4m3_value(byte: u8) -> f32 {
    let sign = if byte & 0x80 != 0 { -1.0 } else { 1.0 };
    let e = i32::from((byte >> 3) & 0xf);
    let m = f32::from(byte & 7);
    if e == 15 && byte & 7 == 7 {
        return f32::NAN;
    }
    let mag = if e == 0 {
        m / 8.0 * 2f32.powi(-6)
    } else {
        (1.0 + m / 8.0) * 2f32.powi(e - 7)
    };
    sign * mag
}

/// The e4m3 byte nearest to `x` (ties to even code), saturating at ±448.
pub(crate) fn e4m3_bits(x: f32) -> u8 {
    if x.is_nan() {
        return 0x7f;
    }
    let sign = if x.is_sign_negative() { 0x80 } else { 0 };
    let a = x.abs().min(448.0);
    let mut best = 0u8;
    let mut best_err = f32::INFINITY;
    for code in 0u8..0x7f {
        let err = (e4m3_value(code) - a).abs();
        if err < best_err || (err == best_err && code % 2 == 0) {
            best = code;
            best_err = err;
        }
    }
    sign | best
}

fn upload(gpu: &Gpu, bytes: &[u8]) -> Result<DeviceBuffer, String> {
    let buf = gpu.alloc(bytes.len()).map_err(|e| format!("alloc: {e}"))?;
    gpu.upload(&buf, 0, bytes)
        .map_err(|e| format!("upload: {e}"))?;
    Ok(buf)
}

/// A poisoned (0xFF: NaN) output buffer.
fn output(gpu: &Gpu, bytes: usize) -> Result<DeviceBuffer, String> {
    let buf = gpu.alloc(bytes).map_err(|e| format!("alloc: {e}"))?;
    gpu.fill_u8(&buf, 0, 0xff, bytes)
        .map_err(|e| format!("poison: {e}"))?;
    Ok(buf)
}

fn run(gpu: &Gpu, sdpa: &Sdpa, buffers: &[&DeviceBuffer]) -> Result<(), String> {
    let ptrs: Vec<u64> = buffers.iter().map(|b| b.ptr()).collect();
    let bound = sdpa.bind(&ptrs).map_err(|e| format!("bind: {e}"))?;
    sdpa.launch(&bound).map_err(|e| format!("launch: {e}"))?;
    gpu.sync().map_err(|e| format!("run: {e}"))
}

fn f32s(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// Compares `got` with `want` elementwise under `|got - want| <= atol + rtol |want|`;
/// returns (max abs error, fraction within tolerance). NaN counts as out.
pub(crate) fn compare(got: &[f32], want: &[f64], rtol: f64, atol: f64) -> (f64, f64) {
    let mut max_err = 0f64;
    let mut within = 0usize;
    for (&g, &w) in got.iter().zip(want) {
        let err = (f64::from(g) - w).abs();
        if err.is_nan() {
            max_err = f64::NAN;
            continue;
        }
        if !max_err.is_nan() {
            max_err = max_err.max(err);
        }
        if err <= atol + rtol * w.abs() {
            within += 1;
        }
    }
    (max_err, within as f64 / want.len().max(1) as f64)
}

/// One output's verdict in words; `ok` is false when fewer than `min_match` are within.
fn verdict(
    name: &str,
    got: &[f32],
    want: &[f64],
    (rtol, atol, min_match): (f64, f64, f64),
    ok: &mut bool,
) -> String {
    let (max_err, frac) = compare(got, want, rtol, atol);
    if frac.is_nan() || frac < min_match {
        *ok = false;
    }
    format!(
        "{name}: max |err| {max_err:.3e}, {:.2}% within rtol {rtol} atol {atol}",
        frac * 100.0
    )
}

/// Softmax attention of one query row in f64: returns (output, lse).
fn attend(q: &[f64], keys: &[Vec<f64>], values: &[Vec<f64>], scale: f64) -> (Vec<f64>, f64) {
    let logits: Vec<f64> = keys
        .iter()
        .map(|k| scale * q.iter().zip(k).map(|(a, b)| a * b).sum::<f64>())
        .collect();
    let m = logits.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let z: f64 = logits.iter().map(|l| (l - m).exp()).sum();
    let lse = m + z.ln();
    let d = values.first().map_or(0, Vec::len);
    let mut o = vec![0f64; d];
    for (l, v) in logits.iter().zip(values) {
        let p = (l - lse).exp();
        for (oi, vi) in o.iter_mut().zip(v) {
            *oi += p * vi;
        }
    }
    (o, lse)
}

fn check_paged_decode(gpu: &Gpu, sh: PagedDecodeShape, lens: &[i64]) -> GraphCheck {
    let graph = format!(
        "{} (B={}, Hq={}, Hkv={}, D={}, pages={}, max pages/seq={}, kv lens {lens:?})",
        SdpaKind::PagedDecode.label(),
        sh.b,
        sh.h_q,
        sh.h_kv,
        sh.d,
        sh.num_pages,
        sh.max_pages_per_seq
    );
    let mut engine = None;
    let outcome = (|| -> Result<String, String> {
        let (b, hq, hkv, d) = (
            sh.b as usize,
            sh.h_q as usize,
            sh.h_kv as usize,
            sh.d as usize,
        );
        let (np, mp) = (sh.num_pages as usize, sh.max_pages_per_seq as usize);
        assert_eq!(lens.len(), b);
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let mut bf = |n: usize| -> Vec<u16> {
            (0..n)
                .map(|_| bf16_bits((rng.normal() * 0.5) as f32))
                .collect()
        };
        let q = bf(b * hq * d);
        let k = bf(np * hkv * d);
        let v = bf(np * hkv * d);
        // Distinct pages in a shuffled order, unused slots 0.
        let mut pages: Vec<i32> = (0..np as i32).collect();
        for i in (1..pages.len()).rev() {
            let j = (rng.next_u64() % (i as u64 + 1)) as usize;
            pages.swap(i, j);
        }
        let mut table = vec![0i32; b * mp];
        let mut next = 0;
        for (s, &len) in lens.iter().enumerate() {
            for slot in 0..len as usize {
                table[s * mp + slot] = pages[next];
                next += 1;
            }
        }
        let seq: Vec<i32> = lens.iter().map(|&l| l as i32).collect();

        let le16 = |x: &[u16]| x.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>();
        let le32 = |x: &[i32]| x.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>();
        let q_buf = upload(gpu, &le16(&q))?;
        let k_buf = upload(gpu, &le16(&k))?;
        let v_buf = upload(gpu, &le16(&v))?;
        let t_buf = upload(gpu, &le32(&table))?;
        let s_buf = upload(gpu, &le32(&seq))?;
        let o_buf = output(gpu, b * hq * d * 2)?;
        let l_buf = output(gpu, b * hq * 4)?;
        let sdpa = Sdpa::paged_decode(gpu, sh).map_err(|e| format!("setup: {e}"))?;
        engine = Some(sdpa.engine.clone());
        run(
            gpu,
            &sdpa,
            &[
                &q_buf, &k_buf, &v_buf, &t_buf, &t_buf, &s_buf, &o_buf, &l_buf,
            ],
        )?;
        let o_raw = gpu
            .download(&o_buf, 0, b * hq * d * 2)
            .map_err(|e| format!("download: {e}"))?;
        let o_got: Vec<f32> = o_raw
            .chunks_exact(2)
            .map(|c| bf16_value(u16::from_le_bytes([c[0], c[1]])))
            .collect();
        let l_got = f32s(
            &gpu.download(&l_buf, 0, b * hq * 4)
                .map_err(|e| format!("download: {e}"))?,
        );

        let val = |x: &[u16], i: usize| f64::from(bf16_value(x[i]));
        let scale = 1.0 / (d as f64).sqrt();
        let mut o_want = Vec::with_capacity(b * hq * d);
        let mut l_want = Vec::with_capacity(b * hq);
        for s in 0..b {
            for h in 0..hq {
                let kv_h = h / (hq / hkv);
                let qrow: Vec<f64> = (0..d).map(|i| val(&q, (s * hq + h) * d + i)).collect();
                let rows = |x: &[u16]| -> Vec<Vec<f64>> {
                    (0..lens[s] as usize)
                        .map(|slot| {
                            let page = table[s * mp + slot] as usize;
                            (0..d)
                                .map(|i| val(x, (page * hkv + kv_h) * d + i))
                                .collect()
                        })
                        .collect()
                };
                let (o, lse) = attend(&qrow, &rows(&k), &rows(&v), scale);
                o_want.extend(o);
                l_want.push(lse);
            }
        }
        let mut ok = true;
        let words = [
            verdict("output", &o_got, &o_want, (2e-2, 2e-2, 1.0), &mut ok),
            verdict("lse", &l_got, &l_want, (1e-3, 1e-3, 1.0), &mut ok),
        ]
        .join("; ");
        if ok { Ok(words) } else { Err(words) }
    })();
    GraphCheck {
        graph,
        engine,
        outcome,
    }
}

fn check_forward_fp8(gpu: &Gpu, sh: SdpaShape) -> GraphCheck {
    let graph = format!(
        "{}{} (B={}, H={}, S={}, D={})",
        SdpaKind::ForwardFp8.label(),
        if sh.causal { ", causal" } else { "" },
        sh.b,
        sh.h,
        sh.s,
        sh.d
    );
    let mut engine = None;
    let outcome = (|| -> Result<String, String> {
        let (b, h, s, d) = (sh.b as usize, sh.h as usize, sh.s as usize, sh.d as usize);
        let n = b * h * s * d;
        let mut rng = Rng(0x2545_f491_4f6c_dd1d ^ u64::from(sh.causal));
        // Quantized as the harness does: e4m3(x * 448 / amax), descale = amax / 448.
        let mut quantized = || -> (Vec<u8>, f32) {
            let x: Vec<f32> = (0..n).map(|_| rng.normal() as f32).collect();
            let amax = x.iter().fold(0f32, |a, v| a.max(v.abs())).max(1e-6);
            let bytes = x.iter().map(|v| e4m3_bits(v * 448.0 / amax)).collect();
            (bytes, amax / 448.0)
        };
        let (q, dq) = quantized();
        let (k, dk) = quantized();
        let (v, dv) = quantized();
        let bufs = [&q, &k, &v]
            .iter()
            .map(|x| upload(gpu, x))
            .collect::<Result<Vec<_>, _>>()?;
        let scales = [dq, dk, dv]
            .iter()
            .map(|x| upload(gpu, &x.to_le_bytes()))
            .collect::<Result<Vec<_>, _>>()?;
        let o_buf = output(gpu, n)?;
        let l_buf = output(gpu, b * h * s * 4)?;
        let sdpa = Sdpa::forward_fp8(gpu, sh).map_err(|e| format!("setup: {e}"))?;
        engine = Some(sdpa.engine.clone());
        run(
            gpu,
            &sdpa,
            &[
                &bufs[0], &bufs[1], &bufs[2], &scales[0], &scales[1], &scales[2], &o_buf, &l_buf,
            ],
        )?;
        let o_got: Vec<f32> = gpu
            .download(&o_buf, 0, n)
            .map_err(|e| format!("download: {e}"))?
            .into_iter()
            .map(e4m3_value)
            .collect();
        let l_got = f32s(
            &gpu.download(&l_buf, 0, b * h * s * 4)
                .map_err(|e| format!("download: {e}"))?,
        );

        let deq = |x: &[u8], scale: f32, row: usize| -> Vec<f64> {
            (0..d)
                .map(|i| f64::from(e4m3_value(x[row * d + i]) * scale))
                .collect()
        };
        let scale = 1.0 / (d as f64).sqrt();
        let mut o_want = Vec::with_capacity(n);
        let mut l_want = Vec::with_capacity(b * h * s);
        for bh in 0..b * h {
            let keys: Vec<Vec<f64>> = (0..s).map(|j| deq(&k, dk, bh * s + j)).collect();
            let values: Vec<Vec<f64>> = (0..s).map(|j| deq(&v, dv, bh * s + j)).collect();
            for i in 0..s {
                let visible = if sh.causal { i + 1 } else { s };
                let (o, lse) = attend(
                    &deq(&q, dq, bh * s + i),
                    &keys[..visible],
                    &values[..visible],
                    scale,
                );
                o_want.extend(o);
                l_want.push(lse);
            }
        }
        let mut ok = true;
        let words = [
            verdict("O", &o_got, &o_want, (0.125, 0.01, 0.995), &mut ok),
            verdict("LSE", &l_got, &l_want, (1e-3, 1e-3, 1.0), &mut ok),
        ]
        .join("; ");
        if ok { Ok(words) } else { Err(words) }
    })();
    GraphCheck {
        graph,
        engine,
        outcome,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn e4m3_codec() {
        assert_eq!(e4m3_value(0x00), 0.0);
        assert_eq!(e4m3_value(0x38), 1.0);
        assert_eq!(e4m3_value(0x7e), 448.0);
        assert_eq!(e4m3_value(0x01), 2f32.powi(-9));
        assert_eq!(e4m3_value(0xb8), -1.0);
        assert!(e4m3_value(0x7f).is_nan());
        for code in 0u8..0x7f {
            assert_eq!(e4m3_bits(e4m3_value(code)), code, "code {code:#x}");
            assert_eq!(e4m3_bits(-e4m3_value(code)) & 0x7f, code);
        }
        assert_eq!(e4m3_bits(1000.0), 0x7e);
        assert_eq!(e4m3_bits(1.06), 0x38);
        assert_eq!(e4m3_bits(1.07), 0x39);
    }

    #[test]
    fn bf16_codec() {
        assert_eq!(bf16_bits(1.0), 0x3f80);
        assert_eq!(bf16_value(0x3f80), 1.0);
        assert_eq!(bf16_bits(-2.0), 0xc000);
        // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to even.
        assert_eq!(bf16_bits(1.0 + 2f32.powi(-8)), 0x3f80);
        assert_eq!(bf16_bits(1.0 + 3.0 * 2f32.powi(-8)), 0x3f82);
    }

    #[test]
    fn compare_counts_nan_as_out() {
        let (max, frac) = compare(&[1.0, f32::NAN], &[1.0, 2.0], 0.0, 0.0);
        assert!(max.is_nan());
        assert_eq!(frac, 0.5);
        let (max, frac) = compare(&[1.1, 2.0], &[1.0, 2.0], 0.0, 0.05);
        assert!((max - 0.1).abs() < 1e-6);
        assert_eq!(frac, 0.5);
    }

    #[test]
    fn attend_matches_hand_computation() {
        // Two keys, equal logits: LSE = log 2, output the mean of the values.
        let (o, lse) = attend(
            &[1.0, 0.0],
            &[vec![1.0, 0.0], vec![1.0, 5.0]],
            &[vec![2.0], vec![4.0]],
            1.0,
        );
        assert!((lse - (1.0 + 2f64.ln())).abs() < 1e-12);
        assert!((o[0] - 3.0).abs() < 1e-12);
    }
}
