// Where a pointer points, as the planner's validation needs it. Validation asks an oracle
// instead of the CUDA runtime directly, so CPU tests can describe any memory they like.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ggemm {

struct PointerFacts {
    enum Kind : int32_t {
        kDevice,        // device memory of `device`
        kManaged,       // managed (unified) memory, usable from any device
        kPinnedHost,    // page-locked host memory (of `device`'s context)
        kPageableHost,  // ordinary host memory the runtime does not know
        kUnknown,       // the runtime could not answer; see runtime_error
    };
    Kind kind = kUnknown;
    int32_t device = -1;
    const char* runtime_error = "";  // static storage (cudaGetErrorString)
    // The physical allocation the pointer lies in, [mapping_begin, mapping_end), where the driver
    // says (empty otherwise): one allocation of one kind on one device, so any pointer inside it
    // has the same facts. cudaMalloc packs small allocations into shared 2 MiB mappings; a
    // stream-ordered pool maps its memory in larger pieces.
    uintptr_t mapping_begin = 0;
    uintptr_t mapping_end = 0;
};

class PointerOracle {
public:
    virtual PointerFacts query(const void* pointer) const noexcept = 0;

protected:
    ~PointerOracle() = default;
};

// Asks the driver (cuPointerGetAttributes), or the runtime (cudaPointerGetAttributes) when the
// driver has no answer. Stateless; one instance serves every thread.
class CudaPointerOracle final : public PointerOracle {
public:
    PointerFacts query(const void* pointer) const noexcept override;
};

const CudaPointerOracle& cuda_pointer_oracle() noexcept;

// The two ways it asks, apart (a GPU test checks they agree): false when the driver call is
// missing or fails.
bool query_pointer_with_driver(const void* pointer, PointerFacts* facts) noexcept;
PointerFacts query_pointer_with_runtime(const void* pointer) noexcept;

// True when the memory is usable by a kernel on `device`: its device memory, or managed.
bool is_memory_of_device(const PointerFacts& facts, int32_t device) noexcept;

// Writes a short description of the memory ("pinned host memory", "device memory of device
// 1", ...) into buffer.
void describe_memory(const PointerFacts& facts, char* buffer, std::size_t buffer_size) noexcept;

}  // namespace ggemm
