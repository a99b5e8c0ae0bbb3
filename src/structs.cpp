// Size-first struct handling and the exported *_init calls.
#include "src/structs.h"

#include <cstddef>
#include <cstring>
#include <type_traits>

#include "kernels/common/glu.h"
#include "src/error.h"

namespace ggemm {

// The minimum sizes end exactly where the optional fields begin.
static_assert(GGEMM_PLAN_DESC_MIN_SIZE == offsetof(ggemm_plan_desc, tile_m),
              "GGEMM_PLAN_DESC_MIN_SIZE must be the offset of the first optional field");
static_assert(GGEMM_ARGS_MIN_SIZE == offsetof(ggemm_args, device_status),
              "GGEMM_ARGS_MIN_SIZE must be the offset of the first optional field");
static_assert(offsetof(ggemm_plan_desc, struct_size) == 0 && offsetof(ggemm_args, struct_size) == 0,
              "struct_size must come first");
static_assert(GGEMM_WGRAD_DESC_MIN_SIZE == sizeof(ggemm_wgrad_desc) &&
                  GGEMM_WGRAD_ARGS_MIN_SIZE == sizeof(ggemm_wgrad_args),
              "the first version of the wgrad structs is the whole struct");
static_assert(offsetof(ggemm_wgrad_desc, struct_size) == 0 && offsetof(ggemm_wgrad_args, struct_size) == 0,
              "struct_size must come first");
static_assert(std::is_trivially_copyable<ggemm_wgrad_desc>::value &&
                  std::is_trivially_copyable<ggemm_wgrad_args>::value,
              "size-first structs are copied bytewise");
static_assert(std::is_trivially_copyable<ggemm_plan_desc>::value &&
                  std::is_trivially_copyable<ggemm_args>::value,
              "size-first structs are copied bytewise");

namespace {

// Writes `value` into the field at `field` of a struct of `struct_size` bytes at `base`
// only if the whole field lies inside the caller's struct.
template <class Struct, class Field>
void set_if_fits(Struct* base, uint32_t struct_size, Field Struct::*field, Field value) {
    const auto offset = reinterpret_cast<const char*>(&(base->*field)) -
                        reinterpret_cast<const char*>(base);
    if (static_cast<std::size_t>(offset) + sizeof(Field) <= struct_size) base->*field = value;
}

// Sizes an older caller's struct may have: it ends exactly before one of the optional fields
// (a size that cuts a field in half would copy half a value).
constexpr uint32_t kPlanDescSizes[] = {
    offsetof(ggemm_plan_desc, tile_m), offsetof(ggemm_plan_desc, tile_n),
    offsetof(ggemm_plan_desc, cluster_m), offsetof(ggemm_plan_desc, sm_margin),
    offsetof(ggemm_plan_desc, reserved0), offsetof(ggemm_plan_desc, weight_layout),
    offsetof(ggemm_plan_desc, split_k), offsetof(ggemm_plan_desc, activation),
    offsetof(ggemm_plan_desc, glu_backward)};
constexpr uint32_t kArgsSizes[] = {offsetof(ggemm_args, device_status), offsetof(ggemm_args, valid_rows),
                                   offsetof(ggemm_args, glu_pre)};
// The wgrad structs have one version so far: no smaller size is an older one.
constexpr uint32_t kWgradDescSizes[] = {sizeof(ggemm_wgrad_desc)};
constexpr uint32_t kWgradArgsSizes[] = {sizeof(ggemm_wgrad_args)};

template <std::size_t kCount>
bool is_older_size(const uint32_t (&sizes)[kCount], uint32_t struct_size) {
    for (const uint32_t size : sizes)
        if (size == struct_size) return true;
    return false;
}

// The init calls accept exactly the sizes read_sized accepts: a struct the library would
// refuse later is refused here, before anything is written.
template <std::size_t kCount>
ggemm_status_t check_init_size(const void* pointer, uint32_t struct_size, uint32_t min_size,
                               std::size_t known_size, const uint32_t (&older_sizes)[kCount],
                               const char* function, const char* type) {
    if (pointer == nullptr) return fail(GGEMM_ERROR_NULL_ARGUMENT, "%s: the %s pointer is NULL", function, type);
    if (struct_size < min_size || struct_size > kMaxStructSize) {
        return fail(GGEMM_ERROR_STRUCT_SIZE,
                    "%s: struct_size must be in [%u, %u] (pass sizeof(%s)), got %u", function,
                    min_size, kMaxStructSize, type, struct_size);
    }
    if (struct_size < known_size && !is_older_size(older_sizes, struct_size)) {
        return fail(GGEMM_ERROR_STRUCT_SIZE,
                    "%s: struct_size = %u ends inside a field of %s: an older caller's struct "
                    "ends where a field begins (pass sizeof(%s))",
                    function, struct_size, type, type);
    }
    return GGEMM_SUCCESS;
}

// Copies a caller's size-first struct over *out, which already holds every default.
template <std::size_t kCount>
ggemm_status_t read_sized(const void* user, const char* name, const char* type, uint32_t min_size,
                          std::size_t known_size, const uint32_t (&older_sizes)[kCount], void* out) {
    if (user == nullptr) return fail(GGEMM_ERROR_NULL_ARGUMENT, "%s is NULL (a %s is required)", name, type);
    uint32_t struct_size;
    std::memcpy(&struct_size, user, sizeof struct_size);
    if (struct_size < min_size) {
        return fail(GGEMM_ERROR_STRUCT_SIZE,
                    "%s->struct_size must be at least %u (the first version of %s), got %u; "
                    "set it to sizeof(%s), e.g. with %s_init",
                    name, min_size, type, struct_size, type, type);
    }
    if (struct_size > kMaxStructSize) {
        return fail(GGEMM_ERROR_STRUCT_SIZE,
                    "%s->struct_size must be at most %u, got %u (was the struct initialized? "
                    "use %s_init)",
                    name, kMaxStructSize, struct_size, type);
    }
    if (struct_size < known_size && !is_older_size(older_sizes, struct_size)) {
        return fail(GGEMM_ERROR_STRUCT_SIZE,
                    "%s->struct_size = %u ends inside a field of %s: an older caller's struct "
                    "ends where a field begins (set it to sizeof(%s), e.g. with %s_init)",
                    name, struct_size, type, type, type);
    }
    const auto* bytes = static_cast<const unsigned char*>(user);
    for (std::size_t offset = known_size; offset < struct_size; ++offset) {
        if (bytes[offset] != 0) {
            return fail(GGEMM_ERROR_STRUCT_SIZE,
                        "%s->struct_size = %u, and byte %zu, past the %zu bytes of %s this "
                        "library knows, is 0x%02x: a newer field is set that this version of "
                        "ggemm does not support (unknown trailing bytes must be 0)",
                        name, struct_size, offset, known_size, type, bytes[offset]);
        }
    }
    const std::size_t copied = struct_size < known_size ? struct_size : known_size;
    std::memcpy(out, user, copied);  // the caller then sets out's struct_size to its full size
    return GGEMM_SUCCESS;
}

}  // namespace

ggemm_status_t init_plan_desc(ggemm_plan_desc* desc, uint32_t struct_size) noexcept {
    const ggemm_status_t status = check_init_size(desc, struct_size, GGEMM_PLAN_DESC_MIN_SIZE, sizeof *desc, kPlanDescSizes,
                        "ggemm_plan_desc_init", "ggemm_plan_desc");
    if (status != GGEMM_SUCCESS) return status;
    std::memset(desc, 0, struct_size);
    // Zero already is device 0, dense K-major weights, no bias, no C, static scheduler, no
    // overrides.
    desc->struct_size = struct_size;
    set_if_fits(desc, struct_size, &ggemm_plan_desc::c_dtype, int32_t{GGEMM_DTYPE_BF16});
    set_if_fits(desc, struct_size, &ggemm_plan_desc::d_dtype, int32_t{GGEMM_DTYPE_BF16});
    // The clamped GeGLU's constants are not zero by default: a caller's struct that ends before
    // them reads as the defaults (read_plan_desc starts from a full default struct).
    set_if_fits(desc, struct_size, &ggemm_plan_desc::glu_scale, kGluDefaults.scale);
    set_if_fits(desc, struct_size, &ggemm_plan_desc::glu_limit, kGluDefaults.limit);
    set_if_fits(desc, struct_size, &ggemm_plan_desc::glu_offset, kGluDefaults.offset);
    set_if_fits(desc, struct_size, &ggemm_plan_desc::glu_pre_dtype, int32_t{GGEMM_DTYPE_BF16});
    return GGEMM_SUCCESS;
}

ggemm_status_t init_args(ggemm_args* args, uint32_t struct_size) noexcept {
    const ggemm_status_t status =
        check_init_size(args, struct_size, GGEMM_ARGS_MIN_SIZE, sizeof *args, kArgsSizes,
                        "ggemm_args_init", "ggemm_args");
    if (status != GGEMM_SUCCESS) return status;
    std::memset(args, 0, struct_size);
    args->struct_size = struct_size;
    return GGEMM_SUCCESS;
}

ggemm_status_t read_plan_desc(const ggemm_plan_desc* user, const char* name,
                              ggemm_plan_desc* out) noexcept {
    init_plan_desc(out, sizeof *out);
    const ggemm_status_t status = read_sized(user, name, "ggemm_plan_desc", GGEMM_PLAN_DESC_MIN_SIZE,
                                             sizeof *out, kPlanDescSizes, out);
    out->struct_size = sizeof *out;
    return status;
}

ggemm_status_t read_args(const ggemm_args* user, const char* name, ggemm_args* out) noexcept {
    init_args(out, sizeof *out);
    const ggemm_status_t status =
        read_sized(user, name, "ggemm_args", GGEMM_ARGS_MIN_SIZE, sizeof *out, kArgsSizes, out);
    out->struct_size = sizeof *out;
    return status;
}

ggemm_status_t init_wgrad_desc(ggemm_wgrad_desc* desc, uint32_t struct_size) noexcept {
    const ggemm_status_t status = check_init_size(desc, struct_size, GGEMM_WGRAD_DESC_MIN_SIZE, sizeof *desc,
                                                  kWgradDescSizes, "ggemm_wgrad_desc_init", "ggemm_wgrad_desc");
    if (status != GGEMM_SUCCESS) return status;
    std::memset(desc, 0, struct_size);
    // Zero already is device 0, dense output, overwrite, static scheduler, no margin.
    desc->struct_size = struct_size;
    desc->out_dtype = GGEMM_DTYPE_FP32;
    return GGEMM_SUCCESS;
}

ggemm_status_t init_wgrad_args(ggemm_wgrad_args* args, uint32_t struct_size) noexcept {
    const ggemm_status_t status = check_init_size(args, struct_size, GGEMM_WGRAD_ARGS_MIN_SIZE, sizeof *args,
                                                  kWgradArgsSizes, "ggemm_wgrad_args_init", "ggemm_wgrad_args");
    if (status != GGEMM_SUCCESS) return status;
    std::memset(args, 0, struct_size);
    args->struct_size = struct_size;
    return GGEMM_SUCCESS;
}

ggemm_status_t read_wgrad_desc(const ggemm_wgrad_desc* user, const char* name, ggemm_wgrad_desc* out) noexcept {
    init_wgrad_desc(out, sizeof *out);
    const ggemm_status_t status = read_sized(user, name, "ggemm_wgrad_desc", GGEMM_WGRAD_DESC_MIN_SIZE,
                                             sizeof *out, kWgradDescSizes, out);
    out->struct_size = sizeof *out;
    return status;
}

ggemm_status_t read_wgrad_args(const ggemm_wgrad_args* user, const char* name, ggemm_wgrad_args* out) noexcept {
    init_wgrad_args(out, sizeof *out);
    const ggemm_status_t status = read_sized(user, name, "ggemm_wgrad_args", GGEMM_WGRAD_ARGS_MIN_SIZE,
                                             sizeof *out, kWgradArgsSizes, out);
    out->struct_size = sizeof *out;
    return status;
}

}  // namespace ggemm

extern "C" {

GGEMM_API ggemm_status_t ggemm_plan_desc_init(ggemm_plan_desc* desc, uint32_t struct_size) {
    return ggemm::guarded("ggemm_plan_desc_init",
                          [&] { return ggemm::init_plan_desc(desc, struct_size); });
}

GGEMM_API ggemm_status_t ggemm_args_init(ggemm_args* args, uint32_t struct_size) {
    return ggemm::guarded("ggemm_args_init", [&] { return ggemm::init_args(args, struct_size); });
}

GGEMM_API ggemm_status_t ggemm_wgrad_desc_init(ggemm_wgrad_desc* desc, uint32_t struct_size) {
    return ggemm::guarded("ggemm_wgrad_desc_init", [&] { return ggemm::init_wgrad_desc(desc, struct_size); });
}

GGEMM_API ggemm_status_t ggemm_wgrad_args_init(ggemm_wgrad_args* args, uint32_t struct_size) {
    return ggemm::guarded("ggemm_wgrad_args_init", [&] { return ggemm::init_wgrad_args(args, struct_size); });
}

}  // extern "C"
