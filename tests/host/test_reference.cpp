// The host reference against hand-computed bits: conversions, the epilogue's rounding order, the
// fma, every C/D dtype and bias dtype, empty experts, rows past the last offset, bad offsets.
// Bit patterns are written out with the arithmetic that produces them.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "ggemm.h"
#include "tests/support/reference.h"
// The host half of the GPU test helpers (the output check), without its CUDA half.
#define GGEMM_TEST_HOST_ONLY 1
#include "tests/support/gpu_util.h"

using namespace ggemm_test;

namespace {

// bf16 bit patterns used below.
constexpr uint16_t kBF16One = 0x3F80;         // 1
constexpr uint16_t kBF16MinusOne = 0xBF80;    // -1
constexpr uint16_t kBF16TwoPowM8 = 0x3B80;    // 2^-8  (exponent 127-8 = 119 = 0x77)
constexpr uint16_t kBF16TwoPowM12 = 0x3980;   // 2^-12 (exponent 115 = 0x73)

const int32_t kOutputDTypes[] = {kDTypeBF16, kDTypeFP16, kDTypeFP32};
const int32_t kBiasDTypes[] = {kDTypeBF16, kDTypeFP16, kDTypeFP32};

// A small problem, all inputs zero except what a test sets; alpha and prob default to 1.
struct TinyProblem {
    int64_t m, n, k;
    int32_t experts;
    std::vector<uint16_t> a, b;
    std::vector<int32_t> offsets;
    std::vector<float> alpha, prob;
    std::vector<uint8_t> bias;
    int32_t bias_dtype = kDTypeNone;
    int32_t c_dtype = kDTypeBF16, d_dtype = kDTypeBF16;

    TinyProblem(int64_t m_, std::vector<int32_t> offsets_, int64_t n_ = 8, int64_t k_ = 8)
        : m(m_), n(n_), k(k_), experts(static_cast<int32_t>(offsets_.size())),
          a(static_cast<std::size_t>(m_ * k_), 0), b(static_cast<std::size_t>(offsets_.size() * n_ * k_), 0),
          offsets(std::move(offsets_)), alpha(offsets.size(), 1.0f), prob(static_cast<std::size_t>(m_), 1.0f) {}

    uint16_t& a_at(int64_t row, int64_t col) { return a[static_cast<std::size_t>(row * k + col)]; }
    uint16_t& b_at(int32_t expert, int64_t row, int64_t col) {
        return b[static_cast<std::size_t>((expert * n + row) * k + col)];
    }
    // Bias with raw bits per element; elements not set are zero in every dtype.
    void use_bias(int32_t dtype) {
        bias_dtype = dtype;
        bias.assign(static_cast<std::size_t>(experts * n) * dtype_size(dtype), 0);
    }
    void set_bias_bits(int32_t expert, int64_t col, uint32_t bits) {
        const std::size_t index = static_cast<std::size_t>(expert * n + col);
        if (dtype_size(bias_dtype) == 2) {
            const uint16_t half = static_cast<uint16_t>(bits);
            std::memcpy(bias.data() + index * 2, &half, 2);
        } else {
            std::memcpy(bias.data() + index * 4, &bits, 4);
        }
    }
    Problem view() const {
        Problem p;
        p.m = m;
        p.n = n;
        p.k = k;
        p.num_experts = experts;
        p.a = a.data();
        p.b = b.data();
        p.padded_offsets = offsets.data();
        p.alpha = alpha.data();
        p.prob = prob.data();
        p.bias = bias_dtype == kDTypeNone ? nullptr : bias.data();
        p.bias_dtype = bias_dtype;
        p.c_dtype = c_dtype;
        p.d_dtype = d_dtype;
        return p;
    }
};

// Raw bits of element (row_index, col) of a result matrix.
uint32_t result_bits(const std::vector<uint8_t>& matrix, int32_t dtype, int64_t n, std::size_t row_index, int64_t col) {
    const std::size_t index = row_index * static_cast<std::size_t>(n) + static_cast<std::size_t>(col);
    if (dtype_size(dtype) == 2) {
        uint16_t bits;
        std::memcpy(&bits, matrix.data() + index * 2, 2);
        return bits;
    }
    uint32_t bits;
    std::memcpy(&bits, matrix.data() + index * 4, 4);
    return bits;
}

std::size_t row_index_of(const Result& result, int64_t row) {
    for (std::size_t i = 0; i < result.rows.size(); ++i) {
        if (result.rows[i] == row) return i;
    }
    FAIL("row " << row << " is not in the reference result");
    return 0;
}

}  // namespace

TEST_CASE("reference: status bits are the header's GGEMM_DEVICE_STATUS_OFFSET_* values") {
    const int32_t negative[] = {-256};
    const int32_t misaligned[] = {8};
    const int32_t past_m[] = {512};
    const int32_t decreasing[] = {512, 256};
    CHECK(offset_violations(negative, 1, 256) == GGEMM_DEVICE_STATUS_OFFSET_NEGATIVE);
    CHECK(offset_violations(misaligned, 1, 256) == GGEMM_DEVICE_STATUS_OFFSET_MISALIGNED);
    CHECK(offset_violations(past_m, 1, 256) == GGEMM_DEVICE_STATUS_OFFSET_PAST_M);
    CHECK(offset_violations(decreasing, 2, 512) == GGEMM_DEVICE_STATUS_OFFSET_DECREASING);
    CHECK(kDTypeBF16 == GGEMM_DTYPE_BF16);
    CHECK(kDTypeFP16 == GGEMM_DTYPE_FP16);
    CHECK(kDTypeFP32 == GGEMM_DTYPE_FP32);
    CHECK(kDTypeNone == GGEMM_DTYPE_NONE);
}

TEST_CASE("reference: float -> bf16 rounds to nearest even, keeps subnormals, overflows to inf") {
    CHECK(float_to_bf16(1.0f) == 0x3F80);
    CHECK(float_to_bf16(-1.0f) == 0xBF80);
    // 1 + 2^-8 (0x3F808000) is half way between 0x3F80 and 0x3F81: the even one wins.
    CHECK(float_to_bf16(bits_to_float(0x3F808000u)) == 0x3F80);
    // 1 + 2^-7 + 2^-8 (0x3F818000) is half way between 0x3F81 and 0x3F82: up to the even one.
    CHECK(float_to_bf16(bits_to_float(0x3F818000u)) == 0x3F82);
    // Just above and below the tie.
    CHECK(float_to_bf16(bits_to_float(0x3F808001u)) == 0x3F81);
    CHECK(float_to_bf16(bits_to_float(0x3F807FFFu)) == 0x3F80);
    CHECK(float_to_bf16(bits_to_float(0xBF808001u)) == 0xBF81);
    // Float subnormals stay subnormal in bf16 (same exponent range), ties to even.
    CHECK(float_to_bf16(bits_to_float(0x00008000u)) == 0x0000);
    CHECK(float_to_bf16(bits_to_float(0x00018000u)) == 0x0002);
    CHECK(float_to_bf16(bits_to_float(0x00008001u)) == 0x0001);
    CHECK(float_to_bf16(bits_to_float(0x807F8000u)) == 0x8080);  // largest subnormal rounds up to min normal
    // Overflow: the largest float and the tie at 0x7F7F8000 round to infinity.
    CHECK(float_to_bf16(bits_to_float(0x7F7FFFFFu)) == 0x7F80);
    CHECK(float_to_bf16(bits_to_float(0x7F7F8000u)) == 0x7F80);
    CHECK(float_to_bf16(bits_to_float(0x7F7F7FFFu)) == 0x7F7F);
    CHECK(float_to_bf16(bits_to_float(0xFF7FFFFFu)) == 0xFF80);
    CHECK(float_to_bf16(INFINITY) == 0x7F80);
    CHECK(float_to_bf16(-INFINITY) == 0xFF80);
    // NaN stays NaN, also a signalling NaN whose payload lives only in the dropped bits.
    CHECK(float_to_bf16(bits_to_float(0x7FC00000u)) == 0x7FC0);
    CHECK(float_to_bf16(bits_to_float(0x7F800001u)) == 0x7FC0);
    CHECK(float_to_bf16(bits_to_float(0xFF800001u)) == 0xFFC0);
    CHECK(float_to_bf16(-0.0f) == 0x8000);
    // bf16 -> float is exact.
    CHECK(float_to_bits(bf16_to_float(0x3F80)) == 0x3F800000u);
    CHECK(float_to_bits(bf16_to_float(0x0001)) == 0x00010000u);  // 2^-133, a float subnormal
    // Every non-NaN bf16 survives the round trip.
    for (uint32_t bits = 0; bits < 0x10000u; ++bits) {
        if ((bits & 0x7F80u) == 0x7F80u && (bits & 0x7Fu) != 0) continue;
        const uint16_t back = float_to_bf16(bf16_to_float(static_cast<uint16_t>(bits)));
        if (back != bits) FAIL("bf16 round trip of " << bits << " gave " << back);
    }
}

TEST_CASE("reference: float -> fp16 rounds to nearest even, subnormals, overflow, NaN") {
    CHECK(float_to_fp16(1.0f) == 0x3C00);
    CHECK(float_to_fp16(-2.0f) == 0xC000);
    CHECK(float_to_fp16(65504.0f) == 0x7BFF);
    // 65520 = 65504 + half an ulp: the tie goes to the even neighbour 65536 = infinity.
    CHECK(float_to_fp16(bits_to_float(0x477FEFFFu)) == 0x7BFF);
    CHECK(float_to_fp16(bits_to_float(0x477FF000u)) == 0x7C00);
    CHECK(float_to_fp16(1.0e6f) == 0x7C00);
    CHECK(float_to_fp16(-1.0e6f) == 0xFC00);
    CHECK(float_to_fp16(INFINITY) == 0x7C00);
    // Normal ties: 1 + 2^-11 is half an ulp above 1 -> 1; 1 + 2^-10 + 2^-11 -> 1 + 2^-9 (even).
    CHECK(float_to_fp16(bits_to_float(0x3F801000u)) == 0x3C00);
    CHECK(float_to_fp16(bits_to_float(0x3F803000u)) == 0x3C02);
    CHECK(float_to_fp16(bits_to_float(0x3F801001u)) == 0x3C01);
    CHECK(float_to_fp16(bits_to_float(0x38800000u)) == 0x0400);  // 2^-14, smallest normal
    // Subnormals are multiples of 2^-24.
    CHECK(float_to_fp16(bits_to_float(0x33800000u)) == 0x0001);  // 2^-24
    CHECK(float_to_fp16(bits_to_float(0x33000000u)) == 0x0000);  // 2^-25: tie with 0, 0 is even
    CHECK(float_to_fp16(bits_to_float(0x33000001u)) == 0x0001);  // just above the tie
    CHECK(float_to_fp16(bits_to_float(0x33400000u)) == 0x0001);  // 0.75 * 2^-24
    CHECK(float_to_fp16(bits_to_float(0x33C00000u)) == 0x0002);  // 1.5 * 2^-24: tie, 2 is even
    CHECK(float_to_fp16(bits_to_float(0x34200000u)) == 0x0002);  // 2.5 * 2^-24: tie, 2 is even
    CHECK(float_to_fp16(bits_to_float(0x38000000u)) == 0x0200);  // 2^-15
    // 2^-14 - 2^-25 = 1023.5 units: the tie carries into the smallest normal.
    CHECK(float_to_fp16(bits_to_float(0x387FE000u)) == 0x0400);
    CHECK(float_to_fp16(bits_to_float(0x00000001u)) == 0x0000);  // float subnormal -> +0
    CHECK(float_to_fp16(bits_to_float(0x80000001u)) == 0x8000);  // -> -0
    CHECK(float_to_fp16(bits_to_float(0xB3800000u)) == 0x8001);
    // NaN stays NaN.
    const uint16_t nan = float_to_fp16(bits_to_float(0x7FC00000u));
    CHECK((nan & 0x7C00u) == 0x7C00u);
    CHECK((nan & 0x03FFu) != 0);
    const uint16_t signalling = float_to_fp16(bits_to_float(0x7F800001u));
    CHECK((signalling & 0x03FFu) != 0);
    // fp16 -> float is exact.
    CHECK(float_to_bits(fp16_to_float(0x0001)) == 0x33800000u);
    CHECK(float_to_bits(fp16_to_float(0x03FF)) == 0x387FC000u);
    CHECK(float_to_bits(fp16_to_float(0x0400)) == 0x38800000u);
    CHECK(fp16_to_float(0x7BFF) == 65504.0f);
    CHECK(float_to_bits(fp16_to_float(0x8000)) == 0x80000000u);
    CHECK(std::isinf(fp16_to_float(0xFC00)));
    CHECK(std::isnan(fp16_to_float(0x7E00)));
    // Every non-NaN fp16 survives the round trip.
    for (uint32_t bits = 0; bits < 0x10000u; ++bits) {
        if ((bits & 0x7C00u) == 0x7C00u && (bits & 0x3FFu) != 0) continue;
        const uint16_t back = float_to_fp16(fp16_to_float(static_cast<uint16_t>(bits)));
        if (back != bits) FAIL("fp16 round trip of " << bits << " gave " << back);
    }
}

#if defined(__FLT16_MAX__)
TEST_CASE("reference: float -> fp16 agrees with the compiler's _Float16 on 2^24 floats") {
    // An independent implementation (libgcc's soft-fp) over a spread of inputs: every float whose
    // low 8 bits are a fixed pattern, which covers all exponents and the rounding bits.
    for (uint32_t high = 0; high < (1u << 24); ++high) {
        const uint32_t bits = (high << 8) | 0x80u;
        const float value = bits_to_float(bits);
        if (std::isnan(value)) continue;
        const _Float16 expected = static_cast<_Float16>(value);
        uint16_t expected_bits;
        std::memcpy(&expected_bits, &expected, 2);
        const uint16_t got = float_to_fp16(value);
        if (got != expected_bits) FAIL("float bits " << bits << ": ours " << got << ", _Float16 " << expected_bits);
    }
}
#endif

TEST_CASE("reference: no bias, D rounds fp32 g*prob, not the rounded C, for every C/D dtype") {
    // Row 0: A = [1, 2^-8, 0...], B_0 row 0 = [1, 1, 0...]  ->  acc = g = 1 + 2^-8 (0x3F808000).
    // prob[0] = 1 + 2^-7 (0x3F810000), alpha = 1.
    //   C = cvt(g):      bf16: tie between 0x3F80 and 0x3F81 -> 0x3F80;  fp16: 1 + 4*2^-10 = 0x3C04;
    //                    fp32: 0x3F808000.
    //   D = cvt(g*prob): g*prob = 1 + 2^-7 + 2^-8 + 2^-15 exactly = 0x3F818100 in fp32;
    //                    bf16: above the tie 0x3F81|8000 -> 0x3F82;  fp16: 1 + 12*2^-10 = 0x3C0C.
    // Rounding C to bf16 first would give bf16(1.0 * prob) = 0x3F81.
    // Row 1: A = [-3, 0...] -> acc = -3, g = -3 * alpha; D = -3 * prob[1] with prob[1] = 0.5.
    const uint32_t expected_c0[] = {0, 0x3F80, 0x3C04, 0x3F808000u};
    const uint32_t expected_d0[] = {0, 0x3F82, 0x3C0C, 0x3F818100u};
    const uint32_t expected_c1[] = {0, 0xC040, 0xC200, 0xC0400000u};  // -3
    const uint32_t expected_d1[] = {0, 0xBFC0, 0xBE00, 0xBFC00000u};  // -1.5
    for (int32_t c_dtype : kOutputDTypes) {
        for (int32_t d_dtype : kOutputDTypes) {
            const std::string c_dtype_name = dtype_name(c_dtype);
            CAPTURE(c_dtype_name);
            const std::string d_dtype_name = dtype_name(d_dtype);
            CAPTURE(d_dtype_name);
            TinyProblem problem(256, {256});
            problem.a_at(0, 0) = kBF16One;
            problem.a_at(0, 1) = kBF16TwoPowM8;
            problem.a_at(1, 0) = 0xC040;  // -3
            problem.b_at(0, 0, 0) = kBF16One;
            problem.b_at(0, 0, 1) = kBF16One;
            problem.prob[0] = bits_to_float(0x3F810000u);
            problem.prob[1] = 0.5f;
            problem.c_dtype = c_dtype;
            problem.d_dtype = d_dtype;
            const Result result = compute_reference(problem.view());
            REQUIRE(result.rows.size() == 256);
            CHECK(result_bits(result.c, c_dtype, 8, 0, 0) == expected_c0[c_dtype]);
            CHECK(result_bits(result.d, d_dtype, 8, 0, 0) == expected_d0[d_dtype]);
            CHECK(result_bits(result.c, c_dtype, 8, 1, 0) == expected_c1[c_dtype]);
            CHECK(result_bits(result.d, d_dtype, 8, 1, 0) == expected_d1[d_dtype]);
            // Elements with acc = 0 are +0 in every dtype.
            CHECK(result_bits(result.c, c_dtype, 8, 0, 1) == 0);
            CHECK(result_bits(result.d, d_dtype, 8, 5, 7) == 0);
        }
    }
    // The order matters: the wrong order gives a different bf16.
    CHECK(float_to_bf16(bf16_to_float(0x3F80) * bits_to_float(0x3F810000u)) == 0x3F81);
}

TEST_CASE("reference: with bias, v = fma(acc, alpha, prob*bias), every bias dtype and C/D dtype") {
    // Row 0: A = [1, 2^-12], B_0 row 0 = [1, 1] -> acc = 1 + 2^-12; alpha = 1 + 2^-12 (0x3F800800);
    // prob = 1, bias[0][0] = -1.  acc*alpha = 1 + 2^-11 + 2^-24 exactly, so
    //   fma:     v = 2^-11 + 2^-24 = 0x3A000400 (exact in fp32)
    //   mul+add: fp32(acc*alpha) is a tie -> 1 + 2^-11 (even), minus 1 = 2^-11 = 0x3A000000.
    //   bf16(v) = 0x3A00; fp16(v) = 2^-11 = 0x1000 (normal: exponent 15-11 = 4).
    // Row 0, column 1: acc = 0, v = prob * bias[0][1] = 1 * 0.25.
    // Row 1: A = [2, 0...] -> acc = 2; prob = 0.5: v = 2 + 2^-11 - 0.5 = 1.5 + 2^-11, exact in fp32:
    //   0x3FC01000 (2^-11 is mantissa bit 12 at exponent 0); bf16 0x3FC0; fp16: 2^-11 is half an
    //   fp16 ulp at 1.5, a tie, and 1.5 = 0x3E00 is even -> 0x3E00.
    const uint32_t expected_r0c0[] = {0, 0x3A00, 0x1000, 0x3A000400u};
    const uint32_t expected_r0c1[] = {0, 0x3E80, 0x3400, 0x3E800000u};
    const uint32_t expected_r1c0[] = {0, 0x3FC0, 0x3E00, 0x3FC01000u};
    const uint32_t minus_one[] = {0, 0xBF80, 0xBC00, 0xBF800000u};
    const uint32_t quarter[] = {0, 0x3E80, 0x3400, 0x3E800000u};
    for (int32_t bias_dtype : kBiasDTypes) {
        for (int32_t c_dtype : kOutputDTypes) {
            for (int32_t d_dtype : kOutputDTypes) {
                const std::string bias_dtype_name = dtype_name(bias_dtype);
                CAPTURE(bias_dtype_name);
                const std::string c_dtype_name = dtype_name(c_dtype);
                CAPTURE(c_dtype_name);
                const std::string d_dtype_name = dtype_name(d_dtype);
                CAPTURE(d_dtype_name);
                TinyProblem problem(256, {256});
                problem.a_at(0, 0) = kBF16One;
                problem.a_at(0, 1) = kBF16TwoPowM12;
                problem.a_at(1, 0) = 0x4000;  // 2
                problem.b_at(0, 0, 0) = kBF16One;
                problem.b_at(0, 0, 1) = kBF16One;
                problem.alpha[0] = bits_to_float(0x3F800800u);
                problem.prob[1] = 0.5f;
                problem.use_bias(bias_dtype);
                problem.set_bias_bits(0, 0, minus_one[bias_dtype]);
                problem.set_bias_bits(0, 1, quarter[bias_dtype]);
                problem.c_dtype = c_dtype;
                problem.d_dtype = d_dtype;
                const Result result = compute_reference(problem.view());
                CHECK(result_bits(result.c, c_dtype, 8, 0, 0) == expected_r0c0[c_dtype]);
                CHECK(result_bits(result.d, d_dtype, 8, 0, 0) == expected_r0c0[d_dtype]);
                CHECK(result_bits(result.c, c_dtype, 8, 0, 1) == expected_r0c1[c_dtype]);
                CHECK(result_bits(result.d, d_dtype, 8, 0, 1) == expected_r0c1[d_dtype]);
                CHECK(result_bits(result.c, c_dtype, 8, 1, 0) == expected_r1c0[c_dtype]);
                CHECK(result_bits(result.d, d_dtype, 8, 1, 0) == expected_r1c0[d_dtype]);
                // Bias applies to D and C alike; prob does not scale D a second time.
                CHECK(result_bits(result.d, d_dtype, 8, 2, 1) == expected_r0c1[d_dtype]);
            }
        }
    }
    // The fma and the separate multiply-add really differ here.
    const float acc = bits_to_float(0x3F800800u);
    const float alpha = bits_to_float(0x3F800800u);
    CHECK(float_to_bits(std::fma(acc, alpha, -1.0f)) == 0x3A000400u);
    volatile float product = acc * alpha;  // volatile: a separate, rounded multiply
    CHECK(float_to_bits(product + -1.0f) == 0x3A000000u);
}

TEST_CASE("reference: prob*bias is rounded to fp32 before the fma, for each bias dtype") {
    // Expert 1 (rows 256..511), alpha = 1. Row 256: A = [-1], B_1 row 0 = [1] -> acc = -1, so
    // v = -1 + fp32(prob*bias), exact. prob and bias make prob*bias a tie in fp32:
    //   bf16 bias 1+2^-7 (0x3F81), prob 1+2^-17: product 1+2^-7+2^-17+2^-24 -> tie, even is
    //     1+2^-7+2^-17 -> v = 2^-7(1+2^-10) = 0x3C002000 (unrounded would be 0x3C002040)
    //   fp16 bias 1+2^-10 (0x3C01), prob 1+2^-14: product 1+2^-10+2^-14+2^-24 -> tie ->
    //     1+2^-10+2^-14 -> v = 2^-10(1+2^-4) = 0x3A880000 (unrounded 0x3A880200)
    //   fp32 bias 1+2^-12 (0x3F800800), prob 1+2^-12: 1+2^-11+2^-24 -> tie -> 1+2^-11 ->
    //     v = 2^-11 = 0x3A000000 (unrounded 0x3A000400)
    const uint32_t bias_bits[] = {0, 0x3F81, 0x3C01, 0x3F800800u};
    const uint32_t prob_bits[] = {0, 0x3F800040u /* 1+2^-17 */, 0x3F800200u /* 1+2^-14 */, 0x3F800800u};
    const uint32_t expected[] = {0, 0x3C002000u, 0x3A880000u, 0x3A000000u};
    for (int32_t bias_dtype : kBiasDTypes) {
        const std::string bias_dtype_name = dtype_name(bias_dtype);
        CAPTURE(bias_dtype_name);
        TinyProblem problem(512, {256, 512});
        problem.a_at(256, 0) = kBF16MinusOne;
        problem.b_at(1, 0, 0) = kBF16One;
        problem.prob[256] = bits_to_float(prob_bits[bias_dtype]);
        problem.use_bias(bias_dtype);
        problem.set_bias_bits(1, 0, bias_bits[bias_dtype]);
        problem.c_dtype = kDTypeFP32;
        problem.d_dtype = kDTypeFP32;
        const Result result = compute_reference(problem.view());
        const std::size_t index = row_index_of(result, 256);
        CHECK(result.experts[index] == 1);
        CHECK(result_bits(result.d, kDTypeFP32, 8, index, 0) == expected[bias_dtype]);
        CHECK(result_bits(result.c, kDTypeFP32, 8, index, 0) == expected[bias_dtype]);
    }
}

TEST_CASE("reference: empty experts are skipped and rows past the last offset are not produced") {
    // L = 4, offsets [0, 256, 256, 512], M = 768: expert 0 and 2 empty, expert 1 owns rows
    // [0, 256), expert 3 owns [256, 512), rows [512, 768) belong to nobody.
    TinyProblem problem(768, {0, 256, 256, 512});
    problem.alpha = {10.0f, 2.0f, 30.0f, 4.0f};
    for (int32_t g = 0; g < 4; ++g) problem.b_at(g, 0, 0) = float_to_bf16(static_cast<float>(g + 1));
    problem.a_at(0, 0) = kBF16One;
    problem.a_at(256, 0) = kBF16One;
    problem.a_at(600, 0) = kBF16One;  // past the last offset: must not appear anywhere
    const std::vector<ExpertRows> experts = computed_experts(problem.view());
    REQUIRE(experts.size() == 2);
    CHECK(experts[0].expert == 1);
    CHECK(experts[0].begin == 0);
    CHECK(experts[0].end == 256);
    CHECK(experts[1].expert == 3);
    CHECK(experts[1].begin == 256);
    CHECK(experts[1].end == 512);
    const std::vector<int32_t> owner = defined_rows(problem.view(), 1024);
    CHECK(owner[0] == 1);
    CHECK(owner[255] == 1);
    CHECK(owner[256] == 3);
    CHECK(owner[511] == 3);
    CHECK(owner[512] == -1);
    CHECK(owner[767] == -1);
    CHECK(owner[1000] == -1);  // past M
    const Result result = compute_reference(problem.view());
    REQUIRE(result.rows.size() == 512);
    CHECK(result.rows.front() == 0);
    CHECK(result.rows.back() == 511);
    // Row 0: expert 1's weight 2 times its alpha 2 = 4 (bf16 0x4080); row 256: 4 * 4 = 16 (0x4180).
    CHECK(result_bits(result.c, kDTypeBF16, 8, row_index_of(result, 0), 0) == 0x4080);
    CHECK(result_bits(result.c, kDTypeBF16, 8, row_index_of(result, 256), 0) == 0x4180);
    // Asking for rows past the last offset gives nothing for them.
    const std::vector<int64_t> asked = {100, 511, 512, 700, 5000};
    const Result subset = compute_reference(problem.view(), &asked);
    CHECK(subset.rows == std::vector<int64_t>{100, 511});
    // padded_offsets[L-1] == 0: nothing at all.
    TinyProblem nothing(256, {0, 0, 0});
    CHECK(computed_experts(nothing.view()).empty());
    CHECK(compute_reference(nothing.view()).rows.empty());
}

TEST_CASE("reference: bad offsets skip the experts whose begin or end offset breaks a rule") {
    struct BadCase {
        const char* name;
        std::vector<int32_t> offsets;
        int64_t m;
        uint32_t violations;
        std::vector<int32_t> experts;  // computed, in order
    };
    const BadCase cases[] = {
        {"negative", {256, -256, 512, 768}, 1024,
         GGEMM_DEVICE_STATUS_OFFSET_NEGATIVE | GGEMM_DEVICE_STATUS_OFFSET_DECREASING, {0, 3}},
        {"misaligned", {256, 512, 700, 1024, 1280}, 1280, GGEMM_DEVICE_STATUS_OFFSET_MISALIGNED, {0, 1, 4}},
        // Offset 2 (512) is below its predecessor: expert 2 ends there and expert 3 begins there.
        {"decreasing", {256, 768, 512, 1024, 1280}, 1280, GGEMM_DEVICE_STATUS_OFFSET_DECREASING, {0, 1, 4}},
        {"past M", {256, 512, 1280}, 1024, GGEMM_DEVICE_STATUS_OFFSET_PAST_M, {0, 1}},
        {"valid", {256, 256, 1024}, 1024, 0, {0, 2}},
    };
    for (const BadCase& bad : cases) {
        const std::string name = bad.name;
        CAPTURE(name);
        TinyProblem problem(bad.m, bad.offsets);
        CHECK(offset_violations(problem.offsets.data(), problem.experts, bad.m) == bad.violations);
        std::vector<int32_t> experts;
        for (const ExpertRows& expert : computed_experts(problem.view())) experts.push_back(expert.expert);
        CHECK(experts == bad.experts);
    }
    // A begin below an earlier usable offset is skipped, so no row is ever claimed twice:
    // [512, -256, 256, 768]: expert 3 = [256, 768) would overlap expert 0 = [0, 512).
    TinyProblem overlap(1024, {512, -256, 256, 768});
    std::vector<int32_t> computed;
    for (const ExpertRows& expert : computed_experts(overlap.view())) computed.push_back(expert.expert);
    CHECK(computed == std::vector<int32_t>{0});
    const std::vector<int32_t> owner = defined_rows(overlap.view(), 1024);
    CHECK(owner[0] == 0);
    CHECK(owner[511] == 0);
    CHECK(owner[512] == -1);
    CHECK(owner[767] == -1);
}

TEST_CASE("reference: discrete weights, a null pointer skips its expert") {
    TinyProblem problem(768, {256, 512, 768});
    for (int32_t g = 0; g < 3; ++g) problem.b_at(g, 0, 0) = float_to_bf16(static_cast<float>(g + 1));
    for (int64_t r = 0; r < 768; ++r) problem.a_at(r, 0) = kBF16One;
    const uint16_t* pointers[3] = {problem.b.data(), nullptr, problem.b.data() + 2 * 8 * 8};
    Problem discrete = problem.view();
    discrete.b = nullptr;
    discrete.b_experts = pointers;
    const Result result = compute_reference(discrete);
    REQUIRE(result.rows.size() == 512);
    CHECK(result.rows[255] == 255);
    CHECK(result.rows[256] == 512);
    CHECK(result_bits(result.d, kDTypeBF16, 8, 256, 0) == 0x4040);  // expert 2: weight 3
    const Result dense = compute_reference(problem.view());
    CHECK(std::vector<uint8_t>(dense.d.begin(), dense.d.begin() + 256 * 8 * 2) ==
          std::vector<uint8_t>(result.d.begin(), result.d.begin() + 256 * 8 * 2));
}

TEST_CASE("reference: matches an independent per-element loop; subsets and threads do not change bits") {
    // Inputs on a 1/64 grid: every partial sum is exact in double whatever the order, so the
    // blocked, multi-lane reference must agree bit for bit with the plainest loop.
    const int64_t m = 1024, n = 24, k = 40;
    TinyProblem problem(m, {256, 256, 768}, n, k);
    Rng rng(7);
    for (auto& value : problem.a) value = float_to_bf16(static_cast<float>(rng.between(-64, 64)) / 64.0f);
    for (auto& value : problem.b) value = float_to_bf16(static_cast<float>(rng.between(-64, 64)) / 64.0f);
    for (auto& value : problem.prob) value = rng.uniform(0.0f, 1.0f);
    problem.alpha = {0.75f, 1.5f, 1.25f};
    problem.use_bias(kDTypeFP16);
    for (int32_t g = 0; g < 3; ++g) {
        for (int64_t col = 0; col < n; ++col) problem.set_bias_bits(g, col, float_to_fp16(rng.uniform(-2.0f, 2.0f)));
    }
    problem.c_dtype = kDTypeFP32;
    problem.d_dtype = kDTypeBF16;

    const Result all = compute_reference(problem.view(), nullptr, 1);
    REQUIRE(all.rows.size() == 768);
    for (std::size_t i = 0; i < all.rows.size(); ++i) {
        const int64_t row = all.rows[i];
        const int32_t g = row < 256 ? 0 : 2;
        REQUIRE(all.experts[i] == g);
        for (int64_t col = 0; col < n; ++col) {
            double acc = 0.0;
            for (int64_t kk = 0; kk < k; ++kk) {
                acc += static_cast<double>(bf16_to_float(problem.a[static_cast<std::size_t>(row * k + kk)])) *
                       bf16_to_float(problem.b[static_cast<std::size_t>((g * n + col) * k + kk)]);
            }
            const float bias = fp16_to_float(
                static_cast<uint16_t>(problem.bias[static_cast<std::size_t>(g * n + col) * 2] |
                                      (problem.bias[static_cast<std::size_t>(g * n + col) * 2 + 1] << 8)));
            const float v = std::fma(static_cast<float>(acc), problem.alpha[g], problem.prob[row] * bias);
            if (result_bits(all.c, kDTypeFP32, n, i, col) != float_to_bits(v) ||
                result_bits(all.d, kDTypeBF16, n, i, col) != float_to_bf16(v)) {
                FAIL("row " << row << " col " << col << ": reference differs from the plain loop");
            }
        }
    }
    const Result threaded = compute_reference(problem.view(), nullptr, 3);
    CHECK(threaded.rows == all.rows);
    CHECK(threaded.c == all.c);
    CHECK(threaded.d == all.d);
    const std::vector<int64_t> asked = {767, 5, 256, 300, 900, 5};  // 900 is past the last offset
    const Result subset = compute_reference(problem.view(), &asked, 2);
    REQUIRE(subset.rows == std::vector<int64_t>{5, 256, 300, 767});
    for (std::size_t i = 0; i < subset.rows.size(); ++i) {
        const std::size_t full_index = row_index_of(all, subset.rows[i]);
        for (int64_t col = 0; col < n; ++col) {
            CHECK(result_bits(subset.c, kDTypeFP32, n, i, col) == result_bits(all.c, kDTypeFP32, n, full_index, col));
            CHECK(result_bits(subset.d, kDTypeBF16, n, i, col) == result_bits(all.d, kDTypeBF16, n, full_index, col));
        }
    }
}

TEST_CASE("reference: N-major weights (B_g[k][n]) give the K-major result of the transposed weights") {
    // N = 24 and K = 40 differ, so reading one layout as the other would index wrongly.
    const int64_t m = 512, n = 24, k = 40;
    TinyProblem k_major(m, {256, 256, 512}, n, k);
    Rng rng(11);
    for (auto& value : k_major.a) value = float_to_bf16(rng.uniform(-1.0f, 1.0f));
    for (auto& value : k_major.b) value = float_to_bf16(rng.uniform(-1.0f, 1.0f));
    for (auto& value : k_major.prob) value = rng.uniform(0.0f, 1.0f);
    k_major.alpha = {0.75f, 1.5f, 1.25f};
    k_major.c_dtype = kDTypeFP32;
    k_major.d_dtype = kDTypeFP32;
    TinyProblem n_major = k_major;
    for (int32_t g = 0; g < 3; ++g)
        for (int64_t col = 0; col < n; ++col)
            for (int64_t kk = 0; kk < k; ++kk)
                n_major.b[static_cast<std::size_t>((g * k + kk) * n + col)] = k_major.b_at(g, col, kk);
    Problem n_major_view = n_major.view();
    n_major_view.weight_layout = kWeightLayoutNMajor;

    const Result expected = compute_reference(k_major.view(), nullptr, 2);
    const Result got = compute_reference(n_major_view, nullptr, 3);
    REQUIRE(expected.rows.size() == 512);
    CHECK(got.rows == expected.rows);
    CHECK(got.c == expected.c);
    CHECK(got.d == expected.d);
    // The transposed bytes read as K-major are other products: the layout really is honoured.
    CHECK(compute_reference(n_major.view(), nullptr, 1).d != expected.d);

    Problem unknown = n_major_view;
    unknown.weight_layout = 2;
    CHECK_THROWS_AS(compute_reference(unknown), std::invalid_argument);
}

TEST_CASE("gpu_util: with_transposed_weights transposes every expert and switches the layout") {
    CaseConfig config;
    config.num_experts = 3;
    config.n = 16;
    config.k = 24;
    config.max_tokens = 300;
    config.seed = 5;
    const HostCase k_major = make_case(config);
    const HostCase n_major = with_transposed_weights(k_major);
    CHECK(n_major.config.weight_layout == GGEMM_WEIGHT_LAYOUT_N_MAJOR);
    for (std::size_t g = 0; g < 3; ++g)
        for (std::size_t col = 0; col < 16; ++col)
            for (std::size_t kk = 0; kk < 24; ++kk)
                REQUIRE(n_major.b[(g * 24 + kk) * 16 + col] == k_major.b[(g * 16 + col) * 24 + kk]);
    const HostCase back = with_transposed_weights(n_major);
    CHECK(back.config.weight_layout == GGEMM_WEIGHT_LAYOUT_K_MAJOR);
    CHECK(back.b == k_major.b);
    CHECK(n_major.problem().weight_layout == kWeightLayoutNMajor);
    const Result expected = compute_reference(k_major.problem());
    const Result got = compute_reference(n_major.problem());
    CHECK(got.d == expected.d);
    CHECK(got.c == expected.c);
}

TEST_CASE("reference: sample_rows takes first, last and random rows of each computed expert") {
    TinyProblem problem(2048, {0, 1024, 1280, 1280, 2048});
    const std::vector<int64_t> rows = sample_rows(problem.view(), 8, 3);
    // Expert 1 [0,1024): 10 rows; expert 2 [1024,1280): 10; expert 4 [1280,2048): 10.
    CHECK(rows.size() == 30);
    for (int64_t must : {0, 1023, 1024, 1279, 1280, 2047}) {
        CHECK(std::count(rows.begin(), rows.end(), must) == 1);
    }
    CHECK(std::is_sorted(rows.begin(), rows.end()));
    CHECK(sample_rows(problem.view(), 8, 3) == rows);  // deterministic
    TinyProblem small(256, {256});
    CHECK(sample_rows(small.view(), 300, 1).size() == 256);
}

TEST_CASE("reference: relative Frobenius error and the random fill") {
    CHECK(relative_frobenius({1.0, 2.0, 2.0}, {1.0, 2.0, 3.0}) == doctest::Approx(1.0 / std::sqrt(14.0)));
    CHECK(relative_frobenius({0.0}, {0.0}) == 0.0);
    CHECK(std::isinf(relative_frobenius({1.0}, {0.0})));
    CHECK(std::isnan(relative_frobenius({NAN}, {1.0})));

    std::vector<uint16_t> first(3 << 20), second(3 << 20);
    fill_uniform(first.data(), first.size(), kDTypeBF16, -1.0f, 1.0f, 42);
    fill_uniform(second.data(), second.size(), kDTypeBF16, -1.0f, 1.0f, 42);
    CHECK(first == second);
    std::size_t zeros = 0;
    for (uint16_t bits : first) {
        const float value = bf16_to_float(bits);
        if (!(value >= -1.0f && value <= 1.0f)) FAIL("value out of range: " << value);
        zeros += value == 0.0f;
    }
    CHECK(zeros < first.size() / 1000);
    fill_uniform(second.data(), second.size(), kDTypeBF16, -1.0f, 1.0f, 43);
    CHECK(first != second);
    std::vector<float> floats(1000);
    fill_uniform(floats.data(), floats.size(), kDTypeFP32, 0.5f, 1.0f, 1);
    for (float value : floats) CHECK((value >= 0.5f && value < 1.0f));
}

TEST_CASE("gpu_util: the output check passes exact outputs and catches writes, NaN and large errors") {
    CaseConfig config;
    config.num_experts = 5;
    config.max_tokens = 300;
    config.n = 24;
    config.k = 16;
    config.c_dtype = kDTypeFP32;
    config.d_dtype = kDTypeFP16;
    config.slack_rows = 256;
    config.seed = 11;
    const HostCase host_case = make_case(config);
    REQUIRE(host_case.m > host_case.rows_used());
    REQUIRE(host_case.empty_experts() >= 1);
    const Problem problem = host_case.problem();
    const Result reference = compute_reference(problem);
    const int64_t rows_allocated = host_case.m + 256;
    const std::vector<int32_t> owner = defined_rows(problem, rows_allocated);
    const std::size_t element = dtype_size(kDTypeFP16);
    const std::size_t row_bytes = static_cast<std::size_t>(config.n) * element;

    // What a correct run leaves: poison everywhere, the reference in the defined rows.
    std::vector<uint8_t> good(static_cast<std::size_t>(rows_allocated) * row_bytes, kPoisonByte);
    for (std::size_t i = 0; i < reference.rows.size(); ++i) {
        std::memcpy(good.data() + static_cast<std::size_t>(reference.rows[i]) * row_bytes,
                    reference.d.data() + i * row_bytes, row_bytes);
    }
    auto check = [&](const std::vector<uint8_t>& got, bool untouched) {
        return check_output("D", got.data(), rows_allocated, config.n, kDTypeFP16, reference, false, owner, untouched);
    };
    const OutputCheck exact = check(good, false);
    CHECK(exact.ok());
    CHECK(exact.relative_error == 0.0);
    CHECK(exact.compared == static_cast<int64_t>(reference.rows.size()) * config.n);

    std::vector<uint8_t> guard_written = good;
    guard_written[static_cast<std::size_t>(host_case.m + 3) * row_bytes + 1] = 0;  // a guard row past M
    CHECK_FALSE(check(guard_written, false).ok());
    CHECK(check(guard_written, false).touched == 1);

    std::vector<uint8_t> past_last_offset = good;
    past_last_offset[static_cast<std::size_t>(host_case.rows_used()) * row_bytes] = 0;  // row at offsets[L-1]
    CHECK_FALSE(check(past_last_offset, false).ok());

    std::vector<uint8_t> unwritten = good;
    std::memset(unwritten.data() + static_cast<std::size_t>(reference.rows[7]) * row_bytes, kPoisonByte, element);
    CHECK_FALSE(check(unwritten, false).ok());
    CHECK(check(unwritten, false).nonfinite == 1);

    std::vector<uint8_t> off_by_two_percent = good;
    for (int64_t row : reference.rows) {
        for (int64_t col = 0; col < config.n; ++col) {
            const std::size_t index = static_cast<std::size_t>(row * config.n + col);
            store_element(off_by_two_percent.data(), index, kDTypeFP16,
                          load_element(off_by_two_percent.data(), index, kDTypeFP16) * 1.02f);
        }
    }
    const OutputCheck large = check(off_by_two_percent, false);
    CHECK_FALSE(large.ok());
    CHECK(large.relative_error == doctest::Approx(0.02).epsilon(0.1));

    // generate_c off: an untouched buffer passes, any written row fails.
    const std::vector<uint8_t> all_poison(good.size(), kPoisonByte);
    CHECK(check(all_poison, true).ok());
    CHECK_FALSE(check(good, true).ok());
    // A buffer nobody wrote fails the normal check (the defined rows are NaN).
    CHECK_FALSE(check(all_poison, false).ok());
}

TEST_CASE("reference: valid-row counts cut each expert at its clamped count and are judged like the kernel") {
    // L = 4 of 256 rows each, M = 1024; counts 0 (skipped), 65, 300 (clamped to 256), -4 (0).
    TinyProblem problem(1024, {256, 512, 768, 1024});
    std::vector<int32_t> counts = {0, 65, 300, -4};
    Problem view = problem.view();
    view.valid_rows = counts.data();
    const std::vector<ExpertRows> experts = computed_experts(view);
    REQUIRE(experts.size() == 2);
    CHECK(experts[0].expert == 1);
    CHECK(experts[0].begin == 256);
    CHECK(experts[0].end == 256 + 65);
    CHECK(experts[1].expert == 2);
    CHECK(experts[1].end == 768);
    const std::vector<int32_t> owner = defined_rows(view, 1024);
    CHECK(owner[0] == -1);
    CHECK(owner[256 + 64] == 1);
    CHECK(owner[256 + 65] == -1);
    CHECK(owner[767] == 2);
    CHECK(owner[768] == -1);
    CHECK(compute_reference(view).rows.size() == 65u + 256u);
    CHECK(valid_rows_violations(view) == 0x100u);
    counts = {0, 65, 256, 0};
    CHECK(valid_rows_violations(view) == 0u);
    view.valid_rows = nullptr;
    CHECK(valid_rows_violations(view) == 0u);
    CHECK(computed_experts(view).size() == 4u);
}
