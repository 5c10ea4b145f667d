//! The harness's GPU reference checked without a GPU: nvcc compiles support.cu together with a
//! small host driver that runs its `__host__ __device__` row functions (the code every GPU
//! reference thread runs, with one lane instead of 32), and the results are compared with an
//! independent CPU implementation on small shapes (dense masks, two-pass softmax, f64).

use std::fmt::Write as _;
use std::path::Path;

use super::estimate::SplitMix;
use super::support::SOURCE;
use crate::toolchain::{Tool, locate};

/// Whether nvcc is installed; without it the test is skipped, unless the tools are required
/// (PTXBENCH_REQUIRE_CUDA_TOOLS=1, as in CI), where it fails.
fn nvcc_here(test: &str) -> Option<std::path::PathBuf> {
    match locate(Tool::Nvcc) {
        Ok(p) => Some(p),
        Err(e) => {
            assert!(
                std::env::var_os("PTXBENCH_REQUIRE_CUDA_TOOLS").is_none_or(|v| v != "1"),
                "nvcc required but missing: {e}"
            );
            eprintln!("SKIP {test}: {e}");
            None
        }
    }
}

/// What every host driver starts with: support.cu, and readers of the problem's unsigned
/// integers (f32 values as their bits) from standard input.
const DRIVER_PRELUDE: &str = r#"#include "support.cu"
#include <cstdio>
#include <cstring>
#include <vector>
static unsigned next() { unsigned v = 0; if (scanf("%u", &v) != 1) { fprintf(stderr, "short input\n"); exit(2); } return v; }
static long long next_ll() { long long v = 0; if (scanf("%lld", &v) != 1) { fprintf(stderr, "short input\n"); exit(2); } return v; }
static std::vector<int> ints(size_t n) { std::vector<int> v(n); for (auto& x : v) x = (int)next(); return v; }
static std::vector<float> floats(size_t n) { std::vector<float> v(n); for (auto& x : v) { unsigned b = next(); memcpy(&x, &b, 4); } return v; }
"#;

/// Reads the problem as unsigned integers (f32 values as their bits), runs `prefill_row<1>`
/// over every (token, head) row, prints `O` then `LSE` as bits.
const PREFILL_DRIVER: &str = r#"int main() {
  int B = next(), TQ = next(), H = next(), HKV = next(), D = next(), paged = next(), causal = next();
  size_t krows = next(), nidx = next();
  std::vector<int> qo = ints(B + 1), kv = ints(B + 1), idx = ints(nidx);
  std::vector<float> Q = floats((size_t)TQ * H * D), K = floats(krows * HKV * D), V = floats(krows * HKV * D);
  std::vector<float> O((size_t)TQ * H * D), L((size_t)TQ * H);
  PrefillArgs a = {Q.data(), K.data(), V.data(), qo.data(), kv.data(), idx.data(), O.data(), L.data(),
                   B, H, HKV, D, paged, causal, 1.0f / sqrtf((float)D)};
  for (u64 r = 0; r < (u64)TQ * H; ++r) prefill_row<1>(a, r, 0);
  for (float x : O) { unsigned b; memcpy(&b, &x, 4); printf("%u\n", b); }
  for (float x : L) { unsigned b; memcpy(&b, &x, 4); printf("%u\n", b); }
  return 0;
}
"#;

/// Compiles the driver (its `main`, after [`DRIVER_PRELUDE`]) next to a copy of support.cu;
/// the executable's path.
fn build_driver(nvcc: &Path, dir: &Path, driver: &str) -> std::path::PathBuf {
    std::fs::write(dir.join("support.cu"), SOURCE).expect("write support.cu");
    crate::toolchain::build_host_program(
        nvcc,
        dir,
        &format!("{DRIVER_PRELUDE}{driver}"),
        "sm_90",
        &[],
    )
    .unwrap_or_else(|e| panic!("nvcc failed on support.cu with the host driver:\n{e}"))
}

/// Runs the host driver `exe` on `input` (one value per line, f32 as their bits) and reads
/// back its outputs the same way.
fn run_driver(exe: &Path, input: &str) -> Vec<f32> {
    let mut child = std::process::Command::new(exe)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("the driver starts");
    std::io::Write::write_all(&mut child.stdin.take().expect("stdin"), input.as_bytes())
        .expect("write the problem");
    let out = child.wait_with_output().expect("the driver ends");
    assert!(out.status.success(), "driver failed: {:?}", out.status);
    String::from_utf8(out.stdout)
        .expect("utf-8")
        .lines()
        .map(|l| f32::from_bits(l.parse().expect("bits")))
        .collect()
}

/// One prefill problem: packed sequences, keys stored ragged or in shuffled pages.
struct Prefill {
    heads: usize,
    kv_heads: usize,
    dim: usize,
    causal: bool,
    qo_lens: Vec<usize>,
    kv_lens: Vec<usize>,
    /// `Some(pages)`: K, V live in a cache of that many single-token pages, in random order.
    pages: Option<usize>,
    seed: u64,
}

/// What the CPU implementation and the harness's row function both return.
struct Outputs {
    o: Vec<f32>,
    lse: Vec<f32>,
}

impl Prefill {
    /// bf16-representable values (as the harness's fp32 copies of bf16 inputs are), N(0, 1)-ish.
    fn values(rng: &mut SplitMix, n: usize) -> Vec<f32> {
        (0..n)
            .map(|_| {
                let x = (rng.unit() + rng.unit() + rng.unit() - 1.5) * 2.0;
                f32::from_bits((x as f32).to_bits() & 0xffff_0000)
            })
            .collect()
    }

    /// Runs the harness's row function through the driver, and the independent CPU version.
    fn run(&self, exe: &Path) -> (Outputs, Outputs) {
        let mut rng = SplitMix::new(self.seed);
        let (h, hkv, d) = (self.heads, self.kv_heads, self.dim);
        let tq: usize = self.qo_lens.iter().sum();
        let tk: usize = self.kv_lens.iter().sum();
        let q = Self::values(&mut rng, tq * h * d);
        // Each sequence's keys and values in logical order: [tk, hkv, d].
        let k = Self::values(&mut rng, tk * hkv * d);
        let v = Self::values(&mut rng, tk * hkv * d);
        let want = self.cpu(&q, &k, &v);

        // Where the harness finds logical key t: ragged row t, or a page drawn at random.
        let (rows, slot): (usize, Vec<usize>) = match self.pages {
            None => (tk, (0..tk).collect()),
            Some(pages) => {
                let mut all: Vec<usize> = (0..pages).collect();
                for i in 0..tk {
                    let j = i + rng.below(pages - i);
                    all.swap(i, j);
                }
                all.truncate(tk);
                (pages, all)
            }
        };
        let row = hkv * d;
        let mut kc = Self::values(&mut rng, rows * row); // spare pages hold other data
        let mut vc = Self::values(&mut rng, rows * row);
        for (t, &s) in slot.iter().enumerate() {
            kc[s * row..(s + 1) * row].copy_from_slice(&k[t * row..(t + 1) * row]);
            vc[s * row..(s + 1) * row].copy_from_slice(&v[t * row..(t + 1) * row]);
        }
        let indptr = |lens: &[usize]| -> Vec<usize> {
            std::iter::once(0)
                .chain(lens.iter().scan(0, |at, l| {
                    *at += l;
                    Some(*at)
                }))
                .collect()
        };
        let mut input = String::new();
        let b = self.qo_lens.len();
        let idx = if self.pages.is_some() { tk } else { 0 };
        let paged = usize::from(self.pages.is_some());
        let causal = usize::from(self.causal);
        let _ = writeln!(
            input,
            "{b} {tq} {h} {hkv} {d} {paged} {causal} {rows} {idx}"
        );
        let ints = |s: &mut String, v: &[usize]| {
            for x in v {
                let _ = writeln!(s, "{x}");
            }
        };
        let floats = |s: &mut String, v: &[f32]| {
            for x in v {
                let _ = writeln!(s, "{}", x.to_bits());
            }
        };
        ints(&mut input, &indptr(&self.qo_lens));
        ints(&mut input, &indptr(&self.kv_lens));
        if self.pages.is_some() {
            ints(&mut input, &slot);
        }
        floats(&mut input, &q);
        floats(&mut input, &kc);
        floats(&mut input, &vc);

        let got = run_driver(exe, &input);
        assert_eq!(
            got.len(),
            tq * h * d + tq * h,
            "one value per output element"
        );
        let (o, lse) = got.split_at(tq * h * d);
        (
            Outputs {
                o: o.to_vec(),
                lse: lse.to_vec(),
            },
            want,
        )
    }

    /// The definition, written plainly: per sequence and head a dense score matrix with the
    /// mask as a boolean, softmax in two passes, all in f64.
    fn cpu(&self, q: &[f32], k: &[f32], v: &[f32]) -> Outputs {
        let (h, hkv, d) = (self.heads, self.kv_heads, self.dim);
        let tq: usize = self.qo_lens.iter().sum();
        let mut o = vec![0f32; tq * h * d];
        let mut lse = vec![0f32; tq * h];
        let scale = 1.0 / (d as f64).sqrt();
        let (mut q0, mut k0) = (0, 0);
        for (&ql, &kl) in self.qo_lens.iter().zip(&self.kv_lens) {
            for head in 0..h {
                let g = head * hkv / h;
                for i in 0..ql {
                    let visible: Vec<bool> =
                        (0..kl).map(|j| !self.causal || j + ql <= i + kl).collect();
                    let qrow = &q[((q0 + i) * h + head) * d..][..d];
                    let scores: Vec<f64> = (0..kl)
                        .map(|j| {
                            let krow = &k[((k0 + j) * hkv + g) * d..][..d];
                            scale
                                * qrow
                                    .iter()
                                    .zip(krow)
                                    .map(|(a, b)| f64::from(*a) * f64::from(*b))
                                    .sum::<f64>()
                        })
                        .collect();
                    let max = (0..kl)
                        .filter(|&j| visible[j])
                        .map(|j| scores[j])
                        .fold(f64::NEG_INFINITY, f64::max);
                    let weights: Vec<f64> = (0..kl)
                        .map(|j| {
                            if visible[j] {
                                (scores[j] - max).exp()
                            } else {
                                0.0
                            }
                        })
                        .collect();
                    let sum: f64 = weights.iter().sum();
                    let at = (q0 + i) * h + head;
                    lse[at] = (max + sum.ln()) as f32;
                    for e in 0..d {
                        let acc: f64 = (0..kl)
                            .map(|j| weights[j] * f64::from(v[((k0 + j) * hkv + g) * d + e]))
                            .sum();
                        o[at * d + e] = (acc / sum) as f32;
                    }
                }
            }
            q0 += ql;
            k0 += kl;
        }
        Outputs { o, lse }
    }
}

/// The largest `|got - want| / (1 + |want|)`, and where (NaN counts as infinitely far).
fn worst(got: &[f32], want: &[f32]) -> (f64, usize) {
    got.iter()
        .zip(want)
        .map(|(g, w)| {
            let e = (f64::from(*g) - f64::from(*w)).abs() / (1.0 + f64::from(*w).abs());
            if e.is_nan() { f64::INFINITY } else { e }
        })
        .enumerate()
        .map(|(i, e)| (e, i))
        .fold((0.0, 0), |a, b| if b.0 > a.0 { b } else { a })
}

/// The prefill reference (`ref_prefill`'s row function, as the GPU runs it) agrees with the
/// plain CPU definition on ragged and paged layouts: sequences of length 1, lengths that are
/// not multiples of any tile, queries with a cached prefix (fewer queries than keys), GQA
/// groups of 2 and 3, head dims 40 and 64, pages in random order among spare pages. And the
/// causal flag matters: the same inputs without the mask give other outputs.
#[test]
fn prefill_reference_matches_an_independent_cpu_implementation() {
    let Some(nvcc) = nvcc_here("prefill_reference_matches_an_independent_cpu_implementation")
    else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let exe = build_driver(&nvcc, dir.path(), PREFILL_DRIVER);
    let ragged = |causal| Prefill {
        heads: 4,
        kv_heads: 2,
        dim: 40,
        causal,
        qo_lens: vec![1, 5, 17],
        kv_lens: vec![1, 9, 17],
        pages: None,
        seed: 1,
    };
    let paged = Prefill {
        heads: 6,
        kv_heads: 2,
        dim: 64,
        causal: true,
        qo_lens: vec![3, 1, 12, 7],
        kv_lens: vec![10, 4, 12, 7],
        pages: Some(2 * 33 + 3),
        seed: 2,
    };
    let cases = [ragged(true), paged, ragged(false)];
    let mut o_of = Vec::new();
    for (n, case) in cases.iter().enumerate() {
        let (got, want) = case.run(&exe);
        for (name, g, w) in [("output", &got.o, &want.o), ("lse", &got.lse, &want.lse)] {
            let (e, at) = worst(g, w);
            assert!(
                e <= 2e-5,
                "case {n}: {name}[{at}] = {} but the CPU definition gives {} (error {e:e})",
                g[at],
                w[at]
            );
        }
        o_of.push(got.o);
    }
    let (e, _) = worst(&o_of[0], &o_of[2]);
    assert!(e > 1e-2, "the causal mask changed nothing ({e:e})");
}

/// Reads an MLA decode problem as unsigned integers (f32 values as their bits, the scale
/// last), runs `mla_decode_row<1>` over every (sequence, head) row, prints `O` then `LSE` as
/// bits.
const MLA_DRIVER: &str = r#"int main() {
  int B = next(), H = next(), DC = next(), DP = next();
  size_t pages = next(), tokens = next();
  std::vector<int> indptr = ints(B + 1), idx = ints(tokens);
  std::vector<float> QN = floats((size_t)B * H * DC), QP = floats((size_t)B * H * DP);
  std::vector<float> CKV = floats(pages * DC), KPE = floats(pages * DP);
  float scale; { unsigned b = next(); memcpy(&scale, &b, 4); }
  std::vector<float> O((size_t)B * H * DC), L((size_t)B * H);
  MlaArgs a = {QN.data(), QP.data(), CKV.data(), KPE.data(), indptr.data(), idx.data(), O.data(), L.data(),
               B, H, DC, DP, scale};
  for (u64 r = 0; r < (u64)B * H; ++r) mla_decode_row<1>(a, r, 0);
  for (float x : O) { unsigned b; memcpy(&b, &x, 4); printf("%u\n", b); }
  for (float x : L) { unsigned b; memcpy(&b, &x, 4); printf("%u\n", b); }
  return 0;
}
"#;

/// One MLA decode problem: sequences of one query token, a latent cache of single-token pages
/// drawn in random order among spare pages.
struct Mla {
    heads: usize,
    ckv: usize,
    pe: usize,
    kv_lens: Vec<usize>,
    pages: usize,
    seed: u64,
}

/// What an MLA problem's CPU definitions see: the queries and each sequence's keys in order.
struct MlaInputs {
    q_nope: Vec<f32>,
    q_pe: Vec<f32>,
    /// `[tokens, ckv]`, sequences in order.
    ckv: Vec<f32>,
    /// `[tokens, pe]`, sequences in order.
    kpe: Vec<f32>,
}

impl Mla {
    /// The problem as the MLA drivers read it (sizes, page table, inputs, the scale the
    /// harness passes), and the inputs each sequence's keys in order.
    fn problem(&self) -> (String, MlaInputs) {
        let mut rng = SplitMix::new(self.seed);
        let (b, h, dc, dp) = (self.kv_lens.len(), self.heads, self.ckv, self.pe);
        let tokens: usize = self.kv_lens.iter().sum();
        let inputs = MlaInputs {
            q_nope: Prefill::values(&mut rng, b * h * dc),
            q_pe: Prefill::values(&mut rng, b * h * dp),
            ckv: Prefill::values(&mut rng, tokens * dc),
            kpe: Prefill::values(&mut rng, tokens * dp),
        };
        // Logical key t lives on a page drawn at random; spare pages hold other data.
        let mut all: Vec<usize> = (0..self.pages).collect();
        for i in 0..tokens {
            let j = i + rng.below(self.pages - i);
            all.swap(i, j);
        }
        all.truncate(tokens);
        let mut ckv_cache = Prefill::values(&mut rng, self.pages * dc);
        let mut kpe_cache = Prefill::values(&mut rng, self.pages * dp);
        for (t, &p) in all.iter().enumerate() {
            ckv_cache[p * dc..(p + 1) * dc].copy_from_slice(&inputs.ckv[t * dc..(t + 1) * dc]);
            kpe_cache[p * dp..(p + 1) * dp].copy_from_slice(&inputs.kpe[t * dp..(t + 1) * dp]);
        }
        let mut input = String::new();
        let _ = writeln!(input, "{b} {h} {dc} {dp} {} {tokens}", self.pages);
        let mut at = 0;
        let _ = writeln!(input, "0");
        for l in &self.kv_lens {
            at += l;
            let _ = writeln!(input, "{at}");
        }
        for p in &all {
            let _ = writeln!(input, "{p}");
        }
        for v in [&inputs.q_nope, &inputs.q_pe, &ckv_cache, &kpe_cache] {
            for x in v.iter() {
                let _ = writeln!(input, "{}", x.to_bits());
            }
        }
        // The scale the harness passes to the GPU reference.
        let scale = super::reference::mla_scale(dp as u64);
        let _ = writeln!(input, "{}", scale.to_bits());
        (input, inputs)
    }

    /// Runs the harness's row function through the driver; its outputs and the inputs.
    fn run(&self, exe: &Path) -> (Outputs, MlaInputs) {
        let (input, inputs) = self.problem();
        let (b, h, dc) = (self.kv_lens.len(), self.heads, self.ckv);
        let got = run_driver(exe, &input);
        assert_eq!(
            got.len(),
            b * h * dc + b * h,
            "one value per output element"
        );
        let (o, lse) = got.split_at(b * h * dc);
        (
            Outputs {
                o: o.to_vec(),
                lse: lse.to_vec(),
            },
            inputs,
        )
    }

    /// The definition, written plainly in f64 over each sequence's keys in order: the logits
    /// `scale * (q_nope . ckv_j + pe_weight * q_pe . kpe_j)` as a dense vector, softmax in two
    /// passes, the output a weighted sum of the ckv rows.
    fn cpu(&self, x: &MlaInputs, scale: f64, pe_weight: f64) -> Outputs {
        let (h, dc, dp) = (self.heads, self.ckv, self.pe);
        let b = self.kv_lens.len();
        let mut o = vec![0f32; b * h * dc];
        let mut lse = vec![0f32; b * h];
        let dot = |a: &[f32], c: &[f32]| -> f64 {
            a.iter()
                .zip(c)
                .map(|(u, v)| f64::from(*u) * f64::from(*v))
                .sum()
        };
        let mut k0 = 0;
        for (seq, &len) in self.kv_lens.iter().enumerate() {
            for head in 0..h {
                let row = seq * h + head;
                let qn = &x.q_nope[row * dc..][..dc];
                let qp = &x.q_pe[row * dp..][..dp];
                let scores: Vec<f64> = (k0..k0 + len)
                    .map(|t| {
                        scale
                            * (dot(qn, &x.ckv[t * dc..][..dc])
                                + pe_weight * dot(qp, &x.kpe[t * dp..][..dp]))
                    })
                    .collect();
                let max = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                let weights: Vec<f64> = scores.iter().map(|s| (s - max).exp()).collect();
                let sum: f64 = weights.iter().sum();
                lse[row] = (max + sum.ln()) as f32;
                for e in 0..dc {
                    let acc: f64 = weights
                        .iter()
                        .enumerate()
                        .map(|(j, w)| w * f64::from(x.ckv[(k0 + j) * dc + e]))
                        .sum();
                    o[row * dc + e] = (acc / sum) as f32;
                }
            }
            k0 += len;
        }
        Outputs { o, lse }
    }
}

/// The MLA decode reference (`ref_mla_decode`'s row function, as the GPU runs it, with the
/// scale the harness passes) agrees with the plain CPU definition: DeepSeek's sizes (16 heads,
/// latent 512, rotary 64, scale 1/sqrt(192)) on a sequence of one token, lengths off any tile
/// and pages in random order among spare pages; and dims that fill no lane evenly (latent 40,
/// rotary 8, scale 1/sqrt(136)). The test can fail: the rotary part and the scale each change
/// the outputs (a CPU definition without either disagrees).
#[test]
fn mla_decode_reference_matches_an_independent_cpu_implementation() {
    let Some(nvcc) = nvcc_here("mla_decode_reference_matches_an_independent_cpu_implementation")
    else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let exe = build_driver(&nvcc, dir.path(), MLA_DRIVER);
    let deepseek = Mla {
        heads: 16,
        ckv: 512,
        pe: 64,
        kv_lens: vec![1, 17, 65],
        pages: 2 * 83 + 3,
        seed: 3,
    };
    let odd = Mla {
        heads: 3,
        ckv: 40,
        pe: 8,
        kv_lens: vec![5, 1, 33, 2],
        pages: 50,
        seed: 4,
    };
    for (n, (case, qk)) in [(&deepseek, 192.0f64), (&odd, 136.0)].iter().enumerate() {
        let (got, inputs) = case.run(&exe);
        let want = case.cpu(&inputs, 1.0 / qk.sqrt(), 1.0);
        for (name, g, w) in [("output", &got.o, &want.o), ("lse", &got.lse, &want.lse)] {
            let (e, at) = worst(g, w);
            assert!(
                e <= 2e-5,
                "case {n}: {name}[{at}] = {} but the CPU definition gives {} (error {e:e})",
                g[at],
                w[at]
            );
        }
        let no_pe = case.cpu(&inputs, 1.0 / qk.sqrt(), 0.0);
        let (e, _) = worst(&got.lse, &no_pe.lse);
        assert!(
            e > 1e-2,
            "case {n}: the rotary part changed nothing ({e:e})"
        );
        let latent_scale = case.cpu(&inputs, 1.0 / ((case.ckv + case.pe) as f64).sqrt(), 1.0);
        let (e, _) = worst(&got.lse, &latent_scale.lse);
        assert!(e > 1e-2, "case {n}: the scale changed nothing ({e:e})");
    }
}

/// What the composed baselines' host drivers add to the prelude: a product as cuBLASLt
/// computes it ([`crate::cuda::cublaslt::Matmul`]: column-major, `op(A)` `m x k`, `op(B)`
/// `k x n`, strided batches), each element an fp64 sum rounded to the output type, read from
/// the plan the Rust side made.
const MATMUL_PRELUDE: &str = r#"struct Mm { long long m, n, k, ta, tb, lda, ldb, ldc, sa, sb, sc, batch; };
static Mm read_mm() {
  Mm x;
  long long* f[] = {&x.m, &x.n, &x.k, &x.ta, &x.tb, &x.lda, &x.ldb, &x.ldc, &x.sa, &x.sb, &x.sc, &x.batch};
  for (long long* p : f) *p = next_ll();
  return x;
}
static float as_float(float x) { return x; }
static float as_float(__nv_bfloat16 x) { return __bfloat162float(x); }
static void store(float* p, double v) { *p = (float)v; }
static void store(__nv_bfloat16* p, double v) { *p = __float2bfloat16((float)v); }
template <typename TA, typename TC>
static void matmul(const Mm& x, const TA* A, const TA* B, TC* C, float alpha) {
  for (long long q = 0; q < x.batch; ++q)
    for (long long i = 0; i < x.m; ++i)
      for (long long j = 0; j < x.n; ++j) {
        double acc = 0.0;
        for (long long l = 0; l < x.k; ++l) {
          const long long ia = x.ta ? i * x.lda + l : l * x.lda + i;
          const long long ib = x.tb ? l * x.ldb + j : j * x.ldb + l;
          acc += (double)as_float(A[q * x.sa + ia]) * (double)as_float(B[q * x.sb + ib]);
        }
        store(&C[q * x.sc + j * x.ldc + i], (double)alpha * acc);
      }
}
static std::vector<__nv_bfloat16> bf16s(const std::vector<float>& v) {
  std::vector<__nv_bfloat16> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = __float2bfloat16(v[i]);
  return out;
}
static void print(float x) { unsigned b; memcpy(&b, &x, 4); printf("%u\n", b); }
"#;

/// The composed MLA baseline on the host: reads the MLA problem as [`MLA_DRIVER`] does, then
/// the plan (the slot table, buffer sizes, per bucket its offsets and two products in
/// cuBLASLt's terms), and runs the composition's steps in order: `mla_pack_q`,
/// `mla_gather_kv`, the scores, `mla_softmax`, `P V`, `mla_unpack`. Prints `output` then `lse`.
const MLA_COMPOSED_DRIVER: &str = r#"int main() {
  int B = next(), H = next(), DC = next(), DP = next();
  size_t pages = next(), tokens = next();
  std::vector<int> indptr = ints(B + 1), idx = ints(tokens);
  std::vector<__nv_bfloat16> QN = bf16s(floats((size_t)B * H * DC)), QP = bf16s(floats((size_t)B * H * DP));
  std::vector<__nv_bfloat16> CKV = bf16s(floats(pages * DC)), KPE = bf16s(floats(pages * DP));
  float scale; { unsigned b = next(); memcpy(&scale, &b, 4); }
  std::vector<long long> slots(next_ll());
  for (auto& x : slots) x = next_ll();
  const long long q_n = next_ll(), kv_n = next_ll(), s_n = next_ll(), o_n = next_ll();
  std::vector<__nv_bfloat16> Q(q_n), KV(kv_n), P(s_n), O(o_n), out((size_t)B * H * DC);
  std::vector<float> S(s_n), L((size_t)B * H);
  MlaComposedArgs a = {QN.data(), QP.data(), CKV.data(), KPE.data(), indptr.data(), idx.data(),
                       slots.data(), Q.data(), KV.data(), P.data(), out.data(), S.data(), O.data(),
                       L.data(), B, H, DC, DP};
  for (u64 i = 0; i < (u64)B * H * (DC + DP); ++i) mla_pack_q_element(a, i);
  for (long long t = 0; t < (long long)tokens; ++t) mla_gather_row(a, t, 0, 1);
  const long long buckets = next_ll();
  std::vector<long long> off(4 * buckets);
  std::vector<Mm> scores(buckets), values(buckets);
  for (long long i = 0; i < buckets; ++i) {
    for (int j = 0; j < 4; ++j) off[4 * i + j] = next_ll();
    scores[i] = read_mm();
    values[i] = read_mm();
  }
  // cuBLASLt's A is the product's B and its B the product's A (see cublaslt.rs).
  for (long long i = 0; i < buckets; ++i)
    matmul(scores[i], KV.data() + off[4 * i + 1], Q.data() + off[4 * i], S.data() + off[4 * i + 2], scale);
  for (u64 r = 0; r < (u64)B * H; ++r) mla_softmax_row<1>(a, r, 0);
  for (long long i = 0; i < buckets; ++i)
    matmul(values[i], KV.data() + off[4 * i + 1], P.data() + off[4 * i + 2], O.data() + off[4 * i + 3], 1.0f);
  for (u64 i = 0; i < (u64)B * H * DC; ++i) mla_unpack_element(a, i);
  for (auto x : out) print(__bfloat162float(x));
  for (float x : L) print(x);
  return 0;
}
"#;

/// A product in cuBLASLt's terms, as the host drivers read it (`read_mm`).
fn write_matmul(input: &mut String, p: &crate::cuda::cublaslt::Product) {
    let mm = p.matmul();
    let _ = writeln!(
        input,
        "{} {} {} {} {} {} {} {} {} {} {} {}",
        mm.m,
        mm.n,
        mm.k,
        u8::from(mm.trans_a),
        u8::from(mm.trans_b),
        mm.a.ld,
        mm.b.ld,
        mm.c.ld,
        mm.a.batch_stride,
        mm.b.batch_stride,
        mm.c.batch_stride,
        mm.batch
    );
}

/// How `got` fares under a task's tolerance against `want`: the elements outside
/// `atol + rtol |want|` and the relative L2 error.
fn under_tolerance(got: &[f32], want: &[f32], rtol: f64, atol: f64) -> (usize, f64) {
    let (mut se, mut sr, mut outside) = (0.0f64, 0.0f64, 0usize);
    for (g, w) in got.iter().zip(want) {
        let (g, w) = (f64::from(*g), f64::from(*w));
        let e = (g - w).abs();
        if e.is_nan() || e > atol + rtol * w.abs() {
            outside += 1;
        }
        se += (g - w) * (g - w);
        sr += w * w;
    }
    (outside, (se / sr.max(f64::MIN_POSITIVE)).sqrt())
}

/// The composed MLA baseline (support.cu's kernels run on the host in the order the GPU runs
/// them, the cuBLASLt products emulated with the layouts, leading dimensions and batch strides
/// `composed::mla::plan` gives) meets the task's tolerances against the plain CPU definition in
/// f64: DeepSeek's sizes over lengths that fall into several buckets (one key, lengths off any
/// tile, pages in random order among spare pages) and dims that align nothing. The test can
/// fail: with the scale over the latent width the LSE is off.
#[test]
fn mla_composed_baseline_meets_the_tasks_tolerances() {
    use super::composed::mla;
    let Some(nvcc) = nvcc_here("mla_composed_baseline_meets_the_tasks_tolerances") else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let exe = build_driver(
        &nvcc,
        dir.path(),
        &format!("{MATMUL_PRELUDE}{MLA_COMPOSED_DRIVER}"),
    );
    let deepseek = Mla {
        heads: 16,
        ckv: 512,
        pe: 64,
        kv_lens: vec![1, 130, 17, 65, 97, 40],
        pages: 2 * 350 + 3,
        seed: 7,
    };
    // Rows of 36 + 12 are copied element by element (the 16-byte copies need multiples of 8).
    let odd = Mla {
        heads: 3,
        ckv: 36,
        pe: 12,
        kv_lens: vec![5, 1, 33, 2],
        pages: 50,
        seed: 8,
    };
    for (n, (case, qk)) in [(&deepseek, 192.0f64), (&odd, 140.0)].iter().enumerate() {
        let (mut input, inputs) = case.problem();
        let shape = mla::MlaShape {
            batch: case.kv_lens.len() as u64,
            heads: case.heads as u64,
            ckv: case.ckv as u64,
            pe: case.pe as u64,
        };
        let lengths: Vec<u64> = case.kv_lens.iter().map(|&l| l as u64).collect();
        let plan = mla::plan(shape, &lengths).expect("plans");
        assert!(
            plan.buckets.len() >= 2,
            "case {n}: one bucket tests too little"
        );
        let _ = writeln!(input, "{}", plan.slots.len());
        for v in &plan.slots {
            let _ = writeln!(input, "{v}");
        }
        let _ = writeln!(
            input,
            "{} {} {} {}",
            plan.q_elements, plan.kv_elements, plan.score_elements, plan.o_elements
        );
        let _ = writeln!(input, "{}", plan.buckets.len());
        for b in &plan.buckets {
            let [q, kv, s, _, o] = mla::offsets(&plan, b);
            // Element offsets: Q, KV, P and O are bf16, S fp32 at the same index as P.
            let _ = writeln!(input, "{} {} {} {}", q / 2, kv / 2, s / 4, o / 2);
            write_matmul(&mut input, &b.scores);
            write_matmul(&mut input, &b.values);
        }
        let got = run_driver(&exe, &input);
        let (b, h, dc) = (case.kv_lens.len(), case.heads, case.ckv);
        assert_eq!(
            got.len(),
            b * h * dc + b * h,
            "one value per output element"
        );
        let (o, lse) = got.split_at(b * h * dc);
        let want = case.cpu(&inputs, 1.0 / qk.sqrt(), 1.0);
        // The task's tolerances: output allclose 2e-2 / 2e-2 and relative L2 at most 8e-3;
        // lse allclose 1e-3 / 1e-3.
        let (outside, o_rel) = under_tolerance(o, &want.o, 2e-2, 2e-2);
        assert!(
            outside == 0 && o_rel <= 8e-3,
            "case {n}: output: {outside} elements outside the tolerance, relative L2 {o_rel:e}"
        );
        let (outside, rel) = under_tolerance(lse, &want.lse, 1e-3, 1e-3);
        assert!(
            outside == 0,
            "case {n}: lse: {outside} elements outside the tolerance (relative L2 {rel:e})"
        );
        let latent = case.cpu(&inputs, 1.0 / ((case.ckv + case.pe) as f64).sqrt(), 1.0);
        let (outside, _) = under_tolerance(lse, &latent.lse, 1e-3, 1e-3);
        assert!(outside > 0, "case {n}: the scale changed nothing");
        eprintln!("case {n}: output relative L2 {o_rel:.2e}, lse {rel:.2e}");
    }
}

/// Reads a GDN prefill problem as unsigned integers (f32 values as their bits, the scale last),
/// runs `gdn_column` over every (sequence, value head, state column), prints `O` then
/// `NEW_STATE` as bits.
const GDN_DRIVER: &str = r#"int main() {
  int N = next(), HQK = next(), HV = next(), D = next(), T = next();
  std::vector<int> cu = ints(N + 1);
  std::vector<float> Q = floats((size_t)T * HQK * D), K = floats((size_t)T * HQK * D), V = floats((size_t)T * HV * D);
  std::vector<float> S = floats((size_t)N * HV * D * D), AL = floats(HV), A = floats((size_t)T * HV), DT = floats(HV),
                     B = floats((size_t)T * HV);
  float scale; { unsigned b = next(); memcpy(&scale, &b, 4); }
  std::vector<float> O((size_t)T * HV * D), NS((size_t)N * HV * D * D);
  GdnArgs a = {Q.data(), K.data(), V.data(), S.data(), AL.data(), A.data(), DT.data(), B.data(), cu.data(),
               O.data(), NS.data(), N, HQK, HV, D, scale};
  for (int n = 0; n < N; ++n)
    for (int h = 0; h < HV; ++h)
      for (int v = 0; v < D; ++v) gdn_column(a, n, h, v);
  for (float x : O) { unsigned b; memcpy(&b, &x, 4); printf("%u\n", b); }
  for (float x : NS) { unsigned b; memcpy(&b, &x, 4); printf("%u\n", b); }
  return 0;
}
"#;

/// One GDN prefill problem: sequences packed along the token axis, `qk` query/key heads shared
/// by `hv` value heads, head dim `d`, an initial state per sequence and value head.
struct Gdn {
    qk: usize,
    hv: usize,
    d: usize,
    seq_lens: Vec<usize>,
    seed: u64,
}

/// What a GDN problem's CPU definition sees, as the harness draws it: q and k of about unit
/// norm per row, everything but the f32 parameters rounded to bf16.
struct GdnInputs {
    q: Vec<f32>,
    k: Vec<f32>,
    v: Vec<f32>,
    state: Vec<f32>,
    a_log: Vec<f32>,
    a: Vec<f32>,
    dt_bias: Vec<f32>,
    b: Vec<f32>,
}

/// Which parts of the definition the CPU version applies (a variant without one must disagree).
#[derive(Clone, Copy)]
struct GdnParts {
    gate: bool,
    beta: bool,
    initial_state: bool,
}

const ALL_PARTS: GdnParts = GdnParts {
    gate: true,
    beta: true,
    initial_state: true,
};

impl Gdn {
    fn inputs(&self) -> GdnInputs {
        let mut rng = SplitMix::new(self.seed);
        let t: usize = self.seq_lens.iter().sum();
        let (qk, hv, d) = (self.qk, self.hv, self.d);
        let bf16 = |x: f32| f32::from_bits(x.to_bits() & 0xffff_0000);
        let unit_rows = |rng: &mut SplitMix, n: usize| -> Vec<f32> {
            let s = 1.0 / (d as f32).sqrt();
            Prefill::values(rng, n)
                .into_iter()
                .map(|x| bf16(x * s))
                .collect()
        };
        let shifted = |rng: &mut SplitMix, n: usize, scale: f32, shift: f32| -> Vec<f32> {
            Prefill::values(rng, n)
                .into_iter()
                .map(|x| x * scale + shift)
                .collect()
        };
        GdnInputs {
            q: unit_rows(&mut rng, t * qk * d),
            k: unit_rows(&mut rng, t * qk * d),
            v: Prefill::values(&mut rng, t * hv * d),
            state: Prefill::values(&mut rng, self.seq_lens.len() * hv * d * d),
            a_log: shifted(&mut rng, hv, 0.6, -1.0),
            a: Prefill::values(&mut rng, t * hv),
            dt_bias: shifted(&mut rng, hv, 0.3, -1.0),
            b: Prefill::values(&mut rng, t * hv),
        }
    }

    /// Runs the harness's column function through the driver: (output, new_state).
    fn run(&self, exe: &Path, x: &GdnInputs) -> (Vec<f32>, Vec<f32>) {
        let t: usize = self.seq_lens.iter().sum();
        let n = self.seq_lens.len();
        let mut input = String::new();
        let _ = writeln!(input, "{n} {} {} {} {t}", self.qk, self.hv, self.d);
        let mut at = 0;
        let _ = writeln!(input, "0");
        for l in &self.seq_lens {
            at += l;
            let _ = writeln!(input, "{at}");
        }
        for v in [&x.q, &x.k, &x.v, &x.state, &x.a_log, &x.a, &x.dt_bias, &x.b] {
            for e in v.iter() {
                let _ = writeln!(input, "{}", e.to_bits());
            }
        }
        // The scale the harness passes to the GPU reference.
        let scale = super::reference::gdn_scale(self.d as u64);
        let _ = writeln!(input, "{}", scale.to_bits());
        let got = run_driver(exe, &input);
        let (hv, d) = (self.hv, self.d);
        assert_eq!(
            got.len(),
            t * hv * d + n * hv * d * d,
            "one value per element"
        );
        let (o, s) = got.split_at(t * hv * d);
        (o.to_vec(), s.to_vec())
    }

    /// The release's definition, written as its Python reference has it, in f64: per sequence
    /// and value head a state `S [d_k][d_v]` (read from and written to k-last `[v][k]`); per
    /// token `old = g * S`, `old_v = k . old`, `new_v = beta * v + (1 - beta) * old_v`,
    /// `S = old - k^T old_v + k^T new_v`, `o = scale * q . S`; q and k from head
    /// `h / (hv / qk)` (repeat_interleave).
    fn cpu(&self, x: &GdnInputs, parts: GdnParts) -> (Vec<f32>, Vec<f32>) {
        let (qk, hv, d) = (self.qk, self.hv, self.d);
        let t_all: usize = self.seq_lens.iter().sum();
        let scale = 1.0 / (d as f64).sqrt();
        let mut o = vec![0f32; t_all * hv * d];
        let mut new_state = vec![0f32; self.seq_lens.len() * hv * d * d];
        let mut t0 = 0;
        for (n, &len) in self.seq_lens.iter().enumerate() {
            for h in 0..hv {
                let hk = h / (hv / qk);
                let base = (n * hv + h) * d * d;
                // s[k][v]
                let mut s = vec![vec![0f64; d]; d];
                if parts.initial_state {
                    for (k, row) in s.iter_mut().enumerate() {
                        for (v, e) in row.iter_mut().enumerate() {
                            *e = f64::from(x.state[base + v * d + k]);
                        }
                    }
                }
                for t in t0..t0 + len {
                    let th = t * hv + h;
                    let xg = f64::from(x.a[th]) + f64::from(x.dt_bias[h]);
                    let softplus = if xg > 20.0 { xg } else { xg.exp().ln_1p() };
                    let g = if parts.gate {
                        (-f64::from(x.a_log[h]).exp() * softplus).exp()
                    } else {
                        1.0
                    };
                    let beta = if parts.beta {
                        1.0 / (1.0 + (-f64::from(x.b[th])).exp())
                    } else {
                        1.0
                    };
                    let q: Vec<f64> = (0..d)
                        .map(|i| f64::from(x.q[(t * qk + hk) * d + i]))
                        .collect();
                    let k: Vec<f64> = (0..d)
                        .map(|i| f64::from(x.k[(t * qk + hk) * d + i]))
                        .collect();
                    let old: Vec<Vec<f64>> = s
                        .iter()
                        .map(|row| row.iter().map(|e| g * e).collect())
                        .collect();
                    let old_v: Vec<f64> = (0..d)
                        .map(|v| (0..d).map(|i| k[i] * old[i][v]).sum())
                        .collect();
                    let new_v: Vec<f64> = (0..d)
                        .map(|v| beta * f64::from(x.v[th * d + v]) + (1.0 - beta) * old_v[v])
                        .collect();
                    for i in 0..d {
                        for v in 0..d {
                            s[i][v] = old[i][v] - k[i] * old_v[v] + k[i] * new_v[v];
                        }
                    }
                    for v in 0..d {
                        let acc: f64 = (0..d).map(|i| q[i] * s[i][v]).sum();
                        o[th * d + v] = (scale * acc) as f32;
                    }
                }
                for (k, row) in s.iter().enumerate() {
                    for (v, e) in row.iter().enumerate() {
                        new_state[base + v * d + k] = *e as f32;
                    }
                }
            }
            t0 += len;
        }
        (o, new_state)
    }
}

/// The GDN prefill reference (`ref_gdn_prefill`'s column function, as the GPU runs it, with the
/// scale the harness passes) agrees with the release's definition written plainly in f64 on the
/// CPU: Qwen3-Next's sizes (4 query/key heads, 8 value heads, d = 128) over sequences of 1, 17
/// and 65 tokens, and a head dim that fills no warp (37) with 2 query/key heads shared by 6 value
/// heads over four sequences of different lengths. The test can fail: the gate, beta and the
/// initial state each change the outputs (a CPU definition without either disagrees).
#[test]
fn gdn_prefill_reference_matches_an_independent_cpu_implementation() {
    let Some(nvcc) = nvcc_here("gdn_prefill_reference_matches_an_independent_cpu_implementation")
    else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let exe = build_driver(&nvcc, dir.path(), GDN_DRIVER);
    let qwen = Gdn {
        qk: 4,
        hv: 8,
        d: 128,
        seq_lens: vec![1, 17, 65],
        seed: 5,
    };
    let odd = Gdn {
        qk: 2,
        hv: 6,
        d: 37,
        seq_lens: vec![5, 1, 33, 2],
        seed: 6,
    };
    for (n, case) in [&qwen, &odd].iter().enumerate() {
        let inputs = case.inputs();
        let (o, s) = case.run(&exe, &inputs);
        let (want_o, want_s) = case.cpu(&inputs, ALL_PARTS);
        for (name, g, w) in [("output", &o, &want_o), ("new_state", &s, &want_s)] {
            let (e, at) = worst(g, w);
            assert!(
                e <= 5e-5,
                "case {n}: {name}[{at}] = {} but the CPU definition gives {} (error {e:e})",
                g[at],
                w[at]
            );
        }
        for (what, parts) in [
            (
                "the gate",
                GdnParts {
                    gate: false,
                    ..ALL_PARTS
                },
            ),
            (
                "beta",
                GdnParts {
                    beta: false,
                    ..ALL_PARTS
                },
            ),
            (
                "the initial state",
                GdnParts {
                    initial_state: false,
                    ..ALL_PARTS
                },
            ),
        ] {
            let (other_o, other_s) = case.cpu(&inputs, parts);
            let (eo, _) = worst(&o, &other_o);
            let (es, _) = worst(&s, &other_s);
            assert!(
                eo > 1e-2 && es > 1e-2,
                "case {n}: {what} changed too little (output {eo:e}, state {es:e})"
            );
        }
    }
}

/// The composed GDN baseline on the host: reads the GDN problem as [`GDN_DRIVER`] does, then
/// the plan (the chunk table and the six products in cuBLASLt's terms), and runs the
/// composition's steps in order: `gdn_pack`, `K K^T`, `Q K^T`, `gdn_wy` (gates, L, the
/// triangular solve), `Tv V`, `Tk K`, `gdn_recurrence` (one part per column), `Q S`, `M U`,
/// `gdn_output`. Prints `output` then `new_state`.
const GDN_COMPOSED_DRIVER: &str = r#"int main() {
  int N = next(), HQK = next(), HV = next(), D = next(), T = next();
  std::vector<int> cu = ints(N + 1);
  std::vector<__nv_bfloat16> Q = bf16s(floats((size_t)T * HQK * D)), K = bf16s(floats((size_t)T * HQK * D)),
                             V = bf16s(floats((size_t)T * HV * D));
  std::vector<float> S = floats((size_t)N * HV * D * D), AL = floats(HV);
  std::vector<__nv_bfloat16> A = bf16s(floats((size_t)T * HV));
  std::vector<float> DT = floats(HV);
  std::vector<__nv_bfloat16> B = bf16s(floats((size_t)T * HV));
  float scale; { unsigned b = next(); memcpy(&scale, &b, 4); }
  const int NC = (int)next_ll();
  std::vector<int> chunks(2 * NC + N + 1);
  for (auto& x : chunks) x = (int)next_ll();
  Mm kk = read_mm(), qk = read_mm(), wv = read_mm(), wk = read_mm(), qs = read_mm(), mu = read_mm();
  const size_t pairs = (size_t)NC * HV, rows = pairs * GDN_CHUNK * D, square = pairs * GDN_CHUNK * GDN_CHUNK;
  std::vector<__nv_bfloat16> Qc(rows), Kc(rows), Vc(rows), Tv(square), Tk(square), M(square), Sc(pairs * D * D), U(rows);
  std::vector<__nv_bfloat16> out((size_t)T * HV * D);
  std::vector<float> G(pairs * GDN_CHUNK), Beta(pairs * GDN_CHUNK), KK(square), QK(square), Wv(rows), Wk(rows), QS(rows), MU(rows);
  std::vector<float> NS((size_t)N * HV * D * D);
  GdnComposedArgs a = {Q.data(), K.data(), V.data(), A.data(), B.data(), AL.data(), DT.data(), S.data(),
                       cu.data(), chunks.data(), Qc.data(), Kc.data(), Vc.data(), Tv.data(), Tk.data(),
                       M.data(), Sc.data(), U.data(), out.data(), G.data(), Beta.data(), NS.data(),
                       KK.data(), QK.data(), Wv.data(), Wk.data(), QS.data(), MU.data(),
                       N, NC, HQK, HV, D, scale};
  for (u64 i = 0; i < rows; ++i) gdn_pack_element(a, i);
  // cuBLASLt's A is the product's B and its B the product's A (see cublaslt.rs).
  matmul(kk, Kc.data(), Kc.data(), KK.data(), 1.0f);
  matmul(qk, Kc.data(), Qc.data(), QK.data(), 1.0f);
  std::vector<float> logg(GDN_CHUNK), L(GDN_CHUNK * GDN_CHUNK);
  for (int c = 0; c < NC; ++c)
    for (int h = 0; h < HV; ++h) {
      for (int i = 0; i < GDN_CHUNK; ++i) gdn_gate_token(a, c, h, i, logg.data());
      gdn_gate_scan(a, c, h, logg.data());
      for (int m = 0; m < GDN_CHUNK; ++m) gdn_l_column(a, c, h, m, L.data());
      for (int m = 0; m < GDN_CHUNK; ++m) gdn_wy_column(a, c, h, m, L.data());
    }
  matmul(wv, Vc.data(), Tv.data(), Wv.data(), 1.0f);
  matmul(wk, Kc.data(), Tk.data(), Wk.data(), 1.0f);
  std::vector<float> ush((size_t)GDN_CHUNK * D);
  for (int n = 0; n < N; ++n)
    for (int h = 0; h < HV; ++h)
      for (int v = 0; v < D; ++v) gdn_recur_column<1>(a, n, h, v, 0, ush.data());
  matmul(qs, Sc.data(), Qc.data(), QS.data(), 1.0f);
  matmul(mu, U.data(), M.data(), MU.data(), 1.0f);
  for (u64 i = 0; i < (u64)T * HV * D; ++i) gdn_output_element(a, i);
  for (auto x : out) print(__bfloat162float(x));
  for (float x : NS) print(x);
  return 0;
}
"#;

/// The composed GDN baseline (support.cu's kernels run on the host in the order the GPU runs
/// them, the cuBLASLt products emulated with the layouts `composed::gdn::plan` gives) meets the
/// task's tolerances against the release's definition written plainly in f64: Qwen3-Next's
/// sizes over sequences of 1, 17, 65 and 130 tokens (partial chunks, several chunks carrying
/// the state), and 2 query/key heads shared by 6 value heads of 40 over four sequences. The
/// test can fail: without the gate, beta or the initial state the CPU definition disagrees.
#[test]
fn gdn_composed_baseline_meets_the_tasks_tolerances() {
    use super::composed::gdn;
    let Some(nvcc) = nvcc_here("gdn_composed_baseline_meets_the_tasks_tolerances") else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let exe = build_driver(
        &nvcc,
        dir.path(),
        &format!("{MATMUL_PRELUDE}{GDN_COMPOSED_DRIVER}"),
    );
    let qwen = Gdn {
        qk: 4,
        hv: 8,
        d: 128,
        seq_lens: vec![1, 17, 65, 130],
        seed: 9,
    };
    let small = Gdn {
        qk: 2,
        hv: 6,
        d: 40,
        seq_lens: vec![5, 1, 70, 2],
        seed: 10,
    };
    for (n, case) in [&qwen, &small].iter().enumerate() {
        let x = case.inputs();
        let t: usize = case.seq_lens.iter().sum();
        let ns = case.seq_lens.len();
        let mut input = String::new();
        let _ = writeln!(input, "{ns} {} {} {} {t}", case.qk, case.hv, case.d);
        let mut at = 0;
        let _ = writeln!(input, "0");
        for l in &case.seq_lens {
            at += l;
            let _ = writeln!(input, "{at}");
        }
        for v in [&x.q, &x.k, &x.v, &x.state, &x.a_log, &x.a, &x.dt_bias, &x.b] {
            for e in v.iter() {
                let _ = writeln!(input, "{}", e.to_bits());
            }
        }
        let scale = super::reference::gdn_scale(case.d as u64);
        let _ = writeln!(input, "{}", scale.to_bits());
        let shape = gdn::GdnShape {
            heads: case.qk as u64,
            v_heads: case.hv as u64,
            dim: case.d as u64,
        };
        let lengths: Vec<u64> = case.seq_lens.iter().map(|&l| l as u64).collect();
        let plan = gdn::plan(shape, &lengths).expect("plans");
        let _ = writeln!(input, "{}", plan.chunks);
        for v in &plan.table {
            let _ = writeln!(input, "{v}");
        }
        let p = &plan.products;
        for product in [&p.kk, &p.qk, &p.wv, &p.wk, &p.qs, &p.mu] {
            write_matmul(&mut input, product);
        }
        let got = run_driver(&exe, &input);
        let (hv, d) = (case.hv, case.d);
        assert_eq!(
            got.len(),
            t * hv * d + ns * hv * d * d,
            "one value per element"
        );
        let (o, s) = got.split_at(t * hv * d);
        let (want_o, want_s) = case.cpu(&x, ALL_PARTS);
        // The task's tolerances: output allclose 2e-2 / 2e-2 and relative L2 at most 1e-2;
        // new_state relative L2 at most 1e-2.
        let (outside, o_rel) = under_tolerance(o, &want_o, 2e-2, 2e-2);
        assert!(
            outside == 0 && o_rel <= 1e-2,
            "case {n}: output: {outside} elements outside the tolerance, relative L2 {o_rel:e}"
        );
        let (_, s_rel) = under_tolerance(s, &want_s, 0.0, f64::INFINITY);
        assert!(s_rel <= 1e-2, "case {n}: new_state relative L2 {s_rel:e}");
        for parts in [
            GdnParts {
                gate: false,
                ..ALL_PARTS
            },
            GdnParts {
                beta: false,
                ..ALL_PARTS
            },
            GdnParts {
                initial_state: false,
                ..ALL_PARTS
            },
        ] {
            let (other_o, other_s) = case.cpu(&x, parts);
            let (_, eo) = under_tolerance(o, &other_o, 0.0, f64::INFINITY);
            let (_, es) = under_tolerance(s, &other_s, 0.0, f64::INFINITY);
            assert!(
                eo > 1e-2 || es > 1e-2,
                "case {n}: a part of the definition changed nothing"
            );
        }
        eprintln!("case {n}: output relative L2 {o_rel:.2e}, new_state {s_rel:.2e}");
    }
}
