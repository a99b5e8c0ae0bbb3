"""The fused GLU's Python rules (ggemm._rules), no framework or GPU needed: activation names and
constants, the pre-activation width, and the [gate | up] row permutation."""
import math

import pytest

from ggemm import _library as lib
from ggemm import _rules as rules


def test_activation_names_and_codes():
    assert rules.glu_settings("swiglu", 1.702, 7.0, 1.0) == (lib.ACTIVATION_SWIGLU, 1.702, 7.0, 1.0)
    assert rules.glu_settings("geglu_clamped", 1.0, 2.5, 0.5) == (lib.ACTIVATION_CLAMPED_GEGLU, 1.0, 2.5, 0.5)
    for name in ("SwiGLU", "gelu", None, 1):
        with pytest.raises(ValueError, match=r"^activation: expected 'swiglu' or 'geglu_clamped', got "):
            rules.glu_settings(name, 1.702, 7.0, 1.0)


def test_swiglu_ignores_the_constants():
    # They shape nothing for SwiGLU, so they do not split the plan cache either.
    assert rules.glu_settings("swiglu", float("nan"), 0.0, None) == (lib.ACTIVATION_SWIGLU,) + lib.GLU_DEFAULTS


@pytest.mark.parametrize("field,values", [("glu_scale", (math.inf, 7.0, 1.0)),
                                          ("glu_limit", (1.702, math.nan, 1.0)),
                                          ("glu_offset", (1.702, 7.0, "one"))])
def test_clamped_geglu_constants_must_be_finite(field, values):
    with pytest.raises(ValueError, match=rf"^{field}: expected a finite number, got "):
        rules.glu_settings("geglu_clamped", *values)


def test_clamped_geglu_limit_must_be_positive():
    for limit in (0.0, -1.0):
        with pytest.raises(ValueError, match=r"^glu_limit: expected a number > 0, got "):
            rules.glu_settings("geglu_clamped", 1.702, limit, 1.0)


def test_the_width_is_whole_gate_and_up_blocks():
    rules.check_glu_width(64)
    rules.check_glu_width(5760)
    with pytest.raises(ValueError, match=r"^n: expected N \(the pre-activation width\) a multiple of 64 "
                                         r"with an activation, got N = 96$"):
        rules.check_glu_width(96)


def test_interleave_rows_takes_halves_to_blocks():
    rows = rules.glu_interleave_rows(128)
    assert rows == list(range(0, 32)) + list(range(64, 96)) + list(range(32, 64)) + list(range(96, 128))
    for n in (64, 192, 5760):
        rows = rules.glu_interleave_rows(n)
        assert sorted(rows) == list(range(n))
        for i, source in enumerate(rows):
            gate = i % 64 < 32
            assert (source < n // 2) == gate
            assert (source if gate else source - n // 2) == i // 64 * 32 + i % 32
    for n in (0, 96, -64, 64.0):
        with pytest.raises(ValueError, match=r"^n: expected a positive multiple of 64, got "):
            rules.glu_interleave_rows(n)


def test_dglu_saved_pre_activation_rules():
    from fakes import DTYPES, FakeTensor, problem
    t = problem(m=512, n=96, k=128)  # N = 96: the activation's width, whole 32-column blocks
    ops = rules.check_operands(DTYPES, **t)
    assert rules.check_glu_pre(DTYPES, FakeTensor((512, 192), "bfloat16"), ops) == lib.DTYPE_BF16
    assert rules.check_glu_pre(DTYPES, FakeTensor((512, 192), "float32"), ops) == lib.DTYPE_FP32
    with pytest.raises(ValueError, match=r"^pre: expected shape \(M, 2N\) = \(512, 192\) with strides \(2N, 1\), "
                                         r"got shape \(512, 96\)"):
        rules.check_glu_pre(DTYPES, FakeTensor((512, 96), "bfloat16"), ops)
    with pytest.raises(ValueError, match=r"^pre: expected shape .* got shape \(512, 192\) with strides \(1, 512\)$"):
        rules.check_glu_pre(DTYPES, FakeTensor((512, 192), "bfloat16", strides=(1, 512)), ops)
    with pytest.raises(ValueError, match=r"^pre: expected bfloat16, float16 or float32"):
        rules.check_glu_pre(DTYPES, FakeTensor((512, 192), "int32"), ops)
    with pytest.raises(ValueError, match=r"^pre: expected a tensor on cuda:0"):
        rules.check_glu_pre(DTYPES, FakeTensor((512, 192), "bfloat16", device=None), ops)
    with pytest.raises(ValueError, match=r"^pre: expected the saved \(M, 2N\) pre-activation, got None$"):
        rules.check_glu_pre(DTYPES, None, ops)
    narrow = rules.check_operands(DTYPES, **problem(m=512, n=72, k=128))
    with pytest.raises(ValueError, match=r"^n: expected N \(the activation's width\) a multiple of 32, got N = 72$"):
        rules.check_glu_pre(DTYPES, FakeTensor((512, 144), "bfloat16"), narrow)
