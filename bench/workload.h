// One benchmark problem on the device: a ggemm plan plus enough input sets, rotated from run to
// run, that the L2 cache cannot serve a run from what the previous run left behind.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "ggemm.h"
#include "bench/suite.h"
#include "src/kernel_variant.h"  // LaunchParams: the bare launch links the library's internals

namespace ggemm_bench {

// A failed CUDA or ggemm call while setting up or running a benchmark; what() names the call,
// the status and ggemm's message.
struct BenchError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

void check_cuda(cudaError_t status, const char* what);
void check_ggemm(ggemm_status_t status, const char* what);
// "GGEMM_ERROR_X (n): <thread's last ggemm message>"
std::string ggemm_error_text(ggemm_status_t status);

// What is measured beyond the shape.
struct Variant {
    int32_t scheduler = GGEMM_SCHEDULER_STATIC;
    // The full epilogue: bf16 bias, random prob, fp32 C written, bf16 D. Otherwise bf16 D only,
    // no bias, C not written (prob is still random: it is always applied).
    bool full_epilogue = false;
    // Discrete weights (b_ptrs): each expert's N x K matrix in its own allocation, allocated in
    // a shuffled order, instead of one dense L x N x K tensor.
    bool discrete = false;
    int32_t tile_m = 0;    // plan overrides, 0 = the planner chooses
    int32_t tile_n = 0;
    int32_t cluster_m = 0;
    int32_t sets = 0;      // input sets to rotate over, 0 = enough to defeat the L2

    std::string key() const;
};

// Owns device memory; moves only.
class DeviceBuffer {
public:
    DeviceBuffer() = default;
    explicit DeviceBuffer(std::size_t bytes);
    DeviceBuffer(DeviceBuffer&& other) noexcept;
    DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;
    ~DeviceBuffer();
    void* get() const { return ptr_; }
    std::size_t bytes() const { return bytes_; }

private:
    void* ptr_ = nullptr;
    std::size_t bytes_ = 0;
};

class Workload {
public:
    // Creates the plan, allocates and fills the input sets on `stream`, and waits for the fills.
    Workload(const MoeCase& moe_case, const Variant& variant, cudaStream_t stream);
    ~Workload();
    Workload(const Workload&) = delete;
    Workload& operator=(const Workload&) = delete;

    // Enqueues one ggemm_execute over input set `set` (0 <= set < sets()).
    ggemm_status_t execute(int set, cudaStream_t stream) const;
    // The same through the one-shot ggemm_grouped_gemm (process-wide plan cache).
    ggemm_status_t execute_one_shot(int set, cudaStream_t stream) const;
    // ggemm_execute over set `set` with M = 0 and no status word: the checks alone (host time).
    ggemm_status_t execute_no_launch(int set, cudaStream_t stream) const;
    // The plan's kernel launched over set `set` with the arguments ggemm_execute would give it,
    // prepared once: no checks, no map encodes (the bare launch execute is measured against),
    // after the memset of the counters the call needs when it splits K. Static scheduler only.
    cudaError_t bare_launch(int set, cudaStream_t stream) const;
    // The splits of K of a call over set `set` (1: K not split).
    int32_t k_splits(int set) const;
    // Runs every set once, waits, and throws if a launch failed or the kernel reported
    // anything in its device status word.
    void warm_up(cudaStream_t stream) const;

    int sets() const { return static_cast<int>(args_.size()); }
    // The fewest bytes one run must move through device memory: each input read once (the
    // weights of experts that own rows only), each output written once.
    double bytes_moved() const { return bytes_moved_; }
    const std::string& plan_description() const { return description_; }

private:
    struct PlanDeleter {
        void operator()(ggemm_plan_t plan) const { ggemm_plan_destroy(plan); }
    };

    ggemm_plan_desc desc_{};
    std::unique_ptr<ggemm_plan, PlanDeleter> plan_;  // destroyed even when the constructor throws
    std::vector<DeviceBuffer> set_buffers_;  // a, b (or the expert matrices and b_ptrs), prob, bias per set
    DeviceBuffer offsets_, alpha_, c_, d_, workspace_, device_status_;
    std::vector<ggemm_args> args_;
    double bytes_moved_ = 0.0;
    std::string description_;
    mutable std::unique_ptr<ggemm::LaunchParams> bare_params_;  // bare_launch's, of set 0..sets()-1
    mutable int bare_set_ = -1;
};

}  // namespace ggemm_bench
