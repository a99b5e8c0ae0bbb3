// ggemm_plan_create through the public API on this machine: without a GPU it must refuse
// with GGEMM_ERROR_NO_DEVICE and the runtime's reason; with one it must do what the device
// and the compiled variants allow.
#include <doctest/doctest.h>

#include <cuda_runtime_api.h>
#include <string>

#include "src/device.h"
#include "src/plan.h"
#include "tests/host/test_fakes.h"

using namespace ggemm_fakes;

TEST_CASE("device query agrees with the runtime") {
    int devices = 0;
    const cudaError_t counted = cudaGetDeviceCount(&devices);
    cudaGetLastError();
    ggemm::DeviceInfo device;
    REQUIRE(ggemm::query_device(0, &device) == GGEMM_SUCCESS);
    if (counted != cudaSuccess || devices == 0) {
        CHECK_FALSE(device.present);
        CHECK(std::string(device.absence_reason).size() > 0);
    } else {
        CHECK(device.present);
        CHECK(device.count == devices);
        CHECK(device.sm_count > 0);
        CHECK(device.max_smem_optin > 0);
        CHECK(device.cc_major > 0);
        CHECK(std::string(device.name).size() > 0);
        // An ordinal past the end is described as such, not as a failure.
        ggemm::DeviceInfo past;
        REQUIRE(ggemm::query_device(devices, &past) == GGEMM_SUCCESS);
        CHECK(past.present);
        CHECK(past.sm_count == 0);
    }
    // Asking must leave no error behind for the caller's next cudaGetLastError (without a
    // driver the runtime keeps answering its initialization error whatever we do).
    if (runtime_works()) CHECK(cudaGetLastError() == cudaSuccess);
}

TEST_CASE("no device: the reason says what is missing, and names both versions when the driver is old") {
    char text[192];
    ggemm::describe_absence(cudaErrorInsufficientDriver, 0, 0, 13000, text, sizeof text);
    CHECK(std::string(text) == "no NVIDIA driver was found (libcuda.so.1 could not be loaded)");
    ggemm::describe_absence(cudaErrorInsufficientDriver, 0, 12040, 13000, text, sizeof text);
    CHECK(std::string(text) ==
          "the NVIDIA driver supports CUDA up to 12.4, but this library's CUDA runtime is 13.0 and "
          "needs a driver that supports it");
    ggemm::describe_absence(cudaErrorNoDevice, 0, 13000, 13000, text, sizeof text);
    CHECK(std::string(text) == "no CUDA device was found (the NVIDIA driver is loaded but sees none)");
    ggemm::describe_absence(cudaSuccess, 0, 13000, 13000, text, sizeof text);
    CHECK(std::string(text) == "the NVIDIA driver reports no CUDA device");
    ggemm::describe_absence(cudaErrorOperatingSystem, 0, 13000, 13000, text, sizeof text);
    CHECK(std::string(text).rfind("the CUDA runtime cannot use any device: cudaErrorOperatingSystem (", 0) == 0);
    // Truncated to the buffer, always terminated.
    char small[8];
    ggemm::describe_absence(cudaErrorInsufficientDriver, 0, 0, 13000, small, sizeof small);
    CHECK(std::string(small) == "no NVID");
}

TEST_CASE("ggemm_plan_create with a valid descriptor on this machine") {
    int devices = 0;
    const cudaError_t counted = cudaGetDeviceCount(&devices);
    cudaGetLastError();
    ggemm_plan_desc desc = valid_desc();
    ggemm_plan_t plan = reinterpret_cast<ggemm_plan_t>(0x1);
    const ggemm_status_t status = ggemm_plan_create(&plan, &desc);
    const std::string message = ggemm::last_error();
    INFO(message);
    if (counted != cudaSuccess || devices == 0) {
        CHECK(status == GGEMM_ERROR_NO_DEVICE);
        CHECK(message.rfind("no CUDA device is available: ", 0) == 0);
        int driver = 0;
        if (cudaDriverGetVersion(&driver) != cudaSuccess) driver = 0;
        cudaGetLastError();
        // No driver at all must not read as "upgrade your driver".
        if (driver == 0) {
            CHECK(message.find("insufficient") == std::string::npos);
            CHECK(message.find("no NVIDIA driver was found") != std::string::npos);
        }
        CHECK(plan == nullptr);
        return;
    }
    ggemm::DeviceInfo device;
    REQUIRE(ggemm::query_device(0, &device) == GGEMM_SUCCESS);
    const int32_t arch = ggemm::arch_of(device);
    if (arch == 0) {
        CHECK(status == GGEMM_ERROR_UNSUPPORTED_ARCH);
        CHECK(message.find("compute capability") != std::string::npos);
        CHECK(plan == nullptr);
    } else if (ggemm::compiled_variants(arch).count == 0) {
        CHECK(status == GGEMM_ERROR_UNSUPPORTED_CONFIG);
        CHECK(message.find("no compiled kernel variant") != std::string::npos);
        CHECK(plan == nullptr);
    } else {
        REQUIRE(status == GGEMM_SUCCESS);
        REQUIRE(plan != nullptr);
        CHECK(message.empty());
        uint64_t bytes = 99;
        CHECK(ggemm_plan_workspace_size(plan, &bytes) == GGEMM_SUCCESS);
        CHECK(bytes == 0);
        CHECK(plan->grid > 0);
        CHECK(plan->grid <= device.sm_count);
        CHECK(plan->grid % plan->variant.cluster_m == 0);
        CHECK(plan->variant.arch == arch);
        CHECK(plan->description.find(plan->variant.name) != std::string::npos);
        CHECK(ggemm_plan_destroy(plan) == GGEMM_SUCCESS);
    }
}

TEST_CASE("ggemm_plan_create refuses a bad descriptor the same way with or without a GPU") {
    ggemm_plan_desc desc = valid_desc();
    desc.k = 1001;
    ggemm_plan_t plan = nullptr;
    CHECK(ggemm_plan_create(&plan, &desc) == GGEMM_ERROR_INVALID_SHAPE);
    CHECK(message_contains("desc->k must be a multiple of 8 (16-byte rows of bf16), got 1001"));
    CHECK(plan == nullptr);
    desc = valid_desc();
    desc.d_dtype = 9;
    CHECK(ggemm_plan_create(&plan, &desc) == GGEMM_ERROR_INVALID_DTYPE);
    desc = valid_desc();
    desc.scheduler = 5;
    CHECK(ggemm_plan_create(&plan, &desc) == GGEMM_ERROR_INVALID_VALUE);
    desc = valid_desc();
    desc.device = 4096;  // no machine has this many: refused as no device or as a bad ordinal
    const ggemm_status_t status = ggemm_plan_create(&plan, &desc);
    CHECK((status == GGEMM_ERROR_NO_DEVICE || status == GGEMM_ERROR_INVALID_VALUE));
    CHECK(plan == nullptr);
}
