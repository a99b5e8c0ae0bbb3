// Discrete weights: one tensor map per expert, built on the device for every launch so that the
// pointer array may change between CUDA-graph replays without the host reading it.
//
// Each thread copies the host-encoded template (dims {K, N}, box, swizzle) into the expert's
// 128-byte slot in the workspace and rewrites its base address with tensormap.replace. This is
// the only read of b_ptrs: the pointer's status goes into the expert's word in the workspace,
// and the GEMM decides from that word alone. A null or misaligned pointer is never written into
// a map: the slot keeps the template's placeholder address, the scheduler skips the expert, and
// the device status word reports it. The release
// fence here pairs with fence.proxy.tensormap::generic.acquire in the GEMM kernel, which runs
// after this one in the same stream (PTX ISA 9.7.13.4, tensormap proxy).
#pragma once

#include <cstdint>

#include "kernels/common/params.h"
#include "kernels/common/scheduler.h"
#include "ptx/fence.cuh"
#include "ptx/tma.cuh"

namespace ggemm {

// static: each architecture's translation unit compiles its own copy for its own target.
static __global__ void build_weight_maps(const __grid_constant__ CUtensorMap map_template,
                                  const uint64_t* b_ptrs, CUtensorMap* maps, uint32_t* weight_status,
                                  int32_t num_experts, uint32_t* device_status) {
    const int32_t expert = static_cast<int32_t>(blockIdx.x * blockDim.x + threadIdx.x);
    if (expert >= num_experts) return;
    const uint64_t ptr = b_ptrs[expert];
    const uint4* src = reinterpret_cast<const uint4*>(&map_template);
    uint4* dst = reinterpret_cast<uint4*>(maps + expert);
#pragma unroll
    for (int i = 0; i < static_cast<int>(sizeof(CUtensorMap) / sizeof(uint4)); ++i) dst[i] = src[i];
    const uint32_t bits = weight_pointer_status(ptr);
    weight_status[expert] = bits;
    if (bits == 0) {
        ptx::tensormap_replace_global_address(maps + expert, ptr);
    } else if (device_status != nullptr) {
        atomicOr(device_status, bits);
    }
    ptx::fence_proxy_tensormap_release();
}

}  // namespace ggemm
