// The MoE benchmark suite (bench/moe_shapes.json): one case per layer shape and routing.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ggemm_bench {

struct MoeCase {
    std::string name;
    int32_t experts = 0;
    int64_t n = 0;
    int64_t k = 0;
    std::vector<int64_t> rows;            // tokens per expert before padding
    std::vector<int32_t> padded_offsets;  // cumulative ends, each a multiple of 256

    // Rows of the problem: padded_offsets[-1] (padding rows are computed, so they count).
    int64_t m() const { return padded_offsets.empty() ? 0 : padded_offsets.back(); }
    // 2*M*N*K over padded rows, the suite's definition.
    double flops() const { return 2.0 * double(m()) * double(n) * double(k); }
    // Experts that own at least one row: only their weights are read.
    int32_t active_experts() const;
};

// Reads and checks the suite; throws std::runtime_error naming the file, case and field.
std::vector<MoeCase> load_suite(const std::string& path);

}  // namespace ggemm_bench
