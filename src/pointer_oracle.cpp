// The real pointer oracle: cuPointerGetAttributes, or cudaPointerGetAttributes where the driver
// call is missing or fails.
#include "src/pointer_oracle.h"

#include <cstdio>
#include <cuda_runtime_api.h>

#include "src/driver_api.h"

namespace ggemm {

// One driver call for the facts (about half the runtime call's cost on H200 machines, bench
// host/parts/*). Unlike cuPointerGetAttribute, it answers CUDA_SUCCESS with zeroed values for
// memory CUDA does not know (pageable host memory, a freed allocation), as
// cudaPointerGetAttributes answers cudaMemoryTypeUnregistered. The mapping's bounds cost ~5 ns
// more per call; a driver that refuses them is asked again without. False: ask the runtime.
bool query_pointer_with_driver(const void* pointer, PointerFacts* facts) noexcept {
    const PFN_cuPointerGetAttributes_v7000 get = driver_api().pointer_get_attributes;
    if (get == nullptr) return false;
    CUpointer_attribute which[5] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                    CU_POINTER_ATTRIBUTE_IS_MANAGED, CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR,
                                    CU_POINTER_ATTRIBUTE_MAPPING_SIZE};
    unsigned int type = 0;
    int ordinal = -1;
    unsigned int managed = 0;
    unsigned long long mapping_base = 0;
    unsigned long long mapping_size = 0;
    void* data[5] = {&type, &ordinal, &managed, &mapping_base, &mapping_size};
    const CUdeviceptr address = reinterpret_cast<CUdeviceptr>(pointer);
    if (get(5, which, data, address) != CUDA_SUCCESS) {
        mapping_base = mapping_size = 0;
        if (get(3, which, data, address) != CUDA_SUCCESS) return false;
    }
    facts->device = ordinal;
    facts->mapping_begin = static_cast<uintptr_t>(mapping_base);
    facts->mapping_end = static_cast<uintptr_t>(mapping_base + mapping_size);
    if (managed != 0) {
        facts->kind = PointerFacts::kManaged;
    } else if (type == CU_MEMORYTYPE_DEVICE) {
        facts->kind = PointerFacts::kDevice;
    } else if (type == CU_MEMORYTYPE_HOST) {
        facts->kind = PointerFacts::kPinnedHost;
    } else if (type == 0) {
        facts->kind = PointerFacts::kPageableHost;
    } else {
        facts->kind = PointerFacts::kUnknown;
        facts->runtime_error = "unknown memory type";
    }
    return true;
}

PointerFacts query_pointer_with_runtime(const void* pointer) noexcept {
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

PointerFacts CudaPointerOracle::query(const void* pointer) const noexcept {
    PointerFacts facts;
    if (query_pointer_with_driver(pointer, &facts)) return facts;
    return query_pointer_with_runtime(pointer);
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
