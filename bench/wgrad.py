#!/usr/bin/env python3
"""ggemm's weight gradient against its peers on the MoE suite, in one process, on one GPU.

For every case of bench/moe_shapes.json, the case's weight gradient: P = N and Q = K of the
case, summed over each expert's padded rows (dW_g = dY_g^T X_g with dY (M, N), X (M, K)):

  1. check: ggemm (alpha = 1, bf16 overwrite) against the torch._grouped_mm K-grouped form; the
     relative Frobenius error must be <= 1e-2 (outputs poisoned with NaN first);
  2. time, in interleaved rounds (a random order each round, the same in every run), medians of
     event-timed runs:
       ggemm_bf16   ggemm_wgrad_execute, bf16 output, overwrite (TMA store path, the default)
       ggemm_bf16_registers  the same through the register store path (GGEMM_WGRAD_STORE=registers
                    at plan creation); its output must equal ggemm_bf16's bitwise
       ggemm_fp32_overwrite  fp32 output, overwrite (TMA store path)
       ggemm_fp32   ggemm_wgrad_execute, fp32 output, accumulate (main_grad style)
       grouped_mm   torch._grouped_mm(x1.t(), x2, offs=padded_offsets), bf16 out
       deep_gemm    deep_gemm.k_grouped_bf16_gemm_tn_contiguous(a, b, d, ks, ks_tensor, c),
                    d = c + a_g^T b_g in fp32 (when `import deep_gemm` works; it takes the group
                    sizes on the host as well)
       dense        one torch.mm of the same size: (P x M) @ (M x Q), a reference, not a bound
       ggemm_bf16_NAME  (--alt-lib NAME=PATH) ggemm_bf16 from another build of libggemm.so,
                    checked against torch._grouped_mm like ggemm_bf16
       ggemm_bf16_dynamic, ggemm_fp32_dynamic  (--also-dynamic) ggemm_bf16 and ggemm_fp32 with
                    the other scheduler than --scheduler's; the bf16 output must equal
                    ggemm_bf16's bitwise
TFLOP/s = 2 * M * P * Q / median time, M = padded_offsets[-1].

Writes wgrad.json into --out and prints a table (ggemm over each peer at the peer's own
output dtype: grouped_mm against ggemm_bf16, deep_gemm against ggemm_fp32).

usage: python3 bench/wgrad.py --lib build-gpu/libggemm.so [--cases a,b] [--rounds 20]
                              [--alt-lib NAME=PATH ...] [--also-dynamic]
"""
import argparse
import ctypes as C
import json
import math
import os
import random
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

DTYPE_BF16, DTYPE_FP32 = 1, 3
ORDER_SEED = 2026  # the rounds' op orders: random, the same in every run
OUTPUT_DENSE = 0
CHECK_TOLERANCE = 1e-2


class WgradDesc(C.Structure):
    _fields_ = [("struct_size", C.c_uint32), ("device", C.c_int32), ("m_capacity", C.c_int64),
                ("p", C.c_int64), ("q", C.c_int64), ("num_experts", C.c_int32), ("out_dtype", C.c_int32),
                ("output_mode", C.c_int32), ("accumulate", C.c_int32), ("scheduler", C.c_int32),
                ("sm_margin", C.c_int32), ("reserved0", C.c_int32), ("reserved1", C.c_int32)]


class WgradArgs(C.Structure):
    _fields_ = [("struct_size", C.c_uint32), ("reserved0", C.c_uint32), ("m", C.c_int64),
                ("x1", C.c_void_p), ("x2", C.c_void_p), ("padded_offsets", C.c_void_p), ("alpha", C.c_void_p),
                ("out", C.c_void_p), ("out_ptrs", C.c_void_p), ("workspace", C.c_void_p),
                ("workspace_size", C.c_uint64), ("device_status", C.c_void_p)]


assert C.sizeof(WgradDesc) == 64 and C.sizeof(WgradArgs) == 88  # include/ggemm.h's layout


class Wgrad:
    """One ggemm weight-gradient plan through ctypes."""

    def __init__(self, lib, m, p, q, experts, out_dtype, accumulate, scheduler):
        self.lib = lib
        plan = C.c_void_p
        lib.ggemm_wgrad_desc_init.argtypes = [C.POINTER(WgradDesc), C.c_uint32]
        lib.ggemm_wgrad_args_init.argtypes = [C.POINTER(WgradArgs), C.c_uint32]
        lib.ggemm_wgrad_plan_create.argtypes = [C.POINTER(plan), C.POINTER(WgradDesc)]
        lib.ggemm_wgrad_execute.argtypes = [plan, C.POINTER(WgradArgs), C.c_void_p]
        lib.ggemm_plan_workspace_size.argtypes = [plan, C.POINTER(C.c_uint64)]
        lib.ggemm_plan_describe.argtypes = [plan, C.c_char_p, C.c_uint64, C.POINTER(C.c_uint64)]
        lib.ggemm_plan_destroy.argtypes = [plan]
        lib.ggemm_last_error_message.argtypes = [C.c_char_p, C.c_uint64, C.POINTER(C.c_uint64)]
        desc = WgradDesc()
        self.check(lib.ggemm_wgrad_desc_init(C.byref(desc), C.sizeof(desc)), "ggemm_wgrad_desc_init")
        desc.m_capacity, desc.p, desc.q, desc.num_experts = m, p, q, experts
        desc.out_dtype, desc.output_mode, desc.accumulate, desc.scheduler = out_dtype, OUTPUT_DENSE, accumulate, scheduler
        self.handle = C.c_void_p()
        self.check(lib.ggemm_wgrad_plan_create(C.byref(self.handle), C.byref(desc)), "ggemm_wgrad_plan_create")
        size = C.c_uint64()
        self.check(lib.ggemm_plan_workspace_size(self.handle, C.byref(size)), "ggemm_plan_workspace_size")
        self.workspace_size = size.value

    def check(self, status, what):
        if status != 0:
            text = C.create_string_buffer(4096)
            self.lib.ggemm_last_error_message(text, len(text), None)
            raise RuntimeError("%s failed (%d): %s" % (what, status, text.value.decode()))

    def describe(self):
        text = C.create_string_buffer(8192)
        self.check(self.lib.ggemm_plan_describe(self.handle, text, len(text), None), "ggemm_plan_describe")
        return text.value.decode()

    def args(self, m, x1, x2, offsets, out, workspace, status):
        args = WgradArgs()
        self.check(self.lib.ggemm_wgrad_args_init(C.byref(args), C.sizeof(args)), "ggemm_wgrad_args_init")
        args.m, args.x1, args.x2, args.padded_offsets = m, x1.data_ptr(), x2.data_ptr(), offsets.data_ptr()
        args.out = out.data_ptr()
        args.workspace = workspace.data_ptr() if workspace is not None else None
        args.workspace_size = self.workspace_size
        args.device_status = status.data_ptr()
        return args

    def run(self, args, stream_handle):
        self.check(self.lib.ggemm_wgrad_execute(self.handle, C.byref(args), C.c_void_p(stream_handle)),
                   "ggemm_wgrad_execute")

    def destroy(self):
        self.lib.ggemm_plan_destroy(self.handle)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--lib", default="build-gpu/libggemm.so", help="path of libggemm.so")
    p.add_argument("--shapes", default=os.path.join(HERE, "moe_shapes.json"))
    p.add_argument("--cases", default="", help="comma-separated case names (default: all)")
    p.add_argument("--rounds", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--scheduler", choices=("static", "dynamic"), default="static")
    p.add_argument("--also-dynamic", action="store_true",
                   help="also time bf16 overwrite and fp32 accumulate with the other scheduler, in the same "
                        "rounds (reported as ggemm_bf16_dynamic and ggemm_fp32_dynamic, or _static)")
    p.add_argument("--out", default="out", help="folder of wgrad.json")
    p.add_argument("--alt-lib", action="append", default=[], metavar="NAME=PATH",
                   help="also time another build of libggemm.so (bf16 output, overwrite) in the same rounds, "
                        "reported as ggemm_bf16_NAME (repeatable)")
    opts = p.parse_args()
    names = [spec.split("=", 1)[0] for spec in opts.alt_lib]
    for spec, name in zip(opts.alt_lib, names):
        if "=" not in spec or not name or name == "registers" or names.count(name) > 1:
            p.error("--alt-lib takes NAME=PATH, each NAME once and not 'registers', got %r" % spec)
    return opts


def rel_error(torch, got, ref):
    got, ref = got.double(), ref.double()
    return float(torch.linalg.norm(got - ref) / torch.linalg.norm(ref))


def time_ops(torch, stream, ops, rounds, warmup):
    """Interleaved rounds, each in a fresh random order (fixed seed); {name: [ms, ...]}.

    A rotating order keeps every op after the same neighbour, and what runs just before moves a
    kernel's time: two builds of the same kernel, always one after a compute-bound op and the
    other after a memory-bound one, read up to 4 % apart."""
    events = {name: (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for name, _ in ops}
    samples = {name: [] for name, _ in ops}
    order = random.Random(ORDER_SEED)
    for r in range(warmup + rounds):
        for name, fn in order.sample(ops, len(ops)):
            start, stop = events[name]
            start.record(stream)
            fn()
            stop.record(stream)
        stream.synchronize()
        if r >= warmup:
            for name, _ in ops:
                samples[name].append(events[name][0].elapsed_time(events[name][1]))
    return samples


def run_case(torch, lib, alt_libs, deep_gemm, case, opts, stream):
    offsets_host = case["padded_offsets"]
    m, p, q, experts = offsets_host[-1], case["n"], case["k"], case["experts"]
    device = torch.device("cuda")
    gen = torch.Generator(device=device).manual_seed(0)
    x1 = torch.rand(m, p, device=device, generator=gen).sub_(0.5).to(torch.bfloat16)
    x2 = torch.rand(m, q, device=device, generator=gen).sub_(0.5).to(torch.bfloat16)
    offsets = torch.tensor(offsets_host, dtype=torch.int32, device=device)
    status = torch.zeros(1, dtype=torch.int32, device=device)
    scheduler = 1 if opts.scheduler == "dynamic" else 0
    result = {"name": case["name"], "m": m, "p": p, "q": q, "experts": experts, "tflops": {}, "errors": {}}
    plans = []
    try:
        bf16 = Wgrad(lib, m, p, q, experts, DTYPE_BF16, 0, scheduler)
        plans.append(bf16)
        fp32 = Wgrad(lib, m, p, q, experts, DTYPE_FP32, 1, scheduler)
        plans.append(fp32)
        fp32_overwrite = Wgrad(lib, m, p, q, experts, DTYPE_FP32, 0, scheduler)
        plans.append(fp32_overwrite)
        os.environ["GGEMM_WGRAD_STORE"] = "registers"
        try:
            bf16_registers = Wgrad(lib, m, p, q, experts, DTYPE_BF16, 0, scheduler)
        finally:
            del os.environ["GGEMM_WGRAD_STORE"]
        plans.append(bf16_registers)
        alts = []  # (name, plan) of each --alt-lib build, bf16 output, overwrite
        for name, alt_lib in alt_libs:
            alts.append((name, Wgrad(alt_lib, m, p, q, experts, DTYPE_BF16, 0, scheduler)))
            plans.append(alts[-1][1])
        other = None  # (suffix, bf16 plan, fp32 accumulate plan) of the other scheduler
        if opts.also_dynamic:
            suffix = "static" if scheduler == 1 else "dynamic"
            other = (suffix, Wgrad(lib, m, p, q, experts, DTYPE_BF16, 0, 1 - scheduler),
                     Wgrad(lib, m, p, q, experts, DTYPE_FP32, 1, 1 - scheduler))
            plans.extend(other[1:])
        result["plan"] = bf16.describe().splitlines()[2]
        workspace = torch.empty(max(bf16.workspace_size, 128), dtype=torch.uint8, device=device)
        out_bf16 = torch.full((experts, p, q), float("nan"), dtype=torch.bfloat16, device=device)
        main_grad = torch.zeros((experts, p, q), dtype=torch.float32, device=device)
        args_bf16 = bf16.args(m, x1, x2, offsets, out_bf16, workspace, status)
        args_fp32 = fp32.args(m, x1, x2, offsets, main_grad, workspace, status)
        out_registers = torch.full((experts, p, q), float("nan"), dtype=torch.bfloat16, device=device)
        args_registers = bf16_registers.args(m, x1, x2, offsets, out_registers, workspace, status)
        out_fp32 = torch.empty((experts, p, q), dtype=torch.float32, device=device)
        args_fp32_overwrite = fp32_overwrite.args(m, x1, x2, offsets, out_fp32, workspace, status)
        handle = stream.cuda_stream
        ops = [("ggemm_bf16", lambda: bf16.run(args_bf16, handle)),
               ("ggemm_bf16_registers", lambda: bf16_registers.run(args_registers, handle)),
               ("ggemm_fp32_overwrite", lambda: fp32_overwrite.run(args_fp32_overwrite, handle)),
               ("ggemm_fp32", lambda: fp32.run(args_fp32, handle))]
        alt_outputs = []
        for name, plan in alts:
            out = torch.full((experts, p, q), float("nan"), dtype=torch.bfloat16, device=device)
            alt_workspace = torch.empty(max(plan.workspace_size, 128), dtype=torch.uint8, device=device)
            alt_args = plan.args(m, x1, x2, offsets, out, alt_workspace, status)
            alt_outputs.append((name, out))
            ops.append(("ggemm_bf16_" + name, lambda plan=plan, alt_args=alt_args: plan.run(alt_args, handle)))
        out_other = None
        if other is not None:
            suffix, bf16_other, fp32_other = other
            other_workspace = torch.empty(max(bf16_other.workspace_size, fp32_other.workspace_size, 128),
                                          dtype=torch.uint8, device=device)
            out_other = torch.full((experts, p, q), float("nan"), dtype=torch.bfloat16, device=device)
            main_grad_other = torch.zeros((experts, p, q), dtype=torch.float32, device=device)
            args_bf16_other = bf16_other.args(m, x1, x2, offsets, out_other, other_workspace, status)
            args_fp32_other = fp32_other.args(m, x1, x2, offsets, main_grad_other, other_workspace, status)
            ops.append(("ggemm_bf16_" + suffix, lambda: bf16_other.run(args_bf16_other, handle)))
            ops.append(("ggemm_fp32_" + suffix, lambda: fp32_other.run(args_fp32_other, handle)))
        # The peers: torch._grouped_mm's K-grouped form, DeepGEMM's k-grouped kernel, one dense mm.
        x1t = x1.t()
        torch.cuda.synchronize()  # inputs were made on the default stream
        with torch.cuda.stream(stream):
            ref = torch._grouped_mm(x1t, x2, offs=offsets, out_dtype=torch.bfloat16)
            bf16.run(args_bf16, handle)
            bf16_registers.run(args_registers, handle)
            for _, fn in ops[4:]:
                fn()
        stream.synchronize()
        if int(status.item()) != 0:
            raise RuntimeError("device status 0x%x" % int(status.item()))
        result["errors"]["check_vs_grouped_mm"] = rel_error(torch, out_bf16.float(), ref.float())
        for name, out in alt_outputs:
            result["errors"]["check_%s_vs_grouped_mm" % name] = rel_error(torch, out.float(), ref.float())
        if not torch.equal(out_bf16.view(torch.int16), out_registers.view(torch.int16)):
            raise RuntimeError("the TMA and register store paths differ bitwise")
        if out_other is not None and not torch.equal(out_bf16.view(torch.int16), out_other.view(torch.int16)):
            raise RuntimeError("the static and dynamic schedulers differ bitwise")
        result["plan_store"] = [line for line in bf16.describe().splitlines() if line.startswith("store:")][0][:40]
        ops.append(("grouped_mm", lambda: torch._grouped_mm(x1t, x2, offs=offsets, out_dtype=torch.bfloat16)))
        if deep_gemm is not None:
            ks = [offsets_host[0]] + [b - a for a, b in zip(offsets_host, offsets_host[1:])]
            ks_tensor = torch.tensor(ks, dtype=torch.int32, device=device)
            d = torch.zeros((experts, p, q), dtype=torch.float32, device=device)
            c = torch.zeros_like(d)
            ops.append(("deep_gemm", lambda: deep_gemm.k_grouped_bf16_gemm_tn_contiguous(x1, x2, d, ks, ks_tensor, c)))
        w = torch.empty(p, m, dtype=torch.bfloat16, device=device)
        torch.cuda.synchronize()
        ops.append(("dense", lambda: torch.mm(w, x2)))
        with torch.cuda.stream(stream):
            samples = time_ops(torch, stream, ops, opts.rounds, opts.warmup)
        flops = 2.0 * m * p * q
        for name, times in samples.items():
            result["tflops"][name] = flops / (statistics.median(times) * 1e-3) / 1e12
    except Exception as e:  # noqa: BLE001 - one case failing must not end the run
        result["failure"] = "%s: %s" % (type(e).__name__, str(e).splitlines()[0][:300])
    finally:
        for plan in plans:
            plan.destroy()
    return result


def main():
    opts = parse_args()
    import torch
    deep_gemm = None
    try:
        import deep_gemm as dg
        deep_gemm = dg if hasattr(dg, "k_grouped_bf16_gemm_tn_contiguous") else None
    except Exception:  # noqa: BLE001 - optional peer
        deep_gemm = None
    lib = C.CDLL(opts.lib)
    alt_libs = [(name, C.CDLL(path)) for name, path in (spec.split("=", 1) for spec in opts.alt_lib)]
    with open(opts.shapes) as f:
        cases = json.load(f)["cases"]
    if opts.cases:
        wanted = set(opts.cases.split(","))
        cases = [c for c in cases if c["name"] in wanted]
    stream = torch.cuda.Stream()
    results = []
    os.makedirs(opts.out, exist_ok=True)
    for case in cases:
        results.append(run_case(torch, lib, alt_libs, deep_gemm, case, opts, stream))
        with open(os.path.join(opts.out, "wgrad.json"), "w") as f:
            json.dump({"cases": results, "deep_gemm": deep_gemm is not None}, f, indent=1)
        r = results[-1]
        print("%-18s %s" % (r["name"], r.get("failure") or " ".join(
            "%s %.0f" % (k, v) for k, v in r["tflops"].items())), flush=True)

    print("\n| case | ggemm bf16 | torch (bf16) | x | bf16 registers | ggemm fp32 acc | DeepGEMM (fp32) | x "
          "| fp32 overwrite | dense | check |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    over_torch, over_deep = [], []
    for r in results:
        t = r["tflops"]
        a, b = t.get("ggemm_bf16"), t.get("grouped_mm")
        c, d = t.get("ggemm_fp32"), t.get("deep_gemm")
        x1 = a / b if a and b else None
        x2 = c / d if c and d else None
        if x1:
            over_torch.append(x1)
        if x2:
            over_deep.append(x2)
        f = lambda v, s="%.0f": "-" if v is None else s % v  # noqa: E731
        print("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            r["name"], f(a), f(b), f(x1, "%.2f"), f(t.get("ggemm_bf16_registers")), f(c), f(d), f(x2, "%.2f"),
            f(t.get("ggemm_fp32_overwrite")), f(t.get("dense")),
            f(r["errors"].get("check_vs_grouped_mm"), "%.1e") if "failure" not in r else r["failure"][:60]))
    geo = lambda v: math.exp(sum(map(math.log, v)) / len(v)) if v else float("nan")  # noqa: E731
    print("\ngeomean ggemm/torch (bf16) %.3f over %d cases; ggemm/DeepGEMM (fp32 accumulate) %.3f over %d cases"
          % (geo(over_torch), len(over_torch), geo(over_deep), len(over_deep)))
    for name, _ in alt_libs:
        over_alt = [r["tflops"]["ggemm_bf16"] / r["tflops"]["ggemm_bf16_" + name] for r in results
                    if "failure" not in r and r["tflops"].get("ggemm_bf16_" + name)]
        print("geomean ggemm_bf16/ggemm_bf16_%s %.3f over %d cases (above 1: --lib is faster)"
              % (name, geo(over_alt), len(over_alt)))
    for suffix in ("static", "dynamic"):
        pairs = [(r["tflops"].get("ggemm_bf16_" + suffix), r["tflops"].get("grouped_mm"),
                  r["tflops"].get("ggemm_fp32_" + suffix), r["tflops"].get("deep_gemm"), r["tflops"].get("ggemm_bf16"))
                 for r in results if "failure" not in r]
        if any(p[0] for p in pairs):
            print("the %s scheduler: geomean ggemm/torch (bf16) %.3f, ggemm/DeepGEMM (fp32 accumulate) %.3f, "
                  "over --scheduler's bf16 %.3f" % (
                      suffix, geo([a / b for a, b, _, _, _ in pairs if a and b]),
                      geo([c / d for _, _, c, d, _ in pairs if c and d]),
                      geo([a / e for a, _, _, _, e in pairs if a and e])))
    failed = [r["name"] for r in results if "failure" in r or
              any(error > CHECK_TOLERANCE for error in r["errors"].values())]
    if failed:
        print("FAILED or CHECK above %.0e: %s" % (CHECK_TOLERANCE, ", ".join(failed)))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
