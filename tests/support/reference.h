// The host reference of the grouped GEMM: the exact semantics of docs/API.md ("The
// operation"), computed on the CPU from the same raw bf16 inputs the GPU sees.
//
//   acc = sum_k A[r,k] * B_g(n,k)   in double (every bf16 x bf16 product is exact), then
//                                    rounded once to float; B_g(n,k) is B_g[n][k] (K-major
//                                    weights) or B_g[k][n] (N-major)
//   bias:     v  = fma(acc, alpha[g], float(prob[r] * bias[g][n]))   C = cvt_C(v),  D = cvt_D(v)
//   no bias:  g_ = acc * alpha[g]                                   C = cvt_C(g_), D = cvt_D(g_ * prob[r])
//
// Everything after acc is float arithmetic in a fixed order (this file must be compiled with
// -ffp-contract=off so that no multiply-add is fused behind our back); cvt is round-to-nearest-
// even done by bit manipulation, so the result does not depend on the host's FPU modes.
//
// Offsets are judged as the contract says (include/ggemm.h, GGEMM_DEVICE_STATUS_*): each offset
// must be >= 0, a multiple of 256, <= M and >= the previous offset; an expert whose begin or end
// offset breaks a rule is skipped. Discrete weights: an expert whose pointer is null is skipped.
// The reference reports exactly which rows it defines; every other row is one the library must
// leave untouched.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ggemm_test {

// ---- scalar conversions (dtype codes are the GGEMM_DTYPE_* values) ----------------------------

constexpr int32_t kDTypeNone = 0;
constexpr int32_t kDTypeBF16 = 1;
constexpr int32_t kDTypeFP16 = 2;
constexpr int32_t kDTypeFP32 = 3;

// Weight layouts (the GGEMM_WEIGHT_LAYOUT_* values).
constexpr int32_t kWeightLayoutKMajor = 0;
constexpr int32_t kWeightLayoutNMajor = 1;

uint32_t float_to_bits(float value);
float bits_to_float(uint32_t bits);

float bf16_to_float(uint16_t bits);
uint16_t float_to_bf16(float value);  // round to nearest even; overflow -> inf; NaN stays NaN
float fp16_to_float(uint16_t bits);
uint16_t float_to_fp16(float value);  // round to nearest even; subnormals; overflow -> inf; NaN

std::size_t dtype_size(int32_t dtype);  // bytes per element; 0 for kDTypeNone or unknown
const char* dtype_name(int32_t dtype);  // "none", "bf16", "fp16", "fp32", "?"

// Element `index` of an array of `dtype` elements, widened to float (exact).
float load_element(const void* base, std::size_t index, int32_t dtype);
// Rounds `value` to `dtype` (cvt) and stores it as element `index`.
void store_element(void* base, std::size_t index, int32_t dtype, float value);
// True when the element is neither NaN nor infinite.
bool element_is_finite(const void* base, std::size_t index, int32_t dtype);

// ---- deterministic random numbers ---------------------------------------------------------------

// splitmix64: a tiny, well-mixed generator; the same seed gives the same stream everywhere.
class Rng {
public:
    explicit Rng(uint64_t seed) : state_(seed) {}
    uint64_t next();
    float uniform(float lo, float hi);       // [lo, hi), 24 random bits
    int64_t below(int64_t bound);            // [0, bound), bound > 0
    int64_t between(int64_t lo, int64_t hi); // [lo, hi], inclusive

private:
    uint64_t state_;
};

// A seed derived from (seed, stream): independent streams for chunks, experts, replays.
uint64_t mix_seed(uint64_t seed, uint64_t stream);

// Fills out[0, count) with uniform values in [lo, hi) rounded to `dtype` (raw bits, element size
// dtype_size(dtype)). Multithreaded; the result depends only on (seed, count), not on threads.
void fill_uniform(void* out, std::size_t count, int32_t dtype, float lo, float hi, uint64_t seed);

// ---- the problem --------------------------------------------------------------------------------

struct Problem {
    int64_t m = 0;            // rows of A / prob (the M passed to execute)
    int64_t n = 0;
    int64_t k = 0;
    int32_t num_experts = 0;  // L
    const uint16_t* a = nullptr;                 // M x K bf16 bits
    const uint16_t* b = nullptr;                 // dense: L x N x K bf16 bits, N-major L x K x N (or nullptr)
    const uint16_t* const* b_experts = nullptr;  // discrete: L pointers to N x K (K x N); nullptr entry = skipped
    int32_t weight_layout = kWeightLayoutKMajor;  // or kWeightLayoutNMajor
    const int32_t* padded_offsets = nullptr;     // L
    const float* alpha = nullptr;                // L
    const float* prob = nullptr;                 // M
    const void* bias = nullptr;                  // L x N raw bits of bias_dtype, or nullptr
    int32_t bias_dtype = kDTypeNone;
    int32_t c_dtype = kDTypeBF16;
    int32_t d_dtype = kDTypeBF16;
    const int32_t* valid_rows = nullptr;         // L valid-row counts, or nullptr: every row of a segment
};

// GGEMM_DEVICE_STATUS_OFFSET_* bits for every rule the offsets break (0 when all are valid).
uint32_t offset_violations(const int32_t* padded_offsets, int32_t num_experts, int64_t m);

// GGEMM_DEVICE_STATUS_VALID_ROWS_CLAMPED when a count is negative, or above its segment's size
// where the segment's offsets are sound (docs/API.md, "Valid-row counts"); else 0.
uint32_t valid_rows_violations(const Problem& problem);

struct ExpertRows {
    int32_t expert;
    int64_t begin;  // first row
    int64_t end;    // one past the last row
};

// The non-empty experts the contract computes, in expert order: offsets valid and (discrete
// mode) weight pointer non-null; with valid-row counts, each cut at its clamped count. Rows claimed by two of them (possible only with bad offsets)
// are left out by defined_rows().
std::vector<ExpertRows> computed_experts(const Problem& problem);

// One entry per row of [0, rows): the expert that defines the row, or -1 for rows the library
// must leave untouched (past the last offset, skipped experts, rows >= M, ambiguous rows).
std::vector<int32_t> defined_rows(const Problem& problem, int64_t rows);

// The reference values of a set of rows.
struct Result {
    int64_t n = 0;
    int32_t c_dtype = kDTypeBF16;
    int32_t d_dtype = kDTypeBF16;
    std::vector<int64_t> rows;     // rows computed, ascending (only rows the contract defines)
    std::vector<int32_t> experts;  // the expert of each computed row
    std::vector<uint8_t> c;        // rows.size() x N elements of c_dtype (raw bits)
    std::vector<uint8_t> d;        // rows.size() x N elements of d_dtype (raw bits)

    float c_value(std::size_t row_index, int64_t col) const;
    float d_value(std::size_t row_index, int64_t col) const;
};

// Computes the requested rows (all defined rows when `rows` is null); requested rows the contract
// does not define are dropped. threads = 0: one per hardware thread. The result does not depend
// on the thread count.
Result compute_reference(const Problem& problem, const std::vector<int64_t>* rows = nullptr,
                         int threads = 0);

// Per defined expert: `per_expert` distinct random rows plus its first and last row (all rows
// when the expert has no more than that). Ascending.
std::vector<int64_t> sample_rows(const Problem& problem, int per_expert, uint64_t seed);

// ---- comparing ----------------------------------------------------------------------------------

// ||got - ref||_F / ||ref||_F in double; 0 when both are zero, +inf when only ref is zero.
double relative_frobenius(const std::vector<double>& got, const std::vector<double>& ref);

// Accumulates a relative Frobenius error in pieces (rows, threads) and merges deterministically.
struct FrobeniusSum {
    double diff_squared = 0.0;
    double ref_squared = 0.0;
    void add(double got, double ref) {
        const double diff = got - ref;
        diff_squared += diff * diff;
        ref_squared += ref * ref;
    }
    void merge(const FrobeniusSum& other) {
        diff_squared += other.diff_squared;
        ref_squared += other.ref_squared;
    }
    double relative() const;
};

// Default number of threads for the reference and the checks.
int default_threads();

}  // namespace ggemm_test
