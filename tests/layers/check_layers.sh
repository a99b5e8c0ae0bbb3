#!/usr/bin/env bash
# Checks the source layout rules of docs/DESIGN.md ("Layers and the include rule") on the tree:
#   - includes run one way: src/ -> kernels/sm90, kernels/sm100 -> kernels/common -> ptx/;
#     nothing under kernels/ or ptx/ includes src/, tests/ or bench/;
#   - project headers are included by their path from the repository root (every quoted include
#     but "ggemm.h" names an existing file from there);
#   - a .h header holds no device-only code (__global__, __device__, __shared__ or asm outside
#     a #define): such a header ends in .cuh.
#
#   check_layers.sh <source dir>
set -euo pipefail

cd "$1"
failures=0
fail() { echo "FAIL  $*"; failures=$((failures + 1)); }

sources=$(find include src kernels ptx tests bench examples \
               \( -name '*.h' -o -name '*.cuh' -o -name '*.cpp' -o -name '*.cu' -o -name '*.c' \) | sort)

# includes <file>: the quoted includes of a file, one per line.
includes() { sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$1"; }

for file in $sources; do
    for target in $(includes "$file"); do
        if [[ $target == ggemm.h ]]; then continue; fi
        [[ -f $target ]] || fail "$file includes \"$target\": not a path from the repository root"
        case $file in
            ptx/*)
                [[ $target == ptx/* ]] || fail "$file includes \"$target\": ptx/ includes only ptx/" ;;
            kernels/common/*)
                [[ $target == kernels/common/* || $target == ptx/* ]] ||
                    fail "$file includes \"$target\": kernels/common/ includes only itself and ptx/" ;;
            kernels/sm90/*)
                [[ $target == kernels/sm90/* || $target == kernels/common/* || $target == ptx/* ]] ||
                    fail "$file includes \"$target\": kernels/sm90/ includes only itself, kernels/common/ and ptx/" ;;
            kernels/sm100/*)
                [[ $target == kernels/sm100/* || $target == kernels/common/* || $target == ptx/* ]] ||
                    fail "$file includes \"$target\": kernels/sm100/ includes only itself, kernels/common/ and ptx/" ;;
            src/*)
                [[ $target == src/* || $target == kernels/* || $target == ptx/* ]] ||
                    fail "$file includes \"$target\": src/ includes only src/, kernels/ and ptx/" ;;
        esac
    done
done

for header in $(grep -E '\.h$' <<<"$sources"); do
    device_lines=$(grep -nE '__global__|__device__|__shared__|\basm\b' "$header" |
                   grep -vE '^[0-9]+:[[:space:]]*(#[[:space:]]*define|//)' || true)
    [[ -z $device_lines ]] || fail "$header holds device-only code (name it .cuh): $(head -n 1 <<<"$device_lines")"
done

if ((failures > 0)); then
    echo "$failures layout rule(s) broken (docs/DESIGN.md, \"Layers and the include rule\")"
    exit 1
fi
echo "layers, include paths and header names follow docs/DESIGN.md"
