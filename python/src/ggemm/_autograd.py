"""Gradients of ggemm.torch.grouped_gemm, computed with ggemm's own GEMMs.

For row r of expert g, with acc = a[r] · B_g (fp32), the forward is

    without bias:  u = acc * alpha[g];                       C = u;  D = u * prob[r]
    with bias:     u = acc * alpha[g] + prob[r] * bias[g];   C = D = u

so, from the upstream gradients dD (and dC where C was generated), the gradient of u is

    up = dD * prob[r] + dC   (without bias)        up = dD + dC   (with bias)

and d acc = alpha[g] * up. Then (sums over the expert's rows, rounding of C and D ignored):

    da      = alpha[g] * up @ B_g              the forward's weights read in the other layout
    dB_g    = alpha[g] * up[rows]^T a[rows]    ggemm.torch.wgrad ((K, N): a^T up, N-major)
    dprob   = alpha[g] * sum_n dD * acc        (with bias: sum_n up * bias[g])
    dalpha  = sum_rows sum_n up * acc
    dbias   = sum_rows up * prob[r]

acc comes from one more forward (alpha = prob = 1, fp32 output) when dprob or dalpha is asked
for. An alpha or prob given as None is 1 throughout and gets no gradient. Rows at or past the
last offset take no part: their gradients are zero. Nothing reads the offsets on the host, and
the per-expert sums use no atomics (bitwise reproducible).

Eager calls go through GroupedGemmFunction; under torch.compile the custom op's autograd
formula calls the op ggemm::grouped_gemm_backward, whose fake gives the gradients' shapes.
"""
from typing import Optional, Tuple

import torch
from torch.autograd.function import once_differentiable

from . import _rules as rules
from . import torch as _gt

_OTHER_LAYOUT = {"k_major": "n_major", "n_major": "k_major"}


def row_experts(padded_offsets, m):
    """Each row's expert (M,) int64 and whether the row is computed (below the last offset)."""
    rows = torch.arange(m, dtype=torch.int32, device=padded_offsets.device)
    expert = torch.searchsorted(padded_offsets, rows, right=True)
    expert = expert.clamp(max=padded_offsets.shape[0] - 1)
    return expert, rows < padded_offsets[-1]


def expert_sums(x, padded_offsets):
    """The sum of the rows of x (M, F) over each expert's rows: (L, F) fp32.

    Experts own whole 256-row blocks, so the rows are summed per block first; a prefix sum over
    the blocks in fp64 then gives each expert's sum as the difference at its two offsets. Rows
    at or past the last offset are never included. Fixed-order reductions: reproducible."""
    m, f = x.shape
    blocks = m // rules.ROW_ALIGNMENT
    per_block = x.reshape(blocks, rules.ROW_ALIGNMENT, f).sum(dim=1, dtype=torch.float64)
    prefix = torch.cat([per_block.new_zeros(1, f), per_block.cumsum(0)])
    ends = torch.clamp(padded_offsets.long() // rules.ROW_ALIGNMENT, 0, blocks)
    begins = torch.cat([ends.new_zeros(1), ends[:-1]])
    return (prefix[ends] - prefix[begins]).float()


# --- the GEMMs (module functions, so that CPU tests can stand in for them) ------------------------

def input_grad(up, padded_offsets, alpha, b, b_ptrs, k, weight_layout, dynamic_sched):
    """alpha[g] * up @ B_g, (M, K) bf16 (alpha None: 1): the forward's weights read in the other
    layout (an N x K row-major matrix is K x N read N-major, and the other way round). Rows past
    the last offset are not written."""
    return _gt._eager(up, padded_offsets, alpha, None, b, b_ptrs, k, None, torch.bfloat16,
                      torch.bfloat16, False, dynamic_sched, 0, 0, 0, 0, False,
                      _OTHER_LAYOUT[weight_layout]).d


def accumulators(a, padded_offsets, b, b_ptrs, n, weight_layout, dynamic_sched):
    """acc = a[r] · B_g, (M, N) fp32: the forward with alpha = prob = 1 (both None: the
    library's unscaled call). Rows past the last offset are not written."""
    return _gt._eager(a, padded_offsets, None, None, b, b_ptrs, n, None, torch.float32,
                      torch.float32, False, dynamic_sched, 0, 0, 0, 0, False, weight_layout).d


def weight_grad(up, a, padded_offsets, alpha, b, weight_layout):
    """dB in b's shape and dtype: (N, K) = alpha up^T a per expert, or (K, N) = alpha a^T up
    (alpha None: 1)."""
    if weight_layout == "n_major":
        return _gt.wgrad(a, up, padded_offsets, alpha, out_dtype=b.dtype)
    return _gt.wgrad(up, a, padded_offsets, alpha, out_dtype=b.dtype)


# --- the backward -----------------------------------------------------------------------------

def _by_row(x, prob):
    """x (M, F) with each row scaled by prob[r]; x itself where prob is None (every prob 1)."""
    return x if prob is None else x * prob[:, None]


def gradients(grad_d, grad_c, a, padded_offsets, alpha, prob, b, b_ptrs, bias, n, dynamic_sched,
              weight_layout, need_a, need_alpha, need_prob, need_b, need_bias):
    """(da, dalpha, dprob, db, dbias) of the forward on natural layouts; None where not asked
    for (dalpha and dprob are never asked for when alpha or prob is None). grad_c is None when C
    was not generated. Nothing is written in place."""
    m = a.shape[0]
    expert, live = row_experts(padded_offsets, m)
    dead = ~live[:, None]
    grad_d = grad_d.float()
    up = grad_d if bias is not None else _by_row(grad_d, prob)
    if grad_c is not None:
        up = up + grad_c.float()
    up = up.masked_fill(dead, 0.0)   # rows past the last offset were not computed
    da = dalpha = dprob = db = dbias = None
    if need_a or need_b:
        up_bf16 = up.to(torch.bfloat16).contiguous()
        if need_a:
            da = input_grad(up_bf16, padded_offsets, alpha, b, b_ptrs, a.shape[1],
                            weight_layout, dynamic_sched).masked_fill(dead, 0.0)
        if need_b:
            db = weight_grad(up_bf16, a, padded_offsets, alpha, b, weight_layout)
    acc = None
    if need_alpha or (need_prob and bias is None):
        acc = accumulators(a, padded_offsets, b, b_ptrs, n, weight_layout, dynamic_sched)
    if need_prob:
        if bias is None:
            dprob = (grad_d * acc).sum(dim=1)
            if alpha is not None:
                dprob = dprob * alpha[expert]
        else:
            dprob = (up * bias[expert].float()).sum(dim=1)
        dprob = dprob.masked_fill(~live, 0.0)
    if need_alpha:
        per_row = (up * acc).sum(dim=1).masked_fill(~live, 0.0)
        dalpha = expert_sums(per_row[:, None], padded_offsets)[:, 0].contiguous()
    if need_bias:
        dbias = expert_sums(_by_row(up, prob), padded_offsets).to(bias.dtype)
    return da, dalpha, dprob, db, dbias


def _save(ctx, tensors, n, generate_c, dynamic_sched, weight_layout):
    ctx.save_for_backward(*tensors)
    ctx.n, ctx.generate_c = n, generate_c
    ctx.dynamic_sched, ctx.weight_layout = dynamic_sched, weight_layout


def _needs(ctx):
    """Which of (a, alpha, prob, b, bias) want a gradient; b_ptrs weights never do, nor an
    alpha, prob or bias given as None."""
    need = ctx.needs_input_grad
    _, _, alpha, prob, b, _, bias = ctx.saved_tensors
    return (bool(need[0]), bool(need[2]) and alpha is not None,
            bool(need[3]) and prob is not None, bool(need[4]) and b is not None,
            bool(need[6]) and bias is not None)


def _upstream(ctx, grad_d, grad_c, a):
    """grad_d as given (zeros if autograd gave none); grad_c only where C was generated."""
    if grad_d is None:
        grad_d = a.new_zeros((a.shape[0], ctx.n), dtype=torch.float32)
    return grad_d, grad_c if ctx.generate_c else None


def _input_order(grads):
    """The gradients of (a, padded_offsets, alpha, prob, b, b_ptrs, bias)."""
    da, dalpha, dprob, db, dbias = grads
    return (da, None, dalpha, dprob, db, None, dbias)


class GroupedGemmFunction(torch.autograd.Function):
    """The eager differentiable call, on natural layouts (grouped_gemm makes the views)."""

    @staticmethod
    def forward(ctx, a, padded_offsets, alpha, prob, b, b_ptrs, bias, n, c_dtype, d_dtype,
                generate_c, dynamic_sched, tile_m, tile_n, cluster_m, sm_margin, check_status,
                weight_layout):
        d, c = _gt._eager(a, padded_offsets, alpha, prob, b, b_ptrs, n, bias, c_dtype, d_dtype,
                          generate_c, dynamic_sched, tile_m, tile_n, cluster_m, sm_margin,
                          check_status, weight_layout)
        _save(ctx, (a, padded_offsets, alpha, prob, b, b_ptrs, bias), d.shape[1], generate_c,
              dynamic_sched, weight_layout)
        if c is None:
            c = d.new_empty((0,), dtype=c_dtype)
        return d, c

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_d, grad_c):
        a, padded_offsets, alpha, prob, b, b_ptrs, bias = ctx.saved_tensors
        grad_d, grad_c = _upstream(ctx, grad_d, grad_c, a)
        grads = gradients(grad_d, grad_c, a, padded_offsets, alpha, prob, b, b_ptrs, bias, ctx.n,
                          ctx.dynamic_sched, ctx.weight_layout, *_needs(ctx))
        return _input_order(grads) + (None,) * 11


# --- the same backward as a custom op, for torch.compile --------------------------------------

def _grad_specs(a, alpha, prob, b, bias, needs):
    """(shape, dtype) of each gradient the op returns: the input's own where asked for, else an
    empty placeholder (an op returns tensors, not None)."""
    specs = []
    for t, need in zip((a, alpha, prob, b, bias), needs):
        dtype = t.dtype if t is not None else torch.float32
        specs.append((tuple(t.shape) if need else (0,), dtype))
    return specs


@torch.library.custom_op("ggemm::grouped_gemm_backward", mutates_args=(), device_types="cuda")
def _backward_op(grad_d: torch.Tensor, grad_c: Optional[torch.Tensor], a: torch.Tensor,
                 padded_offsets: torch.Tensor, alpha: Optional[torch.Tensor],
                 prob: Optional[torch.Tensor], b: Optional[torch.Tensor],
                 b_ptrs: Optional[torch.Tensor], bias: Optional[torch.Tensor], n: int,
                 dynamic_sched: bool, weight_layout: str, need_a: bool, need_alpha: bool,
                 need_prob: bool, need_b: bool, need_bias: bool
                 ) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    needs = (need_a, need_alpha, need_prob, need_b, need_bias)
    grads = gradients(grad_d, grad_c, a, padded_offsets, alpha, prob, b, b_ptrs, bias, n,
                      dynamic_sched, weight_layout, *needs)
    specs = _grad_specs(a, alpha, prob, b, bias, needs)
    return tuple(g if g is not None else a.new_empty(shape, dtype=dtype)
                 for g, (shape, dtype) in zip(grads, specs))


@_backward_op.register_fake
def _backward_fake(grad_d, grad_c, a, padded_offsets, alpha, prob, b, b_ptrs, bias, n,
                   dynamic_sched, weight_layout, need_a, need_alpha, need_prob, need_b,
                   need_bias):
    specs = _grad_specs(a, alpha, prob, b, bias,
                        (need_a, need_alpha, need_prob, need_b, need_bias))
    return tuple(a.new_empty(shape, dtype=dtype) for shape, dtype in specs)


def _op_setup_context(ctx, inputs, output):
    (a, padded_offsets, alpha, prob, b, b_ptrs, bias, n, _c_dtype, _d_dtype, generate_c,
     dynamic_sched, _tile_m, _tile_n, _cluster_m, _sm_margin, weight_layout, valid_rows) = inputs
    if valid_rows is not None:
        raise ValueError("valid_rows: expected None when an input requires grad (valid-row "
                         "counts are forward-only), got a tensor")
    _save(ctx, (a, padded_offsets, alpha, prob, b, b_ptrs, bias), n, generate_c, dynamic_sched,
          weight_layout)


def _op_backward(ctx, grad_d, grad_c):
    a, padded_offsets, alpha, prob, b, b_ptrs, bias = ctx.saved_tensors
    grad_d, grad_c = _upstream(ctx, grad_d, grad_c, a)
    needs = _needs(ctx)
    grads = _backward_op(grad_d, grad_c, a, padded_offsets, alpha, prob, b, b_ptrs, bias, ctx.n,
                         ctx.dynamic_sched, ctx.weight_layout, *needs)
    grads = tuple(g if need else None for g, need in zip(grads, needs))
    return _input_order(grads) + (None,) * 11


_gt._grouped_gemm_op.register_autograd(_op_backward, setup_context=_op_setup_context)
