// Running one test case on the GPU through the public API only, and judging its outputs.
#pragma once

#include <string>
#include <vector>

#include "tests/support/gpu_util.h"

namespace ggemm_test {

// Discrete weights: one cudaMalloc per expert, allocated in a shuffled expert order with small
// spacer allocations in between, so expert addresses are neither contiguous nor increasing.
class ExpertWeights {
public:
    // Allocates on first use (the shapes of a case never change), then copies each expert's
    // N x K slice of host_case.b into its own allocation.
    void upload(const HostCase& host_case, uint64_t seed);
    std::vector<uint64_t> pointers() const;  // device addresses, expert order

private:
    std::vector<DeviceBuffer> experts_;
    std::vector<DeviceBuffer> spacers_;
};

// What a run left in device memory.
struct DeviceOutputs {
    std::vector<uint8_t> c;  // rows_allocated x N (empty when C was passed as NULL)
    std::vector<uint8_t> d;  // rows_allocated x N
    uint32_t status = 0;     // the device status word
};

// Device copies of one case. A and prob have exactly M rows, so a read past M is an
// out-of-bounds access compute-sanitizer reports; C and D have kGuardRows more rows past M,
// which no run may change.
class CaseBuffers {
public:
    static constexpr int64_t kGuardRows = 256;

    // dense / discrete: which weight sources to create (both, to compare the modes).
    CaseBuffers(const HostCase& host_case, bool dense, bool discrete);

    // Every input (weights too unless with_weights is false: discrete graph replays point b_ptrs
    // at other allocations and need the old ones unchanged); shapes must match the constructor's.
    void upload(const HostCase& host_case, bool with_weights = true);
    void upload_offsets(const std::vector<int32_t>& offsets);
    void upload_valid_rows(const std::vector<int32_t>& valid_rows);  // the case must have counts
    void upload_weight_pointers(const std::vector<uint64_t>& pointers);  // discrete: the b_ptrs contents
    void poison(cudaStream_t stream);        // C, D <- kPoisonByte; status <- kStatusSentinel
    void ensure_workspace(uint64_t bytes);
    // Whether args() passes alpha and prob as NULL (from the case's config until changed here).
    void pass_null(bool alpha, bool prob) { null_alpha_ = alpha; null_prob_ = prob; }

    ggemm_args args(int32_t weight_mode) const;  // everything for this case's M
    DeviceOutputs download() const;              // synchronous

    int64_t rows_allocated() const { return rows_allocated_; }
    ExpertWeights& expert_weights() { return expert_weights_; }
    const DeviceBuffer& a() const { return a_; }
    const DeviceBuffer& c() const { return c_; }
    const DeviceBuffer& d() const { return d_; }

private:
    int64_t m_ = 0;
    int64_t rows_allocated_ = 0;
    bool has_c_ = false;
    bool null_alpha_ = false;
    bool null_prob_ = false;
    DeviceBuffer a_, b_, offsets_, valid_rows_, alpha_, prob_, bias_, b_ptrs_;
    DeviceBuffer c_, d_, status_, workspace_;
    ExpertWeights expert_weights_;
    uint64_t weights_seed_ = 0;
};

// The plan descriptor of a case. m_capacity is M + 512: a plan serves any M up to its capacity.
ggemm_plan_desc make_desc(const CaseConfig& config, int64_t m, int32_t weight_mode, int32_t scheduler);

// GGEMM_KERNEL (read at plan creation) for the plans created in its scope: only the kernel
// variants whose names start with `prefix` (nullptr: every variant).
class ScopedKernel {
public:
    explicit ScopedKernel(const char* prefix);
    ~ScopedKernel();
    ScopedKernel(const ScopedKernel&) = delete;
    ScopedKernel& operator=(const ScopedKernel&) = delete;
};

// While in scope, calls launch their SM90 variant's general kernel instance, not its plain or
// GLU instance (kernels/sm90/config_sm90.cuh), so that tests can compare them.
class ScopedGeneralInstance {
public:
    ScopedGeneralInstance();
    ~ScopedGeneralInstance();
    ScopedGeneralInstance(const ScopedGeneralInstance&) = delete;
    ScopedGeneralInstance& operator=(const ScopedGeneralInstance&) = delete;
};

// The kernel variant a plan of this case chooses (under the current GGEMM_KERNEL).
std::string planned_kernel(const HostCase& host_case, int32_t weight_mode,
                           int32_t scheduler = GGEMM_SCHEDULER_STATIC);

// Offsets that break the contract's rules (negative, misaligned, decreasing, past M, values whose
// products overflow 32 bits), each with the M it is passed with and the status bit it is about;
// some expert stays computable in each.
struct BadOffsets {
    const char* name;
    std::vector<int32_t> offsets;
    int64_t m;
    uint32_t required;
};
const std::vector<BadOffsets>& bad_offset_cases();

// Captures one execute of `plan` with `args` into `graph`. Capture is ended even when execute
// refuses (the test fails, saying why), so the stream is usable for the next test.
void capture_execute(Graph& graph, const Plan& plan, const ggemm_args& args, const Stream& stream);

// Poisons the outputs, executes once (a plan, or the one-shot call when config.one_shot) on
// `stream`, checks every return code and the launch, synchronizes and downloads.
DeviceOutputs run_once(const HostCase& host_case, CaseBuffers& buffers, int32_t weight_mode, int32_t scheduler,
                       const Stream& stream);

// Judges a run: C and D against the reference (error bounds, finite, poison kept outside the
// defined rows; C untouched when generate_c is off; everything untouched when no row is defined) and the status word (required bits set, no
// bits outside `allowed_status`). Failures are reported with `what`. Returns true when all pass;
// *summary gets one line (errors per output) for the log.
bool verify_run(const std::string& what, const HostCase& host_case, const Problem& problem, const Result& reference,
                const DeviceOutputs& outputs, uint32_t required_status, uint32_t allowed_status,
                std::string* summary);

// The outputs of two runs bitwise equal (C when present, D); reports the first differing byte.
bool same_bits(const std::string& what, const DeviceOutputs& first, const DeviceOutputs& second);

// The reference of a case: its sampled rows, or every defined row.
Result reference_for(const HostCase& host_case, const Problem& problem);

}  // namespace ggemm_test
