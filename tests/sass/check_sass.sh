#!/usr/bin/env bash
# Checks the machine code of the built library, for the kernels no GPU here can run (SM100) and
# for the ones it can (SM90):
#
#   sm_100a  every grouped_gemm_sm100 kernel contains the tcgen05 MMA (UTCHMMA), the TMEM load
#            (LDTM), TMEM allocation and release (UTCATOMSWS.FIND_AND_SET / UTCATOMSWS.AND), the
#            MMA-completion commit to an mbarrier (UTCBAR), TMA loads (UTMALDG) and mbarrier waits
#            (SYNCS.PHASECHK), the fused GLU's sigmoid (MUFU.EX2, MUFU.RCP); no local memory
#            (no LDL/STL, LOCAL:0, STACK:0); dGLU's epilogue (drain_dglu): the L2 prefetch of each
#            row's saved pre-activation (CCTL.E.PF2), its 8- and 16-byte global loads (LDG.E.64 for
#            a 16-bit dtype, LDG.E.128 for fp32); and the ordered reduction of d_prob's partials
#            (ggemm::sm100::reduce_d_prob) is compiled for sm_100a. The one-CTA kernels
#            (Config<N, stages, 1>) use only the cta_group::1 forms; the CTA-pair kernels
#            (Config<N, stages, 2>) only the cta_group::2 forms: UTCHMMA.2CTA,
#            UTCBAR.2CTA.MULTICAST, UTCATOMSWS.2CTA.FIND_AND_SET, UTMALDG.xD.2CTA, and the cluster
#            barrier (UCGABAR_ARV / UCGABAR_WAIT) around barrier init and TMEM release. Each
#            kernel's tcgen05.mma instruction descriptor is the immediate its Config gives (PTX ISA
#            9.7.16.4.2 Table 42: bf16 x bf16 -> f32, N, M, transpose B for N-major weights), never
#            the other weight layout's; the N-major kernels (Config's last argument 1) build their
#            B descriptors with the MN-major leading byte offset (8192 >> 4 at bit 16: 0x2000000),
#            the K-major ones (0) never, and load B as tile_n / 64 / cta_group TMA boxes per stage
#            The weight-gradient kernels (wgrad_sm100, one CTA) contain UTCHMMA, UTCBAR, LDTM.x32,
#            TMEM allocation and release, 2D TMA loads and mbarrier waits, no cta_group::2 form, no
#            cluster barrier and no local memory; each moves its instruction descriptor (M = 128,
#            N = tile_q, transpose A and transpose B: both operands MN-major) into a uniform register
#            as an immediate, and never a descriptor with only one of the two transpose bits; it
#            builds both operands' descriptors with the MN-major leading byte offset (0x2000000)
#            and loads 2 + tile_q / 64 boxes of 64 columns per stage
#   sm_90a   every grouped_gemm_sm90 kernel (a Config, or its plain-epilogue instance
#            PlainEpilogue<Config>, one beside every kernel but dGLU's, checked as its Config)
#            contains HGMMA and TMA loads; the GLU instance GluEpilogue<Config> exists for the
#            256-wide half-tile one-CTA K-major kernel alone and issues no HGMMA.64x256x16 (its
#            tiles are two n128 blocks), with the sigmoid's MUFU.EX2 / MUFU.RCP and TMA stores;
#            the warp-store kernels the epilogue's shared-memory slices and 16-byte global
#            stores (STS, LDS.128, STG.E.128); the TMA-store kernels
#            (grouped_gemm_sm90_tma_store) stmatrix (STSM) and TMA stores (UTMASTG) instead, and
#            no 16-byte global stores or slice reads; the dGLU
#            kernels that load the pre-activation by TMA (grouped_gemm_sm90_dglu) 2D TMA loads
#            into their atom buffers, ldmatrix and stmatrix in place (LDSM, STSM), the
#            proxy fence, TMA stores, and no global stores of d_pre (no STG.E.128); no local
#            memory. The N-major kernels (Config's weight layout 1) read B with HGMMA's
#            transposed-B form (.tnspB); the K-major ones (layout 0) never. The cluster kernels
#            (Config's cluster_m 2) multicast B (UTMALDG.xD.MULTICAST), arrive on the other
#            CTA's barriers (SYNCS.ARRIVE.TRANS64.RED) and hold the cluster barrier
#            (UCGABAR_ARV / UCGABAR_WAIT); the one-CTA kernels (1) none of these. The
#            grouped_gemm_sm90, _tma_store and wgrad_sm90 kernels issue their TMA loads in an
#            elect.sync region, with no loop over a warp's active lanes (BRA.U.ANY after UTMALDG).
#            The one-CTA grouped_gemm_sm90 kernels and wgrad_sm90 claim the dynamic scheduler's
#            items by a 64-bit global add (ATOMG.E.ADD.64), which the wrapper's probe shows
#            issued without ptxas's warp aggregation.
#            The weight-gradient kernels (wgrad_sm90) read both operands transposed
#            (.tnspA.tnspB) with 2D TMA loads and mbarrier waits, and keep both output paths: the
#            TMA store path (STS / STS.64 staging, fence, named barrier, UTMASTG.3D) and the
#            register path's global stores; no local memory, 168 registers
#            In every SM90 kernel (grouped_gemm_sm90, wgrad_sm90) each wgmma batch takes its
#            descriptors from uniform registers: no R2UR or WARPSYNC between WARPGROUP.ARRIVE and
#            the batch's last HGMMA (gsb0). A branch the compiler cannot prove warp-uniform moves
#            the main loop's state to per-thread registers, which cost 2-3 % on the suite's small-K cases
#            After each setmaxnreg (USETMAXREG.DEALLOC / TRY_ALLOC N) the code reachable from it
#            names only registers R0 .. R(N-1) (setmaxnreg_regions.py; needs python3): the
#            producers' 56 (24 in the 192-wide dGLU kernels) and the math warps' 224 (240); the
#            kernels of one math warpgroup (64-row tiles, Config's last argument 1) set none
#            The dGLU kernels with evict-first streams (Config's PreL2 1) carry the
#            L2 policy on their 2D TMA loads and stores (desc[UR]) and prefetch nothing into the
#            L2; the other dGLU kernels carry no policy and prefetch (CCTL.E.PF2)
#   wrappers tests/sass/ptx_wrappers_sm100.cu, which calls every ptx/tcgen05.cuh and ptx/tmem.cuh
#            wrapper, assembles for sm_100a and yields each expected instruction (when nvcc exists);
#            tests/sass/ptx_wrappers_sm90.cu likewise for the mbarrier, TMA (loads, multicast
#            loads, stores), fence, cluster, named-barrier, elect, shared load/store, stmatrix,
#            ldmatrix, L1 and L2 prefetch (CCTL.E.PF1, CCTL.E.PF2), global load (LDG.E), global
#            counter add (ATOMG.E.ADD.64, not aggregated: no VOTEU.ANY or POPC in its kernel) and
#            wgmma wrappers on sm_90a
#
# The SASS names were learned by disassembling small sm_100a probes with cuobjdump 13.2: UTCHMMA
# for tcgen05.mma.kind::f16 (UTCHMMA.2CTA for cta_group::2), UTCBAR for tcgen05.commit,
# UTCATOMSWS.FIND_AND_SET.ALIGN / UTCATOMSWS.AND for tcgen05.alloc / dealloc, LDTM.xN for
# tcgen05.ld.32x32b.xN, UVIRTCOUNT.DEALLOC.SMPOOL for tcgen05.relinquish_alloc_permit.
#
# It also prints each kernel's registers, shared memory, local memory and stack (resource report).
#
# Usage: check_sass.sh path/to/libggemm.so
# Exit: 0 all checks passed, 1 a check failed, 77 skipped (cuobjdump or nvdisasm unavailable).
# cuobjdump and nvdisasm come with a CUDA toolkit, or from PyPI on a machine without one:
#   pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm    (13.x; sm_100a needs >= 12.8)
# They are looked for in $CUOBJDUMP / $NVDISASM, on PATH, in the CUDA toolkit, and in the
# nvidia/cu13/bin folder of every Python site directory.
set -u

library="${1:-}"
if [[ -z "$library" || ! -f "$library" ]]; then
    echo "check_sass: usage: check_sass.sh path/to/libggemm.so (got '${library}')" >&2
    exit 1
fi
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"

# ---- find the tools ------------------------------------------------------------------------------
source "$here/find_tools.sh"

cuobjdump="$(find_tool cuobjdump "${CUOBJDUMP:-}")" || {
    echo "check_sass: SKIPPED: cuobjdump not found (install nvidia-cuda-cuobjdump from PyPI or a CUDA toolkit, or set CUOBJDUMP)"
    exit 77
}
nvdisasm="$(find_tool nvdisasm "${NVDISASM:-}")" || {
    echo "check_sass: SKIPPED: nvdisasm not found; cuobjdump -sass needs it (install nvidia-cuda-nvdisasm or set NVDISASM)"
    exit 77
}
export PATH="$(dirname "$nvdisasm"):$PATH"
echo "check_sass: $("$cuobjdump" --version | tail -1) ($cuobjdump)"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "check_sass: FAIL: $*"; failures=$((failures + 1)); }
pass() { echo "check_sass: ok: $*"; }

# instruction_descriptor N M A_MN B_MN: the tcgen05.mma kind::f16 instruction descriptor, worked
# out here from PTX ISA 9.7.16.4.2 Table 42: dtype F32 (bits 4-5 = 1), atype and btype BF16
# (bits 7-9, 10-12 = 1), transpose A = A_MN (bit 15), transpose B = B_MN (bit 16), N >> 3
# (bits 17-22), M >> 4 (bits 24-28).
instruction_descriptor() {
    printf '0x%x' $(( (1 << 4) | (1 << 7) | (1 << 10) | ($3 << 15) | ($4 << 16) | (($1 >> 3) << 17) | (($2 >> 4) << 24) ))
}

# check_instruction_descriptors SET: every grouped_gemm_sm100 kernel in $work/SET/ moves the
# instruction descriptor of its Config<tile_n, stages, cta_group, layout> into a uniform register
# as an immediate (UMOV URn, 0x...): M = 128 x cta_group, transpose B = layout; and never the
# descriptor of the other weight layout.
check_instruction_descriptors() {
    local arch="$1" file name tile_n cta_group layout expected other found=0
    for file in "$work/$arch"/*grouped_gemm_sm100*.sass; do
        [[ -e "$file" ]] || continue
        name="$(basename "$file" .sass)"
        [[ "$name" =~ ConfigILi([0-9]+)ELi[0-9]+ELi([12])ELi([01])EE ]] || continue
        found=$((found + 1))
        tile_n="${BASH_REMATCH[1]}" cta_group="${BASH_REMATCH[2]}" layout="${BASH_REMATCH[3]}"
        expected="$(instruction_descriptor "$tile_n" $(( 128 * cta_group )) 0 "$layout")"
        other="$(printf '0x%x' $(( expected ^ (1 << 16) )))"
        if ! grep -qE "UMOV UR[0-9]+, ${expected} ;" "$file"; then
            fail "$arch $name: no instruction descriptor $expected (UMOV) for its Config"
        elif grep -qE "UMOV UR[0-9]+, ${other} ;" "$file"; then
            fail "$arch $name: holds $other, the other weight layout's instruction descriptor"
        else
            pass "$arch $name: instruction descriptor $expected"
        fi
    done
    if [[ $found -eq 0 ]]; then
        fail "$arch: no grouped_gemm_sm100 kernel with a weight layout in $library"
    fi
}

# check_nmajor_boxes SET: every N-major grouped_gemm_sm100 kernel in $work/SET/ loads its part of
# a stage's B as tile_n / 64 / cta_group boxes of 64 columns: that many 3D TMA loads (dense
# weights), and that many 2D ones besides A's one 2D load (discrete weights), unrolled.
check_nmajor_boxes() {
    local arch="$1" file name tile_n cta_group boxes loads_3d loads_2d
    for file in "$work/$arch"/*grouped_gemm_sm100*.sass; do
        [[ -e "$file" ]] || continue
        name="$(basename "$file" .sass)"
        [[ "$name" =~ ConfigILi([0-9]+)ELi[0-9]+ELi([12])ELi1EE ]] || continue
        tile_n="${BASH_REMATCH[1]}" cta_group="${BASH_REMATCH[2]}"
        boxes=$(( tile_n / 64 / cta_group ))
        loads_3d="$(grep -cE '^[[:space:]]*/\*[0-9a-f]+\*/[[:space:]]+(@!?U?P[0-9T] +)?UTMALDG\.3D' "$file")"
        loads_2d="$(grep -cE '^[[:space:]]*/\*[0-9a-f]+\*/[[:space:]]+(@!?U?P[0-9T] +)?UTMALDG\.2D' "$file")"
        if [[ "$loads_3d" -eq "$boxes" && "$loads_2d" -eq $(( boxes + 1 )) ]]; then
            pass "$arch $name: $boxes N-major B boxes per stage ($loads_3d 3D, $loads_2d 2D TMA loads)"
        else
            fail "$arch $name: $loads_3d 3D and $loads_2d 2D TMA loads, expected $boxes and $(( boxes + 1 ))"
        fi
    done
}

# check_wgrad_sm100 SET: every wgrad_sm100 kernel in $work/SET/ (WgradConfig<tile_q, stages>) holds
# its instruction descriptor as an immediate (bf16 x bf16 -> f32, transpose A bit 15 and transpose
# B bit 16 set, N = tile_q, M = 128; PTX ISA 9.7.16.4.2 Table 42) and neither one-transpose form,
# ORs the MN-major leading byte offset into both operands' descriptors (two ULOP3.LUT with
# 0x2000000), and issues 2 + tile_q / 64 2D TMA loads (X1's two boxes, X2's tile_q / 64), unrolled.
check_wgrad_sm100() {
    local arch="$1" file name tile_q expected only_a only_b loads lbo found=0
    for file in "$work/$arch"/*wgrad_sm100*.sass; do
        [[ -e "$file" ]] || continue
        name="$(basename "$file" .sass)"
        [[ "$name" =~ WgradConfigILi([0-9]+)ELi[0-9]+EE ]] || continue
        found=$((found + 1))
        tile_q="${BASH_REMATCH[1]}"
        expected="$(instruction_descriptor "$tile_q" 128 1 1)"
        only_b="$(printf '0x%x' $(( expected ^ (1 << 15) )))" only_a="$(printf '0x%x' $(( expected ^ (1 << 16) )))"
        if ! grep -qE "UMOV UR[0-9]+, ${expected} ;" "$file"; then
            fail "$arch $name: no instruction descriptor $expected (UMOV) with both operands MN-major"
        elif grep -qE "UMOV UR[0-9]+, (${only_a}|${only_b}) ;" "$file"; then
            fail "$arch $name: holds an instruction descriptor with only one operand MN-major"
        else
            pass "$arch $name: instruction descriptor $expected (transpose A and B)"
        fi
        lbo="$(grep -cE '^[[:space:]]*/\*[0-9a-f]+\*/[[:space:]]+(@!?U?P[0-9T] +)?ULOP3\.LUT [^;]*0x2000000,' "$file")"
        if [[ "$lbo" -ge 2 ]]; then
            pass "$arch $name: MN-major leading byte offset in both operands' descriptors ($lbo ULOP3.LUT)"
        else
            fail "$arch $name: $lbo ULOP3.LUT with the MN-major leading byte offset 0x2000000, expected 2 (A and B)"
        fi
        loads="$(grep -cE '^[[:space:]]*/\*[0-9a-f]+\*/[[:space:]]+(@!?U?P[0-9T] +)?UTMALDG\.2D' "$file")"
        if [[ "$loads" -eq $(( 2 + tile_q / 64 )) ]]; then
            pass "$arch $name: $loads 64-column boxes per stage (2 of X1, $(( tile_q / 64 )) of X2)"
        else
            fail "$arch $name: $loads 2D TMA loads, expected $(( 2 + tile_q / 64 ))"
        fi
    done
    if [[ $found -ne 3 ]]; then
        fail "$arch: $found wgrad_sm100 kernels in $library, expected 3 (tile_q 128, 192, 256)"
    fi
}

# ---- split the disassembly into one file per kernel ----------------------------------------------
# split_functions SASS DIR: writes DIR/<mangled name>.sass for every function of a cuobjdump -sass.
split_functions() {
    mkdir -p "$2"
    awk -v dir="$2" '
        /Function : / { name = $NF; file = dir "/" name ".sass"; next }
        file != ""    { print > file }
    ' "$1"
}

# disassemble ARCH: the library's ARCH code, split into $work/ARCH/.
disassemble() {
    local arch="$1"
    if ! "$cuobjdump" -sass -arch "$arch" "$library" >"$work/$arch.sass" 2>"$work/$arch.err"; then
        fail "cuobjdump -sass -arch $arch failed: $(head -c 400 "$work/$arch.err")"
        return 1
    fi
    split_functions "$work/$arch.sass" "$work/$arch"
}

# check_kernels SET NAME_PATTERN MNEMONIC...: every function in $work/SET/ whose name matches
# contains each mnemonic (an extended regex on the opcode, after any predicate) and no local-memory
# access.
check_kernels() {
    local arch="$1" pattern="$2"
    shift 2
    local found=0 file name mnemonic present
    for file in "$work/$arch"/*.sass; do
        [[ -e "$file" ]] || continue
        name="$(basename "$file" .sass)"
        [[ "$name" =~ $pattern ]] || continue
        found=$((found + 1))
        present=""
        for mnemonic in "$@"; do
            if grep -qE "^[[:space:]]*/\*[0-9a-f]+\*/[[:space:]]+(@!?U?P[0-9T] +)?${mnemonic}" "$file"; then
                present="$present ${mnemonic//\\/}"
            else
                fail "$arch $name: no $mnemonic instruction"
            fi
        done
        if grep -qE "[[:space:]](LDL|STL)(\.[A-Z0-9.]+)?[[:space:]]" "$file"; then
            fail "$arch $name: uses local memory ($(grep -cE '[[:space:]](LDL|STL)' "$file") LDL/STL)"
        else
            present="$present, no LDL/STL"
        fi
        pass "$arch $name:$present"
    done
    if [[ $found -eq 0 ]]; then
        fail "$arch: no kernel matching '$pattern' in $library"
    fi
}

# check_none_counted SET NAME_PATTERN AWK_PROGRAM CLEAN_TEXT FOUND_TEXT: runs the awk program,
# which prints a count, over every function in $work/SET/ whose name matches; each must count 0.
check_none_counted() {
    local arch="$1" pattern="$2" program="$3" clean_text="$4" found_text="$5"
    local found=0 file name count
    for file in "$work/$arch"/*.sass; do
        [[ -e "$file" ]] || continue
        name="$(basename "$file" .sass)"
        [[ "$name" =~ $pattern ]] || continue
        found=$((found + 1))
        count="$(awk "$program" "$file")"
        if [[ "$count" -eq 0 ]]; then
            pass "$arch $name: $clean_text"
        else
            fail "$arch $name: $count $found_text"
        fi
    done
    if [[ $found -eq 0 ]]; then
        fail "$arch: no kernel matching '$pattern' in $library"
    fi
}

# check_setmaxnreg_regions SET NAME_PATTERN: in every function whose name matches, the code after
# each setmaxnreg uses no register at or past the count it sets (setmaxnreg_regions.py).
check_setmaxnreg_regions() {
    local arch="$1" pattern="$2" file name report found=0
    if ! command -v python3 >/dev/null; then
        echo "check_sass: skipped: the registers after setmaxnreg (no python3)"
        return
    fi
    for file in "$work/$arch"/*.sass; do
        [[ -e "$file" ]] || continue
        name="$(basename "$file" .sass)"
        [[ "$name" =~ $pattern ]] || continue
        found=$((found + 1))
        if report="$(python3 "$here/setmaxnreg_regions.py" "$file")"; then
            pass "$arch $name: after setmaxnreg: $(tr '\n' ';' <<< "$report")"
        else
            fail "$arch $name: registers past a setmaxnreg count: $(tr '\n' ';' <<< "$report")"
        fi
    done
    if [[ $found -eq 0 ]]; then
        fail "$arch: no kernel matching '$pattern' in $library"
    fi
}

# check_uniform_batches SET NAME_PATTERN: in every function whose name matches, no R2UR or
# WARPSYNC lies between a WARPGROUP.ARRIVE and the HGMMA that closes its batch (gsb0).
check_uniform_batches() {
    check_none_counted "$1" "$2" \
        '/WARPGROUP\.ARRIVE/ { open = 1; next }
         open && /HGMMA[^;]*gsb0/ { open = 0; next }
         open && /(R2UR|WARPSYNC)/ { n++ }
         END { print n + 0 }' \
        "wgmma descriptors from uniform registers" \
        "R2UR/WARPSYNC inside wgmma batches (a branch the compiler thinks divergent)"
}

# check_loads_unlooped SET NAME_PATTERN: every function whose name matches issues its TMA loads
# (UTMALDG) outside a loop over the warp's active lanes: no BRA.U.ANY within the three
# instructions after a load (the compiler's ELECT ... UTMALDG ... BRA.U.ANY form, emitted when a
# load is guarded by a lane-index test instead of elect.sync).
check_loads_unlooped() {
    check_none_counted "$1" "$2" \
        '/UTMALDG/ { left = 3; next }
         left > 0 && /BRA\.U\.ANY/ { n++; left = 0; next }
         left > 0 && /\/\*[0-9a-f]+\*\// { left-- }
         END { print n + 0 }' \
        "TMA loads outside lane loops" \
        "TMA load(s) in a loop over the warp's lanes (ELECT ... BRA.U.ANY)"
}

# check_absent SET NAME_PATTERN MNEMONIC...: no function in $work/SET/ whose name matches contains
# any of the mnemonics (e.g. a cta_group::1 MMA in a pair kernel).
check_absent() {
    local arch="$1" pattern="$2"
    shift 2
    local file name mnemonic clean
    for file in "$work/$arch"/*.sass; do
        [[ -e "$file" ]] || continue
        name="$(basename "$file" .sass)"
        [[ "$name" =~ $pattern ]] || continue
        clean=1
        for mnemonic in "$@"; do
            if grep -qE "^[[:space:]]*/\*[0-9a-f]+\*/[[:space:]]+(@!?U?P[0-9T] +)?${mnemonic}" "$file"; then
                fail "$arch $name: contains ${mnemonic//\\/}, which this kernel must not use"
                clean=0
            fi
        done
        [[ $clean -eq 1 ]] && pass "$arch $name: none of: ${*//\\/}"
    done
}

"$cuobjdump" -lelf "$library" >"$work/elves.txt" 2>&1 || true
for arch in sm_100a sm_90a; do
    if grep -q "$arch" "$work/elves.txt"; then pass "library embeds $arch code"; else fail "library embeds no $arch code"; fi
done

# Kernel names: ggemm::sm100::grouped_gemm_sm100<Config<tile_n, stages, cta_group, weight layout>>
# mangles the CTA group and the weight layout as the third and fourth template arguments
# (...ConfigILi256ELi4ELi1ELi0EE...: one CTA, K-major).
sm100_config='grouped_gemm_sm100INS0_6ConfigILi[0-9]+ELi[0-9]+'
sm100_single="${sm100_config}ELi1ELi[01]EE"
sm100_pair="${sm100_config}ELi2ELi[01]EE"
sm100_kmajor="${sm100_config}ELi[12]ELi0EE"
sm100_nmajor="${sm100_config}ELi[12]ELi1EE"
# ggemm::sm90 Config<tile_n, stages, output, store columns, weight layout, cluster_m, PreL2,
# math warpgroups>, or
# the plain-epilogue or GLU instance of one, PlainEpilogue<Config<...>> / GluEpilogue<Config<...>>,
# checked as its Config, the ping-pong kernels PingPong<Config<...>> too.
sm90_config='grouped_gemm_sm90(_tma_store|_dglu)?INS0_(13PlainEpilogueINS0_|11GluEpilogueINS0_)?(8PingPongINS0_)?6ConfigILi[0-9]+ELi[0-9]+ELNS0_6OutputE[01]ELi[0-9]+'
sm90_kmajor="${sm90_config}ELi0ELi[12]ELNS0_5PreL2E[01]ELi[12]EE"
sm90_nmajor="${sm90_config}ELi1ELi[12]ELNS0_5PreL2E[01]ELi[12]EE"
sm90_single="${sm90_config}ELi[01]ELi1ELNS0_5PreL2E[01]ELi[12]EE"
sm90_cluster="${sm90_config}ELi[01]ELi2ELNS0_5PreL2E[01]ELi[12]EE"
sm90_evict_first="${sm90_config}ELi[01]ELi[12]ELNS0_5PreL2E1ELi[12]EE"
sm90_dglu_plain_streams="grouped_gemm_sm90_dglu.*ELi[01]ELi[12]ELNS0_5PreL2E0ELi2EE"
# Two math warpgroups (and setmaxnreg), or one (64-row tiles, no setmaxnreg).
sm90_two_warpgroups="${sm90_config}ELi[01]ELi[12]ELNS0_5PreL2E[01]ELi2EE"
sm90_one_warpgroup="${sm90_config}ELi[01]ELi[12]ELNS0_5PreL2E[01]ELi1EE"
if disassemble sm_100a; then
    check_kernels sm_100a 'grouped_gemm_sm100' 'LDTM\.x32' 'UTCATOMSWS\.AND' 'SYNCS\.PHASECHK' 'MUFU\.EX2' 'MUFU\.RCP'
    # dGLU: each row's pre-activation prefetched into the L2, then loaded by the row's thread.
    check_kernels sm_100a 'grouped_gemm_sm100' 'CCTL\.E\.PF2' 'LDG\.E\.64' 'LDG\.E\.128'
    check_kernels sm_100a 'sm10013reduce_d_prob' 'LDG\.E' 'FADD' 'STG\.E'
    check_kernels sm_100a "$sm100_single" \
        'UTCHMMA ' 'UTCATOMSWS\.FIND_AND_SET' 'UTCBAR ' 'UTMALDG\.[23]D '
    check_absent sm_100a "$sm100_single" '[A-Z0-9_.]*\.2CTA' 'UCGABAR'
    check_kernels sm_100a "$sm100_pair" \
        'UTCHMMA\.2CTA ' 'UTCATOMSWS\.2CTA\.FIND_AND_SET' 'UTCBAR\.2CTA\.MULTICAST ' \
        'UTMALDG\.2D\.2CTA ' 'UTMALDG\.3D\.2CTA ' 'UCGABAR_ARV' 'UCGABAR_WAIT'
    check_absent sm_100a "$sm100_pair" 'UTCHMMA ' 'UTCBAR ' 'UTCATOMSWS\.FIND_AND_SET' 'UTMALDG\.[23]D '
    # Weight layouts: the instruction descriptor's transpose-B bit, and the MN-major B descriptor's
    # leading byte offset (0x200 << 16) in the N-major kernels only.
    check_instruction_descriptors sm_100a
    check_nmajor_boxes sm_100a
    check_kernels sm_100a "$sm100_nmajor" 'ULOP3\.LUT [^;]*0x2000000,'
    check_absent sm_100a "$sm100_kmajor" '[A-Z0-9.]+ [^;]*0x2000000,'
    # Every sm100 GEMM kernel is one of the kinds (a renamed Config would otherwise slip by).
    for file in "$work/sm_100a"/*grouped_gemm_sm100*.sass; do
        [[ -e "$file" ]] || continue
        name="$(basename "$file" .sass)"
        if [[ ! "$name" =~ $sm100_single && ! "$name" =~ $sm100_pair ]]; then
            fail "sm_100a $name: neither a one-CTA nor a CTA-pair Config; update check_sass.sh"
        fi
        if [[ ! "$name" =~ $sm100_kmajor && ! "$name" =~ $sm100_nmajor ]]; then
            fail "sm_100a $name: neither a K-major nor an N-major Config; update check_sass.sh"
        fi
    done
    # The weight gradient: one CTA, tcgen05 with both operands MN-major, TMEM drained by LDTM.
    check_kernels sm_100a 'wgrad_sm100' 'UTCHMMA ' 'UTCBAR ' 'LDTM\.x32' 'UTCATOMSWS\.FIND_AND_SET' \
        'UTCATOMSWS\.AND' 'UTMALDG\.2D ' 'SYNCS\.PHASECHK'
    check_absent sm_100a 'wgrad_sm100' '[A-Z0-9_.]*\.2CTA' 'UCGABAR' 'UTMALDG\.3D'
    check_wgrad_sm100 sm_100a
    # The N-major kernels exist: three one-CTA widths and two pairs (the pair of 192 has none).
    nmajor_count="$(ls "$work/sm_100a" | grep -cE "$sm100_nmajor")"
    if [[ "$nmajor_count" -eq 5 ]]; then
        pass "sm_100a: 5 N-major kernels"
    else
        fail "sm_100a: $nmajor_count N-major kernels, expected 5 (128, 192, 256 on one CTA; 128, 256 on a pair)"
    fi
fi
if disassemble sm_90a; then
    check_kernels sm_90a 'grouped_gemm_sm90' 'HGMMA\.' 'UTMALDG\.[23]D' 'SYNCS\.PHASECHK'
    # The warp-store epilogue's staged slices: STS in, LDS.128 out, and 16-byte global stores.
    check_kernels sm_90a 'grouped_gemm_sm90INS' 'STS ' 'LDS\.128' 'STG\.E\.128'
    # The TMA-store epilogue: stmatrix into the tile buffer, TMA stores out of it; a warpgroup
    # whose rows are partly past a valid-row count copies its valid rows out of the buffer
    # itself (LDS.128, STG.E.128), since a TMA box cannot end at the count.
    check_kernels sm_90a 'grouped_gemm_sm90_tma_store' 'STSM\.16\.M88\.4' 'UTMASTG\.2D' 'UTMACMDFLUSH' \
        'FENCE\.VIEW\.ASYNC\.S' 'LDS\.128' 'STG\.E\.128'
    # dGLU through TMA: the pre-activation into the buffer by TMA, d_pre written in place and
    # stored by TMA.
    check_kernels sm_90a 'grouped_gemm_sm90_dglu' 'UTMALDG\.2D' 'LDSM\.16\.M88\.4' 'STSM\.16\.M88\.4' \
        'FENCE\.VIEW\.ASYNC\.S' 'UTMASTG\.2D' 'UTMACMDFLUSH'
    check_absent sm_90a 'grouped_gemm_sm90_dglu' 'STG\.E\.128'
    # Evict-first streams (Config's last argument, PreL2 1): the pre-activation's loads and
    # d_pre's stores carry the L2 policy (desc[UR]); in the other dGLU kernels no TMA copy does.
    check_kernels sm_90a "$sm90_evict_first" 'UTMALDG\.2D [^;]*desc\[UR' 'UTMASTG\.2D [^;]*desc\[UR'
    check_absent sm_90a "$sm90_dglu_plain_streams" 'UTMA(LDG|STG)[^;]*desc\['
    # and prefetch nothing into the L2 (CCTL.E.PF2), which the other dGLU kernels do at each tile's start.
    check_absent sm_90a "$sm90_evict_first" 'CCTL\.E\.PF2'
    check_kernels sm_90a "$sm90_dglu_plain_streams" 'CCTL\.E\.PF2'
    # The weight gradient: both wgmma operands MN-major (transposed) from shared memory.
    check_kernels sm_90a 'wgrad_sm90' 'HGMMA\.64x(256|192|128)x16\.F32\.BF16 [^;]*gdesc\[[^]]*\]\.tnspA\.tnspB' \
        'UTMALDG\.2D' 'SYNCS\.PHASECHK' 'USETMAXREG'
    # Its TMA store path: pairs into the staging atoms (STS for 2-byte outputs, STS.64 for fp32),
    # the async-proxy fence, the warpgroup's named barrier, 3-D TMA stores and their waits; the
    # register path's generic stores (ST.E, ST.E.64) stay compiled beside it.
    check_kernels sm_90a 'wgrad_sm90' 'STS ' 'STS\.64' 'FENCE\.VIEW\.ASYNC\.S' 'BAR\.SYNC[^;]*0x80' \
        'UTMASTG\.3D' 'UTMACMDFLUSH' 'DEPBAR\.LE' 'ST\.E\.64' 'ST\.E '
    # An fp32 output accumulated into leaves by TMA reduce-add.
    check_kernels sm_90a 'wgrad_sm90' 'UTMAREDG\.3D\.ADD'
    check_uniform_batches sm_90a 'grouped_gemm_sm90|wgrad_sm90'
    check_setmaxnreg_regions sm_90a "$sm90_two_warpgroups|wgrad_sm90"
    check_absent sm_90a "$sm90_one_warpgroup" 'USETMAXREG'
    # The weight layout is Config's fifth argument (...ELi1ELi1ELNS0_5PreL2E0ELi2EE... is N-major): the
    # N-major kernels read B transposed (HGMMA ... .tnspB), the K-major ones never do.
    check_kernels sm_90a "$sm90_nmajor" 'HGMMA\.64x[0-9]+x16\.F32\.BF16 [^;]*\.tnspB'
    check_absent sm_90a "$sm90_kmajor" 'HGMMA[^;]*tnspB'
    # Clusters of two: B multicast to both CTAs, the stage released in both, the cluster barrier
    # after barrier init and before exit. One CTA: none of it.
    check_kernels sm_90a "$sm90_cluster" 'UTMALDG\.2D\.MULTICAST' 'UTMALDG\.3D\.MULTICAST' \
        'SYNCS\.ARRIVE\.TRANS64\.RED' 'UCGABAR_ARV' 'UCGABAR_WAIT'
    check_absent sm_90a "$sm90_single" 'UTMALDG[^;]*MULTICAST' 'SYNCS\.ARRIVE\.TRANS64\.RED' 'UCGABAR'
    # The producers issue each stage's loads in an elect.sync region: no loop over the warp's
    # active lanes around a TMA load. dGLU's kernels still load the saved pre-activation, once
    # per tile, from a lane-index test; the weight gradient's stores leave that way too.
    check_loads_unlooped sm_90a 'grouped_gemm_sm90(_tma_store)?INS|wgrad_sm90'
    # The dynamic scheduler's claims: a 64-bit add (ptx/atomic.cuh) whose result is read when
    # the next item starts; the probe below shows the wrapper unaggregated (aggregated, ptxas
    # shuffles the result right after the atomic and the producer waits for it before the
    # item's loads). The cluster kernels run the static schedule only.
    check_kernels sm_90a "$sm90_single" 'ATOMG\.E\.ADD\.64'
    check_kernels sm_90a 'wgrad_sm90' 'ATOMG\.E\.ADD\.64'
    # Every kernel but dGLU's has its plain-epilogue instance beside it.
    general_count="$(ls "$work/sm_90a" | grep -E 'grouped_gemm_sm90(_tma_store)?INS0_(8PingPongINS0_)?6Config' | grep -c .)"
    plain_count="$(ls "$work/sm_90a" | grep -c 'INS0_13PlainEpilogue')"
    if [[ "$plain_count" -eq "$general_count" && "$plain_count" -gt 0 ]]; then
        pass "sm_90a: $plain_count plain-epilogue instances, one per kernel but dGLU's"
    else
        fail "sm_90a: $plain_count plain-epilogue instances for $general_count kernels but dGLU's"
    fi
    # The GLU instance: the 256-wide half-tile one-CTA K-major kernel's only, its every
    # whole-width tile two n128 register blocks (never one n256 wgmma).
    glu_instances="$(ls "$work/sm_90a" | grep 'INS0_11GluEpilogue')"
    if [[ "$(grep -c . <<< "$glu_instances")" -eq 1 &&
          "$glu_instances" =~ 11GluEpilogueINS0_6ConfigILi256ELi4ELNS0_6OutputE1ELi128ELi0ELi1ELNS0_5PreL2E0ELi2EE ]]; then
        pass "sm_90a: one GLU instance, of the 256-wide half-tile kernel"
    else
        fail "sm_90a: GLU instances: ${glu_instances:-none} (expected the 256-wide half-tile kernel's alone)"
    fi
    check_kernels sm_90a '11GluEpilogue' 'HGMMA\.64x128x16' 'MUFU\.EX2' 'MUFU\.RCP' 'UTMASTG'
    check_absent sm_90a '11GluEpilogue' 'HGMMA\.64x256x16'

    for file in "$work/sm_90a"/*.sass; do
        [[ -e "$file" ]] || continue
        name="$(basename "$file" .sass)"
        [[ "$name" =~ grouped_gemm_sm90 ]] || continue
        if [[ ! "$name" =~ $sm90_kmajor && ! "$name" =~ $sm90_nmajor ]]; then
            fail "sm_90a $name: neither a K-major nor an N-major Config; update check_sass.sh"
        fi
        if [[ ! "$name" =~ $sm90_single && ! "$name" =~ $sm90_cluster ]]; then
            fail "sm_90a $name: neither a one-CTA nor a cluster Config; update check_sass.sh"
        fi
        if [[ ! "$name" =~ $sm90_two_warpgroups && ! "$name" =~ $sm90_one_warpgroup ]]; then
            fail "sm_90a $name: neither two math warpgroups nor one; update check_sass.sh"
        fi
    done
fi

# ---- resource report: registers, shared, local memory and stack per kernel -----------------------
echo "check_sass: resource usage (REG registers/thread, SHARED static bytes, LOCAL/STACK bytes):"
"$cuobjdump" -res-usage "$library" >"$work/res.txt" 2>&1 || fail "cuobjdump -res-usage failed"
awk '
    /^ *Function / { name = $2; sub(/:$/, "", name); next }
    /REG:/ && name != "" { printf "  %-90s %s\n", name, $0; name = "" }
' "$work/res.txt" | sed 's/  */ /g; s/^ /  /'
while read -r line; do
    name="$(echo "$line" | awk '{print $1}')"
    [[ "$name" =~ grouped_gemm_sm(90|100)|wgrad_sm(90|100) ]] || continue
    local_bytes="$(echo "$line" | grep -oE 'LOCAL:[0-9]+' | cut -d: -f2)"
    stack_bytes="$(echo "$line" | grep -oE 'STACK:[0-9]+' | cut -d: -f2)"
    if [[ "${local_bytes:-x}" == "0" && "${stack_bytes:-x}" == "0" ]]; then
        pass "$name: LOCAL:0 STACK:0"
    else
        fail "$name: LOCAL:${local_bytes:-?} STACK:${stack_bytes:-?} (must be 0)"
    fi
    # The SM90 kernel's setmaxnreg budget (128 x 56 + 256 x 224 registers) spends exactly the
    # registers a 384-thread CTA gets at 168 per thread: allocated any fewer, setmaxnreg.inc
    # would wait forever (kernels/sm90/config_sm90.cuh, Config).
    # One math warpgroup (256 threads) sets no register count: ptxas's own allocation stands.
    if [[ "$name" =~ grouped_gemm_sm90|wgrad_sm90 && ! "$name" =~ $sm90_one_warpgroup ]]; then
        registers="$(echo "$line" | grep -oE 'REG:[0-9]+' | cut -d: -f2)"
        if [[ "${registers:-x}" == "168" ]]; then
            pass "$name: REG:168, the setmaxnreg budget"
        else
            fail "$name: REG:${registers:-?}, but the setmaxnreg budget assumes 168"
        fi
    fi
done < <(awk '
    /^ *Function / { name = $2; sub(/:$/, "", name); next }
    /REG:/ && name != "" { print name, $0; name = "" }
' "$work/res.txt")

# ---- every tcgen05 / TMEM wrapper assembles to its instruction -------------------------------------
nvcc="$(find_tool nvcc "${CUDACXX:-}")" || nvcc=""
if [[ -z "$nvcc" ]]; then
    echo "check_sass: note: nvcc not found, the ptx wrapper probe was not assembled"
elif ! "$nvcc" -std=c++17 -gencode=arch=compute_100a,code=sm_100a -cubin -I"$repo" \
        -o "$work/wrappers.cubin" "$here/ptx_wrappers_sm100.cu" 2>"$work/wrappers.err"; then
    fail "ptx_wrappers_sm100.cu does not assemble for sm_100a: $(head -c 600 "$work/wrappers.err")"
else
    "$cuobjdump" -sass "$work/wrappers.cubin" >"$work/probe.sass" 2>&1
    split_functions "$work/probe.sass" "$work/sm_100a_probe"
    check_kernels sm_100a_probe 'ptx_wrappers_sm100_cta1' \
        'UTCHMMA ' 'UTCBAR ' 'LDTM\.x32' 'LDTM\.x16' 'LDTM\.x8' 'UTCATOMSWS\.FIND_AND_SET' 'UTCATOMSWS\.AND' \
        'UVIRTCOUNT\.DEALLOC'
    check_kernels sm_100a_probe 'ptx_wrappers_sm100_cta2' \
        'UTCHMMA\.2CTA' 'UTCBAR\.2CTA\.MULTICAST' 'UTCATOMSWS\.2CTA\.FIND_AND_SET' 'UTCATOMSWS\.AND'
fi

# ---- every SM90 wrapper (mbarrier, TMA loads and stores, fences, cluster, wgmma) assembles ---------
if [[ -n "$nvcc" ]]; then
    if ! "$nvcc" -std=c++17 --expt-relaxed-constexpr -gencode=arch=compute_90a,code=sm_90a -cubin \
            -I"$repo" -o "$work/wrappers90.cubin" "$here/ptx_wrappers_sm90.cu" 2>"$work/wrappers90.err"; then
        fail "ptx_wrappers_sm90.cu does not assemble for sm_90a: $(head -c 600 "$work/wrappers90.err")"
    else
        "$cuobjdump" -sass "$work/wrappers90.cubin" >"$work/probe90.sass" 2>&1
        split_functions "$work/probe90.sass" "$work/sm_90a_probe"
        check_kernels sm_90a_probe 'ptx_wrappers_sm90_sync' \
            'UTMALDG\.2D ' 'UTMALDG\.3D ' 'UTMALDG\.2D\.MULTICAST' 'UTMALDG\.3D\.MULTICAST' 'UTMASTG\.2D' 'UTMASTG\.3D' \
            'UTMACMDFLUSH' 'UTMACCTL\.PF' 'SYNCS\.ARRIVE\.TRANS' 'SYNCS\.PHASECHK' 'UCGABAR_ARV' 'UCGABAR_WAIT' \
            'FENCE\.VIEW\.ASYNC\.S' 'BAR\.SYNC' 'ELECT ' 'STS ' 'STS\.64' 'LDS\.64' 'LDS\.128' 'STSM\.16\.M88\.4' \
            'LDSM\.16\.M88\.4' 'CCTL\.E\.PF1' 'CCTL\.E\.PF2' 'LDG\.E ' 'MUFU\.EX2' 'MUFU\.RCP'
        # ptx/cache_policy.cuh's policy on a TMA load and a TMA store: the cache-hint operand (desc[UR]).
        check_kernels sm_90a_probe 'ptx_wrappers_sm90_sync' 'UTMALDG\.2D [^;]*desc\[UR' 'UTMASTG\.2D [^;]*desc\[UR'
        check_kernels sm_90a_probe 'ptx_wrappers_sm90_atomic' 'ATOMG\.E\.ADD\.64'
        check_absent sm_90a_probe 'ptx_wrappers_sm90_atomic' 'VOTEU?\.ANY' 'U?POPC'
        check_kernels sm_90a_probe 'ptx_wrappers_sm90_wgmmaILi256' 'HGMMA\.64x256x16\.F32\.BF16'
        check_kernels sm_90a_probe 'ptx_wrappers_sm90_wgmmaILi192' 'HGMMA\.64x192x16\.F32\.BF16'
        check_kernels sm_90a_probe 'ptx_wrappers_sm90_wgmmaILi128' 'HGMMA\.64x128x16\.F32\.BF16'
        check_kernels sm_90a_probe 'ptx_wrappers_sm90_wgmmaILi64' 'HGMMA\.64x64x16\.F32\.BF16'
        check_kernels sm_90a_probe 'ptx_wrappers_sm90_wgmmaILi32' 'HGMMA\.64x32x16\.F32\.BF16'
        # imm-trans-b = 1 (B MN-major) assembles to the .tnspB form of the B descriptor operand.
        check_kernels sm_90a_probe 'ptx_wrappers_sm90_wgmmaILi[0-9]+ELi1E' 'HGMMA\.64x[0-9]+x16\.F32\.BF16 [^;]*\.tnspB'
        check_absent sm_90a_probe 'ptx_wrappers_sm90_wgmmaILi[0-9]+ELi0E' 'HGMMA[^;]*tnspB'
        check_kernels sm_90a_probe 'ptx_wrappers_sm90_setmaxnreg' 'USETMAXREG\.DEALLOC' 'USETMAXREG\.TRY_ALLOC'
    fi
fi

# ---- the MN-major (transposed) wgmma wrappers of the weight gradient -----------------------------
if [[ -n "$nvcc" ]]; then
    if ! "$nvcc" -std=c++17 --expt-relaxed-constexpr -gencode=arch=compute_90a,code=sm_90a -cubin \
            -I"$repo" -o "$work/wrappers_mn.cubin" "$here/ptx_wrappers_wgmma_mn_sm90.cu" 2>"$work/wrappers_mn.err"; then
        fail "ptx_wrappers_wgmma_mn_sm90.cu does not assemble for sm_90a: $(head -c 600 "$work/wrappers_mn.err")"
    else
        "$cuobjdump" -sass "$work/wrappers_mn.cubin" >"$work/probe_mn.sass" 2>&1
        split_functions "$work/probe_mn.sass" "$work/sm_90a_probe_mn"
        check_kernels sm_90a_probe_mn 'ptx_wrappers_sm90_wgmma_mnILi256' 'HGMMA\.64x256x16\.F32\.BF16 [^;]*\.tnspA\.tnspB'
        check_kernels sm_90a_probe_mn 'ptx_wrappers_sm90_wgmma_mnILi128' 'HGMMA\.64x128x16\.F32\.BF16 [^;]*\.tnspA\.tnspB'
    fi
fi

if [[ $failures -ne 0 ]]; then
    echo "check_sass: $failures check(s) FAILED"
    exit 1
fi
echo "check_sass: all checks passed"
exit 0
