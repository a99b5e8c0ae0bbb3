"""The fused GLU forward on a GPU through ggemm.torch and ggemm.jax: against an fp64 reference of
prob * act(gate, up) on the interleaved blocks, both activations, bias, C, and the row
permutation from [gate | up] halves."""
import numpy as np
import pytest

from conftest import TOLERANCE, relative_error, requires_jax_cuda, requires_torch_cuda


def glu_reference(pre, prob, activation, scale=1.702, limit=7.0, offset=1.0):
    """prob * act(gate, up) in float64 from the (M, N) pre-activation (numpy)."""
    m, n = pre.shape
    v = pre.reshape(m, n // 64, 2, 32)
    gate, up = v[:, :, 0], v[:, :, 1]
    if activation == "swiglu":
        act = gate / (1.0 + np.exp(-gate)) * up
    else:
        g = np.minimum(gate, limit)
        u = np.clip(up, -limit, limit)
        act = (u + offset) * g / (1.0 + np.exp(-scale * g))
    return prob[:, None] * act.reshape(m, n // 2)


def pre_activation(a, b, offsets, alpha, bias):
    """alpha * a @ B_g^T (+ bias) in float64 for the rows below the last offset (numpy)."""
    pre = np.zeros((a.shape[0], b.shape[1]))
    begin = 0
    for g, end in enumerate(offsets):
        if end > begin:
            pre[begin:end] = a[begin:end] @ b[g].T * alpha[g]
            if bias is not None:
                pre[begin:end] += bias[g][None, :]
        begin = max(begin, end)
    return pre


CASES = [("swiglu", None, False), ("geglu_clamped", "float32", True), ("geglu_clamped", None, False)]


@requires_torch_cuda
@pytest.mark.parametrize("activation,bias_dtype,generate_c", CASES)
def test_torch_glu_matches_fp64(activation, bias_dtype, generate_c):
    import torch
    import ggemm.torch as gt
    from moe_data import OFFSETS, make_inputs
    t = make_inputs(n=512, bias_dtype=getattr(torch, bias_dtype) if bias_dtype else None, seed=3)
    constants = dict(glu_scale=1.0, glu_limit=1.5, glu_offset=0.5) if bias_dtype is None else {}
    d, c = gt.glu(**t, activation=activation, generate_c=generate_c, c_dtype=torch.float32,
                  d_dtype=torch.float32, **constants)
    assert d.shape == (1024, 256) and (c is None) == (not generate_c)
    rows = OFFSETS[-1]
    np_ = {k: v.double().cpu().numpy() if v.is_floating_point() else v.cpu().numpy() for k, v in t.items()}
    pre = pre_activation(np_["a"], np_["b"], OFFSETS, np_["alpha"], np_.get("bias"))
    params = {"scale": 1.0, "limit": 1.5, "offset": 0.5} if constants else {}
    ref = glu_reference(pre, np_["prob"], activation, **params)
    assert relative_error(d[:rows].double().cpu().numpy(), ref[:rows]) < TOLERANCE["float32"]
    if generate_c:
        assert relative_error(c[:rows].double().cpu().numpy(), pre[:rows]) < TOLERANCE["float32"]


@requires_torch_cuda
def test_torch_glu_of_halves_weights_after_the_row_permutation():
    import torch
    import ggemm.torch as gt
    from moe_data import OFFSETS, make_inputs
    t = make_inputs(n=256, seed=5)
    halves = t["b"]                                   # rows [0, 128) gate, [128, 256) up
    t["b"] = halves[:, gt.glu_interleave_rows(256).cuda()].contiguous()
    d = gt.glu(**t, d_dtype=torch.float32).d
    rows = OFFSETS[-1]
    a, w = t["a"].double(), halves.double()
    ref = torch.zeros(1024, 128, dtype=torch.float64, device="cuda")
    begin = 0
    for g, end in enumerate(OFFSETS):
        if end > begin:
            pre = a[begin:end] @ w[g].T * float(t["alpha"][g])
            gate, up = pre[:, :128], pre[:, 128:]
            ref[begin:end] = t["prob"][begin:end, None].double() * torch.nn.functional.silu(gate) * up
        begin = max(begin, end)
    err = float((d[:rows].double() - ref[:rows]).norm() / ref[:rows].norm())
    assert err < TOLERANCE["float32"]


@requires_jax_cuda
@pytest.mark.parametrize("activation,bias_dtype,generate_c", CASES)
def test_jax_glu_matches_fp64(activation, bias_dtype, generate_c):
    import jax.numpy as jnp
    import ggemm.jax as gj
    rng = np.random.default_rng(7)
    m, n, k, offsets = 1024, 512, 320, [256, 256, 768, 768]
    L = len(offsets)
    a = jnp.asarray(rng.standard_normal((m, k)), jnp.bfloat16)
    b = jnp.asarray(rng.standard_normal((L, n, k)) * k ** -0.5, jnp.bfloat16)
    alpha = jnp.asarray(rng.uniform(0.5, 1.5, L), jnp.float32)
    prob = jnp.asarray(rng.uniform(0.1, 1.0, m), jnp.float32)
    bias = jnp.asarray(rng.standard_normal((L, n)), jnp.float32) if bias_dtype else None
    out = gj.glu(a, jnp.asarray(offsets, jnp.int32), alpha, prob, b=b, bias=bias, activation=activation,
                 generate_c=generate_c, c_dtype=jnp.float32, d_dtype=jnp.float32)
    pre = pre_activation(np.asarray(a, np.float64), np.asarray(b, np.float64), offsets,
                         np.asarray(alpha, np.float64), None if bias is None else np.asarray(bias, np.float64))
    ref = glu_reference(pre, np.asarray(prob, np.float64), activation)
    rows = offsets[-1]
    assert relative_error(np.asarray(out.d)[:rows], ref[:rows]) < TOLERANCE["float32"]
    assert not np.asarray(out.d)[rows:].any()  # zero_tail
    if generate_c:
        assert relative_error(np.asarray(out.c)[:rows], pre[:rows]) < TOLERANCE["float32"]


@requires_torch_cuda
@pytest.mark.parametrize("activation", ["swiglu", "geglu_clamped"])
def test_torch_dglu_matches_fp64_autograd(activation):
    """dGLU against torch.autograd through an fp64 forward D = prob * act(pre): the gradient of
    sum(R * D) with R = alpha * dy @ W_g (the next layer's input gradient, N-major W)."""
    import torch
    import ggemm.torch as gt
    g = torch.Generator(device="cpu").manual_seed(11)
    m, n, k, offsets = 1024, 160, 256, [256, 256, 768, 768]  # N = 160: a last block of 32 columns
    L = len(offsets)
    dy = torch.randn(m, k, generator=g).to(torch.bfloat16).cuda()
    w = (torch.randn(L, k, n, generator=g) * k ** -0.5).to(torch.bfloat16).cuda()
    pre = (torch.randn(m, 2 * n, generator=g) * 4).to(torch.bfloat16).cuda()
    prob = (torch.rand(m, generator=g) * 0.9 + 0.1).cuda()
    alpha = (torch.rand(L, generator=g) + 0.5).cuda()
    offs = torch.tensor(offsets, dtype=torch.int32, device="cuda")
    constants = dict(glu_scale=1.2, glu_limit=3.0, glu_offset=0.5) if activation == "geglu_clamped" else {}
    d_pre, d_prob = gt.dglu(dy, offs, alpha, prob, pre, b=w, activation=activation, d_dtype=torch.float32,
                            **constants)
    again = gt.dglu(dy, offs, alpha, prob, pre, b=w, activation=activation, d_dtype=torch.float32, **constants)
    assert torch.equal(d_pre.view(torch.int32)[:768], again[0].view(torch.int32)[:768])
    assert torch.equal(d_prob.view(torch.int32), again[1].view(torch.int32))

    pre64 = pre.double().requires_grad_()
    prob64 = prob.double().requires_grad_()
    v = pre64.view(m, n // 32, 2, 32)
    gate, up = v[:, :, 0].reshape(m, n), v[:, :, 1].reshape(m, n)
    if activation == "swiglu":
        act = torch.nn.functional.silu(gate) * up
    else:
        s, limit, offset = 1.2, 3.0, 0.5
        gc = torch.clamp(gate, max=limit)
        act = (torch.clamp(up, -limit, limit) + offset) * gc * torch.sigmoid(s * gc)
    d = prob64[:, None] * act
    r = torch.zeros(m, n, dtype=torch.float64, device="cuda")
    begin = 0
    for e, end in enumerate(offsets):
        if end > begin:
            r[begin:end] = float(alpha[e]) * (dy[begin:end].double() @ w[e].double())
        begin = max(begin, end)
    d.backward(r)
    rows = offsets[-1]
    assert relative_error(d_pre[:rows].cpu().numpy(), pre64.grad[:rows].cpu().numpy()) < TOLERANCE["float32"]
    assert relative_error(d_prob[:rows].cpu().numpy(), prob64.grad[:rows].cpu().numpy()) < TOLERANCE["float32"]
    assert not d_prob[rows:].any()  # rows no expert computes


# --- alpha and prob as None: every value 1, the same bits as tensors of ones ----------------------

ABSENT = [("alpha",), ("prob",), ("alpha", "prob")]


def same_bits_np(x, y):
    x, y = np.asarray(x), np.asarray(y)
    return x.dtype == y.dtype and x.shape == y.shape and np.array_equal(x.view(np.uint8),
                                                                        y.view(np.uint8))


@requires_torch_cuda
@pytest.mark.parametrize("activation,bias_dtype", [("swiglu", None), ("geglu_clamped", "float32")])
@pytest.mark.parametrize("absent", ABSENT)
def test_torch_glu_none_alpha_or_prob_give_the_bits_of_ones(absent, activation, bias_dtype):
    import torch
    import ggemm.torch as gt
    from moe_data import OFFSETS, make_inputs, same_bits
    t = make_inputs(n=512, bias_dtype=getattr(torch, bias_dtype) if bias_dtype else None, seed=4)
    options = dict(activation=activation, generate_c=True, c_dtype=torch.float32)
    ones = gt.glu(**dict(t, **{name: torch.ones_like(t[name]) for name in absent}), **options)
    none = gt.glu(**dict(t, **dict.fromkeys(absent)), **options)
    torch.cuda.synchronize()
    rows = OFFSETS[-1]
    assert same_bits(none.d[:rows], ones.d[:rows]) and same_bits(none.c[:rows], ones.c[:rows])


@requires_torch_cuda
@pytest.mark.parametrize("absent", ABSENT)
def test_torch_dglu_none_alpha_or_prob_give_the_bits_of_ones(absent):
    import torch
    import ggemm.torch as gt
    from moe_data import same_bits
    g = torch.Generator(device="cpu").manual_seed(12)
    m, n, k, offsets = 1024, 160, 256, [256, 256, 768, 768]
    L = len(offsets)
    dy = torch.randn(m, k, generator=g).to(torch.bfloat16).cuda()
    w = (torch.randn(L, k, n, generator=g) * k ** -0.5).to(torch.bfloat16).cuda()
    pre = (torch.randn(m, 2 * n, generator=g) * 4).to(torch.bfloat16).cuda()
    scales = dict(alpha=(torch.rand(L, generator=g) + 0.5).cuda(),
                  prob=(torch.rand(m, generator=g) * 0.9 + 0.1).cuda())
    offs = torch.tensor(offsets, dtype=torch.int32, device="cuda")
    ones = dict(scales, **{name: torch.ones_like(scales[name]) for name in absent})
    none = dict(scales, **dict.fromkeys(absent))
    d_pre_ones, d_prob_ones = gt.dglu(dy, offs, ones["alpha"], ones["prob"], pre, b=w,
                                      d_dtype=torch.float32)
    d_pre_none, d_prob_none = gt.dglu(dy, offs, none["alpha"], none["prob"], pre, b=w,
                                      d_dtype=torch.float32)
    torch.cuda.synchronize()
    rows = offsets[-1]  # d_pre past it is unspecified; d_prob is written for every row
    assert same_bits(d_pre_none[:rows], d_pre_ones[:rows]) and same_bits(d_prob_none, d_prob_ones)


@requires_jax_cuda
@pytest.mark.parametrize("absent", ABSENT)
def test_jax_glu_and_dglu_none_alpha_or_prob_give_the_bits_of_ones(absent):
    import jax.numpy as jnp
    import ggemm.jax as gj
    rng = np.random.default_rng(9)
    m, n, k, offsets = 1024, 512, 320, [256, 256, 768, 768]
    L = len(offsets)
    offs = jnp.asarray(offsets, jnp.int32)
    scales = dict(alpha=jnp.asarray(rng.uniform(0.5, 1.5, L), jnp.float32),
                  prob=jnp.asarray(rng.uniform(0.1, 1.0, m), jnp.float32))
    ones = dict(scales, **{name: jnp.ones_like(scales[name]) for name in absent})
    none = dict(scales, **dict.fromkeys(absent))

    a = jnp.asarray(rng.standard_normal((m, k)), jnp.bfloat16)
    b = jnp.asarray(rng.standard_normal((L, n, k)) * k ** -0.5, jnp.bfloat16)
    with_ones = gj.glu(a, offs, ones["alpha"], ones["prob"], b=b, generate_c=True,
                       c_dtype=jnp.float32)
    with_none = gj.glu(a, offs, none["alpha"], none["prob"], b=b, generate_c=True,
                       c_dtype=jnp.float32)
    assert same_bits_np(with_none.d, with_ones.d) and same_bits_np(with_none.c, with_ones.c)

    # dGLU: N = 160 (the activation's width), the next layer's N-major weights (L, K, N).
    dy = jnp.asarray(rng.standard_normal((m, k)), jnp.bfloat16)
    w = jnp.asarray(rng.standard_normal((L, k, 160)) * k ** -0.5, jnp.bfloat16)
    pre = jnp.asarray(rng.standard_normal((m, 320)) * 4, jnp.bfloat16)
    d_pre_ones, d_prob_ones = gj.dglu(dy, offs, ones["alpha"], ones["prob"], pre, b=w,
                                      d_dtype=jnp.float32)
    d_pre_none, d_prob_none = gj.dglu(dy, offs, none["alpha"], none["prob"], pre, b=w,
                                      d_dtype=jnp.float32)
    rows = offsets[-1]  # d_pre past it is unspecified; d_prob is written for every row
    assert same_bits_np(np.asarray(d_pre_none)[:rows], np.asarray(d_pre_ones)[:rows])
    assert same_bits_np(d_prob_none, d_prob_ones)
