"""ggemm.torch with per-expert valid-row counts on a GPU: rows within the counts carry the bits of
a call without counts, rows past them keep their poison, counts are read on the device (a CUDA
graph replays with new counts), clamped counts are reported by check_status, and autograd refuses
them."""
import pytest

from conftest import requires_torch_cuda

pytestmark = requires_torch_cuda
torch = pytest.importorskip("torch", reason="torch is not installed")

import ggemm  # noqa: E402
import ggemm.torch as gt  # noqa: E402
from moe_data import make_inputs, poison, same_bits  # noqa: E402

# The fixed-capacity layout of expert-parallel dispatch: 4 experts x 512 rows.
CAPACITY, EXPERTS, N = 512, 4, 384
OFFSETS = [CAPACITY * (g + 1) for g in range(EXPERTS)]


def inputs(seed=0):
    return make_inputs(m=CAPACITY * EXPERTS, n=N, k=256, offsets=OFFSETS, seed=seed)


def valid_mask(counts):
    mask = torch.zeros(CAPACITY * EXPERTS, dtype=torch.bool, device="cuda")
    for g, count in enumerate(counts):
        mask[g * CAPACITY:g * CAPACITY + max(0, min(count, CAPACITY))] = True
    return mask


def check_rows(d, full, counts):
    mask = valid_mask(counts)
    assert same_bits(d[mask], full[mask]), "rows within the counts differ from a call without counts"
    assert torch.isnan(d[~mask].float()).all(), "a row past its count was written"


@pytest.mark.parametrize("dynamic", [False, True])
@pytest.mark.parametrize("d_dtype,generate_c", [(torch.bfloat16, False), (torch.float32, True)])
def test_rows_past_the_counts_are_untouched(dynamic, d_dtype, generate_c):
    t = inputs()
    counts = [1, 0, 300, 65]
    full = gt.grouped_gemm(**t, d_dtype=d_dtype, generate_c=generate_c, dynamic_sched=dynamic)
    op = gt.GroupedGemm(sample_a=t["a"], sample_padded_offsets=t["padded_offsets"],
                        sample_alpha=t["alpha"], sample_prob=t["prob"], sample_b=t["b"],
                        d_dtype=d_dtype, c_dtype=torch.bfloat16, generate_c=generate_c,
                        dynamic_sched=dynamic).compile()
    d = poison((CAPACITY * EXPERTS, N), d_dtype)
    c = poison((CAPACITY * EXPERTS, N), torch.bfloat16) if generate_c else None
    valid_rows = torch.tensor(counts, dtype=torch.int32, device="cuda")
    op.execute(d=d, c=c, valid_rows=valid_rows, check_status=True, **t)
    torch.cuda.synchronize()
    check_rows(d, full.d, counts)
    if generate_c:
        check_rows(c, full.c, counts)
    # The one-shot call reads the same counts.
    one_shot = gt.grouped_gemm(**t, d_dtype=d_dtype, generate_c=generate_c,
                               dynamic_sched=dynamic, valid_rows=valid_rows)
    mask = valid_mask(counts)
    assert same_bits(one_shot.d[mask], full.d[mask])


def test_graph_replays_with_new_counts():
    t = inputs(seed=1)
    full = gt.grouped_gemm(**t).d
    op = gt.GroupedGemm(sample_a=t["a"], sample_padded_offsets=t["padded_offsets"],
                        sample_alpha=t["alpha"], sample_prob=t["prob"], sample_b=t["b"]).compile()
    valid_rows = torch.zeros(EXPERTS, dtype=torch.int32, device="cuda")
    d = poison((CAPACITY * EXPERTS, N), torch.bfloat16)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        op.execute(d=d, valid_rows=valid_rows, **t)
    for counts in ([512, 0, 1, 64], [63, 129, 256, 511], [0, 0, 0, 0]):
        d.fill_(float("nan"))
        valid_rows.copy_(torch.tensor(counts, dtype=torch.int32))
        graph.replay()
        torch.cuda.synchronize()
        check_rows(d, full, counts)


def test_clamped_counts_are_reported_and_clamped():
    t = inputs(seed=2)
    full = gt.grouped_gemm(**t).d
    valid_rows = torch.tensor([-3, 9999, 5, CAPACITY], dtype=torch.int32, device="cuda")
    with pytest.raises(ggemm.GgemmError) as info:
        gt.grouped_gemm(**t, valid_rows=valid_rows, check_status=True)
    assert info.value.name == "GGEMM_ERROR_BAD_OFFSETS" and "clamped" in info.value.message
    d = gt.grouped_gemm(**t, valid_rows=valid_rows).d  # off by default: clamped on the device
    mask = valid_mask([0, CAPACITY, 5, CAPACITY])
    assert same_bits(d[mask], full[mask])


def test_refusals():
    t = inputs()
    with pytest.raises(ValueError, match=r"^valid_rows: expected dtype int32"):
        gt.grouped_gemm(**t, valid_rows=torch.zeros(EXPERTS, dtype=torch.int64, device="cuda"))
    with pytest.raises(ValueError, match=r"^valid_rows: expected a contiguous vector of shape \(L,\)"):
        gt.grouped_gemm(**t, valid_rows=torch.zeros(EXPERTS + 1, dtype=torch.int32, device="cuda"))
    with pytest.raises(ValueError, match=r"^valid_rows: expected a tensor on cuda"):
        gt.grouped_gemm(**t, valid_rows=torch.zeros(EXPERTS, dtype=torch.int32))
    t["a"].requires_grad_()
    with pytest.raises(ValueError, match=r"^valid_rows: expected None when an input requires grad"):
        gt.grouped_gemm(**t, valid_rows=torch.zeros(EXPERTS, dtype=torch.int32, device="cuda"))
