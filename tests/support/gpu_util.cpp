// Host side of the GPU test helpers: case inputs and output checks. No CUDA here: this file is
// also linked into the CPU-only host test binary.
#define GGEMM_TEST_HOST_ONLY 1
#include "tests/support/gpu_util.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace ggemm_test {

constexpr int64_t kRowAlignment = 256;

static int64_t round_up_rows(int64_t rows) { return (rows + kRowAlignment - 1) / kRowAlignment * kRowAlignment; }

std::string describe(const CaseConfig& config) {
    std::ostringstream text;
    if (config.label[0] != '\0') text << config.label << ": ";
    text << "L=" << config.num_experts << " N=" << config.n << " K=" << config.k;
    text << " C=" << (config.generate_c ? dtype_name(config.c_dtype) : "off");
    text << " D=" << dtype_name(config.d_dtype) << " bias=" << dtype_name(config.bias_dtype);
    text << (config.scheduler == GGEMM_SCHEDULER_DYNAMIC ? " dynamic" : " static");
    switch (config.layout) {
        case RowLayout::kRandom: text << " rows=random"; break;
        case RowLayout::kOneExpert: text << " rows=all-in-expert-" << config.full_expert; break;
        case RowLayout::kExplicit: text << " rows=explicit"; break;
    }
    if (config.one_shot) text << " one-shot";
    if (config.weight_layout == GGEMM_WEIGHT_LAYOUT_N_MAJOR) text << " N-major";
    if (config.tile_m != 0) text << " tile_m=" << config.tile_m;
    if (config.tile_n != 0) text << " tile_n=" << config.tile_n;
    if (config.cluster_m != 0) text << " cluster_m=" << config.cluster_m;
    if (config.split_k != 0) text << " split_k=" << config.split_k;
    if (config.null_alpha) text << " alpha=NULL";
    if (config.null_prob) text << " prob=NULL";
    if (config.activation == GGEMM_ACTIVATION_SWIGLU) text << " SwiGLU";
    if (config.activation == GGEMM_ACTIVATION_CLAMPED_GEGLU) {
        text << " clamped-GeGLU(s=" << config.glu_scale << ",limit=" << config.glu_limit << ",offset=" << config.glu_offset
             << ")";
    }
    return text.str();
}

Problem HostCase::problem() const {
    Problem p;
    p.m = m;
    p.n = config.n;
    p.k = config.k;
    p.num_experts = config.num_experts;
    p.a = a.data();
    p.b = b.data();
    p.padded_offsets = offsets.data();
    p.alpha = alpha.data();
    p.prob = prob.data();
    p.bias = config.bias_dtype == GGEMM_DTYPE_NONE ? nullptr : bias.data();
    p.bias_dtype = config.bias_dtype;
    p.c_dtype = config.c_dtype;
    p.d_dtype = config.d_dtype;
    p.weight_layout = config.weight_layout;
    p.valid_rows = valid_rows.empty() ? nullptr : valid_rows.data();
    return p;
}

int64_t HostCase::rows_used() const { return offsets.empty() ? 0 : offsets.back(); }

int32_t HostCase::empty_experts() const {
    int32_t empty = 0;
    for (std::size_t g = 0; g < offsets.size(); ++g) empty += offsets[g] == (g == 0 ? 0 : offsets[g - 1]);
    return empty;
}

std::vector<int32_t> draw_offsets(const CaseConfig& config, uint64_t seed) {
    const int32_t experts = config.num_experts;
    std::vector<int64_t> rows(static_cast<std::size_t>(experts), 0);
    Rng rng(seed);
    switch (config.layout) {
        case RowLayout::kRandom: {
            for (auto& r : rows) {
                const bool empty = rng.uniform(0.0f, 1.0f) < config.empty_fraction;
                r = empty ? 0 : round_up_rows(rng.between(1, config.max_tokens));
            }
            if (experts >= 3) rows[static_cast<std::size_t>(rng.below(experts))] = 0;  // at least one empty
            if (std::all_of(rows.begin(), rows.end(), [](int64_t r) { return r == 0; })) {
                rows[static_cast<std::size_t>(rng.below(experts))] = round_up_rows(config.max_tokens);
            }
            break;
        }
        case RowLayout::kOneExpert:
            rows.at(static_cast<std::size_t>(config.full_expert)) = round_up_rows(config.tokens);
            break;
        case RowLayout::kExplicit:
            throw std::invalid_argument("draw_offsets: explicit offsets are not drawn");
    }
    std::vector<int32_t> offsets;
    int64_t end = 0;
    for (int64_t r : rows) {
        end += r;
        if (end > INT32_MAX) throw std::invalid_argument("draw_offsets: too many rows for int32 offsets");
        offsets.push_back(static_cast<int32_t>(end));
    }
    return offsets;
}

// Fresh values for every input of an already shaped case.
static void fill_inputs(HostCase& host_case, uint64_t seed) {
    const CaseConfig& config = host_case.config;
    const std::size_t experts = static_cast<std::size_t>(config.num_experts);
    host_case.a.resize(static_cast<std::size_t>(host_case.m * config.k));
    host_case.b.resize(experts * static_cast<std::size_t>(config.n * config.k));
    host_case.alpha.resize(experts);
    host_case.prob.resize(static_cast<std::size_t>(host_case.m));
    fill_uniform(host_case.a.data(), host_case.a.size(), kDTypeBF16, -1.0f, 1.0f, mix_seed(seed, 2));
    fill_uniform(host_case.b.data(), host_case.b.size(), kDTypeBF16, -1.0f, 1.0f, mix_seed(seed, 3));
    fill_uniform(host_case.alpha.data(), experts, kDTypeFP32, 0.25f, 2.0f, mix_seed(seed, 4));
    fill_uniform(host_case.prob.data(), host_case.prob.size(), kDTypeFP32, 0.05f, 1.0f, mix_seed(seed, 5));
    // What a NULL alpha or prob stands for.
    if (config.null_alpha) std::fill(host_case.alpha.begin(), host_case.alpha.end(), 1.0f);
    if (config.null_prob) std::fill(host_case.prob.begin(), host_case.prob.end(), 1.0f);
    if (config.bias_dtype != GGEMM_DTYPE_NONE) {
        const std::size_t count = experts * static_cast<std::size_t>(config.n);
        host_case.bias.resize(count * dtype_size(config.bias_dtype));
        fill_uniform(host_case.bias.data(), count, config.bias_dtype, -2.0f, 2.0f, mix_seed(seed, 6));
    } else {
        host_case.bias.clear();
    }
}

HostCase make_case(const CaseConfig& config) {
    if (config.num_experts < 1) throw std::invalid_argument("make_case: num_experts < 1");
    HostCase host_case;
    host_case.config = config;
    if (config.layout == RowLayout::kExplicit) {
        if (static_cast<int32_t>(config.offsets.size()) != config.num_experts) {
            throw std::invalid_argument("make_case: explicit offsets must have num_experts entries");
        }
        host_case.offsets = config.offsets;
    } else {
        host_case.offsets = draw_offsets(config, mix_seed(config.seed, 1));
    }
    host_case.m = config.fixed_m > 0 ? config.fixed_m
                                     : std::max<int64_t>(host_case.rows_used(), 0) + config.slack_rows;
    if (host_case.m % kRowAlignment != 0) throw std::invalid_argument("make_case: M must be a multiple of 256");
    if (config.layout != RowLayout::kExplicit && host_case.rows_used() > host_case.m) {
        throw std::invalid_argument("make_case: offsets end past fixed_m");
    }
    fill_inputs(host_case, config.seed);
    return host_case;
}

HostCase with_transposed_weights(const HostCase& host_case) {
    HostCase other = host_case;
    const bool n_major = host_case.config.weight_layout == GGEMM_WEIGHT_LAYOUT_N_MAJOR;
    other.config.weight_layout = n_major ? GGEMM_WEIGHT_LAYOUT_K_MAJOR : GGEMM_WEIGHT_LAYOUT_N_MAJOR;
    // Each expert's rows x columns matrix becomes columns x rows.
    const std::size_t rows = static_cast<std::size_t>(n_major ? host_case.config.k : host_case.config.n);
    const std::size_t columns = static_cast<std::size_t>(n_major ? host_case.config.n : host_case.config.k);
    for (std::size_t g = 0; g < static_cast<std::size_t>(host_case.config.num_experts); ++g) {
        const uint16_t* from = host_case.b.data() + g * rows * columns;
        uint16_t* to = other.b.data() + g * rows * columns;
        for (std::size_t r = 0; r < rows; ++r)
            for (std::size_t c = 0; c < columns; ++c) to[c * rows + r] = from[r * columns + c];
    }
    return other;
}

void refresh_case(HostCase& host_case, uint64_t seed, bool keep_offsets) {
    if (!keep_offsets) {
        if (host_case.config.layout == RowLayout::kExplicit) throw std::invalid_argument("refresh_case: explicit layout");
        bool fits = false;
        for (uint64_t attempt = 0; attempt < 100 && !fits; ++attempt) {
            host_case.offsets = draw_offsets(host_case.config, mix_seed(seed, 100 + attempt));
            fits = host_case.rows_used() <= host_case.m;
        }
        if (!fits) throw std::invalid_argument("refresh_case: could not draw offsets that fit M");
    }
    fill_inputs(host_case, seed);
}

std::vector<int64_t> reference_rows(const HostCase& host_case) {
    const Problem problem = host_case.problem();
    if (host_case.config.sampled_rows_per_expert >= 0) {
        return sample_rows(problem, host_case.config.sampled_rows_per_expert, mix_seed(host_case.config.seed, 7));
    }
    std::vector<int64_t> rows;
    const std::vector<int32_t> owner = defined_rows(problem, host_case.m);
    for (int64_t r = 0; r < host_case.m; ++r) {
        if (owner[static_cast<std::size_t>(r)] >= 0) rows.push_back(r);
    }
    return rows;
}

// ---- checks -------------------------------------------------------------------------------------

double tolerance(int32_t dtype) { return dtype == GGEMM_DTYPE_FP32 ? 1e-4 : 1e-2; }

bool OutputCheck::ok() const {
    if (touched != 0) return false;
    if (untouched_only) return true;
    return compared > 0 && nonfinite == 0 && relative_error <= tolerance(dtype);  // NaN error fails
}

std::string OutputCheck::summary() const {
    std::ostringstream text;
    text << name << "(" << dtype_name(dtype) << ")";
    if (untouched_only) {
        text << " must be untouched: " << touched << " bytes changed";
    } else {
        text.precision(3);
        text << " rel err " << std::scientific << relative_error << " (bound " << tolerance(dtype) << ") over "
             << compared << " elements; nonfinite " << nonfinite << "; touched outside defined rows " << touched;
    }
    if (!first_problem.empty()) text << "; first defect: " << first_problem;
    return text.str();
}

int64_t count_unpoisoned(const void* data, std::size_t bytes) {
    const uint8_t* bytes_ptr = static_cast<const uint8_t*>(data);
    int64_t changed = 0;
    for (std::size_t i = 0; i < bytes; ++i) changed += bytes_ptr[i] != kPoisonByte;
    return changed;
}

namespace {

// One thread's share of a check; merged in thread order.
struct PartialCheck {
    FrobeniusSum frobenius;
    int64_t compared = 0;
    int64_t nonfinite = 0;
    int64_t touched = 0;
    int64_t first_row = INT64_MAX;  // row of the first defect this thread saw
    std::string first_problem;
    double worst_diff = -1.0;
    std::string worst;

    void note(int64_t row, const std::string& what) {
        if (row < first_row) {
            first_row = row;
            first_problem = what;
        }
    }
};

template <typename Body>
void split_rows(int64_t rows, std::vector<PartialCheck>& partials, Body body) {
    const int threads = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(default_threads(), rows / 64 + 1)));
    partials.assign(static_cast<std::size_t>(threads), PartialCheck{});
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
        const int64_t begin = rows * t / threads;
        const int64_t end = rows * (t + 1) / threads;
        pool.emplace_back([&, t, begin, end]() { body(partials[static_cast<std::size_t>(t)], begin, end); });
    }
    for (auto& thread : pool) thread.join();
}

std::string element_text(int64_t row, int64_t col, const char* what) {
    std::ostringstream text;
    text << "row " << row << " col " << col << " " << what;
    return text.str();
}

}  // namespace

OutputCheck check_output(const char* name, const void* got, int64_t rows_allocated, int64_t n, int32_t dtype,
                         const Result& reference, bool reference_is_c, const std::vector<int32_t>& owner,
                         bool untouched_everywhere) {
    OutputCheck check;
    check.name = name;
    check.dtype = dtype;
    check.untouched_only = untouched_everywhere;
    const std::size_t element_bytes = dtype_size(dtype);
    const std::size_t row_bytes = static_cast<std::size_t>(n) * element_bytes;
    const uint8_t* base = static_cast<const uint8_t*>(got);
    if (static_cast<int64_t>(owner.size()) < rows_allocated) throw std::invalid_argument("check_output: owner too short");

    // Pass 1: rows that must be untouched keep the poison; defined rows are finite.
    std::vector<PartialCheck> partials;
    split_rows(rows_allocated, partials, [&](PartialCheck& part, int64_t begin, int64_t end) {
        for (int64_t row = begin; row < end; ++row) {
            const uint8_t* row_data = base + static_cast<std::size_t>(row) * row_bytes;
            if (untouched_everywhere || owner[static_cast<std::size_t>(row)] < 0) {
                const int64_t changed = count_unpoisoned(row_data, row_bytes);
                if (changed != 0) {
                    part.touched += changed;
                    part.note(row, "row " + std::to_string(row) + " must be untouched but " + std::to_string(changed) +
                                       " bytes changed");
                }
                continue;
            }
            for (int64_t col = 0; col < n; ++col) {
                if (!element_is_finite(row_data, static_cast<std::size_t>(col), dtype)) {
                    if (part.nonfinite == 0) part.note(row, element_text(row, col, "is NaN/Inf (unwritten poison?)"));
                    ++part.nonfinite;
                }
            }
        }
    });
    std::string first_problem;
    int64_t first_row = INT64_MAX;
    for (const PartialCheck& part : partials) {
        check.touched += part.touched;
        check.nonfinite += part.nonfinite;
        if (part.first_row < first_row) {
            first_row = part.first_row;
            first_problem = part.first_problem;
        }
    }
    if (untouched_everywhere) {
        check.first_problem = first_problem;
        return check;
    }

    // Pass 2: the reference rows, element by element.
    const std::vector<uint8_t>& expected = reference_is_c ? reference.c : reference.d;
    const int32_t expected_dtype = reference_is_c ? reference.c_dtype : reference.d_dtype;
    if (expected_dtype != dtype || reference.n != n) throw std::invalid_argument("check_output: reference does not match");
    const int64_t reference_rows = static_cast<int64_t>(reference.rows.size());
    split_rows(reference_rows, partials, [&](PartialCheck& part, int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
            const int64_t row = reference.rows[static_cast<std::size_t>(i)];
            if (row >= rows_allocated) continue;
            for (int64_t col = 0; col < n; ++col) {
                const double got_value = load_element(base, static_cast<std::size_t>(row * n + col), dtype);
                const double ref_value =
                    load_element(expected.data(), static_cast<std::size_t>(i * n + col), expected_dtype);
                part.frobenius.add(got_value, ref_value);
                ++part.compared;
                const double diff = std::fabs(got_value - ref_value);
                if (!(diff <= part.worst_diff)) {  // also catches NaN
                    part.worst_diff = std::isnan(diff) ? INFINITY : diff;
                    std::ostringstream text;
                    text << "largest difference at row " << row << " col " << col << ": got " << got_value
                         << ", reference " << ref_value;
                    part.worst = text.str();
                }
            }
        }
    });
    FrobeniusSum total;
    double worst_diff = -1.0;
    std::string worst;
    for (const PartialCheck& part : partials) {
        total.merge(part.frobenius);
        check.compared += part.compared;
        if (part.worst_diff > worst_diff) {
            worst_diff = part.worst_diff;
            worst = part.worst;
        }
    }
    check.relative_error = total.relative();
    check.first_problem = first_problem;
    if (check.relative_error > tolerance(dtype) || std::isnan(check.relative_error)) {
        check.first_problem += (check.first_problem.empty() ? "" : "; ") + worst;
    }
    return check;
}

}  // namespace ggemm_test
