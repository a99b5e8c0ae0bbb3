"""ggemm.torch.wgrad's tensor rules on the fake tensors: every refusal names the tensor, what was
expected and what was given, before anything reaches the library."""
import pytest

from ggemm import _rules as rules
from fakes import DTYPES, FakeTensor


def operands(m=512, p=264, q=392, experts=4, out="none"):
    t = dict(x1=FakeTensor((m, p), "bfloat16"), x2=FakeTensor((m, q), "bfloat16", address=0x7F0000100000),
             padded_offsets=FakeTensor((experts,), "int32"), alpha=FakeTensor((experts,), "float32"),
             out=None)
    if out == "dense":
        t["out"] = FakeTensor((experts, p, q), "float32")
    elif out == "list":
        t["out"] = [FakeTensor((p, q), "float32", address=0x7F0001000000 + i * 0x100000) for i in range(experts)]
    return t


def check(t, out_dtype="float32", accumulate=False):
    return rules.check_wgrad_operands(DTYPES, t["x1"], t["x2"], t["padded_offsets"], t["alpha"], t["out"],
                                      out_dtype, accumulate)


def test_a_valid_call_gives_its_sizes_and_modes():
    ops = check(operands())
    assert (ops.m, ops.p, ops.q, ops.num_experts, ops.device) == (512, 264, 392, 4, 0)
    assert ops.out_dtype == 3 and ops.output_mode == 0
    assert check(operands(out="dense"), accumulate=True).output_mode == 0
    assert check(operands(out="list"), accumulate=True).output_mode == 1
    t = operands()
    t["alpha"] = None
    assert check(t, out_dtype="bfloat16").out_dtype == 1


@pytest.mark.parametrize("change, message", [
    (lambda t: t.update(x1=FakeTensor((512, 264), "float16")), r"^x1: expected dtype bfloat16, got float16$"),
    (lambda t: t.update(x1=FakeTensor((512, 264), "bfloat16", device=None)), r"^x1: expected a CUDA tensor, got a CPU tensor$"),
    (lambda t: t.update(x1=FakeTensor((512, 264), "bfloat16", strides=(1, 512))),
     r"^x1: expected a row-major \(M, P\) matrix, got shape \(512, 264\) with strides \(1, 512\)$"),
    (lambda t: t.update(x2=FakeTensor((256, 392), "bfloat16")),
     r"^x2: expected a row-major \(M, Q\) matrix with M = 512, got shape \(256, 392\)"),
    (lambda t: t.update(x2=FakeTensor((512, 392), "bfloat16", device=1)),
     r"^x2: expected a tensor on cuda:0 \(the device of x1\), got a CUDA tensor on device 1$"),
    (lambda t: t.update(x1=FakeTensor((500, 264), "bfloat16"), x2=FakeTensor((500, 392), "bfloat16")),
     r"^x1: expected M \(rows\) a multiple of 256, got M = 500$"),
    (lambda t: t.update(x1=FakeTensor((512, 100), "bfloat16")), r"^P: expected a multiple of 8, at least 8, got 100$"),
    (lambda t: t.update(x1=FakeTensor((512, 264), "bfloat16", address=0x7F0000000008)),
     r"^x1: expected data aligned to 16 bytes, got address 0x7f0000000008$"),
    (lambda t: t.update(padded_offsets=FakeTensor((4,), "int64")), r"^padded_offsets: expected dtype int32, got int64$"),
    (lambda t: t.update(padded_offsets=FakeTensor((0,), "int32")), r"^padded_offsets: expected 1..1024 experts, got 0$"),
    (lambda t: t.update(alpha=FakeTensor((3,), "float32")),
     r"^alpha: expected a contiguous vector of shape \(L,\) = \(4,\), got shape \(3,\)"),
    (lambda t: t.update(out=FakeTensor((4, 264, 392), "bfloat16")), r"^out: expected dtype float32 \(out_dtype\), got bfloat16$"),
    (lambda t: t.update(out=FakeTensor((4, 392, 264), "float32")),
     r"^out: expected a contiguous \(L, P, Q\) = \(4, 264, 392\) tensor, got shape \(4, 392, 264\)"),
    (lambda t: t.update(out=[FakeTensor((264, 392), "float32")] * 3),
     r"^out: expected one \(P, Q\) tensor per expert \(L = 4\), got 3 tensors$"),
    (lambda t: t.update(out=[FakeTensor((264, 392), "float32")] * 3 + [FakeTensor((264, 392), "float32", address=0x7F0000000004)]),
     r"^out\[3\]: expected data aligned to 16 bytes, got address 0x7f0000000004$"),
])
def test_refusals(change, message):
    t = operands()
    change(t)
    with pytest.raises(ValueError, match=message):
        check(t)


def test_accumulate_needs_an_output():
    with pytest.raises(ValueError, match=r"^out: expected the gradient buffer\(s\) to add into when accumulate=True, got None$"):
        check(operands(), accumulate=True)


def test_unknown_output_dtype():
    with pytest.raises(ValueError, match=r"^out_dtype: expected bfloat16, float16 or float32, got int32$"):
        check(operands(), out_dtype="int32")


def test_torch_wgrad_refuses_cpu_tensors_before_any_call():
    torch = pytest.importorskip("torch", reason="torch is not installed")
    import ggemm.torch as gt
    x1 = torch.zeros(256, 64, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match=r"^x1: expected a CUDA tensor, got a CPU tensor$"):
        gt.wgrad(x1, x1, torch.zeros(2, dtype=torch.int32))
