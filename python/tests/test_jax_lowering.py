"""ggemm.jax without a GPU: argument refusals while tracing, and the lowering to the XLA FFI
custom call (lowered for the CUDA platform, never run here)."""
import re

import pytest

jax = pytest.importorskip("jax", reason="jax is not installed")
import jax.numpy as jnp  # noqa: E402

import ggemm.jax as gj  # noqa: E402

M, K, N, L = 512, 128, 256, 4


def spec(shape, dtype):
    return jax.ShapeDtypeStruct(shape, dtype)


def lower(fn, *args):
    return jax.jit(fn).trace(*args).lower(lowering_platforms=("cuda",)).as_text()


def custom_calls(text):
    return [line for line in text.splitlines() if "stablehlo.custom_call" in line]


COMMON = (spec((M, K), jnp.bfloat16), spec((L,), jnp.int32), spec((L,), jnp.float32),
          spec((M,), jnp.float32))


def attrs(call):
    return dict(re.findall(r"(\w+) = (-?\d+) : i32", call))


def test_dense_with_bias_lowers_to_one_custom_call():
    text = lower(lambda a, o, al, p, b, bias: gj.grouped_gemm(a, o, al, p, b=b, bias=bias,
                                                              generate_c=True, d_dtype=jnp.float32),
                 *COMMON, spec((L, N, K), jnp.bfloat16), spec((L, N), jnp.float16))
    calls = custom_calls(text)
    assert len(calls) == 1 and "@ggemm_grouped_gemm" in calls[0]
    assert attrs(calls[0]) == dict(weight_mode="0", c_dtype="1", d_dtype="3", bias_dtype="2",
                                   generate_c="1", scheduler="0", tile_m="0", tile_n="0",
                                   cluster_m="0", sm_margin="0")
    # Operands in handler order: a, b, offsets, alpha, prob, bias, valid_rows (empty without);
    # results d, c, workspace.
    assert ("(tensor<512x128xbf16>, tensor<4x256x128xbf16>, tensor<4xi32>, tensor<4xf32>, "
            "tensor<512xf32>, tensor<4x256xf16>, tensor<0xi32>) -> (tensor<512x256xf32>, "
            "tensor<512x256xbf16>, tensor<") in calls[0]


def test_valid_rows_are_an_operand_and_mask_the_tail():
    text = lower(lambda a, o, al, p, b, counts: gj.grouped_gemm(a, o, al, p, b=b,
                                                                valid_rows=counts).d,
                 *COMMON, spec((L, N, K), jnp.bfloat16), spec((L,), jnp.int32))
    call = custom_calls(text)[0]
    assert re.search(r"@ggemm_grouped_gemm\(%arg0, %arg4, %arg1, %arg2, %arg3, %[^,]+, %arg5\)", call)
    assert "stablehlo.select" in text
    with pytest.raises(ValueError, match="valid_rows"):
        lower(lambda a, o, al, p, b, counts: gj.grouped_gemm(a, o, al, p, b=b, valid_rows=counts).d,
              *COMMON, spec((L, N, K), jnp.bfloat16), spec((L,), jnp.float32))


def test_offsets_are_operands_not_constants():
    text = lower(lambda a, o, al, p, b: gj.grouped_gemm(a, o, al, p, b=b).d,
                 *COMMON, spec((L, N, K), jnp.bfloat16))
    call = custom_calls(text)[0]
    # The second operand of the custom call is the function's second argument: padded_offsets.
    assert re.search(r"@ggemm_grouped_gemm\(%arg0, %arg4, %arg1, %arg2, %arg3, ", call)


def test_workspace_is_an_xla_allocated_output():
    text = lower(lambda a, o, al, p, ptrs: gj.grouped_gemm(a, o, al, p, b_ptrs=ptrs, n=N,
                                                           dynamic_sched=True),
                 *COMMON, spec((8 * L,), jnp.uint8))
    call = custom_calls(text)[0]
    results = call.split("->")[1]
    sizes = [int(s) for s in re.findall(r"tensor<(\d+)xui8>", results)]
    # The tile counter, one tensor map and one status word per expert (docs/API.md, Workspace).
    assert sizes == [128 + 128 * L + (4 * L + 127) // 128 * 128]
    assert attrs(call)["weight_mode"] == "1" and attrs(call)["scheduler"] == "1"


def test_tail_rows_are_zeroed_by_a_select_unless_asked_not_to():
    body = lambda zero_tail: lambda a, o, al, p, b: gj.grouped_gemm(  # noqa: E731
        a, o, al, p, b=b, zero_tail=zero_tail).d
    with_tail = lower(body(True), *COMMON, spec((L, N, K), jnp.bfloat16))
    without = lower(body(False), *COMMON, spec((L, N, K), jnp.bfloat16))
    assert "stablehlo.select" in with_tail
    assert "stablehlo.select" not in without


def test_c_is_none_without_generate_c():
    out = jax.eval_shape(lambda a, o, al, p, b: gj.grouped_gemm(a, o, al, p, b=b),
                         *COMMON, spec((L, N, K), jnp.bfloat16))
    assert out.c is None and out.d.shape == (M, N) and out.d.dtype == jnp.bfloat16


@pytest.mark.parametrize("change,message", [
    (dict(a=spec((M, K), jnp.float16)), r"(?m)^a: expected dtype bfloat16, got float16$"),
    (dict(a=spec((300, K), jnp.bfloat16)), r"(?m)^a: expected M \(rows\) a multiple of 256, got M = 300$"),
    (dict(o=spec((L,), jnp.int64 if jax.config.jax_enable_x64 else jnp.float32)),
     r"(?m)^padded_offsets: expected dtype int32"),
    (dict(al=spec((L + 1,), jnp.float32)), r"(?m)^alpha: expected shape \(L,\) = \(4,\), got shape \(5,\)$"),
    (dict(p=spec((M, 1), jnp.float32)), r"(?m)^prob: expected shape \(M,\) = \(512,\), got shape \(512, 1\)$"),
    (dict(b=spec((L, N, 64), jnp.bfloat16)), r"(?m)^b: expected shape \(L, N, K\) = \(4, 256, 128\)"),
    (dict(bias=spec((L, 128), jnp.float32)), r"(?m)^bias: expected shape \(L, N\) = \(4, 256\)"),
])
def test_refusals_while_tracing(change, message):
    args = dict(a=COMMON[0], o=COMMON[1], al=COMMON[2], p=COMMON[3],
                b=spec((L, N, K), jnp.bfloat16), bias=None)
    args.update(change)
    with pytest.raises(ValueError, match=message):
        jax.eval_shape(lambda a, o, al, p, b, bias: gj.grouped_gemm(a, o, al, p, b=b, bias=bias),
                       args["a"], args["o"], args["al"], args["p"], args["b"], args["bias"])


def test_weight_source_refusals():
    with pytest.raises(ValueError, match=r"(?m)^b / b_ptrs: expected exactly one weight source .*got neither$"):
        jax.eval_shape(lambda a, o, al, p: gj.grouped_gemm(a, o, al, p), *COMMON)
    with pytest.raises(ValueError, match=r"(?m)^b_ptrs: expected \(4,\) int64/uint64 or \(8\*L,\) = \(32,\) uint8"):
        jax.eval_shape(lambda a, o, al, p, q: gj.grouped_gemm(a, o, al, p, b_ptrs=q, n=N),
                       *COMMON, spec((L,), jnp.int32))
    with pytest.raises(ValueError, match=r"(?m)^n: expected the rows N"):
        jax.eval_shape(lambda a, o, al, p, q: gj.grouped_gemm(a, o, al, p, b_ptrs=q),
                       *COMMON, spec((8 * L,), jnp.uint8))


def test_glu_lowers_to_one_custom_call_with_its_activation():
    text = lower(lambda a, o, al, p, b: gj.glu(a, o, al, p, b=b, activation="geglu_clamped", glu_limit=2.5,
                                               generate_c=True, c_dtype=jnp.float32),
                 *COMMON, spec((L, N, K), jnp.bfloat16))
    calls = custom_calls(text)
    assert len(calls) == 1 and "@ggemm_glu" in calls[0]
    assert attrs(calls[0])["activation"] == "2" and attrs(calls[0])["n"] == str(N)
    assert re.search(r"glu_limit = 2\.5\d*e\+00 : f32", calls[0])
    # d has N/2 columns, c the N of the pre-activation.
    assert "-> (tensor<512x128xbf16>, tensor<512x256xf32>, tensor<" in calls[0]


def test_glu_shapes_and_refusals_while_tracing():
    out = jax.eval_shape(lambda a, o, al, p, b: gj.glu(a, o, al, p, b=b), *COMMON, spec((L, N, K), jnp.bfloat16))
    assert out.c is None and out.d.shape == (M, N // 2)
    with pytest.raises(ValueError, match=r"(?m)^n: expected N \(the pre-activation width\) a multiple of 64"):
        jax.eval_shape(lambda a, o, al, p, b: gj.glu(a, o, al, p, b=b), *COMMON, spec((L, 200, K), jnp.bfloat16))
    with pytest.raises(ValueError, match=r"(?m)^activation: expected 'swiglu' or 'geglu_clamped', got 'relu'$"):
        jax.eval_shape(lambda a, o, al, p, b: gj.glu(a, o, al, p, b=b, activation="relu"),
                       *COMMON, spec((L, N, K), jnp.bfloat16))
    with pytest.raises(ValueError, match=r"(?m)^glu_limit: expected a number > 0, got 0"):
        jax.eval_shape(lambda a, o, al, p, b: gj.glu(a, o, al, p, b=b, activation="geglu_clamped", glu_limit=0),
                       *COMMON, spec((L, N, K), jnp.bfloat16))


def test_dglu_lowers_to_one_custom_call():
    # N = 96 (the activation's width): dy (M, K), the next layer's N-major W (L, K, N), pre (M, 2N).
    text = lower(lambda a, o, al, p, w, pre: gj.dglu(a, o, al, p, pre, b=w, activation="geglu_clamped",
                                                     d_dtype=jnp.float32),
                 *COMMON, spec((L, K, 96), jnp.bfloat16), spec((M, 192), jnp.bfloat16))
    calls = custom_calls(text)
    assert len(calls) == 1 and "@ggemm_dglu" in calls[0]
    a = attrs(calls[0])
    assert a["activation"] == "2" and a["weight_layout"] == "1" and a["glu_pre_dtype"] == "1" and a["d_dtype"] == "3"
    # d_pre (M, 2N), d_prob (M,), and a workspace of 2 blocks of 64 columns x M fp32 partials.
    assert f"-> (tensor<512x192xf32>, tensor<512xf32>, tensor<{2 * 512 * 4}xui8>)" in calls[0]


def test_dglu_refusals_while_tracing():
    with pytest.raises(ValueError, match=r"(?m)^pre: expected shape \(M, 2N\) = \(512, 192\), got shape \(512, 96\)$"):
        jax.eval_shape(lambda a, o, al, p, w, pre: gj.dglu(a, o, al, p, pre, b=w),
                       *COMMON, spec((L, K, 96), jnp.bfloat16), spec((M, 96), jnp.bfloat16))
    with pytest.raises(ValueError, match=r"(?m)^n: expected N \(the activation's width\) a multiple of 32, got N = 72$"):
        jax.eval_shape(lambda a, o, al, p, w, pre: gj.dglu(a, o, al, p, pre, b=w),
                       *COMMON, spec((L, K, 72), jnp.bfloat16), spec((M, 144), jnp.bfloat16))


# --- alpha and prob given as None: empty operands, which the handler passes as NULL --------------

SCALES = {"alpha": spec((L,), jnp.float32), "prob": spec((M,), jnp.float32)}


def scale_operands(call):
    """The types of the custom call's operands 4 and 5 (after a, the weights, the offsets)."""
    operands = re.search(r" : \(([^)]*)\) -> ", call).group(1).split(", ")
    return operands[3:5]


@pytest.mark.parametrize("given", [(), ("alpha",), ("prob",), ("alpha", "prob")])
@pytest.mark.parametrize("entry", ["grouped_gemm", "glu", "dglu"])
def test_alpha_and_prob_none_lower_to_empty_operands(entry, given):
    args = [COMMON[0], COMMON[1]] + [SCALES[name] for name in given]

    def fn(a, o, *scales):
        named = dict(zip(given, scales))
        alpha, prob = named.get("alpha"), named.get("prob")
        if entry == "dglu":  # N = 96, the next layer's N-major weights, pre (M, 2N)
            w = jnp.zeros((L, K, 96), jnp.bfloat16)
            return gj.dglu(a, o, alpha, prob, jnp.zeros((M, 192), jnp.bfloat16), b=w)
        b = jnp.zeros((L, N, K), jnp.bfloat16)
        if not given:  # the defaults
            return getattr(gj, entry)(a, o, b=b)
        return getattr(gj, entry)(a, o, alpha, prob, b=b)

    call = custom_calls(lower(fn, *args))[0]
    assert scale_operands(call) == ["tensor<4xf32>" if "alpha" in given else "tensor<0xf32>",
                                    "tensor<512xf32>" if "prob" in given else "tensor<0xf32>"]


def test_a_given_alpha_or_prob_is_checked_when_the_other_is_none():
    b = spec((L, N, K), jnp.bfloat16)
    with pytest.raises(ValueError, match=r"(?m)^prob: expected shape \(M,\) = \(512,\), got shape \(256,\)$"):
        jax.eval_shape(lambda a, o, p, b: gj.grouped_gemm(a, o, None, p, b=b),
                       COMMON[0], COMMON[1], spec((256,), jnp.float32), b)
    with pytest.raises(ValueError, match=r"(?m)^alpha: expected dtype float32, got bfloat16$"):
        jax.eval_shape(lambda a, o, al, b: gj.glu(a, o, al, None, b=b),
                       COMMON[0], COMMON[1], spec((L,), jnp.bfloat16), b)
