"""Host time per call of the Python bindings on a decode-sized grouped GEMM, next to
torch._grouped_mm on the same problem.

    python bench/python_host_time.py [--calls 20000] [--out host_time.json]

Each call is timed alone (perf_counter_ns around it) in batches of 200 with a synchronize
between batches, so that the launch queue never fills and the number is the caller's own time,
not the GPU's. Reported: median and mean over all calls. Also: a CUDA graph of 16 calls
replayed (host time per captured call) and, when jax is installed with a GPU, a jitted call.
"""
import argparse
import json
import statistics
import sys
import time

import torch

import ggemm.torch as gt
from ggemm import _library as lib

BATCH = 200


def host_times(fn, calls):
    for _ in range(50):
        fn()
    torch.cuda.synchronize()
    samples = []
    clock = time.perf_counter_ns
    while len(samples) < calls:
        for _ in range(BATCH):
            t0 = clock()
            fn()
            samples.append(clock() - t0)
        torch.cuda.synchronize()
    return samples


def summary(name, samples, per=1):
    us = [s / 1000.0 / per for s in samples]
    return {"name": name, "calls": len(samples) * per, "median_us": statistics.median(us),
            "mean_us": statistics.fmean(us)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--m", type=int, default=256)
    parser.add_argument("--n", type=int, default=1024)
    parser.add_argument("--k", type=int, default=512)
    parser.add_argument("--experts", type=int, default=8)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("python_host_time: no CUDA GPU: nothing to measure")
        return 0

    m, n, k, L = args.m, args.n, args.k, args.experts
    dev = "cuda"
    a = torch.randn(m, k, device=dev).to(torch.bfloat16)
    b = (torch.randn(L, n, k, device=dev) * k ** -0.5).to(torch.bfloat16)
    # Decode: the m rows in one 256-row segment of expert 0, the other experts empty.
    offsets = torch.full((L,), m, dtype=torch.int32, device=dev)
    alpha = torch.ones(L, device=dev)
    prob = torch.ones(m, device=dev)
    d = torch.empty(m, n, dtype=torch.bfloat16, device=dev)
    bt = b.transpose(1, 2)

    op = gt.GroupedGemm(sample_a=a, sample_padded_offsets=offsets, sample_alpha=alpha,
                        sample_prob=prob, sample_b=b, sample_d=d).compile()
    desc, _ = lib.desc_for((0, n, k, L, lib.WEIGHTS_DENSE, lib.DTYPE_BF16, lib.DTYPE_BF16,
                            lib.DTYPE_NONE, False, lib.SCHEDULER_STATIC, 0, 0, 0, 0))
    stream = torch.cuda.current_stream().cuda_stream
    # m, a, b, b_ptrs, offsets, alpha, prob, bias, c, d, workspace, workspace bytes,
    # device_status, valid_rows, stream (ggemm._ggemm.Desc.grouped_gemm)
    raw = (m, a.data_ptr(), b.data_ptr(), 0, offsets.data_ptr(), alpha.data_ptr(),
           prob.data_ptr(), 0, 0, d.data_ptr(), 0, 0, 0, 0, stream)

    cases = [
        ("ggemm.torch.grouped_gemm (eager)", lambda: gt.grouped_gemm(a, offsets, alpha, prob, b=b)),
        ("GroupedGemm.execute", lambda: op.execute(a=a, d=d, padded_offsets=offsets, alpha=alpha,
                                                   prob=prob, b=b)),
        ("torch._grouped_mm", lambda: torch._grouped_mm(a, bt, offs=offsets)),
        ("library call alone (ggemm._ggemm)", lambda: desc.grouped_gemm(*raw)),
    ]
    results = [summary(name, host_times(fn, args.calls)) for name, fn in cases]

    # CUDA graph: 16 captured calls, one replay; the host cost of a call is the replay's share.
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(16):
            gt.grouped_gemm(a, offsets, alpha, prob, b=b)
    results.append(summary("grouped_gemm in a CUDA graph (replay / 16)",
                           host_times(graph.replay, max(args.calls // 16, 500)), per=16))

    # GPU time of one call, to tell host-bound from GPU-bound.
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(1000):
        desc.grouped_gemm(*raw)
    end.record()
    torch.cuda.synchronize()
    gpu_us = start.elapsed_time(end)

    try:
        results.extend(jax_cases(args))
    except ImportError as error:
        print(f"(jax: {error})")

    base = next(r for r in results if r["name"] == "torch._grouped_mm")["median_us"]
    print(f"host time per call, M={m} N={n} K={k} L={L}, {args.calls} calls each "
          f"(GPU time of one call: {gpu_us:.2f} us)")
    print(f"{'call':48s} {'median us':>10s} {'mean us':>10s} {'vs _grouped_mm':>15s}")
    for r in results:
        print(f"{r['name']:48s} {r['median_us']:10.2f} {r['mean_us']:10.2f} "
              f"{r['median_us'] - base:+14.2f}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"m": m, "n": n, "k": k, "experts": L, "gpu_us_per_call": gpu_us,
                       "results": results}, f, indent=1)
    return 0


def jax_cases(args):
    import jax
    import jax.numpy as jnp

    import ggemm.jax as gj
    if not jax.devices("cuda"):
        raise ImportError("no CUDA device for jax")
    m, n, k, L = args.m, args.n, args.k, args.experts
    a = jnp.ones((m, k), jnp.bfloat16)
    b = jnp.ones((L, n, k), jnp.bfloat16)
    offsets = jnp.full((L,), m, jnp.int32)
    alpha, prob = jnp.ones((L,), jnp.float32), jnp.ones((m,), jnp.float32)
    step = jax.jit(lambda a, o, al, p, b: gj.grouped_gemm(a, o, al, p, b=b).d)
    plus = jax.jit(lambda a: a + 1)

    def timed(fn):
        out = [fn() for _ in range(50)]
        jax.block_until_ready(out)
        samples, clock = [], time.perf_counter_ns
        while len(samples) < args.calls // 4:
            outs = []
            for _ in range(BATCH):
                t0 = clock()
                outs.append(fn())
                samples.append(clock() - t0)
            jax.block_until_ready(outs)
        return samples

    return [summary("ggemm.jax.grouped_gemm under jax.jit", timed(lambda: step(a, offsets, alpha, prob, b))),
            summary("jax.jit dispatch of a + 1 (for scale)", timed(lambda: plus(a)))]


if __name__ == "__main__":
    sys.exit(main())
