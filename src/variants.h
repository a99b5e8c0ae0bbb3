// The compiled kernel variants of each architecture, as data the planner chooses from.
#pragma once

#include "src/kernel_variant.h"

namespace ggemm {

// Defined in src/variants_sm90.cu (compiled for sm_90a only) and src/variants_sm100.cu
// (sm_100a only), the translation units that instantiate the kernels.
const KernelVariant* sm90_variants(int* count);
const KernelVariant* sm100_variants(int* count);

}  // namespace ggemm
