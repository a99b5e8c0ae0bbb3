"""The tensor rules of the operation, checked before anything is launched.

Framework-agnostic: a tensor here is anything with torch's metadata protocol (`shape`,
`stride()`, `dtype`, `is_cuda`, `get_device()`, `data_ptr()`), and the dtypes to compare with
come in a `Dtypes` table from the framework module. Each refusal is a ValueError that names the
tensor, what was expected and what was given. The library checks the same rules again (and the
device-dependent ones only it can); these give the Python caller a ValueError before the call.

Two layouts are accepted for the same bytes (strides are checked, nothing is copied):

    tensor   natural (row-major)          specification view
    a        (M, K)     (K, 1)            (M, K, 1)  (K, 1, M*K)
    b        (L, N, K)  (N*K, K, 1)       (N, K, L)  (K, 1, N*K)
    bias     (L, N)     (N, 1)            (N, L)     (1, N)
    prob     (M,)       (1,)              (M, 1, 1)  (1, 1, 1)
    c, d     (M, N)     (N, 1)            (M, N, 1)  (N, 1, M*N)

A stride of a dimension of size 1 is never used to form an address, so it is not checked.

With N-major weights (weight_layout "n_major") each B_g is K x N: b is (L, K, N) with strides
(K*N, N, 1), natural layout only, and b_ptrs entries point at (K, N) matrices.
"""
import math
from typing import Any, NamedTuple

from . import _library as lib

ROW_ALIGNMENT = 256      # M and every offset
MAX_EXPERTS = 1024
DATA_ALIGNMENT = 16      # bytes, every data pointer
POINTER_ALIGNMENT = 8    # bytes, the b_ptrs array


class Dtypes(NamedTuple):
    """A framework's dtype objects for the roles the rules compare against."""
    bf16: Any
    fp16: Any
    fp32: Any
    int32: Any
    int64: Any
    uint64: Any = None

    def output_code(self, dtype):
        """The GGEMM_DTYPE_* of an output or bias dtype, or None."""
        if dtype == self.bf16:
            return lib.DTYPE_BF16
        if dtype == self.fp16:
            return lib.DTYPE_FP16
        if dtype == self.fp32:
            return lib.DTYPE_FP32
        return None


class Operands(NamedTuple):
    """What a checked call is: sizes, device, modes and which layout each tensor came in."""
    m: int
    n: int
    k: int
    num_experts: int
    device: int
    weight_mode: int
    bias_dtype: int
    spec_a: bool       # a (and so the outputs) in the specification's 3-D view
    spec_b: bool       # b as (N, K, L)
    spec_bias: bool    # bias as (N, L)
    spec_prob: bool    # prob as (M, 1, 1)
    weight_layout: int = lib.WEIGHT_LAYOUT_K_MAJOR  # GGEMM_WEIGHT_LAYOUT_*


def refuse(name, expected, given):
    raise ValueError(f"{name}: expected {expected}, got {given}")


def _fits(shape, strides, expected):
    """True when strides equal expected on every dimension of size other than 1."""
    if strides == expected:
        return True
    return all(s == e or d == 1 for d, s, e in zip(shape, strides, expected))


def _where(t):
    return "a CUDA tensor" if t.is_cuda else "a CPU tensor"


def check_placement(name, t, device, alignment, addresses, device_of="a"):
    """t lives on CUDA device `device` (that of `device_of`), and (with addresses) its data is
    aligned."""
    if not t.is_cuda or t.get_device() != device:
        refuse(name, f"a tensor on cuda:{device} (the device of {device_of})",
               f"{_where(t)} on device {t.get_device()}")
    if addresses:
        ptr = t.data_ptr()
        if ptr % alignment:
            refuse(name, f"data aligned to {alignment} bytes", f"address 0x{ptr:x}")


def check_dtype(name, t, expected, label):
    if t.dtype != expected:
        refuse(name, f"dtype {label}", f"{t.dtype}")


def check_vector(name, t, length, length_label):
    shape = t.shape
    if len(shape) != 1 or shape[0] != length or (length > 1 and t.stride()[0] != 1):
        refuse(name, f"a contiguous vector of shape ({length_label},) = ({length},)",
               f"shape {tuple(shape)} with strides {tuple(t.stride())}")


def check_valid_rows(dt, valid_rows, ops, addresses=True):
    """valid_rows: None, or an (L,) int32 contiguous vector of per-expert valid-row counts on the
    operands' device (read on the device: values outside [0, segment size] are clamped there)."""
    if valid_rows is None:
        return
    check_dtype("valid_rows", valid_rows, dt.int32, "int32")
    check_vector("valid_rows", valid_rows, ops.num_experts, "L")
    check_placement("valid_rows", valid_rows, ops.device, 4, addresses, device_of="padded_offsets")


def weight_layout_code(weight_layout):
    """The GGEMM_WEIGHT_LAYOUT_* of "k_major" or "n_major"."""
    code = lib.WEIGHT_LAYOUTS.get(weight_layout) if isinstance(weight_layout, str) else None
    if code is None:
        refuse("weight_layout", "'k_major' or 'n_major'", f"{weight_layout!r}")
    return code


def glu_settings(activation, glu_scale, glu_limit, glu_offset):
    """(GGEMM_ACTIVATION_*, scale, limit, offset) of a fused GLU call: "swiglu" or
    "geglu_clamped"; the constants must be finite with limit > 0 for the clamped GeGLU and are
    ignored (passed as the defaults) for SwiGLU."""
    code = lib.ACTIVATIONS.get(activation) if isinstance(activation, str) else None
    if code is None:
        refuse("activation", "'swiglu' or 'geglu_clamped'", f"{activation!r}")
    if code != lib.ACTIVATION_CLAMPED_GEGLU:
        return (code,) + lib.GLU_DEFAULTS
    values = []
    for name, value in (("glu_scale", glu_scale), ("glu_limit", glu_limit), ("glu_offset", glu_offset)):
        try:
            number = float(value)
        except (TypeError, ValueError):
            refuse(name, "a finite number", f"{value!r}")
        if not math.isfinite(number):
            refuse(name, "a finite number", f"{value!r}")
        values.append(number)
    if not values[1] > 0:
        refuse("glu_limit", "a number > 0", f"{glu_limit!r}")
    return (code,) + tuple(values)


def check_glu_width(n):
    """The pre-activation width N of a fused GLU: whole 64-column [gate 32 | up 32] blocks."""
    if n % 64:
        refuse("n", "N (the pre-activation width) a multiple of 64 with an activation", f"N = {n}")


def glu_interleave_rows(n):
    """The list of source rows that reorders [gate | up] halves of n rows into interleaved
    32-row gate and up blocks: row i of the result is row rows[i] of the halves (the same rule
    as the library's ggemm_glu_interleave_rows)."""
    if not isinstance(n, int) or n <= 0 or n % 64:
        refuse("n", "a positive multiple of 64", f"{n!r}")
    half = n // 2
    rows = []
    for block in range(n // 64):
        rows.extend(range(32 * block, 32 * block + 32))
        rows.extend(range(half + 32 * block, half + 32 * block + 32))
    return rows


def check_operands(dt, a, padded_offsets, alpha, prob, b=None, b_ptrs=None, n=None, bias=None,
                   addresses=True, weight_layout=lib.WEIGHT_LAYOUT_K_MAJOR):
    """Checks the inputs of one call and returns their Operands. alpha and prob may be None.

    addresses=False skips what needs real memory (alignment of data pointers), for symbolic
    tensors traced by torch.compile; the call itself checks them again."""
    # a: decides M, K, the device and the layout of the outputs.
    if a is None:
        refuse("a", "a tensor", "None")
    check_dtype("a", a, dt.bf16, "bfloat16")
    shape, strides = a.shape, a.stride()
    if len(shape) == 2 and _fits(shape, strides, (shape[1], 1)):
        spec_a = False
    elif len(shape) == 3 and shape[2] == 1 and _fits(shape[:2], strides[:2], (shape[1], 1)):
        spec_a = True
    else:
        refuse("a", "shape (M, K) with strides (K, 1), or the (M, K, 1) view with strides "
               "(K, 1, M*K)", f"shape {tuple(shape)} with strides {tuple(strides)}")
    m, k = shape[0], shape[1]
    if m % ROW_ALIGNMENT:
        refuse("a", f"M (rows) a multiple of {ROW_ALIGNMENT}", f"M = {m}")
    if k < 8 or k % 8:
        refuse("a", "K (columns) >= 8 and a multiple of 8", f"K = {k}")
    if not a.is_cuda:
        refuse("a", "a CUDA tensor", _where(a))
    device = a.get_device()
    check_placement("a", a, device, DATA_ALIGNMENT, addresses)

    # padded_offsets: decides L.
    check_dtype("padded_offsets", padded_offsets, dt.int32, "int32")
    off_shape = padded_offsets.shape
    if len(off_shape) != 1:
        refuse("padded_offsets", "a vector of shape (L,)", f"shape {tuple(off_shape)}")
    num_experts = off_shape[0]
    if not 1 <= num_experts <= MAX_EXPERTS:
        refuse("padded_offsets", f"1 to {MAX_EXPERTS} experts (its length L)", f"L = {num_experts}")
    check_vector("padded_offsets", padded_offsets, num_experts, "L")
    check_placement("padded_offsets", padded_offsets, device, DATA_ALIGNMENT, addresses)

    # alpha and prob: None is the library's NULL, every value 1.
    if alpha is not None:
        check_dtype("alpha", alpha, dt.fp32, "float32")
        check_vector("alpha", alpha, num_experts, "L")
        check_placement("alpha", alpha, device, DATA_ALIGNMENT, addresses)

    spec_prob = False
    if prob is not None:
        check_dtype("prob", prob, dt.fp32, "float32")
        p_shape = prob.shape
        if p_shape not in ((m,), (m, 1, 1)) or (m > 1 and prob.stride()[0] != 1):
            refuse("prob", f"shape (M,) = ({m},) contiguous, or the (M, 1, 1) view",
                   f"shape {tuple(p_shape)} with strides {tuple(prob.stride())}")
        spec_prob = len(p_shape) == 3
        check_placement("prob", prob, device, DATA_ALIGNMENT, addresses)

    # Weights: exactly one source.
    if (b is None) == (b_ptrs is None):
        refuse("b / b_ptrs", "exactly one weight source (dense b or discrete b_ptrs)",
               "both" if b is not None else "neither")
    spec_b = False
    if b is not None:
        weight_mode = lib.WEIGHTS_DENSE
        check_dtype("b", b, dt.bf16, "bfloat16")
        b_shape, b_strides = b.shape, b.stride()
        if weight_layout == lib.WEIGHT_LAYOUT_N_MAJOR:
            if not (len(b_shape) == 3 and b_shape[0] == num_experts and b_shape[1] == k and _fits(
                    b_shape, b_strides, (k * b_shape[2], b_shape[2], 1))):
                refuse("b", f"N-major weights of shape (L, K, N) = ({num_experts}, {k}, N) with "
                       f"strides (K*N, N, 1)",
                       f"shape {tuple(b_shape)} with strides {tuple(b_strides)}")
            b_n = b_shape[2]
        elif len(b_shape) == 3 and b_shape[0] == num_experts and b_shape[2] == k and _fits(
                b_shape, b_strides, (b_shape[1] * k, k, 1)):
            b_n = b_shape[1]
        elif len(b_shape) == 3 and b_shape[2] == num_experts and b_shape[1] == k and _fits(
                b_shape, b_strides, (k, 1, b_shape[0] * k)):
            b_n, spec_b = b_shape[0], True
        else:
            refuse("b", f"shape (L, N, K) = ({num_experts}, N, {k}) with strides (N*K, K, 1), "
                   f"or the (N, K, L) = (N, {k}, {num_experts}) view with strides (K, 1, N*K)",
                   f"shape {tuple(b_shape)} with strides {tuple(b_strides)}")
        if n is not None and n != b_n:
            refuse("n", f"N of b ({b_n}) or None", f"{n}")
        n = b_n
        check_placement("b", b, device, DATA_ALIGNMENT, addresses)
    else:
        weight_mode = lib.WEIGHTS_DISCRETE
        if b_ptrs.dtype != dt.int64 and (dt.uint64 is None or b_ptrs.dtype != dt.uint64):
            refuse("b_ptrs", "dtype int64 (one device address per expert)", f"{b_ptrs.dtype}")
        check_vector("b_ptrs", b_ptrs, num_experts, "L")
        check_placement("b_ptrs", b_ptrs, device, POINTER_ALIGNMENT, addresses)
        if n is None:
            refuse("n", "the rows N of each expert's weights (needed with b_ptrs)", "None")
        if not isinstance(n, int) or isinstance(n, bool):
            refuse("n", "an int", f"{n!r}")
    if n < 8 or n % 8:
        refuse("n", "N >= 8 and a multiple of 8", f"{n!r}")

    spec_bias = False
    bias_dtype = lib.DTYPE_NONE
    if bias is not None:
        bias_dtype = dt.output_code(bias.dtype)
        if bias_dtype is None:
            refuse("bias", "dtype bfloat16, float16 or float32", f"{bias.dtype}")
        s_shape, s_strides = bias.shape, bias.stride()
        if s_shape == (num_experts, n) and _fits(s_shape, s_strides, (n, 1)):
            pass
        elif s_shape == (n, num_experts) and _fits(s_shape, s_strides, (1, n)):
            spec_bias = True
        else:
            refuse("bias", f"shape (L, N) = ({num_experts}, {n}) with strides (N, 1), or the "
                   f"(N, L) view with strides (1, N)",
                   f"shape {tuple(s_shape)} with strides {tuple(s_strides)}")
        check_placement("bias", bias, device, DATA_ALIGNMENT, addresses)

    return Operands(m, n, k, num_experts, device, weight_mode, bias_dtype, spec_a, spec_b,
                    spec_bias, spec_prob, weight_layout)


def output_code(dt, name, dtype):
    """The GGEMM_DTYPE_* of a requested output dtype (c_dtype, d_dtype)."""
    code = dt.output_code(dtype)
    if code is None:
        refuse(name, "bfloat16, float16 or float32", f"{dtype}")
    return code


def check_output(dt, name, t, ops, dtype, addresses=True):
    """A caller-provided output: (M, N) row-major or the (M, N, 1) view, of `dtype`."""
    if t is None:
        refuse(name, "a tensor", "None")
    if t.dtype != dtype:
        refuse(name, f"dtype {dtype}", f"{t.dtype}")
    shape, strides = t.shape, t.stride()
    m, n = ops.m, ops.n
    if not ((shape == (m, n) and _fits(shape, strides, (n, 1))) or
            (shape == (m, n, 1) and _fits(shape[:2], strides[:2], (n, 1)))):
        refuse(name, f"shape (M, N) = ({m}, {n}) with strides (N, 1), or the (M, N, 1) view",
               f"shape {tuple(shape)} with strides {tuple(strides)}")
    check_placement(name, t, ops.device, DATA_ALIGNMENT, addresses)


def check_glu_pre(dt, pre, ops, addresses=True):
    """dGLU's saved pre-activation: an (M, 2N) row-major tensor of an output dtype (the forward's
    C), on the operands' device; returns its GGEMM_DTYPE_*. N is the activation's width, a
    multiple of 32."""
    if ops.n % 32:
        refuse("n", "N (the activation's width) a multiple of 32", f"N = {ops.n}")
    if pre is None:
        refuse("pre", "the saved (M, 2N) pre-activation", "None")
    code = output_code(dt, "pre", pre.dtype)
    m, n2 = ops.m, 2 * ops.n
    if tuple(pre.shape) != (m, n2) or not _fits(pre.shape, pre.stride(), (n2, 1)):
        refuse("pre", f"shape (M, 2N) = ({m}, {n2}) with strides (2N, 1)",
               f"shape {tuple(pre.shape)} with strides {tuple(pre.stride())}")
    check_placement("pre", pre, ops.device, DATA_ALIGNMENT, addresses)
    return code


def check_same_problem(plan, ops):
    """ops (one execute's inputs) fit the plan made from the sample tensors."""
    for field, label in (("n", "N"), ("k", "K"), ("num_experts", "L"), ("device", "device")):
        want, got = getattr(plan, field), getattr(ops, field)
        if want != got:
            refuse(label, f"{want} (the plan's)", f"{got}")
    if ops.weight_mode != plan.weight_mode:
        refuse("b / b_ptrs", "the plan's weight mode (" +
               ("dense b" if plan.weight_mode == lib.WEIGHTS_DENSE else "discrete b_ptrs") + ")",
               "the other one")
    if ops.weight_layout != plan.weight_layout:
        refuse("weight_layout", "the plan's (" + ("n_major" if plan.weight_layout else "k_major") + ")",
               "n_major" if ops.weight_layout else "k_major")
    if ops.bias_dtype != plan.bias_dtype:
        refuse("bias", "a bias of the plan's dtype" if plan.bias_dtype else "no bias (the plan has none)",
               "no bias" if not ops.bias_dtype else "a bias of another dtype" if plan.bias_dtype
               else "a bias")


# --- the weight gradient -----------------------------------------------------------------------------

class WgradOperands(NamedTuple):
    """A checked weight-gradient call: W_g = alpha_g X1_g^T X2_g, each (P, Q)."""
    m: int
    p: int
    q: int
    num_experts: int
    device: int
    out_dtype: int     # GGEMM_DTYPE_*
    output_mode: int   # 0: one (L, P, Q) tensor; 1: a sequence of L (P, Q) tensors


def _check_matrix(name, t, dt, rows_label, cols_label, addresses, device=None, rows=None):
    check_dtype(name, t, dt.bf16, "bfloat16")
    shape, strides = t.shape, t.stride()
    if len(shape) != 2 or not _fits(shape, strides, (shape[1], 1)) or (rows is not None and shape[0] != rows):
        expected = f"a row-major ({rows_label}, {cols_label}) matrix"
        if rows is not None:
            expected += f" with {rows_label} = {rows}"
        refuse(name, expected, f"shape {tuple(shape)} with strides {tuple(strides)}")
    if device is None:
        if not t.is_cuda:
            refuse(name, "a CUDA tensor", "a CPU tensor")
        device = t.get_device()
    check_placement(name, t, device, DATA_ALIGNMENT, addresses, device_of="x1")
    return shape[0], shape[1], device


def check_wgrad_operands(dt, x1, x2, padded_offsets, alpha, out, out_dtype, accumulate, addresses=True):
    """x1 (M, P) and x2 (M, Q) bf16 row-major; padded_offsets (L,) int32; alpha (L,) fp32 or None;
    out None (a new (L, P, Q) tensor of out_dtype), an (L, P, Q) tensor, or a list of L (P, Q)
    tensors, all of one output dtype. accumulate needs an out to add into."""
    m, p, device = _check_matrix("x1", x1, dt, "M", "P", addresses)
    _, q, _ = _check_matrix("x2", x2, dt, "M", "Q", addresses, device, rows=m)
    if m % ROW_ALIGNMENT:
        refuse("x1", f"M (rows) a multiple of {ROW_ALIGNMENT}", f"M = {m}")
    for name, value in (("P", p), ("Q", q)):
        if value < 8 or value % 8:
            refuse(name, "a multiple of 8, at least 8", f"{value}")
    if len(padded_offsets.shape) != 1:
        refuse("padded_offsets", "a vector (L,)", f"shape {tuple(padded_offsets.shape)}")
    experts = padded_offsets.shape[0]
    if not 1 <= experts <= MAX_EXPERTS:
        refuse("padded_offsets", f"1..{MAX_EXPERTS} experts", f"{experts}")
    check_dtype("padded_offsets", padded_offsets, dt.int32, "int32")
    check_vector("padded_offsets", padded_offsets, experts, "L")
    check_placement("padded_offsets", padded_offsets, device, DATA_ALIGNMENT, addresses, "x1")
    if alpha is not None:
        check_dtype("alpha", alpha, dt.fp32, "float32")
        check_vector("alpha", alpha, experts, "L")
        check_placement("alpha", alpha, device, DATA_ALIGNMENT, addresses, "x1")
    code = output_code(dt, "out_dtype", out_dtype)
    mode = 0
    if out is None:
        if accumulate:
            refuse("out", "the gradient buffer(s) to add into when accumulate=True", "None")
    elif isinstance(out, (list, tuple)):
        mode = 1
        if len(out) != experts:
            refuse("out", f"one (P, Q) tensor per expert (L = {experts})", f"{len(out)} tensors")
        for i, t in enumerate(out):
            name = f"out[{i}]"
            if t.dtype != out_dtype:
                refuse(name, f"dtype {out_dtype} (out_dtype)", f"{t.dtype}")
            if tuple(t.shape) != (p, q) or not _fits(t.shape, t.stride(), (q, 1)):
                refuse(name, f"a contiguous (P, Q) = ({p}, {q}) tensor",
                       f"shape {tuple(t.shape)} with strides {tuple(t.stride())}")
            check_placement(name, t, device, DATA_ALIGNMENT, addresses, "x1")
    else:
        if out.dtype != out_dtype:
            refuse("out", f"dtype {out_dtype} (out_dtype)", f"{out.dtype}")
        if tuple(out.shape) != (experts, p, q) or not _fits(out.shape, out.stride(), (p * q, q, 1)):
            refuse("out", f"a contiguous (L, P, Q) = ({experts}, {p}, {q}) tensor",
                   f"shape {tuple(out.shape)} with strides {tuple(out.stride())}")
        check_placement("out", out, device, DATA_ALIGNMENT, addresses, "x1")
    return WgradOperands(m, p, q, experts, device, code, mode)
