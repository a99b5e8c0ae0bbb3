// ggemm._ggemm_xla: the XLA FFI handler behind ggemm.jax. XLA calls it on its own stream with
// buffers it allocated (outputs and the workspace, which ggemm.jax requests as a third output);
// the handler reads the problem's sizes from the buffers, fills the library's structs and
// enqueues through ggemm_grouped_gemm, whose process-wide plan cache is keyed on everything
// that shapes a plan (never on M or pointers): the first execution with a new set of
// attributes creates the plan, later ones find it. No host synchronization, no host read of
// device data, no allocation: XLA may capture the call into a CUDA graph.
#include <nanobind/nanobind.h>

#include <cstdint>
#include <string>

#include "ggemm.h"
#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;
namespace nb = nanobind;

namespace {

std::string last_error_message() {
    uint64_t required = 0;
    ggemm_last_error_message(nullptr, 0, &required);
    std::string text(required, '\0');
    if (required > 0) {
        ggemm_last_error_message(text.data(), required, nullptr);
        text.resize(required - 1);
    }
    return text;
}

ffi::Error refusal(ggemm_status_t status) {
    return ffi::Error(ffi::ErrorCode::kInvalidArgument,
                      std::string(ggemm_status_string(status)) + ": " + last_error_message());
}

// The fused GLU's part of a call (GGEMM_ACTIVATION_NONE: the plain grouped GEMM), and dGLU's.
struct Activation {
    int32_t code;
    float scale, limit, offset;
    int32_t glu_backward = 0;
    int32_t glu_pre_dtype = GGEMM_DTYPE_BF16;
    int32_t weight_layout = GGEMM_WEIGHT_LAYOUT_K_MAJOR;
    const void* glu_pre = nullptr;
    float* d_prob = nullptr;
};

// Both handlers' body. n: the GEMM's N (D's columns, or twice them with an activation).
ffi::Error run(CUstream_st* stream, int32_t device, ffi::AnyBuffer a, ffi::AnyBuffer weights,
               ffi::Buffer<ffi::S32> padded_offsets, ffi::Buffer<ffi::F32> alpha, ffi::Buffer<ffi::F32> prob,
               ffi::AnyBuffer bias, ffi::Result<ffi::AnyBuffer> d, ffi::Result<ffi::AnyBuffer> c,
               ffi::Result<ffi::AnyBuffer> workspace, int32_t weight_mode, int32_t c_dtype, int32_t d_dtype,
               int32_t bias_dtype, int32_t generate_c, int32_t scheduler, int32_t tile_m, int32_t tile_n,
               int32_t cluster_m, int32_t sm_margin, int64_t n, Activation activation,
               const int32_t* valid_rows = nullptr) {
    const int64_t m = a.dimensions()[0];
    const int64_t k = a.dimensions()[1];
    const int64_t num_experts = padded_offsets.element_count();
    const bool discrete = weight_mode == GGEMM_WEIGHTS_DISCRETE;
    if (discrete && weights.size_bytes() != static_cast<size_t>(8 * num_experts)) {
        return ffi::Error::InvalidArgument("ggemm: b_ptrs must hold 8 bytes per expert");
    }
    // alpha and prob come empty where the caller gave None: NULL, every value 1.
    if (alpha.element_count() != 0 && alpha.element_count() != padded_offsets.element_count()) {
        return ffi::Error::InvalidArgument("ggemm: alpha must hold one value per expert, or none");
    }
    if (prob.element_count() != 0 && prob.element_count() != static_cast<size_t>(m)) {
        return ffi::Error::InvalidArgument("ggemm: prob must hold one value per row of a, or none");
    }

    ggemm_plan_desc desc;
    ggemm_plan_desc_init(&desc, sizeof desc);
    desc.device = device;
    desc.m_capacity = m < 256 ? 256 : m;
    desc.n = n;
    desc.k = k;
    desc.num_experts = static_cast<int32_t>(num_experts);
    desc.weight_mode = weight_mode;
    desc.c_dtype = c_dtype;
    desc.d_dtype = d_dtype;
    desc.bias_dtype = bias_dtype;
    desc.generate_c = generate_c;
    desc.scheduler = scheduler;
    desc.tile_m = tile_m;
    desc.tile_n = tile_n;
    desc.cluster_m = cluster_m;
    desc.sm_margin = sm_margin;
    desc.activation = activation.code;
    desc.glu_scale = activation.scale;
    desc.glu_limit = activation.limit;
    desc.glu_offset = activation.offset;
    desc.glu_backward = activation.glu_backward;
    desc.glu_pre_dtype = activation.glu_pre_dtype;
    desc.weight_layout = activation.weight_layout;

    ggemm_args args;
    ggemm_args_init(&args, sizeof args);
    args.m = m;
    args.a = a.untyped_data();
    args.b = discrete ? nullptr : weights.untyped_data();
    args.b_ptrs = discrete ? static_cast<const uint64_t*>(weights.untyped_data()) : nullptr;
    args.padded_offsets = padded_offsets.typed_data();
    args.alpha = alpha.element_count() != 0 ? alpha.typed_data() : nullptr;
    args.prob = prob.element_count() != 0 ? prob.typed_data() : nullptr;
    args.bias = bias_dtype == GGEMM_DTYPE_NONE ? nullptr : bias.untyped_data();
    args.c = generate_c ? c->untyped_data() : nullptr;
    args.d = d->untyped_data();
    args.workspace = workspace->size_bytes() > 0 ? workspace->untyped_data() : nullptr;
    args.workspace_size = workspace->size_bytes();
    args.valid_rows = valid_rows;
    args.glu_pre = activation.glu_pre;
    args.d_prob = activation.d_prob;

    const ggemm_status_t status = ggemm_grouped_gemm(&desc, &args, stream);
    return status == GGEMM_SUCCESS ? ffi::Error::Success() : refusal(status);
}

ffi::Error grouped_gemm(CUstream_st* stream, int32_t device, ffi::AnyBuffer a,
                        ffi::AnyBuffer weights, ffi::Buffer<ffi::S32> padded_offsets,
                        ffi::Buffer<ffi::F32> alpha, ffi::Buffer<ffi::F32> prob, ffi::AnyBuffer bias,
                        ffi::Buffer<ffi::S32> valid_rows, ffi::Result<ffi::AnyBuffer> d, ffi::Result<ffi::AnyBuffer> c,
                        ffi::Result<ffi::AnyBuffer> workspace, int32_t weight_mode, int32_t c_dtype,
                        int32_t d_dtype, int32_t bias_dtype, int32_t generate_c, int32_t scheduler,
                        int32_t tile_m, int32_t tile_n, int32_t cluster_m, int32_t sm_margin) {
    // Shapes were checked when the call was traced (ggemm.jax); these guard the handler itself.
    if (a.dimensions().size() != 2 || d->dimensions().size() != 2) {
        return ffi::Error::InvalidArgument("ggemm: a and d must be 2-D");
    }
    const bool counted = valid_rows.element_count() != 0;
    if (counted && valid_rows.element_count() != padded_offsets.element_count()) {
        return ffi::Error::InvalidArgument("ggemm: valid_rows must hold one count per expert, or none");
    }
    return run(stream, device, a, weights, padded_offsets, alpha, prob, bias, d, c, workspace, weight_mode, c_dtype,
               d_dtype, bias_dtype, generate_c, scheduler, tile_m, tile_n, cluster_m, sm_margin, d->dimensions()[1],
               Activation{GGEMM_ACTIVATION_NONE, 1.702f, 7.0f, 1.0f}, counted ? valid_rows.typed_data() : nullptr);
}

// The fused GLU forward: D is M x N/2, so N comes as an attribute.
ffi::Error glu(CUstream_st* stream, int32_t device, ffi::AnyBuffer a, ffi::AnyBuffer weights,
               ffi::Buffer<ffi::S32> padded_offsets, ffi::Buffer<ffi::F32> alpha, ffi::Buffer<ffi::F32> prob,
               ffi::AnyBuffer bias, ffi::Result<ffi::AnyBuffer> d, ffi::Result<ffi::AnyBuffer> c,
               ffi::Result<ffi::AnyBuffer> workspace, int32_t weight_mode, int32_t c_dtype, int32_t d_dtype,
               int32_t bias_dtype, int32_t generate_c, int32_t scheduler, int32_t tile_n, int32_t sm_margin,
               int32_t n, int32_t activation, float glu_scale, float glu_limit, float glu_offset) {
    if (a.dimensions().size() != 2 || d->dimensions().size() != 2 || d->dimensions()[1] * 2 != n) {
        return ffi::Error::InvalidArgument("ggemm: a and d must be 2-D, d of N/2 columns");
    }
    return run(stream, device, a, weights, padded_offsets, alpha, prob, bias, d, c, workspace, weight_mode, c_dtype,
               d_dtype, bias_dtype, generate_c, scheduler, 0, tile_n, 0, sm_margin, n,
               Activation{activation, glu_scale, glu_limit, glu_offset});
}

// dGLU: d (M x 2N) is d_pre, d_prob an M fp32 result; no bias, no C.
ffi::Error dglu(CUstream_st* stream, int32_t device, ffi::AnyBuffer a, ffi::AnyBuffer weights,
                ffi::Buffer<ffi::S32> padded_offsets, ffi::Buffer<ffi::F32> alpha, ffi::Buffer<ffi::F32> prob,
                ffi::AnyBuffer pre, ffi::Result<ffi::AnyBuffer> d, ffi::Result<ffi::Buffer<ffi::F32>> d_prob,
                ffi::Result<ffi::AnyBuffer> workspace, int32_t weight_mode, int32_t weight_layout, int32_t d_dtype,
                int32_t scheduler, int32_t tile_n, int32_t sm_margin, int32_t activation, float glu_scale,
                float glu_limit, float glu_offset, int32_t glu_pre_dtype) {
    if (a.dimensions().size() != 2 || d->dimensions().size() != 2 || d->dimensions()[1] % 2 != 0) {
        return ffi::Error::InvalidArgument("ggemm: a and d must be 2-D, d of 2N columns");
    }
    Activation fused{activation, glu_scale, glu_limit, glu_offset};
    fused.glu_backward = 1;
    fused.glu_pre_dtype = glu_pre_dtype;
    fused.weight_layout = weight_layout;
    fused.glu_pre = pre.untyped_data();
    fused.d_prob = d_prob->typed_data();
    return run(stream, device, a, weights, padded_offsets, alpha, prob, pre, d, d, workspace, weight_mode,
               GGEMM_DTYPE_BF16, d_dtype, GGEMM_DTYPE_NONE, 0, scheduler, 0, tile_n, 0, sm_margin,
               d->dimensions()[1] / 2, fused);
}

}  // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(ggemm_xla_grouped_gemm, grouped_gemm,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<CUstream_st*>>()
                                  .Ctx<ffi::DeviceOrdinal>()
                                  .Arg<ffi::AnyBuffer>()             // a
                                  .Arg<ffi::AnyBuffer>()             // b or b_ptrs
                                  .Arg<ffi::Buffer<ffi::S32>>()      // padded_offsets
                                  .Arg<ffi::Buffer<ffi::F32>>()      // alpha (empty without)
                                  .Arg<ffi::Buffer<ffi::F32>>()      // prob (empty without)
                                  .Arg<ffi::AnyBuffer>()             // bias (empty without)
                                  .Arg<ffi::Buffer<ffi::S32>>()      // valid_rows (empty without)
                                  .Ret<ffi::AnyBuffer>()             // d
                                  .Ret<ffi::AnyBuffer>()             // c (empty without)
                                  .Ret<ffi::AnyBuffer>()             // workspace
                                  .Attr<int32_t>("weight_mode")
                                  .Attr<int32_t>("c_dtype")
                                  .Attr<int32_t>("d_dtype")
                                  .Attr<int32_t>("bias_dtype")
                                  .Attr<int32_t>("generate_c")
                                  .Attr<int32_t>("scheduler")
                                  .Attr<int32_t>("tile_m")
                                  .Attr<int32_t>("tile_n")
                                  .Attr<int32_t>("cluster_m")
                                  .Attr<int32_t>("sm_margin"),
                              {ffi::Traits::kCmdBufferCompatible});

XLA_FFI_DEFINE_HANDLER_SYMBOL(ggemm_xla_glu, glu,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<CUstream_st*>>()
                                  .Ctx<ffi::DeviceOrdinal>()
                                  .Arg<ffi::AnyBuffer>()             // a
                                  .Arg<ffi::AnyBuffer>()             // b or b_ptrs
                                  .Arg<ffi::Buffer<ffi::S32>>()      // padded_offsets
                                  .Arg<ffi::Buffer<ffi::F32>>()      // alpha (empty without)
                                  .Arg<ffi::Buffer<ffi::F32>>()      // prob (empty without)
                                  .Arg<ffi::AnyBuffer>()             // bias (empty without)
                                  .Ret<ffi::AnyBuffer>()             // d (M x N/2)
                                  .Ret<ffi::AnyBuffer>()             // c (M x N; empty without)
                                  .Ret<ffi::AnyBuffer>()             // workspace
                                  .Attr<int32_t>("weight_mode")
                                  .Attr<int32_t>("c_dtype")
                                  .Attr<int32_t>("d_dtype")
                                  .Attr<int32_t>("bias_dtype")
                                  .Attr<int32_t>("generate_c")
                                  .Attr<int32_t>("scheduler")
                                  .Attr<int32_t>("tile_n")
                                  .Attr<int32_t>("sm_margin")
                                  .Attr<int32_t>("n")
                                  .Attr<int32_t>("activation")
                                  .Attr<float>("glu_scale")
                                  .Attr<float>("glu_limit")
                                  .Attr<float>("glu_offset"),
                              {ffi::Traits::kCmdBufferCompatible});

XLA_FFI_DEFINE_HANDLER_SYMBOL(ggemm_xla_dglu, dglu,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<CUstream_st*>>()
                                  .Ctx<ffi::DeviceOrdinal>()
                                  .Arg<ffi::AnyBuffer>()             // a (the upstream gradient)
                                  .Arg<ffi::AnyBuffer>()             // b or b_ptrs
                                  .Arg<ffi::Buffer<ffi::S32>>()      // padded_offsets
                                  .Arg<ffi::Buffer<ffi::F32>>()      // alpha (empty without)
                                  .Arg<ffi::Buffer<ffi::F32>>()      // prob (empty without)
                                  .Arg<ffi::AnyBuffer>()             // the saved pre-activation
                                  .Ret<ffi::AnyBuffer>()             // d_pre (M x 2N)
                                  .Ret<ffi::Buffer<ffi::F32>>()      // d_prob (M)
                                  .Ret<ffi::AnyBuffer>()             // workspace
                                  .Attr<int32_t>("weight_mode")
                                  .Attr<int32_t>("weight_layout")
                                  .Attr<int32_t>("d_dtype")
                                  .Attr<int32_t>("scheduler")
                                  .Attr<int32_t>("tile_n")
                                  .Attr<int32_t>("sm_margin")
                                  .Attr<int32_t>("activation")
                                  .Attr<float>("glu_scale")
                                  .Attr<float>("glu_limit")
                                  .Attr<float>("glu_offset")
                                  .Attr<int32_t>("glu_pre_dtype"),
                              {ffi::Traits::kCmdBufferCompatible});

NB_MODULE(_ggemm_xla, m) {
    m.doc() = "The XLA FFI handlers of ggemm.jax.";
    m.def("handler", []() {
        return nb::capsule(reinterpret_cast<void*>(&ggemm_xla_grouped_gemm));
    });
    m.def("glu_handler", []() { return nb::capsule(reinterpret_cast<void*>(&ggemm_xla_glu)); });
    m.def("dglu_handler", []() { return nb::capsule(reinterpret_cast<void*>(&ggemm_xla_dglu)); });
}
