// Helpers of the GPU tests.
//
// Two parts. The first is plain host code (gpu_util.cpp): a test case's description, its random
// inputs, and the check of downloaded outputs against the reference and the poison. gpu_util.cpp
// is also linked into the CPU-only host test binary, so it must not need CUDA; it defines
// GGEMM_TEST_HOST_ONLY before including this header. The second part is CUDA: return-code
// macros and small RAII owners, header-only, used by tests/gpu/.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ggemm.h"
#include "tests/support/reference.h"

namespace ggemm_test {

// ---- a test case ----------------------------------------------------------------------------------

enum class RowLayout {
    kRandom,     // tokens per expert drawn at random, some experts empty, each rounded up to 256
    kOneExpert,  // one expert holds every row, all others are empty
    kExplicit,   // CaseConfig::offsets verbatim (bad offsets, hand-made layouts)
};

struct CaseConfig {
    const char* label = "";
    int32_t num_experts = 1;
    RowLayout layout = RowLayout::kRandom;
    int64_t max_tokens = 1000;      // kRandom: tokens of a non-empty expert in [1, max_tokens]
    double empty_fraction = 0.25;   // kRandom: chance an expert is empty (one is forced when L >= 3)
    int32_t full_expert = 0;        // kOneExpert: the expert that holds all rows
    int64_t tokens = 1000;          // kOneExpert: its tokens (rounded up to 256)
    std::vector<int32_t> offsets;   // kExplicit
    int64_t n = 8;
    int64_t k = 8;
    int32_t c_dtype = GGEMM_DTYPE_BF16;
    int32_t d_dtype = GGEMM_DTYPE_BF16;
    int32_t bias_dtype = GGEMM_DTYPE_NONE;
    bool generate_c = true;
    bool c_buffer_when_unused = true;  // generate_c off: pass a poisoned C (checked untouched) or NULL
    int32_t scheduler = GGEMM_SCHEDULER_STATIC;
    int64_t slack_rows = 256;       // M = padded_offsets[L-1] + slack_rows (a multiple of 256) ...
    int64_t fixed_m = 0;            // ... unless fixed_m > 0 (kExplicit, graph replays)
    int sampled_rows_per_expert = -1;  // reference rows per expert (+ first/last); -1: every row
    bool one_shot = false;          // run through ggemm_grouped_gemm instead of a plan
    int32_t tile_m = 0;             // plan overrides (0: the planner's choice)
    int32_t tile_n = 0;
    int32_t cluster_m = 0;
    int32_t split_k = 0;            // 0: the planner's choice, 1: never split K
    int32_t weight_layout = GGEMM_WEIGHT_LAYOUT_K_MAJOR;  // how HostCase::b holds each B_g
    int32_t activation = GGEMM_ACTIVATION_NONE;  // fused GLU: D is M x N/2
    float glu_scale = 1.702f, glu_limit = 7.0f, glu_offset = 1.0f;  // clamped GeGLU's constants
    bool null_alpha = false;        // pass args.alpha = NULL; the case's alpha is then all ones
    bool null_prob = false;         // pass args.prob = NULL; the case's prob is then all ones
    uint64_t seed = 1;
};

// "L=64 N=5760 K=7168 C=fp16 D=bf16 bias=fp32 gen_c=1 dynamic" (plus the label).
std::string describe(const CaseConfig& config);

// Host inputs of one case. Values: A, B uniform in [-1, 1) (bf16), alpha in [0.25, 2),
// prob in [0.05, 1), bias in [-2, 2) rounded to the bias dtype. Never all zeros.
struct HostCase {
    CaseConfig config;
    int64_t m = 0;                 // the M passed to execute
    std::vector<int32_t> offsets;  // L padded cumulative ends
    std::vector<uint16_t> a;       // M x K
    std::vector<uint16_t> b;       // L x N x K, or L x K x N with N-major weights (dense; discrete
                                   // uploads one expert's N * K slice of it)
    std::vector<float> alpha;      // L
    std::vector<float> prob;       // M
    std::vector<uint8_t> bias;     // L x N of bias_dtype, empty without bias
    std::vector<int32_t> valid_rows;  // L valid-row counts passed as args.valid_rows; empty: none

    Problem problem() const;       // the dense view for the reference
    int64_t rows_used() const;     // padded_offsets[L-1] (as given, may be bad)
    int32_t empty_experts() const;
};

// Draws offsets for the config's layout (M is not known yet: kRandom and kOneExpert only).
std::vector<int32_t> draw_offsets(const CaseConfig& config, uint64_t seed);

// A case with fresh random inputs.
HostCase make_case(const CaseConfig& config);

// The same case with its weights in the other layout (each B_g transposed, the config's
// weight_layout switched): the same products, so the same reference.
HostCase with_transposed_weights(const HostCase& host_case);

// New values for every input (same shapes and M) and, unless keep_offsets, new offsets drawn
// with the config's layout, constrained to end at or before M: the data of a graph replay.
void refresh_case(HostCase& host_case, uint64_t seed, bool keep_offsets);

// The rows a case's reference computes: every defined row, or the sample of the config.
std::vector<int64_t> reference_rows(const HostCase& host_case);

// ---- checking downloaded outputs -------------------------------------------------------------------

// Output buffers are filled with this byte before every run: NaN in bf16, fp16 and fp32 alike.
constexpr uint8_t kPoisonByte = 0xFF;
// The device status word is set to this before every run; execute must clear it in-stream.
constexpr uint32_t kStatusSentinel = 0xDEADBEEFu;

double tolerance(int32_t dtype);  // 1e-4 for fp32, 1e-2 for bf16 / fp16

struct OutputCheck {
    const char* name = "";       // "C" or "D"
    int32_t dtype = 0;
    double relative_error = 0.0; // Frobenius, over the reference rows
    int64_t compared = 0;        // elements compared with the reference
    int64_t nonfinite = 0;       // NaN / Inf in defined rows (unwritten poison counts here)
    int64_t touched = 0;         // changed elements in rows that must stay poisoned
    bool untouched_only = false; // the whole buffer had to keep the poison (nothing compared)
    std::string first_problem;   // where the first defect is, in words
    bool ok() const;             // nothing touched; and unless untouched_only: compared > 0,
                                 // all finite, error within tolerance(dtype)
    std::string summary() const;
};

// got: rows_allocated x N elements of dtype, downloaded after a run. owner: defined_rows() over
// rows_allocated. Rows with owner < 0, and every row when untouched_everywhere (C with
// generate_c off), must still be poison; defined rows must be finite; reference rows are compared.
OutputCheck check_output(const char* name, const void* got, int64_t rows_allocated, int64_t n, int32_t dtype,
                         const Result& reference, bool reference_is_c, const std::vector<int32_t>& owner,
                         bool untouched_everywhere);

// Number of bytes of [data, data + bytes) that differ from the poison.
int64_t count_unpoisoned(const void* data, std::size_t bytes);

}  // namespace ggemm_test

#if !defined(GGEMM_TEST_HOST_ONLY)
// ---- CUDA helpers (GPU tests only) -----------------------------------------------------------------
#include <cuda_runtime_api.h>
#include <doctest/doctest.h>

#include <utility>

// doctest prints a const char* as a pointer: the macros stream C strings as std::string.
// Every CUDA runtime call is checked; a failure stops the test case with the call and the error.
#define CHECK_CUDA(call)                                                                            \
    do {                                                                                            \
        const cudaError_t check_cuda_status_ = (call);                                              \
        if (check_cuda_status_ != cudaSuccess) {                                                    \
            FAIL(#call << " failed: " << std::string(cudaGetErrorName(check_cuda_status_)) << " ("                \
                       << std::string(cudaGetErrorString(check_cuda_status_)) << ")");                           \
        }                                                                                           \
    } while (0)

// After every enqueue of device work: a launch failure shows up here first.
#define CHECK_LAUNCH() CHECK_CUDA(cudaGetLastError())

// A ggemm call that must succeed; the failure message carries the library's own message.
#define CHECK_GGEMM(call)                                                                           \
    do {                                                                                            \
        const ggemm_status_t check_ggemm_status_ = (call);                                          \
        if (check_ggemm_status_ != GGEMM_SUCCESS) {                                                 \
            FAIL(#call << " returned " << std::string(ggemm_status_string(check_ggemm_status_)) << ": "          \
                       << ::ggemm_test::last_error_message());                                      \
        }                                                                                           \
    } while (0)

namespace ggemm_test {

inline std::string last_error_message() {
    char buffer[1024] = {};
    if (ggemm_last_error_message(buffer, sizeof buffer, nullptr) != GGEMM_SUCCESS) return "(no message)";
    return buffer;
}

// One cudaMalloc allocation. Move-only; freed on destruction (errors there are ignored: the test
// already failed or the context is gone).
class DeviceBuffer {
public:
    DeviceBuffer() = default;
    explicit DeviceBuffer(std::size_t bytes) { allocate(bytes); }
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;
    DeviceBuffer(DeviceBuffer&& other) noexcept { *this = std::move(other); }
    DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
        if (this != &other) {
            release();
            ptr_ = std::exchange(other.ptr_, nullptr);
            bytes_ = std::exchange(other.bytes_, 0);
        }
        return *this;
    }
    ~DeviceBuffer() { release(); }

    void allocate(std::size_t bytes) {
        release();
        if (bytes == 0) return;
        CHECK_CUDA(cudaMalloc(&ptr_, bytes));
        bytes_ = bytes;
    }
    void upload(const void* host, std::size_t bytes) {
        REQUIRE_MESSAGE(bytes <= bytes_, "upload of " << bytes << " bytes into a buffer of " << bytes_);
        if (bytes != 0) CHECK_CUDA(cudaMemcpy(ptr_, host, bytes, cudaMemcpyHostToDevice));
    }
    template <typename T>
    void upload(const std::vector<T>& host) {
        upload(host.data(), host.size() * sizeof(T));
    }
    template <typename T>
    void assign(const std::vector<T>& host) {  // allocate exactly and upload
        allocate(host.size() * sizeof(T));
        upload(host);
    }
    std::vector<uint8_t> download() const {
        std::vector<uint8_t> host(bytes_);
        if (bytes_ != 0) CHECK_CUDA(cudaMemcpy(host.data(), ptr_, bytes_, cudaMemcpyDeviceToHost));
        return host;
    }
    void fill(uint8_t byte, cudaStream_t stream) {
        if (bytes_ != 0) CHECK_CUDA(cudaMemsetAsync(ptr_, byte, bytes_, stream));
    }
    void* get() const { return ptr_; }
    template <typename T>
    T* as() const { return static_cast<T*>(ptr_); }
    std::size_t bytes() const { return bytes_; }

private:
    void release() {
        if (ptr_ != nullptr) (void)cudaFree(ptr_);
        ptr_ = nullptr;
        bytes_ = 0;
    }
    void* ptr_ = nullptr;
    std::size_t bytes_ = 0;
};

class Stream {
public:
    Stream() { CHECK_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking)); }
    Stream(const Stream&) = delete;
    Stream& operator=(const Stream&) = delete;
    ~Stream() { (void)cudaStreamDestroy(stream_); }
    cudaStream_t get() const { return stream_; }
    void synchronize() const { CHECK_CUDA(cudaStreamSynchronize(stream_)); }

private:
    cudaStream_t stream_ = nullptr;
};

class Plan {
public:
    explicit Plan(const ggemm_plan_desc& desc) { CHECK_GGEMM(ggemm_plan_create(&plan_, &desc)); }
    Plan(const Plan&) = delete;
    Plan& operator=(const Plan&) = delete;
    ~Plan() { (void)ggemm_plan_destroy(plan_); }
    ggemm_plan_t get() const { return plan_; }
    uint64_t workspace_size() const {
        uint64_t bytes = 0;
        CHECK_GGEMM(ggemm_plan_workspace_size(plan_, &bytes));
        return bytes;
    }
    std::string description() const {
        char buffer[16384] = {};
        if (ggemm_plan_describe(plan_, buffer, sizeof buffer, nullptr) != GGEMM_SUCCESS) return "(no description)";
        return buffer;
    }

private:
    ggemm_plan_t plan_ = nullptr;
};

// A captured graph, instantiated.
class Graph {
public:
    Graph() = default;
    Graph(const Graph&) = delete;
    Graph& operator=(const Graph&) = delete;
    ~Graph() {
        if (exec_ != nullptr) (void)cudaGraphExecDestroy(exec_);
        if (graph_ != nullptr) (void)cudaGraphDestroy(graph_);
    }
    void begin_capture(cudaStream_t stream) {
        CHECK_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    }
    void end_capture(cudaStream_t stream) {
        CHECK_CUDA(cudaStreamEndCapture(stream, &graph_));
        REQUIRE(graph_ != nullptr);
        CHECK_CUDA(cudaGraphInstantiate(&exec_, graph_, 0));
    }
    void launch(cudaStream_t stream) {
        CHECK_CUDA(cudaGraphLaunch(exec_, stream));
        CHECK_LAUNCH();
    }

private:
    cudaGraph_t graph_ = nullptr;
    cudaGraphExec_t exec_ = nullptr;
};

}  // namespace ggemm_test
#endif  // !GGEMM_TEST_HOST_ONLY
