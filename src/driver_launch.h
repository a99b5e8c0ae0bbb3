// A kernel launch through the driver's cuLaunchKernelEx, which costs the host less than the
// runtime's cudaLaunchKernelEx (bench host/parts/launch*). Declared here for the GEMM launch
// (src/launch.cuh), defined in src/driver_launch.cpp.
#pragma once

#include <cuda_runtime_api.h>

namespace ggemm {

struct DriverLaunch {
    cudaKernel_t kernel;    // cudaGetKernel's handle: not tied to a context
    dim3 grid;
    dim3 block;
    unsigned smem_bytes;
    unsigned cluster_x;     // CTAs per cluster along x (1: no cluster attribute)
    cudaStream_t stream;
    void** params;          // one pointer per kernel parameter, as cuLaunchKernelEx takes them
};

// True when the kernel was enqueued. False when it was not: no kernel handle or driver entry
// point, or an error (no current context on this thread, say); the caller then launches through
// the runtime, which enqueues it or reports its own error.
bool driver_launch(const DriverLaunch& launch) noexcept;

// Whether a test has asked that plain calls run their variant's general kernel instance
// (force_general_instance, src/launch_test_hooks.h); false in every normal run.
bool general_instance_forced() noexcept;

}  // namespace ggemm
