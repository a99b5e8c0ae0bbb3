// The epilogue, bit for bit. With A and B on a coarse grid (multiples of 1/8 in [-2, 2]) every
// product and every partial sum is exact in fp32, so acc is exact whatever order the kernel sums
// in, and the contract then fixes every output bit: fma(acc, alpha, fp32(prob*bias)) with bias,
// acc*alpha then *prob (from fp32, not from the rounded C) without, each rounded to nearest even
// into its dtype. Tolerances cannot see a wrong rounding order; this test can.
#include <doctest/doctest.h>

#include <cstring>
#include <sstream>

#include "tests/gpu/runner.h"

using namespace ggemm_test;

namespace {

// Elements of the reference rows whose bits differ; describes the first in *first.
int64_t count_bit_mismatches(const std::vector<uint8_t>& got, const Result& reference, bool is_c, int64_t n,
                             std::string* first) {
    const std::vector<uint8_t>& expected = is_c ? reference.c : reference.d;
    const int32_t dtype = is_c ? reference.c_dtype : reference.d_dtype;
    const std::size_t element = dtype_size(dtype);
    int64_t mismatches = 0;
    for (std::size_t i = 0; i < reference.rows.size(); ++i) {
        for (int64_t col = 0; col < n; ++col) {
            const std::size_t got_index = static_cast<std::size_t>(reference.rows[i] * n + col);
            const std::size_t ref_index = i * static_cast<std::size_t>(n) + static_cast<std::size_t>(col);
            if (std::memcmp(got.data() + got_index * element, expected.data() + ref_index * element, element) == 0) {
                continue;
            }
            if (mismatches++ == 0) {
                std::ostringstream text;
                text << (is_c ? "C" : "D") << " row " << reference.rows[i] << " col " << col << ": got "
                     << load_element(got.data(), got_index, dtype) << ", contract says "
                     << load_element(expected.data(), ref_index, dtype);
                *first = text.str();
            }
        }
    }
    return mismatches;
}

}  // namespace

TEST_CASE("epilogue: exact bits when the accumulator is exact, every C/D dtype pair and bias dtype") {
    const int32_t dtypes[] = {GGEMM_DTYPE_BF16, GGEMM_DTYPE_FP16, GGEMM_DTYPE_FP32};
    const int32_t bias_dtypes[] = {GGEMM_DTYPE_NONE, GGEMM_DTYPE_BF16, GGEMM_DTYPE_FP16, GGEMM_DTYPE_FP32};
    Stream stream;
    uint64_t seed = 12000;
    for (int32_t bias_dtype : bias_dtypes) {
        for (int32_t c_dtype : dtypes) {
            for (int32_t d_dtype : dtypes) {
                CaseConfig config;
                config.label = "exact epilogue";
                config.num_experts = 3;
                config.max_tokens = 500;
                config.n = 136;
                config.k = 72;  // |acc| <= 72 * 4, a multiple of 1/64: 15 significant bits at most
                config.c_dtype = c_dtype;
                config.d_dtype = d_dtype;
                config.bias_dtype = bias_dtype;
                config.generate_c = true;
                config.scheduler = (seed & 1) ? GGEMM_SCHEDULER_DYNAMIC : GGEMM_SCHEDULER_STATIC;
                config.seed = ++seed;
                HostCase host_case = make_case(config);
                Rng rng(mix_seed(seed, 99));
                for (auto& value : host_case.a) value = float_to_bf16(static_cast<float>(rng.between(-16, 16)) / 8.0f);
                for (auto& value : host_case.b) value = float_to_bf16(static_cast<float>(rng.between(-16, 16)) / 8.0f);
                const Problem problem = host_case.problem();
                const Result reference = compute_reference(problem);
                CaseBuffers buffers(host_case, true, false);
                const DeviceOutputs outputs = run_once(host_case, buffers, GGEMM_WEIGHTS_DENSE, config.scheduler, stream);
                const std::string what = describe(config);
                std::string summary;
                verify_run(what, host_case, problem, reference, outputs, 0, 0, &summary);
                std::string first_c, first_d;
                const int64_t c_mismatches = count_bit_mismatches(outputs.c, reference, true, config.n, &first_c);
                const int64_t d_mismatches = count_bit_mismatches(outputs.d, reference, false, config.n, &first_d);
                const int64_t elements = static_cast<int64_t>(reference.rows.size()) * config.n;
                CHECK_MESSAGE(c_mismatches == 0, what << ": " << c_mismatches << " of " << elements
                                                      << " C elements differ from the contract's bits; first: " << first_c);
                CHECK_MESSAGE(d_mismatches == 0, what << ": " << d_mismatches << " of " << elements
                                                      << " D elements differ from the contract's bits; first: " << first_d);
                MESSAGE(what << ": " << elements << " elements of C and D bit-exact: "
                             << std::string(c_mismatches == 0 && d_mismatches == 0 ? "yes" : "NO"));
            }
        }
    }
}
