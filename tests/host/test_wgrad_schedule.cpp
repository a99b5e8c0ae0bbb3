// The weight gradient's device logic on the CPU: the tile numbering, the expert row cursor against
// the contract's rule written out independently, the SM90 order of experts and its static deal,
// what each tile does, the output-pointer check, and the MN-major wgmma descriptors against the
// address maps of the PTX ISA and of TMA.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <ios>
#include <set>
#include <tuple>
#include <vector>

#include "ggemm.h"
#include "kernels/common/wgrad_schedule.h"
#include "kernels/sm90/wgrad_layout_sm90.h"
#include "tests/support/reference.h"

namespace {

// The contract's rule, by brute force: expert g is computed when its begin and end offsets are
// usable (>= 0, multiples of 256, <= M), end >= begin, and begin is not below any usable offset
// of offsets[0, g - 1).
bool usable_by_rule(const std::vector<int32_t>& offsets, int32_t g, int64_t m) {
    const auto ok = [&](int64_t v) { return v >= 0 && v % 256 == 0 && v <= m; };
    const int64_t begin = g == 0 ? 0 : offsets[g - 1];
    const int64_t end = offsets[g];
    if (!ok(begin) || !ok(end) || end < begin) return false;
    for (int32_t e = 0; e + 1 < g; ++e)
        if (ok(offsets[e]) && offsets[e] > begin) return false;
    return true;
}

// Offsets that grow by 0 to max_step segments of 256 rows, one in about `bad_one_in` a bad value:
// negative, misaligned, anywhere up to max_segments segments (out of order), or past M.
std::vector<int32_t> adversarial_offsets(ggemm_test::Rng& rng, int32_t experts, int64_t m, int64_t max_step,
                                         int64_t bad_one_in, int64_t max_segments) {
    std::vector<int32_t> offsets(static_cast<size_t>(experts));
    int64_t end = 0;
    for (int32_t g = 0; g < experts; ++g) {
        end += 256 * rng.between(0, max_step);
        int64_t value = end;
        switch (rng.below(bad_one_in)) {
            case 0: value = -256 * rng.between(1, 4); break;
            case 1: value = end + 1 + rng.below(255); break;
            case 2: value = 256 * rng.between(0, max_segments); break;
            case 3: value = m + 256; break;
            default: break;
        }
        offsets[static_cast<size_t>(g)] = static_cast<int32_t>(value);
    }
    return offsets;
}

// The SM90 order of experts from the cursor's rows: each expert's key (WgradOrderKey), sorted
// largest first, as slot entries. kernels/common/wgrad_order.cuh builds the same on the device.
std::vector<uint16_t> order_by_rule(const std::vector<int32_t>& offsets, int64_t m) {
    ggemm::ExpertRowCursor cursor(offsets.data(), m);
    std::vector<uint32_t> keys;
    for (int32_t g = 0; g < static_cast<int32_t>(offsets.size()); ++g) {
        const ggemm::WgradExpert rows = cursor.rows(g);
        keys.push_back(ggemm::WgradOrderKey::make((rows.row_end - rows.row_begin) / 64, rows.usable, g));
    }
    std::sort(keys.begin(), keys.end(), std::greater<uint32_t>());
    std::vector<uint16_t> order;
    for (uint32_t key : keys) order.push_back(ggemm::wgrad_order_entry(key));
    return order;
}

// Each CTA's row blocks under a deal: tile t of `per` per slot costs its expert's blocks plus
// `overhead`; cta_of(step, cta) is the item a CTA takes at each step.
template <class Deal>
std::vector<double> cta_loads(const std::vector<double>& slot_cost, int64_t per, int32_t grid, Deal item_of) {
    std::vector<double> load(static_cast<size_t>(grid), 0.0);
    const int64_t items = static_cast<int64_t>(slot_cost.size()) * per;
    for (int32_t cta = 0; cta < grid; ++cta)
        for (int64_t step = 0;; ++step) {
            const int64_t item = item_of(step, cta);
            if (item >= items) break;
            load[static_cast<size_t>(cta)] += slot_cost[static_cast<size_t>(item / per)];
        }
    return load;
}

}  // namespace

TEST_CASE("wgrad order keys: more row blocks first, then the lower index; never 0") {
    using Key = ggemm::WgradOrderKey;
    CHECK(Key::make(5, true, 900) > Key::make(4, true, 0));
    CHECK(Key::make(4, true, 3) > Key::make(4, true, 7));
    CHECK(Key::make(4, false, 3) > Key::make(4, true, 7));  // usability never reorders
    CHECK(Key::make(0, false, 1023) > 0u);
    CHECK(Key::make(Key::kMaxBlocks + 100, true, 2) == Key::make(Key::kMaxBlocks, true, 2));  // clamped
    CHECK(Key::make(Key::kMaxBlocks, true, 0) < 0x80000000u);
    for (int32_t g : {0, 1, 517, 1023}) {
        for (bool usable : {false, true}) {
            const uint32_t key = Key::make(int64_t{1} << 18, usable, g);
            CHECK(Key::expert(key) == g);
            CHECK(Key::usable(key) == usable);
            const uint16_t entry = ggemm::wgrad_order_entry(key);
            CHECK(ggemm::wgrad_order_expert(entry) == g);
            CHECK(ggemm::wgrad_order_usable(entry) == usable);
        }
    }
}

TEST_CASE("wgrad order: every expert in one slot, largest first, with the cursor's rows") {
    ggemm_test::Rng rng(77);
    for (int trial = 0; trial < 2000; ++trial) {
        const int32_t experts = static_cast<int32_t>(rng.between(1, 40));
        const int64_t m = 256 * rng.between(0, 60);
        const std::vector<int32_t> offsets = adversarial_offsets(rng, experts, m, 6, 12, 20);
        CAPTURE(trial);
        const std::vector<uint16_t> order = order_by_rule(offsets, m);
        REQUIRE(order.size() == offsets.size());
        ggemm::ExpertRowCursor cursor(offsets.data(), m);
        std::vector<ggemm::WgradExpert> rows;
        for (int32_t g = 0; g < experts; ++g) rows.push_back(cursor.rows(g));
        std::set<int32_t> seen;
        int64_t previous_blocks = INT64_MAX;
        for (uint16_t entry : order) {
            const int32_t g = ggemm::wgrad_order_expert(entry);
            REQUIRE(g >= 0);
            REQUIRE(g < experts);
            CHECK(seen.insert(g).second);
            const ggemm::WgradExpert got = ggemm::wgrad_order_rows(entry, offsets.data());
            const ggemm::WgradExpert& want = rows[static_cast<size_t>(g)];
            CHECK(got.usable == want.usable);
            CHECK(got.row_begin == want.row_begin);
            CHECK(got.row_end == want.row_end);
            const int64_t blocks = (got.row_end - got.row_begin) / 64;
            CHECK(blocks <= previous_blocks);
            previous_blocks = blocks;
        }
    }
}

TEST_CASE("wgrad static deal: each item once, rounds of the grid in alternating directions") {
    for (int32_t grid : {1, 2, 7, 132}) {
        for (int64_t items : {int64_t{0}, int64_t{1}, int64_t{grid} - 1, int64_t{grid}, int64_t{5} * grid + 3}) {
            CAPTURE(grid);
            CAPTURE(items);
            std::vector<int> taken(static_cast<size_t>(items), 0);
            for (int32_t cta = 0; cta < grid; ++cta) {
                int64_t previous = -1;
                for (int64_t step = 0;; ++step) {
                    const int64_t item = ggemm::wgrad_static_item(step, cta, grid);
                    CHECK(item / grid == step);  // one item a round
                    if (item >= items) break;
                    CHECK(item > previous);
                    previous = item;
                    ++taken[static_cast<size_t>(item)];
                }
            }
            for (int count : taken) CHECK(count == 1);
        }
    }
    CHECK(ggemm::wgrad_static_item(0, 3, 132) == 3);
    CHECK(ggemm::wgrad_static_item(1, 3, 132) == 132 + 128);
    CHECK(ggemm::wgrad_static_item(2, 3, 132) == 264 + 3);
}

TEST_CASE("wgrad static deal: experts of uneven rows, largest first, even out the CTAs") {
    // qwen3's weight gradient on bench/moe_shapes.json: 128 experts of 2-60 segments of 256 rows,
    // 48 tiles each (P = 2048, Q = 768 on 128 x 256 tiles), 132 CTAs; a tile costs its row
    // blocks and about two more.
    const int32_t experts = 128;
    const int64_t per = 48;
    const int32_t grid = 132;
    std::vector<int32_t> offsets;
    ggemm_test::Rng rng(5);
    int32_t end = 0;
    for (int32_t g = 0; g < experts; ++g) {
        const int64_t segments = g % 37 == 5 ? 60 : (g % 11 == 2 ? 12 : rng.between(2, 5));
        end += static_cast<int32_t>(256 * segments);
        offsets.push_back(end);
    }
    const int64_t m = end;
    ggemm::ExpertRowCursor cursor(offsets.data(), m);
    std::vector<double> in_expert_order;
    for (int32_t g = 0; g < experts; ++g) {
        const ggemm::WgradExpert rows = cursor.rows(g);
        in_expert_order.push_back(static_cast<double>(rows.row_end - rows.row_begin) / 64 + 2);
    }
    std::vector<double> in_sorted_order;
    for (uint16_t entry : order_by_rule(offsets, m)) {
        const ggemm::WgradExpert rows = ggemm::wgrad_order_rows(entry, offsets.data());
        in_sorted_order.push_back(static_cast<double>(rows.row_end - rows.row_begin) / 64 + 2);
    }
    double total = 0;
    for (double cost : in_expert_order) total += cost * static_cast<double>(per);
    const double ideal = total / grid;
    const auto busiest = [](const std::vector<double>& load) { return *std::max_element(load.begin(), load.end()); };
    const double round_robin = busiest(cta_loads(in_expert_order, per, grid, [&](int64_t step, int32_t cta) {
        return step * grid + cta;
    }));
    const double sorted_deal = busiest(cta_loads(in_sorted_order, per, grid, [&](int64_t step, int32_t cta) {
        return ggemm::wgrad_static_item(step, cta, grid);
    }));
    CAPTURE(round_robin / ideal);
    CAPTURE(sorted_deal / ideal);
    CHECK(round_robin / ideal > 1.2);
    CHECK(sorted_deal / ideal < 1.12);
}

TEST_CASE("wgrad static deal: experts sorted where each has fewer tiles than the grid has CTAs") {
    // qwen3_fc2's weight gradient (P = 2048, Q = 768, 128 x 256 tiles): 48 tiles per expert.
    const ggemm::WgradTiles qwen3 = ggemm::wgrad_tiles(128, 2048, 768, 128, 256);
    CHECK(qwen3.per_expert() == 48);
    CHECK(ggemm::wgrad_sorts_experts(qwen3, 132));
    CHECK(ggemm::wgrad_sorts_experts(qwen3, 49));
    CHECK_FALSE(ggemm::wgrad_sorts_experts(qwen3, 48));
    // mixtral_fc1's (P = 28672, Q = 4096): 896 tiles per expert, more than any grid.
    CHECK_FALSE(ggemm::wgrad_sorts_experts(ggemm::wgrad_tiles(8, 28672, 4096, 128, 256), 132));
}

TEST_CASE("wgrad tiles: every (expert, P block, Q block) once, expert-major, P block fastest") {
    const ggemm::WgradTiles tiles = ggemm::wgrad_tiles(3, 264, 392, 128, 256);
    CHECK(tiles.p_blocks == 3);
    CHECK(tiles.q_blocks == 2);
    CHECK(tiles.count() == 18);
    std::set<std::tuple<int, int, int>> seen;
    int previous_expert = 0;
    for (int64_t i = 0; i < tiles.count(); ++i) {
        const ggemm::WgradTilePosition t = tiles.at(i);
        CHECK(t.expert >= previous_expert);
        previous_expert = t.expert;
        CHECK(t.p_begin % 128 == 0);
        CHECK(t.p_begin < 264);
        CHECK(t.q_begin % 256 == 0);
        CHECK(t.q_begin < 392);
        seen.insert({t.expert, t.p_begin, t.q_begin});
    }
    CHECK(seen.size() == 18);
    CHECK(tiles.at(1).p_begin == 128);
    CHECK(tiles.at(1).q_begin == 0);
    CHECK(tiles.at(3).p_begin == 0);
    CHECK(tiles.at(3).q_begin == 256);
    CHECK(tiles.at(6).expert == 1);
    CHECK(tiles.at(18).expert == -1);
    CHECK(tiles.at(-1).expert == -1);
    // Large shapes: the index arithmetic is 64-bit.
    const ggemm::WgradTiles big = ggemm::wgrad_tiles(1024, 2147483392, 2147483392, 128, 256);
    CHECK(big.p_blocks == 16777214);  // (2^31 - 256) / 128
    CHECK(big.q_blocks == 8388607);   // (2^31 - 256) / 256
    CHECK(big.count() == int64_t{1024} * 16777214 * 8388607);
    const ggemm::WgradTilePosition last = big.at(big.count() - 1);
    CHECK(last.expert == 1023);
    CHECK(last.p_begin == 2147483392 - 128);
    CHECK(last.q_begin == 2147483392 - 256);
}

TEST_CASE("wgrad expert cursor: the contract's rule on random and adversarial offsets") {
    ggemm_test::Rng rng(2024);
    for (int trial = 0; trial < 3000; ++trial) {
        const int32_t experts = static_cast<int32_t>(rng.between(1, 12));
        const int64_t m = 256 * rng.between(0, 10);
        const std::vector<int32_t> offsets = adversarial_offsets(rng, experts, m, 3, 10, 12);
        ggemm::ExpertRowCursor cursor(offsets.data(), m);
        std::vector<bool> row_taken(static_cast<size_t>(m), false);
        for (int32_t g = 0; g < experts; ++g) {
            CAPTURE(trial);
            CAPTURE(g);
            const ggemm::WgradExpert rows = cursor.rows(g);
            const bool expected = usable_by_rule(offsets, g, m);
            REQUIRE(rows.usable == expected);
            if (!expected) {
                CHECK(rows.row_begin == rows.row_end);
                continue;
            }
            CHECK(rows.row_begin == (g == 0 ? 0 : offsets[static_cast<size_t>(g - 1)]));
            CHECK(rows.row_end == offsets[static_cast<size_t>(g)]);
            // No row is summed by two experts, whatever the offsets.
            for (int64_t r = rows.row_begin; r < rows.row_end; ++r) {
                REQUIRE_FALSE(row_taken[static_cast<size_t>(r)]);
                row_taken[static_cast<size_t>(r)] = true;
            }
        }
    }
}

TEST_CASE("wgrad cursor: skipping experts (a CTA's tiles jump ahead) gives the same rows") {
    const std::vector<int32_t> offsets = {256, 1024, 512, 768, 1280, 1280, 1536};
    const int64_t m = 1536;
    ggemm::ExpertRowCursor every(offsets.data(), m);
    std::vector<ggemm::WgradExpert> all;
    for (int32_t g = 0; g < 7; ++g) all.push_back(every.rows(g));
    CHECK(all[2].usable == false);  // begin 1024 > end 512
    CHECK(all[3].usable == false);  // begin 512 below the earlier 1024
    CHECK(all[4].usable == false);  // begin 768 below the earlier 1024
    CHECK(all[5].usable == true);   // 1280..1280: empty
    CHECK(all[6].row_begin == 1280);
    for (int32_t stride = 2; stride <= 7; ++stride) {
        ggemm::ExpertRowCursor jumping(offsets.data(), m);
        for (int32_t g = 1; g < 7; g += stride) {
            const ggemm::WgradExpert rows = jumping.rows(g);
            CHECK(rows.usable == all[static_cast<size_t>(g)].usable);
            CHECK(rows.row_begin == all[static_cast<size_t>(g)].row_begin);
            CHECK(rows.row_end == all[static_cast<size_t>(g)].row_end);
        }
    }
}

TEST_CASE("wgrad tile action and output pointer status") {
    using ggemm::WgradAction;
    CHECK(ggemm::wgrad_action(true, 256, true, false) == WgradAction::kSum);
    CHECK(ggemm::wgrad_action(true, 256, true, true) == WgradAction::kSum);
    CHECK(ggemm::wgrad_action(true, 0, true, false) == WgradAction::kZeros);  // overwrite: zeros
    CHECK(ggemm::wgrad_action(true, 0, true, true) == WgradAction::kSkip);    // accumulate: untouched
    CHECK(ggemm::wgrad_action(false, 0, true, false) == WgradAction::kSkip);  // bad offsets: untouched
    CHECK(ggemm::wgrad_action(true, 256, false, false) == WgradAction::kSkip);  // bad pointer
    CHECK(ggemm::output_pointer_status(0) == GGEMM_DEVICE_STATUS_OUTPUT_PTR_NULL);
    CHECK(ggemm::output_pointer_status(0x1008) == GGEMM_DEVICE_STATUS_OUTPUT_PTR_MISALIGNED);
    CHECK(ggemm::output_pointer_status(0x1010) == 0);
}

namespace {

// The byte address TMA writes element (column c, row r) of a 64 x 64 bf16 box to, with the
// 128-byte swizzle (CU_TENSOR_MAP_SWIZZLE_128B): row r is the 128-byte line r, whose 16-byte
// chunks are permuted by XOR with r % 8.
uint32_t tma_box_address(uint32_t box_base, int column, int row) {
    const uint32_t byte = static_cast<uint32_t>(column) * 2;
    return box_base + static_cast<uint32_t>(row) * 128 + (((byte / 16) ^ static_cast<uint32_t>(row % 8)) * 16) +
           byte % 16;
}

// The address wgmma reads element (mn, k) of one k16 slice from, for an MN-major operand in the
// 128-byte swizzle, decoded from the descriptor alone (PTX ISA, matrix descriptor: start address
// bits 0-13, leading byte offset 16-29, stride byte offset 32-45, all >> 4; swizzle mode 62-63).
// The canonical layout ((8 elements x 8 chunks, n), (8, 2)) : ((1, LBO), (128 B, SBO)), then the
// 128-byte swizzle: address bits 4-6 XOR bits 7-9.
uint32_t wgmma_mn_major_address(uint64_t desc, int mn, int k) {
    const uint32_t start = static_cast<uint32_t>(desc & 0x3FFF) << 4;
    const uint32_t leading = static_cast<uint32_t>((desc >> 16) & 0x3FFF) << 4;
    const uint32_t stride = static_cast<uint32_t>((desc >> 32) & 0x3FFF) << 4;
    REQUIRE((desc >> 62) == 1);  // 128-byte swizzle
    const uint32_t linear = start + static_cast<uint32_t>(mn % 64) * 2 + static_cast<uint32_t>(mn / 64) * leading +
                            static_cast<uint32_t>(k % 8) * 128 + static_cast<uint32_t>(k / 8) * stride;
    return linear ^ (((linear >> 7) & 7u) << 4);
}

}  // namespace

TEST_CASE("wgrad MN-major descriptors read what TMA wrote: every element of every k16 slice") {
    // One stage as the kernel lays it out: boxes of 64 columns x 64 rows, 8 KB each, back to back,
    // the first at a 1024-byte-aligned address.
    const uint32_t operand_base = 0x4400;  // 1024-aligned, as in shared memory
    for (int width : {64, 128, 256}) {     // A: 64 per warpgroup; B: the tile's Q
        for (int k = 0; k < 4; ++k) {
            const uint64_t desc = ggemm::sm90::wgrad_operand_desc(operand_base, k);
            for (int mn = 0; mn < width; ++mn) {
                for (int kk = 0; kk < 16; ++kk) {
                    const int row = 16 * k + kk;  // the GEMM's K is the row index r
                    const uint32_t box = operand_base + static_cast<uint32_t>(mn / 64) * 8192;
                    const uint32_t wrote = tma_box_address(box, mn % 64, row);
                    const uint32_t reads = wgmma_mn_major_address(desc, mn, kk);
                    if (wrote != reads) {
                        FAIL_CHECK("width " << width << " k16 slice " << k << " element (mn " << mn << ", k " << kk
                                            << "): TMA wrote 0x" << std::hex << wrote << ", wgmma reads 0x" << reads);
                        return;
                    }
                }
            }
        }
    }
}

TEST_CASE("wgrad descriptor bits, field by field") {
    const uint64_t desc = ggemm::sm90::wgrad_operand_desc(0x8000, 3);
    CHECK((desc & 0x3FFF) == (0x8000 + 3 * 2048) >> 4);  // start: the slice's first row
    CHECK(((desc >> 16) & 0x3FFF) == 8192 >> 4);         // LBO: the next 64 columns (next box)
    CHECK(((desc >> 32) & 0x3FFF) == 1024 >> 4);         // SBO: the next 8 rows
    CHECK(((desc >> 49) & 0x7) == 0);                    // base offset: 1024-aligned boxes
    CHECK((desc >> 62) == 1);                            // 128-byte swizzle
    CHECK(((desc >> 14) & 0x3) == 0);
    CHECK(((desc >> 30) & 0x3) == 0);
    CHECK(((desc >> 46) & 0x7) == 0);
    CHECK(((desc >> 52) & 0x3FF) == 0);
}

TEST_CASE("wgrad descriptors: slice 0's stepped by one add equal each slice's, at every stage address") {
    for (uint32_t base = 0; base + 1024 <= 227u * 1024; base += 1024) {
        const uint64_t first = ggemm::sm90::wgrad_operand_desc(base, 0);
        for (int k = 0; k < 4; ++k) {
            CHECK(ggemm::ptx::wgmma_desc_advance(first, k * ggemm::sm90::kWgradK16Bytes) ==
                  ggemm::sm90::wgrad_operand_desc(base, k));
        }
    }
}
