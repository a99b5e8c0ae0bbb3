/*
 * ggemm example (C99): one grouped GEMM of three experts, one of them empty, checked against a
 * naive host computation.
 *
 *   D[r,n] = bf16(alpha[g] * sum_k A[r,k] * B_g[n,k] * prob[r])   for row r of expert g
 *   C[r,n] = fp32(alpha[g] * sum_k A[r,k] * B_g[n,k])
 *
 * Exit status: 0 when the results match, or when there is no CUDA device at all (the plan is
 * refused with GGEMM_ERROR_NO_DEVICE, which is what this program shows on a CPU-only machine);
 * 1 for any other refusal or a mismatch.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "ggemm.h"

enum { kExperts = 3, kRows = 512, kCols = 64, kDepth = 128 };

/* Expert 0 owns rows [0, 256), expert 1 none, expert 2 rows [256, 512). */
static const int32_t kOffsets[kExperts] = {256, 256, 512};
static const float kAlpha[kExperts] = {0.5f, 1.0f, 2.0f};

/* bf16 is the upper half of an fp32; the conversion rounds to nearest, ties to even. */
static uint16_t bf16_from_float(float value) {
    uint32_t bits;
    memcpy(&bits, &value, sizeof bits);
    if ((bits & 0x7fffffffu) > 0x7f800000u) return 0x7fc0; /* NaN stays NaN */
    bits += 0x7fffu + ((bits >> 16) & 1u);
    return (uint16_t)(bits >> 16);
}

static float float_from_bf16(uint16_t value) {
    uint32_t bits = (uint32_t)value << 16;
    float result;
    memcpy(&result, &bits, sizeof result);
    return result;
}

/* A fixed-seed generator, so that every run checks the same numbers. */
static uint32_t random_state = 12345u;
static float random_uniform(float low, float high) {
    random_state = random_state * 1664525u + 1013904223u;
    return low + (high - low) * (float)(random_state >> 8) * (1.0f / 16777216.0f);
}

static int report_failure(const char* what, ggemm_status_t status) {
    char message[512];
    ggemm_last_error_message(message, sizeof message, NULL);
    printf("ggemm example: %s: %s: %s\n", what, ggemm_status_string(status), message);
    return status == GGEMM_ERROR_NO_DEVICE ? 0 : 1;
}

#define CUDA_CHECK(call)                                                                     \
    do {                                                                                     \
        cudaError_t cuda_status_ = (call);                                                   \
        if (cuda_status_ != cudaSuccess) {                                                   \
            printf("ggemm example: FAIL: %s: %s\n", #call, cudaGetErrorString(cuda_status_)); \
            return 1;                                                                        \
        }                                                                                    \
    } while (0)

/* Compares every output with a double-precision host computation. The tolerance covers fp32
 * accumulation in any order plus the final rounding of D to bf16. Returns mismatches. */
static long check_results(const uint16_t* a, const uint16_t* b, const float* prob,
                          const float* c, const uint16_t* d) {
    long mismatches = 0;
    int32_t expert = 0;
    for (int32_t row = 0; row < kRows; ++row) {
        while (row >= kOffsets[expert]) ++expert;
        for (int32_t col = 0; col < kCols; ++col) {
            const uint16_t* a_row = a + (size_t)row * kDepth;
            const uint16_t* b_row = b + ((size_t)expert * kCols + col) * kDepth;
            double acc = 0.0, magnitude = 0.0;
            for (int32_t k = 0; k < kDepth; ++k) {
                double product = (double)float_from_bf16(a_row[k]) * float_from_bf16(b_row[k]);
                acc += product;
                magnitude += fabs(product);
            }
            double c_expected = acc * kAlpha[expert];
            double d_expected = c_expected * prob[row];
            double accumulation_error = 1e-6 * magnitude * kAlpha[expert];
            double c_got = c[(size_t)row * kCols + col];
            double d_got = float_from_bf16(d[(size_t)row * kCols + col]);
            int c_bad = fabs(c_got - c_expected) > accumulation_error + 1e-6;
            int d_bad = fabs(d_got - d_expected) > accumulation_error + fabs(d_expected) / 128.0 + 1e-6;
            if ((c_bad || d_bad) && mismatches++ < 5)
                printf("  row %d col %d (expert %d): C %.6g expected %.6g, D %.6g expected %.6g\n",
                       (int)row, (int)col, (int)expert, c_got, c_expected, d_got, d_expected);
        }
    }
    return mismatches;
}

int main(void) {
    printf("ggemm example: library version %d, header version %d\n", (int)ggemm_version(),
           GGEMM_VERSION);

    ggemm_plan_desc desc;
    ggemm_plan_desc_init(&desc, sizeof desc);
    desc.device = 0;
    desc.m_capacity = kRows;
    desc.n = kCols;
    desc.k = kDepth;
    desc.num_experts = kExperts;
    desc.weight_mode = GGEMM_WEIGHTS_DENSE;
    desc.c_dtype = GGEMM_DTYPE_FP32;
    desc.d_dtype = GGEMM_DTYPE_BF16;
    desc.bias_dtype = GGEMM_DTYPE_NONE;
    desc.generate_c = 1;

    ggemm_plan_t plan = NULL;
    ggemm_status_t status = ggemm_plan_create(&plan, &desc);
    if (status != GGEMM_SUCCESS) return report_failure("plan creation refused", status);

    char description[2048];
    ggemm_plan_describe(plan, description, sizeof description, NULL);
    printf("ggemm example: plan: %s\n", description);
    uint64_t workspace_size = 0;
    status = ggemm_plan_workspace_size(plan, &workspace_size);
    if (status != GGEMM_SUCCESS) return report_failure("workspace size", status);

    /* Host inputs. */
    size_t a_count = (size_t)kRows * kDepth, b_count = (size_t)kExperts * kCols * kDepth;
    size_t out_count = (size_t)kRows * kCols;
    uint16_t* a = malloc(a_count * sizeof *a);
    uint16_t* b = malloc(b_count * sizeof *b);
    float* prob = malloc(kRows * sizeof *prob);
    float* c = malloc(out_count * sizeof *c);
    uint16_t* d = malloc(out_count * sizeof *d);
    if (!a || !b || !prob || !c || !d) {
        printf("ggemm example: FAIL: out of host memory\n");
        return 1;
    }
    for (size_t i = 0; i < a_count; ++i) a[i] = bf16_from_float(random_uniform(-1.0f, 1.0f));
    for (size_t i = 0; i < b_count; ++i) b[i] = bf16_from_float(random_uniform(-1.0f, 1.0f));
    for (int32_t r = 0; r < kRows; ++r) prob[r] = random_uniform(0.25f, 1.0f);

    /* Device buffers (cudaMalloc returns 256-byte aligned memory). */
    void *a_dev, *b_dev, *prob_dev, *alpha_dev, *offsets_dev, *c_dev, *d_dev, *status_dev;
    void* workspace_dev = NULL;
    CUDA_CHECK(cudaSetDevice(0));
    CUDA_CHECK(cudaMalloc(&a_dev, a_count * sizeof *a));
    CUDA_CHECK(cudaMalloc(&b_dev, b_count * sizeof *b));
    CUDA_CHECK(cudaMalloc(&prob_dev, kRows * sizeof *prob));
    CUDA_CHECK(cudaMalloc(&alpha_dev, sizeof kAlpha));
    CUDA_CHECK(cudaMalloc(&offsets_dev, sizeof kOffsets));
    CUDA_CHECK(cudaMalloc(&c_dev, out_count * sizeof *c));
    CUDA_CHECK(cudaMalloc(&d_dev, out_count * sizeof *d));
    CUDA_CHECK(cudaMalloc(&status_dev, sizeof(uint32_t)));
    if (workspace_size > 0) CUDA_CHECK(cudaMalloc(&workspace_dev, workspace_size));
    CUDA_CHECK(cudaMemcpy(a_dev, a, a_count * sizeof *a, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(b_dev, b, b_count * sizeof *b, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(prob_dev, prob, kRows * sizeof *prob, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(alpha_dev, kAlpha, sizeof kAlpha, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(offsets_dev, kOffsets, sizeof kOffsets, cudaMemcpyHostToDevice));

    ggemm_args args;
    ggemm_args_init(&args, sizeof args);
    args.m = kRows;
    args.a = a_dev;
    args.b = b_dev;
    args.padded_offsets = offsets_dev;
    args.alpha = alpha_dev;
    args.prob = prob_dev;
    args.c = c_dev;
    args.d = d_dev;
    args.workspace = workspace_dev;
    args.workspace_size = workspace_size;
    args.device_status = status_dev;

    cudaStream_t stream;
    CUDA_CHECK(cudaStreamCreate(&stream));
    status = ggemm_execute(plan, &args, stream);
    if (status != GGEMM_SUCCESS) return report_failure("execute refused", status);
    CUDA_CHECK(cudaStreamSynchronize(stream));

    uint32_t device_status = 0;
    CUDA_CHECK(cudaMemcpy(c, c_dev, out_count * sizeof *c, cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(d, d_dev, out_count * sizeof *d, cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(&device_status, status_dev, sizeof device_status, cudaMemcpyDeviceToHost));

    long mismatches = check_results(a, b, prob, c, d);
    int passed = mismatches == 0 && device_status == 0;
    printf("ggemm example: %ld of %ld outputs differ, device status 0x%x: %s\n", mismatches,
           (long)out_count, (unsigned)device_status, passed ? "PASS" : "FAIL");

    ggemm_plan_destroy(plan);
    cudaStreamDestroy(stream);
    cudaFree(a_dev); cudaFree(b_dev); cudaFree(prob_dev); cudaFree(alpha_dev);
    cudaFree(offsets_dev); cudaFree(c_dev); cudaFree(d_dev); cudaFree(status_dev);
    cudaFree(workspace_dev);
    free(a); free(b); free(prob); free(c); free(d);
    return passed ? 0 : 1;
}
