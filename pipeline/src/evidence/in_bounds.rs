//! The bytes a TMA load really read: the part of its box inside the tensor, at the coordinates
//! the load used.
//!
//! A tensor load's box may hang over the tensor's edge (or lie wholly outside it); TMA fills
//! those elements with zeros (or NaN) without touching memory. Weighing each executed load by
//! its full box would credit bytes that were never read, so a SIMT kernel issuing boxes far
//! past the tensor could claim a TMA byte share of 1. The counted copy therefore computes, in
//! front of every tile-mode tensor load, the in-bounds element count from the load's own
//! coordinate registers and a shape table the host fills per workload (from the tensor map the
//! plan binds to the load's parameter), and adds the bytes to a per-site counter.
//!
//! Per dimension `d` with coordinate `c`, tensor extent `dim` and `n` elements per box, the box
//! reads elements `c + k` for `0 <= k < n`; those in `[0, dim)` are `k` in
//! `[max(0, -c), min(n, dim - c))`. The counted bytes are the product over dimensions of that
//! range's length, times the element size. Dimensions past the map's rank have `dim = n = 1`
//! (coordinate 0 reads one element). Only maps with element strides of 1 earn credit
//! ([`crate::engine::counting::credit_refusal`]), so the computation has no division: a few
//! integer operations and two cached loads per dimension, the same whatever the coordinates
//! (integrity v4: the counted copy's overhead at a site should be too small and too constant
//! for a kernel to time it).
//!
//! Loads in im2col or gather mode, whose coordinates mean something else, get no counter: their
//! bytes are unknown, and a TMA byte share that depends on them is not claimed.

use serde::{Deserialize, Serialize};

use crate::cuda::tensor_map::TensorMapDesc;

/// The counter array of in-bounds bytes, one slot per counted load.
pub const BYTES_SYMBOL: &str = "ptxbench_evidence_tma_bytes";
/// The shape table the host writes before a workload's counted launches: [`SHAPE_WORDS`]
/// signed 64-bit words per slot.
pub const SHAPE_SYMBOL: &str = "ptxbench_evidence_tma_shape";
/// The registers of the spliced computation (declared in its own `{ }` scope).
pub const REGISTER: &str = "%ptxbench_tb";
/// Words per slot: the element size, then (dim, n, e) for each of five dimensions.
pub const SHAPE_WORDS: usize = 16;

/// Where the counted copy keeps its in-bounds bytes: slot `i` of `symbol` counts the bytes of
/// counted site `sites[i]`; `shape_symbol` holds each slot's shape.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TmaBytes {
    pub symbol: String,
    pub shape_symbol: String,
    pub sites: Vec<usize>,
}

/// The coordinate operands of a tile-mode tensor load (`[tmap, {c0, c1, ...}]`), or `None` for
/// another mode or an operand this cannot read (a register or an integer literal each).
pub fn coordinates(opcode: &str, operands: &str) -> Option<Vec<String>> {
    if opcode.contains(".im2col") || opcode.contains("gather") || opcode.contains("scatter") {
        return None;
    }
    let open = operands.find('{')?;
    let close = operands[open..].find('}')? + open;
    let coords: Vec<String> = operands[open + 1..close]
        .split(',')
        .map(|c| c.trim().to_string())
        .collect();
    let readable = |c: &str| {
        let reg = c.starts_with('%')
            && c.len() > 1
            && c[1..]
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'$');
        let literal = c.strip_prefix('-').unwrap_or(c);
        let number = !literal.is_empty()
            && (literal.bytes().all(|b| b.is_ascii_digit())
                || literal
                    .strip_prefix("0x")
                    .or_else(|| literal.strip_prefix("0X"))
                    .is_some_and(|h| !h.is_empty() && h.bytes().all(|b| b.is_ascii_hexdigit())));
        reg || number
    };
    (!coords.is_empty() && coords.len() <= 5 && coords.iter().all(|c| readable(c)))
        .then_some(coords)
}

/// The PTX that adds slot `slot`'s in-bounds bytes to its counter, under the load's guard, to
/// be placed just before the load (in its scope, so its coordinate registers are in scope).
pub fn block(slot: usize, coords: &[String], guard: &str) -> String {
    let r = REGISTER;
    let base = 8 * SHAPE_WORDS * slot;
    let word = |i: usize| format!("[{SHAPE_SYMBOL}+{}]", base + 8 * i);
    let mut s = format!("{{ .reg .s64 {r}<7>; ld.global.s64 {r}0, {};", word(0));
    for (d, c) in coords.iter().enumerate() {
        let load = if c.starts_with('%') {
            format!("cvt.s64.s32 {r}1, {c};")
        } else {
            format!("mov.s64 {r}1, {c};")
        };
        s.push_str(&format!(
            " {load} ld.global.s64 {r}2, {}; ld.global.s64 {r}3, {};\
             neg.s64 {r}5, {r}1; max.s64 {r}5, {r}5, 0;\
             sub.s64 {r}6, {r}2, {r}1; min.s64 {r}6, {r}6, {r}3;\
             sub.s64 {r}6, {r}6, {r}5; max.s64 {r}6, {r}6, 0; mul.lo.s64 {r}0, {r}0, {r}6;",
            word(1 + 3 * d),
            word(2 + 3 * d),
        ));
    }
    s.push_str(&format!(
        " {guard}red.global.add.u64 [{BYTES_SYMBOL}+{}], {r}0; }} ",
        8 * slot
    ));
    s
}

/// The declarations of the two arrays for `slots` counted loads.
pub fn declarations(slots: usize) -> String {
    let n = slots.max(1);
    format!(
        " .visible .global .align 8 .u64 {BYTES_SYMBOL}[{n}]; .visible .global .align 8 .s64 {SHAPE_SYMBOL}[{}];",
        n * SHAPE_WORDS
    )
}

/// One slot's shape words for the tensor map `desc`.
pub fn shape_words(desc: &TensorMapDesc) -> [i64; SHAPE_WORDS] {
    let mut w = [1i64; SHAPE_WORDS];
    w[0] = desc.element().bytes() as i64;
    for (d, ((dim, b), e)) in desc
        .dims()
        .iter()
        .zip(desc.box_dims())
        .zip(desc.element_strides())
        .enumerate()
        .take(5)
    {
        let e = (*e).max(1);
        w[1 + 3 * d] = i64::try_from(*dim).unwrap_or(i64::MAX);
        w[2 + 3 * d] = i64::from(b.div_ceil(e));
        w[3 + 3 * d] = i64::from(e);
    }
    w
}

/// What [`block`] computes, on the host: the in-bounds bytes of one load at `coords` (element
/// strides of 1: the only maps credited).
pub fn in_bounds_bytes(words: &[i64; SHAPE_WORDS], coords: &[i64]) -> i64 {
    let mut bytes = words[0];
    for (d, c) in coords.iter().enumerate().take(5) {
        let (dim, n) = (words[1 + 3 * d], words[2 + 3 * d]);
        let lo = (-c).max(0);
        let hi = (dim - c).min(n);
        bytes *= (hi - lo).max(0);
    }
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(elem: i64, dims: &[(i64, i64, i64)]) -> [i64; SHAPE_WORDS] {
        let mut w = [1i64; SHAPE_WORDS];
        w[0] = elem;
        for (d, (dim, n, e)) in dims.iter().enumerate() {
            w[1 + 3 * d] = *dim;
            w[2 + 3 * d] = *n;
            w[3 + 3 * d] = *e;
        }
        w
    }

    /// The count by brute force: every element the box visits, kept when inside the tensor.
    fn brute(words: &[i64; SHAPE_WORDS], coords: &[i64]) -> i64 {
        let mut bytes = words[0];
        for (d, c) in coords.iter().enumerate() {
            let (dim, n, e) = (words[1 + 3 * d], words[2 + 3 * d], words[3 + 3 * d]);
            bytes *= (0..n).filter(|k| (0..dim).contains(&(c + k * e))).count() as i64;
        }
        bytes
    }

    #[test]
    fn the_formula_counts_what_the_box_visits_inside_the_tensor() {
        for dim in [1, 5, 64, 130] {
            for n in [1, 3, 64] {
                for e in [1] {
                    for c in [
                        -200, -65, -64, -63, -7, -1, 0, 1, 5, 63, 64, 66, 129, 130, 500,
                    ] {
                        let w = words(2, &[(dim, n, e), (7, 4, 1)]);
                        for c1 in [-5, -4, -3, 0, 3, 6, 7, 9] {
                            assert_eq!(
                                in_bounds_bytes(&w, &[c, c1]),
                                brute(&w, &[c, c1]),
                                "dim {dim} n {n} e {e} c {c} c1 {c1}"
                            );
                        }
                    }
                }
            }
        }
        // A 64 x 128 box of bf16 at the tensor's last 4 rows: 4 of its 64 rows are read.
        let w = words(2, &[(1024, 64, 1), (100, 64, 1)]);
        assert_eq!(in_bounds_bytes(&w, &[0, 96]), 2 * 64 * 4);
        // Wholly outside: nothing.
        assert_eq!(in_bounds_bytes(&w, &[0, 1000]), 0);
        assert_eq!(in_bounds_bytes(&w, &[-64, 0]), 0);
    }

    #[test]
    fn coordinates_of_tile_loads_only() {
        let op = "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes";
        assert_eq!(
            coordinates(op, "[%r1], [%rd2, {%r3, 17}], [%r4]"),
            Some(vec!["%r3".to_string(), "17".to_string()])
        );
        assert_eq!(
            coordinates(op, "[%r1], [%rd2, {%r3, -0x10}], [%r4], %rs5"),
            Some(vec!["%r3".to_string(), "-0x10".to_string()])
        );
        assert_eq!(coordinates(op, "[%r1], [%rd2, {%r3+1, 0}], [%r4]"), None);
        assert_eq!(
            coordinates(
                "cp.async.bulk.tensor.3d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes",
                "[%r1], [%rd2, {%r3, %r4, %r5}], [%r6], {%rs1}"
            ),
            None
        );
    }

    #[test]
    fn the_block_reads_each_coordinate_and_adds_under_the_guard() {
        let b = block(2, &["%r3".into(), "5".into()], "@%p1 ");
        let base = 8 * SHAPE_WORDS * 2;
        assert!(b.contains(&format!("[{SHAPE_SYMBOL}+{base}]")), "{b}");
        assert!(b.contains("cvt.s64.s32 %ptxbench_tb1, %r3;"), "{b}");
        assert!(b.contains("mov.s64 %ptxbench_tb1, 5;"), "{b}");
        assert!(
            b.contains(&format!(
                "@%p1 red.global.add.u64 [{BYTES_SYMBOL}+16], %ptxbench_tb0;"
            )),
            "{b}"
        );
        // No division: the same few instructions whatever the coordinates.
        assert_eq!(b.matches("div.").count(), 0, "{b}");
        assert_eq!(b.matches("ld.global.s64").count(), 5, "{b}");
    }
}
