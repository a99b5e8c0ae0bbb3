// The SM100 grouped GEMM: persistent, warp-specialized, TMA + tcgen05.mma + tensor memory.
//
// NOT RUN ON HARDWARE: no SM100 GPU was available. It is compiled for sm_100a, its SASS is checked
// (tests/sass/check_sass.sh) and its encodings are unit-tested (tests/host/test_sm100_encodings.cpp);
// docs/SM100.md says exactly what was and was not verified.
//
// Read top to bottom: configuration and its compile-time checks, shared-memory carve-up, the
// producer (TMA), the MMA issuer (tcgen05), the epilogue (TMEM -> registers -> global), the
// kernel (barrier init, TMEM allocation, role split, teardown), prepare and launch.
//
// One CTA per SM, 6 warps:
//   warps 0-3  epilogue: warp w drains TMEM lanes [32 (w % 4), +32) = rows of the tile, staging
//              32 x 32 slices in its own shared buffer for the shared store_chunk
//   warp 4     producer: one thread walks the tile schedule, publishes each tile to the other
//              roles through a small ring, and streams A and B k-blocks into the stage ring
//   warp 5     MMA: allocates TMEM; one thread issues tcgen05.mma (M = 128, cta_group::1) into
//              one of two accumulator buffers and commits to mbarriers
// The two accumulator buffers (2 x tile_n TMEM columns) let the epilogue of tile i overlap the
// MMAs of tile i + 1. Scheduler, epilogue math and discrete weight maps are the ones SM90 uses.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

#include "kernels/common/epilogue.h"
#include "kernels/common/params.h"
#include "kernels/common/scheduler.h"
#include "kernels/common/weight_maps.cuh"
#include "kernels/sm100/encodings.h"
#include "ptx/fence.h"
#include "ptx/mbarrier.h"
#include "ptx/tcgen05.h"
#include "ptx/tma.h"
#include "ptx/tmem.h"

namespace ggemm::sm100 {

// Largest dynamic shared memory one CTA may opt into on SM100 (227 KB).
constexpr int kMaxSmemPerCta = 232448;

template <int kTileN_, int kStages_>
struct Config {
    static constexpr int kTileN = kTileN_;
    static constexpr int kStages = kStages_;
    static constexpr int kTileM = 128;            // tcgen05.mma M = 128, cta_group::1
    static constexpr int kBlockK = static_cast<int>(sm100::kBlockK);  // one 128-byte swizzle row
    static constexpr int kEpilogueWarps = 4;      // one per TMEM lane quarter
    static constexpr int kProducerWarp = 4;
    static constexpr int kMmaWarp = 5;
    static constexpr int kThreads = 32 * 6;
    static constexpr int kTileRing = 2;           // tiles published ahead to the MMA and epilogue
    static constexpr int kGroupM = 16;            // row blocks per raster group, as SM90
    static constexpr int kMaxExperts = 1024;
    static constexpr uint32_t kABytes = kTileM * kBlockK * 2;
    static constexpr uint32_t kBBytes = kTileN * kBlockK * 2;
    static constexpr uint32_t kInstrDesc = make_instr_desc_bf16_f32(kTileM, kTileN, 1);
    static constexpr uint32_t kTmemAllocColumns = tmem_alloc_columns(accumulator_columns(kTileN));
    static constexpr int kEpilogueChunk = kEpilogueChunkCols;  // columns per tcgen05.ld (.32x32b.x32)

    static_assert(kInstrDesc != 0, "tile_n is not a valid tcgen05.mma N for M = 128 (Table 39)");
    static_assert(kTmemAllocColumns != 0,
                  "two f32 accumulators of tile_n columns must fit the 512 TMEM columns");
    static_assert(kTileN <= 256, "the TMA box of B is at most 256 rows");
    static_assert(kTileN % kEpilogueChunk == 0, "the epilogue drains whole 32-column chunks");
    static_assert(kEpilogueChunk == 32, "one tcgen05.ld.32x32b.x32 per staged chunk");
    static_assert(load_32x32b_num(kEpilogueChunk) == kEpilogueChunk, "no tcgen05.ld form for the chunk");
    static_assert(accumulator_load_shape(kTileM, 1) == TmemLoadShape::k32x32b,
                  "the epilogue reads one accumulator row per thread");
    static_assert(kSegmentAlignment % kTileM == 0, "a tile must never straddle two experts");
    static_assert(kGroupM % 2 == 0, "raster groups pair row blocks");
    static_assert(kABytes % kSwizzleAtomBytes == 0 && kBBytes % kSwizzleAtomBytes == 0,
                  "stage tiles are whole 1024-byte swizzle atoms, so each starts atom-aligned");
    static_assert(kEpilogueWarps == 4 && kProducerWarp % 4 == 0 && kMmaWarp == kProducerWarp + 1,
                  "epilogue warps 0-3 cover the four TMEM lane quarters");
};

template <class Cfg>
struct SharedStorage {
    // Each operand tile starts on a 1024-byte boundary: the 128-byte swizzle pattern repeats every
    // 8 rows x 128 bytes and the tcgen05 descriptors say base offset 0 (PTX ISA 9.7.16.4.1).
    struct alignas(1024) Stage {
        __nv_bfloat16 a[Cfg::kTileM * Cfg::kBlockK];
        __nv_bfloat16 b[Cfg::kTileN * Cfg::kBlockK];
    };
    Stage stages[Cfg::kStages];
    uint64_t full[Cfg::kStages];      // TMA bytes landed in the stage
    uint64_t empty[Cfg::kStages];     // the MMAs reading the stage have completed (tcgen05.commit)
    uint64_t accum_full[2];           // the tile's last MMA has completed (tcgen05.commit)
    uint64_t accum_empty[2];          // every epilogue warp has read the buffer out of TMEM
    uint64_t tile_full[Cfg::kTileRing];
    uint64_t tile_empty[Cfg::kTileRing];
    TileCoord tiles[Cfg::kTileRing];
    // Each epilogue warp stages its 32 rows x 32 columns here before store_chunk (epilogue.h).
    alignas(16) float epilogue[Cfg::kEpilogueWarps][32 * kEpiloguePitch];
    float prob[Cfg::kEpilogueWarps][32];  // of the warp's 32 tile rows
    int32_t offsets[Cfg::kMaxExperts];
    uint32_t tmem_base;               // written by tcgen05.alloc
    uint32_t status;
};

// Dynamic shared memory is only 16-byte aligned by the launch; the kernel aligns it by hand.
template <class Cfg>
constexpr int kSmemBytes = static_cast<int>(sizeof(SharedStorage<Cfg>)) + 1024;

// Arrivals each barrier expects per phase.
template <class Cfg>
struct Arrivals {
    static constexpr uint32_t kFull = 1;                           // producer's expect_tx
    static constexpr uint32_t kEmpty = 1;                          // one tcgen05.commit
    static constexpr uint32_t kAccumFull = 1;                      // one tcgen05.commit
    static constexpr uint32_t kAccumEmpty = Cfg::kEpilogueWarps;   // one per epilogue warp
    static constexpr uint32_t kTileFull = 1;                       // producer
    static constexpr uint32_t kTileEmpty = 1 + Cfg::kEpilogueWarps;  // MMA thread + epilogue warps
};

// ---- producer: one thread ----------------------------------------------------------------------
template <class Cfg>
__device__ __forceinline__ void produce(SharedStorage<Cfg>& s, const CUtensorMap* a_map,
                                        const CUtensorMap* b_map, const KernelArgs& args) {
    const bool discrete = args.weight_mode == kDiscrete;
    GroupedTileScheduler<Cfg::kTileM, Cfg::kTileN> schedule(
        s.offsets, discrete ? args.b_ptrs : nullptr, args.m, args.num_experts, args.n, Cfg::kGroupM);
    const int32_t k_blocks = (args.k + Cfg::kBlockK - 1) / Cfg::kBlockK;
    const bool dynamic = args.scheduler == kDynamic;

    int64_t index = dynamic ? atomicAdd(args.tile_counter, 1u) : blockIdx.x;
    int32_t mapped_expert = -1;
    uint32_t stage = 0, phase = 0;
    for (uint32_t i = 0;; ++i) {
        const TileCoord tile = schedule.tile(index);
        const uint32_t slot = i % Cfg::kTileRing;
        ptx::mbarrier_wait(&s.tile_empty[slot], ((i / Cfg::kTileRing) & 1) ^ 1);
        s.tiles[slot] = tile;
        ptx::mbarrier_arrive(&s.tile_full[slot]);
        if (tile.expert < 0) {
            // Tail: wait until the MMAs have released every stage, so that no tcgen05.commit
            // arrival is still headed for this CTA's shared memory when it exits.
            for (int i = 0; i < Cfg::kStages; ++i) {
                ptx::mbarrier_wait(&s.empty[stage], phase ^ 1);
                if (++stage == Cfg::kStages) {
                    stage = 0;
                    phase ^= 1;
                }
            }
            return;
        }
        // Claim the next tile now so the atomic's latency hides behind this tile's loads.
        index = dynamic ? atomicAdd(args.tile_counter, 1u) : index + gridDim.x;

        const CUtensorMap* expert_map = discrete ? args.b_maps + tile.expert : b_map;
        if (discrete && tile.expert != mapped_expert) {
            ptx::fence_proxy_tensormap_acquire(expert_map);
            mapped_expert = tile.expert;
        }
        for (int32_t kb = 0; kb < k_blocks; ++kb) {
            ptx::mbarrier_wait(&s.empty[stage], phase ^ 1);
            auto& st = s.stages[stage];
            // Out-of-bounds box elements (K and N tails) are zero-filled and still counted.
            ptx::mbarrier_arrive_expect_tx(&s.full[stage], Cfg::kABytes + Cfg::kBBytes);
            const int32_t k = kb * Cfg::kBlockK;
            ptx::tma_load_2d(st.a, a_map, &s.full[stage], k, tile.row_begin);
            if (discrete) {
                ptx::tma_load_2d(st.b, expert_map, &s.full[stage], k, tile.n_begin);
            } else {
                ptx::tma_load_3d(st.b, b_map, &s.full[stage], k, tile.n_begin, tile.expert);
            }
            if (++stage == Cfg::kStages) {
                stage = 0;
                phase ^= 1;
            }
        }
    }
}

// ---- MMA issuer: one thread ----------------------------------------------------------------------
// Tile i accumulates into buffer i % 2. Per k-block: 4 MMAs of K = 16, then a commit that frees the
// stage once they complete; after the last k-block, a commit that hands the buffer to the epilogue.
template <class Cfg>
__device__ __forceinline__ void issue_mma(SharedStorage<Cfg>& s, const KernelArgs& args,
                                          uint32_t tmem_base) {
    const int32_t k_blocks = (args.k + Cfg::kBlockK - 1) / Cfg::kBlockK;  // >= 1: K >= 8
    uint32_t stage = 0, phase = 0;
    for (uint32_t i = 0;; ++i) {
        const uint32_t slot = i % Cfg::kTileRing;
        ptx::mbarrier_wait(&s.tile_full[slot], (i / Cfg::kTileRing) & 1);
        const TileCoord tile = s.tiles[slot];
        ptx::mbarrier_arrive(&s.tile_empty[slot]);
        if (tile.expert < 0) return;

        const uint32_t buffer = i & 1;
        const uint32_t use = (i >> 1) & 1;
        ptx::mbarrier_wait(&s.accum_empty[buffer], use ^ 1);  // the epilogue drained it
        ptx::tcgen05_fence_after_thread_sync();
        const uint32_t d_tmem = tmem_base + accumulator_column(buffer, Cfg::kTileN);

        for (int32_t kb = 0; kb < k_blocks; ++kb) {
            ptx::mbarrier_wait(&s.full[stage], phase);
            ptx::tcgen05_fence_after_thread_sync();
            const uint64_t a_desc = kmajor_sw128_descriptor(ptx::smem_addr(s.stages[stage].a));
            const uint64_t b_desc = kmajor_sw128_descriptor(ptx::smem_addr(s.stages[stage].b));
#pragma unroll
            for (uint32_t k = 0; k < Cfg::kBlockK / kMmaK; ++k) {
                ptx::tcgen05_mma_f16_cta1(d_tmem, advance_k_step(a_desc, k), advance_k_step(b_desc, k),
                                          Cfg::kInstrDesc, kb > 0 || k > 0);
            }
            ptx::tcgen05_commit(&s.empty[stage]);
            if (++stage == Cfg::kStages) {
                stage = 0;
                phase ^= 1;
            }
        }
        ptx::tcgen05_commit(&s.accum_full[buffer]);
    }
}

// ---- epilogue: warps 0-3 -------------------------------------------------------------------------
// Layout D (M = 128, cta_group::1): tile row r is TMEM lane r, tile column c is column
// (buffer base + c). Warp w reads lanes [32 w, 32 w + 32) with tcgen05.ld.32x32b.x32: thread t of
// the warp gets row 32 w + t, columns [32 chunk, +32), one register per column. The warp stages the
// 32 x 32 slice in its own shared buffer and hands it to store_chunk (the SM90 epilogue), which
// stores whole row segments with vector stores. Warps never wait for each other.
template <class Cfg>
__device__ __forceinline__ void drain(SharedStorage<Cfg>& s, const KernelArgs& args, uint32_t tmem_base) {
    const int warp = threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    const uint32_t lane_base = warp_lane_quarter_base(static_cast<uint32_t>(warp));
    float* staged = s.epilogue[warp];
    for (uint32_t i = 0;; ++i) {
        const uint32_t slot = i % Cfg::kTileRing;
        ptx::mbarrier_wait(&s.tile_full[slot], (i / Cfg::kTileRing) & 1);
        const TileCoord tile = s.tiles[slot];
        __syncwarp();
        if (lane == 0) ptx::mbarrier_arrive(&s.tile_empty[slot]);
        if (tile.expert < 0) return;

        const uint32_t buffer = i & 1;
        const uint32_t use = (i >> 1) & 1;
        ptx::mbarrier_wait(&s.accum_full[buffer], use);
        ptx::tcgen05_fence_after_thread_sync();

        const EpilogueTile et = epilogue_tile(args, tile.expert);
        const int64_t warp_row_begin = tile.row_begin + static_cast<int64_t>(lane_base);
        float* staged_prob = s.prob[warp];
        staged_prob[lane] = args.prob[warp_row_begin + lane];  // visible after the first __syncwarp
        const uint32_t taddr =
            tmem_address(tmem_base, lane_base, accumulator_column(buffer, Cfg::kTileN));
#pragma unroll 1
        for (int chunk = 0; chunk < Cfg::kTileN / Cfg::kEpilogueChunk; ++chunk) {
            const int32_t col_begin = tile.n_begin + chunk * Cfg::kEpilogueChunk;
            if (col_begin >= args.n) break;  // N tail: same for the whole warp, as tcgen05.ld requires
            uint32_t acc[Cfg::kEpilogueChunk];
            ptx::tmem_load_32x32b_x32(taddr + chunk * Cfg::kEpilogueChunk, acc);
            ptx::tmem_wait_load();
            ptx::tmem_hold_registers(acc);
            float* my_row = staged + lane * kEpiloguePitch;
#pragma unroll
            for (int c = 0; c < Cfg::kEpilogueChunk; c += 4) {
                *reinterpret_cast<float4*>(my_row + c) =
                    make_float4(__uint_as_float(acc[c]), __uint_as_float(acc[c + 1]),
                                __uint_as_float(acc[c + 2]), __uint_as_float(acc[c + 3]));
            }
            __syncwarp();  // the slice is staged
            store_chunk<32, 32>(et, staged, staged_prob, warp_row_begin, col_begin, lane);
            __syncwarp();  // the slice is read: the buffer may be reused
        }
        // Our tcgen05.ld are complete (waited); order them before the arrival that lets the MMA
        // warp overwrite the buffer.
        ptx::tcgen05_fence_before_thread_sync();
        __syncwarp();
        if (lane == 0) ptx::mbarrier_arrive(&s.accum_empty[buffer]);
    }
}

// ---- the kernel ----------------------------------------------------------------------------------
template <class Cfg>
__global__ void __launch_bounds__(Cfg::kThreads, 1)
    grouped_gemm_sm100(const __grid_constant__ CUtensorMap a_map,
                       const __grid_constant__ CUtensorMap b_map, const KernelArgs args) {
    static_assert(kSmemBytes<Cfg> <= kMaxSmemPerCta, "stages + barriers + offsets exceed 227 KB");
#if defined(GGEMM_PTX_SM100A)
    extern __shared__ uint8_t smem_raw[];
    auto& s = *reinterpret_cast<SharedStorage<Cfg>*>(
        (reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t{1023});
    const int thread = threadIdx.x;
    const int warp = thread / 32;
    const int lane = thread % 32;
    using Count = Arrivals<Cfg>;

    if (thread == 0) {
        for (int i = 0; i < Cfg::kStages; ++i) {
            ptx::mbarrier_init(&s.full[i], Count::kFull);
            ptx::mbarrier_init(&s.empty[i], Count::kEmpty);
        }
        for (int i = 0; i < 2; ++i) {
            ptx::mbarrier_init(&s.accum_full[i], Count::kAccumFull);
            ptx::mbarrier_init(&s.accum_empty[i], Count::kAccumEmpty);
        }
        for (int i = 0; i < Cfg::kTileRing; ++i) {
            ptx::mbarrier_init(&s.tile_full[i], Count::kTileFull);
            ptx::mbarrier_init(&s.tile_empty[i], Count::kTileEmpty);
        }
        s.status = 0;
        ptx::fence_mbarrier_init();
    }
    if (warp == Cfg::kMmaWarp) {
        // One CTA per SM (shared memory sees to it), so the columns are free; give up the permit
        // at once so a CTA of a following kernel need not wait for this one to exit to allocate.
        ptx::tmem_alloc(&s.tmem_base, Cfg::kTmemAllocColumns);
        ptx::tmem_relinquish_alloc_permit();
    }
    if (thread == Cfg::kProducerWarp * 32) {
        ptx::tma_prefetch_map(&a_map);
        if (args.weight_mode == kDense) ptx::tma_prefetch_map(&b_map);
    }
    // Every role walks the experts: keep the offsets in shared memory.
    for (int g = thread; g < args.num_experts; g += Cfg::kThreads) s.offsets[g] = args.padded_offsets[g];
    // The TMEM address was written by the tensor-core side: fence around the CTA barrier.
    ptx::tcgen05_fence_before_thread_sync();
    __syncthreads();
    ptx::tcgen05_fence_after_thread_sync();
    const uint32_t tmem_base = s.tmem_base;

    // One CTA reports bad offsets; the scheduler in every CTA skips the experts they touch.
    if (blockIdx.x == 0 && args.device_status != nullptr) {
        for (int g = thread; g < args.num_experts; g += Cfg::kThreads) {
            const uint32_t bits = offset_status(g == 0 ? 0 : s.offsets[g - 1], s.offsets[g], args.m);
            if (bits != 0) atomicOr(&s.status, bits);
        }
        __syncthreads();
        if (thread == 0 && s.status != 0) atomicOr(args.device_status, s.status);
    }

    if (warp < Cfg::kEpilogueWarps) {
        drain<Cfg>(s, args, tmem_base);
    } else if (warp == Cfg::kProducerWarp) {
        if (lane == 0) produce<Cfg>(s, &a_map, &b_map, args);
        __syncwarp();
    } else {
        if (lane == 0) issue_mma<Cfg>(s, args, tmem_base);
        __syncwarp();
    }

    // Every accumulator was committed and drained (the epilogue waited on each accum_full and
    // finished its loads); only then may the allocating warp free the columns.
    ptx::tcgen05_fence_before_thread_sync();
    __syncthreads();
    if (warp == Cfg::kMmaWarp) {
        ptx::tcgen05_fence_after_thread_sync();
        ptx::tmem_dealloc(tmem_base, Cfg::kTmemAllocColumns);
    }
#endif
}

template <class Cfg>
cudaError_t prepare() {
    return cudaFuncSetAttribute(grouped_gemm_sm100<Cfg>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                kSmemBytes<Cfg>);
}

template <class Cfg>
cudaError_t launch(const LaunchParams& p, cudaStream_t stream) {
    if (p.args.weight_mode == kDiscrete) {
        const cudaError_t built = launch_build_weight_maps(p, stream);
        if (built != cudaSuccess) return built;
    }
    cudaLaunchConfig_t config = {};
    config.gridDim = dim3(static_cast<unsigned>(p.grid));
    config.blockDim = dim3(Cfg::kThreads);
    config.dynamicSmemBytes = kSmemBytes<Cfg>;
    config.stream = stream;
    return cudaLaunchKernelEx(&config, grouped_gemm_sm100<Cfg>, p.a_map, p.b_map, p.args);
}

}  // namespace ggemm::sm100
