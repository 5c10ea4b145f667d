//! MLA decode's composed baseline. With the weights absorbed, MLA decode is multi-query
//! attention with a key of `DK = DC + DP` (the latent row and the rotary row) and the latent
//! row as the value, over a paged cache. No library has it, so it is composed:
//!
//! 1. `mla_pack_q`: each sequence's queries `[q_nope | q_pe]` as bf16 `Q [H, DK]`;
//! 2. `mla_gather_kv`: each sequence's pages, in order, as bf16 rows `[ckv | kpe]` of a padded
//!    buffer `KV [len, DK]` (the padding zeroed once: finite, and weighed by 0);
//! 3. per bucket, cuBLASLt: scores `S = sm_scale * Q KV^T` (fp32), batched over its sequences;
//! 4. `mla_softmax`: per query head, the natural-log LSE over the sequence's keys and
//!    `P = exp(S - LSE)` in bf16, 0 over the padding;
//! 5. per bucket, cuBLASLt: `O = P V` with `V` the first `DC` columns of `KV` (leading dimension
//!    `DK`), written in bf16;
//! 6. `mla_unpack`: `O` back into the task's `output` by sequence.
//!
//! Sequences are sorted by length and cut into buckets whose lengths lie within a factor of
//! two ([`plan`]), each padded to its longest (rounded up to [`PAD`] keys), so the padded
//! products do at most about twice the work of the sequences' own keys; one strided-batched
//! product each way per bucket.

use crate::cuda::cublaslt::{Elem, Product, RowMajor};
use crate::cuda::driver::Gpu;
use crate::engine::inputs::TensorSet;
use crate::engine::support::{Arg, Support, stride_geometry, warp_geometry};

use super::{
    Builder, Composed, Composition, OPERAND_ALIGNMENT, Region, Step, alignment_unit, int, lcm_unit,
    round_up, tensor,
};

/// What the record's `baseline.label` says.
pub const LABEL: &str = "composed: gather + cuBLASLt batched GEMM (scores) + softmax + cuBLASLt batched GEMM (P V), sequences in length buckets";

/// The composition in a sentence (the methodology and task pages say it).
pub const STEPS: &str = "a harness kernel gathers each sequence's pages into a contiguous bf16 buffer of [ckv | kpe] rows and packs [q_nope | q_pe]; per bucket of sequences within a factor of two in length (padded to the bucket's longest), a cuBLASLt strided-batched GEMM computes the scores sm_scale Q K^T in fp32; a harness kernel computes the natural-log LSE and P = exp(S - LSE) in bf16, masked past each sequence's length; a second strided-batched GEMM per bucket computes O = P V with V the keys' first 512 columns (leading dimension 576); a harness kernel writes O back by sequence";

/// Padded lengths are multiples of this many keys.
pub const PAD: u64 = 64;

/// Longs per slot in [`MlaPlan::slots`] (support.cu's `MLA_SLOT`).
pub const SLOT: usize = 6;

/// MLA decode's sizes: `batch` sequences, `heads` query heads, latent `ckv` and rotary `pe`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MlaShape {
    pub batch: u64,
    pub heads: u64,
    pub ckv: u64,
    pub pe: u64,
}

impl MlaShape {
    /// The key width the scores multiply over.
    pub fn key(&self) -> u64 {
        self.ckv + self.pe
    }
}

/// One bucket: the slots `first .. first + count` (sequences of similar length), padded to
/// `padded` keys, with where its matrices start and its two products.
#[derive(Debug, Clone, PartialEq)]
pub struct Bucket {
    pub first: usize,
    pub count: usize,
    pub padded: u64,
    /// Its first matrix in `Q [positions, H, DK]` and `O [positions, H, DC]`.
    pub position: u64,
    /// Its first row in `KV [rows, DK]`.
    pub kv_row: u64,
    /// Its first score in `S` (fp32) and `P` (bf16), elements.
    pub score: u64,
    /// `S = Q KV^T`: A the queries, B the keys (transposed), C the scores.
    pub scores: Product,
    /// `O = P V`: A the probabilities, B the values (`KV`'s first `DC` columns), C `O`.
    pub values: Product,
}

/// The composition for one set of sequence lengths.
#[derive(Debug, Clone, PartialEq)]
pub struct MlaPlan {
    pub shape: MlaShape,
    pub buckets: Vec<Bucket>,
    /// The table the kernels read (support.cu's slot table): [`SLOT`] longs per slot, slots
    /// in bucket order (sequence, length, padded length, first KV row, first score, position),
    /// then each sequence's slot.
    pub slots: Vec<i64>,
    /// Sizes, in elements, of `Q` (positions x H x DK), `KV` (rows x DK), `S` and `P`, `O`.
    pub q_elements: u64,
    pub kv_elements: u64,
    pub score_elements: u64,
    pub o_elements: u64,
}

impl MlaPlan {
    /// Keys the products run over (padding included) per key of the sequences.
    pub fn padding_factor(&self) -> f64 {
        let padded: u64 = self.buckets.iter().map(|b| b.padded * b.count as u64).sum();
        let own: i64 = (0..self.shape.batch as usize)
            .map(|s| self.slots[s * SLOT + 1])
            .sum();
        padded as f64 / own.max(1) as f64
    }
}

/// Slots in bucket order: sequences by length, longest first (then by index), cut where a
/// length falls below half the bucket's longest.
fn buckets(lengths: &[u64]) -> (Vec<usize>, Vec<(usize, usize)>) {
    let mut order: Vec<usize> = (0..lengths.len()).collect();
    order.sort_by(|&x, &y| lengths[y].cmp(&lengths[x]).then(x.cmp(&y)));
    let mut cuts = Vec::new();
    let mut i = 0;
    while i < order.len() {
        let longest = lengths[order[i]];
        let mut j = i + 1;
        while j < order.len() && 2 * lengths[order[j]] >= longest {
            j += 1;
        }
        cuts.push((i, j - i));
        i = j;
    }
    (order, cuts)
}

/// The composition for sequences of `lengths` keys, or why the sizes do not fit.
pub fn plan(shape: MlaShape, lengths: &[u64]) -> Result<MlaPlan, String> {
    if lengths.len() as u64 != shape.batch {
        return Err(format!(
            "{} sequence lengths for a batch of {}",
            lengths.len(),
            shape.batch
        ));
    }
    let (h, dc, dk) = (shape.heads, shape.ckv, shape.key());
    // Offsets step in units that keep every operand's address on 256 bytes.
    let position_unit = lcm_unit(alignment_unit(2 * h * dk), alignment_unit(2 * h * dc));
    let row_unit = alignment_unit(2 * dk);
    let score_unit = lcm_unit(alignment_unit(4), alignment_unit(2));
    let (order, cuts) = buckets(lengths);
    let mut slots = vec![0i64; order.len() * SLOT + order.len()];
    let mut out = Vec::new();
    let (mut position, mut kv_row, mut score) = (0u64, 0u64, 0u64);
    let long = |v: u64| i64::try_from(v).map_err(|_| format!("{v} does not fit an int64"));
    for (first, count) in cuts {
        let padded = round_up(lengths[order[first]].max(1), PAD);
        position = round_up(position, position_unit);
        kv_row = round_up(kv_row, row_unit);
        score = round_up(score, score_unit);
        let n = count as u64;
        for (i, &seq) in order[first..first + count].iter().enumerate() {
            let i = i as u64;
            let slot = first + i as usize;
            let row = &mut slots[slot * SLOT..(slot + 1) * SLOT];
            row[0] = long(seq as u64)?;
            row[1] = long(lengths[seq])?;
            row[2] = long(padded)?;
            row[3] = long(kv_row + i * padded)?;
            row[4] = long(score + i * h * padded)?;
            row[5] = long(position + i)?;
            slots[order.len() * SLOT + seq] = long(slot as u64)?;
        }
        let bf16 = |rows, cols, ld, batch_stride| RowMajor {
            elem: Elem::Bf16,
            rows,
            cols,
            ld,
            batch_stride,
        };
        let q = bf16(h, dk, dk, h * dk);
        let keys = bf16(padded, dk, dk, padded * dk);
        let s = RowMajor {
            elem: Elem::F32,
            ..bf16(h, padded, padded, h * padded)
        };
        let p = bf16(h, padded, padded, h * padded);
        let v = bf16(padded, dc, dk, padded * dk);
        let o = bf16(h, dc, dc, h * dc);
        out.push(Bucket {
            first,
            count,
            padded,
            position,
            kv_row,
            score,
            scores: Product::new((q, false), (keys, true), s, n)?,
            values: Product::new((p, false), (v, false), o, n)?,
        });
        position += n;
        kv_row += n * padded;
        score += n * h * padded;
    }
    Ok(MlaPlan {
        shape,
        buckets: out,
        slots,
        q_elements: position * h * dk,
        kv_elements: kv_row * dk,
        score_elements: score,
        o_elements: position * h * dc,
    })
}

/// Byte offsets of a bucket's operands from their buffers' starts: Q, KV, S, P, O.
pub fn offsets(plan: &MlaPlan, b: &Bucket) -> [u64; 5] {
    let (h, dk, dc) = (plan.shape.heads, plan.shape.key(), plan.shape.ckv);
    [
        2 * b.position * h * dk,
        2 * b.kv_row * dk,
        4 * b.score,
        2 * b.score,
        2 * b.position * h * dc,
    ]
}

/// Whether every offset of `plan` keeps a 256-byte aligned buffer's operands aligned.
pub fn aligned(plan: &MlaPlan) -> bool {
    plan.buckets.iter().all(|b| {
        offsets(plan, b)
            .iter()
            .all(|o| o.is_multiple_of(OPERAND_ALIGNMENT))
    })
}

/// The plan in words: its buckets and how much padding the products run over.
pub fn describe(plan: &MlaPlan) -> String {
    let buckets: Vec<String> = plan
        .buckets
        .iter()
        .map(|b| format!("{} x {}", b.count, b.padded))
        .collect();
    format!(
        "{} length buckets (sequences x padded keys: {}), the products over {:.2}x the sequences' keys",
        plan.buckets.len(),
        buckets.join(", "),
        plan.padding_factor()
    )
}

/// The task's tensors the composition reads and writes, in the task's names.
#[derive(Debug, Clone, Copy)]
pub struct Tensors {
    pub q_nope: Region,
    pub q_pe: Region,
    pub ckv_cache: Region,
    pub kpe_cache: Region,
    pub kv_indptr: Region,
    pub kv_indices: Region,
    pub output: Region,
    pub lse: Region,
}

/// The buffers the composition owns: the slot table, `Q`, `KV`, `S`, `P` and `O`.
#[derive(Debug, Clone, Copy)]
pub struct Owned {
    pub slots: Region,
    pub q: Region,
    pub kv: Region,
    pub s: Region,
    pub p: Region,
    pub o: Region,
}

/// The bytes of each buffer in [`Owned`]'s order (the slot table's are its longs').
pub fn owned_bytes(plan: &MlaPlan) -> [u64; 6] {
    [
        8 * plan.slots.len() as u64,
        2 * plan.q_elements,
        2 * plan.kv_elements,
        4 * plan.score_elements,
        2 * plan.score_elements,
        2 * plan.o_elements,
    ]
}

/// The composition's steps in order (see the module doc), the scores scaled by `scale`.
pub fn steps(plan: &MlaPlan, t: &Tensors, w: &Owned, scale: f32) -> Result<Vec<Step>, String> {
    let shape = plan.shape;
    let (b, h, dc, dp, dk) = (shape.batch, shape.heads, shape.ckv, shape.pe, shape.key());
    if t.output.bytes < 2 * b * h * dc || t.lse.bytes < 4 * b * h {
        return Err("the task's outputs are smaller than the batch's".into());
    }
    let tokens: u64 = (0..b as usize)
        .map(|s| plan.slots[s * SLOT + 1] as u64)
        .sum();
    let ptr = |r: Region| Arg::Ptr(r.ptr);
    let mut steps = vec![
        Step::Kernel {
            name: "mla_pack_q",
            geometry: stride_geometry(b * h * dk),
            args: vec![
                ptr(t.q_nope),
                ptr(t.q_pe),
                ptr(w.slots),
                ptr(w.q),
                int(b)?,
                int(h)?,
                int(dc)?,
                int(dp)?,
            ],
        },
        Step::Kernel {
            name: "mla_gather_kv",
            geometry: warp_geometry(tokens),
            args: vec![
                ptr(t.ckv_cache),
                ptr(t.kpe_cache),
                ptr(t.kv_indptr),
                ptr(t.kv_indices),
                ptr(w.slots),
                ptr(w.kv),
                int(b)?,
                int(dc)?,
                int(dp)?,
                Arg::U64(tokens),
            ],
        },
    ];
    let n = plan.buckets.len();
    for (i, bucket) in plan.buckets.iter().enumerate() {
        let [qo, kvo, so, ..] = offsets(plan, bucket);
        steps.push(Step::Gemm {
            what: format!(
                "scores, bucket {} of {n} ({} sequences padded to {})",
                i + 1,
                bucket.count,
                bucket.padded
            ),
            product: bucket.scores,
            operands: [w.q.at(qo)?, w.kv.at(kvo)?, w.s.at(so)?],
            alpha: scale,
        });
    }
    steps.push(Step::Kernel {
        name: "mla_softmax",
        geometry: warp_geometry(b * h),
        args: vec![
            ptr(w.s),
            ptr(w.slots),
            ptr(w.p),
            ptr(t.lse),
            int(b)?,
            int(h)?,
        ],
    });
    for (i, bucket) in plan.buckets.iter().enumerate() {
        let [_, kvo, _, po, oo] = offsets(plan, bucket);
        steps.push(Step::Gemm {
            what: format!("P V, bucket {} of {n}", i + 1),
            product: bucket.values,
            operands: [w.p.at(po)?, w.kv.at(kvo)?, w.o.at(oo)?],
            alpha: 1.0,
        });
    }
    steps.push(Step::Kernel {
        name: "mla_unpack",
        geometry: stride_geometry(b * h * dc),
        args: vec![
            ptr(w.o),
            ptr(w.slots),
            ptr(t.output),
            int(b)?,
            int(h)?,
            int(dc)?,
        ],
    });
    Ok(steps)
}

/// The composition bound to `set` (MLA decode's tensors) for sequences of `lengths` keys, the
/// scores scaled by `scale`: its buffers made, its products planned.
pub fn bind(
    gpu: &Gpu,
    support: &Support,
    set: &TensorSet,
    shape: MlaShape,
    lengths: &[u64],
    scale: f32,
) -> Result<Composed, String> {
    let plan = plan(shape, lengths)?;
    let mut c = Builder::new(gpu, support);
    let table: Vec<u8> = plan.slots.iter().flat_map(|v| v.to_le_bytes()).collect();
    let [_, q, kv, s, p, o] = owned_bytes(&plan);
    let owned = Owned {
        slots: c.table(&table)?,
        q: c.buffer(q)?,
        kv: c.buffer(kv)?,
        s: c.buffer(s)?,
        p: c.buffer(p)?,
        o: c.buffer(o)?,
    };
    let tensors = Tensors {
        q_nope: tensor(set, "q_nope")?,
        q_pe: tensor(set, "q_pe")?,
        ckv_cache: tensor(set, "ckv_cache")?,
        kpe_cache: tensor(set, "kpe_cache")?,
        kv_indptr: tensor(set, "kv_indptr")?,
        kv_indices: tensor(set, "kv_indices")?,
        output: c.output("output", tensor(set, "output")?.bytes)?,
        lse: c.output("lse", tensor(set, "lse")?.bytes)?,
    };
    for step in steps(&plan, &tensors, &owned, scale)? {
        c.step(step)?;
    }
    Ok(c.finish(Composition::MlaDecode, describe(&plan)))
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEEPSEEK: MlaShape = MlaShape {
        batch: 0,
        heads: 16,
        ckv: 512,
        pe: 64,
    };

    fn shape(batch: usize) -> MlaShape {
        MlaShape {
            batch: batch as u64,
            ..DEEPSEEK
        }
    }

    /// The invariants a plan keeps: every sequence in one slot and back; a bucket's lengths
    /// within a factor of two of its longest, padded to a multiple of [`PAD`] at least as long;
    /// regions of buckets disjoint and within the buffers; operands aligned.
    fn check(plan: &MlaPlan, lengths: &[u64]) {
        let b = lengths.len();
        let (h, dk, dc) = (plan.shape.heads, plan.shape.key(), plan.shape.ckv);
        let mut seen = vec![false; b];
        for slot in 0..b {
            let row = &plan.slots[slot * SLOT..(slot + 1) * SLOT];
            let seq = row[0] as usize;
            assert!(!seen[seq], "sequence {seq} in two slots");
            seen[seq] = true;
            assert_eq!(
                plan.slots[b * SLOT + seq],
                slot as i64,
                "inverse of slot {slot}"
            );
            assert_eq!(row[1] as u64, lengths[seq]);
            assert!(row[2] as u64 >= lengths[seq] && (row[2] as u64).is_multiple_of(PAD));
        }
        assert!(aligned(plan), "{plan:?}");
        let (mut kv_end, mut s_end, mut pos_end) = (0u64, 0u64, 0u64);
        for bucket in &plan.buckets {
            let longest = lengths[plan.slots[bucket.first * SLOT] as usize];
            for slot in bucket.first..bucket.first + bucket.count {
                let row = &plan.slots[slot * SLOT..(slot + 1) * SLOT];
                assert_eq!(row[2] as u64, bucket.padded);
                assert!(2 * row[1] as u64 >= longest);
                let i = (slot - bucket.first) as u64;
                assert_eq!(row[3] as u64, bucket.kv_row + i * bucket.padded);
                assert_eq!(row[4] as u64, bucket.score + i * h * bucket.padded);
                assert_eq!(row[5] as u64, bucket.position + i);
            }
            assert!(bucket.kv_row >= kv_end && bucket.score >= s_end && bucket.position >= pos_end);
            let n = bucket.count as u64;
            kv_end = bucket.kv_row + n * bucket.padded;
            s_end = bucket.score + n * h * bucket.padded;
            pos_end = bucket.position + n;
            // Each product's operands, from the bucket's offsets, lie within the buffers.
            let [q, kv, s, p, o] = offsets(plan, bucket);
            let [sa, sb, sc] = bucket.scores.bytes();
            assert!(q + sa <= 2 * plan.q_elements && kv + sb <= 2 * plan.kv_elements);
            assert!(s + sc <= 4 * plan.score_elements);
            let [va, vb, vc] = bucket.values.bytes();
            assert!(p + va <= 2 * plan.score_elements && kv + vb <= 2 * plan.kv_elements);
            assert!(o + vc <= 2 * plan.o_elements);
            assert_eq!(bucket.scores.dims(), (h, bucket.padded, dk));
            assert_eq!(bucket.values.dims(), (h, dc, bucket.padded));
        }
        assert_eq!(kv_end * dk, plan.kv_elements);
        assert_eq!(s_end, plan.score_elements);
    }

    /// The leading dimensions and strides cuBLASLt is given: the scores read Q rows of DK and
    /// KV rows of DK transposed, batches a padded sequence apart; the values read P rows of the
    /// padded length and the first DC columns of the same KV rows (leading dimension DK).
    #[test]
    fn the_products_layouts_for_deepseek_sizes() {
        let p = plan(shape(3), &[17, 65, 130]).expect("plans");
        // 130 and 65 (> 130 / 2) share a bucket padded to 192; 17 is alone, padded to 64.
        assert_eq!(p.buckets.len(), 2);
        let (a, b) = (&p.buckets[0], &p.buckets[1]);
        assert_eq!((a.count, a.padded, b.count, b.padded), (2, 192, 1, 64));
        let mm = a.scores.matmul();
        assert_eq!((mm.m, mm.n, mm.k, mm.batch), (192, 16, 576, 2));
        assert!(mm.trans_a && !mm.trans_b);
        assert_eq!((mm.a.ld, mm.a.batch_stride), (576, 192 * 576));
        assert_eq!((mm.b.ld, mm.b.batch_stride), (576, 16 * 576));
        assert_eq!(
            (mm.c.ld, mm.c.batch_stride, mm.c.elem),
            (192, 16 * 192, Elem::F32)
        );
        let mm = a.values.matmul();
        assert_eq!((mm.m, mm.n, mm.k), (512, 16, 192));
        assert!(!mm.trans_a && !mm.trans_b);
        assert_eq!(
            (mm.a.rows, mm.a.ld, mm.a.batch_stride),
            (512, 576, 192 * 576)
        );
        assert_eq!((mm.b.ld, mm.b.batch_stride), (192, 16 * 192));
        assert_eq!(
            (mm.c.ld, mm.c.batch_stride, mm.c.elem),
            (512, 16 * 512, Elem::Bf16)
        );
        check(&p, &[17, 65, 130]);
        // Slots: 130 (sequence 2), 65 (sequence 1), then 17 (sequence 0).
        assert_eq!(&p.slots[..SLOT], &[2, 130, 192, 0, 0, 0]);
        assert_eq!(&p.slots[SLOT..2 * SLOT], &[1, 65, 192, 192, 16 * 192, 1]);
        assert_eq!(
            &p.slots[2 * SLOT..3 * SLOT],
            &[0, 17, 64, 384, 2 * 16 * 192, 2]
        );
        assert_eq!(&p.slots[3 * SLOT..], &[2, 1, 0]);
    }

    /// The suite's MLA decode task.
    fn mla_task() -> crate::task::Task {
        let suite = crate::task::Suite::load(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tasks"),
        )
        .expect("the suite loads");
        suite
            .tasks
            .into_iter()
            .find(|t| matches!(t.op, crate::task::Op::AttentionMlaDecode { .. }))
            .expect("an MLA task")
    }

    /// Every workload of the suite's MLA task plans within the invariants, with the padding
    /// at most twice the keys plus a tile per sequence.
    #[test]
    fn the_suites_workloads_plan_with_little_padding() {
        let task = mla_task();
        for w in &task.workloads {
            let lengths = w.kv_lens.clone().expect("kv_lens");
            let p = plan(shape(lengths.len()), &lengths).expect("plans");
            check(&p, &lengths);
            let keys: u64 = lengths.iter().sum();
            let bound = (2 * keys + PAD * lengths.len() as u64) as f64 / keys as f64;
            assert!(
                p.padding_factor() <= bound,
                "{}: {}",
                w.name,
                p.padding_factor()
            );
            // A handful of buckets even for 128 sequences from 711 to 32191 keys.
            assert!(
                p.buckets.len() <= 7,
                "{}: {} buckets",
                w.name,
                p.buckets.len()
            );
        }
    }

    /// The steps bound to a tensor set: kernels that exist with the arguments their PTX
    /// declares, products whose operands lie in their buffers, the scale on the scores only;
    /// for every workload of the suite.
    #[test]
    fn the_steps_fit_the_kernels_and_the_buffers() {
        let task = mla_task();
        for w in &task.workloads {
            let lengths = w.kv_lens.clone().expect("kv_lens");
            let s = shape(lengths.len());
            let p = plan(s, &lengths).expect("plans");
            let (b, h) = (s.batch, s.heads);
            let [q_nope, q_pe, ckv, kpe, indptr, indices, output, lse] =
                super::super::fake_regions([
                    2 * b * h * s.ckv,
                    2 * b * h * s.pe,
                    1 << 30,
                    1 << 30,
                    4 * (b + 1),
                    1 << 30,
                    2 * b * h * s.ckv,
                    4 * b * h,
                ]);
            let t = Tensors {
                q_nope,
                q_pe,
                ckv_cache: ckv,
                kpe_cache: kpe,
                kv_indptr: indptr,
                kv_indices: indices,
                output,
                lse,
            };
            let [slots, q, kv, sc, pr, o] = super::super::fake_regions(owned_bytes(&p));
            let owned = Owned {
                slots,
                q,
                kv,
                s: sc,
                p: pr,
                o,
            };
            let steps = steps(&p, &t, &owned, 0.25).expect("steps");
            assert_eq!(steps.len(), 4 + 2 * p.buckets.len(), "{}", w.name);
            for st in &steps {
                if let Step::Gemm { what, alpha, .. } = st {
                    let want = if what.starts_with("scores") {
                        0.25
                    } else {
                        1.0
                    };
                    assert_eq!(*alpha, want, "{what}");
                }
            }
            super::super::check_steps(&steps);
            // One product too few bytes behind an operand is refused.
            let small = Owned {
                kv: Region {
                    bytes: kv.bytes - 2,
                    ..kv
                },
                ..owned
            };
            let bad = steps_checked(&p, &t, &small);
            assert!(bad.is_err_and(|e| e.contains("needs")), "{}", w.name);
        }
    }

    fn steps_checked(p: &MlaPlan, t: &Tensors, w: &Owned) -> Result<(), String> {
        for s in steps(p, t, w, 1.0)? {
            s.check()?;
        }
        Ok(())
    }

    /// Dims that align nothing (a latent of 40, a rotary of 8, 3 heads) still give aligned
    /// operands: offsets step in units of 256 bytes.
    #[test]
    fn odd_dims_keep_every_operand_aligned() {
        let odd = MlaShape {
            batch: 4,
            heads: 3,
            ckv: 40,
            pe: 8,
        };
        let lengths = [5, 1, 33, 2];
        let p = plan(odd, &lengths).expect("plans");
        check(&p, &lengths);
        assert!(
            plan(odd, &[5, 1]).is_err(),
            "two lengths for four sequences"
        );
    }
}
