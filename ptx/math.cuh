// The special-function unit's approximations (MUFU), with subnormal inputs and results flushed to
// zero. PTX ISA 9.7.3.21 (ex2), 9.7.3.17 (rcp). Plain arithmetic: no asm volatile, so the
// compiler may schedule them like any other math.
#pragma once

#include "ptx/common.cuh"

namespace ggemm::ptx {

// ex2.approx.ftz.f32 y, x;  2^x, maximum relative error 2^-22 (flushes to 0 below 2^-126)
//                                                                              PTX 1.0, all targets
__device__ __forceinline__ float ex2_approx_ftz(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

// rcp.approx.ftz.f32 y, x;  1 / x, maximum error 1 ulp; 1 / inf = 0           PTX 1.0, all targets
__device__ __forceinline__ float rcp_approx_ftz(float x) {
    float y;
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

}  // namespace ggemm::ptx
