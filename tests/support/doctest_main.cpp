// The entry point of ggemm_host_tests: doctest's own main. Host tests need no GPU; those that
// touch the CUDA runtime expect the "no device" answers of a CPU-only machine or accept a GPU.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
