"""ggemm for PyTorch: the grouped GEMM on CUDA tensors.

    d, c = ggemm.torch.grouped_gemm(a, padded_offsets, alpha, prob, b=b)

Eager calls go straight to the library; under torch.compile the same call is the custom op
`torch.ops.ggemm.grouped_gemm`, whose fake implementation gives the output shapes, so a graph
traces without breaks. Everything runs on the current stream, outputs and workspace come from
the caching allocator inside the call (under CUDA-graph capture: the graph's pool, valid for
every replay), and nothing synchronizes unless check_status=True asks for it.
"""
from typing import NamedTuple, Optional, Tuple

import torch

from . import _ggemm
from . import _library as lib
from . import _rules as rules
from ._library import GgemmError

__all__ = ["GroupedGemmResult", "grouped_gemm", "glu", "dglu", "glu_interleave_rows", "GroupedGemm", "b_ptrs",
           "wgrad", "GgemmError"]

DTYPES = rules.Dtypes(torch.bfloat16, torch.float16, torch.float32, torch.int32, torch.int64,
                      getattr(torch, "uint64", None))
_OUTPUT_DTYPES = (torch.bfloat16, torch.float16, torch.float32)


class GroupedGemmResult(NamedTuple):
    """The outputs of a call: d always, c when generate_c was asked for (else None)."""
    d: torch.Tensor
    c: Optional[torch.Tensor]


def _stream(device):
    return torch._C._cuda_getCurrentRawStream(device)


def _scheduler(dynamic_sched):
    return lib.SCHEDULER_DYNAMIC if dynamic_sched else lib.SCHEDULER_STATIC


def _ptr(t):
    return 0 if t is None else t.data_ptr()


class _StatusWord:
    """The opt-in device status word: allocated before the call, read (synchronizing) after."""

    def __init__(self, device):
        if torch.cuda.is_current_stream_capturing():
            raise ValueError("check_status: expected a call outside CUDA-graph capture (reading "
                             "the device status synchronizes), got a call during capture")
        self.word = torch.empty(1, dtype=torch.int32, device=device)

    def raise_if_set(self):
        value = int(self.word.item()) & 0xFFFFFFFF
        if value:
            raise lib.device_status_error(value)


def _enqueue(device, status_word, call):
    """Runs call(stream), one ggemm entry point returning its status, with `device` current and
    its current stream; raises GgemmError on a refusal and, with a status word, on what the
    kernel reported."""
    previous = torch.cuda.current_device()
    switch = previous != device
    if switch:
        torch.cuda.set_device(device)
    try:
        status = call(_stream(device))
    finally:
        if switch:
            torch.cuda.set_device(previous)
    if status:
        raise GgemmError(status)
    if status_word:
        status_word.raise_if_set()


def _launch(run, ops, a, b, b_ptrs, padded_offsets, alpha, prob, bias, c, d, workspace_bytes,
            workspace, check_status, valid_rows=None):
    """Enqueues one call through `run` (Desc.grouped_gemm or Plan.execute) on the current stream
    of the operands' device."""
    if workspace is None and workspace_bytes:
        workspace = torch.empty(workspace_bytes, dtype=torch.uint8, device=a.device)
    status_word = _StatusWord(a.device) if check_status else None
    _enqueue(ops.device, status_word, lambda stream: run(
        ops.m, a.data_ptr(), _ptr(b), _ptr(b_ptrs), padded_offsets.data_ptr(), _ptr(alpha),
        _ptr(prob), _ptr(bias), _ptr(c), d.data_ptr(), _ptr(workspace),
        workspace_bytes if workspace is not None else 0, _ptr(status_word.word) if status_word else 0,
        _ptr(valid_rows), stream))


def _plan_key(ops, c_code, d_code, generate_c, dynamic_sched, tile_m, tile_n, cluster_m, sm_margin):
    return (ops.device, ops.n, ops.k, ops.num_experts, ops.weight_mode, c_code, d_code,
            ops.bias_dtype, bool(generate_c), _scheduler(dynamic_sched), int(tile_m), int(tile_n),
            int(cluster_m), int(sm_margin), ops.weight_layout)


def _eager(a, padded_offsets, alpha, prob, b, b_ptrs, n, bias, c_dtype, d_dtype, generate_c,
           dynamic_sched, tile_m, tile_n, cluster_m, sm_margin, check_status, weight_layout,
           valid_rows=None):
    ops = rules.check_operands(DTYPES, a, padded_offsets, alpha, prob, b, b_ptrs, n, bias,
                               weight_layout=rules.weight_layout_code(weight_layout))
    rules.check_valid_rows(DTYPES, valid_rows, ops)
    c_code = rules.output_code(DTYPES, "c_dtype", c_dtype)
    d_code = rules.output_code(DTYPES, "d_dtype", d_dtype)
    desc, workspace_bytes = lib.desc_for(_plan_key(ops, c_code, d_code, generate_c, dynamic_sched,
                                                   tile_m, tile_n, cluster_m, sm_margin))
    shape = (ops.m, ops.n, 1) if ops.spec_a else (ops.m, ops.n)
    d = torch.empty(shape, dtype=d_dtype, device=a.device)
    c = torch.empty(shape, dtype=c_dtype, device=a.device) if generate_c else None
    _launch(desc.grouped_gemm, ops, a, b, b_ptrs, padded_offsets, alpha, prob, bias, c, d,
            workspace_bytes, None, check_status, valid_rows)
    return GroupedGemmResult(d, c)


# --- the custom op: natural layouts only (grouped_gemm makes the views), c empty without C ---

@torch.library.custom_op("ggemm::grouped_gemm", mutates_args=(), device_types="cuda")
def _grouped_gemm_op(a: torch.Tensor, padded_offsets: torch.Tensor, alpha: Optional[torch.Tensor],
                     prob: Optional[torch.Tensor], b: Optional[torch.Tensor],
                     b_ptrs: Optional[torch.Tensor], bias: Optional[torch.Tensor], n: int,
                     c_dtype: torch.dtype, d_dtype: torch.dtype, generate_c: bool,
                     dynamic_sched: bool, tile_m: int, tile_n: int, cluster_m: int,
                     sm_margin: int, weight_layout: str,
                     valid_rows: Optional[torch.Tensor] = None) -> Tuple[torch.Tensor, torch.Tensor]:
    d, c = _eager(a, padded_offsets, alpha, prob, b, b_ptrs, n, bias, c_dtype, d_dtype,
                  generate_c, dynamic_sched, tile_m, tile_n, cluster_m, sm_margin, False,
                  weight_layout, valid_rows)
    if c is None:
        c = torch.empty(0, dtype=c_dtype, device=a.device)
    return d, c


@_grouped_gemm_op.register_fake
def _grouped_gemm_fake(a, padded_offsets, alpha, prob, b, b_ptrs, bias, n, c_dtype, d_dtype,
                       generate_c, dynamic_sched, tile_m, tile_n, cluster_m, sm_margin,
                       weight_layout, valid_rows=None):
    m = a.shape[0]
    d = a.new_empty((m, n), dtype=d_dtype)
    c = a.new_empty((m, n) if generate_c else (0,), dtype=c_dtype)
    return d, c


def _natural_views(ops, a, prob, b, bias):
    """The natural layouts of operands given as the specification's views (same memory)."""
    if ops.spec_a:
        a = a.select(2, 0)
    if ops.spec_prob:
        prob = prob.select(2, 0).select(1, 0)
    if b is not None and ops.spec_b:
        b = b.permute(2, 0, 1)
    if bias is not None and ops.spec_bias:
        bias = bias.t()
    return a, prob, b, bias


def _result(ops, d, c, generate_c):
    """Outputs in the layout a came in; c None unless generated."""
    if ops.spec_a:
        d = d.unsqueeze(-1)
        c = c.unsqueeze(-1) if generate_c else c
    return GroupedGemmResult(d, c if generate_c else None)


def _traced(a, padded_offsets, alpha, prob, b, b_ptrs, n, bias, c_dtype, d_dtype, generate_c,
            dynamic_sched, tile_m, tile_n, cluster_m, sm_margin, weight_layout, valid_rows=None):
    """The torch.compile path: shape rules on the symbolic tensors, natural views, the op."""
    ops = rules.check_operands(DTYPES, a, padded_offsets, alpha, prob, b, b_ptrs, n, bias,
                               addresses=False,
                               weight_layout=rules.weight_layout_code(weight_layout))
    rules.check_valid_rows(DTYPES, valid_rows, ops, addresses=False)
    rules.output_code(DTYPES, "c_dtype", c_dtype)
    rules.output_code(DTYPES, "d_dtype", d_dtype)
    a, prob, b, bias = _natural_views(ops, a, prob, b, bias)
    d, c = _grouped_gemm_op(a, padded_offsets, alpha, prob, b, b_ptrs, bias, ops.n, c_dtype,
                            d_dtype, bool(generate_c), bool(dynamic_sched), int(tile_m),
                            int(tile_n), int(cluster_m), int(sm_margin), weight_layout,
                            valid_rows)
    return _result(ops, d, c, generate_c)


def _wants_grad(*tensors):
    return torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in tensors)


def _differentiable(a, padded_offsets, alpha, prob, b, b_ptrs, n, bias, c_dtype, d_dtype,
                    generate_c, dynamic_sched, tile_m, tile_n, cluster_m, sm_margin, check_status,
                    weight_layout):
    """The eager call when an input requires grad: the autograd function on natural views."""
    ops = rules.check_operands(DTYPES, a, padded_offsets, alpha, prob, b, b_ptrs, n, bias,
                               weight_layout=rules.weight_layout_code(weight_layout))
    a, prob, b, bias = _natural_views(ops, a, prob, b, bias)
    d, c = _autograd.GroupedGemmFunction.apply(
        a, padded_offsets, alpha, prob, b, b_ptrs, bias, ops.n, c_dtype, d_dtype,
        bool(generate_c), bool(dynamic_sched), int(tile_m), int(tile_n), int(cluster_m),
        int(sm_margin), check_status, weight_layout)
    return _result(ops, d, c, generate_c)


def grouped_gemm(a, padded_offsets, alpha=None, prob=None, b=None, b_ptrs=None, n=None, bias=None,
                 *, c_dtype=torch.bfloat16, d_dtype=torch.bfloat16, generate_c=False,
                 dynamic_sched=False, tile_m=0, tile_n=0, cluster_m=0, sm_margin=0,
                 check_status=False, weight_layout="k_major", valid_rows=None):
    """The grouped GEMM in one call; returns GroupedGemmResult(d, c).

    a (M, K) bf16; padded_offsets (L,) int32 cumulative row ends on the device; alpha (L,) fp32
    and prob (M,) fp32, each or both None: every alpha (prob) is 1, the same bits as a tensor of
    ones (with both None, a call without bias or C skips the two multiplications); weights
    either b (L, N, K) bf16 or b_ptrs (L,) int64 device addresses of (N, K) bf16 matrices
    with n = N; bias (L, N) optional. weight_layout="n_major" takes each expert's weights as
    K x N instead: b (L, K, N), b_ptrs to (K, N) matrices. A layer's forward weights W (L, out, in)
    serve its input gradient that way: dX = grouped_gemm(dY, ..., b=W, weight_layout="n_major")
    with K = out and N = in. The specification's 3-D views of the same memory are accepted too
    (then d and c come as (M, N, 1)). Refusals raise ValueError before anything is launched; the
    library's own refusals raise ggemm.GgemmError.

    The plan for (device, N, K, L, dtypes, modes, overrides) is made on first use and cached;
    rows at or past padded_offsets[-1] of d and c are not written (torch.empty leaves them as
    the allocator had them). check_status=True reads the device status word after the call
    (synchronizing; not allowed during CUDA-graph capture or torch.compile) and raises
    GgemmError on bad offsets or weight pointers (or clamped valid_rows counts).

    valid_rows: optional (L,) int32 CUDA tensor of per-expert valid-row counts (not with an
    SM100 CTA-pair plan):
    rows [begin_g + valid_rows[g], end_g) of each segment are neither computed nor written (in
    d and c they hold whatever torch.empty left), tiles wholly past a count are not run. Counts
    outside [0, segment size] are clamped on the device (check_status reports them). The
    fixed-capacity expert-parallel layout (L, capacity, K) with capacity a multiple of 256 is
    passed as a = x.view(L * capacity, K), padded_offsets = capacity * arange(1, L + 1),
    valid_rows = the token counts. Forward only: refused (ValueError) when an input requires
    grad, since the rows past the counts of d are not a function of the inputs.

    Autograd: with inputs that require grad, gradients reach a, b (dense weights only), prob,
    alpha and bias (those given as tensors), computed by ggemm's own GEMMs (docs/python.md,
    "Autograd"); gradients of rows at or past padded_offsets[-1] are zero."""
    if valid_rows is not None and _wants_grad(a, alpha, prob, b, bias):
        rules.refuse("valid_rows", "None when an input requires grad (valid-row counts are "
                     "forward-only: the rows past the counts are left unwritten, so they have no "
                     "gradient to define; use torch.no_grad() or detach the inputs)", "a tensor")
    if torch.compiler.is_compiling():
        if check_status:
            raise ValueError("check_status: expected False under torch.compile (reading the "
                             "device status synchronizes), got True")
        return _traced(a, padded_offsets, alpha, prob, b, b_ptrs, n, bias, c_dtype, d_dtype,
                       generate_c, dynamic_sched, tile_m, tile_n, cluster_m, sm_margin,
                       weight_layout, valid_rows)
    if _wants_grad(a, alpha, prob, b, bias):
        return _differentiable(a, padded_offsets, alpha, prob, b, b_ptrs, n, bias, c_dtype,
                               d_dtype, generate_c, dynamic_sched, tile_m, tile_n, cluster_m,
                               sm_margin, check_status, weight_layout)
    return _eager(a, padded_offsets, alpha, prob, b, b_ptrs, n, bias, c_dtype, d_dtype,
                  generate_c, dynamic_sched, tile_m, tile_n, cluster_m, sm_margin, check_status,
                  weight_layout, valid_rows)


# --- the fused GLU forward ---------------------------------------------------------------------------

def _glu_eager(a, padded_offsets, alpha, prob, b, b_ptrs, n, bias, settings, c_dtype, d_dtype,
               generate_c, dynamic_sched, tile_n, sm_margin, check_status, weight_layout):
    ops = rules.check_operands(DTYPES, a, padded_offsets, alpha, prob, b, b_ptrs, n, bias,
                               weight_layout=rules.weight_layout_code(weight_layout))
    rules.check_glu_width(ops.n)
    c_code = rules.output_code(DTYPES, "c_dtype", c_dtype)
    d_code = rules.output_code(DTYPES, "d_dtype", d_dtype)
    key = _plan_key(ops, c_code, d_code, generate_c, dynamic_sched, 0, tile_n, 0, sm_margin)
    desc, workspace_bytes = lib.desc_for(key + tuple(settings))
    d = torch.empty((ops.m, ops.n // 2), dtype=d_dtype, device=a.device)
    c = torch.empty((ops.m, ops.n), dtype=c_dtype, device=a.device) if generate_c else None
    _launch(desc.grouped_gemm, ops, a, b, b_ptrs, padded_offsets, alpha, prob, bias, c, d,
            workspace_bytes, None, check_status)
    if ops.spec_a:
        d = d.unsqueeze(-1)
        c = c.unsqueeze(-1) if generate_c else c
    return GroupedGemmResult(d, c)


@torch.library.custom_op("ggemm::glu", mutates_args=(), device_types="cuda")
def _glu_op(a: torch.Tensor, padded_offsets: torch.Tensor, alpha: Optional[torch.Tensor],
            prob: Optional[torch.Tensor], b: Optional[torch.Tensor], b_ptrs: Optional[torch.Tensor],
            bias: Optional[torch.Tensor], n: int, activation: int, glu_scale: float,
            glu_limit: float, glu_offset: float, c_dtype: torch.dtype, d_dtype: torch.dtype,
            generate_c: bool, dynamic_sched: bool, tile_n: int, sm_margin: int,
            weight_layout: str) -> Tuple[torch.Tensor, torch.Tensor]:
    d, c = _glu_eager(a, padded_offsets, alpha, prob, b, b_ptrs, n, bias,
                      (activation, glu_scale, glu_limit, glu_offset), c_dtype, d_dtype, generate_c,
                      dynamic_sched, tile_n, sm_margin, False, weight_layout)
    if c is None:
        c = torch.empty(0, dtype=c_dtype, device=a.device)
    return d, c


@_glu_op.register_fake
def _glu_fake(a, padded_offsets, alpha, prob, b, b_ptrs, bias, n, activation, glu_scale, glu_limit,
              glu_offset, c_dtype, d_dtype, generate_c, dynamic_sched, tile_n, sm_margin,
              weight_layout):
    m = a.shape[0]
    d = a.new_empty((m, n // 2), dtype=d_dtype)
    c = a.new_empty((m, n) if generate_c else (0,), dtype=c_dtype)
    return d, c


def glu(a, padded_offsets, alpha=None, prob=None, b=None, b_ptrs=None, n=None, bias=None, *,
        activation="swiglu", glu_scale=1.702, glu_limit=7.0, glu_offset=1.0,
        c_dtype=torch.bfloat16, d_dtype=torch.bfloat16, generate_c=False, dynamic_sched=False,
        tile_n=0, sm_margin=0, check_status=False, weight_layout="k_major"):
    """The grouped GEMM with a fused gated activation; returns GroupedGemmResult(d, c).

    Operands as grouped_gemm's (alpha and prob may be None: every value 1), with N (b's rows,
    or n with b_ptrs) the pre-activation width, a multiple of 64, in interleaved blocks: columns
    64j .. 64j+31 are a gate block, 64j+32 .. 64j+63 its up block (glu_interleave_rows reorders
    [gate | up] halves). For row r of expert g:

        pre = alpha[g] * (a @ B_g^T)[r] (+ bias[g])        fp32; the bias is not scaled by prob
        d[r, 32j + i] = prob[r] * act(pre[64j + i], pre[64j + 32 + i])        d is (M, N/2)
        c = pre (M, N), with generate_c

    activation "swiglu": act = silu(gate) * up; "geglu_clamped": g = min(gate, glu_limit),
    u = clamp(up, -glu_limit, glu_limit), act = (u + glu_offset) * g * sigmoid(glu_scale * g)
    (defaults 1.702, 7, 1). SM90 (the SM100 kernels have it too, never run). Refusals
    raise ValueError before anything is launched. No autograd: inputs that require grad are
    refused (use grouped_gemm and the activation in PyTorch to train)."""
    settings = rules.glu_settings(activation, glu_scale, glu_limit, glu_offset)
    if torch.compiler.is_compiling():
        if check_status:
            raise ValueError("check_status: expected False under torch.compile (reading the "
                             "device status synchronizes), got True")
        ops = rules.check_operands(DTYPES, a, padded_offsets, alpha, prob, b, b_ptrs, n, bias,
                                   addresses=False,
                                   weight_layout=rules.weight_layout_code(weight_layout))
        rules.check_glu_width(ops.n)
        rules.output_code(DTYPES, "c_dtype", c_dtype)
        rules.output_code(DTYPES, "d_dtype", d_dtype)
        a, prob, b, bias = _natural_views(ops, a, prob, b, bias)
        d, c = _glu_op(a, padded_offsets, alpha, prob, b, b_ptrs, bias, ops.n, *settings, c_dtype,
                       d_dtype, bool(generate_c), bool(dynamic_sched), int(tile_n), int(sm_margin),
                       weight_layout)
        return _result(ops, d, c, generate_c)
    if _wants_grad(a, alpha, prob, b, bias):
        rules.refuse("a, b, alpha, prob, bias", "tensors that do not require grad (glu has no "
                     "backward yet)", "a tensor that requires grad")
    return _glu_eager(a, padded_offsets, alpha, prob, b, b_ptrs, n, bias, settings, c_dtype,
                      d_dtype, generate_c, dynamic_sched, int(tile_n), int(sm_margin), check_status,
                      weight_layout)


def dglu(dy, padded_offsets, alpha, prob, pre, b=None, b_ptrs=None, n=None, *, activation="swiglu",
         glu_scale=1.702, glu_limit=7.0, glu_offset=1.0, d_dtype=torch.bfloat16, dynamic_sched=False,
         tile_n=0, sm_margin=0, check_status=False, weight_layout="n_major"):
    """The fused GLU's backward with the next layer's input-gradient GEMM; returns (d_pre, d_prob).

    dy (M, K) bf16 is the upstream gradient and b that layer's weights, by default as its forward
    stores them (weight_layout="n_major": b (L, K, N)); N is the activation's width, a multiple
    of 32. pre (M, 2N) is the forward's saved pre-activation (glu's c). With R = alpha[g] * dy @ B_g
    (fp32): d_pre (M, 2N) of d_dtype = R * prob * d act / d (gate, up), interleaved as pre;
    d_prob (M,) fp32 = sum over columns of R * act (0 for rows no expert computes). alpha and
    prob may be None (every value 1; d_prob is computed all the same). activation and constants
    as the forward's. Bitwise reproducible (ordered sums, no atomics); SM90 only."""
    settings = rules.glu_settings(activation, glu_scale, glu_limit, glu_offset)
    layout = rules.weight_layout_code(weight_layout)
    ops = rules.check_operands(DTYPES, dy, padded_offsets, alpha, prob, b, b_ptrs, n, None,
                               weight_layout=layout)
    pre_code = rules.check_glu_pre(DTYPES, pre, ops)
    d_code = rules.output_code(DTYPES, "d_dtype", d_dtype)
    if _wants_grad(dy, alpha, prob, b, pre):
        rules.refuse("dy, b, alpha, prob, pre", "tensors that do not require grad (dglu is itself "
                     "a backward)", "a tensor that requires grad")
    key = _plan_key(ops, lib.DTYPE_BF16, d_code, False, dynamic_sched, 0, tile_n, 0, sm_margin)
    desc, _ = lib.desc_for(key + tuple(settings) + (1, pre_code))
    status, workspace_bytes = desc.workspace_size(ops.m)  # grows with M
    lib.check(status)
    workspace = (torch.empty(workspace_bytes, dtype=torch.uint8, device=dy.device)
                 if workspace_bytes else None)
    d_pre = torch.empty((ops.m, 2 * ops.n), dtype=d_dtype, device=dy.device)
    d_prob = torch.empty(ops.m, dtype=torch.float32, device=dy.device)
    status_word = _StatusWord(dy.device) if check_status else None
    _enqueue(ops.device, status_word, lambda stream: desc.dglu(
        ops.m, dy.data_ptr(), _ptr(b), _ptr(b_ptrs), padded_offsets.data_ptr(), _ptr(alpha),
        _ptr(prob), pre.data_ptr(), d_pre.data_ptr(), d_prob.data_ptr(), _ptr(workspace),
        workspace_bytes if workspace is not None else 0, _ptr(status_word.word) if status_word else 0,
        stream))
    return d_pre, d_prob


def glu_interleave_rows(n):
    """The row permutation (a (n,) int64 CPU tensor) that takes weights stored as [gate | up]
    halves to glu's interleaved blocks: w_interleaved = w_halves[:, rows] for (L, N, K) weights
    (w_halves[:, :, rows] for N-major (L, K, N) ones); a [gate | up] bias the same way."""
    return torch.tensor(rules.glu_interleave_rows(n), dtype=torch.int64)


# --- discrete weights ------------------------------------------------------------------------------

def b_ptrs(weights, device=None):
    """The (L,) int64 tensor of device addresses of `weights`, a sequence of L (N, K) bf16
    contiguous CUDA tensors ((K, N) for N-major weights), for the discrete weight mode.

    Keep-alive rule: the kernel reads the weights through raw addresses, which keep nothing
    alive. The returned tensor holds a reference to `weights` (as `.weights`), so the
    tensors live at least as long as it does; but every call that uses it, and every replay of
    a CUDA graph that captured such a call, must finish before the weights are freed, moved or
    resized, and before the pointer tensor itself is dropped. Building it copies L addresses to
    the device (synchronously): do it once, outside graph capture, and reuse it."""
    weights = tuple(weights)
    if not weights:
        rules.refuse("weights", "at least one expert's (N, K) tensor", "an empty sequence")
    first = weights[0]
    for i, w in enumerate(weights):
        name = f"weights[{i}]"
        rules.check_dtype(name, w, torch.bfloat16, "bfloat16")
        if w.dim() != 2 or not w.is_contiguous() or tuple(w.shape) != tuple(first.shape):
            rules.refuse(name, f"a contiguous (N, K) or (K, N) = {tuple(first.shape)} tensor",
                         f"shape {tuple(w.shape)} with strides {tuple(w.stride())}")
    for i, w in enumerate(weights):
        name = f"weights[{i}]"
        if not w.is_cuda:
            rules.refuse(name, "a CUDA tensor", "a CPU tensor")
        rules.check_placement(name, w, first.get_device(), rules.DATA_ALIGNMENT, True,
                              device_of="weights[0]")
    ptrs = torch.tensor([w.data_ptr() for w in weights], dtype=torch.int64,
                        device=device if device is not None else first.device)
    ptrs.weights = weights
    return ptrs


# --- the class: sample tensors -> check_support() -> compile() -> execute() -----------------------

class _PointerStandIn:
    """The metadata of a (L,) int64 b_ptrs tensor, for a discrete plan made without one."""

    def __init__(self, num_experts, device):
        self.shape = (num_experts,)
        self.dtype = torch.int64
        self.is_cuda = True
        self._device = device

    def stride(self):
        return (1,)

    def get_device(self):
        return self._device

    def data_ptr(self):
        return 0


class GroupedGemm:
    """A grouped GEMM planned once from sample tensors, then executed on caller-provided outputs.

        op = GroupedGemm(sample_a=a, sample_padded_offsets=offsets, sample_alpha=alpha,
                         sample_prob=prob, sample_d=d, sample_b=b)
        op.check_support()      # True, or ValueError / GgemmError saying why not
        op.compile()            # the plan
        op.execute(a=a, d=d, padded_offsets=offsets, alpha=alpha, prob=prob, b=b)

    Discrete weights: instead of sample_b give num_experts=L, b_shape=(N, K) (and b_dtype,
    bfloat16) or sample_b_ptrs, and pass b_ptrs to execute. The plan serves every M up to
    m_capacity (default: the sample's M). weight_layout="n_major": each expert's weights are
    K x N (sample_b (L, K, N), b_shape (K, N)). alpha and prob (samples and execute's) may be
    None, every value 1: the plan does not depend on them, so each execute chooses."""

    def __init__(self, sample_a, sample_padded_offsets, sample_alpha=None, sample_prob=None,
                 sample_d=None, sample_c=None, sample_b=None, sample_bias=None, *,
                 sample_b_ptrs=None, num_experts=None, b_shape=None, b_dtype=torch.bfloat16,
                 c_dtype=None, d_dtype=None, generate_c=False, dynamic_sched=False,
                 m_capacity=None, tile_m=0, tile_n=0, cluster_m=0, sm_margin=0,
                 weight_layout="k_major"):
        self._samples = (sample_a, sample_padded_offsets, sample_alpha, sample_prob, sample_b,
                         sample_b_ptrs, sample_bias, sample_c, sample_d)
        self._discrete = (num_experts, b_shape, b_dtype)
        self.generate_c = bool(generate_c)
        self.dynamic_sched = bool(dynamic_sched)
        self.c_dtype = c_dtype if c_dtype is not None else (
            sample_c.dtype if sample_c is not None else torch.bfloat16)
        self.d_dtype = d_dtype if d_dtype is not None else (
            sample_d.dtype if sample_d is not None else torch.bfloat16)
        self._m_capacity = m_capacity
        self._overrides = (int(tile_m), int(tile_n), int(cluster_m), int(sm_margin))
        self.weight_layout = rules.weight_layout_code(weight_layout)
        self._ops = None
        self._plan = None
        self.workspace_bytes = None

    def _check_samples(self):
        a, offsets, alpha, prob, b, b_ptrs, bias, c, d = self._samples
        num_experts, b_shape, b_dtype = self._discrete
        n = None
        if b is None and b_ptrs is None:
            if num_experts is None or b_shape is None:
                rules.refuse("sample_b", "sample_b, or num_experts with b_shape (discrete)",
                             "neither")
            if b_dtype != torch.bfloat16:
                rules.refuse("b_dtype", "torch.bfloat16", f"{b_dtype}")
            n_major = self.weight_layout == lib.WEIGHT_LAYOUT_N_MAJOR
            if n_major:
                k, n = b_shape
            else:
                n, k = b_shape
            if a is not None and k != a.shape[1]:
                rules.refuse("b_shape", f"{'(K, N)' if n_major else '(N, K)'} with K = "
                             f"{a.shape[1]} (a's columns)", f"{tuple(b_shape)}")
            if num_experts != offsets.shape[0]:
                rules.refuse("num_experts", f"L = {offsets.shape[0]} (padded_offsets' length)",
                             f"{num_experts}")
            b_ptrs = _PointerStandIn(num_experts, a.get_device() if a.is_cuda else -1)
        elif b_ptrs is not None and b_shape is not None:
            n = b_shape[1] if self.weight_layout == lib.WEIGHT_LAYOUT_N_MAJOR else b_shape[0]
        ops = rules.check_operands(DTYPES, a, offsets, alpha, prob, b, b_ptrs, n, bias,
                                   weight_layout=self.weight_layout)
        self.c_code = rules.output_code(DTYPES, "c_dtype", self.c_dtype)
        self.d_code = rules.output_code(DTYPES, "d_dtype", self.d_dtype)
        if d is not None:
            rules.check_output(DTYPES, "sample_d", d, ops, self.d_dtype)
        if c is not None:
            rules.check_output(DTYPES, "sample_c", c, ops, self.c_dtype)
        if self.generate_c and c is None and self.c_dtype is None:
            rules.refuse("sample_c", "a C sample or c_dtype with generate_c", "neither")
        capacity = self._m_capacity if self._m_capacity is not None else max(ops.m, 256)
        if capacity < 256 or capacity % rules.ROW_ALIGNMENT or capacity < ops.m:
            rules.refuse("m_capacity", f"a multiple of 256, >= 256 and >= M = {ops.m}", capacity)
        self.m_capacity = capacity
        return ops

    def check_support(self):
        """Checks the samples and asks the library for a plan on their device: True, or raises
        ValueError (a tensor rule) or GgemmError (the library or the device refuses)."""
        if self._plan is None:
            ops = self._check_samples()
            desc = _ggemm.Desc(*_plan_key(ops, self.c_code, self.d_code, self.generate_c,
                                          self.dynamic_sched, *self._overrides))
            plan = _ggemm.Plan()
            lib.check(plan.create(desc, self.m_capacity))
            status, self.workspace_bytes = plan.workspace_size()
            lib.check(status)
            self._ops, self._plan = ops, plan
        return True

    def compile(self):
        """Makes the plan (once); returns self."""
        self.check_support()
        return self

    def describe(self):
        """The library's account of the plan: kernel, tiles, cluster, stages, scheduler, grid."""
        self.compile()
        status, text = self._plan.describe()
        lib.check(status)
        return text

    def execute(self, a, d, padded_offsets, alpha=None, prob=None, b=None, b_ptrs=None, bias=None,
                c=None, workspace=None, check_status=False, valid_rows=None):
        """Enqueues the call on the current stream, writing d (and c with generate_c); returns
        GroupedGemmResult(d, c). Any M up to m_capacity (a multiple of 256) is accepted.
        valid_rows: optional (L,) int32 per-expert valid-row counts, as in grouped_gemm (rows
        past them are left as they were in d and c).
        workspace: optional uint8 CUDA tensor of at least `workspace_bytes`; by default one is
        taken from the caching allocator for this call."""
        if self._plan is None:
            self.compile()
        plan_ops = self._ops
        ops = rules.check_operands(DTYPES, a, padded_offsets, alpha, prob, b, b_ptrs,
                                   plan_ops.n if b_ptrs is not None else None, bias,
                                   weight_layout=self.weight_layout)
        if ops[1:] != plan_ops[1:] or ops.m > self.m_capacity:
            if ops.m > self.m_capacity:
                rules.refuse("a", f"M <= m_capacity = {self.m_capacity}", f"M = {ops.m}")
            rules.check_same_problem(plan_ops, ops)
        rules.check_output(DTYPES, "d", d, ops, self.d_dtype)
        rules.check_valid_rows(DTYPES, valid_rows, ops)
        if self.generate_c:
            rules.check_output(DTYPES, "c", c, ops, self.c_dtype)
        if workspace is not None:
            if (workspace.dtype != torch.uint8 or workspace.dim() != 1
                    or workspace.numel() < self.workspace_bytes):
                rules.refuse("workspace", f"a uint8 vector of >= {self.workspace_bytes} bytes",
                             f"{workspace.dtype} of shape {tuple(workspace.shape)}")
            rules.check_placement("workspace", workspace, ops.device, 128, True)
        _launch(self._plan.execute, ops, a, b, b_ptrs, padded_offsets, alpha, prob, bias,
                c if self.generate_c else None, d, self.workspace_bytes, workspace, check_status,
                valid_rows)
        return GroupedGemmResult(d, c if self.generate_c else None)


# --- the weight gradient ---------------------------------------------------------------------------

def wgrad(x1, x2, padded_offsets, alpha=None, out=None, *, out_dtype=torch.float32,
          accumulate=False, dynamic_sched=True, sm_margin=0, check_status=False):
    """The weight gradient grouped along the rows: for each expert g with rows
    [padded_offsets[g-1], padded_offsets[g]) of x1 (M, P) and x2 (M, Q), both bf16,

        W_g = alpha[g] * x1[rows].T @ x2[rows]        (P, Q), fp32 accumulation

    For a layer's dW_g = dY_g^T X_g pass x1 = dY, x2 = X. alpha (L,) fp32 or None (all ones).
    out: None (a new (L, P, Q) tensor of out_dtype is returned), an (L, P, Q) tensor written in
    place, or a list of L (P, Q) tensors (per-expert buffers, e.g. each parameter's main_grad).
    accumulate=True adds into out (fp32 main_grad style: one rounding of old + new); an expert
    with no rows is then left untouched, while without accumulate it gets zeros. Returns out (or
    the new tensor). Offsets stay on the device: nothing synchronizes unless check_status=True
    (not allowed during graph capture), which raises GgemmError on bad offsets or pointers.
    dynamic_sched (default True): tiles are claimed from a counter, so CTAs stay busy when
    experts hold uneven numbers of rows (a tile costs its expert's rows); False deals them over
    the grid by a fixed rule. The results are the same bit for bit.

    Per-expert buffers: their addresses are copied to the device on every call (an (L,) int64
    tensor); keep the tensors alive until the call has run."""
    ops = rules.check_wgrad_operands(DTYPES, x1, x2, padded_offsets, alpha, out, out_dtype,
                                     bool(accumulate))
    key = (ops.device, lib.wgrad_capacity(ops.m), ops.p, ops.q, ops.num_experts, ops.out_dtype,
           ops.output_mode, bool(accumulate), _scheduler(dynamic_sched), int(sm_margin))
    plan, workspace_bytes = lib.wgrad_plan_for(key)
    result = out
    if out is None:
        result = torch.empty((ops.num_experts, ops.p, ops.q), dtype=out_dtype, device=x1.device)
    out_ptrs = None
    if ops.output_mode == 1:
        out_ptrs = torch.tensor([t.data_ptr() for t in out], dtype=torch.int64).to(x1.device,
                                                                                    non_blocking=True)
    workspace = (torch.empty(workspace_bytes, dtype=torch.uint8, device=x1.device)
                 if workspace_bytes else None)
    status_word = _StatusWord(x1.device) if check_status else None
    _enqueue(ops.device, status_word, lambda stream: plan.execute(
        ops.m, x1.data_ptr(), x2.data_ptr(), padded_offsets.data_ptr(), _ptr(alpha),
        0 if out_ptrs is not None else result.data_ptr(), _ptr(out_ptrs), _ptr(workspace),
        workspace_bytes, _ptr(status_word.word) if status_word else 0, stream))
    return result


# The autograd formulas (the eager Function and the custom op's), which use the functions above.
from . import _autograd  # noqa: E402
