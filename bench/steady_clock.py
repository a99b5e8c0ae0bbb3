#!/usr/bin/env python3
"""ggemm and its peers back to back, one op at a time, while nvidia-smi samples the SM clock.

peers.py times single runs after a short GPU sleep, which is how a grouped GEMM runs inside an
MoE layer. A GEMM run back to back for seconds instead settles where the power cap puts the
clock, and then what a kernel spends per FLOP in energy (data movement above all) shows up as a
lower clock. For every case this runs each op for --seconds (after a ramp) on rotating input
sets and reports TFLOP/s, the mean SM clock and power over that window, and TFLOP/s per GHz.

usage: bench/steady_clock.py --lib build-gpu/libggemm.so [--alt-lib NAME=PATH] [--cases a,b]
"""
import argparse
import datetime
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import ggemm_ctypes as gg  # noqa: E402
import peers  # noqa: E402


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--lib", default="build-gpu/libggemm.so")
    p.add_argument("--alt-lib", action="append", default=[], metavar="NAME=PATH")
    p.add_argument("--shapes", default=os.path.join(HERE, "moe_shapes.json"))
    p.add_argument("--cases", default="dsv3_fc1_L8,qwen3_fc2_L128,gptoss_fc1_L32")
    p.add_argument("--seconds", type=float, default=1.5, help="measured window per op")
    p.add_argument("--ramp", type=float, default=0.3, help="untimed back-to-back runs first")
    p.add_argument("--out", default="out/steady")
    return p.parse_args()


def run_back_to_back(torch, stream, fn, seconds):
    """Runs fn(set) until `seconds` have passed; returns (runs, GPU ms, host start, host end)."""
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    t0 = time.time()
    start.record(stream)
    runs = 0
    while time.time() - t0 < seconds:
        fn(runs % 2)
        runs += 1
        if runs % 16 == 0:  # keep the queue short, so the window ends near `seconds`
            stream.synchronize()
    stop.record(stream)
    torch.cuda.synchronize()
    return runs, start.elapsed_time(stop), t0, time.time()


def read_samples(path):
    rows = []
    with open(path) as f:
        for line in f:
            parts = [p.strip() for p in line.split(",")]
            try:  # nvidia-smi prints local time, as datetime.timestamp() reads it
                t = datetime.datetime.strptime(parts[0], "%Y/%m/%d %H:%M:%S.%f").timestamp()
                rows.append((t, float(parts[1]), float(parts[2])))
            except (ValueError, IndexError):
                pass
    return rows


def main():
    opts = parse_args()
    os.makedirs(opts.out, exist_ok=True)
    import torch
    libs = [("ggemm", gg.Library(os.path.abspath(opts.lib)))]
    for spec in opts.alt_lib:
        name, _, path = spec.partition("=")
        libs.append(("ggemm_" + name, gg.Library(os.path.abspath(path))))
    samples_path = os.path.join(opts.out, "smi.csv")
    smi = subprocess.Popen(["nvidia-smi", "--query-gpu=timestamp,clocks.sm,power.draw",
                            "--format=csv,noheader,nounits", "-lms", "50"], stdout=open(samples_path, "w"))
    windows = []
    stream = torch.cuda.Stream()
    try:
        with torch.cuda.stream(stream):
            for case in peers.load_cases(opts.shapes, opts.cases):
                data = peers.CaseData(torch, case, 2, False)
                handle = stream.cuda_stream
                ops = []
                for name, lib in libs:
                    g = peers.GgemmCase(lib, torch, data, gg.SCHEDULERS["static"], full=False)
                    if not peers.check_plain(torch, data, g, handle)["ok"]:
                        sys.exit("steady_clock.py: %s fails its check on %s" % (name, case["name"]))
                    ops.append((name, lambda s, g=g: g.run(g.args[s], handle)))
                bt = [b.transpose(-2, -1) for b in data.b]
                ops.append(("grouped_mm", lambda s: torch._grouped_mm(
                    data.a[s], bt[s], offs=data.offs, out_dtype=torch.bfloat16)))
                ops.append(("dense", lambda s: torch.mm(data.a[s], data.b[s][0].t(), out=data.d_dense)))
                for name, fn in ops:
                    time.sleep(0.4)  # every op starts from the same idle GPU
                    run_back_to_back(torch, stream, fn, opts.ramp)
                    runs, ms, t0, t1 = run_back_to_back(torch, stream, fn, opts.seconds)
                    windows.append({"case": case["name"], "op": name, "runs": runs, "t0": t0, "t1": t1,
                                    "tflops": data.flops * runs / (ms * 1e-3) * 1e-12})
                del ops, data
                torch.cuda.empty_cache()
    finally:
        time.sleep(0.2)
        smi.terminate()
        smi.wait()
    rows = read_samples(samples_path)
    print("%-16s %-14s %8s %10s %8s %14s" % ("case", "op", "TFLOP/s", "clock MHz", "power W", "TFLOP/s / GHz"))
    for w in windows:
        inside = [r for r in rows if w["t0"] + 0.2 <= r[0] <= w["t1"]]  # the clock settles first
        if inside:
            w["clock_mhz"] = sum(r[1] for r in inside) / len(inside)
            w["power_w"] = sum(r[2] for r in inside) / len(inside)
            w["tflops_per_ghz"] = w["tflops"] / (w["clock_mhz"] / 1000)
        w["samples"] = len(inside)
        print("%-16s %-14s %8.0f %10s %8s %14s" % (
            w["case"], w["op"], w["tflops"], peers.fmt(w.get("clock_mhz"), ".0f"),
            peers.fmt(w.get("power_w"), ".0f"), peers.fmt(w.get("tflops_per_ghz"), ".0f")))
    with open(os.path.join(opts.out, "steady.json"), "w") as f:
        json.dump({"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                   "commit": os.environ.get("GGEMM_COMMIT", "unknown"),
                   "command": " ".join(["python3"] + sys.argv), "windows": windows}, f, indent=1)


if __name__ == "__main__":
    main()
