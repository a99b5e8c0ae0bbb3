// The SM90 epilogue's staging slice (kernels/sm90/epilogue_layout.h, the code the kernel runs):
// the swizzle is a bijection, and the two access patterns of epilogue_sm90.cuh touch shared
// memory the way its comments claim. The patterns are the wgmma accumulator fragment (PTX ISA,
// "Register fragment for D" of m64nNk16: lane l of warp w holds rows 16w + l/4 and + 8, columns
// 2(l%4) and + 1 of each 8-column group) and the copy-out (eight lanes per 128-byte row).
//
// Shared memory has 32 banks of 4 bytes. A warp's 4-byte accesses are served in one wavefront
// when the 32 lanes hit distinct banks; 8-byte ones per half-warp, 16-byte ones per quarter-warp.
#include <doctest/doctest.h>

#include <cstdint>
#include <set>
#include <vector>

#include "kernels/sm90/epilogue_layout.h"

using ggemm::sm90::kSliceBytes;
using ggemm::sm90::kSliceRowBytes;
using ggemm::sm90::kSliceRows;
using ggemm::sm90::slice_offset;

namespace {

// Wavefronts a group of same-width accesses needs: the most distinct words any one bank serves.
int wavefronts(const std::vector<uint32_t>& byte_offsets, int access_bytes) {
    std::vector<std::set<uint32_t>> words_of_bank(32);
    for (uint32_t offset : byte_offsets) {
        for (int word = 0; word < access_bytes / 4; ++word) {
            const uint32_t address_word = offset / 4 + word;
            words_of_bank[address_word % 32].insert(address_word);
        }
    }
    std::size_t most = 0;
    for (const auto& words : words_of_bank) most = words.size() > most ? words.size() : most;
    return static_cast<int>(most);
}

// Byte offsets a fragment write of 8-column group jj (top rows or bottom rows) touches, for the
// lanes [first_lane, first_lane + lanes) of warp w, with elements of elem bytes.
std::vector<uint32_t> fragment_write(int w, int jj, bool bottom, int elem, int first_lane, int lanes) {
    std::vector<uint32_t> offsets;
    for (int lane = first_lane; lane < first_lane + lanes; ++lane) {
        const int row = 16 * w + lane / 4 + (bottom ? 8 : 0);
        const int byte = jj * 8 * elem + 2 * (lane % 4) * elem;
        offsets.push_back(slice_offset(row, byte));
    }
    return offsets;
}

}  // namespace

TEST_CASE("epilogue layout: the swizzle maps the 64 x 128-byte slice onto itself, one to one") {
    std::vector<int> hits(kSliceBytes, 0);
    for (int row = 0; row < kSliceRows; ++row) {
        for (int byte = 0; byte < kSliceRowBytes; ++byte) {
            const uint32_t offset = slice_offset(row, byte);
            REQUIRE(offset < static_cast<uint32_t>(kSliceBytes));
            CHECK(offset / kSliceRowBytes == static_cast<uint32_t>(row));  // stays in its row
            ++hits[offset];
        }
    }
    for (int hit : hits) CHECK(hit == 1);
    // 16-byte chunks stay whole: a 16-byte vector at a chunk start is contiguous.
    for (int row = 0; row < kSliceRows; ++row)
        for (int byte = 0; byte < kSliceRowBytes; byte += 16)
            for (int i = 1; i < 16; ++i) CHECK(slice_offset(row, byte + i) == slice_offset(row, byte) + i);
}

TEST_CASE("epilogue layout: 16-bit fragment writes take one wavefront per warp instruction") {
    for (int w = 0; w < 4; ++w)
        for (int jj = 0; jj < 8; ++jj)  // 64 columns of bf16 or fp16 per slice
            for (bool bottom : {false, true}) {
                CAPTURE(w);
                CAPTURE(jj);
                CHECK(wavefronts(fragment_write(w, jj, bottom, 2, 0, 32), 4) == 1);
            }
}

TEST_CASE("epilogue layout: fp32 fragment writes take at most two wavefronts per half-warp") {
    // 8-byte stores go a half-warp at a time: 16 lanes x 8 bytes fill the 32 banks once at best.
    // The fp32 rows of a half-warp repeat chunk pairs every other row, so two wavefronts; fp32
    // outputs are the rarer case and this costs them one extra cycle per store.
    for (int w = 0; w < 4; ++w)
        for (int jj = 0; jj < 4; ++jj)  // 32 columns of fp32 per slice
            for (bool bottom : {false, true})
                for (int half = 0; half < 2; ++half) {
                    CAPTURE(w);
                    CAPTURE(jj);
                    CHECK(wavefronts(fragment_write(w, jj, bottom, 4, 16 * half, 16), 8) <= 2);
                }
}

TEST_CASE("epilogue layout: the copy-out reads one whole row per quarter-warp, conflict-free") {
    // Thread t of the warpgroup reads chunk t % 8 of row t / 8 + 16 i (epilogue_sm90.cuh,
    // copy_slice): eight consecutive threads cover one 128-byte row.
    for (int pass = 0; pass < kSliceRows / 16; ++pass)
        for (int quarter = 0; quarter < 128 / 8; ++quarter) {
            std::vector<uint32_t> offsets;
            std::set<uint32_t> rows;
            for (int t = 8 * quarter; t < 8 * quarter + 8; ++t) {
                const int row = t / 8 + 16 * pass;
                offsets.push_back(slice_offset(row, (t % 8) * 16));
                rows.insert(offsets.back() / kSliceRowBytes);
            }
            CHECK(rows.size() == 1);
            CHECK(wavefronts(offsets, 16) == 1);
        }
}

TEST_CASE("epilogue layout: the fragment writes cover every byte of a slice exactly once") {
    for (int elem : {2, 4}) {
        CAPTURE(elem);
        std::vector<int> hits(kSliceBytes, 0);
        const int groups = kSliceRowBytes / (8 * elem);
        for (int w = 0; w < 4; ++w)
            for (int jj = 0; jj < groups; ++jj)
                for (bool bottom : {false, true})
                    for (uint32_t offset : fragment_write(w, jj, bottom, elem, 0, 32))
                        for (int i = 0; i < 2 * elem; ++i) ++hits[offset + i];  // one element pair
        for (int hit : hits) CHECK(hit == 1);
    }
}
