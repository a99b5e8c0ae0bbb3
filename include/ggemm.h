/*
 * ggemm: BF16 grouped GEMM for Mixture-of-Experts layers on NVIDIA Hopper (SM90) and
 * Blackwell (SM100: compute capability 10.0, the sm_100a target).
 *
 * The whole public API. C99, fixed-width types only, no CUDA headers: the stream is
 * `struct CUstream_st*`, the same type as `cudaStream_t` and `CUstream`.
 *
 * The operation (docs/API.md states it in full): L experts own contiguous
 * row ranges of A given by `padded_offsets` (exclusive cumulative ends, each a multiple of 256).
 * For row r of expert g and column n:
 *
 *   acc    = sum_k A[r,k] * B_g(n,k)                         (fp32 accumulation)
 *   bias:    v = fma(acc, alpha[g], prob[r] * bias[g][n]);  C = cvt(v);  D = cvt(v)
 *   no bias: g = acc * alpha[g];  C = cvt(g);  D = cvt(g * prob[r])
 *
 * B_g(n,k) is B_g[n][k] with K-major weights (the default) and B_g[k][n] with N-major weights
 * (desc->weight_layout).
 *
 * Usage:
 *   ggemm_plan_desc desc;  ggemm_plan_desc_init(&desc, sizeof desc);   ... fill ...
 *   ggemm_plan_t plan;     ggemm_plan_create(&plan, &desc);
 *   uint64_t ws;           ggemm_plan_workspace_size(plan, &ws);      ... allocate ...
 *   ggemm_args args;       ggemm_args_init(&args, sizeof args);       ... fill ...
 *   ggemm_execute(plan, &args, stream);                               (asynchronous)
 *   ggemm_plan_destroy(plan);
 *
 * Every function returns a ggemm_status_t; on failure a message naming the argument, the value
 * and the rule is kept per thread and read with ggemm_last_error_message().
 */
#ifndef GGEMM_H
#define GGEMM_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The CUDA stream type, declared here so that this header needs no CUDA header. */
struct CUstream_st;

#if defined(_WIN32)
#define GGEMM_API
#else
#define GGEMM_API __attribute__((visibility("default")))
#endif

/* ---------------------------------------------------------------------------------------------
 * Version. The ABI major is the SONAME (libggemm.so.0).
 * ------------------------------------------------------------------------------------------- */
#define GGEMM_VERSION_MAJOR 0
#define GGEMM_VERSION_MINOR 1
#define GGEMM_VERSION_PATCH 0
#define GGEMM_VERSION (GGEMM_VERSION_MAJOR * 10000 + GGEMM_VERSION_MINOR * 100 + GGEMM_VERSION_PATCH)

/* The version of the library actually loaded, as MAJOR*10000 + MINOR*100 + PATCH. */
GGEMM_API int32_t ggemm_version(void);

/* ---------------------------------------------------------------------------------------------
 * Status codes. Fixed values, never renumbered; new codes are only appended.
 * ------------------------------------------------------------------------------------------- */
typedef int32_t ggemm_status_t;

#define GGEMM_SUCCESS                    0
#define GGEMM_ERROR_NULL_ARGUMENT        1  /* a required pointer argument is NULL */
#define GGEMM_ERROR_STRUCT_SIZE          2  /* struct_size too small, or unknown trailing bytes set */
#define GGEMM_ERROR_INVALID_SHAPE        3  /* L, M, N, K or M capacity outside the contract */
#define GGEMM_ERROR_INVALID_DTYPE        4  /* unknown or unsupported C, D or bias dtype */
#define GGEMM_ERROR_MISALIGNED           5  /* a pointer is not aligned as the contract requires */
#define GGEMM_ERROR_NOT_DEVICE_MEMORY    6  /* host memory, or memory of another device */
#define GGEMM_ERROR_WEIGHT_SOURCE        7  /* both or neither of B / b_ptrs, or not the plan's mode */
#define GGEMM_ERROR_BIAS_MISMATCH        8  /* bias given to a plan without bias, or missing */
#define GGEMM_ERROR_UNSUPPORTED_CONFIG   9  /* tile / cluster / scheduler / margin override refused */
#define GGEMM_ERROR_WORKSPACE           10  /* workspace missing, too small or misaligned */
#define GGEMM_ERROR_WRONG_DEVICE        11  /* the current device is not the plan's device */
#define GGEMM_ERROR_UNSUPPORTED_ARCH    12  /* the device is neither SM90 (cc 9.0) nor SM100 (cc 10.0) */
#define GGEMM_ERROR_NO_DEVICE           13  /* no CUDA device, or no usable driver */
#define GGEMM_ERROR_CUDA                14  /* a CUDA runtime or driver call failed */
#define GGEMM_ERROR_OUT_OF_MEMORY       15  /* a host allocation failed */
#define GGEMM_ERROR_INTERNAL            16  /* a bug in ggemm: please report it */
#define GGEMM_ERROR_BAD_OFFSETS         17  /* ggemm_check_offsets found a bad offset */
#define GGEMM_ERROR_BAD_WEIGHT_POINTERS 18  /* ggemm_check_weight_pointers found a bad entry */
#define GGEMM_ERROR_INVALID_VALUE       19  /* an enum-like field holds an unknown value */

/* A static, never NULL, English name for a status code ("GGEMM_ERROR_MISALIGNED", ...). */
GGEMM_API const char* ggemm_status_string(ggemm_status_t status);

/* Copies the calling thread's last error message (NUL-terminated, truncated to fit) into
 * buffer[0, buffer_size). *required, if not NULL, receives the full length including the NUL.
 * The message is "" after a successful call. buffer may be NULL when buffer_size is 0. */
GGEMM_API ggemm_status_t ggemm_last_error_message(char* buffer, uint64_t buffer_size,
                                                  uint64_t* required);

/* ---------------------------------------------------------------------------------------------
 * Enumerations (stored in int32_t fields).
 * ------------------------------------------------------------------------------------------- */
#define GGEMM_DTYPE_NONE 0 /* bias only: no bias */
#define GGEMM_DTYPE_BF16 1
#define GGEMM_DTYPE_FP16 2
#define GGEMM_DTYPE_FP32 3

#define GGEMM_WEIGHTS_DENSE    0 /* B: one L x N x K tensor (N-major weights: L x K x N) */
#define GGEMM_WEIGHTS_DISCRETE 1 /* b_ptrs: a device array of L pointers to N x K (K x N) matrices */

#define GGEMM_SCHEDULER_STATIC  0 /* fixed assignment of tiles over a persistent grid */
#define GGEMM_SCHEDULER_DYNAMIC 1 /* tiles claimed from a counter in the workspace */

/* How each expert's weight matrix B_g is laid out in memory (both: row-major bf16). */
#define GGEMM_WEIGHT_LAYOUT_K_MAJOR 0 /* B_g is N x K: B_g[n][k] at n * K + k (the forward's W) */
#define GGEMM_WEIGHT_LAYOUT_N_MAJOR 1 /* B_g is K x N: B_g[k][n] at k * N + n (dgrad: dY @ W) */

/* Limits of the operation. */
#define GGEMM_MAX_EXPERTS   1024 /* num_experts is 1..GGEMM_MAX_EXPERTS */
#define GGEMM_ROW_ALIGNMENT 256  /* M, m_capacity and every padded offset are multiples of this */

/* ---------------------------------------------------------------------------------------------
 * Plan descriptor. Size-first: set struct_size to sizeof as your header knows it (the
 * ggemm_plan_desc_init call does). A newer library accepts an older, smaller struct (missing
 * trailing fields take their defaults); an older library refuses non-zero bytes it does not
 * know. Fields are only ever appended.
 * ------------------------------------------------------------------------------------------- */
typedef struct ggemm_plan_desc {
    uint32_t struct_size;
    int32_t device;          /* CUDA device ordinal the plan runs on (default 0) */
    int64_t m_capacity;      /* largest M this plan will execute: a multiple of 256, >= 256 */
    int64_t n;               /* columns of C and D, rows of each B_g: >= 8, multiple of 8 */
    int64_t k;               /* inner dimension: >= 8, multiple of 8 */
    int32_t num_experts;     /* L: 1..1024 */
    int32_t weight_mode;     /* GGEMM_WEIGHTS_* (default DENSE) */
    int32_t c_dtype;         /* GGEMM_DTYPE_BF16/FP16/FP32 (default BF16) */
    int32_t d_dtype;         /* GGEMM_DTYPE_BF16/FP16/FP32 (default BF16) */
    int32_t bias_dtype;      /* GGEMM_DTYPE_NONE or BF16/FP16/FP32 (default NONE) */
    int32_t generate_c;      /* 0: C is not written (default); 1: C is written */
    int32_t scheduler;       /* GGEMM_SCHEDULER_* (default STATIC) */
    /* End of the first (minimum) version of the struct; the fields below are optional. */
    int32_t tile_m;          /* 0 = choose; else 64, 128 or 256 */
    int32_t tile_n;          /* 0 = choose; else a supported tile width (see docs/API.md) */
    int32_t cluster_m;       /* 0 = choose; else 1 or 2 CTAs along M */
    int32_t sm_margin;       /* SMs to leave free for overlapping work (default 0) */
    int32_t reserved0;       /* must be 0 */
    int32_t weight_layout;   /* GGEMM_WEIGHT_LAYOUT_* (default K_MAJOR) */
    int32_t reserved1;       /* must be 0 */
    /* Split-K, for calls too small to fill the GPU (docs/API.md, "Small calls"). */
    int32_t split_k;         /* 0 = choose; 1 = never split K; 2..8 = split K that many ways */
    int32_t reserved2;       /* must be 0 */
    /* Fused gated activation (GLU) of the output: see "Fused GLU forward" below. */
    int32_t activation;      /* GGEMM_ACTIVATION_* (default NONE) */
    float glu_scale;         /* clamped GeGLU's s (default 1.702) */
    float glu_limit;         /* clamped GeGLU's limit (default 7), > 0 */
    float glu_offset;        /* clamped GeGLU's offset (default 1) */
    int32_t glu_backward;    /* 0: the forward (default); 1: its backward, dGLU (see below) */
    int32_t glu_pre_dtype;   /* dGLU: dtype of the saved pre-activation args->glu_pre (default BF16) */
} ggemm_plan_desc;

/* ---------------------------------------------------------------------------------------------
 * Fused GLU forward (desc->activation other than NONE; SM90, and SM100 compiled but never run).
 * N is the pre-activation width and must be a multiple of 64. Its columns come in 64-column
 * blocks, each a 32-column gate block followed by a 32-column up block: for j = 0 .. N/64 - 1,
 * with
 *
 *   pre    = acc * alpha[g]  (+ bias[g][n])                fp32; the bias is not scaled by prob
 *   gate_j = pre[:, 64j .. 64j+31],  up_j = pre[:, 64j+32 .. 64j+63]
 *   D[:, 32j .. 32j+31] = cvt(prob[r] * act(gate_j, up_j))  D is M x N/2, d_dtype
 *   C = cvt(pre)                                            M x N, c_dtype, when generate_c
 *
 *   GGEMM_ACTIVATION_SWIGLU:        act = silu(gate) * up = gate * sigmoid(gate) * up
 *   GGEMM_ACTIVATION_CLAMPED_GEGLU: g = min(gate, limit), u = clamp(up, -limit, limit),
 *                                   act = (u + offset) * g * sigmoid(s * g)
 *
 * (s, limit, offset) = (glu_scale, glu_limit, glu_offset); ggemm_plan_desc_init writes the
 * defaults (1.702, 7, 1), and an older, smaller struct without these fields gets them too.
 * Weights stored as [gate | up] halves (rows 0 .. N/2-1 the gate, N/2 .. N-1 the up projection)
 * take the interleaved order by one row permutation: ggemm_glu_interleave_rows.
 * ------------------------------------------------------------------------------------------- */
#define GGEMM_ACTIVATION_NONE          0 /* D = the GEMM's output, M x N (the default) */
#define GGEMM_ACTIVATION_SWIGLU        1
#define GGEMM_ACTIVATION_CLAMPED_GEGLU 2

/* dGLU (desc->glu_backward = 1, with the forward's activation and constants; SM90 only): the
 * backward of the fused forward, fused with the input-gradient GEMM of the layer after it. Here
 * N is the activation's width (the forward's N/2), a multiple of 32, and A is the upstream
 * gradient (M x K), B_g that layer's weights (either weight layout). For row r of expert g:
 *
 *   R      = acc * alpha[g]                    fp32, M x N: the gradient of the forward's D
 *   gate, up = the saved pre-activation args->glu_pre (M x 2N, glu_pre_dtype, the forward's C)
 *              at columns 64j + i and 64j + 32 + i, for R's column 32j + i
 *   d_pre[r, 64j + i]      = cvt(R * prob[r] * d act / d gate)      args->d: M x 2N, d_dtype,
 *   d_pre[r, 64j + 32 + i] = cvt(R * prob[r] * d act / d up)        interleaved as the forward
 *   d_prob[r] = sum over R's columns of R * act(gate, up)           args->d_prob: M fp32
 *
 * The derivatives are those of the forward's act as written (docs/API.md). d_prob is summed in a
 * fixed order (per-tile partials in the workspace, then an ordered reduction): bitwise
 * reproducible, and the same for both schedulers; rows no expert computes get d_prob = 0. No
 * bias and no C (generate_c = 0). The workspace grows with M: ggemm_workspace_size and
 * ggemm_plan_workspace_size give it for m_capacity. */

/* The pre-activation columns form blocks of this many: a gate block, then an up block. */
#define GGEMM_GLU_BLOCK_COLUMNS 32

/* Bytes of the smallest ggemm_plan_desc accepted (up to and including `scheduler`). */
#define GGEMM_PLAN_DESC_MIN_SIZE 60u

/* Zeroes the first struct_size bytes of *desc, then writes struct_size and the defaults of
 * the fields that fit. Pass sizeof(ggemm_plan_desc). */
GGEMM_API ggemm_status_t ggemm_plan_desc_init(ggemm_plan_desc* desc, uint32_t struct_size);

/* The row permutation that takes weights stored as [gate | up] halves to the interleaved GLU
 * order: row i of the interleaved B_g is row source_rows[i] of the halves B_g (K-major: rows of
 * N x K; N-major: columns of K x N), for i in [0, n). n: the pre-activation width, a positive
 * multiple of 64. Pure host code: needs no GPU. The same permutation reorders a [gate | up]
 * bias. */
GGEMM_API ggemm_status_t ggemm_glu_interleave_rows(int64_t n, int64_t* source_rows);

/* ---------------------------------------------------------------------------------------------
 * Per-call arguments. Size-first like the descriptor. All pointers are device pointers of the
 * plan's device; data pointers 16-byte aligned, b_ptrs 8-byte aligned.
 * ------------------------------------------------------------------------------------------- */
typedef struct ggemm_args {
    uint32_t struct_size;
    uint32_t reserved0;            /* must be 0 */
    int64_t m;                     /* rows of A, prob, C, D this call: multiple of 256, <= m_capacity; 0 = no-op */
    const void* a;                 /* M x K bf16 */
    const void* b;                 /* dense: L x N x K bf16 (N-major: L x K x N); NULL in discrete mode */
    const uint64_t* b_ptrs;        /* discrete: L device pointers to N x K bf16 (N-major: K x N); NULL in dense mode */
    const int32_t* padded_offsets; /* L int32 cumulative row ends */
    const float* alpha;            /* L fp32, or NULL: every alpha is 1 */
    const float* prob;             /* M fp32, or NULL: every prob is 1 */
    const void* bias;              /* L x N, the plan's bias dtype; NULL iff the plan has no bias */
    void* c;                       /* M x N, c_dtype; may be NULL when generate_c is 0 */
    void* d;                       /* M x N, d_dtype (M x N/2 with an activation) */
    void* workspace;               /* ggemm_plan_workspace_size bytes, 128-byte aligned; may be NULL if 0 */
    uint64_t workspace_size;       /* bytes available at workspace */
    uint32_t* device_status;       /* optional: GGEMM_DEVICE_STATUS_* bits of this call, written in-stream */
    const int32_t* valid_rows;     /* optional: L int32 valid rows per expert (see below); NULL = every row */
    const void* glu_pre;           /* dGLU: the saved M x 2N pre-activation, glu_pre_dtype; else ignored */
    float* d_prob;                 /* dGLU: M fp32, written for every row; else ignored */
} ggemm_args;

#define GGEMM_ARGS_MIN_SIZE 104u /* device_status and valid_rows are optional */

/* Valid rows (optional: an SM100 CTA-pair plan, tile_m 256, refuses them with
 * GGEMM_ERROR_UNSUPPORTED_CONFIG, and so does a dGLU plan, whose d_prob covers every row).
 * valid_rows[g], read on the device, is how many of the first rows of expert g's segment
 * [begin, end) hold tokens: rows [begin + valid_rows[g], end) are neither computed nor written
 * (their C and D keep whatever they held), and tiles wholly past the count are not run at all.
 * 0 skips the expert. A count below 0 or above end - begin is clamped to [0, end - begin] and
 * reported with GGEMM_DEVICE_STATUS_VALID_ROWS_CLAMPED. The offsets keep every rule above.
 *
 * The fixed-capacity layout of low-latency expert-parallel dispatch, an (L, capacity, K) buffer
 * with capacity a multiple of 256 and per-expert token counts, is passed as it is: a = the
 * buffer, m = L * capacity, padded_offsets[g] = capacity * (g + 1), valid_rows = the counts. */

/* Zeroes the first struct_size bytes of *args and writes struct_size. */
GGEMM_API ggemm_status_t ggemm_args_init(ggemm_args* args, uint32_t struct_size);

/* Bits of *device_status, which each call (M = 0 included) sets to exactly its own. Offsets and pointer entries live on the device and
 * are never read by the host on the execute path: the kernel checks them, skips the experts
 * they would make unsafe, and reports here. Every offset must be >= 0, a multiple of 256, <= M
 * and >= the previous one. An expert is computed only when its begin and end offsets are >= 0,
 * multiples of 256 and <= M, end >= begin, and its begin is not below an earlier such offset,
 * so no row is ever computed twice; other experts are skipped (docs/API.md has an example). */
#define GGEMM_DEVICE_STATUS_OFFSET_NEGATIVE   0x1u
#define GGEMM_DEVICE_STATUS_OFFSET_MISALIGNED 0x2u
#define GGEMM_DEVICE_STATUS_OFFSET_PAST_M     0x4u
#define GGEMM_DEVICE_STATUS_OFFSET_DECREASING 0x8u
#define GGEMM_DEVICE_STATUS_WEIGHT_PTR_NULL       0x10u
#define GGEMM_DEVICE_STATUS_WEIGHT_PTR_MISALIGNED 0x20u
/* A valid_rows entry below 0 or above its segment's size: clamped to [0, size]. */
#define GGEMM_DEVICE_STATUS_VALID_ROWS_CLAMPED    0x100u

/* ---------------------------------------------------------------------------------------------
 * Plans.
 * ------------------------------------------------------------------------------------------- */
typedef struct ggemm_plan* ggemm_plan_t;

/* Validates *desc against the contract and the device, chooses kernel, tiles, cluster and
 * stages, and prepares tensor-map templates. On success *plan owns host memory only. */
GGEMM_API ggemm_status_t ggemm_plan_create(ggemm_plan_t* plan, const ggemm_plan_desc* desc);

/* Frees a plan. NULL is a no-op. Must not race with an execute of the same plan on the host
 * (work already enqueued does not need the plan). */
GGEMM_API ggemm_status_t ggemm_plan_destroy(ggemm_plan_t plan);

/* Bytes of device workspace each in-flight execute needs (may be 0). */
GGEMM_API ggemm_status_t ggemm_plan_workspace_size(ggemm_plan_t plan, uint64_t* bytes);

/* A human-readable account of the plan: kernel, tiles, cluster, stages, scheduler, grid and
 * why each was chosen. Copy semantics as ggemm_last_error_message. */
GGEMM_API ggemm_status_t ggemm_plan_describe(ggemm_plan_t plan, char* buffer, uint64_t buffer_size,
                                             uint64_t* required);

/* Validates *args against the plan, then enqueues the grouped GEMM on stream. No host
 * synchronization, no allocation, no host read of device data: capturable in a CUDA graph.
 * The calling thread's current device must be the plan's device. Nothing is enqueued when
 * validation fails. */
GGEMM_API ggemm_status_t ggemm_execute(ggemm_plan_t plan, const ggemm_args* args,
                                       struct CUstream_st* stream);

/* ---------------------------------------------------------------------------------------------
 * One-shot calls, backed by a thread-safe process-wide plan cache keyed on everything that
 * shapes the kernel: never on M, m_capacity or pointers. args->m is checked against this
 * call's desc->m_capacity; the cached plan itself serves any M. The cache holds at most
 * GGEMM_PLAN_CACHE_DEFAULT_CAPACITY plans unless told otherwise, evicting the least recently
 * used. Every cache call may run concurrently with one-shot calls on other threads: a call in
 * flight keeps its plan until it returns.
 * ------------------------------------------------------------------------------------------- */
GGEMM_API ggemm_status_t ggemm_grouped_gemm(const ggemm_plan_desc* desc, const ggemm_args* args,
                                            struct CUstream_st* stream);
/* The workspace a ggemm_grouped_gemm call with this descriptor needs. Depends on the descriptor
 * alone: needs no GPU and creates no plan (the descriptor's own rules are checked). */
GGEMM_API ggemm_status_t ggemm_workspace_size(const ggemm_plan_desc* desc, uint64_t* bytes);
/* Number of plans in the cache. */
GGEMM_API ggemm_status_t ggemm_plan_cache_size(uint64_t* count);
/* Drops every cached plan. Safe while other threads are inside one-shot calls: those keep
 * the plan they use until they return, and the next call with its key creates it again. */
GGEMM_API ggemm_status_t ggemm_plan_cache_clear(void);

#define GGEMM_PLAN_CACHE_DEFAULT_CAPACITY 64u

/* Sets how many plans the cache holds (0: none, every one-shot call creates its own plan),
 * dropping the least recently used past the new capacity at once. */
GGEMM_API ggemm_status_t ggemm_plan_cache_set_capacity(uint64_t capacity);
/* The cache's current capacity. */
GGEMM_API ggemm_status_t ggemm_plan_cache_capacity(uint64_t* capacity);

/* ---------------------------------------------------------------------------------------------
 * Strict host-side checks for callers who can afford to read offsets / pointers on the host.
 * ------------------------------------------------------------------------------------------- */

/* Checks host_offsets[0, num_experts) against M: each >= 0, multiple of 256, nondecreasing,
 * <= m. Returns GGEMM_ERROR_BAD_OFFSETS naming the first bad index and value. */
GGEMM_API ggemm_status_t ggemm_check_offsets(const int32_t* host_offsets, int32_t num_experts,
                                             int64_t m);

/* Checks host_ptrs[0, num_experts): each non-null and 16-byte aligned; when device >= 0, also
 * that each points to memory of that device (asks the CUDA runtime). device =
 * GGEMM_DEVICE_ANY skips that residency check (no GPU needed); any other negative device is
 * GGEMM_ERROR_INVALID_VALUE. Returns GGEMM_ERROR_BAD_WEIGHT_POINTERS naming the first bad entry. */
GGEMM_API ggemm_status_t ggemm_check_weight_pointers(const uint64_t* host_ptrs,
                                                     int32_t num_experts, int32_t device);

/* ggemm_check_weight_pointers' device: check NULL entries and alignment only. */
#define GGEMM_DEVICE_ANY (-1)

/* ---------------------------------------------------------------------------------------------
 * Weight gradient (wgrad): a second plan kind, grouped along the rows (the GEMM's K).
 *
 * Experts own the same contiguous, 256-aligned row ranges as in the forward: expert g owns rows
 * [padded_offsets[g-1], padded_offsets[g]) (padded_offsets[-1] = 0) of two row-major bf16
 * matrices X1 (M x P) and X2 (M x Q). For each expert, a P x Q result:
 *
 *   acc    = sum over the expert's rows r of X1[r,p] * X2[r,q]      (fp32 accumulation)
 *   v      = acc * alpha[g]                                          (fp32)
 *   overwrite:   W_g[p,q] = cvt(v)
 *   accumulate:  W_g[p,q] = cvt(float(W_g[p,q]) + v)                 (one rounding)
 *
 * For a layer's weight gradient dW_g = dY_g^T X_g: X1 = dY (M x N), X2 = X (M x K). An expert
 * with no rows gets zeros in overwrite mode and is left untouched in accumulate mode.
 *
 * A wgrad plan is an ordinary ggemm_plan_t: ggemm_plan_destroy, ggemm_plan_workspace_size and
 * ggemm_plan_describe serve it; it runs through ggemm_wgrad_execute (ggemm_execute refuses it,
 * and ggemm_wgrad_execute refuses a forward plan). Same guarantees as the forward: no host
 * synchronization, graph-capturable, bitwise deterministic, offsets checked on the device.
 * ------------------------------------------------------------------------------------------- */
#define GGEMM_WGRAD_OUTPUT_DENSE    0 /* out: one L x P x Q tensor */
#define GGEMM_WGRAD_OUTPUT_POINTERS 1 /* out_ptrs: a device array of L pointers to P x Q matrices */

/* Bits of *device_status set by ggemm_wgrad_execute besides the offset bits: an out_ptrs entry
 * that is NULL or not 16-byte aligned. That expert is skipped (nothing is written for it). */
#define GGEMM_DEVICE_STATUS_OUTPUT_PTR_NULL       0x40u
#define GGEMM_DEVICE_STATUS_OUTPUT_PTR_MISALIGNED 0x80u

typedef struct ggemm_wgrad_desc {
    uint32_t struct_size;
    int32_t device;          /* CUDA device ordinal the plan runs on (default 0) */
    int64_t m_capacity;      /* largest M this plan will execute: a multiple of 256, >= 256 */
    int64_t p;               /* columns of X1, rows of each W_g: >= 8, multiple of 8 */
    int64_t q;               /* columns of X2 and of each W_g: >= 8, multiple of 8 */
    int32_t num_experts;     /* L: 1..1024 */
    int32_t out_dtype;       /* GGEMM_DTYPE_FP32 (default), BF16 or FP16 */
    int32_t output_mode;     /* GGEMM_WGRAD_OUTPUT_* (default DENSE) */
    int32_t accumulate;      /* 0: overwrite (default); 1: add into the existing output */
    int32_t scheduler;       /* GGEMM_SCHEDULER_* (default STATIC) */
    int32_t sm_margin;       /* SMs to leave free for overlapping work (default 0) */
    int32_t reserved0;       /* must be 0 */
    int32_t reserved1;       /* must be 0 */
} ggemm_wgrad_desc;

#define GGEMM_WGRAD_DESC_MIN_SIZE 64u

/* Zeroes the first struct_size bytes of *desc, then writes struct_size and the defaults. */
GGEMM_API ggemm_status_t ggemm_wgrad_desc_init(ggemm_wgrad_desc* desc, uint32_t struct_size);

/* Per-call arguments of a wgrad plan. Device pointers of the plan's device; data pointers and
 * every out_ptrs entry 16-byte aligned, out_ptrs itself 8-byte aligned. */
typedef struct ggemm_wgrad_args {
    uint32_t struct_size;
    uint32_t reserved0;            /* must be 0 */
    int64_t m;                     /* rows of X1 and X2 this call: multiple of 256, <= m_capacity */
    const void* x1;                /* M x P bf16 (may be NULL when m is 0) */
    const void* x2;                /* M x Q bf16 (may be NULL when m is 0) */
    const int32_t* padded_offsets; /* L int32 cumulative row ends */
    const float* alpha;            /* L fp32, or NULL: every alpha is 1 */
    void* out;                     /* dense: L x P x Q of out_dtype; NULL in pointer mode */
    const uint64_t* out_ptrs;      /* pointers: L device pointers to P x Q; NULL in dense mode */
    void* workspace;               /* ggemm_plan_workspace_size bytes, 128-byte aligned; may be NULL if 0 */
    uint64_t workspace_size;       /* bytes available at workspace */
    uint32_t* device_status;       /* optional: GGEMM_DEVICE_STATUS_* bits of this call, written in-stream */
} ggemm_wgrad_args;

#define GGEMM_WGRAD_ARGS_MIN_SIZE 88u

/* Zeroes the first struct_size bytes of *args and writes struct_size. */
GGEMM_API ggemm_status_t ggemm_wgrad_args_init(ggemm_wgrad_args* args, uint32_t struct_size);

/* Validates *desc and creates a wgrad plan (SM90 only: refused on SM100 with
 * GGEMM_ERROR_UNSUPPORTED_CONFIG). */
GGEMM_API ggemm_status_t ggemm_wgrad_plan_create(ggemm_plan_t* plan, const ggemm_wgrad_desc* desc);

/* Validates *args against the wgrad plan and enqueues the weight gradient on stream. Launches
 * even when M is 0 (overwrite mode then writes zeros to every expert's output). */
GGEMM_API ggemm_status_t ggemm_wgrad_execute(ggemm_plan_t plan, const ggemm_wgrad_args* args,
                                             struct CUstream_st* stream);

#ifdef __cplusplus
}
#endif

#endif /* GGEMM_H */
