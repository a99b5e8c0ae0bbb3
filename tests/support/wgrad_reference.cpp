// The weight gradient's reference: the contract's expert rule and an fp64 sum.
#include "tests/support/wgrad_reference.h"

#include <algorithm>
#include <thread>

#include "tests/support/reference.h"

namespace ggemm_test {

namespace {

bool offset_ok(int64_t value, int64_t m) { return value >= 0 && value % 256 == 0 && value <= m; }

}  // namespace

std::vector<WgradExpert> wgrad_experts(const std::vector<int32_t>& offsets, int64_t m, bool accumulate,
                                       const std::vector<bool>* output_ok) {
    std::vector<WgradExpert> experts;
    for (std::size_t g = 0; g < offsets.size(); ++g) {
        const int64_t begin = g == 0 ? 0 : offsets[g - 1];
        const int64_t end = offsets[g];
        bool usable = offset_ok(begin, m) && offset_ok(end, m) && end >= begin;
        // No usable offset before the begin offset may lie above it (rows are never summed twice).
        for (std::size_t e = 0; e + 1 < g && usable; ++e)
            if (offset_ok(offsets[e], m) && offsets[e] > begin) usable = false;
        if (output_ok != nullptr && !(*output_ok)[g]) usable = false;
        if (!usable) {
            experts.push_back({WgradExpertState::kUntouched, 0, 0});
        } else if (end > begin) {
            experts.push_back({WgradExpertState::kSum, begin, end});
        } else {
            experts.push_back({accumulate ? WgradExpertState::kUntouched : WgradExpertState::kZeros, begin, end});
        }
    }
    return experts;
}

std::vector<double> wgrad_reference(const uint16_t* x1, const uint16_t* x2, int64_t p, int64_t q, int64_t begin,
                                    int64_t end, double alpha, int threads) {
    std::vector<double> out(static_cast<std::size_t>(p * q), 0.0);
    if (threads <= 0) threads = default_threads();
    threads = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(threads, p)));
    // Each thread owns a band of P rows of the result: W[i, :] += X1[r, i] * X2[r, :] over r.
    const auto band = [&](int64_t p_lo, int64_t p_hi) {
        std::vector<double> x2_row(static_cast<std::size_t>(q));
        for (int64_t r = begin; r < end; ++r) {
            for (int64_t j = 0; j < q; ++j) x2_row[static_cast<std::size_t>(j)] = bf16_to_float(x2[r * q + j]);
            for (int64_t i = p_lo; i < p_hi; ++i) {
                const double a = bf16_to_float(x1[r * p + i]);
                double* row = out.data() + i * q;
                for (int64_t j = 0; j < q; ++j) row[j] += a * x2_row[static_cast<std::size_t>(j)];
            }
        }
        for (int64_t i = p_lo * q; i < p_hi * q; ++i) out[static_cast<std::size_t>(i)] *= alpha;
    };
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
        const int64_t lo = p * t / threads, hi = p * (t + 1) / threads;
        pool.emplace_back(band, lo, hi);
    }
    for (std::thread& thread : pool) thread.join();
    return out;
}

}  // namespace ggemm_test
