#!/usr/bin/env python3
"""Short table of a ggemm_bench --benchmark_out JSON file (for scripts/gpu_run.sh).

usage: summarize_bench.py bench.json            a table, one line per benchmark
       summarize_bench.py bench.json --oneline  one line of key numbers
"""
import json
import math
import sys


def to_us(value, unit):
    return value * {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}.get(unit, 1.0)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    with open(sys.argv[1]) as f:
        doc = json.load(f)
    rows = [b for b in doc.get("benchmarks", []) if b.get("run_type", "iteration") == "iteration"]
    errors = [b for b in rows if b.get("error_occurred")]
    suite = [b["TFLOP/s"] for b in rows if b["name"].startswith("suite/") and "TFLOP/s" in b]
    host = [to_us(b["cpu_time"], b.get("time_unit", "ns")) for b in rows
            if b["name"].startswith("host/execute/") and not b.get("error_occurred")]

    if "--oneline" in sys.argv:
        parts = ["%d benchmarks, %d errors" % (len(rows), len(errors))]
        if suite:
            parts.append("suite geomean %.0f TFLOP/s" % math.exp(sum(map(math.log, suite)) / len(suite)))
        if host:
            parts.append("execute host %.2f-%.2f us" % (min(host), max(host)))
        print("; ".join(parts))
        return 0

    print("%-44s %9s %9s %11s %10s" % ("benchmark", "TFLOP/s", "GB/s", "median_us", "cpu_us"))
    for b in rows:
        name = b["name"].replace("/manual_time", "")
        if b.get("error_occurred"):
            print("%-44s ERROR %s" % (name, b.get("error_message", "")[:200]))
            continue
        unit = b.get("time_unit", "ns")
        tflops = "%9.0f" % b["TFLOP/s"] if "TFLOP/s" in b else "%9s" % "-"
        gbs = "%9.0f" % b["GB/s"] if "GB/s" in b else "%9s" % "-"
        median = "%11.1f" % b["median_us"] if "median_us" in b else "%11s" % "-"
        print("%-44s %s %s %s %10.2f" % (name, tflops, gbs, median, to_us(b["cpu_time"], unit)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
