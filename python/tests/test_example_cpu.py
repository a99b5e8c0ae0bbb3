"""examples/python/moe_layer.py's forward and training step on the CPU, with ggemm's entry points
replaced by PyTorch implementations of their documented contracts (docs/python.md): checks what
the example composes (layouts, the GLU's interleaving, which gradient goes where, the router's
share of the gradients) against its own fp32 autograd reference. The library itself runs in
test_example.py, on a GPU."""
import importlib.util
import os

import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402

import ggemm.torch as gt  # noqa: E402

EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "python", "moe_layer.py")
GATE_UP = 32  # glu's interleaved blocks: 32 gate columns, then their 32 up columns


def segments(padded_offsets):
    begin = 0
    for g, end in enumerate(padded_offsets.tolist()):
        yield g, begin, end
        begin = end


def uncomputed(m, n, dtype=torch.float32):
    """An output whose rows no expert computes stay NaN, so that reading them shows."""
    return torch.full((m, n), float("nan"), dtype=dtype)


def gate_up(pre):
    blocks = pre.view(pre.shape[0], -1, 2, GATE_UP)
    return blocks[:, :, 0].reshape(pre.shape[0], -1), blocks[:, :, 1].reshape(pre.shape[0], -1)


def interleave(d_gate, d_up):
    return torch.stack((d_gate.view(d_gate.shape[0], -1, GATE_UP),
                        d_up.view(d_up.shape[0], -1, GATE_UP)), dim=2).reshape(d_gate.shape[0], -1)


def scale(x, prob):
    return x if prob is None else x * prob[:, None]


def grouped_gemm(a, padded_offsets, alpha=None, prob=None, b=None, weight_layout="k_major", **_):
    assert alpha is None
    n = b.shape[1] if weight_layout == "k_major" else b.shape[2]
    out = uncomputed(a.shape[0], n)
    for g, begin, end in segments(padded_offsets):
        w = b[g].float()
        out[begin:end] = a[begin:end].float() @ (w.T if weight_layout == "k_major" else w)
    return gt.GroupedGemmResult(scale(out, prob).to(torch.bfloat16), None)


def glu(a, padded_offsets, alpha=None, prob=None, b=None, generate_c=False, **_):
    pre = grouped_gemm(a, padded_offsets, alpha, None, b).d.float()  # C is stored in bf16
    exact = uncomputed(*pre.shape)
    for g, begin, end in segments(padded_offsets):
        exact[begin:end] = a[begin:end].float() @ b[g].float().T
    gate, up = gate_up(exact)
    d = scale(F.silu(gate) * up, prob).to(torch.bfloat16)
    return gt.GroupedGemmResult(d, pre.to(torch.bfloat16) if generate_c else None)


def dglu(dy, padded_offsets, alpha, prob, pre, b=None, **_):
    assert alpha is None
    m = dy.shape[0]
    r = uncomputed(m, b.shape[2])
    for g, begin, end in segments(padded_offsets):
        r[begin:end] = dy[begin:end].float() @ b[g].float()
    gate, up = gate_up(pre.float())
    sig = torch.sigmoid(gate)
    d_gate = scale(r, prob) * up * sig * (1 + gate * (1 - sig))
    d_up = scale(r, prob) * gate * sig
    d_prob = torch.nan_to_num((r * F.silu(gate) * up).sum(dim=1), nan=0.0)
    return interleave(d_gate, d_up).to(torch.bfloat16), d_prob


def wgrad(x1, x2, padded_offsets, alpha=None, **_):
    assert alpha is None
    out = torch.zeros(padded_offsets.shape[0], x1.shape[1], x2.shape[1])
    for g, begin, end in segments(padded_offsets):
        out[g] = x1[begin:end].float().T @ x2[begin:end].float()
    return out


@pytest.fixture
def moe_layer(monkeypatch):
    for name, fake in (("grouped_gemm", grouped_gemm), ("glu", glu), ("dglu", dglu), ("wgrad", wgrad)):
        monkeypatch.setattr(gt, name, fake)
    spec = importlib.util.spec_from_file_location("moe_layer", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def relative_error(ours, ref):
    return float((ours.float() - ref.float()).norm() / ref.float().norm())


def block(moe_layer):
    """A small block and a batch of tokens for it, the same in every test."""
    torch.manual_seed(0)
    moe = moe_layer.MoE(hidden=256, ffn=128, experts=6, top_k=2, device="cpu")
    return moe, torch.randn(300, 256).to(torch.bfloat16)


def training_steps(moe_layer):
    """The example's training step and its fp32 autograd reference, on one upstream gradient."""
    moe, x = block(moe_layer)
    dout = torch.randn(300, 256).to(torch.bfloat16)
    return moe.train_step_ggemm(x, dout), moe.train_step_reference(x, dout)


def test_forward_matches_the_eager_reference(moe_layer):
    moe, x = block(moe_layer)
    assert relative_error(moe.forward_ggemm(x), moe.forward_reference(x)) < 1e-2


def test_training_step_matches_fp32_autograd(moe_layer):
    ours, refs = training_steps(moe_layer)
    for name, o, r in zip(("out", "dx", "d_router", "dw1", "dw2"), ours, refs):
        assert o.shape == r.shape, name
        assert relative_error(o, r) < 1e-2, name


def test_a_wrong_gradient_is_caught(moe_layer, monkeypatch):
    """The comparison can fail: dGLU without the probabilities' scaling gives wrong gradients."""
    monkeypatch.setattr(gt, "dglu", lambda dy, offs, alpha, prob, pre, b=None, **kw:
                        dglu(dy, offs, alpha, None, pre, b))
    ours, refs = training_steps(moe_layer)
    assert relative_error(ours[3], refs[3]) > 1e-1  # dw1
