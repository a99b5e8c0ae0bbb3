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
