#!/usr/bin/env python3
"""Where a kernel's warps were sampled waiting, from Nsight Compute's per-instruction samples.

    ncu -i rep.ncu-rep --page source --csv --print-source sass > samples.csv
    python3 bench/ncu_samples.py samples.csv            # or the same file compressed, .csv.xz

For each kernel of the report, in the report's order: the warp samples by stall reason over the
whole kernel, then the instructions that drew the most samples, each with its index in the
kernel's SASS, its warp-level executions and its three largest stall reasons. The instruction a
warp waits at tells what it waits for: the branch after an mbarrier try-wait (SYNCS.PHASECHK)
waits for that barrier's phase, WARPGROUP.DEPBAR for a wgmma batch.

With --runs, also the samples of each run of consecutive instructions executed equally often
(straight-line code: a loop's body, a prologue), which places a kernel's time in its parts.
"""
import argparse
import collections
import csv
import io
import lzma


def read_kernels(path):
    """[(kernel name, column names, rows)] from the CSV of `ncu --page source --csv`."""
    opener = lzma.open if path.endswith(".xz") else open
    with opener(path, "rt", newline="") as f:
        text = f.read()
    kernels = []
    for row in csv.reader(io.StringIO(text)):
        if not row:
            continue
        if row[0] == "Kernel Name":
            kernels.append([row[1], None, []])
        elif kernels and row[0] == "Address":
            kernels[-1][1] = row
        elif kernels and kernels[-1][1] is not None:
            kernels[-1][2].append(row)
    return kernels


def as_int(text):
    return int(text) if text and text.strip() else 0


def print_runs(header, rows, least):
    """Samples per run of consecutive instructions with the same execution count."""
    col = {c: i for i, c in enumerate(header)}
    runs = []  # [first index, last index, executions, samples]
    for i, r in enumerate(rows):
        executed = r[col["Instructions Executed"]]
        samples = as_int(r[col["# Samples"]])
        if runs and runs[-1][2] == executed:
            runs[-1][1] = i
            runs[-1][3] += samples
        else:
            runs.append([i, i, executed, samples])
    print("  %11s %10s %7s  first instruction" % ("indices", "executed", "samples"))
    for first, last, executed, samples in runs:
        if samples >= least:
            print("  %5d-%5d %10s %7d  %s" % (first, last, executed, samples, rows[first][col["Source"]].strip()[:50]))


def summarize(name, header, rows, top):
    col = {c: i for i, c in enumerate(header)}
    reasons = [c for c in header if c.startswith("stall_") and "Not Issued" not in c]
    totals = collections.Counter()
    samples = 0
    for r in rows:
        samples += as_int(r[col["# Samples"]])
        for c in reasons:
            totals[c] += as_int(r[col[c]])
    print("%s\n  %d instructions, %d warp samples" % (name, len(rows), samples))
    for reason, count in totals.most_common():
        if count:
            print("  %-26s %7d  %5.1f %%" % (reason, count, 100.0 * count / max(samples, 1)))
    ranked = sorted(range(len(rows)), key=lambda i: -as_int(rows[i][col["# Samples"]]))[:top]
    print("  %5s  %-56s %7s %10s" % ("index", "instruction", "samples", "executed"))
    for i in ranked:
        r = rows[i]
        largest = sorted(((as_int(r[col[c]]), c) for c in reasons), reverse=True)[:3]
        print("  %5d  %-56s %7d %10s  %s" % (
            i, r[col["Source"]].strip()[:56], as_int(r[col["# Samples"]]), r[col["Instructions Executed"]],
            " ".join("%s:%d" % (c[len("stall_"):], n) for n, c in largest if n)))
    print()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("csv", help="output of ncu --page source --csv --print-source sass (.csv or .csv.xz)")
    p.add_argument("--top", type=int, default=15, help="instructions listed per kernel")
    p.add_argument("--runs", type=int, metavar="LEAST", default=0,
                   help="also list runs of equally executed instructions that drew at least LEAST samples")
    opts = p.parse_args()
    for name, header, rows in read_kernels(opts.csv):
        if header is not None:
            summarize(name, header, rows, opts.top)
            if opts.runs > 0:
                print_runs(header, rows, opts.runs)
                print()


if __name__ == "__main__":
    main()
