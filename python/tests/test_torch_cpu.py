"""ggemm.torch where torch is installed but no GPU is needed: the custom op's registration and
shape function, and refusals of tensors that are not on a CUDA device."""
import pytest

torch = pytest.importorskip("torch", reason="torch is not installed")
import ggemm.torch as gt  # noqa: E402


def cpu_problem():
    return dict(a=torch.zeros(512, 128, dtype=torch.bfloat16),
                padded_offsets=torch.zeros(4, dtype=torch.int32),
                alpha=torch.ones(4), prob=torch.ones(512),
                b=torch.zeros(4, 256, 128, dtype=torch.bfloat16))


def test_cpu_tensors_are_refused_before_any_call():
    with pytest.raises(ValueError, match=r"^a: expected a CUDA tensor, got a CPU tensor$"):
        gt.grouped_gemm(**cpu_problem())


def test_the_custom_op_is_registered():
    assert hasattr(torch.ops.ggemm, "grouped_gemm")


def test_fake_implementation_gives_output_shapes():
    from torch._subclasses.fake_tensor import FakeTensorMode
    with FakeTensorMode():
        p = cpu_problem()
        d, c = torch.ops.ggemm.grouped_gemm(p["a"], p["padded_offsets"], p["alpha"], p["prob"],
                                            p["b"], None, None, 256, torch.bfloat16,
                                            torch.float32, False, False, 0, 0, 0, 0)
        assert d.shape == (512, 256) and d.dtype == torch.float32
        assert c.shape == (0,)
        d, c = torch.ops.ggemm.grouped_gemm(p["a"], p["padded_offsets"], p["alpha"], p["prob"],
                                            p["b"], None, None, 256, torch.float16,
                                            torch.bfloat16, True, False, 0, 0, 0, 0)
        assert c.shape == (512, 256) and c.dtype == torch.float16


def test_b_ptrs_refuses_mixed_shapes():
    with pytest.raises(ValueError, match=r"^weights\[1\]: expected a contiguous \(N, K\) = \(8, 8\) tensor"):
        gt.b_ptrs([torch.zeros(8, 8, dtype=torch.bfloat16), torch.zeros(8, 16, dtype=torch.bfloat16)])
