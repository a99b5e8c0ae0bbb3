// What the tests see of the launch path, and how they steer it: not part of the library's
// interface, and nothing in the library calls these. Defined in src/driver_launch.cpp.
#pragma once

namespace ggemm {

// How many driver_launch calls returned false in this process (tests check the fast path is
// the one taken).
unsigned long long driver_launch_fallbacks() noexcept;

// While set, driver_launch declines every launch, so the runtime path runs (the one a driver
// without the entry points would take).
void force_runtime_launch(bool force) noexcept;

// While set, a call with the plain epilogue or a fused GLU launches its SM90 variant's general
// kernel instance instead of the plain or GLU one (kernels/sm90/config_sm90.cuh,
// PlainEpilogue, GluEpilogue), so that tests can compare them.
void force_general_instance(bool force) noexcept;

}  // namespace ggemm
