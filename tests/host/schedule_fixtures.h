// Inputs the scheduler tests share: valid random offsets, and a dynamic claim order.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace ggemm_fixtures {

// num_experts cumulative ends, each expert 0..4 segments of 256 rows (so some are empty).
inline std::vector<int32_t> random_offsets(std::mt19937& rng, int num_experts) {
    std::vector<int32_t> offsets;
    int64_t end = 0;
    for (int g = 0; g < num_experts; ++g) {
        end += 256 * static_cast<int64_t>(rng() % 5);
        offsets.push_back(static_cast<int32_t>(end));
    }
    return offsets;
}

// What a shared counter hands out: indices [0, count) dealt at random to `claimers`, each of
// which sees its own indices in increasing order.
inline std::vector<std::vector<int64_t>> dynamic_claims(std::mt19937& rng, int claimers, int64_t count) {
    std::vector<std::vector<int64_t>> claimed(static_cast<size_t>(claimers));
    for (int64_t index = 0; index < count; ++index) claimed[rng() % claimers].push_back(index);
    return claimed;
}

}  // namespace ggemm_fixtures
