#include "bench/workload.h"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "bench/device_fill.h"
#include "src/execute.h"

namespace ggemm_bench {

std::string ggemm_error_text(ggemm_status_t status) {
    char message[1024] = {0};
    ggemm_last_error_message(message, sizeof message, nullptr);
    return std::string(ggemm_status_string(status)) + " (" + std::to_string(status) + "): " + message;
}

void check_cuda(cudaError_t status, const char* what) {
    if (status != cudaSuccess)
        throw BenchError(std::string(what) + ": " + cudaGetErrorName(status) + ": " + cudaGetErrorString(status));
}

void check_ggemm(ggemm_status_t status, const char* what) {
    if (status != GGEMM_SUCCESS) throw BenchError(std::string(what) + ": " + ggemm_error_text(status));
}

std::string Variant::key() const {
    return std::to_string(scheduler) + (full_epilogue ? "/full" : "/plain") + (discrete ? "/discrete" : "/dense") +
           "/" + std::to_string(tile_m) +
           "x" + std::to_string(tile_n) + "c" + std::to_string(cluster_m) + "/s" + std::to_string(sets);
}

DeviceBuffer::DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
    // cudaMalloc returns 256-byte aligned memory: every ggemm alignment rule holds.
    if (bytes) check_cuda(cudaMalloc(&ptr_, bytes), "cudaMalloc");
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : ptr_(std::exchange(other.ptr_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
    if (this != &other) {
        if (ptr_) cudaFree(ptr_);
        ptr_ = std::exchange(other.ptr_, nullptr);
        bytes_ = std::exchange(other.bytes_, 0);
    }
    return *this;
}

DeviceBuffer::~DeviceBuffer() {
    if (ptr_) cudaFree(ptr_);
}

namespace {

constexpr std::size_t kBF16 = 2;
constexpr std::size_t kFP32 = 4;
constexpr int kMaxSets = 32;
// Sets rotate so that, between two runs over the same set, at least this many L2 capacities of
// other data pass through the cache.
constexpr double kL2Multiple = 3.0;

int choose_sets(std::size_t set_bytes, std::size_t shared_bytes, int requested) {
    int device = 0;
    check_cuda(cudaGetDevice(&device), "cudaGetDevice");
    int l2_bytes = 0;
    check_cuda(cudaDeviceGetAttribute(&l2_bytes, cudaDevAttrL2CacheSize, device), "cudaDeviceGetAttribute(L2)");
    std::size_t free_bytes = 0, total_bytes = 0;
    check_cuda(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");

    int sets = requested;
    if (sets <= 0) {
        double wanted = kL2Multiple * double(l2_bytes) / double(std::max<std::size_t>(set_bytes, 1));
        sets = std::min(kMaxSets, std::max(2, int(wanted) + 1));
    }
    // Leave a tenth of the free memory alone; fewer sets is better than a failed allocation.
    std::size_t budget = free_bytes - free_bytes / 10;
    while (sets > 1 && shared_bytes + std::size_t(sets) * set_bytes > budget) --sets;
    if (shared_bytes + set_bytes > budget)
        throw BenchError("the problem needs " + std::to_string((shared_bytes + set_bytes) >> 20) +
                         " MiB of device memory, " + std::to_string(free_bytes >> 20) + " MiB free");
    return sets;
}

}  // namespace

Workload::Workload(const MoeCase& moe_case, const Variant& variant, cudaStream_t stream) {
    const int64_t m = moe_case.m();
    const int64_t n = moe_case.n;
    const int64_t k = moe_case.k;
    const int32_t experts = moe_case.experts;

    check_ggemm(ggemm_plan_desc_init(&desc_, sizeof desc_), "ggemm_plan_desc_init");
    check_cuda(cudaGetDevice(&desc_.device), "cudaGetDevice");
    desc_.m_capacity = std::max<int64_t>(m, 256);
    desc_.n = n;
    desc_.k = k;
    desc_.num_experts = experts;
    desc_.weight_mode = variant.discrete ? GGEMM_WEIGHTS_DISCRETE : GGEMM_WEIGHTS_DENSE;
    desc_.c_dtype = variant.full_epilogue ? GGEMM_DTYPE_FP32 : GGEMM_DTYPE_BF16;
    desc_.d_dtype = GGEMM_DTYPE_BF16;
    desc_.bias_dtype = variant.full_epilogue ? GGEMM_DTYPE_BF16 : GGEMM_DTYPE_NONE;
    desc_.generate_c = variant.full_epilogue ? 1 : 0;
    desc_.scheduler = variant.scheduler;
    desc_.tile_m = variant.tile_m;
    desc_.tile_n = variant.tile_n;
    desc_.cluster_m = variant.cluster_m;
    ggemm_plan_t plan = nullptr;
    check_ggemm(ggemm_plan_create(&plan, &desc_), "ggemm_plan_create");
    plan_.reset(plan);

    uint64_t required = 0;
    std::string text(4096, '\0');
    check_ggemm(ggemm_plan_describe(plan_.get(), &text[0], text.size(), &required), "ggemm_plan_describe");
    if (required > text.size()) {
        text.assign(required, '\0');
        check_ggemm(ggemm_plan_describe(plan_.get(), &text[0], text.size(), &required), "ggemm_plan_describe");
    }
    description_ = text.c_str();

    uint64_t workspace_bytes = 0, one_shot_bytes = 0;
    check_ggemm(ggemm_plan_workspace_size(plan_.get(), &workspace_bytes), "ggemm_plan_workspace_size");
    check_ggemm(ggemm_workspace_size(&desc_, &one_shot_bytes), "ggemm_workspace_size");
    workspace_bytes = std::max(workspace_bytes, one_shot_bytes);

    const std::size_t a_bytes = std::size_t(m) * k * kBF16;
    const std::size_t b_bytes = std::size_t(experts) * n * k * kBF16;
    const std::size_t prob_bytes = std::size_t(m) * kFP32;
    const std::size_t bias_bytes = variant.full_epilogue ? std::size_t(experts) * n * kBF16 : 0;
    const std::size_t c_bytes = variant.full_epilogue ? std::size_t(m) * n * kFP32 : 0;
    const std::size_t d_bytes = std::size_t(m) * n * kBF16;
    auto padded = [](std::size_t bytes) { return (bytes + 255) / 256 * 256; };
    const std::size_t expert_bytes = std::size_t(n) * k * kBF16;
    const std::size_t set_bytes = padded(a_bytes) + padded(prob_bytes) + padded(bias_bytes) +
                                  (variant.discrete ? std::size_t(experts) * padded(expert_bytes) +
                                                          padded(std::size_t(experts) * sizeof(uint64_t))
                                                    : padded(b_bytes));
    const std::size_t shared_bytes = c_bytes + d_bytes + workspace_bytes + 4096;
    const int sets = choose_sets(set_bytes, shared_bytes, variant.sets);

    offsets_ = DeviceBuffer(std::size_t(experts) * sizeof(int32_t));
    alpha_ = DeviceBuffer(std::size_t(experts) * kFP32);
    c_ = DeviceBuffer(c_bytes);
    d_ = DeviceBuffer(d_bytes);
    workspace_ = DeviceBuffer(workspace_bytes);
    device_status_ = DeviceBuffer(sizeof(uint32_t));
    check_cuda(cudaMemcpyAsync(offsets_.get(), moe_case.padded_offsets.data(), offsets_.bytes(),
                               cudaMemcpyHostToDevice, stream), "copy padded_offsets");
    check_cuda(fill_uniform_f32(static_cast<float*>(alpha_.get()), std::size_t(experts), 7, 0.5f, 1.5f, stream),
               "fill alpha");

    for (int set = 0; set < sets; ++set) {
        // Distinct seeds per set and per tensor: every set holds different data.
        const uint64_t seed = 1000003ull * uint64_t(set + 1);
        DeviceBuffer a(a_bytes), b(variant.discrete ? 0 : b_bytes), prob(prob_bytes), bias(bias_bytes);
        check_cuda(fill_uniform_bf16(a.get(), a_bytes / kBF16, seed + 1, -1.0f, 1.0f, stream), "fill A");
        DeviceBuffer b_ptrs;
        if (variant.discrete) {
            // One allocation per expert, made in a shuffled order so that neighbouring experts do
            // not sit next to each other in memory.
            std::vector<void*> pointers(std::size_t(experts), nullptr);
            std::vector<int32_t> order(static_cast<std::size_t>(experts));
            for (int32_t g = 0; g < experts; ++g) order[std::size_t(g)] = g;
            for (int32_t g = experts - 1; g > 0; --g)
                std::swap(order[std::size_t(g)], order[std::size_t((seed + uint64_t(g) * 2654435761u) % uint64_t(g + 1))]);
            for (int32_t g : order) {
                DeviceBuffer expert(expert_bytes);
                check_cuda(fill_uniform_bf16(expert.get(), expert_bytes / kBF16, seed + 2 + 7919u * uint64_t(g + 1),
                                             -1.0f, 1.0f, stream),
                           "fill an expert's B");
                pointers[std::size_t(g)] = expert.get();
                set_buffers_.push_back(std::move(expert));
            }
            b_ptrs = DeviceBuffer(std::size_t(experts) * sizeof(uint64_t));
            check_cuda(cudaMemcpyAsync(b_ptrs.get(), pointers.data(), b_ptrs.bytes(), cudaMemcpyHostToDevice, stream),
                       "copy b_ptrs");
            // The host vector is a local: the copy must finish before it goes.
            check_cuda(cudaStreamSynchronize(stream), "copy b_ptrs");
        } else {
            check_cuda(fill_uniform_bf16(b.get(), b_bytes / kBF16, seed + 2, -1.0f, 1.0f, stream), "fill B");
        }
        check_cuda(fill_uniform_f32(static_cast<float*>(prob.get()), std::size_t(m), seed + 3, 0.0f, 1.0f, stream),
                   "fill prob");
        check_cuda(fill_uniform_bf16(bias.get(), bias_bytes / kBF16, seed + 4, -1.0f, 1.0f, stream), "fill bias");

        ggemm_args args;
        check_ggemm(ggemm_args_init(&args, sizeof args), "ggemm_args_init");
        args.m = m;
        args.a = a.get();
        args.b = variant.discrete ? nullptr : b.get();
        args.b_ptrs = variant.discrete ? static_cast<const uint64_t*>(b_ptrs.get()) : nullptr;
        args.padded_offsets = static_cast<const int32_t*>(offsets_.get());
        args.alpha = static_cast<const float*>(alpha_.get());
        args.prob = static_cast<const float*>(prob.get());
        args.bias = bias.get();
        args.c = c_.get();
        args.d = d_.get();
        args.workspace = workspace_.get();
        args.workspace_size = workspace_.bytes();
        args.device_status = static_cast<uint32_t*>(device_status_.get());
        args_.push_back(args);
        set_buffers_.push_back(std::move(a));
        set_buffers_.push_back(std::move(b));
        set_buffers_.push_back(std::move(b_ptrs));
        set_buffers_.push_back(std::move(prob));
        set_buffers_.push_back(std::move(bias));
    }
    check_cuda(cudaStreamSynchronize(stream), "initializing the inputs");

    const int64_t active = moe_case.active_experts();
    bytes_moved_ = double(a_bytes) + double(active) * n * k * kBF16 + double(prob_bytes) + double(d_bytes) +
                   double(c_bytes) + double(active) * n * (variant.full_epilogue ? kBF16 : 0) +
                   double(experts) * (sizeof(int32_t) + kFP32);
}

Workload::~Workload() {
    // Work still queued may read these buffers: drain before they are freed.
    cudaDeviceSynchronize();
}

ggemm_status_t Workload::execute(int set, cudaStream_t stream) const {
    return ggemm_execute(plan_.get(), &args_[std::size_t(set)], stream);
}

ggemm_status_t Workload::execute_one_shot(int set, cudaStream_t stream) const {
    return ggemm_grouped_gemm(&desc_, &args_[std::size_t(set)], stream);
}

ggemm_status_t Workload::execute_no_launch(int set, cudaStream_t stream) const {
    ggemm_args args = args_[std::size_t(set)];
    args.m = 0;
    args.device_status = nullptr;
    return ggemm_execute(plan_.get(), &args, stream);
}

cudaError_t Workload::bare_launch(int set, cudaStream_t stream) const {
    if (bare_set_ != set) {
        if (desc_.scheduler != GGEMM_SCHEDULER_STATIC) throw std::runtime_error("bare_launch: static scheduler only");
        if (!bare_params_) bare_params_ = std::make_unique<ggemm::LaunchParams>();
        check_ggemm(ggemm::prepare_launch(*plan_, args_[std::size_t(set)], bare_params_.get()), "prepare_launch");
        bare_set_ = set;
    }
    // A call that splits K (or runs the dynamic scheduler) needs its counters zeroed first;
    // ggemm_execute enqueues that memset, so the bare launch does too.
    const ggemm_args& args = args_[std::size_t(set)];
    const uint64_t cleared = ggemm::cleared_workspace_bytes(*plan_, args.m);
    if (cleared > 0) {
        const cudaError_t error = cudaMemsetAsync(args.workspace, 0, cleared, stream);
        if (error != cudaSuccess) return error;
    }
    return plan_->variant.launch(*bare_params_, stream);
}

int32_t Workload::k_splits(int set) const { return ggemm::call_k_splits(*plan_, args_[std::size_t(set)].m); }

void Workload::warm_up(cudaStream_t stream) const {
    for (int set = 0; set < sets(); ++set) check_ggemm(execute(set, stream), "ggemm_execute (warm-up)");
    check_cuda(cudaStreamSynchronize(stream), "warm-up run");
    check_cuda(cudaGetLastError(), "warm-up run");
    uint32_t status = 0;
    check_cuda(cudaMemcpy(&status, device_status_.get(), sizeof status, cudaMemcpyDeviceToHost),
               "reading device_status");
    if (status != 0) {
        char hex[16];
        std::snprintf(hex, sizeof hex, "0x%x", status);
        throw BenchError(std::string("the kernel reported device_status ") + hex + " on valid offsets");
    }
}

}  // namespace ggemm_bench
