// Where a kernel's shared storage begins in its dynamic shared memory.
#pragma once

#include <cstdint>

#include "ptx/common.cuh"

namespace ggemm {

// The first 1024-byte boundary of the dynamic shared memory (128-byte-swizzled TMA boxes want
// it), reached by an offset from the extern array rather than by rounding the address as an
// integer: the compiler then keeps the shared state space, and accesses through the returned
// reference are shared loads and stores (LDS, STS) instead of generic ones (LD, ST).
template <class Storage>
__device__ __forceinline__ Storage& aligned_shared_storage(uint8_t* smem_raw) {
    const uint32_t misalign = ptx::smem_addr(smem_raw) & 1023u;
    return *reinterpret_cast<Storage*>(smem_raw + ((1024u - misalign) & 1023u));
}

}  // namespace ggemm
