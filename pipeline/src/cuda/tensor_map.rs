//! TMA tensor maps: the typed description the harness encodes on the host with
//! `cuTensorMapEncodeTiled`. [`TensorMapDesc::new`] is the one place its rules are checked;
//! a value of the type is always encodable, and the driver enums are chosen by `match`, never
//! converted from raw numbers.

use cudarc::driver::sys;

use crate::text_enum::text_enum;

text_enum!(
    /// Shared-memory swizzle of a TMA box.
    Swizzle { None => "none", B32 => "32B", B64 => "64B", B128 => "128B" }
);
text_enum!(
    /// Interleaved layouts of a TMA tensor.
    Interleave { None => "none", B16 => "16B", B32 => "32B" }
);
text_enum!(
    /// L2 promotion of TMA loads.
    L2Promotion { None => "none", B64 => "64B", B128 => "128B", B256 => "256B" }
);
text_enum!(
    /// What TMA loads return outside the tensor.
    OobFill { Zero => "zero", Nan => "nan" }
);

impl Swizzle {
    /// Largest inner box extent in bytes the swizzle mode allows (none: the 256-element limit).
    pub fn max_inner_bytes(self) -> Option<u64> {
        match self {
            Swizzle::None => None,
            Swizzle::B32 => Some(32),
            Swizzle::B64 => Some(64),
            Swizzle::B128 => Some(128),
        }
    }
}

/// The element type a map moves, as TMA knows it (fp8 has none: TMA moves its bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum TmaElement {
    Bf16,
    F16,
    F32,
    Byte,
    I32,
}

impl TmaElement {
    pub fn bytes(self) -> u64 {
        match self {
            TmaElement::Byte => 1,
            TmaElement::Bf16 | TmaElement::F16 => 2,
            TmaElement::F32 | TmaElement::I32 => 4,
        }
    }
}

/// One rule a description breaks: the field (`dims`, `strides[1]`, `box[0]`...) and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorMapProblem {
    pub field: String,
    pub reason: String,
}

/// A validated tiled tensor map, without its base address (bound per tensor set).
///
/// Invariants: rank 1..=5; `strides` has rank - 1 entries (bytes, multiples of 16, below
/// 2^40); dims in 1..=2^32; box extents in 1..=256 with an inner box of a multiple of 16 bytes
/// that fits the swizzle span; element strides in 1..=8.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct TensorMapDesc {
    element: TmaElement,
    dims: Vec<u64>,
    strides: Vec<u64>,
    box_dims: Vec<u32>,
    element_strides: Vec<u32>,
    interleave: Interleave,
    swizzle: Swizzle,
    l2_promotion: L2Promotion,
    oob_fill: OobFill,
}

impl TensorMapDesc {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        element: TmaElement,
        dims: Vec<u64>,
        strides: Vec<u64>,
        box_dims: Vec<u64>,
        element_strides: Vec<u64>,
        interleave: Interleave,
        swizzle: Swizzle,
        l2_promotion: L2Promotion,
        oob_fill: OobFill,
    ) -> Result<TensorMapDesc, Vec<TensorMapProblem>> {
        let mut problems = Vec::new();
        let mut bad = |field: String, reason: String| {
            problems.push(TensorMapProblem { field, reason });
        };
        let rank = dims.len();
        if !(1..=5).contains(&rank) {
            bad("dims".into(), format!("rank {rank}; TMA supports 1 to 5"));
        }
        if strides.len() + 1 != rank.max(1) {
            bad(
                "strides".into(),
                format!(
                    "has {} entries; a rank-{rank} map needs {}",
                    strides.len(),
                    rank.saturating_sub(1)
                ),
            );
        }
        for (name, list) in [("box", &box_dims), ("element_strides", &element_strides)] {
            if list.len() != rank {
                bad(
                    name.into(),
                    format!("has {} entries; dims has {rank}", list.len()),
                );
            }
        }
        let mut range = |name: &str, list: &[u64], lo: u64, hi: u64| {
            for (i, v) in list.iter().enumerate() {
                if !(lo..=hi).contains(v) {
                    bad(
                        format!("{name}[{i}]"),
                        format!("{v} is outside {lo}..={hi}"),
                    );
                }
            }
        };
        range("dims", &dims, 1, 1 << 32);
        range("strides", &strides, 16, (1 << 40) - 1);
        range("box", &box_dims, 1, 256);
        range("element_strides", &element_strides, 1, 8);
        for (i, s) in strides.iter().enumerate() {
            if !s.is_multiple_of(16) {
                bad(
                    format!("strides[{i}]"),
                    format!("{s} bytes; TMA strides must be multiples of 16"),
                );
            }
        }
        let inner_bytes = box_dims
            .first()
            .copied()
            .unwrap_or(0)
            .saturating_mul(element.bytes());
        if interleave == Interleave::None {
            if !inner_bytes.is_multiple_of(16) {
                bad(
                    "box[0]".into(),
                    format!("the inner box is {inner_bytes} bytes; it must be a multiple of 16"),
                );
            }
            if let Some(max) = swizzle.max_inner_bytes()
                && inner_bytes > max
            {
                bad(
                    "box[0]".into(),
                    format!(
                        "the inner box is {inner_bytes} bytes; {swizzle} swizzle allows at most {max}"
                    ),
                );
            }
        }
        if !problems.is_empty() {
            return Err(problems);
        }
        let narrow = |v: Vec<u64>| {
            v.into_iter()
                .map(|x| u32::try_from(x).expect("checked to be at most 256"))
                .collect()
        };
        Ok(TensorMapDesc {
            element,
            dims,
            strides,
            box_dims: narrow(box_dims),
            element_strides: narrow(element_strides),
            interleave,
            swizzle,
            l2_promotion,
            oob_fill,
        })
    }

    pub fn element(&self) -> TmaElement {
        self.element
    }

    pub fn dims(&self) -> &[u64] {
        &self.dims
    }

    pub fn strides(&self) -> &[u64] {
        &self.strides
    }

    pub fn box_dims(&self) -> &[u32] {
        &self.box_dims
    }

    pub fn element_strides(&self) -> &[u32] {
        &self.element_strides
    }

    pub fn interleave(&self) -> Interleave {
        self.interleave
    }

    pub fn swizzle(&self) -> Swizzle {
        self.swizzle
    }

    pub fn l2_promotion(&self) -> L2Promotion {
        self.l2_promotion
    }

    pub fn oob_fill(&self) -> OobFill {
        self.oob_fill
    }

    /// Bytes one copy of a full box moves (the box's elements at the map's element size; element
    /// strides skip elements, so they divide the count).
    pub fn box_bytes(&self) -> u64 {
        self.box_dims
            .iter()
            .zip(&self.element_strides)
            .map(|(b, s)| u64::from(b.div_ceil(*s)))
            .product::<u64>()
            * self.element.bytes()
    }

    /// Bytes of the tensor the map spans (what it may touch around its base).
    pub fn footprint_bytes(&self) -> u64 {
        let inner = self.dims[0].saturating_mul(self.element.bytes());
        self.dims
            .iter()
            .skip(1)
            .zip(&self.strides)
            .map(|(d, s)| (d - 1).saturating_mul(*s))
            .fold(inner, u64::saturating_add)
    }

    pub(super) fn data_type(&self) -> sys::CUtensorMapDataType {
        use sys::CUtensorMapDataType as T;
        match self.element {
            TmaElement::Bf16 => T::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
            TmaElement::F16 => T::CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
            TmaElement::F32 => T::CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
            TmaElement::Byte => T::CU_TENSOR_MAP_DATA_TYPE_UINT8,
            TmaElement::I32 => T::CU_TENSOR_MAP_DATA_TYPE_INT32,
        }
    }

    pub(super) fn sys_interleave(&self) -> sys::CUtensorMapInterleave {
        use sys::CUtensorMapInterleave as I;
        match self.interleave {
            Interleave::None => I::CU_TENSOR_MAP_INTERLEAVE_NONE,
            Interleave::B16 => I::CU_TENSOR_MAP_INTERLEAVE_16B,
            Interleave::B32 => I::CU_TENSOR_MAP_INTERLEAVE_32B,
        }
    }

    pub(super) fn sys_swizzle(&self) -> sys::CUtensorMapSwizzle {
        use sys::CUtensorMapSwizzle as S;
        match self.swizzle {
            Swizzle::None => S::CU_TENSOR_MAP_SWIZZLE_NONE,
            Swizzle::B32 => S::CU_TENSOR_MAP_SWIZZLE_32B,
            Swizzle::B64 => S::CU_TENSOR_MAP_SWIZZLE_64B,
            Swizzle::B128 => S::CU_TENSOR_MAP_SWIZZLE_128B,
        }
    }

    pub(super) fn sys_l2_promotion(&self) -> sys::CUtensorMapL2promotion {
        use sys::CUtensorMapL2promotion as L;
        match self.l2_promotion {
            L2Promotion::None => L::CU_TENSOR_MAP_L2_PROMOTION_NONE,
            L2Promotion::B64 => L::CU_TENSOR_MAP_L2_PROMOTION_L2_64B,
            L2Promotion::B128 => L::CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
            L2Promotion::B256 => L::CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
        }
    }

    pub(super) fn sys_oob_fill(&self) -> sys::CUtensorMapFloatOOBfill {
        use sys::CUtensorMapFloatOOBfill as F;
        match self.oob_fill {
            OobFill::Zero => F::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
            OobFill::Nan => F::CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn desc(
        element: TmaElement,
        dims: &[u64],
        strides: &[u64],
        bx: &[u64],
        swizzle: Swizzle,
    ) -> Result<TensorMapDesc, Vec<TensorMapProblem>> {
        TensorMapDesc::new(
            element,
            dims.to_vec(),
            strides.to_vec(),
            bx.to_vec(),
            vec![1; bx.len()],
            Interleave::None,
            swizzle,
            L2Promotion::B128,
            OobFill::Zero,
        )
    }

    #[test]
    fn a_gemm_operand_map_is_valid_and_counts_its_box() {
        let d = desc(
            TmaElement::Bf16,
            &[5120, 8192],
            &[10240],
            &[64, 128],
            Swizzle::B128,
        )
        .expect("valid");
        assert_eq!(d.box_bytes(), 64 * 128 * 2);
        assert_eq!(d.footprint_bytes(), 5120 * 2 + 8191 * 10240);
        assert_eq!(
            d.data_type(),
            sys::CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
        );
        assert_eq!(
            d.sys_swizzle(),
            sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_128B
        );
        let fp8 = desc(
            TmaElement::Byte,
            &[5120, 8192],
            &[5120],
            &[128, 128],
            Swizzle::B128,
        )
        .expect("valid");
        assert_eq!(
            fp8.data_type(),
            sys::CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_UINT8
        );
        assert_eq!(fp8.box_bytes(), 128 * 128);
    }

    #[test]
    fn every_broken_rule_is_named() {
        let fields = |r: Result<TensorMapDesc, Vec<TensorMapProblem>>| -> Vec<String> {
            r.expect_err("invalid")
                .into_iter()
                .map(|p| p.field)
                .collect()
        };
        // 65 bf16 = 130 bytes: not a multiple of 16, and over the 128B swizzle span.
        assert_eq!(
            fields(desc(
                TmaElement::Bf16,
                &[4096, 64],
                &[8192],
                &[65, 64],
                Swizzle::B128
            )),
            ["box[0]", "box[0]"]
        );
        assert_eq!(
            fields(desc(
                TmaElement::Bf16,
                &[4096, 64],
                &[8200],
                &[64, 64],
                Swizzle::B128
            )),
            ["strides[0]"]
        );
        assert_eq!(
            fields(desc(
                TmaElement::Bf16,
                &[4096, 64],
                &[8192],
                &[64, 512],
                Swizzle::B128
            )),
            ["box[1]"]
        );
        assert_eq!(
            fields(desc(
                TmaElement::Bf16,
                &[4096, 64],
                &[],
                &[64, 64],
                Swizzle::None
            )),
            ["strides"]
        );
        let six = [8u64; 6];
        assert!(
            fields(desc(TmaElement::F32, &six, &[16; 5], &six, Swizzle::None))
                .contains(&"dims".to_string())
        );
        assert_eq!(
            fields(desc(
                TmaElement::F32,
                &[0, 4],
                &[16],
                &[4, 4],
                Swizzle::None
            )),
            ["dims[0]"]
        );
    }
}
