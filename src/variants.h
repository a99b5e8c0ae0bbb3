// The compiled kernel variants of each architecture, as data the planner chooses from.
#pragma once

#include "src/kernel_variant.h"

namespace ggemm {

// Defined in src/variants_sm90.cpp (the SM90 families below, in the planner's order) and
// src/variants_sm100.cu (compiled for sm_100a only, the translation unit that instantiates the
// SM100 kernels).
const KernelVariant* sm90_variants(int* count);
const KernelVariant* sm100_variants(int* count);

// The families of SM90 variants, each defined in the translation unit that instantiates its
// kernels (src/variants_sm90_<family>.cu, compiled for sm_90a only).
VariantList sm90_wide_variants();
VariantList sm90_narrow_variants();
VariantList sm90_tma_store_variants();
VariantList sm90_nmajor_variants();
VariantList sm90_cluster_variants();
VariantList sm90_dglu_variants();
VariantList sm90_pingpong_variants();

}  // namespace ggemm
