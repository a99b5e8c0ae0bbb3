// The compiled kernel variants of each architecture, as data the planner chooses from.
#pragma once

#include "params.h"

namespace ggemm {

// Defined in kernels/sm90/ (built for sm_90a only) and kernels/sm100/ (sm_100a only).
const KernelVariant* sm90_variants(int* count);
const KernelVariant* sm100_variants(int* count);

}  // namespace ggemm
