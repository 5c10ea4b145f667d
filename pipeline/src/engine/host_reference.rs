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

/// Reads the problem as unsigned integers (f32 values as their bits), runs `prefill_row<1>`
/// over every (token, head) row, prints `O` then `LSE` as bits.
const PREFILL_DRIVER: &str = r#"#include "support.cu"
#include <cstdio>
#include <cstring>
#include <vector>
static unsigned next() { unsigned v = 0; if (scanf("%u", &v) != 1) { fprintf(stderr, "short input\n"); exit(2); } return v; }
static std::vector<int> ints(size_t n) { std::vector<int> v(n); for (auto& x : v) x = (int)next(); return v; }
static std::vector<float> floats(size_t n) { std::vector<float> v(n); for (auto& x : v) { unsigned b = next(); memcpy(&x, &b, 4); } return v; }
int main() {
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

/// Compiles the driver next to a copy of support.cu; the executable's path.
fn build_driver(nvcc: &Path, dir: &Path, driver: &str) -> std::path::PathBuf {
    std::fs::write(dir.join("support.cu"), SOURCE).expect("write support.cu");
    std::fs::write(dir.join("driver.cu"), driver).expect("write driver.cu");
    let lib = nvcc
        .parent()
        .and_then(Path::parent)
        .expect("nvcc sits in CUDA_HOME/bin")
        .join("lib");
    let exe = dir.join("driver");
    let out = std::process::Command::new(nvcc)
        .current_dir(dir)
        .args(["-std=c++17", "-arch=sm_90", "-L"])
        .arg(&lib)
        .args(["driver.cu", "-o"])
        .arg(&exe)
        .output()
        .expect("nvcc runs");
    assert!(
        out.status.success(),
        "nvcc failed on support.cu with the host driver:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    exe
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

        let mut child = std::process::Command::new(exe)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("the driver starts");
        std::io::Write::write_all(&mut child.stdin.take().expect("stdin"), input.as_bytes())
            .expect("write the problem");
        let out = child.wait_with_output().expect("the driver ends");
        assert!(out.status.success(), "driver failed: {:?}", out.status);
        let got: Vec<f32> = String::from_utf8(out.stdout)
            .expect("utf-8")
            .lines()
            .map(|l| f32::from_bits(l.parse().expect("bits")))
            .collect();
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
