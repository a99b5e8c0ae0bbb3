// Lets the scheduler and other pure functions compile for both the device and host-only tests.
#pragma once

#if defined(__CUDACC__)
#define GGEMM_HD __host__ __device__ __forceinline__
#else
#define GGEMM_HD inline
#endif
