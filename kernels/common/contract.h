// The contract's numbers that both the host and the kernels depend on, each defined here once:
// the expert limit, the row alignment of segments, the device status bits and the codes of the
// enumerations. include/ggemm.h publishes the same values to users; src/contract.cpp checks
// with static_asserts that the two agree, so a value changed here and not there (or the other
// way round) fails the build. Plain constants only: any C++17 compiler can include this.
#pragma once

#include <cstdint>

namespace ggemm {

// L, the number of experts, is 1..kMaxExperts (GGEMM_MAX_EXPERTS). The kernels keep a copy of
// padded_offsets in shared memory, sized by this limit.
constexpr int32_t kMaxExperts = 1024;

// M, m_capacity and every padded offset are multiples of kSegmentAlignment
// (GGEMM_ROW_ALIGNMENT), so a 128- or 256-row tile never straddles two experts.
constexpr int32_t kSegmentAlignment = 256;

// Bits of the device status word (GGEMM_DEVICE_STATUS_*).
constexpr uint32_t kStatusOffsetNegative = 0x1u;
constexpr uint32_t kStatusOffsetMisaligned = 0x2u;
constexpr uint32_t kStatusOffsetPastM = 0x4u;
constexpr uint32_t kStatusOffsetDecreasing = 0x8u;
constexpr uint32_t kStatusWeightPtrNull = 0x10u;
constexpr uint32_t kStatusWeightPtrMisaligned = 0x20u;
// The weight gradient's out_ptrs entries (GGEMM_DEVICE_STATUS_OUTPUT_PTR_*).
constexpr uint32_t kStatusOutputPtrNull = 0x40u;
constexpr uint32_t kStatusOutputPtrMisaligned = 0x80u;
// A valid_rows entry outside [0, segment size], clamped (GGEMM_DEVICE_STATUS_VALID_ROWS_CLAMPED).
constexpr uint32_t kStatusValidRowsClamped = 0x100u;

// The enumerations of the descriptor (GGEMM_DTYPE_*, GGEMM_WEIGHTS_*, GGEMM_SCHEDULER_*,
// GGEMM_WEIGHT_LAYOUT_*): the values pass from the public structs to the kernels unconverted.
enum DType : int32_t { kDTypeNone = 0, kBF16 = 1, kFP16 = 2, kFP32 = 3 };
// Bytes of one element of an output, bias or saved pre-activation dtype (fp32 or a 16-bit one).
constexpr int32_t dtype_bytes(int32_t dtype) { return dtype == kFP32 ? 4 : 2; }
enum WeightMode : int32_t { kDense = 0, kDiscrete = 1 };
enum Scheduler : int32_t { kStatic = 0, kDynamic = 1 };
// GGEMM_WEIGHT_LAYOUT_*: B_g as N x K (K contiguous) or K x N (N contiguous), row-major.
enum WeightLayout : int32_t { kKMajor = 0, kNMajor = 1 };
// The weight gradient's output_mode (GGEMM_WGRAD_OUTPUT_*).
enum WgradOutput : int32_t { kWgradOutputDense = 0, kWgradOutputPointers = 1 };
// The fused gated activation of the forward (GGEMM_ACTIVATION_*), and the width of its gate and
// up column blocks (GGEMM_GLU_BLOCK_COLUMNS): a 64-column block is [gate 32 | up 32].
enum Activation : int32_t { kActivationNone = 0, kActivationSwiglu = 1, kActivationClampedGeglu = 2 };
constexpr int32_t kGluBlockColumns = 32;

}  // namespace ggemm
