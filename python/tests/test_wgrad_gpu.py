"""ggemm.torch.wgrad on the GPU against an fp64 reference: dense and per-expert outputs, every
output dtype, accumulate (empty experts untouched) and overwrite (empty experts zero)."""
import pytest

from conftest import TOLERANCE, relative_error, requires_torch_cuda

torch = pytest.importorskip("torch", reason="torch is not installed")


def make(offsets, p=264, q=392, seed=0):
    g = torch.Generator().manual_seed(seed)
    m = offsets[-1] + 256
    x1 = (torch.rand(m, p, generator=g) * 2 - 1).to(torch.bfloat16).cuda()
    x2 = (torch.rand(m, q, generator=g) * 2 - 1).to(torch.bfloat16).cuda()
    alpha = (torch.rand(len(offsets), generator=g) + 0.5).cuda()
    return x1, x2, torch.tensor(offsets, dtype=torch.int32).cuda(), alpha


def reference(x1, x2, offsets, alpha):
    out, begin = [], 0
    for g, end in enumerate(offsets):
        a, b = x1[begin:end].double().cpu(), x2[begin:end].double().cpu()
        out.append(alpha[g].double().cpu() * (a.T @ b))
        begin = end
    return torch.stack(out)


@requires_torch_cuda
@pytest.mark.parametrize("out_dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_overwrite_dense(out_dtype):
    import ggemm.torch as gt
    offsets = [512, 512, 1280, 2048]  # expert 1 is empty: zeros
    x1, x2, offs, alpha = make(offsets)
    w = gt.wgrad(x1, x2, offs, alpha, out_dtype=out_dtype, check_status=True)
    assert w.shape == (4, 264, 392) and w.dtype == out_dtype
    ref = reference(x1, x2, offsets, alpha)
    assert relative_error(w.double().cpu().numpy(), ref.numpy()) < TOLERANCE[str(out_dtype).split(".")[1]]
    assert torch.count_nonzero(w[1]) == 0


@requires_torch_cuda
def test_accumulate_into_per_expert_buffers():
    import ggemm.torch as gt
    offsets = [256, 256, 1024]  # expert 1 is empty: its buffer stays as it was
    x1, x2, offs, alpha = make(offsets, p=136, q=520, seed=1)
    grads = [torch.randn(136, 520, device="cuda") for _ in offsets]
    before = [g.clone() for g in grads]
    out = gt.wgrad(x1, x2, offs, None, out=grads, accumulate=True, check_status=True)
    assert out is grads
    ref = reference(x1, x2, offsets, torch.ones(3))
    for g in (0, 2):
        expected = before[g].double().cpu() + ref[g]
        assert relative_error(grads[g].double().cpu().numpy(), expected.numpy()) < 1e-5
    assert torch.equal(grads[1], before[1])


@requires_torch_cuda
def test_schedulers_are_bitwise_equal():
    import ggemm.torch as gt
    offsets = [256, 2304, 2304, 2560, 5120]  # uneven experts, one empty: the deal differs
    x1, x2, offs, alpha = make(offsets, p=392, q=520, seed=2)
    dynamic = gt.wgrad(x1, x2, offs, alpha, out_dtype=torch.bfloat16, check_status=True)
    static = gt.wgrad(x1, x2, offs, alpha, out_dtype=torch.bfloat16, dynamic_sched=False, check_status=True)
    assert torch.equal(dynamic.view(torch.int16), static.view(torch.int16))
    ref = reference(x1, x2, offsets, alpha)
    assert relative_error(dynamic.double().cpu().numpy(), ref.numpy()) < TOLERANCE["bfloat16"]
