// The bit encodings of the SM100 kernel that are silent when wrong: a bad descriptor does not
// fault, it multiplies the wrong bytes. Pure constexpr functions, usable on the host, so that
// tests/host/test_sm100_encodings.cpp can check every bit against the PTX ISA tables without a GPU.
//
// References (PTX ISA 9.x, chapter 9.7.16 "TensorCore 5th Generation Family Instructions"):
//   9.7.16.2.1  Matrix shape (Table 39: valid M x N x K per kind and cta_group)
//   9.7.16.2.3  Data movement shape (tcgen05.ld/.st shapes, .num)
//   9.7.16.3    Major-ness supported by strides (leading / stride dimension byte offsets)
//   9.7.16.4.1  Shared memory descriptor (Table 40, Table 41)
//   9.7.16.4.2  Instruction descriptor (Table 42, .kind::f16 column)
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define GGEMM_SM100_HD __host__ __device__
#else
#define GGEMM_SM100_HD
#endif

namespace ggemm::sm100 {

// ------------------------------------------------------------------------------------------------
// Shared memory descriptor (64 bits), PTX ISA 9.7.16.4.1 Table 40:
//   [0,14)  start address >> 4          [16,30) leading dimension byte offset >> 4
//   [32,46) stride dimension byte offset >> 4
//   [46,49) fixed 0b001 (the SM100 descriptor version; SM90 wgmma descriptors have 0 here)
//   [49,52) matrix base offset          [52]    leading dimension stride mode (0 = relative)
//   [53,61) fixed 0                     [61,64) swizzling mode
// ------------------------------------------------------------------------------------------------

// Table 40, bits 61-63. 3, 5 and 7 are invalid.
enum class Swizzle : uint32_t {
    kNone = 0,
    k128BAtom32B = 1,  // 128-byte swizzle with 32-byte atomicity
    k128B = 2,
    k64B = 4,
    k32B = 6,
};

// matrix-descriptor-encode(x) = (x & 0x3FFFF) >> 4 (Table 40 footnote): 16-byte units of an
// 18-bit shared-window address.
GGEMM_SM100_HD constexpr uint64_t descriptor_encode(uint32_t bytes) {
    return static_cast<uint64_t>((bytes & 0x3FFFFu) >> 4);
}

constexpr uint64_t kDescriptorVersionSm100 = 1;  // Table 40, bits 46-48: fixed 0b001

GGEMM_SM100_HD constexpr uint64_t make_smem_descriptor(uint32_t start_address,
                                                       uint32_t leading_byte_offset,
                                                       uint32_t stride_byte_offset,
                                                       uint32_t base_offset, Swizzle swizzle) {
    return descriptor_encode(start_address) | (descriptor_encode(leading_byte_offset) << 16) |
           (descriptor_encode(stride_byte_offset) << 32) | (kDescriptorVersionSm100 << 46) |
           (static_cast<uint64_t>(base_offset & 0x7u) << 49) |
           (static_cast<uint64_t>(static_cast<uint32_t>(swizzle) & 0x7u) << 61);
}

// The operand tiles of this kernel: bf16, A always K-major and B K-major for K-major weights
// (rows contiguous along K, BLOCK_K = 64 elements = 128 bytes per row), written by TMA with
// CU_TENSOR_MAP_SWIZZLE_128B. N-major weights: below.
// One swizzle atom is 8 rows x 128 bytes = 1024 bytes (9.7.16.4.1 Table 41: the 128-byte pattern
// repeats every 1024 bytes), atoms stacked along M/N.
constexpr uint32_t kBlockK = 64;                      // bf16 elements per row per stage
constexpr uint32_t kSwizzleRowBytes = 128;            // kBlockK * sizeof(bf16)
constexpr uint32_t kSwizzleAtomRows = 8;
constexpr uint32_t kSwizzleAtomBytes = kSwizzleAtomRows * kSwizzleRowBytes;  // 1024
constexpr uint32_t kMmaK = 16;                        // K per tcgen05.mma for kind::f16 (Table 39)
constexpr uint32_t kMmaKBytes = kMmaK * 2;            // 32 bytes of a 128-byte row

// K-major, 128-byte swizzle (9.7.16.3):
//  - leading dimension byte offset: "Swizzled layouts: not used, assumed to be 1" for K-major,
//    so the field holds 1 (16 bytes);
//  - stride dimension byte offset: from one 8-row group to the next = 1024 bytes;
//  - base offset 0: every stage buffer starts on a 1024-byte boundary (Table 41), which the
//    kernel's SharedStorage alignment guarantees.
constexpr uint32_t kKMajorSw128Lbo = 16;
constexpr uint32_t kKMajorSw128Sbo = kSwizzleAtomBytes;

GGEMM_SM100_HD constexpr uint64_t kmajor_sw128_descriptor(uint32_t tile_smem_address) {
    return make_smem_descriptor(tile_smem_address, kKMajorSw128Lbo, kKMajorSw128Sbo, 0,
                                Swizzle::k128B);
}

// The descriptor of MMA step `k_step` (K elements [16 k, 16 k + 16)) inside one 64-wide stage:
// the start address moves 32 bytes along the row. The swizzle XOR is applied by the hardware on
// address bits [4,7) ^ [7,10) of the final address, so a start inside the atom is exactly the
// layout TMA wrote (the same rule CUTLASS and DeepGEMM rely on); the base offset stays 0
// because the atom itself is still 1024-byte aligned.
GGEMM_SM100_HD constexpr uint64_t advance_k_step(uint64_t descriptor, uint32_t k_step) {
    return descriptor + descriptor_encode(k_step * kMmaKBytes);
}

// N-major B (B_g stored K x N, N contiguous), read MN-major: transpose-B set in the instruction
// descriptor (Table 42, bit 16). TMA writes a stage's B tile as boxes of 64 N-columns (128 bytes,
// the swizzle span) x 64 K-rows, with the 128-byte swizzle, one box after another along N: box b
// at b * 8 KB, K-row r of a box at 128 r, column c of the box at 2 c before the swizzle.
//
// In units of 16 bytes (8 bf16), the MN-major 128-byte-swizzle canonical layout is
// ((8, m), (8, k)) : ((1, LBO), (8, SBO)): 8 consecutive 16-byte chunks along N (one 128-byte
// row), then the next 64 N-columns LBO bytes further; 8 K-rows 128 bytes apart, then the next
// 8 K-rows SBO bytes further. 9.7.16.3 says the same in words, for the 128-bit-normalized matrix
// whose rows run along MN and columns along K:
//  - leading dimension byte offset (9.7.16.3.1.1, MN-major, swizzled layouts): "stride from the
//    first (swizzle-byte-size/16) rows to the next (swizzle-byte-size/16) rows" = from one
//    128/16 = 8 x 16 bytes = 64-column block of N to the next = the next TMA box, 8 KB;
//  - stride dimension byte offset (9.7.16.3.2, MN-major, swizzled layout): "offset from the first
//    8 columns to the next 8 columns" = from one group of 8 K-rows to the next = 8 x 128 bytes;
//  - base offset 0: every box starts 1024-byte aligned (the stage is, and boxes are 8 KB).
constexpr uint32_t kMnMajorBoxColumns = kSwizzleRowBytes / 2;                      // 64 bf16 of N
constexpr uint32_t kMnMajorBoxBytes = kMnMajorBoxColumns * kBlockK * 2;           // 8192
constexpr uint32_t kMnMajorSw128Lbo = kMnMajorBoxBytes;
constexpr uint32_t kMnMajorSw128Sbo = kSwizzleAtomBytes;                           // 1024
// One K step (16 K-rows) of an MN-major tile: two 8-row groups, a whole number of swizzle atoms.
constexpr uint32_t kMnMajorKStepBytes = kMmaK * kSwizzleRowBytes;                  // 2048

GGEMM_SM100_HD constexpr uint64_t mnmajor_sw128_descriptor(uint32_t tile_smem_address) {
    return make_smem_descriptor(tile_smem_address, kMnMajorSw128Lbo, kMnMajorSw128Sbo, 0,
                                Swizzle::k128B);
}

// The descriptor of MMA step `k_step` (K-rows [16 k, 16 k + 16)) of an MN-major stage: the start
// moves 16 rows = 2048 bytes, so it stays 1024-byte aligned and the base offset stays 0.
GGEMM_SM100_HD constexpr uint64_t advance_mn_k_step(uint64_t descriptor, uint32_t k_step) {
    return descriptor + descriptor_encode(k_step * kMnMajorKStepBytes);
}

// Where TMA puts element (column n, K-row k) of an MN-major stage tile, before the swizzle (which
// only permutes 16-byte chunks within each 128-byte row).
GGEMM_SM100_HD constexpr uint32_t mnmajor_tile_offset(uint32_t n, uint32_t k) {
    return (n / kMnMajorBoxColumns) * kMnMajorBoxBytes + k * kSwizzleRowBytes + (n % kMnMajorBoxColumns) * 2;
}

// Field readers, for tests and for debug printing.
GGEMM_SM100_HD constexpr uint32_t desc_start_address(uint64_t d) { return static_cast<uint32_t>(d & 0x3FFFu) << 4; }
GGEMM_SM100_HD constexpr uint32_t desc_leading_byte_offset(uint64_t d) { return static_cast<uint32_t>((d >> 16) & 0x3FFFu) << 4; }
GGEMM_SM100_HD constexpr uint32_t desc_stride_byte_offset(uint64_t d) { return static_cast<uint32_t>((d >> 32) & 0x3FFFu) << 4; }
GGEMM_SM100_HD constexpr uint32_t desc_version(uint64_t d) { return static_cast<uint32_t>((d >> 46) & 0x7u); }
GGEMM_SM100_HD constexpr uint32_t desc_base_offset(uint64_t d) { return static_cast<uint32_t>((d >> 49) & 0x7u); }
GGEMM_SM100_HD constexpr uint32_t desc_lbo_mode(uint64_t d) { return static_cast<uint32_t>((d >> 52) & 0x1u); }
GGEMM_SM100_HD constexpr uint32_t desc_swizzle(uint64_t d) { return static_cast<uint32_t>((d >> 61) & 0x7u); }

// ------------------------------------------------------------------------------------------------
// Instruction descriptor (32 bits), PTX ISA 9.7.16.4.2 Table 42, .kind::f16 column:
//   [0,2) sparsity selector = 0   [2] sparse = 0      [3] saturate = 0
//   [4,6) dtype: F16 = 0, F32 = 1                      [6] reserved
//   [7,10) atype: F16 = 0, BF16 = 1                    [10,13) btype: F16 = 0, BF16 = 1
//   [13] negate A   [14] negate B   [15] transpose A (0 = K-major)   [16] transpose B (0 = K-major,
//   1 = MN-major)
//   [17,23) N >> 3    [23] reserved    [24,29) M >> 4    [29] reserved    [30,32) max shift (.ws) = 0
// ------------------------------------------------------------------------------------------------
constexpr uint32_t kIdescDtypeF32 = 1;
constexpr uint32_t kIdescTypeBF16 = 1;

// Valid tcgen05.mma kind::f16 dense shapes with f32 D (9.7.16.2.1 Table 39):
//   cta_group::1: M in {64, 128}, N in 8..256 step 8;  cta_group::2: M in {128, 256}, N in 16..256 step 16.
GGEMM_SM100_HD constexpr bool is_valid_mma_shape(uint32_t m, uint32_t n, uint32_t cta_group) {
    if (cta_group == 1) return (m == 64 || m == 128) && n >= 8 && n <= 256 && n % 8 == 0;
    if (cta_group == 2) return (m == 128 || m == 256) && n >= 16 && n <= 256 && n % 16 == 0;
    return false;
}

// BF16 x BF16 -> F32, dense, no negation; each operand K-major unless its flag says MN-major
// (transpose A, bit 15; transpose B, bit 16: an N-major B). Returns 0 (never a valid descriptor:
// M >> 4 would be 0) for a shape Table 39 does not allow.
GGEMM_SM100_HD constexpr uint32_t make_instr_desc_bf16_f32(uint32_t m, uint32_t n, uint32_t cta_group,
                                                           bool a_mn_major = false,
                                                           bool b_mn_major = false) {
    if (!is_valid_mma_shape(m, n, cta_group)) return 0;
    return (kIdescDtypeF32 << 4) | (kIdescTypeBF16 << 7) | (kIdescTypeBF16 << 10) |
           (static_cast<uint32_t>(a_mn_major) << 15) | (static_cast<uint32_t>(b_mn_major) << 16) |
           ((n >> 3) << 17) | ((m >> 4) << 24);
}

GGEMM_SM100_HD constexpr uint32_t idesc_n(uint32_t idesc) { return ((idesc >> 17) & 0x3Fu) << 3; }
GGEMM_SM100_HD constexpr uint32_t idesc_m(uint32_t idesc) { return ((idesc >> 24) & 0x1Fu) << 4; }

// ------------------------------------------------------------------------------------------------
// Tensor memory: 128 lanes x 512 columns of 32-bit cells per CTA. tcgen05.alloc takes a column
// count that is a power of two in [32, 512]. Address = (lane << 16) | column.
// ------------------------------------------------------------------------------------------------
constexpr uint32_t kTmemLanes = 128;
constexpr uint32_t kTmemColumns = 512;
constexpr uint32_t kTmemMinAllocColumns = 32;

// The allocation that holds `needed_columns`: the next power of two, at least 32. 0 when it cannot
// fit (more than 512 columns).
GGEMM_SM100_HD constexpr uint32_t tmem_alloc_columns(uint32_t needed_columns) {
    if (needed_columns > kTmemColumns) return 0;
    uint32_t columns = kTmemMinAllocColumns;
    while (columns < needed_columns) columns <<= 1;
    return columns;
}

// Accumulators: an M = 128 (cta_group::1) f32 tile of tile_n columns occupies lanes 0..127 (row i in
// lane i, "Layout D" of the tcgen05 data-path layouts) and tile_n consecutive columns (column j of
// the tile in column j: one f32 per 32-bit cell). Two buffers side by side let the epilogue drain
// tile t while the MMA warp fills tile t + 1.
constexpr uint32_t kAccumulatorBuffers = 2;

GGEMM_SM100_HD constexpr uint32_t accumulator_columns(uint32_t tile_n) {
    return kAccumulatorBuffers * tile_n;
}
GGEMM_SM100_HD constexpr uint32_t accumulator_column(uint32_t buffer, uint32_t tile_n) {
    return buffer * tile_n;
}
GGEMM_SM100_HD constexpr uint32_t tmem_address(uint32_t base, uint32_t lane, uint32_t column) {
    return base + (lane << 16) + column;
}
// tcgen05.ld/.st from warp w may only reach lanes [32 (w % 4), 32 (w % 4) + 32).
GGEMM_SM100_HD constexpr uint32_t warp_lane_quarter_base(uint32_t warp_index) {
    return 32u * (warp_index % 4u);
}

// ------------------------------------------------------------------------------------------------
// CTA pairs (cta_group::2, 9.7.16.2.1 / 9.7.16.5): one MMA of M = 256 over a cluster of two CTAs.
// Each CTA holds 128 rows of A (its own half of M) and half of the N rows of B: rank r holds B rows
// [r N / 2, (r + 1) N / 2) of the tile, at the same shared-memory offset in both CTAs. D row i of
// the 256 lives in TMEM lane i % 128 of CTA i / 128, all N columns. With cta_group::1 a CTA holds
// all of A's 128 rows and all N rows of B.
// ------------------------------------------------------------------------------------------------
constexpr uint32_t kRowsPerCta = 128;  // A rows per CTA = TMEM lanes = accumulator rows per CTA

GGEMM_SM100_HD constexpr uint32_t mma_m_for(uint32_t cta_group) { return kRowsPerCta * cta_group; }

// Rows of B (columns of the tile) that each CTA loads: the TMA box height of B.
GGEMM_SM100_HD constexpr uint32_t b_rows_per_cta(uint32_t tile_n, uint32_t cta_group) {
    return tile_n / cta_group;
}

// First tile column whose B row CTA `rank` of the pair loads.
GGEMM_SM100_HD constexpr uint32_t b_row_offset(uint32_t rank, uint32_t tile_n, uint32_t cta_group) {
    return rank * b_rows_per_cta(tile_n, cta_group);
}

// N-major B: the 64-column boxes each CTA loads per stage, its part of the tile's columns. 0 when
// the part is not whole boxes (a pair of tile_n = 192 holds 96 columns per CTA): such a
// configuration has no N-major form, since a box narrower than the 128-byte swizzle row would
// not match the MN-major canonical layout's 64-column blocks.
GGEMM_SM100_HD constexpr uint32_t mnmajor_boxes_per_cta(uint32_t tile_n, uint32_t cta_group) {
    const uint32_t columns = b_rows_per_cta(tile_n, cta_group);
    return columns % kMnMajorBoxColumns == 0 ? columns / kMnMajorBoxColumns : 0;
}

// Bytes the stage's full barrier must see complete: a pair's MMA waits on the leader's barrier,
// which both CTAs' TMA loads (.cta_group::2) complete, so it expects both CTAs' A and B boxes.
GGEMM_SM100_HD constexpr uint32_t stage_tx_bytes(uint32_t tile_n, uint32_t cta_group) {
    return (kRowsPerCta + b_rows_per_cta(tile_n, cta_group)) * kBlockK * 2u * cta_group;
}

// tcgen05.commit .multicast::cluster mask that reaches both CTAs of the pair (ranks 0 and 1).
constexpr uint16_t kPairCtaMask = 0b11;

// ------------------------------------------------------------------------------------------------
// tcgen05.ld shape (9.7.16.2.3): which shape reads an accumulator row per thread.
// ------------------------------------------------------------------------------------------------
enum class TmemLoadShape : uint32_t { kUnsupported = 0, k32x32b = 1 };

// M = 128 with cta_group::1 (and M = 256 with cta_group::2, 128 rows per CTA) keeps row i in lane i,
// so each thread of a warp reads its own row with .32x32b: register r = column (taddr.col + r).
// M = 64 layouts put rows in half of each lane quarter; this kernel does not use them.
GGEMM_SM100_HD constexpr TmemLoadShape accumulator_load_shape(uint32_t mma_m, uint32_t cta_group) {
    if ((cta_group == 1 && mma_m == 128) || (cta_group == 2 && mma_m == 256))
        return TmemLoadShape::k32x32b;
    return TmemLoadShape::kUnsupported;
}

// .num of a .32x32b load of `columns` consecutive columns: x1..x128, one 32-bit register per
// column. 0 for a count the instruction has no form for.
GGEMM_SM100_HD constexpr uint32_t load_32x32b_num(uint32_t columns) {
    return (columns >= 1 && columns <= 128 && (columns & (columns - 1)) == 0) ? columns : 0;
}

}  // namespace ggemm::sm100
