"""ggemm.torch's autograd without a GPU: the per-expert sums, the backward's formulas with the
GEMMs stood in for by fp64 torch code (rows past the last offset poisoned with NaN, as the
kernels leave them unwritten), the backward op's fake implementation, and the custom op's
registered autograd formula traced on fake CUDA tensors."""
import pytest

torch = pytest.importorskip("torch", reason="torch is not installed")
import ggemm._autograd as ag  # noqa: E402
import ggemm.torch as gt  # noqa: E402
from autograd_reference import (EMPTY_EXPERT, LAST, M, N, K, make_problem,  # noqa: E402
                                reference_forward, reference_gradients, relative_error)

NAN = float("nan")


def segments(padded_offsets):
    begin = 0
    for end in padded_offsets.tolist():
        yield begin, end
        begin = end


def test_row_experts_follow_the_offsets():
    offsets = torch.tensor([256, 256, 768, 1024], dtype=torch.int32)
    expert, live = ag.row_experts(offsets, 1280)
    assert expert[:256].eq(0).all() and expert[256:768].eq(2).all()
    assert expert[768:1024].eq(3).all()
    assert live[:1024].all() and not live[1024:].any()


def test_expert_sums_match_a_loop_and_skip_rows_past_the_last_offset():
    offsets = torch.tensor([512, 512, 768, 1024], dtype=torch.int32)
    x = torch.randn(1280, 3)
    x[1024:] = NAN                        # never read
    sums = ag.expert_sums(x, offsets)
    assert sums.shape == (4, 3) and sums.dtype == torch.float32
    for g, (begin, end) in enumerate(segments(offsets)):
        expected = x[begin:end].double().sum(0) if end > begin else torch.zeros(3,
                                                                                dtype=torch.float64)
        assert torch.allclose(sums[g].double(), expected, rtol=1e-6, atol=1e-6), (g, sums[g],
                                                                                   expected)
    assert torch.equal(sums[1], torch.zeros(3))


# --- the formulas, with the GEMMs stood in for --------------------------------------------------

def _weights_k_by_n(b, g, weight_layout):
    return b[g].double() if weight_layout == "n_major" else b[g].double().T


def _alpha_of(alpha, g):
    return 1.0 if alpha is None else float(alpha[g])


def standin_input_grad(up, padded_offsets, alpha, b, b_ptrs, k, weight_layout, dynamic_sched):
    out = torch.full((up.shape[0], k), NAN, dtype=torch.bfloat16)
    for g, (begin, end) in enumerate(segments(padded_offsets)):
        w = _weights_k_by_n(b, g, weight_layout)           # (K, N)
        out[begin:end] = (_alpha_of(alpha, g) * up[begin:end].double() @ w.T).to(torch.bfloat16)
    return out


def standin_accumulators(a, padded_offsets, b, b_ptrs, n, weight_layout, dynamic_sched):
    out = torch.full((a.shape[0], n), NAN, dtype=torch.float32)
    for g, (begin, end) in enumerate(segments(padded_offsets)):
        out[begin:end] = (a[begin:end].double() @ _weights_k_by_n(b, g, weight_layout)).float()
    return out


def standin_weight_grad(up, a, padded_offsets, alpha, b, weight_layout):
    out = torch.zeros(b.shape, dtype=torch.float64)
    for g, (begin, end) in enumerate(segments(padded_offsets)):
        x1, x2 = (a, up) if weight_layout == "n_major" else (up, a)
        out[g] = _alpha_of(alpha, g) * x1[begin:end].double().T @ x2[begin:end].double()
    return out.to(b.dtype)


@pytest.fixture
def standins(monkeypatch):
    monkeypatch.setattr(ag, "input_grad", standin_input_grad)
    monkeypatch.setattr(ag, "accumulators", standin_accumulators)
    monkeypatch.setattr(ag, "weight_grad", standin_weight_grad)


NAMES = ("a", "alpha", "prob", "b", "bias")
# dA and dB pass the upstream gradient through bf16; the rest stays in fp32 (dbias ends in
# bias's dtype, here bf16).
BOUNDS = dict(a=1e-2, b=1e-2, alpha=1e-5, prob=1e-5, bias=1e-2)


@pytest.mark.parametrize("weight_layout", ["k_major", "n_major"])
@pytest.mark.parametrize("generate_c", [False, True])
@pytest.mark.parametrize("bias_dtype", [None, torch.bfloat16])
def test_formulas_match_autograd_of_the_reference(standins, bias_dtype, generate_c,
                                                  weight_layout):
    p = make_problem(seed=3, bias_dtype=bias_dtype, weight_layout=weight_layout, device="cpu")
    names = [name for name in NAMES if name in p]
    ref = reference_gradients(p, names, generate_c, weight_layout)
    grad_d = p["grad_d"].to(torch.bfloat16)
    grad_c = p["grad_c"] if generate_c else None
    grads = ag.gradients(grad_d, grad_c, p["a"], p["padded_offsets"], p["alpha"], p["prob"],
                         p["b"], None, p.get("bias"), N, False, weight_layout,
                         True, True, True, True, "bias" in p)
    got = dict(zip(NAMES, grads))
    for name in names:
        g = got[name]
        assert g.shape == p[name].shape and g.dtype == p[name].dtype, (name, g.shape, g.dtype)
        err = relative_error(g, ref[name])
        assert err < BOUNDS[name], f"d{name}: relative error {err} against fp64 autograd"
    assert torch.equal(got["a"][LAST:], torch.zeros(M - LAST, K, dtype=torch.bfloat16)), \
        "da: rows past the last offset must be zero"
    assert torch.equal(got["prob"][LAST:], torch.zeros(M - LAST)), \
        "dprob: rows past the last offset must be zero"
    assert float(got["alpha"][EMPTY_EXPERT]) == 0.0
    if "bias" in p:
        assert torch.count_nonzero(got["bias"][EMPTY_EXPERT]) == 0


def test_only_the_asked_gradients_are_computed(standins):
    p = make_problem(device="cpu")
    grads = ag.gradients(p["grad_d"], None, p["a"], p["padded_offsets"], p["alpha"], p["prob"],
                         p["b"], None, None, N, False, "k_major", True, False, False, False, False)
    assert grads[0] is not None and grads[1:] == (None, None, None, None)


def standin_forward(a, padded_offsets, alpha, prob, b, b_ptrs, n, bias, c_dtype, d_dtype,
                    generate_c, dynamic_sched, tile_m, tile_n, cluster_m, sm_margin, check_status,
                    weight_layout):
    """The forward in fp64 (alpha or prob None: ones), rows past the last offset NaN
    (unwritten)."""
    alpha = alpha if alpha is not None else torch.ones(padded_offsets.shape[0])
    prob = prob if prob is not None else torch.ones(a.shape[0])
    d, c = reference_forward(a.double(), b.double(), padded_offsets, alpha.double(),
                             prob.double(), bias.double() if bias is not None else None,
                             weight_layout)
    d[LAST:], c[LAST:] = NAN, NAN
    return gt.GroupedGemmResult(d.to(d_dtype), c.to(c_dtype) if generate_c else None)


@pytest.mark.parametrize("generate_c", [False, True])
def test_the_eager_function_hands_each_input_its_gradient(standins, monkeypatch, generate_c):
    """GroupedGemmFunction with the forward stood in for too: its saved state and the order of
    the gradients it returns, against autograd of the reference."""
    monkeypatch.setattr(gt, "_eager", standin_forward)
    p = make_problem(seed=4, bias_dtype=torch.float32, device="cpu")
    leaves = {name: p[name].clone().requires_grad_() for name in NAMES}
    d, c = ag.GroupedGemmFunction.apply(leaves["a"], p["padded_offsets"], leaves["alpha"],
                                        leaves["prob"], leaves["b"], None, leaves["bias"], None,
                                        torch.float32, torch.bfloat16, generate_c, False, 0, 0, 0,
                                        0, False, "k_major")
    assert d.shape == (M, N) and (c.shape == (M, N) if generate_c else c.shape == (0,))
    outputs, upstream = [d], [p["grad_d"].to(torch.bfloat16)]
    if generate_c:
        outputs.append(c)
        upstream.append(p["grad_c"])
    grads = dict(zip(NAMES, torch.autograd.grad(outputs, list(leaves.values()), upstream)))
    ref = reference_gradients(p, list(NAMES), generate_c, "k_major")
    for name in NAMES:
        err = relative_error(grads[name], ref[name])
        assert err < max(BOUNDS[name], 1e-5), f"d{name}: relative error {err}"


@pytest.mark.parametrize("absent", [("alpha",), ("prob",), ("alpha", "prob")])
@pytest.mark.parametrize("generate_c", [False, True])
@pytest.mark.parametrize("bias_dtype", [None, torch.bfloat16])
def test_none_alpha_or_prob_give_the_gradients_of_ones(standins, bias_dtype, generate_c, absent):
    """A None alpha or prob is 1 throughout the backward: the other inputs get the same bits as
    with a tensor of ones, and the None one is never asked for a gradient."""
    p = make_problem(seed=5, bias_dtype=bias_dtype, device="cpu")
    ones = dict(alpha=torch.ones_like(p["alpha"]), prob=torch.ones_like(p["prob"]))
    grad_c = p["grad_c"] if generate_c else None

    def grads(scales):
        alpha, prob = scales.get("alpha", p["alpha"]), scales.get("prob", p["prob"])
        return ag.gradients(p["grad_d"], grad_c, p["a"], p["padded_offsets"], alpha, prob,
                            p["b"], None, p.get("bias"), N, False, "k_major", True,
                            "alpha" not in absent, "prob" not in absent, True, "bias" in p)

    with_none = dict(zip(NAMES, grads(dict.fromkeys(absent))))
    with_ones = dict(zip(NAMES, grads({name: ones[name] for name in absent})))
    for name in NAMES:
        if name in absent or name not in p:
            assert with_none[name] is None and with_ones[name] is None, name
        else:
            assert torch.equal(with_none[name], with_ones[name]), f"d{name} differs from ones'"


# --- the ops -----------------------------------------------------------------------------------

def fake_problem(device="cuda"):
    from torch._subclasses.fake_tensor import FakeTensorMode
    mode = FakeTensorMode()
    with mode:
        t = dict(a=torch.empty(512, 128, dtype=torch.bfloat16, device=device),
                 padded_offsets=torch.empty(4, dtype=torch.int32, device=device),
                 alpha=torch.empty(4, device=device), prob=torch.empty(512, device=device),
                 b=torch.empty(4, 256, 128, dtype=torch.bfloat16, device=device),
                 bias=torch.empty(4, 256, dtype=torch.float16, device=device))
    return mode, t


def test_the_backward_op_is_registered_with_a_fake():
    assert hasattr(torch.ops.ggemm, "grouped_gemm_backward")
    mode, t = fake_problem()
    with mode:
        grad_d = torch.empty(512, 256, device="cuda")
        da, dalpha, dprob, db, dbias = torch.ops.ggemm.grouped_gemm_backward(
            grad_d, None, t["a"], t["padded_offsets"], t["alpha"], t["prob"], t["b"], None,
            t["bias"], 256, False, "k_major", True, True, True, True, True)
        assert da.shape == (512, 128) and da.dtype == torch.bfloat16
        assert dalpha.shape == (4,) and dprob.shape == (512,) and dprob.dtype == torch.float32
        assert db.shape == (4, 256, 128) and db.dtype == torch.bfloat16
        assert dbias.shape == (4, 256) and dbias.dtype == torch.float16
        none = torch.ops.ggemm.grouped_gemm_backward(
            grad_d, None, t["a"], t["padded_offsets"], t["alpha"], t["prob"], t["b"], None,
            None, 256, False, "k_major", False, False, False, False, False)
        assert all(g.shape == (0,) for g in none)


@pytest.mark.parametrize("absent", [("alpha",), ("prob",), ("alpha", "prob")])
def test_the_eager_function_takes_none_alpha_or_prob(standins, monkeypatch, absent):
    """GroupedGemmFunction with a None alpha or prob: every other input gets the gradient it
    gets with a tensor of ones that needs none."""
    monkeypatch.setattr(gt, "_eager", standin_forward)
    p = make_problem(seed=8, bias_dtype=torch.float32, device="cpu")
    ones = dict(alpha=torch.ones_like(p["alpha"]), prob=torch.ones_like(p["prob"]))

    def grads(scales):
        leaves = {name: p[name].clone().requires_grad_() for name in NAMES if name not in absent}
        alpha, prob = (scales.get(name, leaves.get(name)) for name in ("alpha", "prob"))
        d, c = ag.GroupedGemmFunction.apply(leaves["a"], p["padded_offsets"], alpha, prob,
                                            leaves["b"], None, leaves["bias"], None,
                                            torch.float32, torch.bfloat16, True, False, 0, 0,
                                            0, 0, False, "k_major")
        return dict(zip(leaves, torch.autograd.grad([d, c], list(leaves.values()),
                                                    [p["grad_d"], p["grad_c"]])))

    with_none = grads(dict.fromkeys(absent))
    with_ones = grads({name: ones[name] for name in absent})
    assert set(with_none) == set(NAMES) - set(absent)
    for name, grad in with_none.items():
        assert torch.equal(grad, with_ones[name]), f"d{name} differs from ones'"


def test_the_custom_op_differentiates_through_the_backward_op():
    """Autograd on fake tensors runs the registered formula end to end (the op's forward and
    the backward op both by their fakes; fake CPU tensors, as the autograd engine would set up
    a CUDA device for CUDA ones): every differentiable input gets a gradient of its own shape
    and dtype."""
    mode, t = fake_problem(device="cpu")
    with mode:
        leaves = {name: t[name].requires_grad_() for name in ("a", "alpha", "prob", "b", "bias")}
        d, c = torch.ops.ggemm.grouped_gemm(t["a"], t["padded_offsets"], t["alpha"], t["prob"],
                                            t["b"], None, t["bias"], 256, torch.float32,
                                            torch.bfloat16, True, False, 0, 0, 0, 0, "k_major")
        grads = torch.autograd.grad([d, c], list(leaves.values()),
                                    [torch.empty_like(d), torch.empty_like(c)])
        for (name, leaf), grad in zip(leaves.items(), grads):
            assert grad.shape == leaf.shape and grad.dtype == leaf.dtype, (name, grad.shape)


def test_the_custom_op_differentiates_without_alpha_and_prob(monkeypatch):
    """The registered formula with alpha and prob None (fake tensors, as above): a, b and bias
    get their gradients, and the backward op is asked for none of alpha's or prob's."""
    asked, original = [], ag._backward_op

    def backward_op(*args):
        asked.append(args[-5:])  # need_a, need_alpha, need_prob, need_b, need_bias
        return original(*args)

    monkeypatch.setattr(ag, "_backward_op", backward_op)
    mode, t = fake_problem(device="cpu")
    with mode:
        leaves = {name: t[name].requires_grad_() for name in ("a", "b", "bias")}
        d, _ = torch.ops.ggemm.grouped_gemm(t["a"], t["padded_offsets"], None, None, t["b"],
                                            None, t["bias"], 256, torch.float32, torch.bfloat16,
                                            False, False, 0, 0, 0, 0, "k_major")
        grads = torch.autograd.grad([d], list(leaves.values()), [torch.empty_like(d)])
        for (name, leaf), grad in zip(leaves.items(), grads):
            assert grad.shape == leaf.shape and grad.dtype == leaf.dtype, (name, grad.shape)
    assert asked == [(True, False, False, True, True)]


def test_eager_calls_take_the_autograd_path_only_when_a_gradient_is_wanted():
    a = torch.zeros(2, requires_grad=True)
    assert gt._wants_grad(None, a)
    with torch.no_grad():
        assert not gt._wants_grad(None, a)
    assert not gt._wants_grad(torch.zeros(2), None)
