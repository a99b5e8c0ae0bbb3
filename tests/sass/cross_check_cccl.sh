#!/usr/bin/env bash
# Cross-checks our PTX wrappers (ptx/*.h) against CCCL's cuda::ptx: each ours_<name> kernel of
# tests/sass/cccl_cross_check_sm90.cu and cccl_cross_check_sm100.cu calls one of our wrappers, its
# cccl_<name> twin the cuda::ptx function for the same instruction with the same arguments. Both
# are assembled (never run) and the instructions that carry the wrapper's meaning must be the same
# sequence in both kernels:
#
#   sm_90a   cccl_cross_check_sm90.cu   mbarrier, TMA loads / stores, fences, cluster barrier
#   sm_100a  cccl_cross_check_sm90.cu   the same wrappers, as the SM100 kernel uses them
#   sm_100a  cccl_cross_check_sm100.cu  tcgen05 MMA / commit / fences, TMEM alloc / load
#
# Kept instructions: the synchronization, async-proxy and tensor-core ones (SYNCS, UTMA*, UBLKCP,
# FENCE, UCGABAR_*, MEMBAR, ERRBAR, CGAERRBAR, CCTL, NANOSLEEP, DEPBAR, BAR, UTC*, LDTM,
# UVIRTCOUNT) and the memory writes a wrapper may turn into (STG for tensormap.replace on a global
# map, STS / STAS / ATOMS for the TMEM allocator's bookkeeping). Each is compared with its
# modifiers and its operands, register numbers erased (R7 -> R, UR4 -> UR, P0 -> P) so that
# register allocation does not matter but operand kinds, immediates and address offsets do.
# A pair whose kept SASS is empty on both sides (fence.mbarrier_init, tcgen05.fence::*, a lone
# tcgen05.wait::ld: ptxas expresses them as scheduling, not as an instruction) is compared on the
# inline-asm PTX it emits instead, comments stripped and register names erased.
#
# Two controls show the comparison is not blind: ours_mbarrier_arrive must differ from
# ours_mbarrier_arrive_expect_tx, ours_tcgen05_mma_f16_cta1 from ours_tcgen05_mma_f16_cta2.
#
# Usage: cross_check_cccl.sh
# Exit: 0 all pairs match, 1 a pair differs (both sequences printed), 77 skipped (no nvcc,
# cuobjdump or nvdisasm). The tools are looked for as check_sass.sh does: $CUDACXX / $CUOBJDUMP /
# $NVDISASM, PATH, the CUDA toolkit, and the nvidia/cu13/bin folder of every Python site directory.
set -u

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
say() { echo "cross_check_cccl: $*"; }

# ---- find the tools ------------------------------------------------------------------------------
source "$here/find_tools.sh"

nvcc="$(find_tool nvcc "${CUDACXX:-}")" || {
    say "SKIPPED: nvcc not found (set CUDACXX or put a CUDA toolkit on PATH)"
    exit 77
}
cuobjdump="$(find_tool cuobjdump "${CUOBJDUMP:-}")" || {
    say "SKIPPED: cuobjdump not found (install nvidia-cuda-cuobjdump from PyPI or a CUDA toolkit, or set CUOBJDUMP)"
    exit 77
}
nvdisasm="$(find_tool nvdisasm "${NVDISASM:-}")" || {
    say "SKIPPED: nvdisasm not found; cuobjdump -sass needs it (install nvidia-cuda-nvdisasm or set NVDISASM)"
    exit 77
}
export PATH="$(dirname "$nvdisasm"):$PATH"
say "nvcc: $("$nvcc" --version | tail -1); cuobjdump: $("$cuobjdump" --version | tail -1)"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
failures=0
pairs=0
fail() { say "FAIL: $*"; failures=$((failures + 1)); }

# ---- what is compared ----------------------------------------------------------------------------
# sass_sequence FILE: the kept instructions of one function's SASS, one per line, predicate
# dropped (its register depends on allocation; the branch structure around it is the same code).
sass_sequence() {
    awk '
        /^[[:space:]]*\/\*[0-9a-f]+\*\/[[:space:]]/ {
            line = $0
            sub(/^[[:space:]]*\/\*[0-9a-f]+\*\/[[:space:]]+/, "", line)
            sub(/[[:space:]]*\/\*.*$/, "", line)
            sub(/[[:space:]]*;[[:space:]]*$/, "", line)
            sub(/^@!?U?P[0-9T][[:space:]]+/, "", line)
            opcode = line; sub(/[[:space:]].*$/, "", opcode)
            if (opcode !~ /^(SYNCS|UTMA[A-Z]*|UBLKCP|FENCE|UCGABAR_[A-Z]+|MEMBAR|ERRBAR|CGAERRBAR|CCTL|NANOSLEEP|DEPBAR|BAR|UTC[A-Z]*|LDTM|UVIRTCOUNT|ATOMS|STAS|STS|STG)(\.|$)/) next
            gsub(/[[:space:]]+/, " ", line)
            print line
        }
    ' "$1" | sed -E 's/\bURZ?[0-9]*\b/UR/g; s/\bRZ?[0-9]*\b/R/g; s/\bU?P[0-9]\b/P/g; s/\.reuse//g'
}

# ptx_sequence PTX FUNCTION: the inline-asm lines of one .entry, comments dropped, registers erased.
ptx_sequence() {
    awk -v fn="$2" '
        $0 ~ ("\\.entry " fn "\\(") { inside = 1; next }
        inside && /^}/ { exit }
        inside && /\/\/ begin inline asm/ { in_asm = 1; next }
        inside && /\/\/ end inline asm/ { in_asm = 0; next }
        in_asm {
            line = $0
            sub(/\/\/.*$/, "", line)
            gsub(/%[a-zA-Z_]+[0-9]+/, "%reg", line)
            gsub(/[[:space:]]+/, " ", line); sub(/^ /, "", line); sub(/ $/, "", line)
            if (line != "") print line
        }
    ' "$1"
}

# summary SEQUENCE: one line, the first 8 instructions and how many more.
summary() {
    echo "$1" | awk '
        NR <= 8 { printf "%s%s", (NR > 1 ? " | " : ""), $0 }
        END { if (NR > 8) printf " | ... (%d instructions)", NR; printf "\n" }'
}

# ---- one source for one architecture -------------------------------------------------------------
# check_source SOURCE ARCH: assembles SOURCE for ARCH and compares every ours_X with cccl_X.
check_source() {
    local source="$1" arch="$2"
    local dir="$work/$(basename "$source" .cu).$arch"
    mkdir -p "$dir/keep" "$dir/fn"
    if ! "$nvcc" -std=c++17 -cubin -gencode="arch=compute_${arch#sm_},code=$arch" -I"$repo" \
            --keep --keep-dir "$dir/keep" -o "$dir/probe.cubin" "$source" 2>"$dir/nvcc.err"; then
        fail "$(basename "$source") does not compile for $arch: $(head -c 800 "$dir/nvcc.err")"
        return
    fi
    local ptx
    ptx="$(ls "$dir"/keep/*.ptx 2>/dev/null | head -1)"
    if ! "$cuobjdump" -sass "$dir/probe.cubin" >"$dir/probe.sass" 2>"$dir/cuobjdump.err"; then
        fail "cuobjdump -sass failed on $(basename "$source") for $arch: $(head -c 400 "$dir/cuobjdump.err")"
        return
    fi
    awk -v dir="$dir/fn" '
        /Function : / { file = dir "/" $NF ".sass"; next }
        file != ""    { print > file }
    ' "$dir/probe.sass"

    local found=0 file name ours cccl how
    for file in "$dir"/fn/cccl_*.sass; do
        [[ -e "$file" ]] || continue
        name="$(basename "$file" .sass)"
        [[ -e "$dir/fn/ours_${name#cccl_}.sass" ]] || fail "$arch: $name has no ours_${name#cccl_} twin"
    done
    for file in "$dir"/fn/ours_*.sass; do
        [[ -e "$file" ]] || continue
        name="$(basename "$file" .sass)"
        name="${name#ours_}"
        found=$((found + 1))
        if [[ ! -e "$dir/fn/cccl_$name.sass" ]]; then
            fail "$arch: ours_$name has no cccl_$name twin"
            continue
        fi
        ours="$(sass_sequence "$file")"
        cccl="$(sass_sequence "$dir/fn/cccl_$name.sass")"
        how="SASS"
        if [[ -z "$ours" && -z "$cccl" ]]; then
            how="PTX (no SASS instruction of its own)"
            ours="$(ptx_sequence "$ptx" "ours_$name")"
            cccl="$(ptx_sequence "$ptx" "cccl_$name")"
            if [[ -z "$ours" ]]; then
                fail "$arch $name: neither SASS nor inline-asm PTX to compare (kernel compiled to nothing?)"
                continue
            fi
        fi
        pairs=$((pairs + 1))
        if [[ "$ours" == "$cccl" ]]; then
            say "ok: $arch $name [$how]: $(summary "$ours")"
        else
            fail "$arch $name: ours and CCCL differ [$how]"
            echo "  ours_$name:"; echo "${ours:-(no kept instruction)}" | sed 's/^/    /'
            echo "  cccl_$name:"; echo "${cccl:-(no kept instruction)}" | sed 's/^/    /'
        fi
    done
    [[ $found -gt 0 ]] || fail "$arch: no ours_* kernel in $(basename "$source")"
}

# control ARCH SOURCE A B: the kept sequences of kernels A and B must differ.
control() {
    local arch="$1" source="$2" a="$3" b="$4"
    local dir="$work/$(basename "$source" .cu).$arch/fn"
    [[ -e "$dir/$a.sass" && -e "$dir/$b.sass" ]] || { fail "control: $arch $a or $b missing"; return; }
    if [[ "$(sass_sequence "$dir/$a.sass")" == "$(sass_sequence "$dir/$b.sass")" ]]; then
        fail "control: $arch $a and $b look the same; the filter no longer sees the difference"
    else
        say "ok: control: $arch $a differs from $b"
    fi
}

sm90_source="$here/cccl_cross_check_sm90.cu"
sm100_source="$here/cccl_cross_check_sm100.cu"
check_source "$sm90_source" sm_90a
check_source "$sm90_source" sm_100a
check_source "$sm100_source" sm_100a
control sm_90a "$sm90_source" ours_mbarrier_arrive ours_mbarrier_arrive_expect_tx
control sm_100a "$sm100_source" ours_tcgen05_mma_f16_cta1 ours_tcgen05_mma_f16_cta2

if [[ $failures -ne 0 ]]; then
    say "$failures check(s) FAILED ($pairs pair(s) compared)"
    exit 1
fi
say "all $pairs pairs match"
exit 0
