// The fill rule (src/heuristics.h): for capacities that leave the best-scored kernel under two
// waves of tiles, which candidate serves the plan, and how describe says so.
#include "src/fill.h"

#include "kernels/common/split_k.h"
#include "src/plan.h"

namespace ggemm {

namespace {

// True when option `a` should be chosen over `b`: proven (KernelVariant::proven), then faster,
// then the primary, then the better score.
bool better_fill(const FillOption& a, const FillOption& b, const Candidate* primary, bool large) {
    if (a.candidate->variant->proven != b.candidate->variant->proven) return a.candidate->variant->proven;
    if (a.estimate.total != b.estimate.total) return a.estimate.total < b.estimate.total;
    if ((a.candidate == primary) != (b.candidate == primary)) return a.candidate == primary;
    return better_choice(*a.candidate->variant, a.candidate->score, *b.candidate->variant, b.candidate->score, large);
}

}  // namespace

FillDecision decide_fill(const ggemm_plan_desc& desc, const std::vector<Candidate>& candidates,
                         const Candidate& primary) {
    FillDecision d;
    d.primary = &primary;
    d.chosen = &primary;
    const KernelVariant& v = *primary.variant;
    d.primary_tiles = tile_count(v, desc.m_capacity, desc.n);
    const FillEstimate probe = estimate_fill(v, desc.m_capacity, desc.n, desc.k, desc.num_experts, 1, primary.score.grid);
    d.modelled = probe.total > 0 && d.primary_tiles < kFillWaves * primary.score.grid;
    if (!d.modelled) {
        d.splits = desc.split_k >= 2 ? desc.split_k : 1;
        return d;
    }
    // K is split only when desc->split_k asks. The model would split it for single experts of a
    // few hundred rows, but on an H200 each such split ran 1.1-1.5x the time of the unsplit
    // narrower tiles it chose instead (docs/PERFORMANCE.md).
    const int32_t splits = desc.split_k >= 1 ? desc.split_k : 1;
    const FillOption* best = nullptr;
    const bool large = large_experts(desc.m_capacity, desc.num_experts);
    for (const Candidate& c : candidates) {
        // The model never changes the cluster: clusters (SM90 multicast, SM100 CTA pairs) are
        // taken only when asked for, and then every candidate is one.
        if (c.variant->cluster_m != v.cluster_m) continue;
        d.options.push_back({&c, estimate_fill(*c.variant, desc.m_capacity, desc.n, desc.k, desc.num_experts,
                                               splits, c.score.grid)});
    }
    for (const FillOption& option : d.options) {
        if (option.estimate.total <= 0) continue;  // no model for this arch
        if (best == nullptr || better_fill(option, *best, &primary, large)) best = &option;
    }
    if (best != nullptr) {
        d.chosen = best->candidate;
        d.splits = best->estimate.splits;
    }
    return d;
}

void describe_fill(std::string* text, const ggemm_plan& plan, const FillDecision& fill) {
    const ggemm_plan_desc& desc = plan.desc;
    const Candidate& primary = *fill.primary;
    appendf(text, "fill: at M = m_capacity = %lld the best score, %s, has %lld tiles on %d CTAs (%.2f waves): %s\n",
            static_cast<long long>(desc.m_capacity), primary.variant->name, static_cast<long long>(fill.primary_tiles),
            primary.score.grid, primary.score.grid > 0 ? static_cast<double>(fill.primary_tiles) / primary.score.grid : 0.0,
            fill.modelled ? "fewer than 2 waves, so the fill model chooses (estimated SM cycles, "
                            "max(waves x item, L2, DRAM); the primary on ties)"
                          : "the score's choice stands (2 waves or more, or no fill model for this arch)");
    // One estimate per candidate, at the plan's split of K.
    for (const FillOption& option : fill.options) {
        const FillEstimate& e = option.estimate;
        const bool chosen = option.candidate == fill.chosen;
        appendf(text, "  %-8s %10.0f = max(%lld wave%s x %.0f, L2 %.0f, DRAM %.0f): %lld tiles, K split %d  %s\n",
                chosen ? "chosen" : "", e.total, static_cast<long long>(e.waves), e.waves == 1 ? "" : "s", e.item_cycles,
                e.l2_cycles, e.dram_cycles, static_cast<long long>(e.tiles), e.splits, option.candidate->variant->name);
    }
    if (plan.k_splits > 1) {
        const int64_t k_blocks = (desc.k + kSplitBlockK - 1) / kSplitBlockK;
        appendf(text,
                "split-K: K split %d ways (%lld k-blocks of %d, %lld to %lld per split) on calls of at most %lld rows "
                "(larger calls run unsplit); fp32 partials summed in split order by the last split to arrive%s\n",
                plan.k_splits, static_cast<long long>(k_blocks), kSplitBlockK,
                static_cast<long long>(k_blocks / plan.k_splits),
                static_cast<long long>((k_blocks + plan.k_splits - 1) / plan.k_splits),
                static_cast<long long>(plan.split_rows), desc.split_k >= 2 ? " (desc->split_k)" : "");
    } else {
        appendf(text, "split-K: none%s\n", desc.split_k == 1 ? " (desc->split_k = 1)" : "");
    }
}

}  // namespace ggemm
