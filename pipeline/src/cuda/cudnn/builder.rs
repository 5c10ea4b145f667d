//! The operation-graph builder: tensor descriptors (in memory, virtual, by-value scalars) and
//! the operations the SDPA graphs are made of (matmul, pointwise, reduction, reshape, paged
//! cache load, the masks, softmax with statistics).

use cudarc::cudnn::sys;
use sys::cudnnBackendAttributeName_t as A;
use sys::cudnnBackendAttributeType_t as T;
use sys::cudnnBackendDescriptorType_t as D;
use sys::cudnnDataType_t as Dt;
use sys::cudnnPointwiseMode_t as Pw;

use super::{Api, Desc, DnnError, Handle};

/// A tensor of the graph: its descriptor's index and its unique id.
#[derive(Debug, Clone, Copy)]
pub(super) struct Tensor {
    index: usize,
    pub(super) uid: i64,
}

/// Host scalars passed by value (their addresses go into the variant pack).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Scalar {
    Scale,
    One,
    NegInf,
}

/// Builds one operation graph: tensors, then operations on them.
pub(super) struct Builder {
    api: &'static Api,
    tensors: Vec<Desc>,
    ops: Vec<Desc>,
    next_uid: i64,
    pub(super) scalars: Vec<(Scalar, Tensor)>,
}

pub(super) fn row_major(dims: [i64; 4]) -> [i64; 4] {
    [dims[1] * dims[2] * dims[3], dims[2] * dims[3], dims[3], 1]
}

impl Builder {
    pub(super) fn new(api: &'static Api) -> Builder {
        Builder {
            api,
            tensors: Vec::new(),
            ops: Vec::new(),
            next_uid: 1,
            scalars: Vec::new(),
        }
    }

    pub(super) fn tensor_desc(
        &mut self,
        dims: [i64; 4],
        strides: [i64; 4],
        dtype: Dt,
        is_virtual: bool,
        by_value: bool,
    ) -> Result<Tensor, DnnError> {
        self.tensor_desc_ragged(dims, strides, dtype, is_virtual, by_value, None)
    }

    /// A tensor descriptor; with `ragged`, its batch starts are read from that int32
    /// `[B+1,1,1,1]` tensor of element offsets (packed sequences) instead of its batch stride.
    fn tensor_desc_ragged(
        &mut self,
        dims: [i64; 4],
        strides: [i64; 4],
        dtype: Dt,
        is_virtual: bool,
        by_value: bool,
        ragged: Option<Tensor>,
    ) -> Result<Tensor, DnnError> {
        let uid = self.next_uid;
        self.next_uid += 1;
        let d = Desc::new(self.api, D::CUDNN_BACKEND_TENSOR_DESCRIPTOR)?;
        d.set(
            A::CUDNN_ATTR_TENSOR_DATA_TYPE,
            T::CUDNN_TYPE_DATA_TYPE,
            &[dtype],
        )?;
        d.set(A::CUDNN_ATTR_TENSOR_DIMENSIONS, T::CUDNN_TYPE_INT64, &dims)?;
        d.set(A::CUDNN_ATTR_TENSOR_STRIDES, T::CUDNN_TYPE_INT64, &strides)?;
        d.set(A::CUDNN_ATTR_TENSOR_UNIQUE_ID, T::CUDNN_TYPE_INT64, &[uid])?;
        d.set(
            A::CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT,
            T::CUDNN_TYPE_INT64,
            &[16i64],
        )?;
        d.set(
            A::CUDNN_ATTR_TENSOR_IS_VIRTUAL,
            T::CUDNN_TYPE_BOOLEAN,
            &[is_virtual],
        )?;
        if by_value {
            d.set(
                A::CUDNN_ATTR_TENSOR_IS_BY_VALUE,
                T::CUDNN_TYPE_BOOLEAN,
                &[true],
            )?;
        }
        if let Some(offsets) = ragged {
            d.set_desc(
                A::CUDNN_ATTR_TENSOR_RAGGED_OFFSET_DESC,
                &[&self.tensors[offsets.index]],
            )?;
        }
        d.finalize("tensor")?;
        self.tensors.push(d);
        Ok(Tensor {
            index: self.tensors.len() - 1,
            uid,
        })
    }

    /// A tensor in memory (an input or output of the graph).
    pub(super) fn io(
        &mut self,
        dims: [i64; 4],
        strides: [i64; 4],
        dtype: Dt,
    ) -> Result<Tensor, DnnError> {
        self.tensor_desc(dims, strides, dtype, false, false)
    }

    /// A tensor in memory holding packed sequences: batch `b` starts at element `offsets[b]`.
    pub(super) fn io_ragged(
        &mut self,
        dims: [i64; 4],
        strides: [i64; 4],
        dtype: Dt,
        offsets: Tensor,
    ) -> Result<Tensor, DnnError> {
        self.tensor_desc_ragged(dims, strides, dtype, false, false, Some(offsets))
    }

    /// An intermediate that never reaches memory, row-major.
    pub(super) fn virt(&mut self, dims: [i64; 4], dtype: Dt) -> Result<Tensor, DnnError> {
        self.tensor_desc(dims, row_major(dims), dtype, true, false)
    }

    /// A by-value fp32 scalar, one descriptor per kind however often it is used.
    pub(super) fn scalar(&mut self, which: Scalar) -> Result<Tensor, DnnError> {
        if let Some(&(_, t)) = self.scalars.iter().find(|(s, _)| *s == which) {
            return Ok(t);
        }
        let t = self.tensor_desc([1; 4], [1; 4], Dt::CUDNN_DATA_FLOAT, false, true)?;
        self.scalars.push((which, t));
        Ok(t)
    }

    pub(super) fn t(&self, t: Tensor) -> &Desc {
        &self.tensors[t.index]
    }

    /// A pointwise operation `y = mode(x[, b[, t]])` computed in `math`.
    pub(super) fn pointwise(
        &mut self,
        mode: Pw,
        math: Dt,
        inputs: &[Tensor],
        y: Tensor,
        axis: Option<i64>,
    ) -> Result<(), DnnError> {
        let pw = Desc::new(self.api, D::CUDNN_BACKEND_POINTWISE_DESCRIPTOR)?;
        pw.set(
            A::CUDNN_ATTR_POINTWISE_MODE,
            T::CUDNN_TYPE_POINTWISE_MODE,
            &[mode],
        )?;
        pw.set(
            A::CUDNN_ATTR_POINTWISE_MATH_PREC,
            T::CUDNN_TYPE_DATA_TYPE,
            &[math],
        )?;
        if let Some(axis) = axis {
            pw.set(A::CUDNN_ATTR_POINTWISE_AXIS, T::CUDNN_TYPE_INT64, &[axis])?;
        }
        pw.finalize("pointwise descriptor")?;
        let op = Desc::new(self.api, D::CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR)?;
        op.set_desc(A::CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, &[&pw])?;
        op.set_desc(
            A::CUDNN_ATTR_OPERATION_POINTWISE_XDESC,
            &[self.t(inputs[0])],
        )?;
        if let Some(&b) = inputs.get(1) {
            op.set_desc(A::CUDNN_ATTR_OPERATION_POINTWISE_BDESC, &[self.t(b)])?;
        }
        if let Some(&t) = inputs.get(2) {
            op.set_desc(A::CUDNN_ATTR_OPERATION_POINTWISE_TDESC, &[self.t(t)])?;
        }
        op.set_desc(A::CUDNN_ATTR_OPERATION_POINTWISE_YDESC, &[self.t(y)])?;
        op.set(
            A::CUDNN_ATTR_OPERATION_POINTWISE_ALPHA1,
            T::CUDNN_TYPE_FLOAT,
            &[1.0f32],
        )?;
        if inputs.len() >= 2 {
            op.set(
                A::CUDNN_ATTR_OPERATION_POINTWISE_ALPHA2,
                T::CUDNN_TYPE_FLOAT,
                &[1.0f32],
            )?;
        }
        op.finalize(&format!("pointwise {mode:?}"))?;
        self.ops.push(op);
        Ok(())
    }

    /// A pointwise operation into a new fp32 virtual tensor of shape `dims`.
    pub(super) fn pw(
        &mut self,
        mode: Pw,
        inputs: &[Tensor],
        dims: [i64; 4],
    ) -> Result<Tensor, DnnError> {
        let y = self.virt(dims, Dt::CUDNN_DATA_FLOAT)?;
        self.pointwise(mode, Dt::CUDNN_DATA_FLOAT, inputs, y, None)?;
        Ok(y)
    }

    pub(super) fn reduction(
        &mut self,
        op_kind: sys::cudnnReduceTensorOp_t,
        x: Tensor,
        y: Tensor,
    ) -> Result<(), DnnError> {
        let r = Desc::new(self.api, D::CUDNN_BACKEND_REDUCTION_DESCRIPTOR)?;
        r.set(
            A::CUDNN_ATTR_REDUCTION_OPERATOR,
            T::CUDNN_TYPE_REDUCTION_OPERATOR_TYPE,
            &[op_kind],
        )?;
        r.set(
            A::CUDNN_ATTR_REDUCTION_COMP_TYPE,
            T::CUDNN_TYPE_DATA_TYPE,
            &[Dt::CUDNN_DATA_FLOAT],
        )?;
        r.finalize("reduction descriptor")?;
        let op = Desc::new(self.api, D::CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR)?;
        op.set_desc(A::CUDNN_ATTR_OPERATION_REDUCTION_XDESC, &[self.t(x)])?;
        op.set_desc(A::CUDNN_ATTR_OPERATION_REDUCTION_YDESC, &[self.t(y)])?;
        op.set_desc(A::CUDNN_ATTR_OPERATION_REDUCTION_DESC, &[&r])?;
        op.finalize("reduction")?;
        self.ops.push(op);
        Ok(())
    }

    pub(super) fn matmul(&mut self, a: Tensor, b: Tensor, c: Tensor) -> Result<(), DnnError> {
        self.matmul_overridden(a, b, c, [None; 3])
    }

    /// A matmul whose per-batch M, N and K extents may be overridden by int32 `[B,1,1,1]`
    /// tensors (the actual sequence lengths of a padded or paged problem).
    pub(super) fn matmul_overridden(
        &mut self,
        a: Tensor,
        b: Tensor,
        c: Tensor,
        mnk: [Option<Tensor>; 3],
    ) -> Result<(), DnnError> {
        let m = Desc::new(self.api, D::CUDNN_BACKEND_MATMUL_DESCRIPTOR)?;
        m.set(
            A::CUDNN_ATTR_MATMUL_COMP_TYPE,
            T::CUDNN_TYPE_DATA_TYPE,
            &[Dt::CUDNN_DATA_FLOAT],
        )?;
        m.finalize("matmul descriptor")?;
        let op = Desc::new(self.api, D::CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR)?;
        op.set_desc(A::CUDNN_ATTR_OPERATION_MATMUL_ADESC, &[self.t(a)])?;
        op.set_desc(A::CUDNN_ATTR_OPERATION_MATMUL_BDESC, &[self.t(b)])?;
        op.set_desc(A::CUDNN_ATTR_OPERATION_MATMUL_CDESC, &[self.t(c)])?;
        op.set_desc(A::CUDNN_ATTR_OPERATION_MATMUL_DESC, &[&m])?;
        let names = [
            A::CUDNN_ATTR_OPERATION_MATMUL_GEMM_M_OVERRIDE_DESC,
            A::CUDNN_ATTR_OPERATION_MATMUL_GEMM_N_OVERRIDE_DESC,
            A::CUDNN_ATTR_OPERATION_MATMUL_GEMM_K_OVERRIDE_DESC,
        ];
        for (name, t) in names.into_iter().zip(mnk) {
            if let Some(t) = t {
                op.set_desc(name, &[self.t(t)])?;
            }
        }
        op.finalize("matmul")?;
        self.ops.push(op);
        Ok(())
    }

    pub(super) fn reshape(&mut self, x: Tensor, y: Tensor) -> Result<(), DnnError> {
        let op = Desc::new(self.api, D::CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR)?;
        op.set_desc(A::CUDNN_ATTR_OPERATION_RESHAPE_XDESC, &[self.t(x)])?;
        op.set_desc(A::CUDNN_ATTR_OPERATION_RESHAPE_YDESC, &[self.t(y)])?;
        op.finalize("reshape")?;
        self.ops.push(op);
        Ok(())
    }

    /// Gathers a paged K or V cache into the dense virtual tensor `y` (`[B,H,D,S]` K^T-strided
    /// for K, `[B,H,S,D]` for V): `container` `[num_pages,H,block_size,D]`, `page_table` int32
    /// `[B,1,pages_per_seq,1]`, `seq_len` int32 `[B,1,1,1]` (cuDNN >= 9.5).
    pub(super) fn paged_cache_load(
        &mut self,
        container: Tensor,
        seq_len: Tensor,
        page_table: Tensor,
        y: Tensor,
    ) -> Result<(), DnnError> {
        let op = Desc::new(
            self.api,
            D::CUDNN_BACKEND_OPERATION_PAGED_CACHE_LOAD_DESCRIPTOR,
        )?;
        op.set_desc(
            A::CUDNN_ATTR_OPERATION_PAGED_CACHE_LOAD_CONTAINER_DESC,
            &[self.t(container)],
        )?;
        op.set_desc(
            A::CUDNN_ATTR_OPERATION_PAGED_CACHE_LOAD_PAGE_TABLE_DESC,
            &[self.t(page_table)],
        )?;
        op.set_desc(
            A::CUDNN_ATTR_OPERATION_PAGED_CACHE_LOAD_SEQUENCE_DESC,
            &[self.t(seq_len)],
        )?;
        op.set_desc(A::CUDNN_ATTR_OPERATION_PAGED_CACHE_LOAD_YDESC, &[self.t(y)])?;
        op.finalize("paged cache load")?;
        self.ops.push(op);
        Ok(())
    }

    /// The row (query) and column (key) index of every score of `s` `[B,H,Sq,Skv]`, int32.
    fn row_and_col(&mut self, s: Tensor, dims: [i64; 4]) -> Result<(Tensor, Tensor), DnnError> {
        let i32t = Dt::CUDNN_DATA_INT32;
        let row = self.virt(dims, i32t)?;
        self.pointwise(Pw::CUDNN_POINTWISE_GEN_INDEX, i32t, &[s], row, Some(2))?;
        let col = self.virt(dims, i32t)?;
        self.pointwise(Pw::CUDNN_POINTWISE_GEN_INDEX, i32t, &[s], col, Some(3))?;
        Ok((row, col))
    }

    /// The padding mask on scores `s` `[B,H,Sq,Skv]` (the frontend's `padding_mask` score
    /// modifier): keep (i, j) when `i < seq_len_q[b]` and `j < seq_len_kv[b]`, else -inf.
    pub(super) fn padding_mask(
        &mut self,
        s: Tensor,
        dims: [i64; 4],
        seq_len_q: Tensor,
        seq_len_kv: Tensor,
    ) -> Result<Tensor, DnnError> {
        let boolean = Dt::CUDNN_DATA_BOOLEAN;
        let (row, col) = self.row_and_col(s, dims)?;
        let row_in = self.virt(dims, boolean)?;
        self.pointwise(
            Pw::CUDNN_POINTWISE_CMP_LT,
            boolean,
            &[row, seq_len_q],
            row_in,
            None,
        )?;
        let col_in = self.virt(dims, boolean)?;
        self.pointwise(
            Pw::CUDNN_POINTWISE_CMP_LT,
            boolean,
            &[col, seq_len_kv],
            col_in,
            None,
        )?;
        let keep = self.virt(dims, boolean)?;
        self.pointwise(
            Pw::CUDNN_POINTWISE_LOGICAL_AND,
            boolean,
            &[row_in, col_in],
            keep,
            None,
        )?;
        self.keep_or_neg_inf(s, keep, dims)
    }

    /// `s` where `keep`, else -inf: the select both masks end with.
    pub(super) fn keep_or_neg_inf(
        &mut self,
        s: Tensor,
        keep: Tensor,
        dims: [i64; 4],
    ) -> Result<Tensor, DnnError> {
        let neg_inf = self.scalar(Scalar::NegInf)?;
        let out = self.virt(dims, Dt::CUDNN_DATA_FLOAT)?;
        self.pointwise(
            Pw::CUDNN_POINTWISE_BINARY_SELECT,
            Dt::CUDNN_DATA_FLOAT,
            &[s, neg_inf, keep],
            out,
            None,
        )?;
        Ok(out)
    }

    /// The causal (top-left) mask on scores `s` `[B,H,Sq,Skv]`: keep key j for query i when
    /// i >= j, else -inf.
    pub(super) fn causal_mask(&mut self, s: Tensor, dims: [i64; 4]) -> Result<Tensor, DnnError> {
        let row = self.virt(dims, Dt::CUDNN_DATA_INT32)?;
        self.pointwise(
            Pw::CUDNN_POINTWISE_GEN_INDEX,
            Dt::CUDNN_DATA_FLOAT,
            &[s],
            row,
            Some(2),
        )?;
        let col = self.virt(dims, Dt::CUDNN_DATA_INT32)?;
        self.pointwise(
            Pw::CUDNN_POINTWISE_GEN_INDEX,
            Dt::CUDNN_DATA_FLOAT,
            &[s],
            col,
            Some(3),
        )?;
        let keep = self.virt(dims, Dt::CUDNN_DATA_BOOLEAN)?;
        self.pointwise(
            Pw::CUDNN_POINTWISE_CMP_GE,
            Dt::CUDNN_DATA_BOOLEAN,
            &[row, col],
            keep,
            None,
        )?;
        self.keep_or_neg_inf(s, keep, dims)
    }

    /// The causal mask aligned to the last key on scores `s` `[B,H,Sq,Skv]` (the frontend's
    /// bottom-right diagonal band before cuDNN 9.21): keep key j for query i of batch b when
    /// `i + seq_len_kv[b] - seq_len_q[b] >= j`, else -inf.
    pub(super) fn causal_mask_bottom_right(
        &mut self,
        s: Tensor,
        dims: [i64; 4],
        seq_len_q: Tensor,
        seq_len_kv: Tensor,
    ) -> Result<Tensor, DnnError> {
        let i32t = Dt::CUDNN_DATA_INT32;
        let (row, col) = self.row_and_col(s, dims)?;
        let plus_kv = self.virt(dims, i32t)?;
        self.pointwise(
            Pw::CUDNN_POINTWISE_ADD,
            i32t,
            &[row, seq_len_kv],
            plus_kv,
            Some(3),
        )?;
        let shifted = self.virt(dims, i32t)?;
        self.pointwise(
            Pw::CUDNN_POINTWISE_SUB,
            i32t,
            &[plus_kv, seq_len_q],
            shifted,
            Some(3),
        )?;
        let keep = self.virt(dims, Dt::CUDNN_DATA_BOOLEAN)?;
        self.pointwise(
            Pw::CUDNN_POINTWISE_CMP_GE,
            Dt::CUDNN_DATA_BOOLEAN,
            &[shifted, col],
            keep,
            None,
        )?;
        self.keep_or_neg_inf(s, keep, dims)
    }

    /// Softmax over the key axis with statistics, as the frontend's softmax node lowers it:
    /// `M = max x`, `E = exp(x - M)`, `Z = sum E`, `stats = M + log Z` (written to `stats`),
    /// returns `P = E / Z` as a virtual tensor of type `p_type`.
    pub(super) fn softmax_with_stats(
        &mut self,
        x: Tensor,
        dims: [i64; 4],
        stats: Tensor,
        p_type: Dt,
    ) -> Result<Tensor, DnnError> {
        let f32t = Dt::CUDNN_DATA_FLOAT;
        let stats_dims = [dims[0], dims[1], dims[2], 1];
        let max = self.virt(stats_dims, f32t)?;
        self.reduction(sys::cudnnReduceTensorOp_t::CUDNN_REDUCE_TENSOR_MAX, x, max)?;
        let sub = self.pw(Pw::CUDNN_POINTWISE_SUB, &[x, max], dims)?;
        let exp = self.pw(Pw::CUDNN_POINTWISE_EXP, &[sub], dims)?;
        let sum = self.virt(stats_dims, f32t)?;
        self.reduction(
            sys::cudnnReduceTensorOp_t::CUDNN_REDUCE_TENSOR_ADD,
            exp,
            sum,
        )?;
        let log = self.pw(Pw::CUDNN_POINTWISE_LOG, &[sum], stats_dims)?;
        self.pointwise(Pw::CUDNN_POINTWISE_ADD, f32t, &[max, log], stats, None)?;
        let p = self.virt(dims, p_type)?;
        self.pointwise(Pw::CUDNN_POINTWISE_DIV, f32t, &[exp, sum], p, None)?;
        Ok(p)
    }

    /// Finalizes the operation graph on `handle`.
    pub(super) fn graph(&self, handle: &Handle) -> Result<Desc, DnnError> {
        let g = Desc::new(self.api, D::CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR)?;
        g.set(
            A::CUDNN_ATTR_OPERATIONGRAPH_HANDLE,
            T::CUDNN_TYPE_HANDLE,
            &[handle.raw],
        )?;
        let ops: Vec<&Desc> = self.ops.iter().collect();
        g.set_desc(A::CUDNN_ATTR_OPERATIONGRAPH_OPS, &ops)?;
        g.finalize("operation graph")?;
        Ok(g)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_major_strides() {
        assert_eq!(row_major([2, 3, 5, 7]), [105, 35, 7, 1]);
    }
}
