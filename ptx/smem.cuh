// Shared-memory loads and stores by shared-window address (ld.shared / st.shared). The kernels
// align their dynamic shared memory by hand, which leaves the compiler with generic pointers;
// these keep the epilogue's staging traffic on the shared-memory path (LDS / STS) instead of
// generic loads and stores. PTX ISA 9.7.9.8 (ld), 9.7.9.10 (st).
#pragma once

#include <cstdint>

#include "ptx/common.cuh"

namespace ggemm::ptx {

// st.shared.b32 [addr], v;                                                    PTX 1.0, all targets
__device__ __forceinline__ void st_shared_b32(uint32_t addr, uint32_t v) {
    asm volatile("st.shared.b32 [%0], %1;" ::"r"(addr), "r"(v));
}

// st.shared.v2.b32 [addr], {x, y};                 (addr 8-byte aligned)      PTX 1.0, all targets
__device__ __forceinline__ void st_shared_v2_b32(uint32_t addr, uint32_t x, uint32_t y) {
    asm volatile("st.shared.v2.b32 [%0], {%1, %2};" ::"r"(addr), "r"(x), "r"(y));
}

// ld.shared.b32 v, [addr];                                                    PTX 1.0, all targets
__device__ __forceinline__ uint32_t ld_shared_b32(uint32_t addr) {
    uint32_t v;
    asm volatile("ld.shared.b32 %0, [%1];" : "=r"(v) : "r"(addr));
    return v;
}

// ld.shared.v2.b32 {x, y}, [addr];                 (addr 8-byte aligned)      PTX 1.0, all targets
__device__ __forceinline__ uint2 ld_shared_v2_b32(uint32_t addr) {
    uint2 v;
    asm volatile("ld.shared.v2.b32 {%0, %1}, [%2];" : "=r"(v.x), "=r"(v.y) : "r"(addr));
    return v;
}

// ld.shared.v4.b32 {x, y, z, w}, [addr];           (addr 16-byte aligned)     PTX 1.0, all targets
__device__ __forceinline__ uint4 ld_shared_v4_b32(uint32_t addr) {
    uint4 v;
    asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "r"(addr));
    return v;
}

}  // namespace ggemm::ptx
