#!/usr/bin/env bash
# Checks the binary interface of the shared library:
#   - SONAME is libggemm.so.0 (the ABI major);
#   - no NEEDED libcuda (driver entry points are resolved at run time) and no NEEDED libcudart
#     (the runtime is linked statically);
#   - no undefined driver symbol (cu*) that would need libcuda at load time;
#   - the exported (defined, dynamic) symbols are exactly the functions ggemm.h declares with
#     GGEMM_API: nothing else leaks, nothing declared is missing.
# Usage: check_exports.sh <path to libggemm.so> <path to ggemm.h>
set -euo pipefail
library=$1
header=$2
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

dynamic=$(readelf -d "$library")
soname=$(sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p' <<<"$dynamic")
needed=$(sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' <<<"$dynamic")
echo "SONAME: $soname"
echo "NEEDED: $(tr '\n' ' ' <<<"$needed")"
[[ "$soname" == "libggemm.so.0" ]] || fail "SONAME is '$soname', expected libggemm.so.0"
if grep -E '^libcuda\.so' <<<"$needed"; then fail "libcuda is NEEDED"; fi
if grep -E '^libcudart\.so' <<<"$needed"; then fail "libcudart is NEEDED (runtime must be static)"; fi

undefined_driver=$(nm -D --undefined-only "$library" | awk '{print $NF}' | grep -E '^cu[A-Z]' || true)
[[ -z "$undefined_driver" ]] || fail "undefined driver symbols: $(tr '\n' ' ' <<<"$undefined_driver")"

# `nm -D` prints name@version for versioned symbols; compare bare names.
exported=$(nm -D --defined-only "$library" | awk 'NF >= 3 {print $3}' | sed 's/@.*//' | sort -u)
# Only the first ggemm_ name on each GGEMM_API line is the function; parameters come after it.
declared=$(grep -E '^GGEMM_API ' "$header" |
           sed -E 's/^GGEMM_API[^(]*[ *](ggemm_[a-z0-9_]+)\(.*/\1/' | sort -u)
echo "exported: $(wc -l <<<"$exported") symbols; declared in ggemm.h: $(wc -l <<<"$declared")"

not_ggemm=$(grep -v '^ggemm_' <<<"$exported" || true)
[[ -z "$not_ggemm" ]] || fail "exported symbols outside ggemm_*: $(tr '\n' ' ' <<<"$not_ggemm")"
undeclared=$(comm -23 <(echo "$exported") <(echo "$declared") | grep '^ggemm_' || true)
[[ -z "$undeclared" ]] || fail "exported but not declared in ggemm.h: $(tr '\n' ' ' <<<"$undeclared")"
missing=$(comm -13 <(echo "$exported") <(echo "$declared") || true)
[[ -z "$missing" ]] || fail "declared in ggemm.h but not exported: $(tr '\n' ' ' <<<"$missing")"

if ((failures > 0)); then
    echo "check_exports: $failures failure(s)"
    exit 1
fi
echo "check_exports: PASS"
