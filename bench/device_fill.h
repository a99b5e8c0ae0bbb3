// Device-side helpers of the benchmark: random fills (inputs are generated on the GPU, never
// zeros: zeros run faster than real data and hide unwritten outputs) and a busy-wait kernel.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

namespace ggemm_bench {

// dst[i] = bf16 of a uniform value in [lo, hi), a pure function of (seed, i).
cudaError_t fill_uniform_bf16(void* dst, std::size_t count, uint64_t seed, float lo, float hi,
                              cudaStream_t stream);
// The same in fp32.
cudaError_t fill_uniform_f32(float* dst, std::size_t count, uint64_t seed, float lo, float hi,
                             cudaStream_t stream);
// Keeps the stream busy for about `nanoseconds`, so that the host's launch of the timed work
// overlaps this wait instead of appearing as idle time between the start event and the kernel.
cudaError_t gpu_busy_wait(uint32_t nanoseconds, cudaStream_t stream);

}  // namespace ggemm_bench
