"""The tensor rules (ggemm._rules), on light fakes: every layout accepted and every refusal's
message. These are the checks ggemm.torch runs before anything is launched."""
import re

import pytest

from ggemm import _library as lib
from ggemm import _rules as rules
from fakes import DTYPES, FakeTensor, problem


def check(**tensors):
    return rules.check_operands(DTYPES, **tensors)


def refused(pattern, **tensors):
    with pytest.raises(ValueError, match=pattern):
        check(**tensors)


def test_natural_dense_problem():
    ops = check(**problem(m=768, n=256, k=128, experts=3))
    assert (ops.m, ops.n, ops.k, ops.num_experts, ops.device) == (768, 256, 128, 3, 0)
    assert ops.weight_mode == lib.WEIGHTS_DENSE and ops.bias_dtype == lib.DTYPE_NONE
    assert not (ops.spec_a or ops.spec_b or ops.spec_bias or ops.spec_prob)


def test_specification_views_are_the_same_problem():
    natural = check(**problem(bias=True))
    spec = check(**problem(bias=True, spec=True))
    assert natural[:7] == spec[:7]
    assert spec.spec_a and spec.spec_b and spec.spec_bias and spec.spec_prob


@pytest.mark.parametrize("absent", [("alpha",), ("prob",), ("alpha", "prob")])
@pytest.mark.parametrize("spec", [False, True])
def test_alpha_and_prob_may_be_none(absent, spec):
    """None is the library's NULL (every value 1): the problem is the one with the tensors."""
    with_both = check(**problem(bias=True, spec=spec))
    t = problem(bias=True, spec=spec)
    t.update(dict.fromkeys(absent))
    ops = check(**t)
    assert ops._replace(spec_prob=with_both.spec_prob) == with_both
    assert ops.spec_prob == (spec and "prob" not in absent)


@pytest.mark.parametrize("name,bad,message", [
    ("alpha", FakeTensor((4,), "bfloat16"), r"^alpha: expected dtype float32, got bfloat16$"),
    ("alpha", FakeTensor((4,), "float32", address=0x7F0000000004),
     r"^alpha: expected data aligned to 16 bytes, got address 0x7f0000000004$"),
    ("prob", FakeTensor((512,), "float32", (2,)),
     r"^prob: expected shape \(M,\) = \(512,\) contiguous, or the \(M, 1, 1\) view, got shape "
     r"\(512,\) with strides \(2,\)$"),
    ("prob", FakeTensor((512,), "float32", device=None),
     r"^prob: expected a tensor on cuda:0 \(the device of a\), got a CPU tensor on device -1$"),
])
def test_a_given_alpha_or_prob_is_checked_when_the_other_is_none(name, bad, message):
    t = problem()
    t["prob" if name == "alpha" else "alpha"] = None
    t[name] = bad
    refused(message, **t)


def test_size_one_dimensions_take_any_stride():
    t = problem(experts=1)
    t["b"] = FakeTensor((1, 256, 128), "bfloat16", (12345, 128, 1))
    t["a"] = FakeTensor((512, 128, 1), "bfloat16", (128, 1, 7))
    assert check(**t).num_experts == 1


def test_bias_dtypes_map_to_library_codes():
    for dtype, code in (("bfloat16", lib.DTYPE_BF16), ("float16", lib.DTYPE_FP16),
                        ("float32", lib.DTYPE_FP32)):
        t = problem()
        t["bias"] = FakeTensor((4, 256), dtype)
        assert check(**t).bias_dtype == code


def test_discrete_weights_need_n():
    t = problem()
    del t["b"]
    t["b_ptrs"] = FakeTensor((4,), "int64")
    refused(r"^n: expected the rows N of each expert's weights \(needed with b_ptrs\), got None$", **t)
    ops = check(n=384, **t)
    assert ops.weight_mode == lib.WEIGHTS_DISCRETE and ops.n == 384


@pytest.mark.parametrize("name,bad,message", [
    ("a", FakeTensor((512, 128), "float16"), r"^a: expected dtype bfloat16, got float16$"),
    ("a", FakeTensor((512, 128), "bfloat16", (1, 512)),
     r"^a: expected shape \(M, K\) with strides \(K, 1\).*got shape \(512, 128\) with strides \(1, 512\)$"),
    ("a", FakeTensor((300, 128), "bfloat16"), r"^a: expected M \(rows\) a multiple of 256, got M = 300$"),
    ("a", FakeTensor((512, 100), "bfloat16"), r"^a: expected K \(columns\) >= 8 and a multiple of 8, got K = 100$"),
    ("a", FakeTensor((512, 128), "bfloat16", device=None), r"^a: expected a CUDA tensor, got a CPU tensor$"),
    ("a", FakeTensor((512, 128), "bfloat16", address=0x7F0000000008),
     r"^a: expected data aligned to 16 bytes, got address 0x7f0000000008$"),
    ("padded_offsets", FakeTensor((4,), "int64"), r"^padded_offsets: expected dtype int32, got int64$"),
    ("padded_offsets", FakeTensor((4,), "int32", (2,)),
     r"^padded_offsets: expected a contiguous vector of shape \(L,\) = \(4,\), got shape \(4,\) with strides \(2,\)$"),
    ("alpha", FakeTensor((3,), "float32"), r"^alpha: expected a contiguous vector of shape \(L,\) = \(4,\)"),
    ("alpha", FakeTensor((4,), "float32", device=1),
     r"^alpha: expected a tensor on cuda:0 \(the device of a\), got a CUDA tensor on device 1$"),
    ("prob", FakeTensor((512, 1), "float32"), r"^prob: expected shape \(M,\) = \(512,\) contiguous, or the \(M, 1, 1\) view"),
    ("prob", FakeTensor((512,), "bfloat16"), r"^prob: expected dtype float32, got bfloat16$"),
    ("b", FakeTensor((4, 256, 64), "bfloat16"),
     r"^b: expected shape \(L, N, K\) = \(4, N, 128\).*got shape \(4, 256, 64\) with strides"),
    ("b", FakeTensor((4, 256, 128), "bfloat16", (256 * 128, 1, 256)), r"^b: expected shape \(L, N, K\)"),
    ("b", FakeTensor((4, 256, 128), "bfloat16", address=0x7F0000000004), r"^b: expected data aligned to 16 bytes"),
    ("bias", FakeTensor((4, 128), "float32"),
     r"^bias: expected shape \(L, N\) = \(4, 256\) with strides \(N, 1\), or the \(N, L\) view.*got shape \(4, 128\)"),
    ("bias", FakeTensor((4, 256), "int32"), r"^bias: expected dtype bfloat16, float16 or float32, got int32$"),
])
def test_each_refusal_names_tensor_expected_and_given(name, bad, message):
    t = problem()
    t[name] = bad
    refused(message, **t)


def test_weight_source_both_or_neither():
    t = problem()
    refused(r"^b / b_ptrs: expected exactly one weight source .*, got both$",
            b_ptrs=FakeTensor((4,), "int64"), n=256, **t)
    del t["b"]
    refused(r"^b / b_ptrs: expected exactly one weight source .*, got neither$", **t)


def test_b_ptrs_rules():
    t = problem()
    del t["b"]
    refused(r"^b_ptrs: expected dtype int64", b_ptrs=FakeTensor((4,), "int32"), n=256, **t)
    refused(r"^b_ptrs: expected a contiguous vector of shape \(L,\) = \(4,\), got shape \(5,\)",
            b_ptrs=FakeTensor((5,), "int64"), n=256, **t)
    refused(r"^b_ptrs: expected data aligned to 8 bytes, got address 0x7f0000000004$",
            b_ptrs=FakeTensor((4,), "int64", address=0x7F0000000004), n=256, **t)
    refused(r"^n: expected N >= 8 and a multiple of 8, got 100$", b_ptrs=FakeTensor((4,), "int64"),
            n=100, **t)
    refused(r"^n: expected an int, got 256.0$", b_ptrs=FakeTensor((4,), "int64"), n=256.0, **t)


def test_n_must_agree_with_dense_b():
    refused(r"^n: expected N of b \(256\) or None, got 128$", n=128, **problem())
    assert check(n=256, **problem()).n == 256


def test_expert_count_limits():
    t = problem(experts=1)
    t["padded_offsets"] = FakeTensor((0,), "int32")
    refused(r"^padded_offsets: expected 1 to 1024 experts \(its length L\), got L = 0$", **t)


def test_addresses_false_skips_alignment_only():
    t = problem()
    t["a"] = FakeTensor((512, 128), "bfloat16", address=3)
    assert rules.check_operands(DTYPES, addresses=False, **t).m == 512
    t["a"] = FakeTensor((512, 128), "bfloat16", device=None, address=3)
    with pytest.raises(ValueError, match="^a: expected a CUDA tensor"):
        rules.check_operands(DTYPES, addresses=False, **t)


def test_outputs_natural_or_specification_view():
    ops = check(**problem())
    rules.check_output(DTYPES, "d", FakeTensor((512, 256), "bfloat16"), ops, "bfloat16")
    rules.check_output(DTYPES, "d", FakeTensor((512, 256, 1), "bfloat16", (256, 1, 512 * 256)),
                       ops, "bfloat16")
    for bad, message in (
            (FakeTensor((512, 256), "float32"), r"^d: expected dtype bfloat16, got float32$"),
            (FakeTensor((256, 256), "bfloat16"), r"^d: expected shape \(M, N\) = \(512, 256\)"),
            (FakeTensor((512, 256), "bfloat16", (1, 512)), r"with strides \(1, 512\)$"),
            (FakeTensor((512, 256), "bfloat16", device=1), r"^d: expected a tensor on cuda:0")):
        with pytest.raises(ValueError, match=message):
            rules.check_output(DTYPES, "d", bad, ops, "bfloat16")


def test_output_dtypes():
    assert rules.output_code(DTYPES, "c_dtype", "float16") == lib.DTYPE_FP16
    with pytest.raises(ValueError, match=r"^d_dtype: expected bfloat16, float16 or float32, got int8$"):
        rules.output_code(DTYPES, "d_dtype", "int8")


def test_execute_must_fit_the_plan():
    plan = check(**problem(bias=True))
    other = problem(n=128, bias=True)
    other["bias"] = FakeTensor((4, 128), "float32")
    with pytest.raises(ValueError, match=re.escape("N: expected 256 (the plan's), got 128")):
        rules.check_same_problem(plan, check(**other))
    with pytest.raises(ValueError, match=r"^bias: expected a bias of the plan's dtype, got no bias$"):
        rules.check_same_problem(plan, check(**problem()))
    t = problem()
    del t["b"]
    with pytest.raises(ValueError, match=r"^b / b_ptrs: expected the plan's weight mode \(dense b\)"):
        rules.check_same_problem(check(**problem()), check(b_ptrs=FakeTensor((4,), "int64"), n=256, **t))


# --- N-major weights (weight_layout "n_major"): b is (L, K, N) --------------------------------------

def n_major(m=512, n=192, k=128, experts=4):
    t = problem(m=m, n=n, k=k, experts=experts)
    t["b"] = FakeTensor((experts, k, n), "bfloat16")
    return t


def test_n_major_weights_are_l_k_n():
    ops = rules.check_operands(DTYPES, **n_major(), weight_layout=lib.WEIGHT_LAYOUT_N_MAJOR)
    assert (ops.m, ops.n, ops.k, ops.num_experts) == (512, 192, 128, 4)
    assert ops.weight_layout == lib.WEIGHT_LAYOUT_N_MAJOR and not ops.spec_b
    # The default stays K-major, and the same tensor read K-major is refused (its last dim is N).
    assert check(**problem()).weight_layout == lib.WEIGHT_LAYOUT_K_MAJOR
    refused(r"b: expected shape \(L, N, K\)", **n_major())


def test_n_major_refuses_k_major_and_specification_shapes():
    k_major = problem(n=192, k=128)
    with pytest.raises(ValueError, match=re.escape("b: expected N-major weights of shape (L, K, N) = (4, 128, N)")):
        rules.check_operands(DTYPES, **k_major, weight_layout=lib.WEIGHT_LAYOUT_N_MAJOR)
    spec = problem(spec=True)
    with pytest.raises(ValueError, match="N-major weights"):
        rules.check_operands(DTYPES, **spec, weight_layout=lib.WEIGHT_LAYOUT_N_MAJOR)
    t = n_major()
    t["b"] = FakeTensor((4, 128, 192), "bfloat16", (128 * 192, 1, 128))  # (L, K, N) view of (L, N, K)
    with pytest.raises(ValueError, match="strides"):
        rules.check_operands(DTYPES, **t, weight_layout=lib.WEIGHT_LAYOUT_N_MAJOR)


def test_n_major_discrete_takes_n_and_the_plan_compares_layouts():
    t = n_major()
    del t["b"]
    t["b_ptrs"] = FakeTensor((4,), "int64")
    ops = rules.check_operands(DTYPES, **t, n=192, weight_layout=lib.WEIGHT_LAYOUT_N_MAJOR)
    assert ops.weight_mode == lib.WEIGHTS_DISCRETE and ops.n == 192
    other = ops._replace(weight_layout=lib.WEIGHT_LAYOUT_K_MAJOR)
    with pytest.raises(ValueError, match=re.escape("weight_layout: expected the plan's (n_major), got k_major")):
        rules.check_same_problem(ops, other)


def test_weight_layout_names():
    assert rules.weight_layout_code("k_major") == lib.WEIGHT_LAYOUT_K_MAJOR
    assert rules.weight_layout_code("n_major") == lib.WEIGHT_LAYOUT_N_MAJOR
    for bad in ("N_MAJOR", "nmajor", 1, None):
        with pytest.raises(ValueError, match="weight_layout: expected 'k_major' or 'n_major'"):
            rules.weight_layout_code(bad)
