#!/usr/bin/env python3
"""ggemm against its peers on the MoE suite, in one process, on one GPU.

For every case of bench/moe_shapes.json:
  1. check: ggemm (prob = 1, alpha = 1) against torch._grouped_mm; relative Frobenius error of
     the bf16 outputs must be <= 1e-2 (output poisoned with NaN first, so unwritten rows fail);
  2. time, in interleaved rounds (a random order each round), medians of event-timed runs
     after warm-up, inputs rotated over several sets so the L2 cannot serve a run:
       ggemm       dense weights, bf16 D, no bias, random prob and alpha
       ggemm_unscaled  (--unscaled) the same with alpha = prob = NULL: D = A B_g^T, the peers' work
       ggemm_null_alpha, ggemm_null_prob  (--alt-null alpha, --alt-null prob) one of them NULL
       ggemm_dynamic  (--also-dynamic) tiles claimed from a counter (the dynamic scheduler)
       grouped_mm  torch._grouped_mm(A, B.transpose(-2, -1), offs=padded_offsets, out_dtype=bf16)
                   with B an (L, N, K) contiguous bf16 tensor
       dense       torch.mm(A, W.t()) with W an (N, K) contiguous bf16 weight: cuBLAS on the
                   same M x N x K, our layout
       ggemm_full  (--full-epilogue, dsv3_fc1_L8 only) bf16 bias, prob, fp32 C and bf16 D
TFLOP/s = 2*M*N*K / median time, M = padded_offsets[-1] (padding rows count, as the suite says).

--valid-rows (cases with "rows", e.g. bench/small_shapes.json) adds, on the same inputs:
       ggemm_rows       ggemm with args.valid_rows = the case's rows: only real rows computed
       ggemm_NAME_rows  each --alt-lib build and --alt-kernel with the same counts
       deepgemm_masked  (when `import deep_gemm` works and every segment has one size, the
                        capacity) deep_gemm.m_grouped_bf16_gemm_nt_masked on A viewed as
                        (L, capacity, K), masked_m = the rows, expected_m = their mean
ggemm_rows is checked on its real rows against torch._grouped_mm, and rows past the counts
must keep their NaN poison; the notes give deepgemm_masked time / ggemm_rows time (> 1: ggemm
faster on the same useful work).

Writes peers.json (rewritten after every case, so a crash or timeout keeps what was measured),
peers.md and peers.png into --out, and prints the table last.
"""
import argparse
import contextlib
import dataclasses
import datetime
import json
import math
import os
import random
import statistics
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import ggemm_ctypes as gg  # noqa: E402

CHECK_TOLERANCE = 1e-2        # bf16 outputs: relative Frobenius error
ORDER_SEED = 2026             # the rounds' op orders: random, the same in every run
C_FP32_TOLERANCE = 1e-4       # fp32 C against an fp32 reference: only summation order differs
EPILOGUE_CASE = "dsv3_fc1_L8"
PEERS = ("ggemm", "grouped_mm", "dense")
# DeepGEMM's m_grouped_bf16_gemm_nt_contiguous, timed beside the others when `import deep_gemm`
# works (an optional peer: nothing here needs it).
deep_gemm = None
MAX_SETS = 32
L2_MULTIPLE = 3.0             # L2 capacities of other data between two runs over one set


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--lib", default="build-gpu/libggemm.so", help="path of libggemm.so")
    p.add_argument("--shapes", default=os.path.join(HERE, "moe_shapes.json"))
    p.add_argument("--cases", default="", help="comma-separated case names (default: all)")
    p.add_argument("--rounds", type=int, default=30, help="timed rounds (>= 20 for a report)")
    p.add_argument("--warmup", type=int, default=3, help="untimed rounds first")
    p.add_argument("--out", default="out/peers", help="output folder")
    p.add_argument("--scheduler", choices=sorted(gg.SCHEDULERS), default="static")
    p.add_argument("--tile-n", type=int, default=0, help="tile width override (0: the plan chooses)")
    p.add_argument("--cluster-m", type=int, default=0, help="cluster override (0: the plan chooses)")
    p.add_argument("--alt", action="append", default=[], metavar="TILE_NxCLUSTER_M[xSM_MARGIN]",
                   help="also time ggemm with these overrides in the same rounds, e.g. 0x2 for the best "
                        "SM90 cluster of two (static scheduler) at the plan's width, 0x2x4 for the same on a "
                        "grid 4 SMs smaller (repeatable; reported as ggemm_0x2 beside the plan's choice)")
    p.add_argument("--alt-lib", action="append", default=[], metavar="NAME=PATH",
                   help="also time another build of libggemm.so (the plan's choice) in the same "
                        "rounds, e.g. a branch: reported as ggemm_NAME (repeatable)")
    p.add_argument("--alt-kernel", action="append", default=[], metavar="NAME=PREFIX[:SM_MARGIN][@PATH]",
                   help="also time ggemm with its plans restricted to the kernel variants whose name starts "
                        "with PREFIX (the library's GGEMM_KERNEL), e.g. warp=sm90_tma_wgmma_ for the math "
                        "warps' stores, or a whole variant name, e.g. c2=sm90_tmastore_halves_128x256x64_s4_c2 "
                        "for one cluster-of-two kernel (static scheduler); with :SM_MARGIN on a grid that many "
                        "SMs smaller; with @PATH from that build of libggemm.so instead of --lib: reported as "
                        "ggemm_NAME (repeatable)")
    p.add_argument("--alt-split", action="append", default=[], type=int, metavar="SPLIT_K",
                   help="also time ggemm with desc.split_k = SPLIT_K (1: never split K; 2..8: split K that "
                        "many ways on calls of up to 1024 rows): reported as ggemm_splitSPLIT_K (repeatable)")
    p.add_argument("--alt-margin", action="append", default=[], type=int, metavar="SM_MARGIN",
                   help="also time ggemm with desc.sm_margin = SM_MARGIN (a persistent grid that many SMs "
                        "smaller, planned for it): reported as ggemm_marginSM_MARGIN (repeatable)")
    p.add_argument("--also-dynamic", action="store_true",
                   help="also time ggemm with the dynamic scheduler (tiles claimed from a counter in the "
                        "workspace, reset in-stream by each call): reported as ggemm_dynamic")
    p.add_argument("--unscaled", action="store_true",
                   help="also time ggemm with alpha = prob = NULL (D = A B_g^T, the work the peers do): "
                        "reported as ggemm_unscaled")
    p.add_argument("--alt-null", action="append", default=[], choices=("alpha", "prob"),
                   help="also time ggemm with only alpha (or only prob) NULL: reported as ggemm_null_alpha "
                        "(ggemm_null_prob) (repeatable)")
    p.add_argument("--full-epilogue", action="store_true",
                   help="also time the full epilogue on %s and report its overhead" % EPILOGUE_CASE)
    p.add_argument("--sets", type=int, default=0, help="input sets to rotate (0: enough to defeat L2)")
    p.add_argument("--lead-cycles", type=int, default=200000,
                   help="GPU sleep queued before each timed op, so the host's launch cost is hidden")
    p.add_argument("--valid-rows", action="store_true",
                   help="also time ggemm with per-expert valid-row counts (the case's rows), each "
                        "--alt-lib build and --alt-kernel with them too (ggemm_NAME_rows), and DeepGEMM's "
                        "masked kernel on the same useful work")
    p.add_argument("--no-plot", action="store_true")
    return p.parse_args()


def load_cases(path, names):
    with open(path) as f:
        cases = json.load(f)["cases"]
    if names:
        wanted = [n.strip() for n in names.split(",") if n.strip()]
        unknown = sorted(set(wanted) - {c["name"] for c in cases})
        if unknown:
            sys.exit("peers.py: unknown case(s) %s; the suite has %s"
                     % (", ".join(unknown), ", ".join(c["name"] for c in cases)))
        cases = [c for c in cases if c["name"] in wanted]
    return cases


def rel_error(out, ref):
    """||out - ref|| / ||ref|| (NaN when out holds NaN: never passes). fp32 keeps the temporaries
    small; torch's tree reduction keeps the norm accurate far below the 1e-2 tolerance."""
    ref = ref.float()
    diff = (out.float() - ref).norm().item()
    return diff / max(ref.norm().item(), 1e-30)


class CaseData:
    """Inputs of one case on the GPU: `sets` copies of A, B, prob; shared offsets and alpha."""

    def __init__(self, torch, case, sets_wanted, full_epilogue):
        dev = torch.device("cuda")
        bf16 = torch.bfloat16
        self.name = case["name"]
        self.L, self.n, self.k = case["experts"], case["n"], case["k"]
        self.offsets_host = list(case["padded_offsets"])
        self.rows = list(case["rows"]) if "rows" in case else None
        self.m = self.offsets_host[-1]
        self.flops = 2.0 * self.m * self.n * self.k
        set_bytes = self.m * self.k * 2 + self.L * self.n * self.k * 2 + self.m * 4
        if sets_wanted > 0:
            sets = sets_wanted
        else:
            l2 = getattr(torch.cuda.get_device_properties(dev), "L2_cache_size", 50 << 20)
            sets = min(MAX_SETS, max(2, int(L2_MULTIPLE * l2 / set_bytes) + 1))
        self.sets = sets
        self.offs = torch.tensor(self.offsets_host, dtype=torch.int32, device=dev)
        self.alpha = torch.empty(self.L, dtype=torch.float32, device=dev).uniform_(0.5, 1.5)
        self.alpha_one = torch.ones(self.L, dtype=torch.float32, device=dev)
        self.prob_one = torch.ones(max(self.m, 1), dtype=torch.float32, device=dev)
        # Uniform [-1, 1) generated on the device; every set different, never zeros.
        self.a = [torch.empty(self.m, self.k, dtype=bf16, device=dev).uniform_(-1, 1) for _ in range(sets)]
        self.b = [torch.empty(self.L, self.n, self.k, dtype=bf16, device=dev).uniform_(-1, 1)
                  for _ in range(sets)]
        self.prob = [torch.empty(max(self.m, 1), dtype=torch.float32, device=dev).uniform_(0, 1)
                     for _ in range(sets)]
        self.d = torch.empty(self.m, self.n, dtype=bf16, device=dev)
        # DeepGEMM's contiguous layout: each row's expert (every row of these cases has one).
        counts = [e - b for b, e in zip([0] + self.offsets_host[:-1], self.offsets_host)]
        self.m_indices = torch.repeat_interleave(
            torch.arange(self.L, dtype=torch.int32, device=dev), torch.tensor(counts, device=dev))
        self.d_deepgemm = torch.empty(self.m, self.n, dtype=bf16, device=dev)
        self.d_dense = torch.empty(self.m, self.n, dtype=bf16, device=dev)
        self.status = torch.zeros(1, dtype=torch.int32, device=dev)
        if self.rows is not None:
            self.valid_rows = torch.tensor(self.rows, dtype=torch.int32, device=dev)
            sizes = set(counts)
            # The masked layout of DeepGEMM: one capacity per expert.
            self.capacity = counts[0] if len(sizes) == 1 else None
            self.d_masked = torch.empty(self.m, self.n, dtype=bf16, device=dev)
        self.full = full_epilogue
        if full_epilogue:
            self.bias = [torch.empty(self.L, self.n, dtype=bf16, device=dev).uniform_(-1, 1) for _ in range(sets)]
            self.c_full = torch.empty(self.m, self.n, dtype=torch.float32, device=dev)
            self.d_full = torch.empty(self.m, self.n, dtype=bf16, device=dev)


@dataclasses.dataclass(frozen=True)
class Alternative:
    """A further ggemm run timed in the same rounds: its report name, its build of the library, and
    what its plan overrides (the plan's own choice where 0, None or empty)."""
    name: str
    lib: object
    tile_n: int = 0
    cluster_m: int = 0
    kernel: str = None  # kernel-variant name prefix (forced_kernel)
    split_k: int = 0
    sm_margin: int = 0
    nulls: tuple = ()  # the pointers passed as NULL
    scheduler: str = None  # a name of gg.SCHEDULERS (None: --scheduler's)


class GgemmCase:
    """A ggemm plan over CaseData with one ggemm_args per input set."""

    def __init__(self, lib, torch, data, scheduler, full, tile_n=0, cluster_m=0, split_k=0, valid_rows=None,
                 nulls=(), sm_margin=0):
        self.plan = lib.plan(lib.plan_desc(tile_n=tile_n, cluster_m=cluster_m, split_k=split_k, sm_margin=sm_margin,
            device=torch.cuda.current_device(), m_capacity=max(data.m, 256), n=data.n, k=data.k,
            num_experts=data.L, weight_mode=gg.WEIGHTS_DENSE,
            c_dtype=gg.DTYPE_FP32 if full else gg.DTYPE_BF16, d_dtype=gg.DTYPE_BF16,
            bias_dtype=gg.DTYPE_BF16 if full else gg.DTYPE_NONE, generate_c=1 if full else 0,
            scheduler=scheduler))
        self.description = self.plan.describe()
        ws_bytes = self.plan.workspace_size()
        self.workspace = torch.empty(max(ws_bytes, 1), dtype=torch.uint8, device="cuda")
        self.lib = lib

        def make_args(s, alpha, prob):
            return lib.args(
                m=data.m, a=data.a[s].data_ptr(), b=data.b[s].data_ptr(),
                padded_offsets=data.offs.data_ptr(), alpha=None if "alpha" in nulls else alpha.data_ptr(),
                prob=None if "prob" in nulls else prob.data_ptr(),
                bias=data.bias[s].data_ptr() if full else None,
                c=data.c_full.data_ptr() if full else None,
                d=(data.d_full if full else data.d).data_ptr(),
                workspace=self.workspace.data_ptr() if ws_bytes else None, workspace_size=ws_bytes,
                device_status=data.status.data_ptr(),
                valid_rows=valid_rows.data_ptr() if valid_rows is not None else None)

        self.args = [make_args(s, data.alpha, data.prob[s]) for s in range(data.sets)]
        self.check_args = make_args(0, data.alpha_one, data.prob_one)

    def run(self, args, stream_handle):
        status = self.plan.execute_status(args, stream_handle)
        if status != gg.SUCCESS:
            raise gg.GgemmError(status, "ggemm_execute: " + self.lib.error_text(status))


def device_status_error(data):
    value = int(data.status.item()) & 0xFFFFFFFF
    return None if value == 0 else "kernel reported device_status 0x%x on valid offsets" % value


def check_plain(torch, data, gcase, stream_handle):
    """ggemm (prob = alpha = 1) against torch._grouped_mm; falls back to per-expert torch.mm."""
    data.d.fill_(float("nan"))
    gcase.run(gcase.check_args, stream_handle)
    ref_name = "torch._grouped_mm"
    try:
        ref = torch._grouped_mm(data.a[0], data.b[0].transpose(-2, -1), offs=data.offs, out_dtype=torch.bfloat16)
    except Exception as e:  # noqa: BLE001 - any failure of the peer: use the plain reference
        ref_name = "per-expert torch.mm (grouped_mm failed: %s)" % str(e).splitlines()[0][:120]
        ref = torch.empty_like(data.d)
        begin = 0
        for g, end in enumerate(data.offsets_host):
            if end > begin:
                torch.mm(data.a[0][begin:end], data.b[0][g].t(), out=ref[begin:end])
            begin = end
    torch.cuda.synchronize()
    err = rel_error(data.d, ref)
    status = device_status_error(data)
    return {"reference": ref_name, "rel_err": err, "ok": bool(err <= CHECK_TOLERANCE) and status is None,
            "device_status": status}


def row_mask(torch, data):
    """True for the rows below each expert's count."""
    mask = torch.zeros(data.m, dtype=torch.bool, device="cuda")
    begin = 0
    for end, rows in zip(data.offsets_host, data.rows):
        mask[begin:begin + max(0, min(rows, end - begin))] = True
        begin = end
    return mask


def check_rows(torch, data, gcase, stream_handle):
    """ggemm with valid-row counts (prob = alpha = 1): the counted rows against
    torch._grouped_mm, every other row still NaN."""
    data.d.fill_(float("nan"))
    gcase.run(gcase.check_args, stream_handle)
    ref = torch._grouped_mm(data.a[0], data.b[0].transpose(-2, -1), offs=data.offs, out_dtype=torch.bfloat16)
    torch.cuda.synchronize()
    mask = row_mask(torch, data)
    err = rel_error(data.d[mask], ref[mask])
    untouched = bool(torch.isnan(data.d[~mask].float()).all())
    status = device_status_error(data)
    return {"reference": "torch._grouped_mm on the counted rows", "rel_err": err,
            "rows_past_counts_untouched": untouched,
            "ok": bool(err <= CHECK_TOLERANCE) and untouched and status is None, "device_status": status}


def check_full(torch, data, gcase, stream_handle):
    """Full epilogue on set 0 against an fp32 reference: v = acc*alpha[g] + prob[r]*bias[g]."""
    data.d_full.fill_(float("nan"))
    data.c_full.fill_(float("nan"))
    gcase.run(gcase.args[0], stream_handle)
    torch.backends.cuda.matmul.allow_tf32 = False
    ref = torch.empty(data.m, data.n, dtype=torch.float32, device="cuda")
    begin = 0
    for g, end in enumerate(data.offsets_host):
        if end > begin:
            acc = data.a[0][begin:end].float() @ data.b[0][g].float().t()
            ref[begin:end] = acc * data.alpha[g] + data.prob[0][begin:end, None] * data.bias[0][g].float()[None, :]
        begin = end
    torch.cuda.synchronize()
    c_err = rel_error(data.c_full, ref)
    d_err = rel_error(data.d_full, ref)
    status = device_status_error(data)
    return {"reference": "fp32 per-expert matmul", "c_rel_err": c_err, "d_rel_err": d_err,
            "ok": bool(c_err <= C_FP32_TOLERANCE and d_err <= CHECK_TOLERANCE) and status is None,
            "device_status": status}


def time_ops(torch, stream, ops, sets, rounds, warmup, lead_cycles):
    """Interleaved rounds; returns {name: [ms, ...]} over the timed rounds.

    Every op of a round runs on the next input set in a global rotation, so two consecutive ops
    never share inputs, and each round runs the ops in a fresh random order (fixed seed), so no op
    always follows the same one (the ggemm runs write one D; on decode sizes, where D fits in L2,
    a plan that always followed another ggemm run read up to 11 % faster than the same plan
    timed first). A GPU sleep queued before each start event keeps the host's launch cost out of
    the interval.
    """
    names = [name for name, _ in ops]
    events = {name: (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for name in names}
    samples = {name: [] for name in names}
    sleep = getattr(torch.cuda, "_sleep", None) if lead_cycles > 0 else None
    counter = 0
    order = random.Random(ORDER_SEED)
    for r in range(warmup + rounds):
        for name, fn in order.sample(ops, len(ops)):
            s = counter % sets
            counter += 1
            if sleep:
                sleep(lead_cycles)
            start, stop = events[name]
            start.record(stream)
            fn(s)
            stop.record(stream)
        stream.synchronize()
        if r >= warmup:
            for name in names:
                start, stop = events[name]
                samples[name].append(start.elapsed_time(stop))
    return samples


def run_meta(torch, lib):
    """What every report of a run records: when, on which device and software, which library, the command."""
    props = torch.cuda.get_device_properties(0)
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "device": props.name, "sm_count": props.multi_processor_count,
        "torch": torch.__version__, "torch_cuda": torch.version.cuda,
        "ggemm_version": lib.version, "lib": lib.path,
        "commit": os.environ.get("GGEMM_COMMIT", "unknown"),
        "command": " ".join([os.path.basename(sys.executable)] + sys.argv),
    }


def short_error(e):
    text = str(e).strip().splitlines()
    return "%s: %s" % (type(e).__name__, text[0][:300] if text else "")


def run_case(torch, lib, case, opts, stream):
    result = {"name": case["name"], "L": case["experts"], "N": case["n"], "K": case["k"], "errors": {}}
    data = CaseData(torch, case, opts.sets, opts.full_epilogue and case["name"] == EPILOGUE_CASE)
    result.update(M=data.m, flops=data.flops, sets=data.sets)
    plans = []
    try:
        check_and_time(torch, lib, data, opts, stream, result, plans)
    finally:
        for gcase in plans:
            gcase.plan.destroy()
    return result


def kernel_of(description):
    """The kernel variant a plan description names ("kernel: NAME: ..."), or "?"."""
    at = description.find("kernel: ")
    if at < 0:
        return "?"
    return description[at + 8:description.find(":", at + 8)]


@contextlib.contextmanager
def forced_kernel(prefix):
    """Plans created inside choose only kernel variants whose name starts with prefix (None: any).
    The library reads GGEMM_KERNEL when a plan is created, never when it runs."""
    if prefix is None:
        yield
        return
    os.environ["GGEMM_KERNEL"] = prefix
    try:
        yield
    finally:
        del os.environ["GGEMM_KERNEL"]


def check_and_time(torch, lib, data, opts, stream, result, plans):
    """Fills `result`; each failure is recorded under result["errors"] and the rest goes on."""
    handle = stream.cuda_stream
    scheduler = gg.SCHEDULERS[opts.scheduler]
    ops = []

    try:
        plain = GgemmCase(lib, torch, data, scheduler, full=False, tile_n=opts.tile_n, cluster_m=opts.cluster_m)
        plans.append(plain)
        result["plan"] = plain.description
        result["check"] = check_plain(torch, data, plain, handle)
        ops.append(("ggemm", lambda s: plain.run(plain.args[s], handle)))
    except Exception as e:  # noqa: BLE001 - record and go on with the peers
        result["errors"]["ggemm"] = short_error(e)
    if data.full:
        try:
            full = GgemmCase(lib, torch, data, scheduler, full=True, tile_n=opts.tile_n, cluster_m=opts.cluster_m)
            plans.append(full)
            result["full_plan"] = full.description
            result["full_check"] = check_full(torch, data, full, handle)
            ops.append(("ggemm_full", lambda s: full.run(full.args[s], handle)))
        except Exception as e:  # noqa: BLE001
            result["errors"]["ggemm_full"] = short_error(e)

    def add_alternative(name, make_case, check):
        """Plans a further ggemm run (make_case()), checks it and times it as `name`."""
        try:
            gcase = make_case()
            plans.append(gcase)
            result.setdefault("alt_checks", {})[name] = check(torch, data, gcase, handle)
            result.setdefault("alt_plans", {})[name] = gcase.description
            ops.append((name, lambda s, g=gcase: g.run(g.args[s], handle)))
        except Exception as e:  # noqa: BLE001
            result["errors"][name] = short_error(e)

    def make_alt(alt, valid_rows=None):
        with forced_kernel(alt.kernel):
            alt_scheduler = scheduler if alt.scheduler is None else gg.SCHEDULERS[alt.scheduler]
            return GgemmCase(alt.lib, torch, data, alt_scheduler, full=False, tile_n=alt.tile_n,
                             cluster_m=alt.cluster_m, split_k=alt.split_k, nulls=alt.nulls,
                             sm_margin=alt.sm_margin, valid_rows=valid_rows)

    for alt in opts.alternatives:
        add_alternative(alt.name, lambda alt=alt: make_alt(alt), check_plain)

    if opts.valid_rows and data.rows is not None:
        add_alternative("ggemm_rows", lambda: GgemmCase(lib, torch, data, scheduler, full=False, tile_n=opts.tile_n,
                                                        cluster_m=opts.cluster_m, valid_rows=data.valid_rows),
                        check_rows)
        # Each other build (--alt-lib) and forced kernel (--alt-kernel) with the same counts.
        for alt in opts.alternatives:
            if (alt.lib is lib and not alt.kernel) or alt.tile_n or alt.cluster_m or alt.split_k or alt.nulls:
                continue
            add_alternative(alt.name + "_rows", lambda alt=alt: make_alt(alt, data.valid_rows), check_rows)
        result["useful_flops"] = 2.0 * sum(data.rows) * data.n * data.k
        if deep_gemm is not None and data.capacity is not None:
            expected_m = max(1, round(sum(data.rows) / data.L))
            a3 = [a.view(data.L, data.capacity, data.k) for a in data.a]
            d3 = data.d_masked.view(data.L, data.capacity, data.n)

            def masked(s):
                deep_gemm.m_grouped_bf16_gemm_nt_masked(a3[s], data.b[s], d3, data.valid_rows, expected_m)
            try:
                masked(0)
                torch.cuda.synchronize()
                ref = torch._grouped_mm(data.a[0], data.b[0].transpose(-2, -1), offs=data.offs,
                                        out_dtype=torch.bfloat16)
                mask = row_mask(torch, data)
                err = rel_error(data.d_masked[mask], ref[mask])
                result["deepgemm_masked_check"] = {"rel_err": err, "ok": err < 1e-2}
                ops.append(("deepgemm_masked", masked))
            except Exception as e:  # noqa: BLE001
                result["errors"]["deepgemm_masked"] = short_error(e)

    bt = [b.transpose(-2, -1) for b in data.b]
    peers = [
        ("grouped_mm", lambda s: torch._grouped_mm(data.a[s], bt[s], offs=data.offs, out_dtype=torch.bfloat16)),
        # W = expert 0's (N, K) contiguous weight of the set, transposed: our layout, one GEMM.
        ("dense", lambda s: torch.mm(data.a[s], data.b[s][0].t(), out=data.d_dense)),
    ]
    if deep_gemm is not None:
        peers.append(("deepgemm", lambda s: deep_gemm.m_grouped_bf16_gemm_nt_contiguous(
            data.a[s], data.b[s], data.d_deepgemm, data.m_indices)))
    for name, fn in peers:
        try:
            fn(0)
            torch.cuda.synchronize()
            ops.append((name, fn))
        except Exception as e:  # noqa: BLE001
            result["errors"][name] = short_error(e)
    if any(name == "deepgemm" for name, _ in ops):
        ref = torch._grouped_mm(data.a[0], bt[0], offs=data.offs, out_dtype=torch.bfloat16)
        err = rel_error(data.d_deepgemm, ref)
        result["deepgemm_check"] = {"rel_err": err, "ok": err < 1e-2}

    if ops:
        try:
            samples = time_ops(torch, stream, ops, data.sets, opts.rounds, opts.warmup, opts.lead_cycles)
            result["samples_ms"] = samples
            result["median_ms"] = {k: statistics.median(v) for k, v in samples.items()}
            result["tflops"] = {k: data.flops / (ms * 1e-3) * 1e-12 for k, ms in result["median_ms"].items()}
            status = device_status_error(data)
            if status:
                result["errors"]["ggemm_device_status"] = status
        except Exception as e:  # noqa: BLE001
            result["errors"]["timing"] = short_error(e)
    t = result.get("tflops", {})
    if "ggemm" in t and "grouped_mm" in t:
        result["ratio_grouped_mm"] = t["ggemm"] / t["grouped_mm"]
    if "ggemm" in t and "dense" in t:
        result["ratio_dense"] = t["ggemm"] / t["dense"]
    if "ggemm" in t and "deepgemm" in t:
        result["ratio_deepgemm"] = t["ggemm"] / t["deepgemm"]
    med = result.get("median_ms", {})
    if "ggemm_rows" in med and "deepgemm_masked" in med:
        result["ratio_rows_deepgemm_masked"] = med["deepgemm_masked"] / med["ggemm_rows"]
    if "ggemm" in med and "ggemm_full" in med:
        result["full_epilogue_overhead"] = med["ggemm_full"] / med["ggemm"] - 1.0


def geomean(values):
    values = [v for v in values if v and v > 0]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def summarize(results):
    # Geomeans only over cases where all three peers were measured, so the columns compare.
    complete = [r for r in results if all(p in r.get("tflops", {}) for p in PEERS)]
    return {
        "ggemm_over_grouped_mm": geomean([r["ratio_grouped_mm"] for r in complete]),
        "ggemm_over_dense": geomean([r["ratio_dense"] for r in complete]),
        "ggemm_tflops": geomean([r["tflops"]["ggemm"] for r in complete]),
        "grouped_mm_tflops": geomean([r["tflops"]["grouped_mm"] for r in complete]),
        "dense_tflops": geomean([r["tflops"]["dense"] for r in complete]),
        "ggemm_over_deepgemm": geomean([r["ratio_deepgemm"] for r in complete if "ratio_deepgemm" in r]),
        "deepgemm_cases": sum(1 for r in complete if "ratio_deepgemm" in r),
        "cases_with_ratio": len(complete),
        "cases": len(results),
        "check_failures": [r["name"] for r in results if "check" in r and not r["check"]["ok"]]
        + [r["name"] + " (" + k + ")" for r in results for k, c in r.get("alt_checks", {}).items() if not c["ok"]]
        + [r["name"] + " (full epilogue)" for r in results if "full_check" in r and not r["full_check"]["ok"]],
        "cases_with_errors": [r["name"] for r in results if r.get("errors")],
    }


def fmt(value, spec):
    return format(value, spec) if isinstance(value, (int, float)) else "-"


def table_lines(results, summary):
    head = ("| case | M | N | K | L | ggemm TFLOP/s | grouped_mm TFLOP/s | dense TFLOP/s | deepgemm TFLOP/s "
            "| ggemm/grouped_mm | ggemm/dense | ggemm/deepgemm | check err |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in results:
        t = r.get("tflops", {})
        check = r.get("check", {})
        err = fmt(check.get("rel_err"), ".1e") + ("" if check.get("ok", True) else " FAIL")
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            r["name"], r.get("M", "-"), r["N"], r["K"], r["L"], fmt(t.get("ggemm"), ".0f"),
            fmt(t.get("grouped_mm"), ".0f"), fmt(t.get("dense"), ".0f"), fmt(t.get("deepgemm"), ".0f"),
            fmt(r.get("ratio_grouped_mm"), ".3f"), fmt(r.get("ratio_dense"), ".3f"),
            fmt(r.get("ratio_deepgemm"), ".3f"), err))
    lines.append("| **geomean** (%d of %d cases) | | | | | %s | %s | %s | | **%s** | **%s** | **%s** | |" % (
        summary["cases_with_ratio"], summary["cases"],
        fmt(summary["ggemm_tflops"], ".0f"), fmt(summary["grouped_mm_tflops"], ".0f"),
        fmt(summary["dense_tflops"], ".0f"), fmt(summary["ggemm_over_grouped_mm"], ".3f"),
        fmt(summary["ggemm_over_dense"], ".3f"), fmt(summary["ggemm_over_deepgemm"], ".3f")))
    return lines


def notes_lines(results, summary):
    lines = []
    for r in results:
        if "full_epilogue_overhead" in r:
            fc = r.get("full_check", {})
            lines.append("Full epilogue (bf16 bias, prob, fp32 C + bf16 D) on %s: %s TFLOP/s, %+.1f%% time over plain; "
                         "check C err %s, D err %s%s" % (
                             r["name"], fmt(r["tflops"].get("ggemm_full"), ".0f"), 100 * r["full_epilogue_overhead"],
                             fmt(fc.get("c_rel_err"), ".1e"), fmt(fc.get("d_rel_err"), ".1e"),
                             "" if fc.get("ok", True) else " FAIL"))
    for r in results:
        t = r.get("tflops", {})
        for name in sorted(k for k in t if k.startswith("ggemm_") and k != "ggemm_full"):
            ac = r.get("alt_checks", {}).get(name, {})
            lines.append("%s on %s (%s): %s TFLOP/s, %s x the plan's choice, %s x grouped_mm, %s x deepgemm; check err %s%s" % (
                name, r["name"], kernel_of(r.get("alt_plans", {}).get(name, "")), fmt(t[name], ".0f"),
                fmt(t[name] / t["ggemm"] if t.get("ggemm") else None, ".3f"),
                fmt(t[name] / t["grouped_mm"] if t.get("grouped_mm") else None, ".3f"),
                fmt(t[name] / t["deepgemm"] if t.get("deepgemm") else None, ".3f"),
                fmt(ac.get("rel_err"), ".1e"), "" if ac.get("ok", True) else " FAIL"))
    alts = sorted({k for r in results for k in r.get("tflops", {}) if k.startswith("ggemm_") and k != "ggemm_full"})
    for name in alts:
        rows = [r["tflops"] for r in results if name in r.get("tflops", {}) and "ggemm" in r["tflops"]
                and "grouped_mm" in r["tflops"] and "dense" in r["tflops"]]
        lines.append("%s geomean over %d cases: %s x the plan's choice, %s x grouped_mm, %s x dense, %s x deepgemm" % (
            name, len(rows), fmt(geomean([t[name] / t["ggemm"] for t in rows]), ".3f"),
            fmt(geomean([t[name] / t["grouped_mm"] for t in rows]), ".3f"),
            fmt(geomean([t[name] / t["dense"] for t in rows]), ".3f"),
            fmt(geomean([t[name] / t["deepgemm"] for t in rows if "deepgemm" in t]), ".3f")))
    for r in results:
        med = r.get("median_ms", {})
        if "ggemm_rows" in med:
            mc = r.get("deepgemm_masked_check", {})
            lines.append("valid rows on %s (%d of %d rows real): ggemm_rows %.1f us (%s x ggemm without counts), "
                         "deepgemm_masked %s us; deepgemm_masked / ggemm_rows time %s%s" % (
                             r["name"], round(r["useful_flops"] / (2.0 * r["N"] * r["K"])), r["M"],
                             1e3 * med["ggemm_rows"],
                             fmt(med["ggemm"] / med["ggemm_rows"] if "ggemm" in med else None, ".3f"),
                             fmt(1e3 * med["deepgemm_masked"] if "deepgemm_masked" in med else None, ".1f"),
                             fmt(r.get("ratio_rows_deepgemm_masked"), ".3f"),
                             "" if mc.get("ok", True) else " (deepgemm_masked check FAIL)"))
    masked = [r["ratio_rows_deepgemm_masked"] for r in results if "ratio_rows_deepgemm_masked" in r]
    if masked:
        lines.append("deepgemm_masked / ggemm_rows time, geomean over %d cases: %s" % (
            len(masked), fmt(geomean(masked), ".3f")))
    dg = [r for r in results if "deepgemm" in r.get("tflops", {})]
    for r in dg:
        dc = r.get("deepgemm_check", {})
        lines.append("deepgemm on %s: %s TFLOP/s; ggemm/deepgemm %s; deepgemm check err %s%s" % (
            r["name"], fmt(r["tflops"]["deepgemm"], ".0f"), fmt(r.get("ratio_deepgemm"), ".3f"),
            fmt(dc.get("rel_err"), ".1e"), "" if dc.get("ok", True) else " FAIL"))
    if dg:
        lines.append("ggemm/deepgemm geomean over %d cases: %s" % (
            summary["deepgemm_cases"], fmt(summary["ggemm_over_deepgemm"], ".3f")))
    for r in results:
        for who, err in r.get("errors", {}).items():
            lines.append("ERROR %s / %s: %s" % (r["name"], who, err))
    if summary["check_failures"]:
        lines.append("CHECK FAILED: " + ", ".join(summary["check_failures"]))
    return lines


def plot(results, summary, meta, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [r["name"] for r in results]
    fig, ax = plt.subplots(figsize=(max(8, 1.3 * len(names) + 2), 5))
    width = 0.27
    colors = {"ggemm": "#d62728", "grouped_mm": "#1f77b4", "dense": "#7f7f7f"}
    labels = {"ggemm": "ggemm", "grouped_mm": "torch._grouped_mm", "dense": "cuBLAS dense (torch.mm)"}
    for i, peer in enumerate(PEERS):
        xs = [j + (i - 1) * width for j in range(len(names))]
        ys = [r.get("tflops", {}).get(peer, 0.0) for r in results]
        ax.bar(xs, ys, width, label=labels[peer], color=colors[peer])
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels(names, rotation=30, ha="right")
    ax.set_ylabel("TFLOP/s (2*M*N*K over padded rows)")
    title = "%s, %s" % (meta["device"], meta["date"][:10])
    if summary["ggemm_over_grouped_mm"]:
        title += "; geomean ggemm/grouped_mm %.3f, ggemm/dense %s" % (
            summary["ggemm_over_grouped_mm"], fmt(summary["ggemm_over_dense"], ".3f"))
    ax.set_title(title, fontsize=10)
    top = max([v for r in results for v in r.get("tflops", {}).values()] + [1.0])
    ax.set_ylim(0, 1.2 * top)  # headroom for the legend above the bars
    ax.legend(loc="upper left", ncol=3, fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def write_outputs(out, meta, results, final, opts):
    summary = summarize(results)
    doc = dict(meta, summary=summary, complete=final, cases=results)
    tmp = os.path.join(out, "peers.json.tmp")
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
    os.replace(tmp, os.path.join(out, "peers.json"))
    if not final:
        return summary
    md = ["# ggemm vs torch._grouped_mm vs cuBLAS dense", "",
          "- date: %s" % meta["date"], "- device: %s" % meta["device"],
          "- commit: %s" % meta["commit"], "- ggemm version: %s; torch %s (CUDA %s)" % (
              meta["ggemm_version"], meta["torch"], meta["torch_cuda"]),
          "- command: `%s`" % meta["command"],
          "- medians of %d event-timed runs per peer after %d warm-up rounds; interleaved rounds; "
          "inputs rotated over >= 2 sets; scheduler %s" % (opts.rounds, opts.warmup, opts.scheduler), ""]
    md += table_lines(results, summary) + [""] + notes_lines(results, summary)
    with open(os.path.join(out, "peers.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    if not opts.no_plot:
        try:
            plot(results, summary, meta, os.path.join(out, "peers.png"))
        except Exception as e:  # noqa: BLE001 - the numbers matter more than the picture
            print("peers.py: plot failed: %s" % short_error(e))
    return summary


def main():
    opts = parse_args()
    if opts.rounds < 20:
        print("peers.py: note: --rounds %d is below the 20 a reported number needs" % opts.rounds)
    os.makedirs(opts.out, exist_ok=True)
    cases = load_cases(opts.shapes, opts.cases)

    import torch
    global deep_gemm
    try:
        import deep_gemm as imported
        deep_gemm = imported
    except Exception as e:  # noqa: BLE001 - the peer is optional
        print("peers.py: DeepGEMM not measured (import deep_gemm: %s)" % short_error(e))
    if not torch.cuda.is_available():
        sys.exit("peers.py: no CUDA device visible to torch")
    if not hasattr(torch, "_grouped_mm"):
        print("peers.py: this torch has no torch._grouped_mm; that peer will be recorded as failed")
    lib = gg.Library(os.path.abspath(opts.lib))
    # Further ggemm runs in the same rounds (Alternative). ctypes loads each build RTLD_LOCAL, so
    # two builds' entry points never mix.
    opts.alternatives = []
    for spec in opts.alt:
        try:
            fields = [int(v) for v in spec.split("x")]
            if len(fields) not in (2, 3):
                raise ValueError
            tile_n, cluster_m, margin = fields if len(fields) == 3 else fields + [0]
        except ValueError:
            sys.exit("peers.py: --alt %s is not TILE_NxCLUSTER_M[xSM_MARGIN]" % spec)
        opts.alternatives.append(Alternative("ggemm_" + spec, lib, tile_n=tile_n, cluster_m=cluster_m,
                                             sm_margin=margin))
    for spec in opts.alt_lib:
        name, _, path = spec.partition("=")
        opts.alternatives.append(Alternative("ggemm_" + name, gg.Library(os.path.abspath(path))))
    for spec in opts.alt_kernel:
        name, _, prefix = spec.partition("=")
        prefix, _, path = prefix.partition("@")
        prefix, _, margin = prefix.partition(":")
        if not name or not prefix or not (margin == "" or margin.isdigit()):
            sys.exit("peers.py: --alt-kernel %s is not NAME=PREFIX[:SM_MARGIN][@PATH]" % spec)
        build = gg.Library(os.path.abspath(path)) if path else lib
        opts.alternatives.append(Alternative("ggemm_" + name, build, kernel=prefix, sm_margin=int(margin or 0)))
    for split_k in opts.alt_split:
        opts.alternatives.append(Alternative("ggemm_split%d" % split_k, lib, split_k=split_k))
    for margin in opts.alt_margin:
        opts.alternatives.append(Alternative("ggemm_margin%d" % margin, lib, sm_margin=margin))
    if opts.also_dynamic:
        opts.alternatives.append(Alternative("ggemm_dynamic", lib, scheduler="dynamic"))
    if opts.unscaled:
        opts.alternatives.append(Alternative("ggemm_unscaled", lib, nulls=("alpha", "prob")))
    for pointer in opts.alt_null:
        opts.alternatives.append(Alternative("ggemm_null_" + pointer, lib, nulls=(pointer,)))
    # ggemm_rows is the valid-row timing (--valid-rows); every other name must be new too.
    names = [alt.name for alt in opts.alternatives]
    for name in set(names):
        if name == "ggemm_rows" or names.count(name) > 1:
            sys.exit("peers.py: the alternative name %s is %s; pick another NAME" % (
                name[len("ggemm_"):], "reserved" if name == "ggemm_rows" else "given twice"))
    meta = dict(run_meta(torch, lib), **{
        "rounds": opts.rounds, "warmup": opts.warmup, "scheduler": opts.scheduler, "tile_n": opts.tile_n,
        "cluster_m": opts.cluster_m, "alt": opts.alt, "alt_lib": opts.alt_lib, "alt_kernel": opts.alt_kernel,
        "alt_split": opts.alt_split, "alt_margin": opts.alt_margin, "also_dynamic": opts.also_dynamic, "unscaled": opts.unscaled, "alt_null": opts.alt_null,
        "lead_cycles": opts.lead_cycles,
        "bf16_reduced_precision_reduction": torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction,
    })
    print("peers.py: %s, torch %s, ggemm %d, %d cases, %d rounds" % (
        meta["device"], meta["torch"], lib.version, len(cases), opts.rounds), flush=True)

    stream = torch.cuda.Stream()
    results = []
    with torch.cuda.stream(stream):
        for case in cases:
            t0 = time.time()
            try:
                result = run_case(torch, lib, case, opts, stream)
            except Exception as e:  # noqa: BLE001 - one case must not stop the others
                result = {"name": case["name"], "L": case["experts"], "N": case["n"], "K": case["k"],
                          "errors": {"case": short_error(e)}, "traceback": traceback.format_exc()}
            results.append(result)
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
            t = result.get("tflops", {})
            print("  %-18s %6.1fs  ggemm %s  grouped_mm %s  dense %s  check %s%s" % (
                case["name"], time.time() - t0, fmt(t.get("ggemm"), ".0f"), fmt(t.get("grouped_mm"), ".0f"),
                fmt(t.get("dense"), ".0f"), fmt(result.get("check", {}).get("rel_err"), ".1e"),
                ("  errors: " + "; ".join("%s: %s" % kv for kv in result["errors"].items()))
                if result.get("errors") else ""), flush=True)
            write_outputs(opts.out, meta, results, False, opts)

    summary = write_outputs(opts.out, meta, results, True, opts)
    print()
    print("\n".join(table_lines(results, summary)))
    for line in notes_lines(results, summary):
        print(line)
    return 1 if summary["check_failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
