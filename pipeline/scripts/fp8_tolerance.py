#!/usr/bin/env python3
"""Does the library's fp8 GEMM meet gemm_fp8_n7168_k5120's tolerance? (run on the GPU machine)

For a few seeds and M values, draws A, B ~ N(0, 1) rounded to e4m3 and scales ~ U(0.5, 2) as the
task does, computes C with torch._scaled_mm (cuBLASLt, bf16 output, default = promoted
accumulation) and with fast accumulation, and compares each with a float64 reference under
the task's rule |got - ref| <= atol + rtol * |ref| (atol = rtol = 2e-2). Prints one row per case.
"""
import torch

N, K = 7168, 5120
ATOL = RTOL = 2e-2


def case(m, seed, fast):
    g = torch.Generator(device="cuda").manual_seed(seed)
    a = torch.randn(m, K, device="cuda", generator=g).to(torch.float8_e4m3fn)
    b = torch.randn(N, K, device="cuda", generator=g).to(torch.float8_e4m3fn)
    sa = (torch.rand(1, device="cuda", generator=g) * 1.5 + 0.5).float()
    sb = (torch.rand(1, device="cuda", generator=g) * 1.5 + 0.5).float()
    c = torch._scaled_mm(a, b.t(), scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16,
                         use_fast_accum=fast)
    ref = (a.double() @ b.double().t()) * (sa.double() * sb.double())
    err = (c.double() - ref).abs()
    bad = (err > ATOL + RTOL * ref.abs()).sum().item()
    rel = (err.norm() / ref.norm()).item()
    return bad, err.max().item(), rel, (sa * sb).item()


print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}")
print("M, seed, fast_accum, violations, elements, max_abs_error, relative_l2, scale")
for m in (1, 129, 8192):
    for seed in range(4):
        for fast in (False, True):
            bad, mx, rel, sc = case(m, seed, fast)
            print(f"{m}, {seed}, {fast}, {bad}, {m * N}, {mx:.4f}, {rel:.3e}, {sc:.3f}")
