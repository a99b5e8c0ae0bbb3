// The SM100 encodings that fail silently when wrong, checked bit by bit on the host.
//
// Every expected value below is worked out by hand from the PTX ISA tables named in each test
// case (PTX ISA 9.x, chapter 9.7.16), NOT computed with the function under test. CUTLASS's
// cute/arch/mma_sm100_desc.hpp (UMMA::SmemDescriptor, UMMA::InstrDescriptor bit-fields) was used
// as a second reading of the same tables: it agrees on every field position used here.
//
// No SM100 GPU was available: these tests and the SASS check are what stands between the kernel
// and a wrong tensor-core operand (docs/SM100.md).
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <set>
#include <string>

#include "kernels/common/contract.h"
#include "kernels/sm100/encodings.h"
#include "src/variants.h"

using namespace ggemm::sm100;

TEST_CASE("sm100 smem descriptor: K-major 128B-swizzle bf16 tile (PTX ISA 9.7.16.4.1 Table 40)") {
    // Tile at shared address 0x400 (1024: 1024-byte aligned, base offset 0 per Table 41).
    //   bits  0-13 start  = 0x400 >> 4            = 0x40
    //   bits 16-29 LBO    = 16 >> 4 = 1           -> 0x0000'0000'0001'0000  (9.7.16.3.1.1: K-major
    //                                                 swizzled layouts: "not used, assumed to be 1")
    //   bits 32-45 SBO    = 1024 >> 4 = 0x40      -> 0x0000'0040'0000'0000  (8 rows x 128 bytes)
    //   bits 46-48 fixed 0b001                    -> 0x0000'4000'0000'0000
    //   bits 49-51 base offset 0, bit 52 LBO mode 0 (relative), bits 53-60 fixed 0
    //   bits 61-63 swizzle 2 (128-byte)           -> 0x4000'0000'0000'0000
    const uint64_t expected = 0x4000'4040'0001'0040ull;
    CHECK(kmajor_sw128_descriptor(0x400) == expected);
    CHECK(make_smem_descriptor(0x400, 16, 1024, 0, Swizzle::k128B) == expected);

    // A tile high in the 227 KB window: 0x1C400 >> 4 = 0x1C40.
    CHECK(kmajor_sw128_descriptor(0x1C400) == 0x4000'4040'0001'1C40ull);

    // Field readers agree with the table positions.
    const uint64_t d = kmajor_sw128_descriptor(0x1C400);
    CHECK(desc_start_address(d) == 0x1C400u);
    CHECK(desc_leading_byte_offset(d) == 16u);
    CHECK(desc_stride_byte_offset(d) == 1024u);
    CHECK(desc_version(d) == 1u);
    CHECK(desc_base_offset(d) == 0u);
    CHECK(desc_lbo_mode(d) == 0u);
    CHECK(desc_swizzle(d) == 2u);
}

TEST_CASE("sm100 smem descriptor: every field lands in its own bits (Table 40)") {
    // Each field alone, so a shifted or overlapping field shows up as a wrong bit.
    CHECK(make_smem_descriptor(0, 0, 0, 0, Swizzle::kNone) == (1ull << 46));  // only the version
    CHECK(make_smem_descriptor(0x3FFF0, 0, 0, 0, Swizzle::kNone) == ((1ull << 46) | 0x3FFFull));
    CHECK(make_smem_descriptor(0, 0x3FFF0, 0, 0, Swizzle::kNone) == ((1ull << 46) | (0x3FFFull << 16)));
    CHECK(make_smem_descriptor(0, 0, 0x3FFF0, 0, Swizzle::kNone) == ((1ull << 46) | (0x3FFFull << 32)));
    CHECK(make_smem_descriptor(0, 0, 0, 7, Swizzle::kNone) == ((1ull << 46) | (7ull << 49)));
    CHECK(make_smem_descriptor(0, 0, 0, 5, Swizzle::kNone) == 0x000A'4000'0000'0000ull);
    // Swizzle codes (bits 61-63): none 0, 128B/32B-atom 1, 128B 2, 64B 4, 32B 6.
    CHECK(make_smem_descriptor(0, 0, 0, 0, Swizzle::k128BAtom32B) == 0x2000'4000'0000'0000ull);
    CHECK(make_smem_descriptor(0, 0, 0, 0, Swizzle::k128B) == 0x4000'4000'0000'0000ull);
    CHECK(make_smem_descriptor(0, 0, 0, 0, Swizzle::k64B) == 0x8000'4000'0000'0000ull);
    CHECK(make_smem_descriptor(0, 0, 0, 0, Swizzle::k32B) == 0xC000'4000'0000'0000ull);
    // matrix-descriptor-encode(x) = (x & 0x3FFFF) >> 4: bits above the 18-bit window are dropped
    // and the low 4 bits ignored, never carried into the next field.
    CHECK(descriptor_encode(0x40010) == 0x1u);
    CHECK(descriptor_encode(0x3FFFF) == 0x3FFFu);
    CHECK(descriptor_encode(0x0000F) == 0x0u);
    CHECK(make_smem_descriptor(0x40010, 0, 0, 0, Swizzle::kNone) == ((1ull << 46) | 0x1ull));
}

TEST_CASE("sm100 smem descriptor: K steps inside a 64-wide stage advance the start by 32 bytes") {
    // kind::f16 MMAs take K = 16 (Table 39): 16 bf16 = 32 bytes = 2 units of the start field.
    const uint64_t base = kmajor_sw128_descriptor(0x400);
    CHECK(advance_k_step(base, 0) == 0x4000'4040'0001'0040ull);
    CHECK(advance_k_step(base, 1) == 0x4000'4040'0001'0042ull);
    CHECK(advance_k_step(base, 2) == 0x4000'4040'0001'0044ull);
    CHECK(advance_k_step(base, 3) == 0x4000'4040'0001'0046ull);
    // Only the start field moves: LBO, SBO, version, base offset and swizzle stay.
    for (uint32_t k = 0; k < 4; ++k) {
        const uint64_t d = advance_k_step(kmajor_sw128_descriptor(0x37C00), k);
        CHECK(desc_start_address(d) == 0x37C00u + 32u * k);
        CHECK((d & ~0x3FFFull) == (kmajor_sw128_descriptor(0x37C00) & ~0x3FFFull));
    }
}

// A model of the 128-byte swizzle as PTX ISA 9.7.16.4.1 / the TMA swizzle modes describe it: the
// 16-byte chunk index (address bits 4-6) is XORed with the row within the 1024-byte pattern
// (bits 7-9). TMA writes row r, chunk j of a box to tile + 128 r + 16 (j ^ (r % 8)); the MMA reads
// row r, chunk j' of K step k from start + SBO (r / 8) + 128 (r % 8) + 16 j', swizzled. The kernel
// is right only if both land on the same byte for every row, step and chunk.
TEST_CASE("sm100 smem descriptor: MMA addressing matches the TMA 128B-swizzle layout (model)") {
    auto swizzle = [](uint32_t address) { return address ^ (((address >> 7) & 7u) << 4); };
    const uint32_t tile = 0x8400;  // 1024-byte aligned
    for (uint32_t row = 0; row < 256; ++row) {
        for (uint32_t k = 0; k < kBlockK / kMmaK; ++k) {
            const uint64_t d = advance_k_step(kmajor_sw128_descriptor(tile), k);
            for (uint32_t chunk = 0; chunk < kMmaKBytes / 16; ++chunk) {
                const uint32_t j = 2 * k + chunk;  // 16-byte chunk of the 128-byte row
                const uint32_t tma = tile + 128 * row + 16 * (j ^ (row % 8));
                const uint32_t mma = swizzle(desc_start_address(d) + desc_stride_byte_offset(d) * (row / 8) +
                                             128 * (row % 8) + 16 * chunk);
                CHECK(tma == mma);
            }
        }
    }
}

TEST_CASE("sm100 smem descriptor: MN-major 128B-swizzle bf16 tile, N-major B (PTX ISA 9.7.16.3, Table 40)") {
    // A stage's N-major B tile at shared address 0x400 (1024-byte aligned: base offset 0, Table 41),
    // TMA boxes of 64 N-columns (128 bytes) x 64 K-rows, 64 x 64 x 2 = 8192 bytes each.
    //   bits  0-13 start = 0x400 >> 4 = 0x40
    //   bits 16-29 LBO   = 8192 >> 4 = 0x200     -> 0x0000'0000'0200'0000  (9.7.16.3.1.1, MN-major,
    //                     swizzled: "stride from the first (swizzle-byte-size/16) rows to the next
    //                     (swizzle-byte-size/16) rows" = from 128 / 16 = 8 rows of 16 bytes, i.e.
    //                     64 bf16 columns of N, to the next 64: the next box)
    //   bits 32-45 SBO   = 1024 >> 4 = 0x40      -> 0x0000'0040'0000'0000  (9.7.16.3.2, MN-major,
    //                     swizzled: "offset from the first 8 columns to the next 8 columns" = from
    //                     8 K-rows of 128 bytes to the next 8)
    //   bits 46-48 fixed 0b001                   -> 0x0000'4000'0000'0000
    //   bits 49-51 base offset 0, bit 52 relative, bits 53-60 0
    //   bits 61-63 swizzle 2 (128-byte)          -> 0x4000'0000'0000'0000
    const uint64_t expected = 0x4000'4040'0200'0040ull;
    CHECK(mnmajor_sw128_descriptor(0x400) == expected);
    CHECK(make_smem_descriptor(0x400, 8192, 1024, 0, Swizzle::k128B) == expected);
    // High in the window: 0x37C00 >> 4 = 0x37C0.
    CHECK(mnmajor_sw128_descriptor(0x37C00) == 0x4000'4040'0200'37C0ull);
    const uint64_t d = mnmajor_sw128_descriptor(0x37C00);
    CHECK(desc_start_address(d) == 0x37C00u);
    CHECK(desc_leading_byte_offset(d) == 8192u);
    CHECK(desc_stride_byte_offset(d) == 1024u);
    CHECK(desc_version(d) == 1u);
    CHECK(desc_base_offset(d) == 0u);
    CHECK(desc_lbo_mode(d) == 0u);
    CHECK(desc_swizzle(d) == 2u);
    // It differs from the K-major descriptor of the same tile in the LBO field only.
    CHECK((d ^ kmajor_sw128_descriptor(0x37C00)) == ((0x200ull ^ 0x1ull) << 16));
}

TEST_CASE("sm100 smem descriptor: MN-major K steps advance the start by 16 K-rows = 2048 bytes") {
    // A kind::f16 MMA takes K = 16 (Table 39): in an MN-major tile the K-rows are 128 bytes apart,
    // so step k starts 16 k rows = 2048 k bytes further: 0x80 k units of the start field. 2048 is
    // two whole 1024-byte swizzle patterns, so every step starts on a pattern boundary and the
    // base offset stays 0 (Table 41).
    const uint64_t base = mnmajor_sw128_descriptor(0x400);
    CHECK(advance_mn_k_step(base, 0) == 0x4000'4040'0200'0040ull);
    CHECK(advance_mn_k_step(base, 1) == 0x4000'4040'0200'00C0ull);
    CHECK(advance_mn_k_step(base, 2) == 0x4000'4040'0200'0140ull);
    CHECK(advance_mn_k_step(base, 3) == 0x4000'4040'0200'01C0ull);
    // Every 1024-byte-aligned stage in the 227 KB window: only the start field moves, by whole
    // 1024-byte patterns, and never carries into the LBO field.
    for (uint32_t tile = 0; tile + 4 * 8192 <= 232448u; tile += 1024) {
        const uint64_t d0 = mnmajor_sw128_descriptor(tile);
        for (uint32_t k = 0; k < 4; ++k) {
            const uint64_t d = advance_mn_k_step(d0, k);
            CHECK(desc_start_address(d) == tile + 2048u * k);
            CHECK(desc_start_address(d) % 1024u == 0u);
            CHECK((d & ~0x3FFFull) == (d0 & ~0x3FFFull));
        }
    }
}

// The MN-major 128-byte-swizzle canonical layout, read from the PTX ISA (9.7.16.3 and the
// canonical layouts of the shared-memory matrix layouts): in units of 16 bytes,
// ((8, m), (8, k)) : ((1, LBO), (8, SBO)). So bf16 element (n, k) of one MMA's B operand (n along
// N, k in [0, 16) along K) lies at start + 2 (n % 64) + LBO (n / 64) + 128 (k % 8) + SBO (k / 8)
// before the swizzle. TMA (a box of 64 columns x 64 rows, boxes one after another along N) puts
// element (n, K-row r) of the stage at tile + 8192 (n / 64) + 128 r + 2 (n % 64) before the
// swizzle. The 128-byte swizzle XORs address bits 4-6 with bits 7-9 for both. Both must land on
// the same byte for every column, K-row and MMA step, for every width a CTA loads (a pair's CTA:
// half the tile).
TEST_CASE("sm100 smem descriptor: MN-major MMA addressing matches the TMA N-major boxes (model)") {
    auto swizzle = [](uint32_t address) { return address ^ (((address >> 7) & 7u) << 4); };
    const uint32_t tile = 0x9000;  // 1024-byte aligned
    for (uint32_t columns : {64u, 128u, 192u, 256u}) {
        CAPTURE(columns);
        for (uint32_t step = 0; step < 4; ++step) {
            const uint64_t d = advance_mn_k_step(mnmajor_sw128_descriptor(tile), step);
            for (uint32_t n = 0; n < columns; ++n) {
                for (uint32_t k = 0; k < 16; ++k) {
                    const uint32_t row = 16 * step + k;
                    const uint32_t tma = tile + 8192 * (n / 64) + 128 * row + 2 * (n % 64);
                    const uint32_t mma = desc_start_address(d) + 2 * (n % 64) + desc_leading_byte_offset(d) * (n / 64) +
                                         128 * (k % 8) + desc_stride_byte_offset(d) * (k / 8);
                    if (swizzle(tma) != swizzle(mma) || tma != mma) {
                        FAIL("step " << step << " n " << n << " k " << k << ": MMA reads " << mma << ", TMA wrote " << tma);
                    }
                    CHECK(tile + mnmajor_tile_offset(n, row) == tma);
                }
            }
        }
    }
}

TEST_CASE("sm100 N-major B: 64-column boxes per CTA, and the pair of 192 has none") {
    // One CTA loads all tile_n columns; a pair's CTA half of them, in boxes of 64.
    CHECK(kMnMajorBoxColumns == 64u);
    CHECK(kMnMajorBoxBytes == 8192u);
    CHECK(mnmajor_boxes_per_cta(256, 1) == 4u);
    CHECK(mnmajor_boxes_per_cta(192, 1) == 3u);
    CHECK(mnmajor_boxes_per_cta(128, 1) == 2u);
    CHECK(mnmajor_boxes_per_cta(256, 2) == 2u);
    CHECK(mnmajor_boxes_per_cta(128, 2) == 1u);
    CHECK(mnmajor_boxes_per_cta(192, 2) == 0u);  // 96 columns per CTA: not whole boxes
    CHECK(mnmajor_boxes_per_cta(96, 1) == 0u);
    // The boxes hold exactly the bytes of a K-major stage of the same part of B, so the stage
    // sizes and the full barrier's byte count are the same for both layouts.
    for (uint32_t cta_group : {1u, 2u}) {
        for (uint32_t tile_n : {128u, 256u}) {
            CHECK(mnmajor_boxes_per_cta(tile_n, cta_group) * 8192u == b_rows_per_cta(tile_n, cta_group) * 64u * 2u);
        }
    }
}

TEST_CASE("sm100 instruction descriptor: kind::f16, bf16 x bf16 -> f32 (PTX ISA 9.7.16.4.2 Table 42)") {
    // bits 4-5 dtype F32 = 1 -> 0x10; bits 7-9 atype BF16 = 1 -> 0x80; bits 10-12 btype BF16 = 1
    // -> 0x400; bits 13/14 no negate; bits 15/16 transpose 0 (K-major); bits 0-3 dense, no
    // saturate; bits 30-31 max shift 0.
    //   M = 128, N = 256: N >> 3 = 32 -> 32 << 17 = 0x0040'0000; M >> 4 = 8 -> 8 << 24 = 0x0800'0000
    CHECK(make_instr_desc_bf16_f32(128, 256, 1) == 0x0840'0490u);
    //   N = 192: 24 << 17 = 0x0030'0000
    CHECK(make_instr_desc_bf16_f32(128, 192, 1) == 0x0830'0490u);
    //   N = 128: 16 << 17 = 0x0020'0000
    CHECK(make_instr_desc_bf16_f32(128, 128, 1) == 0x0820'0490u);
    //   M = 64, N = 8: 1 << 17 = 0x0002'0000; 4 << 24 = 0x0400'0000
    CHECK(make_instr_desc_bf16_f32(64, 8, 1) == 0x0402'0490u);
    //   cta_group::2, M = 256, N = 256: 16 << 24 = 0x1000'0000
    CHECK(make_instr_desc_bf16_f32(256, 256, 2) == 0x1040'0490u);
    // Transpose bits: A MN-major sets bit 15, B MN-major bit 16.
    CHECK(make_instr_desc_bf16_f32(128, 256, 1, true, false) == 0x0840'8490u);
    CHECK(make_instr_desc_bf16_f32(128, 256, 1, false, true) == 0x0841'0490u);
    // The N-major kernels' shapes: bit 16 (0x1'0000) on top of the K-major value.
    CHECK(make_instr_desc_bf16_f32(128, 192, 1, false, true) == 0x0831'0490u);
    CHECK(make_instr_desc_bf16_f32(128, 128, 1, false, true) == 0x0821'0490u);
    CHECK(make_instr_desc_bf16_f32(256, 256, 2, false, true) == 0x1041'0490u);
    CHECK(make_instr_desc_bf16_f32(256, 128, 2, false, true) == 0x1021'0490u);
    // The reserved bits 6, 23 and 29 are never set, whatever the shape.
    for (uint32_t n = 8; n <= 256; n += 8) {
        const uint32_t d = make_instr_desc_bf16_f32(128, n, 1, true, true);
        CHECK((d & ((1u << 6) | (1u << 23) | (1u << 29))) == 0u);
        CHECK(idesc_n(d) == n);
        CHECK(idesc_m(d) == 128u);
    }
}

TEST_CASE("sm100 instruction descriptor: CTA pair, M = 256 (PTX ISA 9.7.16.4.2 Table 42, 9.7.16.2.1 Table 39)") {
    // cta_group::2 takes the whole pair's M in the descriptor: M = 256 -> M >> 4 = 16 = 0b10000 at
    // bits 24-28 -> 16 << 24 = 0x1000'0000 (the top bit of the 5-bit field; bit 23 and bit 29 stay 0).
    // Types and majorness as for cta_group::1: 0x490.
    //   N = 256: 32 << 17 = 0x0040'0000
    CHECK(make_instr_desc_bf16_f32(256, 256, 2) == 0x1040'0490u);
    //   N = 192: 24 << 17 = 0x0030'0000
    CHECK(make_instr_desc_bf16_f32(256, 192, 2) == 0x1030'0490u);
    //   N = 128: 16 << 17 = 0x0020'0000
    CHECK(make_instr_desc_bf16_f32(256, 128, 2) == 0x1020'0490u);
    //   N = 16 (the smallest pair N): 2 << 17 = 0x0004'0000
    CHECK(make_instr_desc_bf16_f32(256, 16, 2) == 0x1004'0490u);
    //   cta_group::2 with M = 128 (64 rows per CTA): 8 << 24, as cta_group::1 M = 128
    CHECK(make_instr_desc_bf16_f32(128, 256, 2) == 0x0840'0490u);
    // Field readback over every pair N of Table 39 (16..256 step 16): M reads 256, never 0 (a
    // 4-bit field or a field at bit 23 would lose or move the top bit), and no reserved bit is set.
    for (uint32_t n = 16; n <= 256; n += 16) {
        const uint32_t d = make_instr_desc_bf16_f32(256, n, 2);
        CAPTURE(n);
        CHECK(idesc_m(d) == 256u);
        CHECK(idesc_n(d) == n);
        CHECK((d >> 24) == 0x10u);
        CHECK((d & ((1u << 6) | (1u << 23) | (1u << 29))) == 0u);
    }
}

TEST_CASE("sm100 CTA pair: operand split and stage bytes (PTX ISA 9.7.16.2.1, 9.7.16.5)") {
    // M = 128 per CTA; the pair's MMA has M = 256.
    CHECK(mma_m_for(1) == 128u);
    CHECK(mma_m_for(2) == 256u);
    // B: each CTA of a pair holds half of the tile's N rows, rank 1 the upper half.
    CHECK(b_rows_per_cta(256, 2) == 128u);
    CHECK(b_rows_per_cta(192, 2) == 96u);
    CHECK(b_rows_per_cta(128, 2) == 64u);
    CHECK(b_rows_per_cta(256, 1) == 256u);
    CHECK(b_row_offset(0, 256, 2) == 0u);
    CHECK(b_row_offset(1, 256, 2) == 128u);
    CHECK(b_row_offset(1, 192, 2) == 96u);
    CHECK(b_row_offset(0, 256, 1) == 0u);
    // Bytes a stage's full barrier expects, bf16 (2 bytes), 64 K per stage:
    //   one CTA, N = 256: A 128 x 64 x 2 = 16384 + B 256 x 64 x 2 = 32768 -> 49152
    CHECK(stage_tx_bytes(256, 1) == 49152u);
    //   pair, N = 256: per CTA A 16384 + B 128 x 64 x 2 = 16384; both CTAs -> 65536
    CHECK(stage_tx_bytes(256, 2) == 65536u);
    //   pair, N = 192: per CTA 16384 + 96 x 128 = 12288; both -> 57344
    CHECK(stage_tx_bytes(192, 2) == 57344u);
    //   pair, N = 128: per CTA 16384 + 8192; both -> 49152
    CHECK(stage_tx_bytes(128, 2) == 49152u);
    // The multicast commit reaches ranks 0 and 1.
    CHECK(kPairCtaMask == 0x3u);
}

TEST_CASE("sm100 instruction descriptor: shapes outside Table 39 are refused (PTX ISA 9.7.16.2.1)") {
    // cta_group::1 dense f16/bf16 -> f32: M in {64, 128}; N = 8..256 in steps of 8.
    CHECK(is_valid_mma_shape(128, 8, 1));
    CHECK(is_valid_mma_shape(128, 256, 1));
    CHECK_FALSE(is_valid_mma_shape(128, 264, 1));
    CHECK_FALSE(is_valid_mma_shape(128, 12, 1));
    CHECK_FALSE(is_valid_mma_shape(256, 128, 1));
    CHECK_FALSE(is_valid_mma_shape(32, 128, 1));
    // cta_group::2: M in {128, 256}; N = 16..256 in steps of 16.
    CHECK(is_valid_mma_shape(256, 16, 2));
    CHECK_FALSE(is_valid_mma_shape(256, 8, 2));
    CHECK_FALSE(is_valid_mma_shape(256, 24, 2));
    CHECK_FALSE(is_valid_mma_shape(64, 128, 2));
    CHECK_FALSE(is_valid_mma_shape(128, 128, 3));
    // An invalid shape yields 0, which no valid descriptor equals (M >> 4 is never 0).
    CHECK(make_instr_desc_bf16_f32(256, 128, 1) == 0u);
    CHECK(make_instr_desc_bf16_f32(128, 8, 2) == 0u);
}

TEST_CASE("sm100 tensor memory: allocation sizes and the double-buffered accumulator columns") {
    // tcgen05.alloc: a power of two number of columns, 32 <= nCols <= 512.
    CHECK(tmem_alloc_columns(0) == 32u);
    CHECK(tmem_alloc_columns(1) == 32u);
    CHECK(tmem_alloc_columns(32) == 32u);
    CHECK(tmem_alloc_columns(33) == 64u);
    CHECK(tmem_alloc_columns(200) == 256u);
    CHECK(tmem_alloc_columns(256) == 256u);
    CHECK(tmem_alloc_columns(384) == 512u);
    CHECK(tmem_alloc_columns(512) == 512u);
    CHECK(tmem_alloc_columns(513) == 0u);
    // Two f32 accumulators of tile_n columns each (one 32-bit cell per f32).
    CHECK(accumulator_columns(256) == 512u);
    CHECK(accumulator_columns(192) == 384u);
    CHECK(accumulator_columns(128) == 256u);
    CHECK(accumulator_column(0, 256) == 0u);
    CHECK(accumulator_column(1, 256) == 256u);
    CHECK(accumulator_column(1, 192) == 192u);
    // Both buffers lie inside the allocation and do not overlap.
    for (uint32_t tile_n = 16; tile_n <= 256; tile_n += 16) {
        const uint32_t alloc = tmem_alloc_columns(accumulator_columns(tile_n));
        REQUIRE(alloc != 0u);
        CHECK(accumulator_column(1, tile_n) >= accumulator_column(0, tile_n) + tile_n);
        CHECK(accumulator_column(1, tile_n) + tile_n <= alloc);
    }
    // Address = lane << 16 | column; a warp reaches only its lane quarter (warp id % 4).
    CHECK(tmem_address(0, 96, 256 + 16) == 0x0060'0110u);
    CHECK(tmem_address(0x20, 32, 0) == 0x0020'0020u);
    CHECK(warp_lane_quarter_base(0) == 0u);
    CHECK(warp_lane_quarter_base(3) == 96u);
    CHECK(warp_lane_quarter_base(4) == 0u);
    CHECK(warp_lane_quarter_base(5) == 32u);
}

TEST_CASE("sm100 tcgen05.ld: shape and .num selection (PTX ISA 9.7.16.2.3)") {
    // Row i of an M = 128 cta_group::1 accumulator is lane i: one row per thread with .32x32b.
    CHECK(accumulator_load_shape(128, 1) == TmemLoadShape::k32x32b);
    CHECK(accumulator_load_shape(256, 2) == TmemLoadShape::k32x32b);
    CHECK(accumulator_load_shape(64, 1) == TmemLoadShape::kUnsupported);
    CHECK(accumulator_load_shape(128, 2) == TmemLoadShape::kUnsupported);
    // .num in {x1, x2, x4, ..., x128}: one 32-bit register per column.
    CHECK(load_32x32b_num(1) == 1u);
    CHECK(load_32x32b_num(16) == 16u);
    CHECK(load_32x32b_num(128) == 128u);
    CHECK(load_32x32b_num(0) == 0u);
    CHECK(load_32x32b_num(24) == 0u);
    CHECK(load_32x32b_num(256) == 0u);
}

TEST_CASE("sm100 variants: every registered kernel is a shape the encodings accept") {
    int count = 0;
    const ggemm::KernelVariant* variants = ggemm::sm100_variants(&count);
    REQUIRE(count > 0);
    REQUIRE(variants != nullptr);
    std::set<std::string> names;
    int pairs = 0;
    for (int i = 0; i < count; ++i) {
        const ggemm::KernelVariant& v = variants[i];
        CAPTURE(v.name);
        CHECK(names.insert(v.name).second);
        CHECK(std::strncmp(v.name, "sm100_", 6) == 0);
        CHECK(v.arch == 100);
        // cluster_m is the CTA group: 1 (M = 128 on one CTA) or 2 (M = 256 on a CTA pair).
        REQUIRE((v.cluster_m == 1 || v.cluster_m == 2));
        const uint32_t cta_group = static_cast<uint32_t>(v.cluster_m);
        pairs += v.cluster_m == 2;
        CHECK(v.tile_m == 128 * v.cluster_m);
        CHECK(make_instr_desc_bf16_f32(v.tile_m, v.tile_n, cta_group) != 0u);
        CHECK(idesc_m(make_instr_desc_bf16_f32(v.tile_m, v.tile_n, cta_group)) == static_cast<uint32_t>(v.tile_m));
        CHECK(tmem_alloc_columns(accumulator_columns(v.tile_n)) != 0u);  // per CTA: all N columns
        CHECK(v.block_k == static_cast<int32_t>(kBlockK));
        // The host encodes these boxes (src/tensor_map.cpp): each CTA's own 128 rows of A and its
        // part of B.
        CHECK(v.a_box_rows == 128);
        CHECK(v.b_box_rows == static_cast<int32_t>(b_rows_per_cta(v.tile_n, cta_group)));
        CHECK(v.b_box_rows * v.cluster_m == v.tile_n);
        CHECK(v.b_box_rows % 8 == 0);  // whole 8-row swizzle atoms
        CHECK(v.b_box_rows <= 256);    // TMA box dimension limit
        // The stage ring alone: one CTA's A and B boxes of every stage, bf16.
        CHECK(v.smem_bytes >= v.stages * (v.a_box_rows + v.b_box_rows) * v.block_k * 2);
        CHECK(v.smem_bytes <= 232448);  // 227 KB: the most one SM100 CTA may opt into
        CHECK(v.threads == 192);        // 4 epilogue warps (one per TMEM lane quarter) + TMA + MMA
        CHECK(static_cast<bool>(v.prepare != nullptr));
        CHECK(static_cast<bool>(v.launch != nullptr));
    }
    CHECK(pairs >= 1);  // the cta_group::2 kernel is registered
}

TEST_CASE("sm100 variants: each configuration in both weight layouts, but the pair of 192 K-major only") {
    int count = 0;
    const ggemm::KernelVariant* variants = ggemm::sm100_variants(&count);
    int n_major = 0;
    for (int i = 0; i < count; ++i) {
        const ggemm::KernelVariant& v = variants[i];
        CAPTURE(v.name);
        REQUIRE((v.weight_layout == ggemm::kKMajor || v.weight_layout == ggemm::kNMajor));
        const bool is_n_major = v.weight_layout == ggemm::kNMajor;
        const std::string name = v.name;
        CHECK((name.size() > 7 && name.compare(name.size() - 7, 7, "_nmajor") == 0) == is_n_major);
        const uint32_t cta_group = static_cast<uint32_t>(v.cluster_m);
        if (!is_n_major) {
            // Its N-major twin: the same tile, stages and shared memory, when the CTA's part of B
            // is whole 64-column boxes.
            const bool boxes = mnmajor_boxes_per_cta(v.tile_n, cta_group) != 0;
            int twins = 0;
            for (int j = 0; j < count; ++j) {
                const ggemm::KernelVariant& t = variants[j];
                twins += t.weight_layout == ggemm::kNMajor && t.tile_m == v.tile_m && t.tile_n == v.tile_n &&
                         t.cluster_m == v.cluster_m && t.stages == v.stages && t.smem_bytes == v.smem_bytes &&
                         name + "_nmajor" == t.name;
            }
            CHECK(twins == (boxes ? 1 : 0));
            continue;
        }
        ++n_major;
        CHECK(v.tile_n % 64 == 0);
        CHECK(mnmajor_boxes_per_cta(v.tile_n, cta_group) != 0u);
        CHECK(make_instr_desc_bf16_f32(v.tile_m, v.tile_n, cta_group, false, true) != 0u);
    }
    // 256, 192 and 128 on one CTA; 256 and 128 on a pair.
    CHECK(n_major == 5);
}
