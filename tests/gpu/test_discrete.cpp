// Discrete weights with a bad pointer entry: that expert's rows are skipped (left untouched), the
// others are correct, and the status word says why. The entry is never dereferenced: run under
// compute-sanitizer.
#include <doctest/doctest.h>

#include <algorithm>

#include "tests/gpu/runner.h"

using namespace ggemm_test;

namespace {

// Expert 1 owns rows [256, 768) and gets the bad pointer; expert 2 is empty.
CaseConfig bad_pointer_config(const char* label, int32_t scheduler) {
    CaseConfig config;
    config.label = label;
    config.num_experts = 5;
    config.layout = RowLayout::kExplicit;
    config.offsets = {256, 768, 768, 1280, 1536};
    config.fixed_m = 1792;
    config.n = 264;
    config.k = 136;
    config.c_dtype = GGEMM_DTYPE_BF16;
    config.d_dtype = GGEMM_DTYPE_FP16;
    config.bias_dtype = GGEMM_DTYPE_FP32;
    config.generate_c = true;
    config.scheduler = scheduler;
    config.seed = 8000 + static_cast<uint64_t>(scheduler);
    return config;
}

// The case's problem with the weights of `skipped` missing: the reference skips that expert.
Problem problem_without(const HostCase& host_case, int32_t skipped, std::vector<const uint16_t*>& host_experts) {
    host_experts.clear();
    const std::size_t expert_elements = static_cast<std::size_t>(host_case.config.n * host_case.config.k);
    for (int32_t g = 0; g < host_case.config.num_experts; ++g) {
        host_experts.push_back(g == skipped ? nullptr : host_case.b.data() + static_cast<std::size_t>(g) * expert_elements);
    }
    Problem problem = host_case.problem();
    problem.b = nullptr;
    problem.b_experts = host_experts.data();
    return problem;
}

// Runs the case with b_ptrs[bad_expert] replaced by bad_pointer; the reference skips that expert.
void run_with_bad_pointer(const char* label, int32_t bad_expert, bool null_pointer, uint32_t status_bit) {
    for (int32_t scheduler : {GGEMM_SCHEDULER_STATIC, GGEMM_SCHEDULER_DYNAMIC}) {
        const HostCase host_case = make_case(bad_pointer_config(label, scheduler));
        Stream stream;
        CaseBuffers buffers(host_case, false, true);
        std::vector<uint64_t> pointers = buffers.expert_weights().pointers();
        // Misaligned: 8 bytes into the right allocation, so reading N x K from there would also
        // run 8 bytes past its end.
        pointers[static_cast<std::size_t>(bad_expert)] = null_pointer ? 0 : pointers[static_cast<std::size_t>(bad_expert)] + 8;
        buffers.upload_weight_pointers(pointers);

        std::vector<const uint16_t*> host_experts;
        const Problem problem = problem_without(host_case, bad_expert, host_experts);
        const Result reference = reference_for(host_case, problem);
        REQUIRE(reference.rows.size() == 1536 - 512);  // every expert but the bad one

        const std::string what = describe(host_case.config);
        const DeviceOutputs outputs = run_once(host_case, buffers, GGEMM_WEIGHTS_DISCRETE, scheduler, stream);
        std::string summary;
        verify_run(what, host_case, problem, reference, outputs, status_bit, status_bit, &summary);
        MESSAGE(what << ": expert " << bad_expert << " skipped; " << summary);
    }
}

}  // namespace

TEST_CASE("sanitizer: discrete weights, a null pointer for an expert with rows is skipped and reported") {
    run_with_bad_pointer("null b_ptrs entry", 1, true, GGEMM_DEVICE_STATUS_WEIGHT_PTR_NULL);
}

TEST_CASE("sanitizer: discrete weights, a misaligned pointer for an expert with rows is skipped and reported") {
    run_with_bad_pointer("misaligned b_ptrs entry", 1, false, GGEMM_DEVICE_STATUS_WEIGHT_PTR_MISALIGNED);
}

// b_ptrs is read once per call, by the map builder. Here the entry of expert 1 is NULL when the
// builder runs and made valid (by a copy node spliced into the captured graph) before the GEMM
// runs. The GEMM must still skip the expert: its map slot was never patched, and loading
// through it would read from the placeholder address instead of any weights.
TEST_CASE("sanitizer: discrete weights: an entry made valid between the map builder and the GEMM stays skipped") {
    for (int32_t scheduler : {GGEMM_SCHEDULER_STATIC, GGEMM_SCHEDULER_DYNAMIC}) {
        const HostCase host_case = make_case(bad_pointer_config("entry made valid after the builder", scheduler));
        Stream stream;
        CaseBuffers buffers(host_case, false, true);
        std::vector<uint64_t> pointers = buffers.expert_weights().pointers();
        DeviceBuffer good_pointer;
        good_pointer.assign(std::vector<uint64_t>{pointers[1]});
        pointers[1] = 0;
        buffers.upload_weight_pointers(pointers);

        Plan plan(make_desc(host_case.config, host_case.m, GGEMM_WEIGHTS_DISCRETE, scheduler));
        buffers.ensure_workspace(plan.workspace_size());
        const ggemm_args args = buffers.args(GGEMM_WEIGHTS_DISCRETE);
        buffers.poison(stream.get());

        cudaGraph_t graph = nullptr;
        CHECK_CUDA(cudaStreamBeginCapture(stream.get(), cudaStreamCaptureModeThreadLocal));
        const ggemm_status_t status = ggemm_execute(plan.get(), &args, stream.get());
        CHECK_CUDA(cudaStreamEndCapture(stream.get(), &graph));
        REQUIRE(graph != nullptr);
        CHECK_GGEMM(status);

        // The two kernel nodes: the map builder, and the GEMM that depends on it.
        std::size_t count = 0;
        CHECK_CUDA(cudaGraphGetNodes(graph, nullptr, &count));
        std::vector<cudaGraphNode_t> nodes(count);
        CHECK_CUDA(cudaGraphGetNodes(graph, nodes.data(), &count));
        std::vector<cudaGraphNode_t> kernels;
        for (cudaGraphNode_t node : nodes) {
            cudaGraphNodeType type;
            CHECK_CUDA(cudaGraphNodeGetType(node, &type));
            if (type == cudaGraphNodeTypeKernel) kernels.push_back(node);
        }
        REQUIRE(kernels.size() == 2);
        std::size_t dependencies = 0;
        CHECK_CUDA(cudaGraphNodeGetDependencies(kernels[1], nullptr, nullptr, &dependencies));
        std::vector<cudaGraphNode_t> before(dependencies);
        CHECK_CUDA(cudaGraphNodeGetDependencies(kernels[1], before.data(), nullptr, &dependencies));
        const bool second_is_gemm = std::find(before.begin(), before.end(), kernels[0]) != before.end();
        const cudaGraphNode_t builder = second_is_gemm ? kernels[0] : kernels[1];
        const cudaGraphNode_t gemm = second_is_gemm ? kernels[1] : kernels[0];

        cudaGraphNode_t fix = nullptr;
        CHECK_CUDA(cudaGraphRemoveDependencies(graph, &builder, &gemm, nullptr, 1));
        CHECK_CUDA(cudaGraphAddMemcpyNode1D(&fix, graph, &builder, 1, const_cast<uint64_t*>(args.b_ptrs) + 1,
                                            good_pointer.get(), sizeof(uint64_t), cudaMemcpyDeviceToDevice));
        CHECK_CUDA(cudaGraphAddDependencies(graph, &fix, &gemm, nullptr, 1));
        cudaGraphExec_t exec = nullptr;
        CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
        CHECK_CUDA(cudaGraphLaunch(exec, stream.get()));
        CHECK_LAUNCH();
        stream.synchronize();
        CHECK_CUDA(cudaGraphExecDestroy(exec));
        CHECK_CUDA(cudaGraphDestroy(graph));

        std::vector<const uint16_t*> host_experts;
        const Problem problem = problem_without(host_case, 1, host_experts);
        const Result reference = reference_for(host_case, problem);
        const DeviceOutputs outputs = buffers.download();
        std::string summary;
        const std::string what = describe(host_case.config);
        verify_run(what, host_case, problem, reference, outputs, GGEMM_DEVICE_STATUS_WEIGHT_PTR_NULL,
                   GGEMM_DEVICE_STATUS_WEIGHT_PTR_NULL, &summary);
        MESSAGE(what << ": expert 1 skipped though its entry was valid when the GEMM ran; " << summary);
    }
}
