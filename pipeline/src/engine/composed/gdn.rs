//! GDN prefill's composed baseline: the chunked gated delta rule (the algorithm of
//! flash-linear-attention's chunked kernels, written here from the recurrence). No library has
//! it, so it is composed of harness kernels and cuBLASLt products, all strided-batched over
//! every (chunk, value head) of the batch:
//!
//! 1. `gdn_pack`: each sequence's tokens cut into chunks of [`CHUNK`] (its last one partial,
//!    zero-padded), q and k (per value head: head `h` reads query/key head `h / (HV / HQK)`)
//!    and v as bf16 `[chunk, head, CHUNK, D]`;
//! 2. cuBLASLt: `KK = K K^T` and `QK = Q K^T` (fp32);
//! 3. `gdn_wy`: the gates (`G`, the running sum of the log gates, and beta), then the WY
//!    representation by a triangular solve, `T = (I + L)^-1` with `L` the strictly lower
//!    `beta_i exp(G_i - G_j) KK_ij`, giving `Tv = T diag(beta)`, `Tk = T diag(beta exp(G))` and
//!    the intra-chunk mask `M = exp(G_i - G_j) QK_ij` (j <= i), in bf16;
//! 4. cuBLASLt: `Wv = Tv V` and `Wk = Tk K` (fp32);
//! 5. `gdn_recurrence`: across each sequence's chunks in order, per value head, from the state
//!    `S` at the chunk's start (fp32): `U = Wv - Wk S`, then
//!    `S = exp(G_last) S + K^T diag(exp(G_last - G)) U`; it keeps each chunk's starting state
//!    and `U` (bf16), and writes `new_state`;
//! 6. cuBLASLt: `A = Q S_chunk` and `B = M U` (fp32);
//! 7. `gdn_output`: `output = scale (exp(G) A + B)` at each token, in bf16.
//!
//! The recurrence across chunks (two matrix-vector products per state column and token, on
//! the CUDA cores) is a harness kernel, one block per (sequence, value head); every product
//! within a chunk is cuBLASLt's.

use crate::cuda::cublaslt::{Elem, Product, RowMajor};
use crate::cuda::driver::{Geometry, Gpu};
use crate::engine::inputs::TensorSet;
use crate::engine::support::{Arg, Support, stride_geometry};

use super::{Builder, Composed, Composition, Region, Step, int, tensor};

/// What the record's `baseline.label` says.
pub const LABEL: &str = "composed: chunked gated delta rule (chunks of 64), intra-chunk products and outputs on cuBLASLt batched GEMMs, gates + WY triangular solve + state recurrence across chunks in harness kernels";

/// The composition in a sentence (the methodology and task pages say it).
pub const STEPS: &str = "the chunked gated delta rule in chunks of 64 tokens: harness kernels pack q, k and v per chunk, compute the gates and the WY representation by a triangular solve (T = (I + L)^-1), and carry the fp32 state across each sequence's chunks (U = Wv - Wk S, S = exp(G_last) S + K^T diag(exp(G_last - G)) U); cuBLASLt strided-batched GEMMs, over every (chunk, value head), compute K K^T, Q K^T, Wv = T diag(beta) V, Wk = T diag(beta exp(G)) K and the outputs Q S and M U, bf16 operands with fp32 accumulation";

/// Tokens per chunk (support.cu's `GDN_CHUNK`).
pub const CHUNK: u64 = 64;

/// Threads per state column in `gdn_recurrence` (support.cu's `GDN_PARTS`).
const PARTS: u64 = 4;

/// The largest head dim the kernels take (support.cu's `GDN_MAXD`).
pub const MAX_DIM: u64 = 128;

/// GDN's sizes: `heads` query/key heads shared by `v_heads` value heads, head dim `dim`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GdnShape {
    pub heads: u64,
    pub v_heads: u64,
    pub dim: u64,
}

/// The products, in the order they run: each `(what, product)`.
#[derive(Debug, Clone, PartialEq)]
pub struct Products {
    pub kk: Product,
    pub qk: Product,
    pub wv: Product,
    pub wk: Product,
    pub qs: Product,
    pub mu: Product,
}

/// The composition for one set of sequence lengths.
#[derive(Debug, Clone, PartialEq)]
pub struct GdnPlan {
    pub shape: GdnShape,
    pub sequences: u64,
    pub tokens: u64,
    /// Chunks over the batch.
    pub chunks: u64,
    /// The table the kernels read: each chunk's first token, then each chunk's tokens, then
    /// each sequence's first chunk (and one past the last).
    pub table: Vec<i32>,
    pub products: Products,
}

/// The composition for sequences of `lengths` tokens, or why the sizes do not fit.
pub fn plan(shape: GdnShape, lengths: &[u64]) -> Result<GdnPlan, String> {
    let (hq, hv, d) = (shape.heads, shape.v_heads, shape.dim);
    if d == 0 || d > MAX_DIM || !d.is_multiple_of(8) {
        return Err(format!(
            "head dim {d}: the kernels take multiples of 8 up to {MAX_DIM}"
        ));
    }
    if hq == 0 || hv == 0 || !hv.is_multiple_of(hq) {
        return Err(format!(
            "{hv} value heads do not share {hq} query/key heads evenly"
        ));
    }
    let int = |v: u64| i32::try_from(v).map_err(|_| format!("{v} does not fit an int32"));
    let (mut starts, mut lens, mut first) = (Vec::new(), Vec::new(), vec![0i32]);
    let mut token = 0u64;
    for &l in lengths {
        let mut at = 0;
        while at < l {
            let n = CHUNK.min(l - at);
            starts.push(int(token + at)?);
            lens.push(int(n)?);
            at += n;
        }
        token += l;
        first.push(int(starts.len() as u64)?);
    }
    let nc = starts.len() as u64;
    if nc == 0 {
        return Err("no tokens".into());
    }
    let batch = nc * hv;
    let dense = |elem, rows, cols| RowMajor::dense(elem, rows, cols);
    let (bf16, f32) = (Elem::Bf16, Elem::F32);
    let tokens_by_dim = dense(bf16, CHUNK, d);
    let square = |elem| dense(elem, CHUNK, CHUNK);
    let products = Products {
        kk: Product::new(
            (tokens_by_dim, false),
            (tokens_by_dim, true),
            square(f32),
            batch,
        )?,
        qk: Product::new(
            (tokens_by_dim, false),
            (tokens_by_dim, true),
            square(f32),
            batch,
        )?,
        wv: Product::new(
            (square(bf16), false),
            (tokens_by_dim, false),
            dense(f32, CHUNK, d),
            batch,
        )?,
        wk: Product::new(
            (square(bf16), false),
            (tokens_by_dim, false),
            dense(f32, CHUNK, d),
            batch,
        )?,
        qs: Product::new(
            (tokens_by_dim, false),
            (dense(bf16, d, d), false),
            dense(f32, CHUNK, d),
            batch,
        )?,
        mu: Product::new(
            (square(bf16), false),
            (tokens_by_dim, false),
            dense(f32, CHUNK, d),
            batch,
        )?,
    };
    let mut table = starts;
    table.extend(lens);
    table.extend(first);
    Ok(GdnPlan {
        shape,
        sequences: lengths.len() as u64,
        tokens: token,
        chunks: nc,
        table,
        products,
    })
}

/// The plan in words.
pub fn describe(plan: &GdnPlan) -> String {
    format!(
        "{} chunks of up to {CHUNK} tokens over {} sequences ({} tokens), {} value heads: products batched over {} (chunk, value head) pairs",
        plan.chunks,
        plan.sequences,
        plan.tokens,
        plan.shape.v_heads,
        plan.chunks * plan.shape.v_heads
    )
}

/// The task's tensors, in the task's names.
#[derive(Debug, Clone, Copy)]
pub struct Tensors {
    pub q: Region,
    pub k: Region,
    pub v: Region,
    pub state: Region,
    pub a_log: Region,
    pub a: Region,
    pub dt_bias: Region,
    pub b: Region,
    pub cu_seqlens: Region,
    pub output: Region,
    pub new_state: Region,
}

/// The buffers the composition owns.
#[derive(Debug, Clone, Copy)]
pub struct Owned {
    pub table: Region,
    pub qc: Region,
    pub kc: Region,
    pub vc: Region,
    pub g: Region,
    pub beta: Region,
    pub kk: Region,
    pub qk: Region,
    pub tv: Region,
    pub tk: Region,
    pub m: Region,
    pub wv: Region,
    pub wk: Region,
    pub sc: Region,
    pub u: Region,
    pub qs: Region,
    pub mu: Region,
}

/// The bytes of each buffer in [`Owned`]'s order.
pub fn owned_bytes(plan: &GdnPlan) -> [u64; 17] {
    let pairs = plan.chunks * plan.shape.v_heads;
    let d = plan.shape.dim;
    let rows = pairs * CHUNK * d;
    let square = pairs * CHUNK * CHUNK;
    let gates = pairs * CHUNK;
    [
        4 * plan.table.len() as u64,
        2 * rows,
        2 * rows,
        2 * rows,
        4 * gates,
        4 * gates,
        4 * square,
        4 * square,
        2 * square,
        2 * square,
        2 * square,
        4 * rows,
        4 * rows,
        2 * pairs * d * d,
        2 * rows,
        4 * rows,
        4 * rows,
    ]
}

/// One block per `blocks`, of `threads` each.
fn blocks(blocks: u64, threads: u64) -> Result<Geometry, String> {
    Ok(Geometry {
        grid: [
            u32::try_from(blocks).map_err(|_| format!("{blocks} blocks"))?,
            1,
            1,
        ],
        block: [
            u32::try_from(threads).map_err(|_| format!("{threads} threads"))?,
            1,
            1,
        ],
        shared_mem: 0,
        cluster: None,
    })
}

/// The composition's steps in order (see the module doc), the output scaled by `scale`.
pub fn steps(plan: &GdnPlan, t: &Tensors, w: &Owned, scale: f32) -> Result<Vec<Step>, String> {
    let s = plan.shape;
    let (hq, hv, d) = (s.heads, s.v_heads, s.dim);
    let (n, nc, tokens) = (plan.sequences, plan.chunks, plan.tokens);
    if t.output.bytes < 2 * tokens * hv * d || t.new_state.bytes < 4 * n * hv * d * d {
        return Err("the task's outputs are smaller than the batch's".into());
    }
    let ptr = |r: Region| Arg::Ptr(r.ptr);
    let p = &plan.products;
    let gemm = |what: &str, product: Product, operands: [Region; 3]| Step::Gemm {
        what: what.to_string(),
        product,
        operands,
        alpha: 1.0,
    };
    Ok(vec![
        Step::Kernel {
            name: "gdn_pack",
            geometry: stride_geometry(nc * hv * CHUNK * d),
            args: vec![
                ptr(t.q),
                ptr(t.k),
                ptr(t.v),
                ptr(w.table),
                ptr(w.qc),
                ptr(w.kc),
                ptr(w.vc),
                int(nc)?,
                int(hq)?,
                int(hv)?,
                int(d)?,
            ],
        },
        gemm("K K^T", p.kk, [w.kc, w.kc, w.kk]),
        gemm("Q K^T", p.qk, [w.qc, w.kc, w.qk]),
        Step::Kernel {
            name: "gdn_wy",
            geometry: blocks(nc * hv, CHUNK)?,
            args: vec![
                ptr(t.a),
                ptr(t.b),
                ptr(t.a_log),
                ptr(t.dt_bias),
                ptr(w.table),
                ptr(w.kk),
                ptr(w.qk),
                ptr(w.g),
                ptr(w.beta),
                ptr(w.tv),
                ptr(w.tk),
                ptr(w.m),
                int(nc)?,
                int(hv)?,
            ],
        },
        gemm("T diag(beta) V", p.wv, [w.tv, w.vc, w.wv]),
        gemm("T diag(beta exp(G)) K", p.wk, [w.tk, w.kc, w.wk]),
        Step::Kernel {
            name: "gdn_recurrence",
            geometry: blocks(n * hv, d * PARTS)?,
            args: vec![
                ptr(t.state),
                ptr(w.table),
                ptr(w.g),
                ptr(w.wv),
                ptr(w.wk),
                ptr(w.kc),
                ptr(w.sc),
                ptr(w.u),
                ptr(t.new_state),
                int(n)?,
                int(nc)?,
                int(hv)?,
                int(d)?,
            ],
        },
        gemm("Q S", p.qs, [w.qc, w.sc, w.qs]),
        gemm("M U", p.mu, [w.m, w.u, w.mu]),
        Step::Kernel {
            name: "gdn_output",
            geometry: stride_geometry(tokens * hv * d),
            args: vec![
                ptr(t.cu_seqlens),
                ptr(w.table),
                ptr(w.g),
                ptr(w.qs),
                ptr(w.mu),
                ptr(t.output),
                int(n)?,
                int(nc)?,
                int(hv)?,
                int(d)?,
                Arg::U64(tokens),
                Arg::F32(scale),
            ],
        },
    ])
}

/// The composition bound to `set` (GDN prefill's tensors) for sequences of `lengths` tokens,
/// the output scaled by `scale`: its buffers made, its products planned.
pub fn bind(
    gpu: &Gpu,
    support: &Support,
    set: &TensorSet,
    shape: GdnShape,
    lengths: &[u64],
    scale: f32,
) -> Result<Composed, String> {
    let plan = plan(shape, lengths)?;
    let mut c = Builder::new(gpu, support);
    let table: Vec<u8> = plan.table.iter().flat_map(|v| v.to_le_bytes()).collect();
    let bytes = owned_bytes(&plan);
    let mut r = Vec::new();
    for &b in &bytes[1..] {
        r.push(c.buffer(b)?);
    }
    let owned = Owned {
        table: c.table(&table)?,
        qc: r[0],
        kc: r[1],
        vc: r[2],
        g: r[3],
        beta: r[4],
        kk: r[5],
        qk: r[6],
        tv: r[7],
        tk: r[8],
        m: r[9],
        wv: r[10],
        wk: r[11],
        sc: r[12],
        u: r[13],
        qs: r[14],
        mu: r[15],
    };
    let tensors = Tensors {
        q: tensor(set, "q")?,
        k: tensor(set, "k")?,
        v: tensor(set, "v")?,
        state: tensor(set, "state")?,
        a_log: tensor(set, "A_log")?,
        a: tensor(set, "a")?,
        dt_bias: tensor(set, "dt_bias")?,
        b: tensor(set, "b")?,
        cu_seqlens: tensor(set, "cu_seqlens")?,
        output: c.output("output", tensor(set, "output")?.bytes)?,
        new_state: c.output("new_state", tensor(set, "new_state")?.bytes)?,
    };
    for step in steps(&plan, &tensors, &owned, scale)? {
        c.step(step)?;
    }
    Ok(c.finish(Composition::GdnPrefill, describe(&plan)))
}

#[cfg(test)]
mod tests {
    use super::*;

    const QWEN: GdnShape = GdnShape {
        heads: 4,
        v_heads: 8,
        dim: 128,
    };

    /// Chunks cut each sequence at its start, every [`CHUNK`] tokens, the last one partial.
    #[test]
    fn chunks_start_at_each_sequence_and_hold_at_most_a_chunk() {
        let p = plan(QWEN, &[1, 64, 130, 65]).expect("plans");
        assert_eq!(p.chunks, 1 + 1 + 3 + 2);
        let nc = p.chunks as usize;
        let (starts, rest) = p.table.split_at(nc);
        let (lens, first) = rest.split_at(nc);
        assert_eq!(starts, &[0, 1, 65, 129, 193, 195, 259]);
        assert_eq!(lens, &[1, 64, 64, 64, 2, 64, 1]);
        assert_eq!(first, &[0, 1, 2, 5, 7]);
        assert_eq!(p.tokens, 260);
        assert!(plan(QWEN, &[]).is_err());
        let odd = GdnShape {
            heads: 3,
            v_heads: 8,
            dim: 128,
        };
        assert!(plan(odd, &[5]).is_err_and(|e| e.contains("evenly")));
        let wide = GdnShape { dim: 256, ..QWEN };
        assert!(plan(wide, &[5]).is_err_and(|e| e.contains("128")));
    }

    /// The layouts cuBLASLt is given, batched over every (chunk, value head): dense chunks of
    /// 64 rows of 128, and 64 x 64 matrices; K transposed in both K products.
    #[test]
    fn the_products_layouts_for_qwen_sizes() {
        let p = plan(QWEN, &[17, 15]).expect("plans");
        let pr = &p.products;
        let batch = 2 * 8;
        for (prod, dims) in [
            (pr.kk, (64, 64, 128)),
            (pr.qk, (64, 64, 128)),
            (pr.wv, (64, 128, 64)),
            (pr.wk, (64, 128, 64)),
            (pr.qs, (64, 128, 128)),
            (pr.mu, (64, 128, 64)),
        ] {
            assert_eq!(prod.dims(), dims);
            assert_eq!(prod.batch, batch);
        }
        let mm = pr.kk.matmul();
        assert!(mm.trans_a && !mm.trans_b);
        assert_eq!((mm.m, mm.n, mm.k), (64, 64, 128));
        assert_eq!((mm.a.ld, mm.a.batch_stride), (128, 64 * 128));
        assert_eq!(
            (mm.c.ld, mm.c.batch_stride, mm.c.elem),
            (64, 64 * 64, Elem::F32)
        );
        let mm = pr.qs.matmul();
        assert!(!mm.trans_a && !mm.trans_b);
        assert_eq!((mm.m, mm.n, mm.k), (128, 64, 128));
        assert_eq!((mm.a.ld, mm.a.batch_stride), (128, 128 * 128));
        assert_eq!((mm.b.ld, mm.b.batch_stride), (128, 64 * 128));
        let mm = pr.wv.matmul();
        assert_eq!((mm.m, mm.n, mm.k), (128, 64, 64));
        assert_eq!((mm.a.ld, mm.b.ld, mm.c.ld), (128, 64, 128));
    }

    /// The steps of every workload of the suite's GDN tasks bind: kernels that exist with the
    /// arguments their PTX declares, products whose operands lie in their buffers.
    #[test]
    fn the_steps_fit_the_kernels_and_the_buffers() {
        let suite = crate::task::Suite::load(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tasks"),
        )
        .expect("the suite loads");
        let mut seen = 0;
        for task in suite
            .tasks
            .iter()
            .filter(|t| matches!(t.op, crate::task::Op::GdnPrefill))
        {
            seen += 1;
            for w in &task.workloads {
                let env = task.bindings(w);
                let problem = task.problem_in(&env).expect("sizes");
                let g = problem.gdn().expect("gdn");
                let shape = GdnShape {
                    heads: g.heads,
                    v_heads: g.v_heads,
                    dim: g.head_dim,
                };
                let lengths = w.seq_lens.clone().expect("seq_lens");
                let p = plan(shape, &lengths).expect("plans");
                let (n, t, hv, d) = (p.sequences, p.tokens, g.v_heads, g.head_dim);
                let [q, k, v, state, a_log, a, dt_bias, b, cu, output, new_state] =
                    super::super::fake_regions([
                        2 * t * g.heads * d,
                        2 * t * g.heads * d,
                        2 * t * hv * d,
                        4 * n * hv * d * d,
                        4 * hv,
                        2 * t * hv,
                        4 * hv,
                        2 * t * hv,
                        4 * (n + 1),
                        2 * t * hv * d,
                        4 * n * hv * d * d,
                    ]);
                let tensors = Tensors {
                    q,
                    k,
                    v,
                    state,
                    a_log,
                    a,
                    dt_bias,
                    b,
                    cu_seqlens: cu,
                    output,
                    new_state,
                };
                let r = super::super::fake_regions(owned_bytes(&p));
                let owned = Owned {
                    table: r[0],
                    qc: r[1],
                    kc: r[2],
                    vc: r[3],
                    g: r[4],
                    beta: r[5],
                    kk: r[6],
                    qk: r[7],
                    tv: r[8],
                    tk: r[9],
                    m: r[10],
                    wv: r[11],
                    wk: r[12],
                    sc: r[13],
                    u: r[14],
                    qs: r[15],
                    mu: r[16],
                };
                let steps = steps(&p, &tensors, &owned, 0.5).expect("steps");
                assert_eq!(steps.len(), 10, "{}", w.name);
                super::super::check_steps(&steps);
                assert_eq!(
                    p.chunks,
                    lengths.iter().map(|l| l.div_ceil(CHUNK)).sum::<u64>(),
                    "{}",
                    w.name
                );
            }
        }
        assert_eq!(seen, 2, "the suite's two GDN tasks");
    }
}
