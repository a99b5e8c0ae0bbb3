"""ggemm.torch where torch is installed but no GPU is needed: the custom op's registration and
shape function, refusals of tensors that are not on a CUDA device, and the addresses that reach
the library (its calls recorded) when alpha or prob is None."""
from types import SimpleNamespace

import pytest

from fakes import FakeTensor

torch = pytest.importorskip("torch", reason="torch is not installed")
import ggemm._library as lib  # noqa: E402
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
                                            torch.float32, False, False, 0, 0, 0, 0, "k_major")
        assert d.shape == (512, 256) and d.dtype == torch.float32
        assert c.shape == (0,)
        d, c = torch.ops.ggemm.grouped_gemm(p["a"], p["padded_offsets"], p["alpha"], p["prob"],
                                            p["b"], None, None, 256, torch.float16,
                                            torch.bfloat16, True, False, 0, 0, 0, 0, "k_major")
        assert c.shape == (512, 256) and c.dtype == torch.float16


def test_b_ptrs_refuses_mixed_shapes():
    with pytest.raises(ValueError, match=r"^weights\[1\]: expected a contiguous \(N, K\) or \(K, N\) = \(8, 8\) tensor"):
        gt.b_ptrs([torch.zeros(8, 8, dtype=torch.bfloat16), torch.zeros(8, 16, dtype=torch.bfloat16)])


def test_b_ptrs_refuses_host_weights():
    with pytest.raises(ValueError, match=r"^weights\[0\]: expected a CUDA tensor, got a CPU tensor$"):
        gt.b_ptrs([torch.zeros(8, 8, dtype=torch.bfloat16)])


def test_a_traced_call_is_one_custom_op_without_graph_breaks():
    """torch.export in strict mode traces with TorchDynamo and refuses any graph break, as
    torch.compile(fullgraph=True) does; fake CUDA tensors need no GPU."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    with FakeTensorMode():
        a = torch.empty(512, 128, dtype=torch.bfloat16, device="cuda")
        offsets = torch.empty(4, dtype=torch.int32, device="cuda")
        alpha, prob = torch.empty(4, device="cuda"), torch.empty(512, device="cuda")
        b = torch.empty(4, 256, 128, dtype=torch.bfloat16, device="cuda")
        bias = torch.empty(4, 256, device="cuda")

    class Block(torch.nn.Module):
        def forward(self, a, offsets, alpha, prob, b, bias):
            # The specification's views: the op receives the natural ones.
            return gt.grouped_gemm(a.unsqueeze(-1), offsets, alpha, prob, b=b.permute(1, 2, 0),
                                   bias=bias.t(), generate_c=True, d_dtype=torch.float32)

    graph = torch.export.export(Block(), (a, offsets, alpha, prob, b, bias), strict=True).graph
    calls = [node for node in graph.nodes if node.target == torch.ops.ggemm.grouped_gemm.default]
    assert len(calls) == 1
    outputs = [node for node in graph.nodes if node.op == "output"][0].args[0]
    d, c = (node.meta["val"] for node in outputs)
    assert d.shape == (512, 256, 1) and d.dtype == torch.float32
    assert c.shape == (512, 256, 1) and c.dtype == torch.bfloat16


def test_traced_calls_check_shapes_too():
    from torch._subclasses.fake_tensor import FakeTensorMode
    with FakeTensorMode():
        a = torch.empty(300, 128, dtype=torch.bfloat16, device="cuda")
        offsets = torch.empty(4, dtype=torch.int32, device="cuda")
        alpha, prob = torch.empty(4, device="cuda"), torch.empty(300, device="cuda")
        b = torch.empty(4, 256, 128, dtype=torch.bfloat16, device="cuda")

    class Block(torch.nn.Module):
        def forward(self, a, offsets, alpha, prob, b):
            return gt.grouped_gemm(a, offsets, alpha, prob, b=b).d

    with pytest.raises(Exception, match=r"a: expected M \(rows\) a multiple of 256, got M = 300"):
        torch.export.export(Block(), (a, offsets, alpha, prob, b), strict=True)


def test_n_major_weights_trace_to_one_op_with_n_from_the_last_dim():
    """N-major weights (L, K, N): the op gets them as they are and the outputs have N columns."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    with FakeTensorMode():
        a = torch.empty(512, 128, dtype=torch.bfloat16, device="cuda")
        offsets = torch.empty(4, dtype=torch.int32, device="cuda")
        alpha, prob = torch.empty(4, device="cuda"), torch.empty(512, device="cuda")
        w = torch.empty(4, 128, 384, dtype=torch.bfloat16, device="cuda")  # (L, K, N)

    class Dgrad(torch.nn.Module):
        def forward(self, a, offsets, alpha, prob, w):
            return gt.grouped_gemm(a, offsets, alpha, prob, b=w, weight_layout="n_major").d

    graph = torch.export.export(Dgrad(), (a, offsets, alpha, prob, w), strict=True).graph
    calls = [node for node in graph.nodes if node.target == torch.ops.ggemm.grouped_gemm.default]
    assert len(calls) == 1 and calls[0].args[-1] == "n_major"
    d = [node for node in graph.nodes if node.op == "output"][0].args[0][0].meta["val"]
    assert d.shape == (512, 384)


def test_unknown_weight_layout_is_refused():
    with pytest.raises(ValueError, match=r"^weight_layout: expected 'k_major' or 'n_major', got 'nn'$"):
        gt.grouped_gemm(**cpu_problem(), weight_layout="nn")


def test_valid_rows_pass_through_the_fake_implementation():
    from torch._subclasses.fake_tensor import FakeTensorMode
    with FakeTensorMode():
        p = cpu_problem()
        counts = torch.zeros(4, dtype=torch.int32)
        d, c = torch.ops.ggemm.grouped_gemm(p["a"], p["padded_offsets"], p["alpha"], p["prob"],
                                            p["b"], None, None, 256, torch.bfloat16,
                                            torch.bfloat16, False, False, 0, 0, 0, 0, "k_major",
                                            counts)
        assert d.shape == (512, 256)


def test_valid_rows_are_refused_with_autograd_before_any_call():
    p = cpu_problem()
    p["a"].requires_grad_()
    with pytest.raises(ValueError, match=r"^valid_rows: expected None when an input requires grad"):
        gt.grouped_gemm(**p, valid_rows=torch.zeros(4, dtype=torch.int32))


def test_valid_rows_rules():
    import ggemm._rules as rules
    from types import SimpleNamespace
    ops = SimpleNamespace(num_experts=4, device=0)
    rules.check_valid_rows(gt.DTYPES, None, ops)
    with pytest.raises(ValueError, match=r"^valid_rows: expected dtype int32, got torch.int64$"):
        rules.check_valid_rows(gt.DTYPES, torch.zeros(4, dtype=torch.int64), ops)
    with pytest.raises(ValueError, match=r"^valid_rows: expected a contiguous vector of shape"):
        rules.check_valid_rows(gt.DTYPES, torch.zeros(2, 2, dtype=torch.int32), ops)
    with pytest.raises(ValueError, match=r"^valid_rows: expected a tensor on cuda:0"):
        rules.check_valid_rows(gt.DTYPES, torch.zeros(4, dtype=torch.int32), ops)


def test_glu_op_is_registered_and_its_fake_halves_d():
    assert hasattr(torch.ops.ggemm, "glu")
    from torch._subclasses.fake_tensor import FakeTensorMode
    with FakeTensorMode():
        p = cpu_problem()
        d, c = torch.ops.ggemm.glu(p["a"], p["padded_offsets"], p["alpha"], p["prob"], p["b"], None, None,
                                   256, 1, 1.702, 7.0, 1.0, torch.float32, torch.bfloat16, True, False, 0, 0,
                                   "k_major")
        assert d.shape == (512, 128) and d.dtype == torch.bfloat16
        assert c.shape == (512, 256) and c.dtype == torch.float32


def test_glu_refusals_before_any_call():
    with pytest.raises(ValueError, match=r"^activation: expected 'swiglu' or 'geglu_clamped', got 'relu'$"):
        gt.glu(**cpu_problem(), activation="relu")
    with pytest.raises(ValueError, match=r"^glu_offset: expected a finite number, got inf$"):
        gt.glu(**cpu_problem(), activation="geglu_clamped", glu_offset=float("inf"))
    with pytest.raises(ValueError, match=r"^a: expected a CUDA tensor, got a CPU tensor$"):
        gt.glu(**cpu_problem())


def test_glu_traces_to_one_custom_op():
    from torch._subclasses.fake_tensor import FakeTensorMode
    with FakeTensorMode():
        a = torch.empty(512, 128, dtype=torch.bfloat16, device="cuda")
        offsets = torch.empty(4, dtype=torch.int32, device="cuda")
        alpha, prob = torch.empty(4, device="cuda"), torch.empty(512, device="cuda")
        b = torch.empty(4, 256, 128, dtype=torch.bfloat16, device="cuda")

    class Block(torch.nn.Module):
        def forward(self, a, offsets, alpha, prob, b):
            return gt.glu(a, offsets, alpha, prob, b=b, activation="geglu_clamped").d

    graph = torch.export.export(Block(), (a, offsets, alpha, prob, b), strict=True).graph
    calls = [node for node in graph.nodes if node.target == torch.ops.ggemm.glu.default]
    assert len(calls) == 1
    d = [node for node in graph.nodes if node.op == "output"][0].args[0][0].meta["val"]
    assert d.shape == (512, 128)


def test_glu_interleave_rows_tensor():
    rows = gt.glu_interleave_rows(128)
    assert rows.dtype == torch.int64 and rows.tolist()[32:64] == list(range(64, 96))


def test_enqueue_switches_the_device_back_and_raises_what_the_call_reports(monkeypatch):
    """Every entry point enqueues through _enqueue: the call runs with the operands' device
    current, the caller's device comes back whatever happens, a refusal raises GgemmError."""
    current = [0]
    monkeypatch.setattr(torch.cuda, "current_device", lambda: current[0])
    monkeypatch.setattr(torch.cuda, "set_device", lambda device: current.__setitem__(0, device))
    monkeypatch.setattr(gt, "_stream", lambda device: 1000 + device)
    seen = []

    def call(stream):
        seen.append((current[0], stream))
        return 0

    gt._enqueue(1, None, call)
    assert seen == [(1, 1001)] and current[0] == 0
    with pytest.raises(gt.GgemmError):
        gt._enqueue(1, None, lambda stream: 3)  # GGEMM_ERROR_INVALID_SHAPE
    assert current[0] == 0

    class Word:
        raised = False

        def raise_if_set(self):
            Word.raised = True

    gt._enqueue(0, Word(), call)
    assert Word.raised and seen[-1] == (0, 1000)


# --- alpha and prob given as None: the library's NULL, every value 1 ------------------------------

class DeviceFake(FakeTensor):
    """A light CUDA stand-in with torch dtypes, for calls that go as far as the library call:
    what the call allocates lands on the CPU, and nothing requires grad."""
    device = torch.device("cpu")
    requires_grad = False


ALPHA_ADDRESS, PROB_ADDRESS = 0x7F0000100000, 0x7F0000200000


@pytest.fixture
def library_calls(monkeypatch):
    """The integer arguments of every call that would reach the extension (the one-shot and
    dGLU entries of a descriptor, a plan's execute), each answered with success; the device and
    its stream stood in for."""
    calls = []

    def record(*args):
        calls.append(args)
        return 0

    class Desc:
        grouped_gemm = dglu = staticmethod(record)

        def workspace_size(self, m):
            return 0, 0

    class Plan:
        execute = staticmethod(record)

        def create(self, desc, m_capacity):
            return 0

        def workspace_size(self):
            return 0, 0

    monkeypatch.setattr(lib, "desc_for", lambda key: (Desc(), 0))
    monkeypatch.setattr(gt, "_ggemm", SimpleNamespace(Desc=lambda *key: Desc(), Plan=Plan))
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(gt, "_stream", lambda device: 0)
    return calls


@pytest.mark.parametrize("given", [(), ("alpha",), ("prob",), ("alpha", "prob")])
def test_alpha_and_prob_none_reach_the_library_as_null(library_calls, given):
    """grouped_gemm, glu, the class's execute and dglu pass a None alpha or prob as address 0
    (arguments 5 and 6 of every entry point) and a given one as its own address."""
    a = DeviceFake((512, 128), torch.bfloat16)
    offsets = DeviceFake((4,), torch.int32)
    b = DeviceFake((4, 256, 128), torch.bfloat16)
    alpha = DeviceFake((4,), torch.float32, address=ALPHA_ADDRESS) if "alpha" in given else None
    prob = DeviceFake((512,), torch.float32, address=PROB_ADDRESS) if "prob" in given else None
    gt.grouped_gemm(a, offsets, alpha, prob, b=b)
    gt.glu(a, offsets, alpha, prob, b=b)
    op = gt.GroupedGemm(sample_a=a, sample_padded_offsets=offsets, sample_alpha=alpha,
                        sample_prob=prob, sample_b=b)
    op.execute(a=a, d=DeviceFake((512, 256), torch.bfloat16), padded_offsets=offsets,
               alpha=alpha, prob=prob, b=b)
    gt.dglu(a, offsets, alpha, prob, DeviceFake((512, 512), torch.bfloat16),
            b=DeviceFake((4, 128, 256), torch.bfloat16))
    expected = (ALPHA_ADDRESS if alpha is not None else 0, PROB_ADDRESS if prob is not None else 0)
    assert [call[5:7] for call in library_calls] == [expected] * 4


def test_alpha_and_prob_default_to_none(library_calls):
    a, b = DeviceFake((512, 128), torch.bfloat16), DeviceFake((4, 256, 128), torch.bfloat16)
    offsets = DeviceFake((4,), torch.int32)
    gt.grouped_gemm(a, offsets, b=b)
    gt.glu(a, offsets, b=b)
    op = gt.GroupedGemm(a, offsets, sample_b=b)
    op.execute(a, DeviceFake((512, 256), torch.bfloat16), offsets, b=b)
    assert [call[5:7] for call in library_calls] == [(0, 0)] * 3


def test_the_ops_take_alpha_and_prob_as_none():
    for op in (torch.ops.ggemm.grouped_gemm, torch.ops.ggemm.glu,
               torch.ops.ggemm.grouped_gemm_backward):
        types = {arg.name: str(arg.type) for arg in op.default._schema.arguments}
        assert types["alpha"] == types["prob"] == "Optional[Tensor]", op
    from torch._subclasses.fake_tensor import FakeTensorMode
    with FakeTensorMode():
        p = cpu_problem()
        d, _ = torch.ops.ggemm.grouped_gemm(p["a"], p["padded_offsets"], None, None, p["b"],
                                            None, None, 256, torch.bfloat16, torch.float32,
                                            False, False, 0, 0, 0, 0, "k_major")
        assert d.shape == (512, 256)
        d, _ = torch.ops.ggemm.glu(p["a"], p["padded_offsets"], None, p["prob"], p["b"], None,
                                   None, 256, 1, 1.702, 7.0, 1.0, torch.float32,
                                   torch.bfloat16, False, False, 0, 0, "k_major")
        assert d.shape == (512, 128)


def test_a_traced_call_without_alpha_and_prob_passes_none_to_the_op():
    from torch._subclasses.fake_tensor import FakeTensorMode
    with FakeTensorMode():
        a = torch.empty(512, 128, dtype=torch.bfloat16, device="cuda")
        offsets = torch.empty(4, dtype=torch.int32, device="cuda")
        prob = torch.empty(512, 1, 1, device="cuda")
        b = torch.empty(4, 256, 128, dtype=torch.bfloat16, device="cuda")

    class Block(torch.nn.Module):
        def forward(self, a, offsets, prob, b):
            plain = gt.grouped_gemm(a, offsets, b=b).d
            return plain, gt.glu(a, offsets, None, prob, b=b).d  # prob as the (M, 1, 1) view

    graph = torch.export.export(Block(), (a, offsets, prob, b), strict=True).graph
    targets = (torch.ops.ggemm.grouped_gemm.default, torch.ops.ggemm.glu.default)
    calls = [node for node in graph.nodes if node.target in targets]
    assert len(calls) == 2
    assert calls[0].args[2] is None and calls[0].args[3] is None
    assert calls[1].args[2] is None and calls[1].args[3].meta["val"].shape == (512,)
