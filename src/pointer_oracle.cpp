// The real pointer oracle: cudaPointerGetAttributes.
#include "src/pointer_oracle.h"

#include <cstdio>
#include <cuda_runtime_api.h>

namespace ggemm {

PointerFacts CudaPointerOracle::query(const void* pointer) const noexcept {
    PointerFacts facts;
    cudaPointerAttributes attributes;
    const cudaError_t error = cudaPointerGetAttributes(&attributes, pointer);
    if (error != cudaSuccess) {
        // The error is sticky in the runtime's last-error slot: clear it, or the caller's
        // next cudaGetLastError would report our question as their failure.
        cudaGetLastError();
        facts.kind = PointerFacts::kUnknown;
        facts.runtime_error = cudaGetErrorString(error);
        return facts;
    }
    facts.device = attributes.device;
    switch (attributes.type) {
        case cudaMemoryTypeDevice: facts.kind = PointerFacts::kDevice; break;
        case cudaMemoryTypeManaged: facts.kind = PointerFacts::kManaged; break;
        case cudaMemoryTypeHost: facts.kind = PointerFacts::kPinnedHost; break;
        case cudaMemoryTypeUnregistered: facts.kind = PointerFacts::kPageableHost; break;
        default: facts.kind = PointerFacts::kUnknown; facts.runtime_error = "unknown memory type"; break;
    }
    return facts;
}

const CudaPointerOracle& cuda_pointer_oracle() noexcept {
    static const CudaPointerOracle oracle;
    return oracle;
}

bool is_memory_of_device(const PointerFacts& facts, int32_t device) noexcept {
    // Managed memory migrates to whichever device touches it, so any device may use it.
    return facts.kind == PointerFacts::kManaged ||
           (facts.kind == PointerFacts::kDevice && facts.device == device);
}

void describe_memory(const PointerFacts& facts, char* buffer, std::size_t buffer_size) noexcept {
    switch (facts.kind) {
        case PointerFacts::kDevice:
            std::snprintf(buffer, buffer_size, "device memory of device %d", facts.device);
            break;
        case PointerFacts::kManaged: std::snprintf(buffer, buffer_size, "managed memory"); break;
        case PointerFacts::kPinnedHost:
            std::snprintf(buffer, buffer_size, "pinned host memory");
            break;
        case PointerFacts::kPageableHost:
            std::snprintf(buffer, buffer_size, "host memory unknown to CUDA (pageable, or not an allocation)");
            break;
        default:
            std::snprintf(buffer, buffer_size, "memory the CUDA runtime cannot identify (%s)",
                          facts.runtime_error);
            break;
    }
}

}  // namespace ggemm
