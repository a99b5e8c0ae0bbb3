#!/usr/bin/env python3
"""The fused GLU forward against its unfused paths on the fc1 cases of the MoE suite.

For every case of bench/moe_shapes.json whose name holds "fc1" (N = 2 * I, the pre-activation
width, in interleaved 32-column gate/up blocks), with a random alpha per expert and prob per row:
  1. check: ggemm's fused SwiGLU, D = prob * SwiGLU(alpha * A B^T), against an fp32 reference
     from torch._grouped_mm; relative Frobenius error <= 1e-2 (D poisoned first). The unfused
     paths timed below are checked against the same reference: each computes the same D;
  2. time, in interleaved rounds (order rotating every round), medians of event-timed runs,
     inputs rotated over several sets so the L2 cannot serve a run:
       glu          ggemm, activation = SwiGLU, alpha and prob: bf16 D of M x N/2, no C
       plain        ggemm's plain grouped GEMM of the same M x N x K, alpha and prob: bf16 D of
                    M x N (the GEMM the GLU contains, scaled as the GLU is)
       plain_eager  the same D unfused: ggemm's GEMM with alpha (prob NULL: prob scales the
                    activation's output, not its input), then in eager PyTorch up times prob,
                    silu, and their product (three kernels, bf16)
       mm_compiled  torch._grouped_mm, then alpha, SwiGLU and prob compiled by torch.compile
       glu_noprob, plain_eager_noprob
                    the GLU with prob NULL, and the GEMM with alpha then silu and a multiply
                    (two kernels): the same comparison for a layer that applies no prob here
       glu_train    (--train) the training forward: glu with a bf16 bias and the bf16
                    pre-activation C (M x N) written for the backward, checked against torch
  3. the backward, on the same case's second layer (W2 of hidden x I = K x N/2, N-major, as
     its forward stores it): dGLU (R = alpha * dY @ W2 of M x N/2, the saved bf16
     pre-activation, d_pre of M x N and d_prob) against ggemm's plain dgrad GEMM of the same
     M x N/2 x K, both with alpha and prob.
With --alt-lib NAME=PATH (repeatable), the fused GLU forward and the dGLU of another build of
libggemm.so are timed in the same rounds as glu_NAME and dglu_NAME (with --train, glu_train_NAME
too), each output checked against this library's (the same reference bound; bitwise equality
reported). With --also-dynamic, the GLU, the plain GEMM, dGLU and the dgrad also with the dynamic
scheduler (tiles claimed from a counter: `desc.scheduler`, `dynamic_sched` in Python), in the same
rounds, the outputs required bitwise equal to the static deal's. With --alt-kernel NAME=PREFIX
(repeatable), this library's GLU forward and dGLU restricted to kernels whose name starts with
PREFIX (GGEMM_KERNEL), the same way, where such a plan can be made. With --alt-margin SM_MARGIN
(repeatable), this library's GLU forward and dGLU planned for a persistent grid that many SMs
smaller (`desc.sm_margin`), the outputs required bitwise equal to the full grid's.
Writes glu.json into --out (with the run's date, device, library and command, as peers.py's) and
prints them, then a table with the ratios:
  glu / plain (target <= 1.05), plain_eager / glu (geomean target >= 1.3; without prob on
  either side reported beside it), mm_compiled / glu (target > 1 on every case),
  dglu / dgrad (target <= 1.10), and with --train glu_train / plain.
"""
import argparse
import json
import math
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import ggemm_ctypes as gg  # noqa: E402
from peers import forced_kernel, load_cases, rel_error, run_meta, short_error, time_ops  # noqa: E402

CHECK_TOLERANCE = 1e-2
MAX_SETS = 16
L2_MULTIPLE = 3.0


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--lib", default="build-gpu/libggemm.so", help="path of libggemm.so")
    p.add_argument("--shapes", default=os.path.join(HERE, "moe_shapes.json"))
    p.add_argument("--cases", default="", help="comma-separated case names (default: every fc1 case)")
    p.add_argument("--rounds", type=int, default=30)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--sets", type=int, default=0, help="input sets to rotate (0: enough to defeat L2)")
    p.add_argument("--lead-cycles", type=int, default=200000)
    p.add_argument("--out", default="out", help="output folder")
    p.add_argument("--alt-lib", action="append", default=[], metavar="NAME=PATH",
                   help="also time this build's GLU forward and dGLU in the same rounds (repeatable)")
    p.add_argument("--train", action="store_true",
                   help="also time the training forward: GLU with bias and the pre-activation C")
    p.add_argument("--alt-kernel", action="append", default=[], metavar="NAME=PREFIX",
                   help="also time this library's GLU forward and dGLU restricted to kernels whose name "
                        "starts with PREFIX (repeatable)")
    p.add_argument("--alt-margin", action="append", default=[], type=int, metavar="SM_MARGIN",
                   help="also time this library's GLU forward and dGLU with desc.sm_margin = SM_MARGIN "
                        "(a persistent grid that many SMs smaller), outputs checked bitwise (repeatable)")
    p.add_argument("--also-dynamic", action="store_true",
                   help="also time GLU, plain, dGLU and dgrad with the dynamic scheduler (tiles claimed "
                        "from a counter) in the same rounds, outputs checked bitwise against the static deal's")
    opts = p.parse_args()
    opts.alt_libs = [named(spec, "--alt-lib", "PATH") for spec in opts.alt_lib]
    opts.alt_kernels = [named(spec, "--alt-kernel", "PREFIX") for spec in opts.alt_kernel]
    return opts


def named(spec, option, what):
    name, _, value = spec.partition("=")
    if not name or not value:
        sys.exit("glu.py: %s %s is not NAME=%s" % (option, spec, what))
    return name, value


def swiglu_blocks(torch, pre):
    """SwiGLU on interleaved blocks: pre (M, N) -> (M, N/2), gate first in each 64 columns."""
    m, n = pre.shape
    v = pre.view(m, n // 64, 2, 32)
    return (torch.nn.functional.silu(v[:, :, 0]) * v[:, :, 1]).reshape(m, n // 2)


def glu_reference(torch, pre, alpha_rows, prob=None):
    """The fused forward's D in fp32 from the unscaled pre-activation: prob * SwiGLU(alpha * pre)
    (without prob: SwiGLU(alpha * pre))."""
    d = swiglu_blocks(torch, pre.float() * alpha_rows[:, None])
    return d if prob is None else d * prob[:, None]


def eager_glu(torch, c, prob):
    """prob * SwiGLU(c) in eager PyTorch, three kernels: up times prob, silu, and their product
    (c and prob bf16). The fastest of the orders tried on an H100 (prob applied last, in place or
    not, took 1.1-1.2x as long; prob in fp32, 1.3x)."""
    m, n = c.shape
    v = c.view(m, n // 64, 2, 32)
    return (torch.nn.functional.silu(v[:, :, 0]) * (v[:, :, 1] * prob[:, None, None])).reshape(m, n // 2)


def run_poisoned(torch, plan, args, outputs, handle):
    """One run of `plan` on `args`, its `outputs` filled with NaN first (an element it does not
    write fails the check), waited for."""
    for out in outputs:
        out.fill_(float("nan"))
    plan.execute(args, handle)
    torch.cuda.synchronize()


class Case:
    def __init__(self, torch, lib, case, sets_wanted):
        dev = torch.device("cuda")
        bf16 = torch.bfloat16
        self.name = case["name"]
        self.L, self.n, self.k = case["experts"], case["n"], case["k"]
        offsets = list(case["padded_offsets"])
        self.m = offsets[-1]
        set_bytes = self.m * self.k * 2 + self.L * self.n * self.k * 2
        l2 = getattr(torch.cuda.get_device_properties(dev), "L2_cache_size", 50 << 20)
        self.sets = sets_wanted or min(MAX_SETS, max(2, int(L2_MULTIPLE * l2 / set_bytes) + 1))
        self.offs = torch.tensor(offsets, dtype=torch.int32, device=dev)
        # Scales of the size of real ones: alpha per expert, prob (a router's weight) per row.
        self.alpha = torch.empty(self.L, dtype=torch.float32, device=dev).uniform_(0.5, 1.5)
        self.prob = torch.empty(max(self.m, 1), dtype=torch.float32, device=dev).uniform_(0.25, 1.0)
        self.prob_bf16 = self.prob.to(bf16)  # the eager path's, in the activation's dtype
        sizes = [end - begin for begin, end in zip([0] + offsets[:-1], offsets)]
        self.alpha_rows = torch.repeat_interleave(self.alpha, torch.tensor(sizes, device=dev), output_size=self.m)
        self.a = [torch.empty(self.m, self.k, dtype=bf16, device=dev).uniform_(-1, 1) for _ in range(self.sets)]
        self.b = [torch.empty(self.L, self.n, self.k, dtype=bf16, device=dev).uniform_(-1, 1) / 8
                  for _ in range(self.sets)]
        self.bt = [b.transpose(-2, -1) for b in self.b]
        self.d_glu = torch.empty(self.m, self.n // 2, dtype=bf16, device=dev)
        self.d_glu_noprob = torch.empty(self.m, self.n // 2, dtype=bf16, device=dev)
        # The backward: dY (M x K), W2 (L x K x N/2, N-major), the saved pre-activation (M x N).
        self.dy = [torch.empty(self.m, self.k, dtype=bf16, device=dev).uniform_(-1, 1) for _ in range(self.sets)]
        self.w2 = [torch.empty(self.L, self.k, self.n // 2, dtype=bf16, device=dev).uniform_(-1, 1) / 8
                   for _ in range(self.sets)]
        self.pre = torch.empty(self.m, self.n, dtype=bf16, device=dev).uniform_(-8, 8)
        self.d_pre = torch.empty(self.m, self.n, dtype=bf16, device=dev)
        self.d_prob = torch.empty(max(self.m, 1), dtype=torch.float32, device=dev)
        self.dgrad_out = torch.empty(self.m, self.n // 2, dtype=bf16, device=dev)
        self.d_plain = torch.empty(self.m, self.n, dtype=bf16, device=dev)
        # The training forward's bias (L x N) and pre-activation C (M x N), made when timed.
        self.bias, self.c_train = None, None
        self.status = torch.zeros(1, dtype=torch.int32, device=dev)
        self.plans = []
        self.lib = lib

    def plan(self, torch, activation, lib=None, train=False, scheduler=gg.SCHEDULER_STATIC, sm_margin=0,
             prob=True, out=None):
        """The forward (with `train`, GLU with bias and C, as a training step's forward calls it;
        without `prob`, args.prob NULL; `out`: D if not the activation's own buffer)."""
        lib = lib or self.lib
        if train and self.bias is None:
            self.bias = torch.empty(self.L, self.n, dtype=torch.bfloat16, device="cuda").uniform_(-1, 1)
            self.c_train = torch.empty(self.m, self.n, dtype=torch.bfloat16, device="cuda")
        plan = lib.plan(lib.plan_desc(device=torch.cuda.current_device(), m_capacity=max(self.m, 256), n=self.n,
                                      k=self.k, num_experts=self.L, weight_mode=gg.WEIGHTS_DENSE,
                                      c_dtype=gg.DTYPE_BF16, d_dtype=gg.DTYPE_BF16,
                                      bias_dtype=gg.DTYPE_BF16 if train else gg.DTYPE_NONE,
                                      generate_c=int(train), scheduler=scheduler, activation=activation,
                                      sm_margin=sm_margin))
        self.plans.append(plan)
        ws = plan.workspace_size()
        workspace = torch.empty(max(ws, 1), dtype=torch.uint8, device="cuda")
        d = out if out is not None else self.d_glu if activation != gg.ACTIVATION_NONE else self.d_plain
        extra = dict(bias=self.bias.data_ptr(), c=self.c_train.data_ptr()) if train else {}
        args = [lib.args(m=self.m, a=self.a[s].data_ptr(), b=self.b[s].data_ptr(),
                         padded_offsets=self.offs.data_ptr(), alpha=self.alpha.data_ptr(),
                         prob=self.prob.data_ptr() if prob else None, d=d.data_ptr(),
                         workspace=workspace.data_ptr() if ws else None, workspace_size=ws,
                         device_status=self.status.data_ptr(), **extra) for s in range(self.sets)]
        return plan, args, workspace

    def backward_plan(self, torch, dglu, lib=None, scheduler=gg.SCHEDULER_STATIC, sm_margin=0):
        """dGLU (SwiGLU) or the plain dgrad GEMM of the same size, N-major W2 (with `lib`, another
        build's)."""
        lib = lib or self.lib
        fields = dict(device=torch.cuda.current_device(), m_capacity=max(self.m, 256), n=self.n // 2, k=self.k,
                      num_experts=self.L, weight_mode=gg.WEIGHTS_DENSE, c_dtype=gg.DTYPE_BF16,
                      d_dtype=gg.DTYPE_BF16, bias_dtype=gg.DTYPE_NONE, generate_c=0,
                      scheduler=scheduler, weight_layout=1, sm_margin=sm_margin)
        if dglu:
            fields.update(activation=gg.ACTIVATION_SWIGLU, glu_backward=1, glu_pre_dtype=gg.DTYPE_BF16)
        plan = lib.plan(lib.plan_desc(**fields))
        self.plans.append(plan)
        ws = plan.workspace_size()
        workspace = torch.empty(max(ws, 1), dtype=torch.uint8, device="cuda")
        extra = dict(glu_pre=self.pre.data_ptr(), d_prob=self.d_prob.data_ptr()) if dglu else {}
        d = self.d_pre if dglu else self.dgrad_out
        args = [lib.args(m=self.m, a=self.dy[s].data_ptr(), b=self.w2[s].data_ptr(),
                         padded_offsets=self.offs.data_ptr(), alpha=self.alpha.data_ptr(),
                         prob=self.prob.data_ptr(), d=d.data_ptr(),
                         workspace=workspace.data_ptr() if ws else None, workspace_size=ws,
                         device_status=self.status.data_ptr(), **extra) for s in range(self.sets)]
        return plan, args, workspace

    def destroy(self):
        for plan in self.plans:
            plan.destroy()


def run_case(torch, lib, case, opts, stream, compiled_act, alt_libs):
    result = {"name": case["name"], "L": case["experts"], "N": case["n"], "K": case["k"], "errors": {}}
    data = Case(torch, lib, case, opts.sets)
    result.update(M=data.m, sets=data.sets)
    handle = stream.cuda_stream
    try:
        glu_plan, glu_args, _glu_ws = data.plan(torch, gg.ACTIVATION_SWIGLU)
        plain_plan, plain_args, _plain_ws = data.plan(torch, gg.ACTIVATION_NONE)
        # The unfused paths' GEMM: alpha only (prob scales the activation's output), and the GLU
        # without prob, into a D of its own.
        _, alpha_args, _alpha_ws = data.plan(torch, gg.ACTIVATION_NONE, prob=False)
        noprob_plan, noprob_args, _noprob_ws = data.plan(torch, gg.ACTIVATION_SWIGLU, prob=False,
                                                         out=data.d_glu_noprob)
        result["glu_plan"] = glu_plan.describe()
        result["plain_plan"] = plain_plan.describe()

        # Every path against one fp32 reference: each computes the same D.
        data.d_glu.fill_(float("nan"))
        data.d_glu_noprob.fill_(float("nan"))
        glu_plan.execute(glu_args[0], handle)
        noprob_plan.execute(noprob_args[0], handle)
        try:  # an fp32 pre-activation where torch._grouped_mm offers one, else bf16
            pre = torch._grouped_mm(data.a[0], data.bt[0], offs=data.offs, out_dtype=torch.float32)
        except Exception:  # noqa: BLE001
            pre = torch._grouped_mm(data.a[0], data.bt[0], offs=data.offs, out_dtype=torch.bfloat16).float()
        ref = glu_reference(torch, pre, data.alpha_rows, data.prob)
        ref_noprob = glu_reference(torch, pre, data.alpha_rows)
        torch.cuda.synchronize()
        status = int(data.status.item()) & 0xFFFFFFFF
        errors = {"rel_err": rel_error(data.d_glu, ref), "noprob_rel_err": rel_error(data.d_glu_noprob, ref_noprob)}
        del pre
        data.d_plain.fill_(float("nan"))
        plain_plan.execute(alpha_args[0], handle)
        errors["eager_rel_err"] = rel_error(eager_glu(torch, data.d_plain, data.prob_bf16), ref)
        errors["eager_noprob_rel_err"] = rel_error(swiglu_blocks(torch, data.d_plain), ref_noprob)
        mm = torch._grouped_mm(data.a[0], data.bt[0], offs=data.offs, out_dtype=torch.bfloat16)
        errors["compiled_rel_err"] = rel_error(compiled_act(mm, data.alpha_rows, data.prob), ref)
        del mm, ref, ref_noprob
        result["check"] = dict(errors, device_status=status,
                               ok=all(e <= CHECK_TOLERANCE for e in errors.values()) and status == 0)

        dglu_plan, dglu_args, _dglu_ws = data.backward_plan(torch, True)
        dgrad_plan, dgrad_args, _dgrad_ws = data.backward_plan(torch, False)
        result["dglu_plan"] = dglu_plan.describe()
        # dGLU against torch: R = alpha * dY @ W2 per expert (fp32), then prob times the SwiGLU
        # derivative, and d_prob.
        dglu_plan.execute(dglu_args[0], handle)
        torch.cuda.synchronize()
        begin, worst = 0, 0.0
        for g, end in enumerate(case["padded_offsets"][:2]):  # two experts keep the check short
            if end > begin:
                r = data.alpha[g] * (data.dy[0][begin:end].float() @ data.w2[0][g].float())
                p = data.prob[begin:end, None]
                v = data.pre[begin:end].float().view(end - begin, -1, 2, 32)
                gate, up = v[:, :, 0].reshape(r.shape), v[:, :, 1].reshape(r.shape)
                s = torch.sigmoid(gate)
                d_gate = r * p * up * (s + gate * s * (1 - s))
                d_up = r * p * gate * s
                ref = torch.stack((d_gate.view(end - begin, -1, 32), d_up.view(end - begin, -1, 32)), 2)
                worst = max(worst, rel_error(data.d_pre[begin:end], ref.reshape(end - begin, -1)))
                worst = max(worst, rel_error(data.d_prob[begin:end], (r * gate * s * up).sum(1)))
            begin = end
        result["dglu_check"] = {"rel_err": worst, "ok": bool(worst <= CHECK_TOLERANCE)}
        # This library's outputs, which other builds' are checked against (before the training
        # forward overwrites D).
        d_glu, d_pre, d_prob = data.d_glu.clone(), data.d_pre.clone(), data.d_prob.clone()
        train_ops = []
        if opts.train:
            train_plan, train_args, _train_ws = data.plan(torch, gg.ACTIVATION_SWIGLU, train=True)
            result["train_plan"] = train_plan.describe()
            train_ops.append(("glu_train", lambda s: train_plan.execute(train_args[s], handle)))
            result["train_check"] = check_train(torch, data, case, train_plan, train_args, handle)
            train_d, train_c = data.d_glu.clone(), data.c_train.clone()
        # Other builds' GLU forward and dGLU, timed beside this library's and checked against its outputs.
        alt_ops = []
        for name, alt_lib in alt_libs:
            glu_alt, glu_alt_args, glu_alt_ws = data.plan(torch, gg.ACTIVATION_SWIGLU, lib=alt_lib)
            dglu_alt, dglu_alt_args, dglu_alt_ws = data.backward_plan(torch, True, lib=alt_lib)
            run_poisoned(torch, glu_alt, glu_alt_args[0], (data.d_glu,), handle)
            run_poisoned(torch, dglu_alt, dglu_alt_args[0], (data.d_pre,), handle)
            errors = [rel_error(data.d_glu, d_glu.float()), rel_error(data.d_pre, d_pre.float()),
                      rel_error(data.d_prob, d_prob)]
            result.setdefault("alt_checks", {})[name] = {
                "glu_kernel": [x for x in glu_alt.describe().splitlines() if x.startswith("kernel:")][0][:90],
                "dglu_kernel": [x for x in dglu_alt.describe().splitlines() if x.startswith("kernel:")][0][:90],
                "rel_err": max(errors), "ok": bool(max(errors) <= CHECK_TOLERANCE),
                "glu_bitwise_equal": bool(torch.equal(data.d_glu, d_glu)),
                "dglu_bitwise_equal": bool(torch.equal(data.d_pre, d_pre) and torch.equal(data.d_prob, d_prob))}
            alt_ops.append(("glu_" + name,
                            lambda s, p=glu_alt, a=glu_alt_args, w=glu_alt_ws: p.execute(a[s], handle)))
            if opts.train:
                train_alt, train_alt_args, train_alt_ws = data.plan(torch, gg.ACTIVATION_SWIGLU, lib=alt_lib,
                                                                    train=True)
                run_poisoned(torch, train_alt, train_alt_args[0], (data.d_glu, data.c_train), handle)
                err = max(rel_error(data.d_glu, train_d.float()), rel_error(data.c_train, train_c.float()))
                result["alt_checks"][name].update(
                    train_rel_err=err, ok=result["alt_checks"][name]["ok"] and bool(err <= CHECK_TOLERANCE),
                    train_bitwise_equal=bool(torch.equal(data.d_glu, train_d) and torch.equal(data.c_train, train_c)))
                alt_ops.append(("glu_train_" + name,
                                lambda s, p=train_alt, a=train_alt_args, w=train_alt_ws: p.execute(a[s], handle)))
            alt_ops.append(("dglu_" + name,
                            lambda s, p=dglu_alt, a=dglu_alt_args, w=dglu_alt_ws: p.execute(a[s], handle)))

        # This library's GLU forward and dGLU on forced kernels, checked the same way.
        for name, prefix in opts.alt_kernels:
            for op, make, outputs in (
                    ("glu", lambda: data.plan(torch, gg.ACTIVATION_SWIGLU), ((data.d_glu, d_glu),)),
                    ("dglu", lambda: data.backward_plan(torch, True),
                     ((data.d_pre, d_pre), (data.d_prob, d_prob)))):
                try:
                    with forced_kernel(prefix):
                        alt_plan, alt_args, alt_ws = make()
                except Exception as e:  # noqa: BLE001 - no such plan: reported, not timed
                    result.setdefault("alt_kernel_refused", {})["%s_%s" % (op, name)] = short_error(e)
                    continue
                run_poisoned(torch, alt_plan, alt_args[0], [out for out, _ in outputs], handle)
                err = max(rel_error(out, ref.float()) for out, ref in outputs)
                result.setdefault("alt_kernel_checks", {})["%s_%s" % (op, name)] = {
                    "kernel": [x for x in alt_plan.describe().splitlines() if x.startswith("kernel:")][0][:90],
                    "rel_err": err, "ok": bool(err <= CHECK_TOLERANCE),
                    "bitwise_equal": all(bool(torch.equal(out, ref)) for out, ref in outputs)}
                alt_ops.append(("%s_%s" % (op, name),
                                lambda s, p=alt_plan, a=alt_args, w=alt_ws: p.execute(a[s], handle)))

        def add_bitwise_alternative(checks, key, timed, make, outputs):
            """Plans with `make`, requires its `outputs` (if any) bitwise equal to this library's
            (recorded under result[checks][key]) and times it beside the others as `timed`."""
            alt_plan, alt_args, alt_ws = make()
            if outputs:
                run_poisoned(torch, alt_plan, alt_args[0], [out for out, _ in outputs], handle)
                result.setdefault(checks, {})[key] = {
                    "bitwise_equal": all(bool(torch.equal(out, ref)) for out, ref in outputs)}
            alt_ops.append((timed, lambda s, p=alt_plan, a=alt_args, w=alt_ws: p.execute(a[s], handle)))

        # This library's GLU forward and dGLU on a smaller persistent grid, which must not change a bit.
        for margin in opts.alt_margin:
            for op, make, outputs in (
                    ("glu", lambda: data.plan(torch, gg.ACTIVATION_SWIGLU, sm_margin=margin), ((data.d_glu, d_glu),)),
                    ("dglu", lambda: data.backward_plan(torch, True, sm_margin=margin),
                     ((data.d_pre, d_pre), (data.d_prob, d_prob)))):
                name = "%s_margin%d" % (op, margin)
                add_bitwise_alternative("alt_margin_checks", name, name, make, outputs)

        # The same four calls with tiles claimed from a counter (the dynamic scheduler), whose
        # outputs must equal the static deal's bit for bit.
        if opts.also_dynamic:
            for op, make, outputs in (
                    ("glu", lambda: data.plan(torch, gg.ACTIVATION_SWIGLU, scheduler=gg.SCHEDULER_DYNAMIC),
                     ((data.d_glu, d_glu),)),
                    ("plain", lambda: data.plan(torch, gg.ACTIVATION_NONE, scheduler=gg.SCHEDULER_DYNAMIC), ()),
                    ("dglu", lambda: data.backward_plan(torch, True, scheduler=gg.SCHEDULER_DYNAMIC),
                     ((data.d_pre, d_pre), (data.d_prob, d_prob))),
                    ("dgrad", lambda: data.backward_plan(torch, False, scheduler=gg.SCHEDULER_DYNAMIC), ())):
                add_bitwise_alternative("dynamic_checks", op, op + "_dynamic", make, outputs)

        ops = [
            ("glu", lambda s: glu_plan.execute(glu_args[s], handle)),
            ("plain", lambda s: plain_plan.execute(plain_args[s], handle)),
            ("plain_eager", lambda s: (plain_plan.execute(alpha_args[s], handle),
                                       eager_glu(torch, data.d_plain, data.prob_bf16))),
            ("mm_compiled", lambda s: compiled_act(torch._grouped_mm(
                data.a[s], data.bt[s], offs=data.offs, out_dtype=torch.bfloat16), data.alpha_rows, data.prob)),
            ("glu_noprob", lambda s: noprob_plan.execute(noprob_args[s], handle)),
            ("plain_eager_noprob", lambda s: (plain_plan.execute(alpha_args[s], handle),
                                              swiglu_blocks(torch, data.d_plain))),
            ("dglu", lambda s: dglu_plan.execute(dglu_args[s], handle)),
            ("dgrad", lambda s: dgrad_plan.execute(dgrad_args[s], handle)),
        ] + train_ops + alt_ops
        for name, fn in ops:  # compile and warm every path outside the timed rounds
            fn(0)
        torch.cuda.synchronize()
        samples = time_ops(torch, stream, ops, data.sets, opts.rounds, opts.warmup, opts.lead_cycles)
        med = {name: statistics.median(v) for name, v in samples.items()}
        result["median_ms"] = med
        result["ratios"] = {
            "glu_over_plain": med["glu"] / med["plain"],
            "plain_eager_over_glu": med["plain_eager"] / med["glu"],
            "mm_compiled_over_glu": med["mm_compiled"] / med["glu"],
            "plain_eager_noprob_over_glu_noprob": med["plain_eager_noprob"] / med["glu_noprob"],
            "dglu_over_dgrad": med["dglu"] / med["dgrad"],
        }
        if opts.train:
            result["ratios"]["glu_train_over_plain"] = med["glu_train"] / med["plain"]
        for name, _ in alt_libs:
            result["ratios"]["glu_%s_over_glu" % name] = med["glu_" + name] / med["glu"]
            result["ratios"]["dglu_%s_over_dglu" % name] = med["dglu_" + name] / med["dglu"]
            if opts.train:
                result["ratios"]["glu_train_%s_over_glu_train" % name] = med["glu_train_" + name] / med["glu_train"]
        if opts.also_dynamic:
            for op in ("glu", "plain", "dglu", "dgrad"):
                result["ratios"]["%s_dynamic_over_%s" % (op, op)] = med[op + "_dynamic"] / med[op]
            result["ratios"]["dglu_dynamic_over_dgrad_dynamic"] = med["dglu_dynamic"] / med["dgrad_dynamic"]
        for timed in list(result.get("alt_kernel_checks", {})) + list(result.get("alt_margin_checks", {})):
            op = timed.split("_", 1)[0]
            result["ratios"]["%s_over_%s" % (timed, op)] = med[timed] / med[op]
    except Exception as e:  # noqa: BLE001 - record and go on with the other cases
        result["errors"]["case"] = short_error(e)
    finally:
        data.destroy()
    return result


def check_train(torch, data, case, plan, args, handle):
    """The training forward against torch on the first two experts: C = alpha[g] A B_g^T + bias[g]
    and D = prob * SwiGLU(C), both poisoned first."""
    run_poisoned(torch, plan, args[0], (data.d_glu, data.c_train), handle)
    begin, worst = 0, 0.0
    for g, end in enumerate(case["padded_offsets"][:2]):
        if end > begin:
            pre = data.alpha[g] * (data.a[0][begin:end].float() @ data.b[0][g].float().T) + data.bias[g].float()
            d = swiglu_blocks(torch, pre) * data.prob[begin:end, None]
            worst = max(worst, rel_error(data.c_train[begin:end], pre), rel_error(data.d_glu[begin:end], d))
        begin = end
    status = int(data.status.item()) & 0xFFFFFFFF
    return {"rel_err": worst, "ok": bool(worst <= CHECK_TOLERANCE) and status == 0, "device_status": status}


def geomean(values):
    values = [v for v in values if v is not None and v > 0]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def main():
    opts = parse_args()
    import torch

    lib = gg.Library(opts.lib)
    alt_libs = [(name, gg.Library(os.path.abspath(path))) for name, path in opts.alt_libs]
    cases = [c for c in load_cases(opts.shapes, opts.cases) if opts.cases or "fc1" in c["name"]]
    os.makedirs(opts.out, exist_ok=True)
    meta = dict(run_meta(torch, lib), rounds=opts.rounds)
    print("glu.py: %s, %s, torch %s, %s, %d rounds" % (meta["device"], meta["date"], meta["torch"], meta["lib"],
                                                        opts.rounds), flush=True)
    compiled_act = torch.compile(
        lambda pre, alpha_rows, prob: glu_reference(torch, pre, alpha_rows, prob).to(torch.bfloat16))
    stream = torch.cuda.Stream()
    results = []
    with torch.cuda.stream(stream):
        for case in cases:
            results.append(run_case(torch, lib, case, opts, stream, compiled_act, alt_libs))
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
    summary = {
        "geomean_plain_eager_over_glu": geomean([r.get("ratios", {}).get("plain_eager_over_glu") for r in results]),
        "geomean_plain_eager_noprob_over_glu_noprob": geomean(
            [r.get("ratios", {}).get("plain_eager_noprob_over_glu_noprob") for r in results]),
        "worst_glu_over_plain": max((r["ratios"]["glu_over_plain"] for r in results if "ratios" in r), default=None),
        "min_mm_compiled_over_glu": min((r["ratios"]["mm_compiled_over_glu"] for r in results if "ratios" in r),
                                        default=None),
        "worst_dglu_over_dgrad": max((r["ratios"]["dglu_over_dgrad"] for r in results if "ratios" in r),
                                     default=None),
        "check_failures": [r["name"] for r in results if not r.get("check", {}).get("ok", False)
                           or not r.get("dglu_check", {}).get("ok", False)
                           or not r.get("train_check", {}).get("ok", True)
                           or not all(c["ok"] for c in r.get("alt_checks", {}).values())
                           or not all(c["ok"] for c in r.get("alt_kernel_checks", {}).values())
                           or not all(c["bitwise_equal"] for c in r.get("dynamic_checks", {}).values())
                           or not all(c["bitwise_equal"] for c in r.get("alt_margin_checks", {}).values())],
        "cases_with_errors": [r["name"] for r in results if r["errors"]],
    }
    with open(os.path.join(opts.out, "glu.json"), "w") as f:
        json.dump(dict(meta, cases=results, summary=summary), f, indent=1)

    print("%-18s %9s %9s %11s %11s  %8s %8s %8s  %9s %9s %8s  %s" % (
        "case", "glu ms", "plain ms", "plain+eag", "mm+compile", "glu/pln", "eag/glu", "cmp/glu", "dglu ms",
        "dgrad ms", "dglu/dgr", "check"))
    for r in results:
        if "median_ms" not in r:
            print("%-18s errors: %s" % (r["name"], r["errors"]))
            continue
        m, q = r["median_ms"], r["ratios"]
        print("%-18s %9.3f %9.3f %11.3f %11.3f  %8.3f %8.3f %8.3f  %9.3f %9.3f %8.3f  %.1e %.1e%s" % (
            r["name"], m["glu"], m["plain"], m["plain_eager"], m["mm_compiled"], q["glu_over_plain"],
            q["plain_eager_over_glu"], q["mm_compiled_over_glu"], m["dglu"], m["dgrad"], q["dglu_over_dgrad"],
            r["check"]["rel_err"], r["dglu_check"]["rel_err"],
            "" if r["check"]["ok"] and r["dglu_check"]["ok"] else " FAILED"))
    f = lambda v: "-" if v is None else "%.3f" % v  # noqa: E731
    print("geomean plain+eager / glu %s (target >= 1.3; without prob on either side %s); worst glu / plain %s "
          "(target <= 1.05); min mm+compiled / glu %s (target > 1); worst dglu / dgrad %s (target <= 1.10)" % (
              f(summary["geomean_plain_eager_over_glu"]), f(summary["geomean_plain_eager_noprob_over_glu_noprob"]),
              f(summary["worst_glu_over_plain"]), f(summary["min_mm_compiled_over_glu"]),
              f(summary["worst_dglu_over_dgrad"])))
    for r in results:
        if "median_ms" in r:
            print("%-18s without prob: glu %.3f ms, plain+eager %.3f ms, / glu %.3f" % (
                r["name"], r["median_ms"]["glu_noprob"], r["median_ms"]["plain_eager_noprob"],
                r["ratios"]["plain_eager_noprob_over_glu_noprob"]))
    for r in results:
        if "glu_train" in r.get("median_ms", {}):
            print("%-18s glu_train %.3f ms, / plain %.3f; check %.1e%s" % (
                r["name"], r["median_ms"]["glu_train"], r["ratios"]["glu_train_over_plain"],
                r["train_check"]["rel_err"], "" if r["train_check"]["ok"] else " FAILED"))
    for name, _ in opts.alt_libs:
        for r in results:
            if "glu_train_%s_over_glu_train" % name in r.get("ratios", {}):
                print("%-18s glu_train_%s / glu_train %.3f (bits %s)" % (
                    r["name"], name, r["ratios"]["glu_train_%s_over_glu_train" % name],
                    "equal" if r["alt_checks"][name]["train_bitwise_equal"] else "differ"))
            if "ratios" in r:
                c, q = r["alt_checks"][name], r["ratios"]
                print("%-18s glu_%s / glu %.3f, dglu_%s / dglu %.3f; outputs %s (rel err %.1e; glu bits %s, "
                      "dglu bits %s)" % (
                          r["name"], name, q["glu_%s_over_glu" % name], name, q["dglu_%s_over_dglu" % name],
                          "ok" if c["ok"] else "FAILED", c["rel_err"],
                          "equal" if c["glu_bitwise_equal"] else "differ",
                          "equal" if c["dglu_bitwise_equal"] else "differ"))
    for r in results:
        for timed, c in r.get("alt_kernel_checks", {}).items():
            op = timed.split("_", 1)[0]
            if "ratios" in r:
                print("%-18s %s / %s %.3f (%s); outputs %s (rel err %.1e; bits %s)" % (
                    r["name"], timed, op, r["ratios"]["%s_over_%s" % (timed, op)], c["kernel"][8:60],
                    "ok" if c["ok"] else "FAILED", c["rel_err"], "equal" if c["bitwise_equal"] else "differ"))
        for timed, why in r.get("alt_kernel_refused", {}).items():
            print("%-18s %s: no plan (%s)" % (r["name"], timed, why[:120]))
    for r in results:
        for timed, c in r.get("alt_margin_checks", {}).items():
            op = timed.split("_", 1)[0]
            if "ratios" in r:
                print("%-18s %s / %s %.3f (bits %s)" % (r["name"], timed, op, r["ratios"]["%s_over_%s" % (timed, op)],
                                                        "equal" if c["bitwise_equal"] else "DIFFER"))
    for r in results:
        if "glu_dynamic_over_glu" in r.get("ratios", {}):
            q, c = r["ratios"], r["dynamic_checks"]
            print("%-18s dynamic / static: glu %.3f, plain %.3f, dglu %.3f, dgrad %.3f; dynamic dglu / dgrad %.3f; "
                  "bits %s" % (r["name"], q["glu_dynamic_over_glu"], q["plain_dynamic_over_plain"],
                               q["dglu_dynamic_over_dglu"], q["dgrad_dynamic_over_dgrad"],
                               q["dglu_dynamic_over_dgrad_dynamic"],
                               "equal" if all(x["bitwise_equal"] for x in c.values()) else "DIFFER"))
    if summary["check_failures"]:
        print("FAILED checks: " + ", ".join(summary["check_failures"]))
    return 1 if summary["check_failures"] or summary["cases_with_errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
