"""ggemm.torch on a GPU: numerics against fp64, layouts, torch.compile, CUDA graphs, refusals
that write nothing, and the device status check."""
import itertools

import pytest

from conftest import requires_torch_cuda

pytestmark = requires_torch_cuda
torch = pytest.importorskip("torch", reason="torch is not installed")

import ggemm  # noqa: E402
import ggemm.torch as gt  # noqa: E402
from moe_data import M, N, OFFSETS, make_inputs, poison, reference, rel_error, same_bits  # noqa: E402

TOL = {torch.bfloat16: 8e-3, torch.float16: 2e-3, torch.float32: 1e-3}
LAST = OFFSETS[-1]


def check_class_output(op, out, one_shot, ref, rows):
    """A GroupedGemm's output rows [0, rows) against the one-shot call's. The one-shot's cached
    plan is made for the largest capacity and runs K unsplit; the class's plan, made for its own
    m_capacity, may split K for a small call (docs/API.md, split-K), which changes the last bits
    of the fp32 sum: then the result is checked against the fp64 reference instead."""
    plan = op.describe()
    if "split-K: none" in plan:
        assert same_bits(out[:rows], one_shot[:rows])
    else:
        assert "split-K: K split" in plan
        assert rel_error(out, ref, rows) < TOL[out.dtype]


def spec_views(t):
    """The specification's views of the same memory (no copy)."""
    s = dict(t)
    s["a"] = t["a"].unsqueeze(-1)
    s["b"] = t["b"].permute(1, 2, 0)
    s["prob"] = t["prob"].view(-1, 1, 1)
    if "bias" in t:
        s["bias"] = t["bias"].t()
    assert s["b"].data_ptr() == t["b"].data_ptr() and s["b"].stride()[2] == N * t["a"].shape[1]
    return s


def discrete(t):
    s = dict(t)
    weights = [w for w in t["b"].unbind(0)]
    s["b_ptrs"] = gt.b_ptrs(weights)
    s["n"] = N
    del s["b"]
    return s


CASES = list(itertools.product([torch.bfloat16, torch.float16, torch.float32],   # d_dtype
                               [None, torch.bfloat16, torch.float32],              # bias
                               [False, True],                                      # generate_c
                               [False, True],                                      # dynamic
                               ["dense", "discrete"]))


@pytest.mark.parametrize("d_dtype,bias_dtype,generate_c,dynamic,mode", CASES)
def test_eager_matches_fp64(d_dtype, bias_dtype, generate_c, dynamic, mode):
    t = make_inputs(bias_dtype=bias_dtype,
                    seed=CASES.index((d_dtype, bias_dtype, generate_c, dynamic, mode)))
    ref_c, ref_d = reference(t["a"], t["b"], t["padded_offsets"], t["alpha"], t["prob"], t.get("bias"))
    c_dtype = torch.float32 if d_dtype == torch.bfloat16 else torch.bfloat16
    call = discrete(t) if mode == "discrete" else t
    d, c = gt.grouped_gemm(**call, c_dtype=c_dtype, d_dtype=d_dtype, generate_c=generate_c,
                           dynamic_sched=dynamic)
    torch.cuda.synchronize()
    assert d.shape == (M, N) and d.dtype == d_dtype
    err = rel_error(d, ref_d, LAST)
    assert err < TOL[d_dtype], f"d: relative error {err}"
    assert err > 0 or d_dtype == torch.float32
    if generate_c:
        assert c.dtype == c_dtype and rel_error(c, ref_c, LAST) < TOL[c_dtype]
    else:
        assert c is None

    # The class on poisoned caller-provided outputs: the same bits on computed rows, and rows
    # at or past the last offset untouched.
    op = gt.GroupedGemm(sample_a=t["a"], sample_padded_offsets=t["padded_offsets"],
                        sample_alpha=t["alpha"], sample_prob=t["prob"], sample_bias=t.get("bias"),
                        sample_b=t["b"] if mode == "dense" else None,
                        num_experts=len(OFFSETS) if mode == "discrete" else None,
                        b_shape=(N, t["a"].shape[1]) if mode == "discrete" else None,
                        c_dtype=c_dtype, d_dtype=d_dtype, generate_c=generate_c,
                        dynamic_sched=dynamic)
    assert op.check_support()
    op.compile()
    d2, c2 = poison((M, N), d_dtype), poison((M, N), c_dtype) if generate_c else None
    exec_args = {k: v for k, v in call.items() if k != "n"}
    op.execute(d=d2, c=c2, **exec_args)
    torch.cuda.synchronize()
    check_class_output(op, d2, d, ref_d, LAST)
    assert torch.isnan(d2[LAST:].float()).all()
    if generate_c:
        check_class_output(op, c2, c, ref_c, LAST)
        assert torch.isnan(c2[LAST:].float()).all()
    # Two runs of the class give the same bits.
    d3 = poison((M, N), d_dtype)
    op.execute(d=d3, c=poison((M, N), c_dtype) if generate_c else None, **exec_args)
    torch.cuda.synchronize()
    assert same_bits(d3[:LAST], d2[:LAST])


def test_natural_and_specification_layouts_are_bitwise_equal():
    t = make_inputs(bias_dtype=torch.float32)
    d, c = gt.grouped_gemm(**t, generate_c=True, c_dtype=torch.float32)
    ds, cs = gt.grouped_gemm(**spec_views(t), generate_c=True, c_dtype=torch.float32)
    assert ds.shape == (M, N, 1) and cs.shape == (M, N, 1)
    assert same_bits(ds[:LAST, :, 0], d[:LAST]) and same_bits(cs[:LAST, :, 0], c[:LAST])


def test_schedulers_and_weight_modes_are_bitwise_equal():
    t = make_inputs()
    d_static = gt.grouped_gemm(**t).d
    d_dynamic = gt.grouped_gemm(**t, dynamic_sched=True).d
    d_discrete = gt.grouped_gemm(**discrete(t)).d
    assert same_bits(d_static[:LAST], d_dynamic[:LAST])
    assert same_bits(d_static[:LAST], d_discrete[:LAST])


def test_torch_compile_fullgraph_matches_eager():
    t = make_inputs(bias_dtype=torch.bfloat16)

    def block(a, padded_offsets, alpha, prob, b, bias):
        d, c = gt.grouped_gemm(a, padded_offsets, alpha, prob, b=b, bias=bias, generate_c=True)
        return torch.relu(d.float()) + c.float()

    eager = block(**t)
    compiled = torch.compile(block, fullgraph=True)(**t)
    assert same_bits(compiled[:LAST], eager[:LAST])
    spec = spec_views(t)
    compiled_spec = torch.compile(lambda **kw: gt.grouped_gemm(**kw).d, fullgraph=True)(**spec)
    assert compiled_spec.shape == (M, N, 1)
    assert same_bits(compiled_spec[:LAST, :, 0], gt.grouped_gemm(**t).d[:LAST])


def test_cuda_graph_replay_with_new_offsets_and_data():
    t = make_inputs(bias_dtype=torch.float32)
    for dynamic in (False, True):
        gt.grouped_gemm(**t, dynamic_sched=dynamic)  # plan made outside capture
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            d, _ = gt.grouped_gemm(**t, dynamic_sched=dynamic)
        new = make_inputs(offsets=[512, 512, 512, 1024], bias_dtype=torch.float32, seed=7)
        for name in t:
            t[name].copy_(new[name])
        d.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        expected = gt.grouped_gemm(**new, dynamic_sched=dynamic).d
        assert same_bits(d, expected)
        _, ref_d = reference(**new)
        assert rel_error(d, ref_d, M) < TOL[torch.bfloat16]
        t = make_inputs(bias_dtype=torch.float32)


def test_class_under_cuda_graph_uses_a_workspace_valid_for_replays():
    t = make_inputs()
    op = gt.GroupedGemm(sample_a=t["a"], sample_padded_offsets=t["padded_offsets"],
                        sample_alpha=t["alpha"], sample_prob=t["prob"], sample_b=t["b"],
                        dynamic_sched=True).compile()
    assert op.workspace_bytes > 0
    d = poison((M, N), torch.bfloat16)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        op.execute(d=d, **t)
    for offsets in ([256, 512, 768, 1024], [1024, 1024, 1024, 1024]):
        t["padded_offsets"].copy_(torch.tensor(offsets, dtype=torch.int32))
        graph.replay()
        torch.cuda.synchronize()
        _, ref_d = reference(**t)
        check_class_output(op, d, gt.grouped_gemm(**t).d, ref_d, offsets[-1])


def test_refusals_raise_and_write_nothing():
    t = make_inputs()
    op = gt.GroupedGemm(sample_a=t["a"], sample_padded_offsets=t["padded_offsets"],
                        sample_alpha=t["alpha"], sample_prob=t["prob"], sample_b=t["b"]).compile()
    d = poison((M, N), torch.bfloat16)
    storage = torch.empty(M * t["a"].shape[1] + 8, dtype=torch.bfloat16, device="cuda")
    misaligned = storage[1:1 + t["a"].numel()].view_as(t["a"]).copy_(t["a"])
    bad = [dict(a=misaligned), dict(prob=t["prob"].double()), dict(alpha=t["alpha"][:3]),
           dict(b=t["b"].transpose(1, 2).contiguous().transpose(1, 2)),
           dict(padded_offsets=t["padded_offsets"].cpu())]
    for change in bad:
        with pytest.raises(ValueError):
            op.execute(d=d, **{**t, **change})
        with pytest.raises(ValueError):
            gt.grouped_gemm(**{**t, **change})
    with pytest.raises(ValueError, match=r"^d: expected dtype torch.bfloat16, got torch.float32$"):
        op.execute(d=poison((M, N), torch.float32), **t)
    with pytest.raises(ValueError, match=r"^a: expected M <= m_capacity = 1024, got M = 1280$"):
        op.execute(d=poison((1280, N), torch.bfloat16), **make_inputs(m=1280))
    torch.cuda.synchronize()
    assert torch.isnan(d.float()).all()
    # A refusal of the library itself: a tile width no kernel was compiled for.
    with pytest.raises(ggemm.GgemmError) as info:
        gt.grouped_gemm(**t, tile_n=200)
    assert info.value.name == "GGEMM_ERROR_UNSUPPORTED_CONFIG" and "tile_n" in info.value.message


def test_status_check_reports_bad_offsets_and_refuses_capture():
    t = make_inputs()
    d = gt.grouped_gemm(**t, check_status=True).d
    assert d.shape == (M, N)
    t["padded_offsets"] = torch.tensor([256, 300, 768, 768], dtype=torch.int32, device="cuda")
    with pytest.raises(ggemm.GgemmError) as info:
        gt.grouped_gemm(**t, check_status=True)
    assert info.value.name == "GGEMM_ERROR_BAD_OFFSETS" and "multiple of 256" in info.value.message
    gt.grouped_gemm(**t)  # off by default: no error, the bad expert is skipped on the device
    graph = torch.cuda.CUDAGraph()
    with pytest.raises(ValueError, match="check_status"):
        with torch.cuda.graph(graph):
            gt.grouped_gemm(**t, check_status=True)


def test_b_ptrs_keeps_its_weights_alive():
    weights = [torch.randn(N, 64, device="cuda").to(torch.bfloat16) for _ in range(3)]
    addresses = [w.data_ptr() for w in weights]
    ptrs = gt.b_ptrs(weights)
    del weights
    assert ptrs.dtype == torch.int64 and ptrs.tolist() == addresses
    assert [w.data_ptr() for w in ptrs.weights] == addresses


@pytest.mark.parametrize("mode", ["dense", "discrete"])
def test_n_major_weights_match_fp64_and_k_major_on_the_transpose(mode):
    """weight_layout="n_major": b is (L, K, N); the same result as K-major weights b.transpose."""
    t = make_inputs(bias_dtype=torch.float32, seed=11)
    w = t["b"].transpose(1, 2).contiguous()  # (L, K, N): each B_g as K x N
    ref_c, ref_d = reference(t["a"], t["b"], t["padded_offsets"], t["alpha"], t["prob"], t["bias"])
    call = dict(t, b=w)
    if mode == "discrete":
        call = dict(t, b_ptrs=gt.b_ptrs(list(w.unbind(0))), n=N)
        del call["b"]
    d, c = gt.grouped_gemm(**call, weight_layout="n_major", generate_c=True, c_dtype=torch.float32)
    torch.cuda.synchronize()
    assert d.shape == (M, N)
    assert rel_error(d, ref_d, LAST) < TOL[torch.bfloat16]
    assert rel_error(c, ref_c, LAST) < TOL[torch.float32]
    k_major = gt.grouped_gemm(**t, generate_c=True, c_dtype=torch.float32)
    assert same_bits(d[:LAST], k_major.d[:LAST]) and same_bits(c[:LAST], k_major.c[:LAST])

    op = gt.GroupedGemm(sample_a=t["a"], sample_padded_offsets=t["padded_offsets"],
                        sample_alpha=t["alpha"], sample_prob=t["prob"], sample_bias=t["bias"],
                        sample_b=w if mode == "dense" else None,
                        num_experts=len(OFFSETS) if mode == "discrete" else None,
                        b_shape=(t["a"].shape[1], N) if mode == "discrete" else None,
                        weight_layout="n_major")
    assert "N-major" in op.describe()
    d2 = poison((M, N), torch.bfloat16)
    op.execute(d=d2, **{k: v for k, v in call.items() if k != "n"})
    torch.cuda.synchronize()
    check_class_output(op, d2, d, ref_d, LAST)
    assert torch.isnan(d2[LAST:].float()).all()
    with pytest.raises(ValueError, match="N-major weights of shape"):
        gt.grouped_gemm(**t, weight_layout="n_major")  # (L, N, K) with N != K: not (L, K, N)


# --- alpha and prob as None: every value 1, the same bits as tensors of ones ----------------------

ABSENT = [("alpha",), ("prob",), ("alpha", "prob")]


def with_ones(t, absent):
    return dict(t, **{name: torch.ones_like(t[name]) for name in absent})


def without(t, absent):
    return dict(t, **dict.fromkeys(absent))


@pytest.mark.parametrize("mode", ["dense", "discrete"])
@pytest.mark.parametrize("bias_dtype,generate_c", [(None, False), (None, True),
                                                   (torch.float32, True)])
@pytest.mark.parametrize("absent", ABSENT)
def test_none_alpha_or_prob_give_the_bits_of_ones(absent, bias_dtype, generate_c, mode):
    """grouped_gemm and the class with a None alpha or prob against the same calls with tensors
    of ones (both None without bias or C: the library's unscaled epilogue)."""
    t = make_inputs(bias_dtype=bias_dtype, seed=21)
    call = discrete(t) if mode == "discrete" else t
    options = dict(generate_c=generate_c, c_dtype=torch.float32)
    ones = gt.grouped_gemm(**with_ones(call, absent), **options)
    none = gt.grouped_gemm(**without(call, absent), **options)
    torch.cuda.synchronize()
    assert same_bits(none.d[:LAST], ones.d[:LAST])
    if generate_c:
        assert same_bits(none.c[:LAST], ones.c[:LAST])
    else:
        assert none.c is None
    _, ref_d = reference(**with_ones(t, absent))
    assert rel_error(none.d, ref_d, LAST) < TOL[torch.bfloat16]

    op = gt.GroupedGemm(sample_a=t["a"], sample_padded_offsets=t["padded_offsets"],
                        sample_bias=t.get("bias"), sample_b=t["b"] if mode == "dense" else None,
                        num_experts=len(OFFSETS) if mode == "discrete" else None,
                        b_shape=(N, t["a"].shape[1]) if mode == "discrete" else None,
                        generate_c=generate_c, c_dtype=torch.float32).compile()
    outputs = []
    for scales in (with_ones(call, absent), without(call, absent)):
        d = poison((M, N), torch.bfloat16)
        c = poison((M, N), torch.float32) if generate_c else None
        op.execute(d=d, c=c, **{k: v for k, v in scales.items() if k != "n"})
        outputs.append((d, c))
    torch.cuda.synchronize()
    (d_ones, c_ones), (d_none, c_none) = outputs
    assert same_bits(d_none[:LAST], d_ones[:LAST]) and torch.isnan(d_none[LAST:].float()).all()
    if generate_c:
        assert same_bits(c_none[:LAST], c_ones[:LAST]) and torch.isnan(c_none[LAST:]).all()


def test_torch_compile_fullgraph_without_alpha_and_prob():
    t = make_inputs(seed=22)

    def block(a, padded_offsets, b):
        return gt.grouped_gemm(a, padded_offsets, b=b).d

    eager = block(t["a"], t["padded_offsets"], t["b"])
    compiled = torch.compile(block, fullgraph=True)(t["a"], t["padded_offsets"], t["b"])
    ones = gt.grouped_gemm(**with_ones(t, ("alpha", "prob"))).d
    assert same_bits(compiled[:LAST], eager[:LAST]) and same_bits(eager[:LAST], ones[:LAST])
