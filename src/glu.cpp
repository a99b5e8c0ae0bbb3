// ggemm_glu_interleave_rows: the host helper that reorders weights stored as [gate | up] halves
// into the fused GLU's interleaved 32-column blocks (kernels/common/glu.h holds the rule).
#include "kernels/common/glu.h"
#include "src/error.h"

extern "C" {

GGEMM_API ggemm_status_t ggemm_glu_interleave_rows(int64_t n, int64_t* source_rows) {
    return ggemm::guarded("ggemm_glu_interleave_rows", [&] {
        if (source_rows == nullptr) return ggemm::fail(GGEMM_ERROR_NULL_ARGUMENT, "source_rows is NULL");
        if (n <= 0 || n % (2 * GGEMM_GLU_BLOCK_COLUMNS) != 0) {
            return ggemm::fail(GGEMM_ERROR_INVALID_SHAPE,
                               "n must be a positive multiple of 64 (blocks of %d gate and %d up rows), got %lld",
                               GGEMM_GLU_BLOCK_COLUMNS, GGEMM_GLU_BLOCK_COLUMNS, static_cast<long long>(n));
        }
        for (int64_t halves_row = 0; halves_row < n; ++halves_row) {
            source_rows[ggemm::glu_interleaved_row(halves_row, n)] = halves_row;
        }
        return GGEMM_SUCCESS;
    });
}

}  // extern "C"
