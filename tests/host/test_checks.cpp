// ggemm_check_offsets and ggemm_check_weight_pointers.
#include <doctest/doctest.h>

#include <climits>
#include <cuda_runtime_api.h>
#include <string>
#include <vector>

#include "src/checks.h"
#include "tests/host/test_fakes.h"

using namespace ggemm_fakes;

TEST_CASE("good offsets pass, empty experts and a zero total included") {
    const std::vector<int32_t> offsets = {256, 256, 1024, 1024, 4096};
    CHECK(ggemm_check_offsets(offsets.data(), 5, 4096) == GGEMM_SUCCESS);
    CHECK(ggemm_check_offsets(offsets.data(), 5, 8192) == GGEMM_SUCCESS);
    const std::vector<int32_t> zeros = {0, 0, 0};
    CHECK(ggemm_check_offsets(zeros.data(), 3, 0) == GGEMM_SUCCESS);
}

TEST_CASE("bad offsets name the first bad index and value") {
    struct Row {
        std::vector<int32_t> offsets;
        int64_t m;
        const char* message;
    };
    const std::vector<Row> rows = {
        {{256, 512, 768, 700}, 1024, "padded_offsets[3] = 700 is not a multiple of 256"},
        {{-256, 512}, 1024, "padded_offsets[0] = -256 is negative"},
        {{256, 768, 512, 1024}, 1024, "padded_offsets[2] = 512 is less than padded_offsets[1] = 768"},
        {{256, 1280}, 1024, "padded_offsets[1] = 1280 is past M = 1024"},
        {{0, 100, -3}, 1024, "padded_offsets[1] = 100 is not a multiple of 256"},
    };
    for (const Row& row : rows) {
        CAPTURE(row.message);
        CHECK(ggemm_check_offsets(row.offsets.data(), static_cast<int32_t>(row.offsets.size()), row.m) ==
              GGEMM_ERROR_BAD_OFFSETS);
        CHECK_MESSAGE(message_contains(row.message), std::string(ggemm::last_error()));
    }
}

TEST_CASE("check_offsets refuses bad arguments") {
    const int32_t offsets[2] = {256, 512};
    CHECK(ggemm_check_offsets(nullptr, 2, 512) == GGEMM_ERROR_NULL_ARGUMENT);
    CHECK(message_contains("host_offsets is NULL"));
    CHECK(ggemm_check_offsets(offsets, 0, 512) == GGEMM_ERROR_INVALID_SHAPE);
    CHECK(message_contains("num_experts must be in 1..1024, got 0"));
    CHECK(ggemm_check_offsets(offsets, 1025, 512) == GGEMM_ERROR_INVALID_SHAPE);
    CHECK(ggemm_check_offsets(offsets, 2, 500) == GGEMM_ERROR_INVALID_SHAPE);
    CHECK(message_contains("m must be a non-negative multiple of 256, got 500"));
    CHECK(ggemm_check_offsets(offsets, 2, -256) == GGEMM_ERROR_INVALID_SHAPE);
}

TEST_CASE("weight pointers: NULL and alignment need no device") {
    const std::vector<uint64_t> good = {0x7f0000000000, 0x7f0000100000, 0x7f0000200010};
    CHECK(ggemm_check_weight_pointers(good.data(), 3, -1) == GGEMM_SUCCESS);
    const std::vector<uint64_t> with_null = {0x7f0000000000, 0, 0x7f0000200000};
    CHECK(ggemm_check_weight_pointers(with_null.data(), 3, -1) == GGEMM_ERROR_BAD_WEIGHT_POINTERS);
    CHECK(message_contains("b_ptrs[1] is NULL"));
    const std::vector<uint64_t> misaligned = {0x7f0000000000, 0x7f0000100000, 0x7f0000200008};
    CHECK(ggemm_check_weight_pointers(misaligned.data(), 3, -1) == GGEMM_ERROR_BAD_WEIGHT_POINTERS);
    CHECK(message_contains("b_ptrs[2] = 0x7f0000200008 is not 16-byte aligned"));
    CHECK(ggemm_check_weight_pointers(nullptr, 3, -1) == GGEMM_ERROR_NULL_ARGUMENT);
    CHECK(ggemm_check_weight_pointers(good.data(), 0, -1) == GGEMM_ERROR_INVALID_SHAPE);
}

TEST_CASE("weight pointers: residency is asked of the oracle only for device >= 0") {
    FakeOracle oracle = standard_oracle();
    const std::vector<uint64_t> pointers = {kDevice0, kManaged + 256, kDevice0 + 4096};
    CHECK(ggemm::check_weight_pointers(pointers.data(), 3, 0, oracle) == GGEMM_SUCCESS);
    CHECK(oracle.queries == 3);
    CHECK(ggemm::check_weight_pointers(pointers.data(), 3, 1, oracle) == GGEMM_ERROR_BAD_WEIGHT_POINTERS);
    CHECK(message_contains("b_ptrs[0] = 0x7f0000000000 is device memory of device 0; it must be device memory of device 1"));

    const std::vector<uint64_t> host = {kDevice0, kDevice0 + 256, kPinned};
    CHECK(ggemm::check_weight_pointers(host.data(), 3, 0, oracle) == GGEMM_ERROR_BAD_WEIGHT_POINTERS);
    CHECK(message_contains("b_ptrs[2] = 0x7d0000000000 is pinned host memory"));
    const std::vector<uint64_t> pageable = {kPageable};
    CHECK(ggemm::check_weight_pointers(pageable.data(), 1, 0, oracle) == GGEMM_ERROR_BAD_WEIGHT_POINTERS);
    CHECK(message_contains("host memory unknown to CUDA"));

    const int before = oracle.queries;
    CHECK(ggemm::check_weight_pointers(host.data(), 3, -1, oracle) == GGEMM_SUCCESS);
    CHECK(oracle.queries == before);
}

TEST_CASE("weight pointers with a device: this machine's runtime decides") {
    int devices = 0;
    const bool no_device = cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0;
    cudaGetLastError();
    const std::vector<uint64_t> pointers = {0x7f0000000000};
    const ggemm_status_t status = ggemm_check_weight_pointers(pointers.data(), 1, 0);
    if (no_device) {
        CHECK(status == GGEMM_ERROR_NO_DEVICE);
        CHECK(message_contains("no CUDA device is available"));
        CHECK(message_contains("GGEMM_DEVICE_ANY"));
    } else {
        // An address nobody allocated is not device memory of device 0.
        CHECK(status == GGEMM_ERROR_BAD_WEIGHT_POINTERS);
        CHECK(message_contains("b_ptrs[0] = 0x7f0000000000 is "));
        CHECK(ggemm_check_weight_pointers(pointers.data(), 1, devices) == GGEMM_ERROR_INVALID_VALUE);
    }
}

TEST_CASE("weight pointers: only GGEMM_DEVICE_ANY skips residency, other negative devices are refused") {
    const std::vector<uint64_t> pointers = {0x7f0000000000, 0x7f0000001000};
    CHECK(ggemm_check_weight_pointers(pointers.data(), 2, GGEMM_DEVICE_ANY) == GGEMM_SUCCESS);
    CHECK(std::string(ggemm::last_error()).empty());
    for (const int32_t device : {-2, -7, INT32_MIN}) {
        CAPTURE(device);
        CHECK(ggemm_check_weight_pointers(pointers.data(), 2, device) == GGEMM_ERROR_INVALID_VALUE);
        CHECK(message_contains("is neither a CUDA device ordinal (>= 0) nor GGEMM_DEVICE_ANY (-1"));
    }
    // The device is judged before the entries: a bad entry with a bad device names the device.
    const std::vector<uint64_t> null_entry = {0};
    CHECK(ggemm_check_weight_pointers(null_entry.data(), 1, -3) == GGEMM_ERROR_INVALID_VALUE);
}
