// The host reference: conversions, offsets rules and the multithreaded grouped GEMM.
// Compiled with -ffp-contract=off: every float operation below rounds where it is written.
#include "tests/support/reference.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <set>
#include <stdexcept>
#include <thread>

namespace ggemm_test {

// Same values as GGEMM_DEVICE_STATUS_OFFSET_* in include/ggemm.h (checked in test_reference.cpp).
constexpr uint32_t kOffsetNegative = 0x1u;
constexpr uint32_t kOffsetMisaligned = 0x2u;
constexpr uint32_t kOffsetPastM = 0x4u;
constexpr uint32_t kOffsetDecreasing = 0x8u;
constexpr int64_t kRowAlignment = 256;

// ---- scalar conversions ---------------------------------------------------------------------------

uint32_t float_to_bits(float value) {
    uint32_t bits;
    std::memcpy(&bits, &value, sizeof bits);
    return bits;
}

float bits_to_float(uint32_t bits) {
    float value;
    std::memcpy(&value, &bits, sizeof value);
    return value;
}

float bf16_to_float(uint16_t bits) { return bits_to_float(static_cast<uint32_t>(bits) << 16); }

uint16_t float_to_bf16(float value) {
    const uint32_t bits = float_to_bits(value);
    if ((bits & 0x7fffffffu) > 0x7f800000u) {
        // NaN: keep sign and the top payload bits, force the quiet bit so truncation cannot
        // turn it into an infinity.
        return static_cast<uint16_t>((bits >> 16) | 0x0040u);
    }
    // bf16 keeps float's exponent range: rounding the low 16 bits to nearest even is the whole
    // conversion, subnormals included; a carry out of the mantissa bumps the exponent, and the
    // largest finite floats carry into the infinity pattern, which is the correct overflow.
    const uint32_t lsb = (bits >> 16) & 1u;
    return static_cast<uint16_t>((bits + 0x7fffu + lsb) >> 16);
}

float fp16_to_float(uint16_t bits) {
    const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
    const uint32_t exponent = (bits >> 10) & 0x1fu;
    uint32_t mantissa = bits & 0x3ffu;
    if (exponent == 0x1f) return bits_to_float(sign | 0x7f800000u | (mantissa << 13));  // inf / NaN
    if (exponent != 0) return bits_to_float(sign | ((exponent + 112u) << 23) | (mantissa << 13));
    if (mantissa == 0) return bits_to_float(sign);  // signed zero
    // Subnormal: mantissa * 2^-24. Normalize; the float exponent of 2^-14 is 113.
    uint32_t float_exponent = 113;
    while ((mantissa & 0x400u) == 0) {
        mantissa <<= 1;
        --float_exponent;
    }
    return bits_to_float(sign | (float_exponent << 23) | ((mantissa & 0x3ffu) << 13));
}

uint16_t float_to_fp16(float value) {
    const uint32_t bits = float_to_bits(value);
    const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
    const uint32_t magnitude = bits & 0x7fffffffu;
    if (magnitude > 0x7f800000u) {  // NaN: quiet, top payload bits kept
        return static_cast<uint16_t>(sign | 0x7e00u | ((magnitude >> 13) & 0x3ffu));
    }
    // 65520 = 65504 + half an ulp: the tie rounds to the even neighbour 65536, i.e. to infinity.
    if (magnitude >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);
    if (magnitude >= 0x38800000u) {  // >= 2^-14: normal in fp16
        const uint32_t odd = (magnitude >> 13) & 1u;
        // Rebias the exponent (127 -> 15) and round the 13 dropped bits to nearest even.
        const uint32_t rounded = magnitude - (112u << 23) + 0xfffu + odd;
        return static_cast<uint16_t>(sign | (rounded >> 13));
    }
    // Below 2^-14: an fp16 subnormal, a multiple of 2^-24. 2^-25 (a tie with 0) and anything
    // smaller rounds to zero.
    if (magnitude <= 0x33000000u) return sign;
    const uint32_t exponent = magnitude >> 23;  // 102 .. 112
    const uint32_t significand = (magnitude & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126u - exponent;     // 14 .. 24
    uint32_t units = significand >> shift;      // multiples of 2^-24
    const uint32_t remainder = significand & ((1u << shift) - 1u);
    const uint32_t half = 1u << (shift - 1u);
    if (remainder > half || (remainder == half && (units & 1u))) ++units;  // may carry to 2^-14: fine
    return static_cast<uint16_t>(sign | units);
}

std::size_t dtype_size(int32_t dtype) {
    switch (dtype) {
        case kDTypeBF16: return 2;
        case kDTypeFP16: return 2;
        case kDTypeFP32: return 4;
        default: return 0;
    }
}

const char* dtype_name(int32_t dtype) {
    switch (dtype) {
        case kDTypeNone: return "none";
        case kDTypeBF16: return "bf16";
        case kDTypeFP16: return "fp16";
        case kDTypeFP32: return "fp32";
        default: return "?";
    }
}

float load_element(const void* base, std::size_t index, int32_t dtype) {
    switch (dtype) {
        case kDTypeBF16: return bf16_to_float(static_cast<const uint16_t*>(base)[index]);
        case kDTypeFP16: return fp16_to_float(static_cast<const uint16_t*>(base)[index]);
        case kDTypeFP32: return static_cast<const float*>(base)[index];
        default: throw std::invalid_argument("load_element: unknown dtype");
    }
}

void store_element(void* base, std::size_t index, int32_t dtype, float value) {
    switch (dtype) {
        case kDTypeBF16: static_cast<uint16_t*>(base)[index] = float_to_bf16(value); return;
        case kDTypeFP16: static_cast<uint16_t*>(base)[index] = float_to_fp16(value); return;
        case kDTypeFP32: static_cast<float*>(base)[index] = value; return;
        default: throw std::invalid_argument("store_element: unknown dtype");
    }
}

bool element_is_finite(const void* base, std::size_t index, int32_t dtype) {
    switch (dtype) {
        case kDTypeBF16: return (static_cast<const uint16_t*>(base)[index] & 0x7f80u) != 0x7f80u;
        case kDTypeFP16: return (static_cast<const uint16_t*>(base)[index] & 0x7c00u) != 0x7c00u;
        case kDTypeFP32: {
            uint32_t bits;
            std::memcpy(&bits, static_cast<const uint8_t*>(base) + index * 4, 4);
            return (bits & 0x7f800000u) != 0x7f800000u;
        }
        default: throw std::invalid_argument("element_is_finite: unknown dtype");
    }
}

// ---- random numbers ----------------------------------------------------------------------------

uint64_t Rng::next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

float Rng::uniform(float lo, float hi) {
    const float unit = static_cast<float>(next() >> 40) * 0x1.0p-24f;  // exact, in [0, 1)
    return lo + (hi - lo) * unit;
}

int64_t Rng::below(int64_t bound) {
    if (bound <= 0) throw std::invalid_argument("Rng::below: bound must be positive");
    return static_cast<int64_t>((static_cast<unsigned __int128>(next()) * static_cast<uint64_t>(bound)) >> 64);
}

int64_t Rng::between(int64_t lo, int64_t hi) { return lo + below(hi - lo + 1); }

uint64_t mix_seed(uint64_t seed, uint64_t stream) {
    Rng rng(seed ^ (stream * 0xd1b54a32d192ed03ull + 0x8cb92ba72f3d8dd7ull));
    rng.next();
    return rng.next();
}

int default_threads() {
    const unsigned hardware = std::thread::hardware_concurrency();
    return hardware == 0 ? 1 : static_cast<int>(hardware);
}

// Runs body(item) for item in [0, items) on `threads` threads; items are claimed one by one.
// The first exception is rethrown on the caller's thread.
template <typename Body>
static void parallel_for(int64_t items, int threads, Body body) {
    if (threads <= 0) threads = default_threads();
    threads = static_cast<int>(std::min<int64_t>(threads, std::max<int64_t>(items, 1)));
    std::atomic<int64_t> next_item{0};
    std::exception_ptr failure;
    std::atomic<bool> failed{false};
    auto worker = [&]() {
        try {
            for (int64_t item = next_item++; item < items && !failed; item = next_item++) body(item);
        } catch (...) {
            if (!failed.exchange(true)) failure = std::current_exception();
        }
    };
    std::vector<std::thread> pool;
    for (int t = 1; t < threads; ++t) pool.emplace_back(worker);
    worker();
    for (auto& thread : pool) thread.join();
    if (failure) std::rethrow_exception(failure);
}

void fill_uniform(void* out, std::size_t count, int32_t dtype, float lo, float hi, uint64_t seed) {
    if (dtype_size(dtype) == 0) throw std::invalid_argument("fill_uniform: unknown dtype");
    constexpr std::size_t kChunk = std::size_t{1} << 20;
    const int64_t chunks = static_cast<int64_t>((count + kChunk - 1) / kChunk);
    parallel_for(chunks, 0, [&](int64_t chunk) {
        Rng rng(mix_seed(seed, static_cast<uint64_t>(chunk)));
        const std::size_t begin = static_cast<std::size_t>(chunk) * kChunk;
        const std::size_t end = std::min(count, begin + kChunk);
        for (std::size_t i = begin; i < end; ++i) store_element(out, i, dtype, rng.uniform(lo, hi));
    });
}

// ---- offsets ------------------------------------------------------------------------------------

// The rules broken by offset `index` on its own and against its predecessor.
static uint32_t offset_rules_broken(const int32_t* offsets, int32_t index, int64_t m) {
    const int64_t value = offsets[index];
    uint32_t broken = 0;
    if (value < 0) broken |= kOffsetNegative;
    if (value % kRowAlignment != 0) broken |= kOffsetMisaligned;
    if (value > m) broken |= kOffsetPastM;
    if (index > 0 && value < offsets[index - 1]) broken |= kOffsetDecreasing;
    return broken;
}

uint32_t offset_violations(const int32_t* padded_offsets, int32_t num_experts, int64_t m) {
    uint32_t broken = 0;
    for (int32_t g = 0; g < num_experts; ++g) broken |= offset_rules_broken(padded_offsets, g, m);
    return broken;
}

uint32_t valid_rows_violations(const Problem& problem) {
    if (problem.valid_rows == nullptr) return 0;
    const auto usable = [&](int64_t v) { return v >= 0 && v % 256 == 0 && v <= problem.m; };
    for (int32_t g = 0; g < problem.num_experts; ++g) {
        const int64_t begin = g == 0 ? 0 : problem.padded_offsets[g - 1];
        const int64_t end = problem.padded_offsets[g];
        const int64_t count = problem.valid_rows[g];
        if (count < 0) return 0x100u;
        if (usable(begin) && usable(end) && end >= begin && count > end - begin) return 0x100u;
    }
    return 0;
}

std::vector<ExpertRows> computed_experts(const Problem& problem) {
    // docs/API.md, "Device status word": experts whose offsets are unsafe are skipped. Expert g
    // runs only when its begin (offsets[g-1], or 0) and end (offsets[g]) are each >= 0,
    // multiples of 256 and <= M, end >= begin, and begin is not below any earlier usable
    // offset: so computed ranges never overlap, whatever the offsets hold.
    const auto usable = [&](int64_t v) { return v >= 0 && v % 256 == 0 && v <= problem.m; };
    std::vector<ExpertRows> experts;
    int64_t high_water = 0;  // largest usable offset among offsets[0, g-1)
    for (int32_t g = 0; g < problem.num_experts; ++g) {
        if (g >= 2 && usable(problem.padded_offsets[g - 2]))
            high_water = std::max<int64_t>(high_water, problem.padded_offsets[g - 2]);
        const int64_t begin = g == 0 ? 0 : problem.padded_offsets[g - 1];
        const int64_t end = problem.padded_offsets[g];
        if (!usable(begin) || !usable(end) || end < begin || begin < high_water) continue;
        if (end == begin) continue;
        if (problem.b == nullptr && (problem.b_experts == nullptr || problem.b_experts[g] == nullptr)) continue;
        int64_t valid_end = end;
        if (problem.valid_rows != nullptr) {
            const int64_t count = problem.valid_rows[g];
            valid_end = begin + std::max<int64_t>(0, std::min<int64_t>(count, end - begin));
        }
        if (valid_end == begin) continue;
        experts.push_back({g, begin, valid_end});
    }
    return experts;
}

std::vector<int32_t> defined_rows(const Problem& problem, int64_t rows) {
    constexpr int32_t kAmbiguous = -2;
    std::vector<int32_t> owner(static_cast<std::size_t>(std::max<int64_t>(rows, 0)), -1);
    for (const ExpertRows& expert : computed_experts(problem)) {
        for (int64_t r = expert.begin; r < std::min(expert.end, rows); ++r) {
            int32_t& slot = owner[static_cast<std::size_t>(r)];
            slot = (slot == -1) ? expert.expert : kAmbiguous;
        }
    }
    for (int32_t& slot : owner) {
        if (slot == kAmbiguous) slot = -1;
    }
    return owner;
}

// ---- the GEMM -----------------------------------------------------------------------------------

float Result::c_value(std::size_t row_index, int64_t col) const {
    return load_element(c.data(), row_index * static_cast<std::size_t>(n) + static_cast<std::size_t>(col), c_dtype);
}

float Result::d_value(std::size_t row_index, int64_t col) const {
    return load_element(d.data(), row_index * static_cast<std::size_t>(n) + static_cast<std::size_t>(col), d_dtype);
}

// Up to kBlockRows rows of one expert share each pass over B_g.
constexpr int kBlockRows = 4;

// Dot products of kBlockRows A rows (widened to double) with one B row, in double. Products of
// two bf16 values are exact in double; the sum runs in 4 lanes per row (k mod 4) added in a fixed
// order, so the result is the same on every run and thread count.
static void dot_block(const double* const* a_rows, const uint16_t* b_row, int64_t k, double* sums) {
    double lanes[kBlockRows][4] = {};
    int64_t kk = 0;
    for (; kk + 4 <= k; kk += 4) {
        const double b0 = bf16_to_float(b_row[kk + 0]);
        const double b1 = bf16_to_float(b_row[kk + 1]);
        const double b2 = bf16_to_float(b_row[kk + 2]);
        const double b3 = bf16_to_float(b_row[kk + 3]);
        for (int r = 0; r < kBlockRows; ++r) {
            lanes[r][0] += a_rows[r][kk + 0] * b0;
            lanes[r][1] += a_rows[r][kk + 1] * b1;
            lanes[r][2] += a_rows[r][kk + 2] * b2;
            lanes[r][3] += a_rows[r][kk + 3] * b3;
        }
    }
    for (; kk < k; ++kk) {
        const double b_value = bf16_to_float(b_row[kk]);
        for (int r = 0; r < kBlockRows; ++r) lanes[r][kk & 3] += a_rows[r][kk] * b_value;
    }
    for (int r = 0; r < kBlockRows; ++r) sums[r] = (lanes[r][0] + lanes[r][1]) + (lanes[r][2] + lanes[r][3]);
}

// The same sums for every column of an N-major B_g (K rows of N): sums[r * n + col]. Each lane
// adds its k (k mod 4) in ascending order as dot_block does, so both layouts give the same bits;
// walking B_g row by row keeps the reads contiguous.
static void dot_block_n_major(const double* const* a_rows, const uint16_t* b_expert, int64_t n, int64_t k,
                              std::vector<double>* sums) {
    const std::size_t columns = static_cast<std::size_t>(n);
    std::vector<double> lanes(kBlockRows * columns * 4, 0.0);
    for (int64_t kk = 0; kk < k; ++kk) {
        const uint16_t* b_row = b_expert + static_cast<std::size_t>(kk) * columns;
        const std::size_t lane = static_cast<std::size_t>(kk & 3);
        for (std::size_t col = 0; col < columns; ++col) {
            const double b_value = bf16_to_float(b_row[col]);
            for (int r = 0; r < kBlockRows; ++r) lanes[(r * columns + col) * 4 + lane] += a_rows[r][kk] * b_value;
        }
    }
    sums->resize(kBlockRows * columns);
    for (std::size_t i = 0; i < kBlockRows * columns; ++i) {
        const double* l = &lanes[i * 4];
        (*sums)[i] = (l[0] + l[1]) + (l[2] + l[3]);
    }
}

// The contract's epilogue for one element, in float.
static void epilogue(float acc, float alpha, float prob, const Problem& problem, int32_t expert, int64_t col,
                     float* c_value, float* d_value) {
    if (problem.bias_dtype != kDTypeNone) {
        const float bias = load_element(problem.bias,
                                        static_cast<std::size_t>(expert) * static_cast<std::size_t>(problem.n) +
                                            static_cast<std::size_t>(col),
                                        problem.bias_dtype);
        const float prob_bias = prob * bias;  // rounded to float before the fma
        const float v = std::fma(acc, alpha, prob_bias);
        *c_value = v;
        *d_value = v;
    } else {
        const float g = acc * alpha;
        *c_value = g;
        *d_value = g * prob;  // from fp32 g, not from the rounded C
    }
}

namespace {
struct RowBlock {
    std::size_t first;  // index into the result's row list
    int count;          // rows in this block, 1..kBlockRows
    int32_t expert;
};
}  // namespace

Result compute_reference(const Problem& problem, const std::vector<int64_t>* rows, int threads) {
    if (problem.n <= 0 || problem.k <= 0 || problem.num_experts <= 0 || problem.m < 0) {
        throw std::invalid_argument("compute_reference: bad shape");
    }
    if (dtype_size(problem.c_dtype) == 0 || dtype_size(problem.d_dtype) == 0) {
        throw std::invalid_argument("compute_reference: bad output dtype");
    }
    if (problem.weight_layout != kWeightLayoutKMajor && problem.weight_layout != kWeightLayoutNMajor) {
        throw std::invalid_argument("compute_reference: unknown weight layout");
    }
    if (problem.bias_dtype != kDTypeNone && (dtype_size(problem.bias_dtype) == 0 || problem.bias == nullptr)) {
        throw std::invalid_argument("compute_reference: bias dtype without bias (or unknown dtype)");
    }
    const std::vector<int32_t> owner = defined_rows(problem, problem.m);

    Result result;
    result.n = problem.n;
    result.c_dtype = problem.c_dtype;
    result.d_dtype = problem.d_dtype;
    if (rows == nullptr) {
        for (int64_t r = 0; r < problem.m; ++r) {
            if (owner[static_cast<std::size_t>(r)] >= 0) result.rows.push_back(r);
        }
    } else {
        std::vector<int64_t> requested = *rows;
        std::sort(requested.begin(), requested.end());
        requested.erase(std::unique(requested.begin(), requested.end()), requested.end());
        for (int64_t r : requested) {
            if (r >= 0 && r < problem.m && owner[static_cast<std::size_t>(r)] >= 0) result.rows.push_back(r);
        }
    }
    for (int64_t r : result.rows) result.experts.push_back(owner[static_cast<std::size_t>(r)]);

    const std::size_t n = static_cast<std::size_t>(problem.n);
    const std::size_t k = static_cast<std::size_t>(problem.k);
    result.c.assign(result.rows.size() * n * dtype_size(problem.c_dtype), 0);
    result.d.assign(result.rows.size() * n * dtype_size(problem.d_dtype), 0);

    std::vector<RowBlock> blocks;
    for (std::size_t i = 0; i < result.rows.size();) {
        RowBlock block{i, 1, result.experts[i]};
        while (block.count < kBlockRows && i + block.count < result.rows.size() &&
               result.experts[i + block.count] == block.expert) {
            ++block.count;
        }
        blocks.push_back(block);
        i += block.count;
    }

    parallel_for(static_cast<int64_t>(blocks.size()), threads, [&](int64_t block_index) {
        const RowBlock& block = blocks[static_cast<std::size_t>(block_index)];
        const int32_t g = block.expert;
        const uint16_t* b_expert = problem.b != nullptr
                                       ? problem.b + static_cast<std::size_t>(g) * n * k
                                       : problem.b_experts[g];
        std::vector<double> a_wide(static_cast<std::size_t>(kBlockRows) * k);
        const double* a_rows[kBlockRows];
        for (int r = 0; r < kBlockRows; ++r) {
            // Short blocks repeat their last row so the inner loop keeps a fixed shape.
            const int source = std::min(r, block.count - 1);
            const int64_t row = result.rows[block.first + static_cast<std::size_t>(source)];
            double* wide = a_wide.data() + static_cast<std::size_t>(r) * k;
            for (std::size_t kk = 0; kk < k; ++kk) wide[kk] = bf16_to_float(problem.a[static_cast<std::size_t>(row) * k + kk]);
            a_rows[r] = wide;
        }
        const float alpha = problem.alpha[g];
        const bool n_major = problem.weight_layout == kWeightLayoutNMajor;
        std::vector<double> n_major_sums;
        if (n_major) dot_block_n_major(a_rows, b_expert, problem.n, problem.k, &n_major_sums);
        for (std::size_t col = 0; col < n; ++col) {
            double sums[kBlockRows];
            if (n_major) {
                for (int r = 0; r < kBlockRows; ++r) sums[r] = n_major_sums[static_cast<std::size_t>(r) * n + col];
            } else {
                dot_block(a_rows, b_expert + col * k, problem.k, sums);
            }
            for (int r = 0; r < block.count; ++r) {
                const std::size_t out_index = block.first + static_cast<std::size_t>(r);
                const int64_t row = result.rows[out_index];
                const float acc = static_cast<float>(sums[r]);  // the one rounding of the accumulator
                float c_value, d_value;
                epilogue(acc, alpha, problem.prob[row], problem, g, static_cast<int64_t>(col), &c_value, &d_value);
                store_element(result.c.data(), out_index * n + col, problem.c_dtype, c_value);
                store_element(result.d.data(), out_index * n + col, problem.d_dtype, d_value);
            }
        }
    });
    return result;
}

std::vector<int64_t> sample_rows(const Problem& problem, int per_expert, uint64_t seed) {
    std::vector<int64_t> rows;
    for (const ExpertRows& expert : computed_experts(problem)) {
        const int64_t size = expert.end - expert.begin;
        if (size <= per_expert + 2) {
            for (int64_t r = expert.begin; r < expert.end; ++r) rows.push_back(r);
            continue;
        }
        Rng rng(mix_seed(seed, static_cast<uint64_t>(expert.expert)));
        std::set<int64_t> chosen{expert.begin, expert.end - 1};
        while (static_cast<int64_t>(chosen.size()) < per_expert + 2) chosen.insert(expert.begin + rng.below(size));
        rows.insert(rows.end(), chosen.begin(), chosen.end());
    }
    std::sort(rows.begin(), rows.end());
    rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
    return rows;
}

// ---- comparing ----------------------------------------------------------------------------------

double FrobeniusSum::relative() const {
    if (ref_squared == 0.0) return diff_squared == 0.0 ? 0.0 : std::numeric_limits<double>::infinity();
    return std::sqrt(diff_squared / ref_squared);
}

double relative_frobenius(const std::vector<double>& got, const std::vector<double>& ref) {
    if (got.size() != ref.size()) throw std::invalid_argument("relative_frobenius: size mismatch");
    FrobeniusSum sum;
    for (std::size_t i = 0; i < got.size(); ++i) sum.add(got[i], ref[i]);
    return sum.relative();
}

}  // namespace ggemm_test
