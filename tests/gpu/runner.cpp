// Running one case on the GPU and judging it. Public API only, but for the launch path's test
// hooks (src/launch_test_hooks.h).
#include "tests/gpu/runner.h"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <sstream>

#include "src/launch_test_hooks.h"

namespace ggemm_test {

// ---- discrete weights ---------------------------------------------------------------------------

void ExpertWeights::upload(const HostCase& host_case, uint64_t seed) {
    const CaseConfig& config = host_case.config;
    const std::size_t experts = static_cast<std::size_t>(config.num_experts);
    const std::size_t expert_bytes = static_cast<std::size_t>(config.n * config.k) * sizeof(uint16_t);
    if (experts_.empty()) {
        experts_.resize(experts);
        std::vector<std::size_t> order(experts);
        std::iota(order.begin(), order.end(), std::size_t{0});
        Rng rng(seed);
        for (std::size_t i = experts; i > 1; --i) std::swap(order[i - 1], order[static_cast<std::size_t>(rng.below(static_cast<int64_t>(i)))]);
        for (std::size_t g : order) {
            spacers_.emplace_back(static_cast<std::size_t>(256 * (1 + rng.below(8))));
            experts_[g].allocate(expert_bytes);
        }
    }
    REQUIRE(experts_.size() == experts);
    for (std::size_t g = 0; g < experts; ++g) {
        REQUIRE(experts_[g].bytes() == expert_bytes);
        experts_[g].upload(host_case.b.data() + g * static_cast<std::size_t>(config.n * config.k), expert_bytes);
    }
}

std::vector<uint64_t> ExpertWeights::pointers() const {
    std::vector<uint64_t> pointers;
    for (const DeviceBuffer& expert : experts_) pointers.push_back(reinterpret_cast<uint64_t>(expert.get()));
    return pointers;
}

// ---- buffers ------------------------------------------------------------------------------------

CaseBuffers::CaseBuffers(const HostCase& host_case, bool dense, bool discrete) {
    const CaseConfig& config = host_case.config;
    m_ = host_case.m;
    rows_allocated_ = host_case.m + kGuardRows;
    has_c_ = config.generate_c || config.c_buffer_when_unused;
    pass_null(config.null_alpha, config.null_prob);
    const std::size_t rows = static_cast<std::size_t>(rows_allocated_);
    const std::size_t n = static_cast<std::size_t>(config.n);
    a_.allocate(host_case.a.size() * sizeof(uint16_t));
    if (dense) b_.allocate(host_case.b.size() * sizeof(uint16_t));
    if (discrete) b_ptrs_.allocate(static_cast<std::size_t>(config.num_experts) * sizeof(uint64_t));
    offsets_.allocate(host_case.offsets.size() * sizeof(int32_t));
    valid_rows_.allocate(host_case.valid_rows.size() * sizeof(int32_t));
    alpha_.allocate(host_case.alpha.size() * sizeof(float));
    prob_.allocate(host_case.prob.size() * sizeof(float));
    bias_.allocate(host_case.bias.size());
    if (has_c_) c_.allocate(rows * n * dtype_size(config.c_dtype));
    d_.allocate(rows * n * dtype_size(config.d_dtype));
    status_.allocate(sizeof(uint32_t));
    weights_seed_ = mix_seed(config.seed, 11);
    upload(host_case);
}

void CaseBuffers::upload(const HostCase& host_case, bool with_weights) {
    REQUIRE_MESSAGE(host_case.m == m_, "a case's M is fixed for its buffers");
    a_.upload(host_case.a);
    if (with_weights && b_.get() != nullptr) b_.upload(host_case.b);
    if (with_weights && b_ptrs_.get() != nullptr) {
        expert_weights_.upload(host_case, weights_seed_);
        upload_weight_pointers(expert_weights_.pointers());
    }
    upload_offsets(host_case.offsets);
    if (!host_case.valid_rows.empty()) upload_valid_rows(host_case.valid_rows);
    alpha_.upload(host_case.alpha);
    prob_.upload(host_case.prob);
    if (!host_case.bias.empty()) bias_.upload(host_case.bias);
}

void CaseBuffers::upload_offsets(const std::vector<int32_t>& offsets) { offsets_.upload(offsets); }

void CaseBuffers::upload_valid_rows(const std::vector<int32_t>& valid_rows) {
    REQUIRE_MESSAGE(valid_rows_.get() != nullptr, "this case was made without valid-row counts");
    valid_rows_.upload(valid_rows);
}

void CaseBuffers::upload_weight_pointers(const std::vector<uint64_t>& pointers) {
    REQUIRE(b_ptrs_.get() != nullptr);
    b_ptrs_.upload(pointers);
}

void CaseBuffers::poison(cudaStream_t stream) {
    c_.fill(kPoisonByte, stream);
    d_.fill(kPoisonByte, stream);
    const std::vector<uint32_t> sentinel{kStatusSentinel};
    CHECK_CUDA(cudaMemcpyAsync(status_.get(), sentinel.data(), sizeof(uint32_t), cudaMemcpyHostToDevice, stream));
    CHECK_CUDA(cudaStreamSynchronize(stream));  // the sentinel's host memory is a local
}

void CaseBuffers::ensure_workspace(uint64_t bytes) {
    if (bytes > workspace_.bytes()) workspace_.allocate(static_cast<std::size_t>(bytes));
}

ggemm_args CaseBuffers::args(int32_t weight_mode) const {
    ggemm_args args;
    REQUIRE(ggemm_args_init(&args, sizeof args) == GGEMM_SUCCESS);
    args.m = m_;
    args.a = a_.get();
    if (weight_mode == GGEMM_WEIGHTS_DENSE) {
        REQUIRE_MESSAGE(b_.get() != nullptr, "these buffers have no dense weights");
        args.b = b_.get();
    } else {
        REQUIRE_MESSAGE(b_ptrs_.get() != nullptr, "these buffers have no weight pointer array");
        args.b_ptrs = b_ptrs_.as<const uint64_t>();
    }
    args.padded_offsets = offsets_.as<const int32_t>();
    args.alpha = null_alpha_ ? nullptr : alpha_.as<const float>();
    args.prob = null_prob_ ? nullptr : prob_.as<const float>();
    args.bias = bias_.get();
    args.c = has_c_ ? c_.get() : nullptr;
    args.d = d_.get();
    args.workspace = workspace_.get();
    args.workspace_size = workspace_.bytes();
    args.device_status = status_.as<uint32_t>();
    args.valid_rows = valid_rows_.as<const int32_t>();  // nullptr when the case has no counts
    return args;
}

DeviceOutputs CaseBuffers::download() const {
    DeviceOutputs outputs;
    CHECK_CUDA(cudaDeviceSynchronize());
    if (has_c_) outputs.c = c_.download();
    outputs.d = d_.download();
    const std::vector<uint8_t> status = status_.download();
    std::memcpy(&outputs.status, status.data(), sizeof(uint32_t));
    return outputs;
}

// ---- running ------------------------------------------------------------------------------------

ggemm_plan_desc make_desc(const CaseConfig& config, int64_t m, int32_t weight_mode, int32_t scheduler) {
    ggemm_plan_desc desc;
    REQUIRE(ggemm_plan_desc_init(&desc, sizeof desc) == GGEMM_SUCCESS);
    desc.device = 0;
    desc.m_capacity = m + 512;
    desc.n = config.n;
    desc.k = config.k;
    desc.num_experts = config.num_experts;
    desc.weight_mode = weight_mode;
    desc.c_dtype = config.c_dtype;
    desc.d_dtype = config.d_dtype;
    desc.bias_dtype = config.bias_dtype;
    desc.generate_c = config.generate_c ? 1 : 0;
    desc.scheduler = scheduler;
    desc.tile_m = config.tile_m;
    desc.tile_n = config.tile_n;
    desc.cluster_m = config.cluster_m;
    desc.split_k = config.split_k;
    desc.weight_layout = config.weight_layout;
    desc.activation = config.activation;
    desc.glu_scale = config.glu_scale;
    desc.glu_limit = config.glu_limit;
    desc.glu_offset = config.glu_offset;
    return desc;
}

ScopedKernel::ScopedKernel(const char* prefix) {
    if (prefix != nullptr) setenv("GGEMM_KERNEL", prefix, 1);
}

ScopedKernel::~ScopedKernel() { unsetenv("GGEMM_KERNEL"); }

ScopedGeneralInstance::ScopedGeneralInstance() { ggemm::force_general_instance(true); }

ScopedGeneralInstance::~ScopedGeneralInstance() { ggemm::force_general_instance(false); }

std::string planned_kernel(const HostCase& host_case, int32_t weight_mode, int32_t scheduler) {
    const Plan plan(make_desc(host_case.config, host_case.m, weight_mode, scheduler));
    const std::string description = plan.description();
    const std::size_t at = description.find("kernel: ");
    if (at == std::string::npos) return "";
    const std::size_t end = description.find(':', at + 8);
    return description.substr(at + 8, end - at - 8);
}

const std::vector<BadOffsets>& bad_offset_cases() {
    static const std::vector<BadOffsets> cases = {
        {"negative", {256, -256, 512, 768}, 1024, GGEMM_DEVICE_STATUS_OFFSET_NEGATIVE},
        {"misaligned", {256, 512, 700, 1024, 1280}, 1280, GGEMM_DEVICE_STATUS_OFFSET_MISALIGNED},
        {"decreasing", {256, 768, 512, 1024, 1280}, 1280, GGEMM_DEVICE_STATUS_OFFSET_DECREASING},
        {"past M", {256, 512, 1280}, 1024, GGEMM_DEVICE_STATUS_OFFSET_PAST_M},
        {"past M, last expert", {256, 768, 1024, 2048}, 1024, GGEMM_DEVICE_STATUS_OFFSET_PAST_M},
        // The last offset falls back to 0: expert 0's rows [0, M) are still computed (rows below
        // padded_offsets[L-1] are not a bound on what is written; [0, M) is).
        {"last offset back to 0", {1024, 0}, 1024, GGEMM_DEVICE_STATUS_OFFSET_DECREASING},
        // Values whose products with K or N overflow 32 bits.
        {"extreme", {256, 2147483392, INT32_MIN, 512}, 1024,
         GGEMM_DEVICE_STATUS_OFFSET_PAST_M | GGEMM_DEVICE_STATUS_OFFSET_NEGATIVE},
        {"misaligned max", {256, INT32_MAX, INT32_MAX}, 768,
         GGEMM_DEVICE_STATUS_OFFSET_PAST_M | GGEMM_DEVICE_STATUS_OFFSET_MISALIGNED},
    };
    return cases;
}

void capture_execute(Graph& graph, const Plan& plan, const ggemm_args& args, const Stream& stream) {
    graph.begin_capture(stream.get());
    const ggemm_status_t status = ggemm_execute(plan.get(), &args, stream.get());
    if (status != GGEMM_SUCCESS) {
        cudaGraph_t partial = nullptr;
        (void)cudaStreamEndCapture(stream.get(), &partial);
        if (partial != nullptr) (void)cudaGraphDestroy(partial);
        FAIL("ggemm_execute during capture returned " << std::string(ggemm_status_string(status)) << ": "
                                                       << last_error_message());
    }
    graph.end_capture(stream.get());
}

DeviceOutputs run_once(const HostCase& host_case, CaseBuffers& buffers, int32_t weight_mode, int32_t scheduler,
                       const Stream& stream) {
    const ggemm_plan_desc desc = make_desc(host_case.config, host_case.m, weight_mode, scheduler);
    buffers.poison(stream.get());
    if (host_case.config.one_shot) {
        uint64_t workspace = 0;
        CHECK_GGEMM(ggemm_workspace_size(&desc, &workspace));
        buffers.ensure_workspace(workspace);
        const ggemm_args args = buffers.args(weight_mode);
        CHECK_GGEMM(ggemm_grouped_gemm(&desc, &args, stream.get()));
    } else {
        Plan plan(desc);
        buffers.ensure_workspace(plan.workspace_size());
        const ggemm_args args = buffers.args(weight_mode);
        CHECK_GGEMM(ggemm_execute(plan.get(), &args, stream.get()));
    }
    CHECK_LAUNCH();
    stream.synchronize();
    return buffers.download();
}

Result reference_for(const HostCase& host_case, const Problem& problem) {
    const std::vector<int64_t> rows = reference_rows(host_case);
    return compute_reference(problem, &rows);
}

static std::string hex(uint32_t value) {
    std::ostringstream text;
    text << "0x" << std::hex << value;
    return text.str();
}

bool verify_run(const std::string& what, const HostCase& host_case, const Problem& problem, const Result& reference,
                const DeviceOutputs& outputs, uint32_t required_status, uint32_t allowed_status,
                std::string* summary) {
    const CaseConfig& config = host_case.config;
    const int64_t rows_allocated = host_case.m + CaseBuffers::kGuardRows;
    const std::vector<int32_t> owner = defined_rows(problem, rows_allocated);
    const bool any_defined = std::any_of(owner.begin(), owner.end(), [](int32_t expert) { return expert >= 0; });
    bool ok = true;

    // No defined row (a no-op): the whole of D must keep its poison.
    const OutputCheck d_check = check_output("D", outputs.d.data(), rows_allocated, config.n, config.d_dtype, reference,
                                             false, owner, !any_defined);
    CHECK_MESSAGE(d_check.ok(), what << ": " << d_check.summary());
    ok = ok && d_check.ok();
    std::ostringstream line;
    line.precision(2);
    if (any_defined) {
        line << std::scientific << "D err " << d_check.relative_error;
    } else {
        line << "D untouched";
    }
    if (!outputs.c.empty()) {
        // generate_c off: the whole C buffer, defined rows included, must keep its poison.
        const OutputCheck c_check = check_output("C", outputs.c.data(), rows_allocated, config.n, config.c_dtype,
                                                 reference, true, owner, !config.generate_c || !any_defined);
        CHECK_MESSAGE(c_check.ok(), what << ": " << c_check.summary());
        ok = ok && c_check.ok();
        if (config.generate_c && any_defined) {
            line << ", C err " << c_check.relative_error;
        } else {
            line << ", C untouched";
        }
    }
    line << " over " << reference.rows.size() << " reference rows";

    const bool status_ok = (outputs.status & required_status) == required_status && (outputs.status & ~allowed_status) == 0;
    CHECK_MESSAGE(status_ok, what << ": device status " << hex(outputs.status) << ", required bits " << hex(required_status)
                                  << ", allowed bits " << hex(allowed_status) << " (" << hex(kStatusSentinel)
                                  << " means execute did not clear the word)");
    ok = ok && status_ok;
    line << ", status " << hex(outputs.status);
    if (summary != nullptr) *summary = line.str();
    return ok;
}

static bool same_buffer(const std::string& what, const char* name, const std::vector<uint8_t>& first,
                        const std::vector<uint8_t>& second) {
    if (first.size() != second.size()) {
        FAIL_CHECK(what << ": " << std::string(name) << " sizes differ: " << first.size() << " vs " << second.size());
        return false;
    }
    const auto mismatch = std::mismatch(first.begin(), first.end(), second.begin());
    if (mismatch.first == first.end()) return true;
    const std::size_t byte = static_cast<std::size_t>(mismatch.first - first.begin());
    const std::size_t differing = static_cast<std::size_t>(
        std::inner_product(first.begin(), first.end(), second.begin(), std::size_t{0}, std::plus<>(),
                           [](uint8_t x, uint8_t y) { return static_cast<std::size_t>(x != y); }));
    FAIL_CHECK(what << ": " << std::string(name) << " differs at byte " << byte << " (" << differing << " bytes differ in all)");
    return false;
}

bool same_bits(const std::string& what, const DeviceOutputs& first, const DeviceOutputs& second) {
    const bool c_same = same_buffer(what, "C", first.c, second.c);
    const bool d_same = same_buffer(what, "D", first.d, second.d);
    return c_same && d_same;
}

}  // namespace ggemm_test
