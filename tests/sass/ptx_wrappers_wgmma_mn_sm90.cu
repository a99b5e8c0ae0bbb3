// Probe of ptx/wgmma_mma.cuh's MN-major forms for tests/sass/check_sass.sh: one kernel per width
// of the (transposed) wgmma the weight gradient uses, so that each wrapper's asm assembles for
// sm_90a to an HGMMA with both operands transposed. Compile-only; never launched.
#include <cstdint>

#include "ptx/common.cuh"
#include "ptx/wgmma.cuh"
#include "ptx/wgmma_mma.cuh"

using namespace ggemm::ptx;

template <int N>
__global__ void __launch_bounds__(128, 1) ptx_wrappers_sm90_wgmma_mn(float* out) {
    __shared__ alignas(1024) uint8_t a[64 * 128];
    __shared__ alignas(1024) uint8_t b[256 * 128];
    float acc[N / 2];
#pragma unroll
    for (int i = 0; i < N / 2; ++i) acc[i] = 0.f;
    wgmma_fence();
    const uint64_t desc_a = wgmma_smem_desc(smem_addr(a), 8192, 1024, WgmmaSwizzle::k128B);
    const uint64_t desc_b = wgmma_smem_desc(smem_addr(b), 8192, 1024, WgmmaSwizzle::k128B);
    Wgmma<N, /*kTransposeB=*/1, /*kTransposeA=*/1>::mma(acc, desc_a, desc_b, 0u);
    wgmma_commit();
    wgmma_wait<0>();
    float sum = 0.f;
#pragma unroll
    for (int i = 0; i < N / 2; ++i) {
        wgmma_fence_operand(acc[i]);
        sum += acc[i];
    }
    out[threadIdx.x] = sum;
}

template __global__ void ptx_wrappers_sm90_wgmma_mn<256>(float*);
template __global__ void ptx_wrappers_sm90_wgmma_mn<128>(float*);
