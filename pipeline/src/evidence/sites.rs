//! What one counted instruction site does per execution, read from the PTX alone: a wgmma's
//! FLOPs from its shape, a TMA copy's direction and the kernel parameter that holds its tensor
//! map (followed through `mov` / `cvta.param` / `ld.param` chains), so the worker can weigh
//! each site's executed count by the work it does.

use ptxbench_ptx::{Family, Function, Instruction, opcode_key};

pub use crate::record::outcome::{CountedSite, Direction};

/// 2 * M * N * K of a `wgmma.mma_async...mMnNkK...` opcode.
pub fn wgmma_flops(opcode: &str) -> Option<f64> {
    let shape = opcode.split('.').find(|p| {
        p.starts_with('m')
            && p.contains('n')
            && p.contains('k')
            && p[1..].starts_with(|c: char| c.is_ascii_digit())
    })?;
    let rest = shape.strip_prefix('m')?;
    let (m, rest) = rest.split_once('n')?;
    let (n, k) = rest.split_once('k')?;
    let (m, n, k): (f64, f64, f64) = (m.parse().ok()?, n.parse().ok()?, k.parse().ok()?);
    Some(2.0 * m * n * k)
}

/// The direction of a `cp.async.bulk.tensor` / `cp.reduce.async.bulk.tensor` opcode.
pub fn tma_direction(opcode: &str) -> Option<Direction> {
    if opcode.starts_with("cp.reduce.async.bulk.tensor") {
        return Some(Direction::Store);
    }
    if !opcode.starts_with("cp.async.bulk.tensor") {
        return None;
    }
    // `.dst.src` state spaces: `.shared::cluster.global` loads, `.global.shared::cta` stores.
    let parts: Vec<&str> = opcode.split('.').collect();
    let global = parts.iter().position(|p| *p == "global")?;
    let shared = parts.iter().position(|p| p.starts_with("shared"))?;
    Some(if shared < global {
        Direction::Load
    } else {
        Direction::Store
    })
}

/// The first token of the bracketed operand that holds coordinates (`[tmap, {x, y}]`).
fn tensor_map_operand(operands: &str) -> Option<&str> {
    let mut rest = operands;
    while let Some(open) = rest.find('[') {
        let close = rest[open..].find(']')? + open;
        let inner = &rest[open + 1..close];
        if inner.contains('{') {
            return inner.split(',').next().map(str::trim);
        }
        rest = &rest[close + 1..];
    }
    None
}

/// Follows `name` back to a parameter of `f`: a parameter itself, or a register defined once
/// by `mov`, `cvta.param` or `ld.param` from one (at most a few hops).
fn trace_param(f: &Function, name: &str) -> Option<String> {
    let mut current = name.trim_matches(|c| c == '[' || c == ']').to_string();
    for _ in 0..6 {
        if f.params.iter().any(|p| p.name == current) {
            return Some(current);
        }
        if !current.starts_with('%') {
            return None;
        }
        let defs: Vec<&Instruction> = f
            .instructions
            .iter()
            .filter(|i| {
                i.operands
                    .split(',')
                    .next()
                    .is_some_and(|d| d.trim() == current)
            })
            .collect();
        let [def] = defs.as_slice() else {
            return None;
        };
        let key = def.opcode.split('.').next().unwrap_or("");
        let through = matches!(key, "mov" | "cvta") || def.opcode.starts_with("ld.param");
        if !through {
            return None;
        }
        current = def
            .operands
            .split(',')
            .nth(1)?
            .trim()
            .trim_matches(|c| c == '[' || c == ']')
            .to_string();
    }
    None
}

/// The site record of `ins` (counted for `family`) in `f`.
pub fn describe(family: Family, f: &Function, ins: &Instruction) -> CountedSite {
    let mut site = CountedSite {
        family: family.as_str().to_string(),
        opcode: ins.opcode.clone(),
        function: f.name.clone(),
        line: ins.line,
        threads_per_execution: 1,
        flops_per_execution: None,
        direction: None,
        tensor_map_param: None,
    };
    match family {
        Family::Wgmma => {
            site.threads_per_execution = 128;
            site.flops_per_execution = wgmma_flops(&ins.opcode);
        }
        Family::Tma => {
            site.direction = tma_direction(&ins.opcode);
            site.tensor_map_param =
                tensor_map_operand(&ins.operands).and_then(|op| trace_param(f, op));
        }
        _ => {}
    }
    site
}

/// Whether an instruction with this opcode is counted for `family`: the instructions that do
/// the family's work and map to its proving SASS (`wgmma.mma_async` -> `HGMMA`; tensor bulk
/// copies -> `UTMALDG`/`UTMASTG`/`UTMAREDG`; `tcgen05.mma/ld/st/cp` -> `UTC*`/`LDTM`/`STTM`),
/// not its fences, commits and waits. Other families count every member.
pub fn counted(family: Family, opcode: &str) -> bool {
    if ptxbench_ptx::family_of(opcode) != Some(family) {
        return false;
    }
    let key = opcode_key(opcode);
    let first_two = key.split('.').take(2).collect::<Vec<_>>().join(".");
    match family {
        Family::Wgmma => key.starts_with("wgmma.mma_async"),
        Family::Tma => key == "cp.async.bulk.tensor" || key == "cp.reduce.async.bulk.tensor",
        Family::Tcgen05 => matches!(
            first_two.as_str(),
            "tcgen05.mma" | "tcgen05.ld" | "tcgen05.st" | "tcgen05.cp"
        ),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wgmma_shapes_give_flops() {
        assert_eq!(
            wgmma_flops("wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16"),
            Some(2.0 * 64.0 * 256.0 * 16.0)
        );
        assert_eq!(
            wgmma_flops("wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3"),
            Some(2.0 * 64.0 * 128.0 * 32.0)
        );
        assert_eq!(wgmma_flops("wgmma.fence.sync.aligned"), None);
    }

    #[test]
    fn tma_directions() {
        assert_eq!(
            tma_direction(
                "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
            ),
            Some(Direction::Load)
        );
        assert_eq!(
            tma_direction("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group"),
            Some(Direction::Store)
        );
        assert_eq!(
            tma_direction("cp.reduce.async.bulk.tensor.2d.global.shared::cta.add.tile.bulk_group"),
            Some(Direction::Store)
        );
    }

    #[test]
    fn tensor_maps_are_traced_to_their_parameter() {
        let ptx = ".version 8.0\n.target sm_90a\n.address_size 64\n\
.visible .entry k(.param .align 64 .b8 k_param_0[128], .param .u64 k_param_1)\n{\n\
  .reg .b32 %r<8>;\n  .reg .b64 %rd<8>;\n\
  mov.b64 %rd1, k_param_0;\n  cvta.param.u64 %rd2, %rd1;\n\
  ld.param.u64 %rd3, [k_param_1];\n\
  cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r1], [%rd2, {%r2, %r3}], [%r4];\n\
  cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r1], [%rd3, {%r2, %r3}], [%r4];\n\
  cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r1], [%rd5, {%r2, %r3}], [%r4];\n\
  ret;\n}\n";
        let m = ptxbench_ptx::parse(ptx).expect("parses");
        let f = &m.functions[0];
        let sites: Vec<CountedSite> = f
            .instructions
            .iter()
            .filter(|i| i.opcode.starts_with("cp.async.bulk.tensor"))
            .map(|i| describe(Family::Tma, f, i))
            .collect();
        let params: Vec<Option<&str>> = sites
            .iter()
            .map(|s| s.tensor_map_param.as_deref())
            .collect();
        // By value (mov + cvta.param), by pointer (ld.param), and an undefined register.
        assert_eq!(params, [Some("k_param_0"), Some("k_param_1"), None]);
        assert!(sites.iter().all(|s| s.direction == Some(Direction::Load)));
    }
}
