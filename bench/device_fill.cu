#include "bench/device_fill.h"

#include <cuda_bf16.h>

namespace ggemm_bench {
namespace {

// splitmix64: a stateless hash of (seed, index), so any grid shape gives the same data.
__device__ __forceinline__ uint64_t mix(uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

__device__ __forceinline__ float uniform(uint64_t seed, std::size_t i, float lo, float hi) {
    // 24 random bits -> [0, 1): exact in fp32.
    float unit = float(mix(seed * 0x100000001B3ull ^ i) >> 40) * (1.0f / 16777216.0f);
    return lo + (hi - lo) * unit;
}

__global__ void fill_bf16_kernel(__nv_bfloat16* dst, std::size_t count, uint64_t seed, float lo, float hi) {
    std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
    for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride)
        dst[i] = __float2bfloat16_rn(uniform(seed, i, lo, hi));
}

__global__ void fill_f32_kernel(float* dst, std::size_t count, uint64_t seed, float lo, float hi) {
    std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
    for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride)
        dst[i] = uniform(seed, i, lo, hi);
}

__global__ void busy_wait_kernel(uint32_t nanoseconds) {
    uint64_t start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    } while (now - start < nanoseconds);
}

// A grid-stride loop over a few waves of the largest GPU is enough to saturate memory.
constexpr unsigned kFillThreads = 256;
constexpr unsigned kFillBlocks = 132 * 8;

unsigned blocks_for(std::size_t count) {
    std::size_t needed = (count + kFillThreads - 1) / kFillThreads;
    return unsigned(needed < kFillBlocks ? (needed ? needed : 1) : kFillBlocks);
}

}  // namespace

cudaError_t fill_uniform_bf16(void* dst, std::size_t count, uint64_t seed, float lo, float hi,
                              cudaStream_t stream) {
    if (count == 0) return cudaSuccess;
    fill_bf16_kernel<<<blocks_for(count), kFillThreads, 0, stream>>>(
        static_cast<__nv_bfloat16*>(dst), count, seed, lo, hi);
    return cudaGetLastError();
}

cudaError_t fill_uniform_f32(float* dst, std::size_t count, uint64_t seed, float lo, float hi,
                             cudaStream_t stream) {
    if (count == 0) return cudaSuccess;
    fill_f32_kernel<<<blocks_for(count), kFillThreads, 0, stream>>>(dst, count, seed, lo, hi);
    return cudaGetLastError();
}

cudaError_t gpu_busy_wait(uint32_t nanoseconds, cudaStream_t stream) {
    busy_wait_kernel<<<1, 1, 0, stream>>>(nanoseconds);
    return cudaGetLastError();
}

}  // namespace ggemm_bench
