// host/parts/*: the runtime calls of one ggemm_execute, timed one by one (host_parts.cu).
#pragma once

#include <benchmark/benchmark.h>

namespace ggemm_bench {

void register_host_parts();

}  // namespace ggemm_bench
