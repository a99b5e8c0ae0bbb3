"""Shared fixtures: what this machine has (torch, jax, a CUDA GPU), so that tests needing a GPU
skip with a reason instead of failing or silently passing."""
import importlib.util
import os

import pytest

# torch and jax share the GPU in one test process: jax must not take most of its memory upfront.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")


def _torch_cuda():
    if importlib.util.find_spec("torch") is None:
        return False, "torch is not installed"
    import torch
    if not torch.cuda.is_available():
        return False, "no CUDA GPU visible to torch"
    return True, ""


def _jax_cuda():
    if importlib.util.find_spec("jax") is None:
        return False, "jax is not installed"
    import jax
    try:
        if jax.devices("cuda"):
            return True, ""
    except RuntimeError:
        pass
    return False, "no CUDA GPU visible to jax"


TORCH_CUDA, TORCH_CUDA_REASON = _torch_cuda()
JAX_CUDA, JAX_CUDA_REASON = _jax_cuda()

requires_torch_cuda = pytest.mark.skipif(not TORCH_CUDA, reason=TORCH_CUDA_REASON)
requires_jax_cuda = pytest.mark.skipif(not JAX_CUDA, reason=JAX_CUDA_REASON)


def relative_error(out, ref):
    """||out - ref|| / ||ref||, in float64."""
    import numpy as np
    out = np.asarray(out, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    return float(np.linalg.norm(out - ref) / np.linalg.norm(ref))


# Bounds on the relative error of one output dtype (bf16 operands, fp32 accumulation): the
# output's rounding dominates.
TOLERANCE = {"bfloat16": 8e-3, "float16": 2e-3, "float32": 1e-3}
