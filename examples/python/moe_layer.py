"""A top-k routed Mixture-of-Experts feed-forward block on ggemm: its forward, and a training
step whose forward and backward both run on ggemm's kernels.

    python examples/python/moe_layer.py [--tokens 4096 --hidden 2048 --ffn 1024 --experts 16 --top-k 4]

The block: a router picks top_k experts per token with softmax probabilities; the token copies
are permuted on the device (no host synchronization) into contiguous expert segments, each
padded to a multiple of 256 rows; fc1 and its SwiGLU run as one fused grouped GEMM
(ggemm.torch.glu: each expert's (2F, H) weight holds [gate | up] rows, reordered once into
glu's interleaved blocks of 32), then fc2 as a grouped GEMM that multiplies each row by its
routing probability in the epilogue (ggemm's `prob`); the un-permutation adds each token's
top_k rows back together.

The training step applies the probabilities in the GLU instead (the same product) and keeps
its pre-activation; its backward is dGLU (fc2's input gradient fused with the SwiGLU's
derivative, which also gives the probabilities' gradient), the two weight gradients (wgrad)
and fc1's input gradient (its weights read N-major); PyTorch's autograd takes the
probabilities' gradient back through the router.

It checks the forward against an eager PyTorch reference (a loop over experts with dense
matmuls) and the training step's output and gradients (x, router, w1, w2) against PyTorch
autograd on an fp32 copy of the block, then prints its times next to the same forward with
torch._grouped_mm for both GEMMs.
"""
import argparse
import sys

import torch
import torch.nn.functional as F

import ggemm.torch as gt

ROW_ALIGNMENT = 256


class Routing:
    """Where each (token, slot) copy lives in the permuted, 256-aligned expert layout."""

    def __init__(self, x, router_weight, top_k):
        tokens, experts = x.shape[0], router_weight.shape[1]
        logits = x.float() @ router_weight.float()
        probs, expert = torch.topk(torch.softmax(logits, dim=-1), top_k, dim=-1)
        probs = probs / probs.sum(dim=-1, keepdim=True)
        expert = expert.reshape(-1)                        # (tokens * top_k,)
        self.tokens, self.experts, self.top_k = tokens, experts, top_k
        # Counts without torch.bincount, which reads its input's maximum on the host.
        counts = torch.zeros(experts, dtype=torch.int32, device=x.device)
        counts.scatter_add_(0, expert, torch.ones_like(expert, dtype=torch.int32))
        padded = (counts + ROW_ALIGNMENT - 1) // ROW_ALIGNMENT * ROW_ALIGNMENT
        self.padded_offsets = torch.cumsum(padded, 0, dtype=torch.int32)
        begin_padded = self.padded_offsets - padded
        begin_packed = torch.cumsum(counts, 0, dtype=torch.int32) - counts
        order = torch.argsort(expert, stable=True)         # copies grouped by expert
        sorted_expert = expert[order]
        rank = torch.arange(order.numel(), device=x.device, dtype=torch.int32) - begin_packed[sorted_expert]
        # A static bound on the padded rows, so that shapes never depend on the routing.
        assignments = tokens * top_k
        self.rows = -(-assignments // ROW_ALIGNMENT) * ROW_ALIGNMENT + experts * ROW_ALIGNMENT
        self.row = (begin_padded[sorted_expert] + rank).long()   # destination of each copy
        self.token = (order // top_k)                            # source token of each copy
        self.prob = torch.zeros(self.rows, dtype=torch.float32, device=x.device)
        self.prob[self.row] = probs.reshape(-1)[order]

    def permute(self, x):
        a = torch.zeros(self.rows, x.shape[1], dtype=x.dtype, device=x.device)
        a[self.row] = x[self.token]
        return a

    def unpermute(self, y, dtype=None):
        """Each token's sum of its copies' rows, in fp32, returned as dtype (default y's)."""
        out = torch.zeros(self.tokens, y.shape[1], dtype=torch.float32, device=y.device)
        out.index_add_(0, self.token, y[self.row].float())
        return out.to(dtype or y.dtype)


def swiglu(h):
    gate, up = h.chunk(2, dim=-1)
    return (F.silu(gate.float()) * up.float()).to(torch.bfloat16)


class MoE:
    def __init__(self, hidden, ffn, experts, top_k, device, seed=0):
        g = torch.Generator(device="cpu").manual_seed(seed)
        rand = lambda *s, scale: (torch.randn(*s, generator=g) * scale).to(device)  # noqa: E731
        self.top_k = top_k
        self.router = rand(hidden, experts, scale=hidden ** -0.5)
        self.w1 = rand(experts, 2 * ffn, hidden, scale=hidden ** -0.5).to(torch.bfloat16)
        self.w2 = rand(experts, hidden, ffn, scale=ffn ** -0.5).to(torch.bfloat16)
        # fc1 as glu reads it: the [gate | up] rows of each expert reordered once, at load time.
        self.glu_rows = gt.glu_interleave_rows(2 * ffn).to(device)
        self.w1_glu = self.w1[:, self.glu_rows].contiguous()

    def forward_ggemm(self, x):
        r = Routing(x, self.router, self.top_k)
        h = gt.glu(r.permute(x), r.padded_offsets, b=self.w1_glu).d          # silu(gate) * up
        y = gt.grouped_gemm(h, r.padded_offsets, prob=r.prob, b=self.w2).d
        return r.unpermute(y)

    def train_step_ggemm(self, x, dout):
        """The block's output for x and, for the upstream gradient dout, the gradients of x,
        the router and both expert weights (w1 in its [gate | up] layout), in fp32."""
        x = x.detach().requires_grad_()
        router = self.router.detach().requires_grad_()
        r = Routing(x, router, self.top_k)      # r.prob stays on autograd's graph of the router
        prob = r.prob.detach()
        a = r.permute(x.detach())
        h, pre = gt.glu(a, r.padded_offsets, None, prob, b=self.w1_glu, generate_c=True)
        y = gt.grouped_gemm(h, r.padded_offsets, b=self.w2).d
        out = r.unpermute(y)

        dy = r.permute(dout)                    # each copy's gradient is its token's
        d_pre, d_prob = gt.dglu(dy, r.padded_offsets, None, prob, pre, b=self.w2)
        dw2 = gt.wgrad(dy, h, r.padded_offsets)                     # dy_g^T h_g
        dw1_glu = gt.wgrad(d_pre, a, r.padded_offsets)              # d_pre_g^T a_g
        dw1 = torch.empty_like(dw1_glu)
        dw1[:, self.glu_rows] = dw1_glu
        da = gt.grouped_gemm(d_pre, r.padded_offsets, b=self.w1_glu, weight_layout="n_major").d
        torch.autograd.backward(r.prob, d_prob)  # into router.grad and, through the logits, x.grad
        return out, r.unpermute(da, torch.float32) + x.grad, router.grad, dw1, dw2

    def forward_grouped_mm(self, x):
        r = Routing(x, self.router, self.top_k)
        h = torch._grouped_mm(r.permute(x), self.w1.transpose(1, 2), offs=r.padded_offsets)
        y = torch._grouped_mm(swiglu(h), self.w2.transpose(1, 2), offs=r.padded_offsets)
        return r.unpermute((y.float() * r.prob[:, None]).to(torch.bfloat16))

    def forward_reference(self, x):
        """Eager PyTorch: each expert's tokens through dense matmuls, fp32 accumulation."""
        logits = x.float() @ self.router.float()
        probs, expert = torch.topk(torch.softmax(logits, dim=-1), self.top_k, dim=-1)
        probs = probs / probs.sum(dim=-1, keepdim=True)
        out = torch.zeros(x.shape, dtype=torch.float32, device=x.device)
        for e in range(self.w1.shape[0]):
            token, slot = torch.nonzero(expert == e, as_tuple=True)
            if token.numel() == 0:
                continue
            h = (x[token].float() @ self.w1[e].float().T).to(torch.bfloat16)
            y = (swiglu(h).float() @ self.w2[e].float().T).to(torch.bfloat16)
            out.index_add_(0, token, (y.float() * probs[token, slot][:, None]).to(torch.bfloat16).float())
        return out.to(torch.bfloat16)

    def train_step_reference(self, x, dout):
        """train_step_ggemm's results from PyTorch autograd on an fp32 copy of the block."""
        # detach() first: .float() of an fp32 tensor is the tensor itself, not a copy.
        x, router, w1, w2 = (t.detach().float().requires_grad_()
                             for t in (x, self.router, self.w1, self.w2))
        probs, expert = torch.topk(torch.softmax(x @ router, dim=-1), self.top_k, dim=-1)
        probs = probs / probs.sum(dim=-1, keepdim=True)
        out = torch.zeros(x.shape, dtype=torch.float32, device=x.device)
        for e in range(w1.shape[0]):
            token, slot = torch.nonzero(expert == e, as_tuple=True)
            if token.numel() == 0:
                continue
            gate, up = (x[token] @ w1[e].T).chunk(2, dim=-1)
            h = F.silu(gate) * up * probs[token, slot][:, None]
            out = out.index_add(0, token, h @ w2[e].T)
        out.backward(dout.float())
        return out.detach(), x.grad, router.grad, w1.grad, w2.grad


def relative_error(ours, ref):
    return float((ours.float() - ref.float()).norm() / ref.float().norm())


def time_ms(fn, x, iters):
    for _ in range(3):
        fn(x)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record()
    for _ in range(iters):
        fn(x)
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / iters


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tokens", type=int, default=4096)
    parser.add_argument("--hidden", type=int, default=2048)
    parser.add_argument("--ffn", type=int, default=1024)
    parser.add_argument("--experts", type=int, default=16)
    parser.add_argument("--top-k", type=int, default=4)
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--no-timing", action="store_true", help="only run the check")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("moe_layer: no CUDA GPU: nothing to run")
        return 0

    torch.manual_seed(0)
    moe = MoE(args.hidden, args.ffn, args.experts, args.top_k, "cuda")
    x = torch.randn(args.tokens, args.hidden, device="cuda").to(torch.bfloat16)
    out = moe.forward_ggemm(x)
    ref = moe.forward_reference(x)
    error = relative_error(out, ref)
    ok = error < 1e-2
    print(f"moe_layer: tokens={args.tokens} hidden={args.hidden} ffn={args.ffn} "
          f"experts={args.experts} top_k={args.top_k}")
    print(f"check against the eager reference: relative error {error:.2e} "
          f"({'ok' if ok else 'FAILED'}, bound 1e-2)")

    dout = torch.randn(args.tokens, args.hidden, device="cuda").to(torch.bfloat16)
    ours = moe.train_step_ggemm(x, dout)
    refs = moe.train_step_reference(x, dout)
    errors = {name: relative_error(o, r)
              for name, o, r in zip(("out", "dx", "d_router", "dw1", "dw2"), ours, refs)}
    train_ok = all(e < 1e-2 for e in errors.values())
    print("training step against fp32 autograd: relative errors " +
          ", ".join(f"{name} {e:.2e}" for name, e in errors.items()) +
          f" ({'ok' if train_ok else 'FAILED'}, bound 1e-2)")

    if not args.no_timing:
        ours = time_ms(moe.forward_ggemm, x, args.iters)
        theirs = time_ms(moe.forward_grouped_mm, x, args.iters)
        step = time_ms(lambda t: moe.train_step_ggemm(t, dout), x, args.iters)
        print(f"block time: ggemm {ours:.3f} ms, torch._grouped_mm {theirs:.3f} ms "
              f"(ggemm/grouped_mm {ours / theirs:.3f}); training step on ggemm {step:.3f} ms")
    return 0 if ok and train_ok else 1


if __name__ == "__main__":
    sys.exit(main())
