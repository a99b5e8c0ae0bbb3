// The fill rule: where the plan's m_capacity leaves the best-scored kernel variant under
// kFillWaves waves of tiles, the fill model (src/heuristics.h) chooses the variant instead, with
// K split only as desc->split_k asks (kernels/common/split_k.h), and the plan's description
// lists its estimates.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ggemm.h"
#include "src/heuristics.h"
#include "src/kernel_variant.h"

struct ggemm_plan;

namespace ggemm {

// A variant that can serve the plan, with its score.
struct Candidate {
    const KernelVariant* variant;
    VariantScore score;
};

// One estimate the fill model made: a candidate with the plan's split of K.
struct FillOption {
    const Candidate* candidate;
    FillEstimate estimate;
};

// What the rule chose, and every estimate it weighed (empty when the model did not run).
struct FillDecision {
    const Candidate* primary = nullptr;  // the best score
    const Candidate* chosen = nullptr;
    int32_t splits = 1;
    int64_t primary_tiles = 0;           // at M = m_capacity
    bool modelled = false;               // the fill model ran (the primary has few waves)
    std::vector<FillOption> options;
};

// The fill rule over `candidates` (those that can serve `desc`), `primary` the best-scored.
FillDecision decide_fill(const ggemm_plan_desc& desc, const std::vector<Candidate>& candidates,
                         const Candidate& primary);

// Appends the fill rule's lines (the estimates weighed, the split) to a plan's description.
void describe_fill(std::string* text, const ggemm_plan& plan, const FillDecision& fill);

}  // namespace ggemm
