// Fuzz target: the kernels' tile scheduler (kernels/common/scheduler.h and tail_split.h, the
// code the kernels compile) replayed on the host with hostile offsets and weight pointers, over
// a persistent grid walked statically (CTA c takes items c, c + grid, ...) and dynamically (CTAs
// claim items from one counter in an order the input picks). Checks, for every tile handed out:
//   - it lies inside its expert's computed rows, inside [0, M) and inside the tile columns;
//   - no output cell (128 rows x 64 columns) is claimed twice;
// and at the end that every computable expert is covered exactly once. Which experts are
// computable is worked out here from the rule include/ggemm.h states, not from the scheduler.
// A violation prints the case and aborts (a crash to libFuzzer, a failure to the replay).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "tests/fuzz/fuzz_input.h"
#include "kernels/common/scheduler.h"
#include "kernels/common/tail_split.h"

namespace {

using ggemm_fuzz::FuzzInput;

constexpr int32_t kCellRows = 128;    // the smallest tile_m
constexpr int32_t kCellColumns = 64;  // the narrowest piece (tail_split.h kPieceColumns)
constexpr int64_t kMaxClaims = int64_t{1} << 22;

struct Case {
    int64_t m;
    int32_t n;
    int32_t num_experts;
    std::vector<int32_t> offsets;
    bool discrete;
    std::vector<uint64_t> b_ptrs;
    std::vector<uint32_t> weight_status;  // what the map builder records from b_ptrs
    int32_t grid;
    int32_t group_m;
    int32_t max_pieces;
    bool dynamic;
};

[[noreturn]] void violation(const Case& c, const char* what, int64_t a, int64_t b) {
    std::fprintf(stderr, "scheduler violation: %s (%lld, %lld)\n  M = %lld, N = %d, L = %d, grid = %d, group_m = %d, "
                         "max_pieces = %d, %s walk, %s weights\n  offsets:",
                 what, static_cast<long long>(a), static_cast<long long>(b), static_cast<long long>(c.m), c.n,
                 c.num_experts, c.grid, c.group_m, c.max_pieces, c.dynamic ? "dynamic" : "static",
                 c.discrete ? "discrete" : "dense");
    for (int32_t v : c.offsets) std::fprintf(stderr, " %d", v);
    if (c.discrete) {
        std::fprintf(stderr, "\n  b_ptrs:");
        for (uint64_t p : c.b_ptrs) std::fprintf(stderr, " 0x%llx", static_cast<unsigned long long>(p));
    }
    std::fprintf(stderr, "\n");
    std::abort();
}

// The scheduler as the kernels construct it: in discrete mode it decides from the status words
// the map builder records from its one read of b_ptrs (nullptr in dense mode).
template <int kTileM, int kTileN>
ggemm::GroupedTileScheduler<kTileM, kTileN> make_scheduler(const Case& c) {
    return ggemm::GroupedTileScheduler<kTileM, kTileN>(c.offsets.data(), c.discrete ? c.weight_status.data() : nullptr,
                                                       c.m, c.num_experts, c.n, c.group_m);
}

// The computed rows of each expert by include/ggemm.h's rule: begin and end offsets >= 0,
// multiples of 256 and <= M, end >= begin, begin not below any earlier such offset; in
// discrete mode also a non-null, 16-byte aligned weight pointer. Empty when skipped.
struct Rows {
    int64_t begin = 0, end = 0;
};

std::vector<Rows> computable_rows(const Case& c) {
    const auto usable = [&](int64_t v) { return v >= 0 && v % 256 == 0 && v <= c.m; };
    std::vector<Rows> rows(c.num_experts);
    int64_t highest_earlier = 0;  // the largest usable offset among offsets[0, g - 1)
    for (int32_t g = 0; g < c.num_experts; ++g) {
        if (g >= 2 && usable(c.offsets[g - 2]) && c.offsets[g - 2] > highest_earlier) highest_earlier = c.offsets[g - 2];
        const int64_t begin = g == 0 ? 0 : c.offsets[g - 1];
        const int64_t end = c.offsets[g];
        bool computed = usable(begin) && usable(end) && end >= begin && begin >= highest_earlier;
        if (c.discrete) computed = computed && c.b_ptrs[g] != 0 && c.b_ptrs[g] % 16 == 0;
        if (computed) rows[g] = {begin, end};
    }
    return rows;
}

template <int kTileM, int kTileN>
void replay(const Case& c) {
    const std::vector<Rows> rows = computable_rows(c);
    const int32_t n_blocks = (c.n + kTileN - 1) / kTileN;
    const int32_t column_cells = (c.n + kCellColumns - 1) / kCellColumns;
    const int64_t row_cells = c.m / kCellRows;
    std::vector<int32_t> owner(static_cast<std::size_t>(row_cells * column_cells), -1);
    int64_t claimed_cells = 0;

    // The host's split of the last round (src/execute.cpp make_kernel_args).
    const int64_t tiles = c.m / kTileM * n_blocks;
    const ggemm::TailSplit tail = ggemm::choose_tail_split(tiles, c.grid, kTileN, c.max_pieces);

    const auto record = [&](const ggemm::TileCoord& t) {
        if (t.expert >= c.num_experts) violation(c, "expert out of range", t.expert, c.num_experts);
        const Rows r = rows[t.expert];
        if (r.end == r.begin) violation(c, "tile of an expert that must be skipped", t.expert, t.row_begin);
        if (t.row_begin < r.begin || t.row_begin + kTileM > r.end)
            violation(c, "tile rows outside the expert's rows", t.row_begin, t.expert);
        if (t.row_begin < 0 || t.row_begin + kTileM > c.m) violation(c, "tile rows outside [0, M)", t.row_begin, c.m);
        if (t.n_begin < 0 || t.n_width <= 0 || t.n_begin % kCellColumns != 0 || t.n_width % kCellColumns != 0 ||
            t.n_begin + t.n_width > n_blocks * kTileN)
            violation(c, "tile columns malformed", t.n_begin, t.n_width);
        if (t.n_begin >= c.n) return;  // a piece wholly past N: the kernel skips it
        for (int64_t row = t.row_begin; row < t.row_begin + kTileM; row += kCellRows) {
            for (int32_t col = t.n_begin; col < t.n_begin + t.n_width && col < c.n; col += kCellColumns) {
                int32_t& cell = owner[static_cast<std::size_t>(row / kCellRows * column_cells + col / kCellColumns)];
                if (cell >= 0) violation(c, "output cell claimed twice (row, column)", row, col);
                cell = t.expert;
                ++claimed_cells;
            }
        }
    };

    int64_t claims = 0;
    if (!c.dynamic) {
        for (int32_t cta = 0; cta < c.grid; ++cta) {
            auto schedule = make_scheduler<kTileM, kTileN>(c);
            for (int64_t item = cta;; item += c.grid) {
                if (++claims > kMaxClaims) violation(c, "static walk does not end", cta, item);
                const ggemm::TileCoord t = schedule.item(item, tail);
                if (t.expert < 0) break;
                record(t);
            }
        }
    } else {
        std::vector<ggemm::GroupedTileScheduler<kTileM, kTileN>> ctas;
        for (int32_t cta = 0; cta < c.grid; ++cta) ctas.push_back(make_scheduler<kTileM, kTileN>(c));
        std::vector<int32_t> running(c.grid);
        for (int32_t cta = 0; cta < c.grid; ++cta) running[cta] = cta;
        // The claim order: a fixed stride through the running CTAs, from the case's seed.
        uint64_t order = static_cast<uint64_t>(c.offsets[0]) * 2654435761u + static_cast<uint64_t>(c.grid);
        for (int64_t counter = 0; !running.empty(); ++counter) {
            if (++claims > kMaxClaims) violation(c, "dynamic walk does not end", counter, running.size());
            order = order * 6364136223846793005ull + 1442695040888963407ull;
            const std::size_t pick = static_cast<std::size_t>((order >> 33) % running.size());
            const ggemm::TileCoord t = ctas[running[pick]].item(counter, tail);
            if (t.expert < 0) {
                running[pick] = running.back();
                running.pop_back();
                continue;
            }
            record(t);
        }
    }

    // Every computable expert covered: each of its cells claimed, by it.
    int64_t expected_cells = 0;
    for (int32_t g = 0; g < c.num_experts; ++g) {
        for (int64_t row = rows[g].begin; row < rows[g].end; row += kCellRows) {
            for (int32_t col = 0; col < column_cells; ++col) {
                ++expected_cells;
                if (owner[static_cast<std::size_t>(row / kCellRows * column_cells + col)] != g)
                    violation(c, "cell of a computable expert not covered by it (row, expert)", row, g);
            }
        }
    }
    if (claimed_cells != expected_cells) violation(c, "cells claimed beyond the computable experts", claimed_cells, expected_cells);
}

// A hostile offset: mostly plausible steps so that deep experts get reached, then every way an
// offset can be wrong.
int32_t next_offset(FuzzInput& in, int32_t previous, int64_t m) {
    const uint8_t choice = in.take<uint8_t>();
    const int64_t last = previous;  // in 64 bits: steps from near INT32_MAX must not overflow here
    const int64_t step = (choice >> 3) % 4 * 256;
    int64_t offset;
    switch (choice % 8) {
        case 0: case 1: case 2: case 3: offset = last + step; break;           // in order
        case 4: return in.take<int32_t>();                                      // anything
        case 5: offset = m + 256 * (choice >> 6); break;                        // M, or past it
        case 6: offset = last - 256 - step; break;                              // decreasing
        default: offset = last + 1 + (choice >> 3); break;                      // misaligned
    }
    return static_cast<int32_t>(static_cast<uint32_t>(offset));  // wraps like an int32 array would
}

uint64_t next_pointer(FuzzInput& in, int32_t expert) {
    const uint8_t choice = in.take<uint8_t>();
    const uint64_t good = (static_cast<uint64_t>(expert) + 1) << 20;
    switch (choice % 6) {
        case 0: return 0;
        case 1: return good + 8;
        case 2: return in.take<uint64_t>();
        default: return good;
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
    FuzzInput in(data, size);
    Case c;
    const uint32_t shape = in.below(4);
    c.m = int64_t{in.below(33)} * 256;
    c.n = static_cast<int32_t>(in.below(1024) + 1) * 8;
    c.num_experts = static_cast<int32_t>(in.below(64) + 1);
    c.discrete = in.flip();
    c.grid = static_cast<int32_t>(in.below(300) + 1);
    const int32_t group_choices[] = {16, 2, 4, 6};
    c.group_m = group_choices[in.below(4)];
    c.max_pieces = static_cast<int32_t>(in.below(5));
    c.dynamic = in.flip();
    int32_t previous = 0;
    for (int32_t g = 0; g < c.num_experts; ++g) {
        previous = next_offset(in, previous, c.m);
        c.offsets.push_back(previous);
    }
    for (int32_t g = 0; c.discrete && g < c.num_experts; ++g) {
        c.b_ptrs.push_back(next_pointer(in, g));
        c.weight_status.push_back(ggemm::weight_pointer_status(c.b_ptrs.back()));
    }
    // The tile shapes of the SM90 and SM100 variants.
    switch (shape) {
        case 0: replay<128, 256>(c); break;
        case 1: replay<128, 128>(c); break;
        case 2: replay<256, 256>(c); break;
        default: replay<128, 192>(c); break;
    }
    return 0;
}
