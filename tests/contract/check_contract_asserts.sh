#!/usr/bin/env bash
# Shows that src/contract.cpp catches every disagreement between the public header and the
# kernels' contract constants: for each constant, a copy of kernels/common/contract.h (or of
# include/ggemm.h) with that one value changed is put ahead of the real one on the include
# path, and compiling src/contract.cpp must then fail with that constant's static_assert.
# The unchanged copies must compile, so a broken compile command cannot pass for a caught
# mismatch.
#
#   check_contract_asserts.sh <c++ compiler> <source dir>
set -euo pipefail

cxx=$1
root=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0

# compile <include dir>: syntax-checks src/contract.cpp with <include dir> searched first.
compile() {
    "$cxx" -std=c++17 -fsyntax-only -I"$1" -I"$root" -I"$root/include" "$root/src/contract.cpp" 2>&1
}

# expect_caught <file: contract|header> <sed expression> <message the assertion must print>
expect_caught() {
    local which=$1 expression=$2 message=$3 dir=$work/case source target output
    rm -rf "$dir"
    if [[ $which == contract ]]; then
        source=$root/kernels/common/contract.h
        target=$dir/kernels/common/contract.h
    else
        source=$root/include/ggemm.h
        target=$dir/ggemm.h
    fi
    mkdir -p "$(dirname "$target")"
    sed -e "$expression" "$source" >"$target"
    if cmp -s "$source" "$target"; then
        echo "FAIL  '$expression' changed nothing in $source"
        failures=$((failures + 1))
        return
    fi
    if output=$(compile "$dir"); then
        echo "FAIL  $which '$expression': compiled, the mismatch went unnoticed"
        failures=$((failures + 1))
    elif grep -qF -- "$message" <<<"$output"; then
        echo "ok    $which '$expression': $message"
    else
        echo "FAIL  $which '$expression': failed without '$message':"
        echo "$output" | head -n 20
        failures=$((failures + 1))
    fi
}

# The control: unchanged copies compile.
mkdir -p "$work/control/kernels/common"
cp "$root/kernels/common/contract.h" "$work/control/kernels/common/contract.h"
cp "$root/include/ggemm.h" "$work/control/ggemm.h"
if ! output=$(compile "$work/control"); then
    echo "FAIL  the unchanged headers do not compile:"
    echo "$output" | head -n 20
    exit 1
fi
echo "ok    unchanged headers compile"

expect_caught contract 's/kMaxExperts = 1024;/kMaxExperts = 512;/' "GGEMM_MAX_EXPERTS must equal"
expect_caught contract 's/kSegmentAlignment = 256;/kSegmentAlignment = 128;/' "GGEMM_ROW_ALIGNMENT must equal"
expect_caught contract 's/kStatusOffsetNegative = 0x1u;/kStatusOffsetNegative = 0x40u;/' \
    "GGEMM_DEVICE_STATUS_OFFSET_NEGATIVE must equal"
expect_caught contract 's/kStatusOffsetMisaligned = 0x2u;/kStatusOffsetMisaligned = 0x40u;/' \
    "GGEMM_DEVICE_STATUS_OFFSET_MISALIGNED must equal"
expect_caught contract 's/kStatusOffsetPastM = 0x4u;/kStatusOffsetPastM = 0x40u;/' \
    "GGEMM_DEVICE_STATUS_OFFSET_PAST_M must equal"
expect_caught contract 's/kStatusOffsetDecreasing = 0x8u;/kStatusOffsetDecreasing = 0x40u;/' \
    "GGEMM_DEVICE_STATUS_OFFSET_DECREASING must equal"
expect_caught contract 's/kStatusWeightPtrNull = 0x10u;/kStatusWeightPtrNull = 0x40u;/' \
    "GGEMM_DEVICE_STATUS_WEIGHT_PTR_NULL must equal"
expect_caught contract 's/kStatusWeightPtrMisaligned = 0x20u;/kStatusWeightPtrMisaligned = 0x40u;/' \
    "GGEMM_DEVICE_STATUS_WEIGHT_PTR_MISALIGNED must equal"
expect_caught contract 's/kStatusOutputPtrNull = 0x40u;/kStatusOutputPtrNull = 0x100u;/' \
    "GGEMM_DEVICE_STATUS_OUTPUT_PTR_NULL must equal"
expect_caught contract 's/kStatusOutputPtrMisaligned = 0x80u;/kStatusOutputPtrMisaligned = 0x100u;/' \
    "GGEMM_DEVICE_STATUS_OUTPUT_PTR_MISALIGNED must equal"
expect_caught contract 's/kStatusValidRowsClamped = 0x100u;/kStatusValidRowsClamped = 0x200u;/' \
    "GGEMM_DEVICE_STATUS_VALID_ROWS_CLAMPED must equal"
expect_caught contract 's/kWgradOutputDense = 0,/kWgradOutputDense = 2,/' "GGEMM_WGRAD_OUTPUT_DENSE must equal"
expect_caught contract 's/kWgradOutputPointers = 1 }/kWgradOutputPointers = 2 }/' \
    "GGEMM_WGRAD_OUTPUT_POINTERS must equal"
expect_caught contract 's/kDTypeNone = 0,/kDTypeNone = 4,/' "GGEMM_DTYPE_NONE must equal"
expect_caught contract 's/kBF16 = 1,/kBF16 = 5,/' "GGEMM_DTYPE_BF16 must equal"
expect_caught contract 's/kFP16 = 2,/kFP16 = 5,/' "GGEMM_DTYPE_FP16 must equal"
expect_caught contract 's/kFP32 = 3 }/kFP32 = 5 }/' "GGEMM_DTYPE_FP32 must equal"
expect_caught contract 's/kDense = 0,/kDense = 2,/' "GGEMM_WEIGHTS_DENSE must equal"
expect_caught contract 's/kDiscrete = 1 }/kDiscrete = 2 }/' "GGEMM_WEIGHTS_DISCRETE must equal"
expect_caught contract 's/kStatic = 0,/kStatic = 2,/' "GGEMM_SCHEDULER_STATIC must equal"
expect_caught contract 's/kDynamic = 1 }/kDynamic = 2 }/' "GGEMM_SCHEDULER_DYNAMIC must equal"
expect_caught contract 's/kKMajor = 0,/kKMajor = 2,/' "GGEMM_WEIGHT_LAYOUT_K_MAJOR must equal"
expect_caught contract 's/kNMajor = 1 }/kNMajor = 2 }/' "GGEMM_WEIGHT_LAYOUT_N_MAJOR must equal"
expect_caught contract 's/kActivationNone = 0,/kActivationNone = 3,/' "GGEMM_ACTIVATION_NONE must equal"
expect_caught contract 's/kActivationSwiglu = 1,/kActivationSwiglu = 3,/' "GGEMM_ACTIVATION_SWIGLU must equal"
expect_caught contract 's/kActivationClampedGeglu = 2 }/kActivationClampedGeglu = 3 }/' \
    "GGEMM_ACTIVATION_CLAMPED_GEGLU must equal"
expect_caught contract 's/kGluBlockColumns = 32;/kGluBlockColumns = 64;/' "GGEMM_GLU_BLOCK_COLUMNS must equal"
# The other way round: the public header changed, the kernels' constant not.
expect_caught header 's/#define GGEMM_MAX_EXPERTS   1024/#define GGEMM_MAX_EXPERTS   2048/' \
    "GGEMM_MAX_EXPERTS must equal"
expect_caught header 's/#define GGEMM_ROW_ALIGNMENT 256/#define GGEMM_ROW_ALIGNMENT 512/' \
    "GGEMM_ROW_ALIGNMENT must equal"
expect_caught header 's/#define GGEMM_DEVICE_STATUS_OFFSET_PAST_M     0x4u/#define GGEMM_DEVICE_STATUS_OFFSET_PAST_M 0x80u/' \
    "GGEMM_DEVICE_STATUS_OFFSET_PAST_M must equal"
expect_caught header 's/#define GGEMM_DTYPE_FP16 2/#define GGEMM_DTYPE_FP16 7/' "GGEMM_DTYPE_FP16 must equal"
expect_caught header 's/#define GGEMM_WEIGHT_LAYOUT_N_MAJOR 1/#define GGEMM_WEIGHT_LAYOUT_N_MAJOR 3/' \
    "GGEMM_WEIGHT_LAYOUT_N_MAJOR must equal"

if ((failures > 0)); then
    echo "$failures mismatch(es) not caught"
    exit 1
fi
echo "every mismatch is caught"
