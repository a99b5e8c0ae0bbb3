/* The public header compiled as strict C99 (-std=c99 -pedantic -Wall -Wextra -Werror), with its
 * struct layouts pinned: bindings in other languages copy these offsets, so a change here is an
 * ABI break. C99 has no _Static_assert; a negative array size fails the compile instead. */
#include <stddef.h>

#include "ggemm.h"

#define ABI_ASSERT(name, condition) typedef char abi_assert_##name[(condition) ? 1 : -1]

ABI_ASSERT(status_is_int32, sizeof(ggemm_status_t) == 4);

ABI_ASSERT(desc_size, sizeof(ggemm_plan_desc) == 120);
ABI_ASSERT(desc_struct_size, offsetof(ggemm_plan_desc, struct_size) == 0);
ABI_ASSERT(desc_device, offsetof(ggemm_plan_desc, device) == 4);
ABI_ASSERT(desc_m_capacity, offsetof(ggemm_plan_desc, m_capacity) == 8);
ABI_ASSERT(desc_n, offsetof(ggemm_plan_desc, n) == 16);
ABI_ASSERT(desc_k, offsetof(ggemm_plan_desc, k) == 24);
ABI_ASSERT(desc_num_experts, offsetof(ggemm_plan_desc, num_experts) == 32);
ABI_ASSERT(desc_weight_mode, offsetof(ggemm_plan_desc, weight_mode) == 36);
ABI_ASSERT(desc_c_dtype, offsetof(ggemm_plan_desc, c_dtype) == 40);
ABI_ASSERT(desc_d_dtype, offsetof(ggemm_plan_desc, d_dtype) == 44);
ABI_ASSERT(desc_bias_dtype, offsetof(ggemm_plan_desc, bias_dtype) == 48);
ABI_ASSERT(desc_generate_c, offsetof(ggemm_plan_desc, generate_c) == 52);
ABI_ASSERT(desc_scheduler, offsetof(ggemm_plan_desc, scheduler) == 56);
ABI_ASSERT(desc_min_size, GGEMM_PLAN_DESC_MIN_SIZE == offsetof(ggemm_plan_desc, scheduler) + 4);
ABI_ASSERT(desc_tile_m, offsetof(ggemm_plan_desc, tile_m) == 60);
ABI_ASSERT(desc_tile_n, offsetof(ggemm_plan_desc, tile_n) == 64);
ABI_ASSERT(desc_cluster_m, offsetof(ggemm_plan_desc, cluster_m) == 68);
ABI_ASSERT(desc_sm_margin, offsetof(ggemm_plan_desc, sm_margin) == 72);
ABI_ASSERT(desc_reserved0, offsetof(ggemm_plan_desc, reserved0) == 76);
ABI_ASSERT(desc_weight_layout, offsetof(ggemm_plan_desc, weight_layout) == 80);
ABI_ASSERT(desc_reserved1, offsetof(ggemm_plan_desc, reserved1) == 84);
ABI_ASSERT(desc_split_k, offsetof(ggemm_plan_desc, split_k) == 88);
ABI_ASSERT(desc_reserved2, offsetof(ggemm_plan_desc, reserved2) == 92);
ABI_ASSERT(desc_activation, offsetof(ggemm_plan_desc, activation) == 96);
ABI_ASSERT(desc_glu_scale, offsetof(ggemm_plan_desc, glu_scale) == 100);
ABI_ASSERT(desc_glu_limit, offsetof(ggemm_plan_desc, glu_limit) == 104);
ABI_ASSERT(desc_glu_offset, offsetof(ggemm_plan_desc, glu_offset) == 108);
ABI_ASSERT(desc_glu_backward, offsetof(ggemm_plan_desc, glu_backward) == 112);
ABI_ASSERT(desc_glu_pre_dtype, offsetof(ggemm_plan_desc, glu_pre_dtype) == 116);

ABI_ASSERT(args_size, sizeof(ggemm_args) == 136);
ABI_ASSERT(args_struct_size, offsetof(ggemm_args, struct_size) == 0);
ABI_ASSERT(args_reserved0, offsetof(ggemm_args, reserved0) == 4);
ABI_ASSERT(args_m, offsetof(ggemm_args, m) == 8);
ABI_ASSERT(args_a, offsetof(ggemm_args, a) == 16);
ABI_ASSERT(args_b, offsetof(ggemm_args, b) == 24);
ABI_ASSERT(args_b_ptrs, offsetof(ggemm_args, b_ptrs) == 32);
ABI_ASSERT(args_padded_offsets, offsetof(ggemm_args, padded_offsets) == 40);
ABI_ASSERT(args_alpha, offsetof(ggemm_args, alpha) == 48);
ABI_ASSERT(args_prob, offsetof(ggemm_args, prob) == 56);
ABI_ASSERT(args_bias, offsetof(ggemm_args, bias) == 64);
ABI_ASSERT(args_c, offsetof(ggemm_args, c) == 72);
ABI_ASSERT(args_d, offsetof(ggemm_args, d) == 80);
ABI_ASSERT(args_workspace, offsetof(ggemm_args, workspace) == 88);
ABI_ASSERT(args_workspace_size, offsetof(ggemm_args, workspace_size) == 96);
ABI_ASSERT(args_device_status, offsetof(ggemm_args, device_status) == 104);
ABI_ASSERT(args_valid_rows, offsetof(ggemm_args, valid_rows) == 112);
ABI_ASSERT(args_glu_pre, offsetof(ggemm_args, glu_pre) == 120);
ABI_ASSERT(args_d_prob, offsetof(ggemm_args, d_prob) == 128);
ABI_ASSERT(args_min_size, GGEMM_ARGS_MIN_SIZE == offsetof(ggemm_args, device_status));

ABI_ASSERT(wgrad_desc_size, sizeof(ggemm_wgrad_desc) == 64);
ABI_ASSERT(wgrad_desc_struct_size, offsetof(ggemm_wgrad_desc, struct_size) == 0);
ABI_ASSERT(wgrad_desc_device, offsetof(ggemm_wgrad_desc, device) == 4);
ABI_ASSERT(wgrad_desc_m_capacity, offsetof(ggemm_wgrad_desc, m_capacity) == 8);
ABI_ASSERT(wgrad_desc_p, offsetof(ggemm_wgrad_desc, p) == 16);
ABI_ASSERT(wgrad_desc_q, offsetof(ggemm_wgrad_desc, q) == 24);
ABI_ASSERT(wgrad_desc_num_experts, offsetof(ggemm_wgrad_desc, num_experts) == 32);
ABI_ASSERT(wgrad_desc_out_dtype, offsetof(ggemm_wgrad_desc, out_dtype) == 36);
ABI_ASSERT(wgrad_desc_output_mode, offsetof(ggemm_wgrad_desc, output_mode) == 40);
ABI_ASSERT(wgrad_desc_accumulate, offsetof(ggemm_wgrad_desc, accumulate) == 44);
ABI_ASSERT(wgrad_desc_scheduler, offsetof(ggemm_wgrad_desc, scheduler) == 48);
ABI_ASSERT(wgrad_desc_sm_margin, offsetof(ggemm_wgrad_desc, sm_margin) == 52);
ABI_ASSERT(wgrad_desc_reserved0, offsetof(ggemm_wgrad_desc, reserved0) == 56);
ABI_ASSERT(wgrad_desc_reserved1, offsetof(ggemm_wgrad_desc, reserved1) == 60);
ABI_ASSERT(wgrad_desc_min_size, GGEMM_WGRAD_DESC_MIN_SIZE == 64u);

ABI_ASSERT(wgrad_args_size, sizeof(ggemm_wgrad_args) == 88);
ABI_ASSERT(wgrad_args_struct_size, offsetof(ggemm_wgrad_args, struct_size) == 0);
ABI_ASSERT(wgrad_args_reserved0, offsetof(ggemm_wgrad_args, reserved0) == 4);
ABI_ASSERT(wgrad_args_m, offsetof(ggemm_wgrad_args, m) == 8);
ABI_ASSERT(wgrad_args_x1, offsetof(ggemm_wgrad_args, x1) == 16);
ABI_ASSERT(wgrad_args_x2, offsetof(ggemm_wgrad_args, x2) == 24);
ABI_ASSERT(wgrad_args_padded_offsets, offsetof(ggemm_wgrad_args, padded_offsets) == 32);
ABI_ASSERT(wgrad_args_alpha, offsetof(ggemm_wgrad_args, alpha) == 40);
ABI_ASSERT(wgrad_args_out, offsetof(ggemm_wgrad_args, out) == 48);
ABI_ASSERT(wgrad_args_out_ptrs, offsetof(ggemm_wgrad_args, out_ptrs) == 56);
ABI_ASSERT(wgrad_args_workspace, offsetof(ggemm_wgrad_args, workspace) == 64);
ABI_ASSERT(wgrad_args_workspace_size, offsetof(ggemm_wgrad_args, workspace_size) == 72);
ABI_ASSERT(wgrad_args_device_status, offsetof(ggemm_wgrad_args, device_status) == 80);
ABI_ASSERT(wgrad_args_min_size, GGEMM_WGRAD_ARGS_MIN_SIZE == 88u);
ABI_ASSERT(wgrad_enums, GGEMM_WGRAD_OUTPUT_DENSE == 0 && GGEMM_WGRAD_OUTPUT_POINTERS == 1 &&
                           GGEMM_DEVICE_STATUS_OUTPUT_PTR_NULL == 0x40u &&
                           GGEMM_DEVICE_STATUS_OUTPUT_PTR_MISALIGNED == 0x80u);

/* Status codes are never renumbered. */
ABI_ASSERT(status_values, GGEMM_SUCCESS == 0 && GGEMM_ERROR_NULL_ARGUMENT == 1 &&
                              GGEMM_ERROR_STRUCT_SIZE == 2 && GGEMM_ERROR_INVALID_SHAPE == 3 &&
                              GGEMM_ERROR_INVALID_DTYPE == 4 && GGEMM_ERROR_MISALIGNED == 5 &&
                              GGEMM_ERROR_NOT_DEVICE_MEMORY == 6 &&
                              GGEMM_ERROR_WEIGHT_SOURCE == 7 && GGEMM_ERROR_BIAS_MISMATCH == 8 &&
                              GGEMM_ERROR_UNSUPPORTED_CONFIG == 9 && GGEMM_ERROR_WORKSPACE == 10 &&
                              GGEMM_ERROR_WRONG_DEVICE == 11 &&
                              GGEMM_ERROR_UNSUPPORTED_ARCH == 12 && GGEMM_ERROR_NO_DEVICE == 13 &&
                              GGEMM_ERROR_CUDA == 14 && GGEMM_ERROR_OUT_OF_MEMORY == 15 &&
                              GGEMM_ERROR_INTERNAL == 16 && GGEMM_ERROR_BAD_OFFSETS == 17 &&
                              GGEMM_ERROR_BAD_WEIGHT_POINTERS == 18 &&
                              GGEMM_ERROR_INVALID_VALUE == 19);

ABI_ASSERT(device_any, GGEMM_DEVICE_ANY == -1);
ABI_ASSERT(weight_layouts, GGEMM_WEIGHT_LAYOUT_K_MAJOR == 0 && GGEMM_WEIGHT_LAYOUT_N_MAJOR == 1);
ABI_ASSERT(plan_cache_default_capacity, GGEMM_PLAN_CACHE_DEFAULT_CAPACITY == 64u);

/* Every entry point has the signature the header promises (a mismatch is a compile error). */
typedef struct {
    int32_t (*version)(void);
    const char* (*status_string)(ggemm_status_t);
    ggemm_status_t (*last_error_message)(char*, uint64_t, uint64_t*);
    ggemm_status_t (*plan_desc_init)(ggemm_plan_desc*, uint32_t);
    ggemm_status_t (*args_init)(ggemm_args*, uint32_t);
    ggemm_status_t (*plan_create)(ggemm_plan_t*, const ggemm_plan_desc*);
    ggemm_status_t (*plan_destroy)(ggemm_plan_t);
    ggemm_status_t (*plan_workspace_size)(ggemm_plan_t, uint64_t*);
    ggemm_status_t (*plan_describe)(ggemm_plan_t, char*, uint64_t, uint64_t*);
    ggemm_status_t (*execute)(ggemm_plan_t, const ggemm_args*, struct CUstream_st*);
    ggemm_status_t (*grouped_gemm)(const ggemm_plan_desc*, const ggemm_args*, struct CUstream_st*);
    ggemm_status_t (*workspace_size)(const ggemm_plan_desc*, uint64_t*);
    ggemm_status_t (*plan_cache_size)(uint64_t*);
    ggemm_status_t (*plan_cache_clear)(void);
    ggemm_status_t (*check_offsets)(const int32_t*, int32_t, int64_t);
    ggemm_status_t (*check_weight_pointers)(const uint64_t*, int32_t, int32_t);
    ggemm_status_t (*plan_cache_set_capacity)(uint64_t);
    ggemm_status_t (*plan_cache_capacity)(uint64_t*);
    ggemm_status_t (*wgrad_desc_init)(ggemm_wgrad_desc*, uint32_t);
    ggemm_status_t (*wgrad_args_init)(ggemm_wgrad_args*, uint32_t);
    ggemm_status_t (*wgrad_plan_create)(ggemm_plan_t*, const ggemm_wgrad_desc*);
    ggemm_status_t (*wgrad_execute)(ggemm_plan_t, const ggemm_wgrad_args*, struct CUstream_st*);
} ggemm_entry_points;

const ggemm_entry_points ggemm_abi_entry_points = {
    ggemm_version, ggemm_status_string, ggemm_last_error_message, ggemm_plan_desc_init,
    ggemm_args_init, ggemm_plan_create, ggemm_plan_destroy, ggemm_plan_workspace_size,
    ggemm_plan_describe, ggemm_execute, ggemm_grouped_gemm, ggemm_workspace_size,
    ggemm_plan_cache_size, ggemm_plan_cache_clear, ggemm_check_offsets,
    ggemm_check_weight_pointers, ggemm_plan_cache_set_capacity, ggemm_plan_cache_capacity,
    ggemm_wgrad_desc_init, ggemm_wgrad_args_init, ggemm_wgrad_plan_create, ggemm_wgrad_execute};
