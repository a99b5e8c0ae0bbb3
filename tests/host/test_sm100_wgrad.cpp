// The SM100 weight gradient without a GPU: the MMA encodings of its kernel (both operands
// MN-major, the K step along rows), its compiled variants, and plans for a fake SM100 device.
// The kernel has never run on an SM100 GPU; these checks and tests/sass/check_sass.sh are what
// stands behind it (docs/SM100.md).
#include <doctest/doctest.h>

#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "kernels/sm100/wgrad_layout_sm100.h"
#include "src/wgrad_execute.h"
#include "src/wgrad_plan.h"
#include "tests/host/test_fakes.h"

using namespace ggemm_fakes;
namespace sm100 = ggemm::sm100;

namespace {

// PTX ISA 9.7.16.4.2 Table 42, .kind::f16, written out bit by bit.
constexpr uint32_t expected_wgrad_idesc(uint32_t n) {
    return (1u << 4)       // D F32
           | (1u << 7)     // A BF16
           | (1u << 10)    // B BF16
           | (1u << 15)    // transpose A: X1's P columns contiguous (MN-major)
           | (1u << 16)    // transpose B: X2's Q columns contiguous (MN-major)
           | ((n >> 3) << 17) | ((128u >> 4) << 24);
}

ggemm_wgrad_desc sm100_wgrad_desc() {
    ggemm_wgrad_desc desc;
    REQUIRE(ggemm_wgrad_desc_init(&desc, sizeof desc) == GGEMM_SUCCESS);
    desc.m_capacity = 8192;
    desc.p = 4096;
    desc.q = 7168;
    desc.num_experts = 8;
    return desc;
}

}  // namespace

TEST_CASE("sm100 wgrad instruction descriptor: M = 128, N = tile_q, bf16 -> f32, A and B MN-major") {
    for (uint32_t n : {128u, 192u, 256u}) {
        const uint32_t idesc = sm100::wgrad_instr_desc(n);
        CHECK(idesc == expected_wgrad_idesc(n));
        CHECK(sm100::idesc_m(idesc) == 128);
        CHECK(sm100::idesc_n(idesc) == n);
        CHECK(((idesc >> 15) & 1u) == 1u);
        CHECK(((idesc >> 16) & 1u) == 1u);
        // The forward's N-major descriptor differs in the transpose-A bit alone.
        CHECK((idesc ^ sm100::make_instr_desc_bf16_f32(128, n, 1, false, true)) == (1u << 15));
    }
    CHECK(sm100::wgrad_instr_desc(256) == 0x8418490u);
    CHECK(sm100::wgrad_instr_desc(264) == 0);  // N > 256: no such MMA (Table 39)
    CHECK(sm100::wgrad_instr_desc(100) == 0);  // N not a multiple of 8
}

TEST_CASE("sm100 wgrad operand descriptors: MN-major 128-byte swizzle, the K step along rows") {
    const uint32_t box = 0x8400;  // a 1024-byte aligned shared-window address
    for (uint32_t k = 0; k < sm100::kWgradKSteps; ++k) {
        const uint64_t d = sm100::wgrad_operand_descriptor(box, k);
        // 16 rows r per MMA, one 128-byte line each: the step is 2 KB, two 8-row groups.
        CHECK(sm100::desc_start_address(d) == box + 2048 * k);
        CHECK(sm100::desc_leading_byte_offset(d) == 8192);  // the next 64 columns: the next box
        CHECK(sm100::desc_stride_byte_offset(d) == 1024);   // the next 8 rows r
        CHECK(sm100::desc_version(d) == 1);
        CHECK(sm100::desc_base_offset(d) == 0);            // every step stays 1024-byte aligned
        CHECK(sm100::desc_lbo_mode(d) == 0);
        CHECK(sm100::desc_swizzle(d) == static_cast<uint32_t>(sm100::Swizzle::k128B));
        CHECK((sm100::desc_start_address(d) % 1024) == 0);
        // Row 16 k of the k-block, column 0, is where the step starts; column 64 is LBO further.
        CHECK(sm100::mnmajor_tile_offset(0, 16 * k) == 2048 * k);
        CHECK(sm100::mnmajor_tile_offset(64, 16 * k) == 2048 * k + 8192);
        CHECK(sm100::mnmajor_tile_offset(0, 16 * k + 8) == 2048 * k + 1024);
    }
    CHECK(sm100::kWgradKSteps == 4);
    CHECK(sm100::kWgradBlockRows == 64);
    CHECK(sm100::kWgradTileP == 128);
}

// The MN-major canonical layout (PTX ISA 9.7.16.3; in 16-byte units ((8, m), (8, k)) :
// ((1, LBO), (8, SBO))) read through the wgrad descriptors must address, for every column c of
// the operand (of P for A, of Q for B), every row r of the k-block and every MMA step, the byte
// where TMA's 64 x 64 boxes put X[r, c]: box c / 64 at 8 KB each, row r at 128 r, column at
// 2 (c % 64), the 128-byte swizzle (address bits 4-6 ^= bits 7-9) applied to both.
TEST_CASE("sm100 wgrad operands: MMA addressing matches the TMA boxes of X1 and X2 (model)") {
    auto swizzle = [](uint32_t address) { return address ^ (((address >> 7) & 7u) << 4); };
    const uint32_t first_box = 0x12000;  // 1024-byte aligned
    for (uint32_t columns : {sm100::kWgradTileP, 192u, 256u}) {  // A: 128 of P; B: tile_q of Q
        CAPTURE(columns);
        for (uint32_t step = 0; step < sm100::kWgradKSteps; ++step) {
            const uint64_t d = sm100::wgrad_operand_descriptor(first_box, step);
            for (uint32_t c = 0; c < columns; ++c) {
                for (uint32_t k = 0; k < sm100::kMmaK; ++k) {
                    const uint32_t r = sm100::kMmaK * step + k;
                    const uint32_t tma = first_box + sm100::kWgradBoxBytes * (c / 64) + 128 * r + 2 * (c % 64);
                    const uint32_t mma = sm100::desc_start_address(d) + 2 * (c % 64) +
                                         sm100::desc_leading_byte_offset(d) * (c / 64) + 128 * (k % 8) +
                                         sm100::desc_stride_byte_offset(d) * (k / 8);
                    if (swizzle(tma) != swizzle(mma) || tma != mma) {
                        FAIL("step " << step << " column " << c << " k " << k << ": MMA reads " << mma
                                     << ", TMA wrote " << tma);
                    }
                }
            }
        }
    }
}

TEST_CASE("sm100 wgrad stage: 64-column boxes of X1 (two) and X2 (tile_q / 64)") {
    CHECK(sm100::wgrad_boxes(128) == 2);
    CHECK(sm100::wgrad_boxes(256) == 4);
    CHECK(sm100::wgrad_boxes(192) == 3);
    CHECK(sm100::wgrad_boxes(96) == 0);
    CHECK(sm100::wgrad_stage_bytes(256) == 6 * 8192);
    CHECK(sm100::wgrad_stage_bytes(192) == 5 * 8192);
    CHECK(sm100::wgrad_stage_bytes(128) == 4 * 8192);
}

TEST_CASE("sm100 wgrad compiled variants: one CTA, 128 x {256, 192, 128}, registers store") {
    const ggemm::WgradVariantList list = ggemm::compiled_wgrad_variants(100);
    REQUIRE(list.count == 3);
    std::set<int32_t> widths;
    for (int i = 0; i < list.count; ++i) {
        const ggemm::WgradVariant& v = list.items[i];
        CAPTURE(v.name);
        CHECK(std::strncmp(v.name, "sm100_wgrad_tma_tcgen05_128x", 28) == 0);
        CHECK(v.arch == 100);
        CHECK(v.tile_p == 128);
        CHECK(v.block_rows == 64);
        CHECK(v.box_columns == 64);
        CHECK(v.threads == 192);
        CHECK(v.smem_bytes <= 227 * 1024);
        CHECK(v.stages * static_cast<int32_t>(sm100::wgrad_stage_bytes(v.tile_q)) < v.smem_bytes);
        CHECK(v.tile_q * 2 <= 512);  // two accumulators in the 512 TMEM columns
        CHECK_FALSE(v.tma_store);
        CHECK(static_cast<bool>(v.prepare != nullptr));
        CHECK(static_cast<bool>(v.launch != nullptr));
        widths.insert(v.tile_q);
    }
    CHECK(widths == std::set<int32_t>{128, 192, 256});
    CHECK(ggemm::compiled_wgrad_variants(90).count == 3);
    CHECK(ggemm::compiled_wgrad_variants(80).count == 0);
}

TEST_CASE("sm100 wgrad plan on a fake SM100 device: the SM100 kernel, stored from registers, described") {
    ggemm_wgrad_desc desc = sm100_wgrad_desc();
    ggemm_plan plan;
    REQUIRE_MESSAGE(ggemm::build_wgrad_plan(desc, sm100_device(), ggemm::compiled_wgrad_variants(100), &plan) ==
                        GGEMM_SUCCESS,
                    ggemm::last_error());
    CHECK(plan.kind == ggemm::PlanKind::kWgrad);
    CHECK(std::string(plan.wgrad.variant.name) == "sm100_wgrad_tma_tcgen05_128x256x64_s4");  // 7168 = 28 x 256
    CHECK(plan.wgrad.variant.arch == 100);
    CHECK(plan.grid == 148);
    // A dense output overwritten takes TMA stores on SM90; this kernel has registers only.
    CHECK(plan.wgrad.store_path == ggemm::kWgradStoreRegisters);
    ggemm_wgrad_args args;
    REQUIRE(ggemm_wgrad_args_init(&args, sizeof args) == GGEMM_SUCCESS);
    args.m = 4096;
    CHECK(ggemm::make_wgrad_kernel_args(plan, args).store_path == ggemm::kWgradStoreRegisters);
    const std::string& text = plan.description;
    CHECK(text.find("SM100, compute capability 10.0, 148 SMs") != std::string::npos);
    CHECK(text.find("kernel: sm100_wgrad_tma_tcgen05_128x256x64_s4: tile 128 (P) x 256 (Q), 64 rows per stage, "
                    "4 stages, both operands MN-major (tcgen05.mma with transpose A and B, one CTA, accumulators "
                    "in tensor memory), 192 threads") != std::string::npos);
    CHECK(text.find("\nstore: registers (each epilogue warp drains its 32 rows of the tile from tensor memory") !=
          std::string::npos);
    CHECK(text.find("sm90_wgrad") == std::string::npos);  // the candidates listed are SM100's

    // The GGEMM_WGRAD_STORE switch cannot give it TMA stores; every output mode plans.
    REQUIRE(ggemm::build_wgrad_plan(desc, sm100_device(), ggemm::compiled_wgrad_variants(100), &plan, "tma") ==
            GGEMM_SUCCESS);
    CHECK(plan.wgrad.store_path == ggemm::kWgradStoreRegisters);
    for (int32_t mode : {GGEMM_WGRAD_OUTPUT_DENSE, GGEMM_WGRAD_OUTPUT_POINTERS}) {
        for (int32_t accumulate : {0, 1}) {
            for (int32_t dtype : {GGEMM_DTYPE_FP32, GGEMM_DTYPE_BF16, GGEMM_DTYPE_FP16}) {
                desc.output_mode = mode;
                desc.accumulate = accumulate;
                desc.out_dtype = dtype;
                CAPTURE(mode);
                CAPTURE(accumulate);
                CAPTURE(dtype);
                REQUIRE(ggemm::build_wgrad_plan(desc, sm100_device(), ggemm::compiled_wgrad_variants(100), &plan) ==
                        GGEMM_SUCCESS);
                CHECK(plan.wgrad.store_path == ggemm::kWgradStoreRegisters);
            }
        }
    }

    // Q = 2880: the 192-wide tile wastes no column.
    desc = sm100_wgrad_desc();
    desc.q = 2880;
    REQUIRE(ggemm::build_wgrad_plan(desc, sm100_device(), ggemm::compiled_wgrad_variants(100), &plan) ==
            GGEMM_SUCCESS);
    CHECK(std::string(plan.wgrad.variant.name) == "sm100_wgrad_tma_tcgen05_128x192x64_s5");
}

TEST_CASE("sm100 wgrad plan: SM100 takes SM100 variants only, SM90 SM90 ones") {
    // Both architectures' variants in one list: each device takes its own.
    int sm90_count = 0, sm100_count = 0;
    const ggemm::WgradVariant* sm90 = ggemm::compiled_wgrad_variants(90).items;
    const ggemm::WgradVariant* sm100v = ggemm::compiled_wgrad_variants(100).items;
    sm90_count = ggemm::compiled_wgrad_variants(90).count;
    sm100_count = ggemm::compiled_wgrad_variants(100).count;
    std::vector<ggemm::WgradVariant> both(sm90, sm90 + sm90_count);
    both.insert(both.end(), sm100v, sm100v + sm100_count);
    ggemm::WgradVariantList list;
    list.items = both.data();
    list.count = static_cast<int>(both.size());
    const ggemm_wgrad_desc desc = sm100_wgrad_desc();
    ggemm_plan plan;
    REQUIRE(ggemm::build_wgrad_plan(desc, sm100_device(), list, &plan) == GGEMM_SUCCESS);
    CHECK(plan.wgrad.variant.arch == 100);
    REQUIRE(ggemm::build_wgrad_plan(desc, sm90_device(), list, &plan) == GGEMM_SUCCESS);
    CHECK(plan.wgrad.variant.arch == 90);
    CHECK(plan.wgrad.store_path == ggemm::kWgradStoreTma);
    // SM100 with only SM90 kernels compiled in: refused, naming the architecture.
    REQUIRE(ggemm::build_wgrad_plan(desc, sm100_device(), ggemm::compiled_wgrad_variants(90), &plan) ==
            GGEMM_ERROR_UNSUPPORTED_CONFIG);
    CHECK(message_contains("no compiled weight-gradient kernel variant for SM100"));
}
