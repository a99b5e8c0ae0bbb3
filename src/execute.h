// The execute path: read and validate the arguments, encode the tensor maps, enqueue.
#pragma once

#include <cstdint>
#include <cuda_runtime_api.h>

#include "ggemm.h"
#include "kernels/common/params.h"
#include "src/plan.h"

namespace ggemm {

// The kernel's per-call arguments from validated ones (pure).
KernelArgs make_kernel_args(const ggemm_plan& plan, const ggemm_args& args) noexcept;

// The launch of a validated call with M > 0: its tensor maps (reused from this thread's last
// call on the same plan and buffers) and kernel arguments. Enqueues nothing.
ggemm_status_t prepare_launch(const ggemm_plan& plan, const ggemm_args& args, LaunchParams* params) noexcept;

// The discrete-mode B template's placeholder address: b_ptrs rounded down to 16 bytes (TMA
// wants a 16-byte-aligned address; b_ptrs need only be 8-aligned). Never dereferenced: the
// kernel writes each expert's address into its copy of the template.
const void* b_template_placeholder(const uint64_t* b_ptrs) noexcept;

// The calling thread's current device, as cudaGetDevice reports it, and whether a context is
// current already.
struct ThreadDevice {
    int device = -1;
    bool context_current = false;
};
// When a context of `expected` is current, two driver calls answer (cuCtxGetCurrent and
// cuCtxGetDevice, cheaper than cudaGetDevice); otherwise the runtime. GGEMM_ERROR_CUDA with the
// runtime's reason.
ggemm_status_t current_device(const DeviceInfo& expected, ThreadDevice* thread) noexcept;
// Makes the device's primary context current unless a context is current already (execute
// encodes maps and launches through the driver, in the current context), or GGEMM_ERROR_CUDA
// with the reason.
ggemm_status_t make_context_current(const ThreadDevice& thread) noexcept;

// Splits of K for a call of m rows: the plan's, when the partials have room for m rows; else 1.
int32_t call_k_splits(const ggemm_plan& plan, int64_t m) noexcept;
// Bytes at the workspace's start a call of m rows zeroes before its launch: the dynamic
// scheduler's tile counter, when K is split the arrival counters of m rows' tiles, and with dGLU
// everything up to the end of m rows' partial sums of d_prob.
uint64_t cleared_workspace_bytes(const ggemm_plan& plan, int64_t m) noexcept;
// Zeroes `bytes` bytes at bytes_at in stream order, or GGEMM_ERROR_CUDA naming `what`.
ggemm_status_t zero_in_stream(void* bytes_at, uint64_t bytes, const char* what, cudaStream_t stream) noexcept;
// GGEMM_SUCCESS, or GGEMM_ERROR_CUDA naming the kernel, its grid and the launch's own error
// (each variant's launch returns that error: cudaGetLastError after a success could report an
// older error for work that was enqueued).
ggemm_status_t launch_status(cudaError_t error, const char* kernel, int32_t grid) noexcept;

// ggemm_execute's body; the one-shot call passes its descriptor's m_capacity. Nothing is
// enqueued unless every check passes.
ggemm_status_t execute_plan(const ggemm_plan& plan, const ggemm_args* user_args, int64_t m_capacity,
                            cudaStream_t stream) noexcept;

}  // namespace ggemm
