// The entry point of ggemm_gpu_tests. GPU tests are built for sm_90a only, so they need a
// compute capability 9.0 device. Without one, the binary prints one line saying how many test
// cases it skipped and why, and exits with 77, the code CTest is told means "skipped"
// (SKIP_RETURN_CODE): CI machines without a GPU count these tests as skipped, not passed.
//
// Listing and counting (--list-test-cases, --count, --help, ...) need no device: CTest's test
// discovery runs them at build time on machines that have none.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

namespace {

constexpr int kSkipExitCode = 77;

// Why the GPU tests cannot run on this machine, or "" when they can.
std::string missing_device_reason() {
    int device_count = 0;
    cudaError_t status = cudaGetDeviceCount(&device_count);
    if (status != cudaSuccess)
        return std::string(cudaGetErrorName(status)) + ": " + cudaGetErrorString(status);
    if (device_count == 0) return "cudaGetDeviceCount reports 0 devices";
    int major = 0, minor = 0;
    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0);
    cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0);
    if (major != 9 || minor != 0)
        return "device 0 has compute capability " + std::to_string(major) + "." +
               std::to_string(minor) + ", these tests are built for sm_90a (9.0)";
    return "";
}

// True for doctest options that only report on the test list and never run a test.
bool is_query_run(int argc, char** argv) {
    static const char* const kQueries[] = {
        "help", "h", "?", "version", "v", "count", "c", "list-test-cases", "ltc",
        "list-test-suites", "lts", "list-reporters", "lr"};
    for (int i = 1; i < argc; ++i) {
        const char* option = argv[i];
        while (*option == '-') ++option;
        if (std::strncmp(option, "dt-", 3) == 0) option += 3;
        for (const char* query : kQueries)
            if (std::strcmp(option, query) == 0) return true;
    }
    return false;
}

// The number of test cases this command line selects, as doctest's --count reports it.
long selected_test_cases(int argc, char** argv) {
    std::vector<const char*> args(argv, argv + argc);
    args.push_back("--count");
    args.push_back("--no-colors");
    doctest::Context counter(static_cast<int>(args.size()), args.data());
    std::ostringstream report;
    counter.setCout(&report);
    counter.run();
    const std::string text = report.str();
    const std::string label = "passing the current filters: ";
    const std::size_t at = text.find(label);
    return at == std::string::npos ? -1 : std::strtol(text.c_str() + at + label.size(), nullptr, 10);
}

}  // namespace

int main(int argc, char** argv) {
    if (!is_query_run(argc, argv)) {
        const std::string reason = missing_device_reason();
        if (!reason.empty()) {
            std::printf("ggemm_gpu_tests: SKIPPED %ld GPU test cases: no usable CUDA device (%s)\n",
                        selected_test_cases(argc, argv), reason.c_str());
            return kSkipExitCode;
        }
    }
    doctest::Context context(argc, argv);
    return context.run();
}
