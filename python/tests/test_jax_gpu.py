"""ggemm.jax on a GPU: eager and jit against a float64 reference, new offsets without
retracing, and what rows at or past the last offset hold."""
import numpy as np
import pytest

from conftest import TOLERANCE, relative_error, requires_jax_cuda

pytestmark = requires_jax_cuda
jax = pytest.importorskip("jax", reason="jax is not installed")
import jax.numpy as jnp  # noqa: E402

import ggemm.jax as gj  # noqa: E402

M, N, K = 1024, 256, 320
OFFSETS = [256, 256, 768, 768]


def make_inputs(offsets=OFFSETS, bias_dtype=None, seed=0):
    rng = np.random.default_rng(seed)
    L = len(offsets)
    t = dict(a=jnp.asarray(rng.standard_normal((M, K)), jnp.bfloat16),
             b=jnp.asarray(rng.standard_normal((L, N, K)) * K ** -0.5, jnp.bfloat16),
             padded_offsets=jnp.asarray(offsets, jnp.int32),
             alpha=jnp.asarray(rng.uniform(0.5, 1.5, L), jnp.float32),
             prob=jnp.asarray(rng.uniform(0.1, 1.0, M), jnp.float32))
    if bias_dtype is not None:
        t["bias"] = jnp.asarray(rng.standard_normal((L, N)), bias_dtype)
    return t


def reference(a, b, padded_offsets, alpha, prob, bias=None):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    alpha, prob = np.asarray(alpha, np.float64), np.asarray(prob, np.float64)
    c = np.zeros((a.shape[0], b.shape[1]))
    d = np.zeros_like(c)
    begin = 0
    for g, end in enumerate(np.asarray(padded_offsets).tolist()):
        if end > begin:
            acc = a[begin:end] @ b[g].T * alpha[g]
            p = prob[begin:end, None]
            if bias is not None:
                c[begin:end] = d[begin:end] = acc + p * np.asarray(bias, np.float64)[g][None, :]
            else:
                c[begin:end], d[begin:end] = acc, acc * p
        begin = max(begin, end)
    return c, d


@pytest.mark.parametrize("bias_dtype", [None, jnp.bfloat16, jnp.float32])
@pytest.mark.parametrize("mode", ["dense", "discrete"])
@pytest.mark.parametrize("use_jit", [False, True])
def test_matches_reference(bias_dtype, mode, use_jit):
    t = make_inputs(bias_dtype=bias_dtype)
    ref_c, ref_d = reference(**t)
    call = dict(t)
    if mode == "discrete":
        # Slices of b are new arrays: they are kept alive here for as long as the calls run.
        weights = [t["b"][g] for g in range(len(OFFSETS))]
        call["b_ptrs"] = gj.b_ptrs(weights)
        call["n"] = N
        del call["b"]
    fn = lambda **kw: gj.grouped_gemm(**kw, generate_c=True, c_dtype=jnp.float32,  # noqa: E731
                                      dynamic_sched=mode == "discrete")
    if use_jit:
        static_n = call.pop("n", None)
        fn_jit = jax.jit(lambda **kw: gj.grouped_gemm(**kw, n=static_n, generate_c=True,
                                                       c_dtype=jnp.float32,
                                                       dynamic_sched=mode == "discrete"))
        d, c = fn_jit(**call)
    else:
        d, c = fn(**call)
    last = OFFSETS[-1]
    assert relative_error(np.asarray(d[:last], np.float64), ref_d[:last]) < TOLERANCE["bfloat16"]
    assert relative_error(np.asarray(c[:last]), ref_c[:last]) < TOLERANCE["float32"]
    # zero_tail (the default): rows at or past the last offset are zero.
    assert not np.asarray(d[last:], np.float32).any() and not np.asarray(c[last:]).any()


def test_jit_takes_new_offsets_without_retracing():
    traces = []

    @jax.jit
    def step(a, padded_offsets, alpha, prob, b):
        traces.append(1)
        return gj.grouped_gemm(a, padded_offsets, alpha, prob, b=b).d

    t = make_inputs()
    for offsets in ([256, 256, 768, 768], [1024, 1024, 1024, 1024], [0, 256, 512, 1024]):
        t["padded_offsets"] = jnp.asarray(offsets, jnp.int32)
        d = step(**t)
        _, ref_d = reference(**t)
        last = offsets[-1]
        assert relative_error(np.asarray(d[:last], np.float64), ref_d[:last]) < TOLERANCE["bfloat16"]
        assert not np.asarray(d[last:], np.float32).any()
    assert len(traces) == 1


def test_eager_equals_jit_bitwise():
    t = make_inputs(bias_dtype=jnp.float32)
    eager = gj.grouped_gemm(**t).d
    jitted = jax.jit(lambda **kw: gj.grouped_gemm(**kw).d)(**t)
    assert np.array_equal(np.asarray(eager).view(np.uint16), np.asarray(jitted).view(np.uint16))


def same_bits(x, y):
    x, y = np.asarray(x), np.asarray(y)
    return x.dtype == y.dtype and x.shape == y.shape and np.array_equal(x.view(np.uint8),
                                                                        y.view(np.uint8))


@pytest.mark.parametrize("use_jit", [False, True])
@pytest.mark.parametrize("bias_dtype,generate_c", [(None, False), (None, True),
                                                   (jnp.float32, True)])
@pytest.mark.parametrize("absent", [("alpha",), ("prob",), ("alpha", "prob")])
def test_none_alpha_or_prob_give_the_bits_of_ones(absent, bias_dtype, generate_c, use_jit):
    """A None alpha or prob (an empty operand, NULL to the library) against arrays of ones; with
    both None and neither bias nor C, the library's unscaled epilogue."""
    t = make_inputs(bias_dtype=bias_dtype, seed=3)
    ones = dict(t, **{name: jnp.ones_like(t[name]) for name in absent})
    none = dict(t, **dict.fromkeys(absent))

    def call(**kw):
        return gj.grouped_gemm(**kw, generate_c=generate_c, c_dtype=jnp.float32)

    fn = jax.jit(call) if use_jit else call
    with_ones, with_none = fn(**ones), fn(**none)
    assert same_bits(with_none.d, with_ones.d)  # zero_tail: every row comparable
    if generate_c:
        assert same_bits(with_none.c, with_ones.c)
    else:
        assert with_none.c is None
    _, ref_d = reference(**ones)
    last = OFFSETS[-1]
    err = relative_error(np.asarray(with_none.d[:last], np.float64), ref_d[:last])
    assert err < TOLERANCE["bfloat16"]
