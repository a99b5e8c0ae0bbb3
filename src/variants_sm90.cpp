// The SM90 kernel variants the planner chooses from (of two equal choices it keeps the earlier in
// this table's order): one per tile width and weight layout with the math warps' own stores (any
// dtypes; the N-major kernels differ only in how B is loaded and described), TMA-store variants
// for a bf16 D without C (either weight layout), some of them again as clusters of two CTAs along
// M that multicast the weight tile, for dGLU with a bf16 saved pre-activation and d_pre,
// kernels that load the one and store the other by TMA, and a ping-pong kernel for decode layers
// of small K (src/heuristics.h, pingpong_pays). Each family is defined beside its kernels
// (src/variants.h); the table is put together on first use.
#include "src/variants.h"

namespace ggemm {

namespace {

// Room for every family's variants; a table that outgrows it lists none, which the CPU tests
// catch (tests/host/test_compiled_variants.cpp).
constexpr int kCapacity = 40;

struct Table {
    KernelVariant items[kCapacity];
    int count = 0;
};

Table make_table() {
    const VariantList families[] = {sm90_wide_variants(),    sm90_narrow_variants(),  sm90_tma_store_variants(),
                                      sm90_nmajor_variants(),  sm90_cluster_variants(), sm90_dglu_variants(),
                                      sm90_pingpong_variants()};
    Table table{};
    for (const VariantList& family : families) {
        if (table.count + family.count > kCapacity) return Table{};
        for (int i = 0; i < family.count; ++i) table.items[table.count++] = family.items[i];
    }
    return table;
}

}  // namespace

const KernelVariant* sm90_variants(int* count) {
    static const Table table = make_table();
    *count = table.count;
    return table.items;
}

}  // namespace ggemm
