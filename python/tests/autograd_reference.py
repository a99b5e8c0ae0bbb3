"""The problem and the differentiable fp64 reference of the autograd tests (torch tensors).

Expert 1 is empty and rows [1024, 1280) are past the last offset; N = 136 and K = 72 are
multiples of 8 that no tile size divides."""
import torch

OFFSETS = [256, 256, 768, 1024]
M, N, K = 1280, 136, 72
LAST = OFFSETS[-1]
EMPTY_EXPERT = 1


def make_problem(seed=0, bias_dtype=None, weight_layout="k_major", device="cuda"):
    """Inputs (natural layouts) and upstream gradients dD, dC whose values bf16 holds exactly;
    the upstream gradients are nonzero on the rows past the last offset too."""
    g = torch.Generator(device="cpu").manual_seed(seed)
    experts = len(OFFSETS)

    def rand(*shape, scale=1.0):
        return torch.randn(*shape, generator=g) * scale

    shape_b = (experts, K, N) if weight_layout == "n_major" else (experts, N, K)
    p = dict(a=rand(M, K).to(torch.bfloat16),
             b=rand(*shape_b, scale=K ** -0.5).to(torch.bfloat16),
             padded_offsets=torch.tensor(OFFSETS, dtype=torch.int32),
             alpha=torch.rand(experts, generator=g) + 0.5,
             prob=torch.rand(M, generator=g) * 0.9 + 0.1,
             grad_d=rand(M, N).to(torch.bfloat16).float(),
             grad_c=rand(M, N).to(torch.bfloat16).float())
    if bias_dtype is not None:
        p["bias"] = rand(experts, N).to(bias_dtype)
    return {name: t.to(device) for name, t in p.items()}


def reference_forward(a, b, padded_offsets, alpha, prob, bias=None, weight_layout="k_major"):
    """(d, c) of the contract in the inputs' dtype (use float64), differentiable; rows past the
    last offset are zero and depend on nothing."""
    offsets = [int(o) for o in padded_offsets.tolist()]
    d_rows, c_rows, begin = [], [], 0
    for g, end in enumerate(offsets):
        w = b[g] if weight_layout == "n_major" else b[g].T          # (K, N)
        acc = a[begin:end] @ w
        p = prob[begin:end, None]
        if bias is None:
            u = acc * alpha[g]
            c_rows.append(u)
            d_rows.append(u * p)
        else:
            u = acc * alpha[g] + p * bias[g][None, :]
            c_rows.append(u)
            d_rows.append(u)
        begin = end
    tail = a.new_zeros((a.shape[0] - offsets[-1], w.shape[1]))
    return torch.cat(d_rows + [tail]), torch.cat(c_rows + [tail])


def reference_gradients(p, names, generate_c, weight_layout):
    """torch.autograd's gradients of the fp64 reference with respect to `names`."""
    leaves = {name: p[name].detach().double().requires_grad_() for name in names}
    inputs = {name: leaves.get(name, p.get(name)) for name in ("a", "b", "alpha", "prob", "bias")}
    inputs = {name: (t.double() if t is not None else None) for name, t in inputs.items()}
    d, c = reference_forward(inputs["a"], inputs["b"], p["padded_offsets"], inputs["alpha"],
                             inputs["prob"], inputs["bias"], weight_layout)
    outputs, upstream = [d], [p["grad_d"].double()]
    if generate_c:
        outputs.append(c)
        upstream.append(p["grad_c"].double())
    grads = torch.autograd.grad(outputs, [leaves[name] for name in names], upstream)
    return dict(zip(names, grads))


def relative_error(out, ref):
    """||out - ref|| / ||ref|| in float64 (both on the CPU)."""
    out, ref = out.detach().double().cpu(), ref.detach().double().cpu()
    return float((out - ref).norm() / ref.norm())
