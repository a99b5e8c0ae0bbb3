#!/usr/bin/env bash
# Installs the build tree into a fresh temporary prefix, then builds and runs a small C program
# against it twice: through find_package(ggemm) -> ggemm::ggemm, and through pkg-config.
# Usage: install_consumer.sh <cmake> <generator> <C compiler> <build dir> <consumer source dir> <work dir>
set -euo pipefail
cmake_command=$1 generator=$2 c_compiler=$3 build_dir=$4 consumer_dir=$5 work_dir=$6

rm -rf "$work_dir"
mkdir -p "$work_dir"
prefix=$work_dir/prefix

echo "== cmake --install into $prefix"
"$cmake_command" --install "$build_dir" --prefix "$prefix"
[[ -f "$prefix/include/ggemm.h" ]] || { echo "FAIL: include/ggemm.h not installed"; exit 1; }
shopt -s nullglob
libraries=("$prefix"/lib*/libggemm.so.0 "$prefix"/lib*/*/libggemm.so.0)
configs=("$prefix"/lib*/cmake/ggemm/ggemmConfig.cmake "$prefix"/lib*/*/cmake/ggemm/ggemmConfig.cmake)
pcs=("$prefix"/lib*/pkgconfig/ggemm.pc "$prefix"/lib*/*/pkgconfig/ggemm.pc)
[[ ${#libraries[@]} -eq 1 ]] || { echo "FAIL: libggemm.so.0 not installed"; exit 1; }
[[ ${#configs[@]} -eq 1 ]] || { echo "FAIL: ggemmConfig.cmake not installed"; exit 1; }
[[ ${#pcs[@]} -eq 1 ]] || { echo "FAIL: ggemm.pc not installed"; exit 1; }
libdir=$(dirname "${libraries[0]}")

echo "== find_package(ggemm) consumer"
"$cmake_command" -S "$consumer_dir" -B "$work_dir/consumer" -G "$generator" \
    -DCMAKE_C_COMPILER="$c_compiler" -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" \
    --no-warn-unused-cli >"$work_dir/consumer-configure.log" ||
    { cat "$work_dir/consumer-configure.log"; echo "FAIL: consumer configure"; exit 1; }
"$cmake_command" --build "$work_dir/consumer"
"$work_dir/consumer/ggemm_consumer"

echo "== pkg-config consumer"
if command -v pkg-config >/dev/null; then
    flags=$(PKG_CONFIG_PATH=$(dirname "${pcs[0]}") pkg-config --cflags --libs ggemm)
    echo "pkg-config --cflags --libs ggemm: $flags"
    # shellcheck disable=SC2086 # the flags are words
    "$c_compiler" -std=c99 -Wall -Werror "$consumer_dir/consumer.c" $flags -o "$work_dir/pc_consumer"
    LD_LIBRARY_PATH=$libdir "$work_dir/pc_consumer"
else
    echo "pkg-config not installed: the .pc file was installed but not exercised"
fi
echo "install_consumer: PASS"
