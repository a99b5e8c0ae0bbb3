// A global load issued where the code puts it. PTX ISA 9.7.9.8 (ld).
#pragma once

#include "ptx/common.cuh"

namespace ggemm::ptx {

// ld.global.f32 d, [addr];                                                    PTX 1.0, sm_10
// In a volatile asm: the compiler neither merges it with an earlier load of the same address nor
// moves it ahead of other volatile asm (a main loop's wgmma waits), so the value it returns, and
// anything waiting for it, comes after them.
__device__ __forceinline__ float ld_global_in_place(const float* addr) {
    float value;
    asm volatile("ld.global.f32 %0, [%1];" : "=f"(value) : "l"(addr));
    return value;
}

}  // namespace ggemm::ptx
