// The public header and the kernels' contract constants must agree: the values in
// include/ggemm.h are what users pass, the ones in kernels/common/contract.h are what the host
// checks against and the kernels compute with. Nothing here runs; a mismatch fails the build
// (tests/contract/check_contract_asserts.sh shows each assertion firing).
#include "ggemm.h"
#include "kernels/common/contract.h"

namespace ggemm {

static_assert(GGEMM_MAX_EXPERTS == kMaxExperts, "GGEMM_MAX_EXPERTS must equal ggemm::kMaxExperts");
static_assert(GGEMM_ROW_ALIGNMENT == kSegmentAlignment, "GGEMM_ROW_ALIGNMENT must equal ggemm::kSegmentAlignment");

static_assert(GGEMM_DEVICE_STATUS_OFFSET_NEGATIVE == kStatusOffsetNegative,
              "GGEMM_DEVICE_STATUS_OFFSET_NEGATIVE must equal ggemm::kStatusOffsetNegative");
static_assert(GGEMM_DEVICE_STATUS_OFFSET_MISALIGNED == kStatusOffsetMisaligned,
              "GGEMM_DEVICE_STATUS_OFFSET_MISALIGNED must equal ggemm::kStatusOffsetMisaligned");
static_assert(GGEMM_DEVICE_STATUS_OFFSET_PAST_M == kStatusOffsetPastM,
              "GGEMM_DEVICE_STATUS_OFFSET_PAST_M must equal ggemm::kStatusOffsetPastM");
static_assert(GGEMM_DEVICE_STATUS_OFFSET_DECREASING == kStatusOffsetDecreasing,
              "GGEMM_DEVICE_STATUS_OFFSET_DECREASING must equal ggemm::kStatusOffsetDecreasing");
static_assert(GGEMM_DEVICE_STATUS_WEIGHT_PTR_NULL == kStatusWeightPtrNull,
              "GGEMM_DEVICE_STATUS_WEIGHT_PTR_NULL must equal ggemm::kStatusWeightPtrNull");
static_assert(GGEMM_DEVICE_STATUS_WEIGHT_PTR_MISALIGNED == kStatusWeightPtrMisaligned,
              "GGEMM_DEVICE_STATUS_WEIGHT_PTR_MISALIGNED must equal ggemm::kStatusWeightPtrMisaligned");
static_assert(GGEMM_DEVICE_STATUS_OUTPUT_PTR_NULL == kStatusOutputPtrNull,
              "GGEMM_DEVICE_STATUS_OUTPUT_PTR_NULL must equal ggemm::kStatusOutputPtrNull");
static_assert(GGEMM_DEVICE_STATUS_OUTPUT_PTR_MISALIGNED == kStatusOutputPtrMisaligned,
              "GGEMM_DEVICE_STATUS_OUTPUT_PTR_MISALIGNED must equal ggemm::kStatusOutputPtrMisaligned");
static_assert(GGEMM_DEVICE_STATUS_VALID_ROWS_CLAMPED == kStatusValidRowsClamped,
              "GGEMM_DEVICE_STATUS_VALID_ROWS_CLAMPED must equal ggemm::kStatusValidRowsClamped");

static_assert(GGEMM_DTYPE_NONE == kDTypeNone, "GGEMM_DTYPE_NONE must equal ggemm::kDTypeNone");
static_assert(GGEMM_DTYPE_BF16 == kBF16, "GGEMM_DTYPE_BF16 must equal ggemm::kBF16");
static_assert(GGEMM_DTYPE_FP16 == kFP16, "GGEMM_DTYPE_FP16 must equal ggemm::kFP16");
static_assert(GGEMM_DTYPE_FP32 == kFP32, "GGEMM_DTYPE_FP32 must equal ggemm::kFP32");

static_assert(GGEMM_WEIGHTS_DENSE == kDense, "GGEMM_WEIGHTS_DENSE must equal ggemm::kDense");
static_assert(GGEMM_WEIGHTS_DISCRETE == kDiscrete, "GGEMM_WEIGHTS_DISCRETE must equal ggemm::kDiscrete");

static_assert(GGEMM_SCHEDULER_STATIC == kStatic, "GGEMM_SCHEDULER_STATIC must equal ggemm::kStatic");
static_assert(GGEMM_SCHEDULER_DYNAMIC == kDynamic, "GGEMM_SCHEDULER_DYNAMIC must equal ggemm::kDynamic");

static_assert(GGEMM_WEIGHT_LAYOUT_K_MAJOR == kKMajor, "GGEMM_WEIGHT_LAYOUT_K_MAJOR must equal ggemm::kKMajor");
static_assert(GGEMM_WEIGHT_LAYOUT_N_MAJOR == kNMajor, "GGEMM_WEIGHT_LAYOUT_N_MAJOR must equal ggemm::kNMajor");
static_assert(GGEMM_WGRAD_OUTPUT_DENSE == kWgradOutputDense,
              "GGEMM_WGRAD_OUTPUT_DENSE must equal ggemm::kWgradOutputDense");
static_assert(GGEMM_WGRAD_OUTPUT_POINTERS == kWgradOutputPointers,
              "GGEMM_WGRAD_OUTPUT_POINTERS must equal ggemm::kWgradOutputPointers");

static_assert(GGEMM_ACTIVATION_NONE == kActivationNone, "GGEMM_ACTIVATION_NONE must equal ggemm::kActivationNone");
static_assert(GGEMM_ACTIVATION_SWIGLU == kActivationSwiglu,
              "GGEMM_ACTIVATION_SWIGLU must equal ggemm::kActivationSwiglu");
static_assert(GGEMM_ACTIVATION_CLAMPED_GEGLU == kActivationClampedGeglu,
              "GGEMM_ACTIVATION_CLAMPED_GEGLU must equal ggemm::kActivationClampedGeglu");
static_assert(GGEMM_GLU_BLOCK_COLUMNS == kGluBlockColumns,
              "GGEMM_GLU_BLOCK_COLUMNS must equal ggemm::kGluBlockColumns");

}  // namespace ggemm
