"""ggemm.torch.grouped_gemm's gradients on the GPU against torch.autograd of the fp64 reference:
bias, generate_c and both weight layouts; zero gradients for rows past the last offset and for
the empty expert; specification views and discrete weights; torch.compile(fullgraph=True)."""
import itertools

import pytest

from conftest import requires_torch_cuda

pytestmark = requires_torch_cuda
torch = pytest.importorskip("torch", reason="torch is not installed")

import ggemm.torch as gt  # noqa: E402
from autograd_reference import (EMPTY_EXPERT, LAST, M, N, make_problem,  # noqa: E402
                                reference_gradients, relative_error)

NAMES = ("a", "alpha", "prob", "b", "bias")
# bf16 inputs: dA and dB pass a bf16 upstream gradient through the GEMMs and end in bf16;
# dprob and dalpha are fp32 sums, dbias ends in bias's dtype (bf16 here).
BOUNDS = dict(a=2e-2, b=2e-2, prob=1e-2, alpha=1e-2, bias=1e-2)


def leaves_of(p):
    return {name: p[name].clone().requires_grad_() for name in NAMES if name in p}


def call(leaves, p, generate_c, weight_layout, **kwargs):
    return gt.grouped_gemm(leaves["a"], p["padded_offsets"], leaves["alpha"], leaves["prob"],
                           b=leaves["b"], bias=leaves.get("bias"), generate_c=generate_c,
                           c_dtype=torch.float32, weight_layout=weight_layout, **kwargs)


def ggemm_gradients(fn, leaves, p, generate_c):
    d, c = fn(leaves)
    outputs, upstream = [d], [p["grad_d"].to(d.dtype)]
    if generate_c:
        outputs.append(c)
        upstream.append(p["grad_c"].to(c.dtype))
    grads = torch.autograd.grad(outputs, list(leaves.values()), upstream)
    torch.cuda.synchronize()
    return dict(zip(leaves, grads))


CASES = list(itertools.product([None, torch.bfloat16], [False, True], ["k_major", "n_major"]))


@pytest.mark.parametrize("bias_dtype,generate_c,weight_layout", CASES)
def test_gradients_match_fp64_autograd(bias_dtype, generate_c, weight_layout):
    p = make_problem(seed=CASES.index((bias_dtype, generate_c, weight_layout)),
                     bias_dtype=bias_dtype, weight_layout=weight_layout)
    leaves = leaves_of(p)
    got = ggemm_gradients(lambda t: call(t, p, generate_c, weight_layout), leaves, p,
                          generate_c)
    ref = reference_gradients(p, list(leaves), generate_c, weight_layout)
    for name in leaves:
        g = got[name]
        assert g is not None, f"d{name}: no gradient"
        assert g.shape == p[name].shape and g.dtype == p[name].dtype, \
            f"d{name}: shape {tuple(g.shape)} {g.dtype}, expected {tuple(p[name].shape)} " \
            f"{p[name].dtype}"
        assert torch.isfinite(g.float()).all(), f"d{name}: not finite"
        err = relative_error(g, ref[name])
        assert err < BOUNDS[name], f"d{name}: relative error {err} against fp64 autograd " \
                                   f"(bound {BOUNDS[name]})"
    assert torch.count_nonzero(got["a"][LAST:]) == 0, "da: rows past the last offset not zero"
    assert torch.count_nonzero(got["prob"][LAST:]) == 0, \
        "dprob: rows past the last offset not zero"
    assert torch.count_nonzero(got["b"][EMPTY_EXPERT]) == 0, "db: the empty expert not zero"
    assert float(got["alpha"][EMPTY_EXPERT]) == 0.0, "dalpha: the empty expert not zero"
    if bias_dtype is not None:
        assert torch.count_nonzero(got["bias"][EMPTY_EXPERT]) == 0, \
            "dbias: the empty expert not zero"


def test_gradients_are_reproducible():
    p = make_problem(seed=11, bias_dtype=torch.bfloat16)
    runs = [ggemm_gradients(lambda t: call(t, p, True, "k_major"), leaves_of(p), p, True)
            for _ in range(2)]
    for name in runs[0]:
        assert torch.equal(runs[0][name], runs[1][name]), f"d{name} differs between two runs"


def test_specification_views_get_the_same_gradients():
    p = make_problem(seed=5, bias_dtype=torch.bfloat16)
    natural = ggemm_gradients(lambda t: call(t, p, False, "k_major"), leaves_of(p), p, False)

    def spec_call(t):
        return gt.grouped_gemm(t["a"].unsqueeze(-1), p["padded_offsets"], t["alpha"],
                               t["prob"].view(-1, 1, 1), b=t["b"].permute(1, 2, 0),
                               bias=t["bias"].t())

    leaves = leaves_of(p)
    d, _ = spec_call(leaves)
    assert d.shape == (M, N, 1)
    grads = torch.autograd.grad([d], list(leaves.values()),
                                [p["grad_d"].to(d.dtype).unsqueeze(-1)])
    for name, g in zip(leaves, grads):
        assert torch.equal(g, natural[name]), f"d{name}: the views' gradient differs"


def test_discrete_weights_give_the_input_gradients_and_no_weight_gradient():
    """b_ptrs: a, alpha, prob get their gradients (da reads the addresses N-major); the
    weights get none (the addresses carry no autograd history)."""
    p = make_problem(seed=6)
    ref = reference_gradients(p, ["a", "alpha", "prob"], False, "k_major")
    ptrs = gt.b_ptrs(list(p["b"].unbind(0)))
    leaves = {name: p[name].clone().requires_grad_() for name in ("a", "alpha", "prob")}

    def discrete_call(t):
        return gt.grouped_gemm(t["a"], p["padded_offsets"], t["alpha"], t["prob"], b_ptrs=ptrs,
                               n=N)

    got = ggemm_gradients(discrete_call, leaves, p, False)
    for name in leaves:
        err = relative_error(got[name], ref[name])
        assert err < BOUNDS[name], f"d{name}: relative error {err} against fp64 autograd"
    assert torch.count_nonzero(got["a"][LAST:]) == 0, "da: rows past the last offset not zero"


@pytest.mark.parametrize("bias_dtype,weight_layout", [(torch.bfloat16, "k_major"),
                                                      (None, "n_major")])
def test_torch_compile_fullgraph_forward_and_backward_match_eager(bias_dtype, weight_layout):
    p = make_problem(seed=9, bias_dtype=bias_dtype, weight_layout=weight_layout)

    def block(t):
        return call(t, p, True, weight_layout)

    eager = ggemm_gradients(block, leaves_of(p), p, True)
    compiled = ggemm_gradients(torch.compile(block, fullgraph=True), leaves_of(p), p, True)
    for name in eager:
        err = relative_error(compiled[name], eager[name])
        assert err < 1e-6, f"d{name}: compiled differs from eager by {err}"


@pytest.mark.parametrize("bias_dtype,generate_c,weight_layout", [(None, False, "k_major"),
                                                                 (None, True, "n_major"),
                                                                 (torch.bfloat16, True, "k_major")])
@pytest.mark.parametrize("absent", [("alpha",), ("prob",), ("alpha", "prob")])
def test_none_alpha_or_prob_give_the_gradients_of_ones(absent, bias_dtype, generate_c,
                                                       weight_layout):
    """A None alpha or prob is every value 1 in the backward too: each other input gets the
    bits it gets with a tensor of ones (that needs no gradient), and the None one none."""
    p = make_problem(seed=13, bias_dtype=bias_dtype, weight_layout=weight_layout)

    def gradients(scales):
        leaves = {name: t for name, t in leaves_of(p).items() if name not in absent}

        def fn(t):
            alpha, prob = (scales[name] if name in absent else t[name]
                           for name in ("alpha", "prob"))
            return gt.grouped_gemm(t["a"], p["padded_offsets"], alpha, prob, b=t["b"],
                                   bias=t.get("bias"), generate_c=generate_c,
                                   c_dtype=torch.float32, weight_layout=weight_layout)

        return ggemm_gradients(fn, leaves, p, generate_c)

    with_none = gradients(dict.fromkeys(absent))
    with_ones = gradients({name: torch.ones_like(p[name]) for name in absent})
    assert set(with_none) == set(with_ones) == set(leaves_of(p)) - set(absent)
    for name in with_none:
        assert torch.equal(with_none[name], with_ones[name]), f"d{name} differs from ones'"


def test_torch_compile_fullgraph_gradients_without_alpha_and_prob():
    p = make_problem(seed=14, bias_dtype=torch.bfloat16)

    def block(t):
        return gt.grouped_gemm(t["a"], p["padded_offsets"], b=t["b"], bias=t["bias"],
                               generate_c=True, c_dtype=torch.float32)

    def leaves():
        return {name: p[name].clone().requires_grad_() for name in ("a", "b", "bias")}

    eager = ggemm_gradients(block, leaves(), p, True)
    compiled = ggemm_gradients(torch.compile(block, fullgraph=True), leaves(), p, True)
    for name in eager:
        err = relative_error(compiled[name], eager[name])
        assert err < 1e-6, f"d{name}: compiled differs from eager by {err}"
