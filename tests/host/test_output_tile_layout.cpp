// The SM90 bulk-copy epilogue's output buffer (kernels/sm90/output_tile_layout.h, the code the
// kernel runs): stmatrix.x4 and the fp32 pair writes put every accumulator of a tile where the
// row copies read it, exactly once, without bank conflicts, and the buffer rows the copies read
// are 16-byte aligned runs.
//
// stmatrix.x4 (PTX ISA, stmatrix): matrix q's row r is written to the address lane 8q + r gives;
// its element (r, c) comes from register q of lane 4r + c / 2. In bulk_epilogue_sm90.cuh, register
// q of stmatrix number i holds accumulator pair 4i + q (pair_value). Shared memory has 32 banks of
// 4 bytes: a 16-byte row of a matrix is one quarter of a wavefront, 8-byte writes go per half-warp.
#include <doctest/doctest.h>

#include <cstdint>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "kernels/sm90/output_tile_layout.h"

using namespace ggemm::sm90;

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

// (row, column) of an element -> byte offset, for one pass over a tile of width `columns`.
using Placement = std::map<std::pair<int, int>, uint32_t>;

Placement stage_16bit(int tile_n, int columns) {
    Placement placed;
    for (int warp = 0; warp < 8; ++warp) {
        for (int i = 0; i < columns / 16; ++i) {
            std::vector<std::vector<uint32_t>> rows_of_matrix(4);
            for (int lane = 0; lane < 32; ++lane) {
                const ElementAt at = stmatrix_row_start(warp, lane, i);
                const uint32_t row_address = output_offset(tile_n, 2, at.row, at.column);
                CHECK(row_address % 16 == 0);
                rows_of_matrix[lane / 8].push_back(row_address);
                // Row lane % 8 of matrix q = lane / 8: its eight elements come from the lanes 4r + c/2.
                const int q = lane / 8, r = lane % 8;
                for (int c = 0; c < 8; ++c) {
                    const int source_lane = 4 * r + c / 2;
                    const ElementAt held = fragment_pair(warp, source_lane, 4 * i + q);
                    const int row = held.row, column = held.column + c % 2;
                    CHECK(row == at.row);
                    CHECK(column == at.column + c);
                    const bool fresh = placed.emplace(std::make_pair(row, column), row_address + 2 * c).second;
                    CHECK(fresh);
                }
            }
            for (const auto& rows : rows_of_matrix) CHECK(wavefronts(rows, 16) == 1);
        }
    }
    return placed;
}

Placement stage_fp32(int tile_n, int columns) {
    Placement placed;
    for (int warp = 0; warp < 8; ++warp) {
        for (int pair = 0; pair < columns / 4; ++pair) {
            std::vector<uint32_t> halves[2];
            for (int lane = 0; lane < 32; ++lane) {
                const ElementAt at = fragment_pair(warp, lane, pair);
                const uint32_t address = output_offset(tile_n, 4, at.row, at.column);
                CHECK(address % 8 == 0);
                halves[lane / 16].push_back(address);
                for (int e = 0; e < 2; ++e) {
                    const bool fresh = placed.emplace(std::make_pair(at.row, at.column + e), address + 4 * e).second;
                    CHECK(fresh);
                }
            }
            CHECK(wavefronts(halves[0], 8) == 1);
            CHECK(wavefronts(halves[1], 8) == 1);
        }
    }
    return placed;
}

// Every element of the pass is placed once, and row r's elements are the contiguous run the
// copy of row r reads: bytes [r * pitch, r * pitch + columns * elem).
void check_rows(const Placement& placed, int tile_n, int columns, int elem) {
    CHECK(placed.size() == static_cast<std::size_t>(kOutputRows * columns));
    const int pitch = output_pitch(tile_n, elem);
    CHECK(pitch % 16 == 0);
    CHECK(pitch * kOutputRows <= output_buffer_bytes(tile_n));
    for (int row = 0; row < kOutputRows; ++row) {
        for (int column = 0; column < columns; ++column) {
            const auto it = placed.find({row, column});
            REQUIRE(it != placed.end());
            CHECK(it->second == static_cast<uint32_t>(row * pitch + column * elem));
        }
    }
}

}  // namespace

TEST_CASE("output tile: stmatrix places a 16-bit pass of every width once, row by row, conflict-free") {
    for (const int tile_n : {256, 192, 128}) {
        CAPTURE(tile_n);
        CHECK(passes(tile_n, tile_n, 2) == 1);
        for (const int width : {tile_n, 128, 64}) {
            if (width > tile_n) continue;
            check_rows(stage_16bit(tile_n, width), tile_n, width, 2);
        }
    }
}

TEST_CASE("output tile: fp32 passes of half a tile row, 8-byte writes conflict-free per half-warp") {
    for (const int tile_n : {256, 192, 128}) {
        CAPTURE(tile_n);
        CHECK(pass_columns(tile_n, 4) == tile_n / 2);
        CHECK(passes(tile_n, tile_n, 4) == 2);
        CHECK(passes(tile_n, 64, 4) == 1);
        check_rows(stage_fp32(tile_n, pass_columns(tile_n, 4)), tile_n, pass_columns(tile_n, 4), 4);
    }
}
