// The weight gradient's TMA-store staging atom on the CPU: every accumulator pair the math
// threads write lands where the TMA store box {128 bytes, 64 rows} with the 128-byte swizzle
// reads that element, each byte of the atom is written exactly once, stores stay aligned inside
// one 16-byte chunk, and a warp's stores of one column group hit every shared-memory bank
// equally (no bank conflicts beyond the minimum wavefronts).
#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

#include "kernels/sm90/wgrad_store_layout_sm90.h"

using namespace ggemm::sm90;

namespace {

// The TMA 128-byte swizzle, written as the address-bit rule (CUDA driver API,
// CU_TENSOR_MAP_SWIZZLE_128B; CUTLASS's Swizzle<3, 4, 3>): within each 1024-byte block, bits 4-6
// of the byte offset are XORed with bits 7-9. The box's element (row, byte) sits at
// row * 128 + byte before swizzling, since its inner extent is exactly 128 bytes.
uint32_t tma_box_offset(int row, int byte) {
    const uint32_t linear = static_cast<uint32_t>(row * 128 + byte);
    return linear ^ (((linear >> 7) & 7u) << 4);
}

}  // namespace

TEST_CASE("wgrad staging atom: every pair lands where the TMA box reads it, each byte once") {
    for (int element : {2, 4}) {
        CAPTURE(element);
        const int columns = wgrad_atom_columns(element);
        CHECK(columns * element == 128);
        std::vector<int> writes(kWgradAtomBytes, 0);
        for (int thread = 0; thread < 128; ++thread) {
            for (int group = 0; group < columns / 8; ++group) {
                for (int half = 0; half < 2; ++half) {
                    const int row = wgrad_pair_row(thread, half);
                    const int column = wgrad_pair_column(thread, group);
                    REQUIRE(row >= 0);
                    REQUIRE(row < kWgradAtomRows);
                    REQUIRE(column % 2 == 0);
                    REQUIRE(column + 1 < columns);
                    const uint32_t at = wgrad_pair_offset(row, column, element);
                    const int pair_bytes = 2 * element;
                    CHECK(at % pair_bytes == 0);                    // st.shared.b32 / .v2.b32 alignment
                    CHECK(at % 16 + pair_bytes <= 16);               // inside one 16-byte chunk
                    for (int e = 0; e < 2; ++e) {                    // both elements of the pair
                        for (int b = 0; b < element; ++b) {
                            const int byte = (column + e) * element + b;
                            CHECK(at + static_cast<uint32_t>(e * element + b) == tma_box_offset(row, byte));
                            writes[at + static_cast<uint32_t>(e * element + b)] += 1;
                        }
                    }
                }
            }
        }
        int wrong = 0;
        for (int count : writes) wrong += count != 1;
        CHECK(wrong == 0);
    }
}

TEST_CASE("wgrad staging atom: the accumulator layout of a warpgroup's 64 rows") {
    // Rows: warp w holds 16w .. 16w + 15; lane l rows l/4 and l/4 + 8 of them.
    CHECK(wgrad_pair_row(0, 0) == 0);
    CHECK(wgrad_pair_row(0, 1) == 8);
    CHECK(wgrad_pair_row(31, 0) == 7);
    CHECK(wgrad_pair_row(31, 1) == 15);
    CHECK(wgrad_pair_row(32, 0) == 16);
    CHECK(wgrad_pair_row(127, 1) == 63);
    // Columns: lane l holds 2(l%4) and + 1 of each 8-column group.
    CHECK(wgrad_pair_column(0, 0) == 0);
    CHECK(wgrad_pair_column(3, 0) == 6);
    CHECK(wgrad_pair_column(5, 2) == 18);
}

TEST_CASE("wgrad staging atom: a warp's stores of one column group spread over the banks") {
    for (int element : {2, 4}) {
        CAPTURE(element);
        for (int warp = 0; warp < 4; ++warp) {
            for (int group = 0; group < wgrad_atom_columns(element) / 8; ++group) {
                for (int half = 0; half < 2; ++half) {
                    // Each 4-byte bank word of the 32 banks: how many lanes' stores touch it.
                    std::vector<int> bank(32, 0);
                    for (int lane = 0; lane < 32; ++lane) {
                        const int thread = 32 * warp + lane;
                        const uint32_t at = wgrad_pair_offset(wgrad_pair_row(thread, half),
                                                              wgrad_pair_column(thread, group), element);
                        for (uint32_t word = 0; word < static_cast<uint32_t>(2 * element) / 4; ++word)
                            bank[(at / 4 + word) % 32] += 1;
                    }
                    // 32 lanes x 4 bytes (2-byte pairs): one wavefront; x 8 bytes (fp32): two.
                    const int wavefronts = element / 2;
                    for (int count : bank) CHECK(count == wavefronts);
                }
            }
        }
    }
}
