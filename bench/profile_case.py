#!/usr/bin/env python3
"""One case of the MoE suite run once per kernel inside an NVTX range, for Nsight Compute.

    ncu --clock-control none --nvtx --nvtx-include "profile/" --section SpeedOfLight \\
        --section WarpStateStats python3 bench/profile_case.py --lib build-gpu/libggemm.so \\
        --case qwen3_fc2_L128

Each kernel runs once outside the range first (DeepGEMM compiles its kernel then), then once
inside the range "profile", in the order printed: ggemm (the plan's choice, then each
GGEMM_KERNEL prefix given with --kernel, then with --unscaled the plan's choice with alpha =
prob = NULL) and DeepGEMM's m_grouped_bf16_gemm_nt_contiguous when `import deep_gemm` works.
Same inputs and arguments as bench/peers.py (random alpha and prob for ggemm).

With --glu, the case's fused GLU forward instead, as bench/glu.py times it: ggemm's GLU (SwiGLU,
bf16 D of M x N/2, no C), its plain GEMM of the same M x N x K, then the GLU on each --kernel
prefix. With --dglu, the case's backward through its fc1 activation instead, as bench/glu.py
times it: ggemm's dGLU (SwiGLU, bf16 pre-activation and d_pre, the second layer's N-major
weights), its plain dgrad of the same size, then that dgrad on each --kernel prefix.
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import peers  # noqa: E402


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--lib", default="build-gpu/libggemm.so", help="path of libggemm.so")
    p.add_argument("--shapes", default=os.path.join(HERE, "moe_shapes.json"))
    p.add_argument("--case", default="qwen3_fc2_L128", help="one case name of the shapes file")
    p.add_argument("--kernel", action="append", default=[],
                   help="also profile ggemm restricted to kernels whose name starts with this prefix "
                        "(GGEMM_KERNEL; repeatable)")
    p.add_argument("--unscaled", action="store_true",
                   help="also profile the plan's choice with alpha = prob = NULL (D = A B_g^T)")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--glu", action="store_true",
                      help="profile the case's fused GLU forward and its plain GEMM (--kernel: the GLU's)")
    mode.add_argument("--dglu", action="store_true",
                      help="profile the case's dGLU and plain dgrad instead of its forward (--kernel: the dgrad's)")
    return p.parse_args()


def forward_runs(torch, lib, case, opts, handle):
    """ggemm's forward (the plan's choice, each forced kernel, optionally unscaled) and DeepGEMM's."""
    try:
        import deep_gemm
    except Exception as e:  # noqa: BLE001 - the peer is optional
        print("profile_case.py: DeepGEMM not profiled (import deep_gemm: %s)" % peers.short_error(e))
        deep_gemm = None
    data = peers.CaseData(torch, case, 1, False)
    runs = []
    for prefix in [None] + opts.kernel:
        with peers.forced_kernel(prefix):
            gcase = peers.GgemmCase(lib, torch, data, peers.gg.SCHEDULER_STATIC, full=False)
        kernel = [line for line in gcase.description.splitlines() if line.startswith("kernel:")][0]
        print("ggemm%s: %s" % ("" if prefix is None else "_" + prefix, kernel[:80]))
        runs.append(("ggemm" if prefix is None else "ggemm_" + prefix,
                     lambda g=gcase: g.run(g.args[0], handle)))
    if opts.unscaled:
        gcase = peers.GgemmCase(lib, torch, data, peers.gg.SCHEDULER_STATIC, full=False, nulls=("alpha", "prob"))
        runs.append(("ggemm_unscaled", lambda g=gcase: g.run(g.args[0], handle)))
    if deep_gemm is not None:
        runs.append(("deepgemm", lambda: deep_gemm.m_grouped_bf16_gemm_nt_contiguous(
            data.a[0], data.b[0], data.d_deepgemm, data.m_indices)))
    return data, runs


def plan_runs(specs, handle):
    """One run per (name, GGEMM_KERNEL prefix or None, plan maker): the plan made under the prefix,
    its kernel printed, its first argument set executed."""
    runs = []
    for name, prefix, make in specs:
        with peers.forced_kernel(prefix):
            plan, args, workspace = make()
        kernel = [line for line in plan.describe().splitlines() if line.startswith("kernel:")][0]
        print("%s: %s" % (name, kernel[:80]))
        runs.append((name, lambda p=plan, a=args, w=workspace: p.execute(a[0], handle)))
    return runs


def glu_runs(torch, lib, case, prefixes, handle):
    """ggemm's fused SwiGLU forward and plain GEMM of the case (bench/glu.py's), then the GLU on each
    forced kernel."""
    import glu
    data = glu.Case(torch, lib, case, 1)
    swiglu, none = peers.gg.ACTIVATION_SWIGLU, peers.gg.ACTIVATION_NONE
    return data, plan_runs([("glu", None, lambda: data.plan(torch, swiglu)),
                            ("plain", None, lambda: data.plan(torch, none))] +
                           [("glu_" + prefix, prefix, lambda: data.plan(torch, swiglu)) for prefix in prefixes],
                           handle)


def dglu_runs(torch, lib, case, prefixes, handle):
    """ggemm's dGLU and plain dgrad of the case (bench/glu.py's), then the dgrad on each forced kernel."""
    import glu
    data = glu.Case(torch, lib, case, 1)
    return data, plan_runs([("dglu", None, lambda: data.backward_plan(torch, True)),
                            ("dgrad", None, lambda: data.backward_plan(torch, False))] +
                           [("dgrad_" + prefix, prefix, lambda: data.backward_plan(torch, False))
                            for prefix in prefixes],
                           handle)


def main():
    opts = parse_args()
    import torch
    lib = peers.gg.Library(os.path.abspath(opts.lib))
    case = peers.load_cases(opts.shapes, opts.case)[0]
    handle = torch.cuda.current_stream().cuda_stream
    if opts.glu:
        data, runs = glu_runs(torch, lib, case, opts.kernel, handle)
    elif opts.dglu:
        data, runs = dglu_runs(torch, lib, case, opts.kernel, handle)
    else:
        data, runs = forward_runs(torch, lib, case, opts, handle)
    for _, run in runs:
        run()
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_push("profile")
    for _, run in runs:
        run()
    torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()
    status = peers.device_status_error(data)
    if status:
        sys.exit("profile_case.py: " + status)
    print("profiled %s, in this order: %s" % (case["name"], ", ".join(name for name, _ in runs)))


if __name__ == "__main__":
    main()
