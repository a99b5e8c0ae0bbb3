// The public header compiled as C++17 (-pedantic -Wall -Wextra -Werror) and linked against
// libggemm.so: linking fails unless the declarations carry C linkage, and the layouts must be
// the ones the C99 test pins.
#include "ggemm.h"

#include <cstddef>
#include <cstdio>
#include <cstring>
#include <type_traits>

static_assert(std::is_standard_layout<ggemm_plan_desc>::value, "descriptor is plain C data");
static_assert(std::is_trivially_copyable<ggemm_plan_desc>::value, "descriptor is plain C data");
static_assert(std::is_standard_layout<ggemm_args>::value, "arguments are plain C data");
static_assert(std::is_trivially_copyable<ggemm_args>::value, "arguments are plain C data");
static_assert(sizeof(ggemm_plan_desc) == 120, "descriptor size is part of the ABI");
static_assert(sizeof(ggemm_args) == 136, "argument struct size is part of the ABI");
static_assert(offsetof(ggemm_args, valid_rows) == 112, "valid_rows follows device_status");
static_assert(offsetof(ggemm_plan_desc, scheduler) + 4 == GGEMM_PLAN_DESC_MIN_SIZE,
              "the minimum descriptor ends after scheduler");
static_assert(offsetof(ggemm_args, device_status) == GGEMM_ARGS_MIN_SIZE,
              "the minimum argument struct ends before device_status");
static_assert(std::is_standard_layout<ggemm_wgrad_desc>::value && std::is_trivially_copyable<ggemm_wgrad_desc>::value,
              "wgrad descriptor is plain C data");
static_assert(std::is_standard_layout<ggemm_wgrad_args>::value && std::is_trivially_copyable<ggemm_wgrad_args>::value,
              "wgrad arguments are plain C data");
static_assert(sizeof(ggemm_wgrad_desc) == 64 && sizeof(ggemm_wgrad_args) == 88, "wgrad struct sizes are part of the ABI");
static_assert(std::is_same<decltype(&ggemm_wgrad_execute),
                           ggemm_status_t (*)(ggemm_plan_t, const ggemm_wgrad_args*, CUstream_st*)>::value,
              "wgrad execute takes the CUDA stream type");
static_assert(std::is_same<ggemm_status_t, int32_t>::value, "status codes are int32_t");
// cudaStream_t is `struct CUstream_st*`: a runtime stream passes without a cast.
static_assert(std::is_same<decltype(&ggemm_execute),
                           ggemm_status_t (*)(ggemm_plan_t, const ggemm_args*, CUstream_st*)>::value,
              "execute takes the CUDA stream type");

int main() {
    int failures = 0;
    if (ggemm_version() != GGEMM_VERSION) {
        std::printf("FAIL: ggemm_version() = %d, header says %d\n", ggemm_version(), GGEMM_VERSION);
        ++failures;
    }
    if (std::strcmp(ggemm_status_string(GGEMM_ERROR_MISALIGNED), "GGEMM_ERROR_MISALIGNED") != 0) {
        std::printf("FAIL: ggemm_status_string(5) = %s\n", ggemm_status_string(GGEMM_ERROR_MISALIGNED));
        ++failures;
    }
    if (ggemm_plan_destroy(nullptr) != GGEMM_SUCCESS) {
        std::printf("FAIL: ggemm_plan_destroy(NULL) is not a no-op\n");
        ++failures;
    }
    ggemm_wgrad_desc wgrad_desc;
    if (ggemm_wgrad_desc_init(&wgrad_desc, sizeof wgrad_desc) != GGEMM_SUCCESS || wgrad_desc.out_dtype != GGEMM_DTYPE_FP32) {
        std::printf("FAIL: ggemm_wgrad_desc_init did not write the defaults\n");
        ++failures;
    }
    std::printf("header as C++17: %s\n", failures == 0 ? "PASS" : "FAIL");
    return failures == 0 ? 0 : 1;
}
