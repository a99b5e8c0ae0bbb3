// Size-first public structs: defaults, and reading a caller's struct of any version.
//
// A caller built against an older header passes a smaller struct (>= the MIN_SIZE): the
// missing trailing fields take their defaults. A caller built against a newer header passes
// a larger one: the bytes this library does not know must all be zero, else the caller asked
// for something this library cannot do and is refused.
#pragma once

#include <cstdint>

#include "ggemm.h"

namespace ggemm {

// Struct sizes beyond this are refused: no version will ever be this large, and it catches
// a struct whose struct_size was never set (stack garbage) before we read past its end.
constexpr uint32_t kMaxStructSize = 4096;

// Zeroes struct_size bytes of *desc and writes struct_size and the defaults that fit.
ggemm_status_t init_plan_desc(ggemm_plan_desc* desc, uint32_t struct_size) noexcept;
ggemm_status_t init_args(ggemm_args* args, uint32_t struct_size) noexcept;

// Copies the caller's struct into *out (a full, current-version struct with defaults in the
// fields the caller's version lacks). `name` is how refusals call the argument ("desc").
ggemm_status_t read_plan_desc(const ggemm_plan_desc* user, const char* name,
                              ggemm_plan_desc* out) noexcept;
ggemm_status_t read_args(const ggemm_args* user, const char* name, ggemm_args* out) noexcept;

// The weight gradient's structs, by the same rules.
ggemm_status_t init_wgrad_desc(ggemm_wgrad_desc* desc, uint32_t struct_size) noexcept;
ggemm_status_t init_wgrad_args(ggemm_wgrad_args* args, uint32_t struct_size) noexcept;
ggemm_status_t read_wgrad_desc(const ggemm_wgrad_desc* user, const char* name, ggemm_wgrad_desc* out) noexcept;
ggemm_status_t read_wgrad_args(const ggemm_wgrad_args* user, const char* name, ggemm_wgrad_args* out) noexcept;

}  // namespace ggemm
