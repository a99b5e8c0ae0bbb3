"""ggemm: BF16 grouped GEMM for Mixture-of-Experts layers, from PyTorch and JAX.

    import ggemm.torch     # torch tensors: grouped_gemm, GroupedGemm, b_ptrs
    import ggemm.jax       # JAX arrays: grouped_gemm under eager and jax.jit

This module holds what both share: the library's version, its error type and the plan cache of
the one-shot calls. The frameworks are imported only by their own submodule.
"""
from ._library import (
    GgemmError,
    library_version,
    plan_cache_clear,
    plan_cache_size,
)

__version__ = "0.1.0"

__all__ = ["GgemmError", "library_version", "plan_cache_clear", "plan_cache_size", "__version__"]
