#!/usr/bin/env python3
"""ggemm's dgrad (N-major weights) against its peers on the MoE suite, in one process, on one GPU.

For every case of bench/moe_shapes.json (a forward of M rows, N outputs, K inputs, weights W of
shape (L, N, K)), its input gradient dX = dY @ W_g: M rows, N' = K columns, K' = N. Timed in
interleaved rounds (a random order each round), medians of event-timed runs, inputs rotated
over several sets (bench/peers.py's method and helpers):
  ggemm_nmajor  ggemm with b = W as N-major weights (weight_layout = N_MAJOR), bf16 D,
                alpha = prob = NULL (dX = dY @ W_g, the peers' work)
  ggemm_nmajor_ones  the same with arrays of ones for alpha and prob (the multiplications run)
  ggemm_fwd     ggemm's K-major forward of the same M x N' x K' (weights (L, N', K'), alpha =
                prob = NULL): the kernel the N-major one should match
  deepgemm_nn   DeepGEMM's m_grouped_bf16_gemm_nn_contiguous(dY, W, D, m_indices) (when
                `import deep_gemm` works)
  grouped_mm    torch._grouped_mm(dY, W, offs=padded_offsets, out_dtype=bf16): W (L, N, K) is
                the (L, K', N') operand it takes
  dense         torch.mm(dY, W_0): cuBLAS on the same M x N' x K', one expert's weight
  ggemm_NAME    with --alt-kernel NAME=PREFIX: ggemm_nmajor on the kernel variant whose name
                starts with PREFIX (GGEMM_KERNEL), in the same rounds; with --alt-lib NAME=PATH:
                ggemm_nmajor through another build of libggemm.so
Checked first: ggemm_nmajor against torch._grouped_mm (relative Frobenius error <= 1e-2, output
poisoned first), and bitwise against ggemm_fwd on the transposed weights and ggemm_nmajor_ones.
TFLOP/s = 2*M*N'*K' / median time. Writes backward.json into --out and prints a table.

    python3 bench/backward.py --lib build-gpu/libggemm.so --out out/backward
"""
import argparse
import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import ggemm_ctypes as gg  # noqa: E402
from peers import forced_kernel, load_cases, rel_error, run_meta, short_error, time_ops  # noqa: E402

CHECK_TOLERANCE = 1e-2
MAX_SETS = 16


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--lib", default="build-gpu/libggemm.so", help="path of libggemm.so")
    p.add_argument("--shapes", default=os.path.join(HERE, "moe_shapes.json"))
    p.add_argument("--cases", default="", help="comma-separated case names (default: all)")
    p.add_argument("--rounds", type=int, default=30)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--sets", type=int, default=0, help="input sets to rotate (0: enough to defeat L2)")
    p.add_argument("--lead-cycles", type=int, default=200000)
    p.add_argument("--out", default="out/backward")
    p.add_argument("--alt-kernel", action="append", default=[], metavar="NAME=PREFIX",
                   help="also time ggemm_nmajor on the kernel variant named PREFIX... (repeatable)")
    p.add_argument("--alt-lib", action="append", default=[], metavar="NAME=PATH",
                   help="also time ggemm_nmajor through this build of libggemm.so (repeatable)")
    opts = p.parse_args()

    def named(spec, option, what):
        name, _, value = spec.partition("=")
        if not name or not value:
            p.error("%s %s is not NAME=%s" % (option, spec, what))
        return "ggemm_" + name, value

    # (name, kernel prefix or None, library path or None: --lib's)
    opts.alternatives = ([(name, prefix, None) for name, prefix in
                          (named(spec, "--alt-kernel", "PREFIX") for spec in opts.alt_kernel)] +
                         [(name, None, path) for name, path in
                          (named(spec, "--alt-lib", "PATH") for spec in opts.alt_lib)])
    names = [name for name, _, _ in opts.alternatives]
    if len(set(names)) != len(names):
        p.error("each --alt-kernel and --alt-lib needs a NAME of its own")
    return opts


class DgradData:
    """dY (M, N'), W (L, N, K) = (L, K', N') N-major, its transpose (L, N', K') K-major."""

    def __init__(self, torch, case, sets_wanted):
        dev, bf16 = torch.device("cuda"), torch.bfloat16
        self.name = case["name"]
        self.L = case["experts"]
        self.n, self.k = case["k"], case["n"]  # N' = K, K' = N
        self.offsets_host = list(case["padded_offsets"])
        self.m = self.offsets_host[-1]
        self.flops = 2.0 * self.m * self.n * self.k
        set_bytes = (self.m * self.k + 2 * self.L * self.n * self.k) * 2
        l2 = getattr(torch.cuda.get_device_properties(dev), "L2_cache_size", 50 << 20)
        self.sets = sets_wanted or min(MAX_SETS, max(2, int(3 * l2 / set_bytes) + 1))
        self.offs = torch.tensor(self.offsets_host, dtype=torch.int32, device=dev)
        self.ones_l = torch.ones(self.L, dtype=torch.float32, device=dev)
        self.ones_m = torch.ones(max(self.m, 1), dtype=torch.float32, device=dev)
        self.dy = [torch.empty(self.m, self.k, dtype=bf16, device=dev).uniform_(-1, 1) for _ in range(self.sets)]
        self.w = [torch.empty(self.L, self.k, self.n, dtype=bf16, device=dev).uniform_(-1, 1)
                  for _ in range(self.sets)]  # the forward's (L, out, in): (L, K', N')
        self.w_t = [w.transpose(1, 2).contiguous() for w in self.w]  # (L, N', K'), K-major
        counts = [e - b for b, e in zip([0] + self.offsets_host[:-1], self.offsets_host)]
        self.m_indices = torch.repeat_interleave(
            torch.arange(self.L, dtype=torch.int32, device=dev), torch.tensor(counts, device=dev))
        self.d = {name: torch.empty(self.m, self.n, dtype=bf16, device=dev)
                  for name in ("ggemm_nmajor", "ggemm_nmajor_ones", "ggemm_fwd", "deepgemm_nn", "dense")}
        self.d_alt = torch.empty(self.m, self.n, dtype=bf16, device=dev)  # the --alt-kernel runs'


class GgemmDgrad:
    """One ggemm plan (N-major on W, or K-major on its transpose) with args per input set; alpha
    and prob NULL, or arrays of ones with `ones`."""

    def __init__(self, lib, torch, data, name, n_major, ones, prefix=None, alt=False):
        with forced_kernel(prefix):
            self.plan = lib.plan(lib.plan_desc(
                device=torch.cuda.current_device(), m_capacity=max(data.m, 256), n=data.n, k=data.k,
                num_experts=data.L, weight_mode=gg.WEIGHTS_DENSE, c_dtype=gg.DTYPE_BF16,
                d_dtype=gg.DTYPE_BF16, weight_layout=1 if n_major else 0))
        self.description = self.plan.describe()
        ws = self.plan.workspace_size()
        self.workspace = torch.empty(max(ws, 1), dtype=torch.uint8, device="cuda")
        weights = data.w if n_major else data.w_t
        out = data.d_alt if alt else data.d[name]
        self.args = [lib.args(m=data.m, a=data.dy[s].data_ptr(), b=weights[s].data_ptr(),
                              padded_offsets=data.offs.data_ptr(), alpha=data.ones_l.data_ptr() if ones else None,
                              prob=data.ones_m.data_ptr() if ones else None, d=out.data_ptr(),
                              workspace=self.workspace.data_ptr() if ws else None, workspace_size=ws)
                     for s in range(data.sets)]

    def run(self, s, handle):
        self.plan.execute(self.args[s], handle)


def run_case(torch, lib, alt_libs, deep_gemm, case, opts, stream):
    data = DgradData(torch, case, opts.sets)
    result = {"name": data.name, "L": data.L, "M": data.m, "N": data.n, "K": data.k, "errors": {}}
    handle = stream.cuda_stream
    plans, ops = [], []
    for name, n_major, ones in (("ggemm_nmajor", True, False), ("ggemm_nmajor_ones", True, True),
                                ("ggemm_fwd", False, False)):
        try:
            g = GgemmDgrad(lib, torch, data, name, n_major, ones)
            plans.append(g)
            result.setdefault("plans", {})[name] = g.description
            ops.append((name, lambda s, g=g: g.run(s, handle)))
        except Exception as e:  # noqa: BLE001 - record and go on with the peers
            result["errors"][name] = short_error(e)
    for name, prefix, path in opts.alternatives:
        try:
            g = GgemmDgrad(alt_libs.get(path, lib), torch, data, name, True, False, prefix, alt=True)
            plans.append(g)
            result.setdefault("plans", {})[name] = g.description
            data.d_alt.fill_(float("nan"))
            g.run(0, handle)
            torch.cuda.synchronize()
            ref = torch._grouped_mm(data.dy[0], data.w[0], offs=data.offs, out_dtype=torch.bfloat16)
            result.setdefault("alt_rel_err", {})[name] = rel_error(data.d_alt, ref)
            ops.append((name, lambda s, g=g: g.run(s, handle)))
        except Exception as e:  # noqa: BLE001
            result["errors"][name] = short_error(e)
    peers = [
        ("grouped_mm", lambda s: torch._grouped_mm(data.dy[s], data.w[s], offs=data.offs, out_dtype=torch.bfloat16)),
        ("dense", lambda s: torch.mm(data.dy[s], data.w[s][0], out=data.d["dense"])),
    ]
    if deep_gemm is not None:
        peers.append(("deepgemm_nn", lambda s: deep_gemm.m_grouped_bf16_gemm_nn_contiguous(
            data.dy[s], data.w[s], data.d["deepgemm_nn"], data.m_indices)))
    for name, fn in peers:
        try:
            fn(0)
            torch.cuda.synchronize()
            ops.append((name, fn))
        except Exception as e:  # noqa: BLE001
            result["errors"][name] = short_error(e)

    names = [name for name, _ in ops]
    if "ggemm_nmajor" in names:
        data.d["ggemm_nmajor"].fill_(float("nan"))
        dict(ops)["ggemm_nmajor"](0)
        torch.cuda.synchronize()
        ref = torch._grouped_mm(data.dy[0], data.w[0], offs=data.offs, out_dtype=torch.bfloat16)
        err = rel_error(data.d["ggemm_nmajor"], ref)
        result["check"] = {"rel_err": err, "ok": err <= CHECK_TOLERANCE}
        for other, key in (("ggemm_fwd", "bitwise_equal_to_k_major"), ("ggemm_nmajor_ones", "bitwise_equal_to_ones")):
            if other in names:
                dict(ops)[other](0)
                torch.cuda.synchronize()
                result["check"][key] = bool(torch.equal(
                    data.d["ggemm_nmajor"].view(torch.int16), data.d[other].view(torch.int16)))
    try:
        samples = time_ops(torch, stream, ops, data.sets, opts.rounds, opts.warmup, opts.lead_cycles)
        med = {k: statistics.median(v) for k, v in samples.items()}
        result["median_ms"] = med
        result["tflops"] = {k: data.flops / (ms * 1e-3) * 1e-12 for k, ms in med.items()}
    except Exception as e:  # noqa: BLE001
        result["errors"]["timing"] = short_error(e)
    t = result.get("tflops", {})
    for peer in ("deepgemm_nn", "grouped_mm", "dense", "ggemm_fwd", "ggemm_nmajor_ones") + tuple(
            name for name, _, _ in opts.alternatives):
        if "ggemm_nmajor" in t and peer in t:
            result["ratio_" + peer] = t["ggemm_nmajor"] / t[peer]
    for g in plans:
        g.plan.destroy()
    return result


def fmt(value, spec):
    return "-" if value is None else format(value, spec)


def main():
    opts = parse_args()
    os.makedirs(opts.out, exist_ok=True)
    cases = load_cases(opts.shapes, opts.cases)
    import torch
    try:
        import deep_gemm
    except Exception as e:  # noqa: BLE001 - the peer is optional
        deep_gemm = None
        print("backward.py: DeepGEMM not measured (import deep_gemm: %s)" % short_error(e))
    if not torch.cuda.is_available():
        sys.exit("backward.py: no CUDA device visible to torch")
    lib = gg.Library(os.path.abspath(opts.lib))
    # ctypes loads each build RTLD_LOCAL, so two builds' entry points never mix.
    alt_libs = {path: gg.Library(os.path.abspath(path)) for _, _, path in opts.alternatives if path}
    meta = dict(run_meta(torch, lib), rounds=opts.rounds)
    stream = torch.cuda.Stream()
    results = []
    with torch.cuda.stream(stream):
        for case in cases:
            try:
                results.append(run_case(torch, lib, alt_libs, deep_gemm, case, opts, stream))
            except Exception as e:  # noqa: BLE001 - one case must not stop the others
                results.append({"name": case["name"], "errors": {"case": short_error(e)}})
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
            with open(os.path.join(opts.out, "backward.json"), "w") as f:
                json.dump({"meta": meta, "results": results}, f, indent=1)
    print("dgrad (TFLOP/s; ratios are ggemm N-major over the peer)")
    print("| case | M x N' x K' | ggemm N-major | ggemm K-major fwd | DeepGEMM nn | torch | dense "
          "| / DeepGEMM | / torch | / K-major fwd | / ones | check | = K-major | = ones |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    failures = 0
    for r in results:
        t, check = r.get("tflops", {}), r.get("check", {})
        failures += not check.get("ok", False)
        print("| %s | %s x %s x %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            r["name"], r.get("M"), r.get("N"), r.get("K"), fmt(t.get("ggemm_nmajor"), ".0f"),
            fmt(t.get("ggemm_fwd"), ".0f"), fmt(t.get("deepgemm_nn"), ".0f"), fmt(t.get("grouped_mm"), ".0f"),
            fmt(t.get("dense"), ".0f"), fmt(r.get("ratio_deepgemm_nn"), ".3f"),
            fmt(r.get("ratio_grouped_mm"), ".3f"), fmt(r.get("ratio_ggemm_fwd"), ".3f"),
            fmt(r.get("ratio_ggemm_nmajor_ones"), ".3f"), fmt(check.get("rel_err"), ".1e"),
            check.get("bitwise_equal_to_k_major", "-"), check.get("bitwise_equal_to_ones", "-")))
        for name, _, _ in opts.alternatives:
            if name in t:
                print("%s on %s: %.0f TFLOP/s, ggemm N-major / it %.3f, it / DeepGEMM nn %s, rel err %s" % (
                    name, r["name"], t[name], r.get("ratio_" + name, float("nan")),
                    fmt(t[name] / t["deepgemm_nn"] if "deepgemm_nn" in t else None, ".3f"),
                    fmt(r.get("alt_rel_err", {}).get(name), ".1e")))
        for name, error in r.get("errors", {}).items():
            print("  %s: %s: %s" % (r["name"], name, error))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
