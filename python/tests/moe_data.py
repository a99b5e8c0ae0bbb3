"""Inputs and the fp64 reference of the operation, for the GPU tests (torch tensors)."""
import torch

# Expert 1 and expert 3 are empty, expert 2 holds most rows, and rows [768, 1024) are past the
# last offset: they must never be written.
OFFSETS = [256, 256, 768, 768]
M, N, K = 1024, 256, 320


def make_inputs(m=M, n=N, k=K, offsets=OFFSETS, bias_dtype=None, seed=0, device="cuda"):
    g = torch.Generator(device="cpu").manual_seed(seed)
    experts = len(offsets)

    def rand(*shape, scale=1.0):
        return (torch.randn(*shape, generator=g) * scale).to(device)

    t = dict(
        a=rand(m, k).to(torch.bfloat16),
        b=rand(experts, n, k, scale=k ** -0.5).to(torch.bfloat16),
        padded_offsets=torch.tensor(offsets, dtype=torch.int32, device=device),
        alpha=(torch.rand(experts, generator=g) + 0.5).to(device),
        prob=(torch.rand(m, generator=g) * 0.9 + 0.1).to(device),
    )
    if bias_dtype is not None:
        t["bias"] = rand(experts, n).to(bias_dtype)
    return t


def reference(a, b, padded_offsets, alpha, prob, bias=None):
    """(c, d) in float64 for the rows below the last offset (the rest stays NaN)."""
    m, n = a.shape[0], b.shape[1]
    c = torch.full((m, n), float("nan"), dtype=torch.float64, device=a.device)
    d = c.clone()
    begin = 0
    for g, end in enumerate(padded_offsets.tolist()):
        if end > begin:
            acc = a[begin:end].double() @ b[g].double().T
            p = prob[begin:end].double()[:, None]
            if bias is not None:
                v = acc * float(alpha[g]) + p * bias[g].double()[None, :]
                c[begin:end], d[begin:end] = v, v
            else:
                v = acc * float(alpha[g])
                c[begin:end], d[begin:end] = v, v * p
        begin = max(begin, end)
    return c, d


def rel_error(out, ref, rows):
    diff = (out[:rows].double() - ref[:rows]).norm()
    return float(diff / ref[:rows].norm())


def poison(shape, dtype, device="cuda"):
    """An output filled with NaN, whose bits show any row that was written."""
    return torch.full(shape, float("nan"), dtype=dtype, device=device)


def same_bits(x, y):
    return torch.equal(x.view(torch.uint8) if x.dtype != torch.uint8 else x,
                       y.view(torch.uint8) if y.dtype != torch.uint8 else y)
