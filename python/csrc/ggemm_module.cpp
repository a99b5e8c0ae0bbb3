// ggemm._ggemm: the C ABI of include/ggemm.h for Python, over plain integers (device addresses,
// a stream handle, enum codes). Frameworks' tensors are checked in Python (ggemm/_rules.py);
// this module only fills the size-first structs and calls the library, so that one call costs
// well under a microsecond of host time. Every entry returns the library's status; the Python
// side turns a failure into ggemm.GgemmError with the thread's last error message.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "ggemm.h"

namespace nb = nanobind;

namespace {

// Everything that shapes a plan except m_capacity: the key of the library's plan cache.
struct Desc {
    ggemm_plan_desc desc;

    Desc(int32_t device, int64_t n, int64_t k, int32_t num_experts, int32_t weight_mode,
         int32_t c_dtype, int32_t d_dtype, int32_t bias_dtype, bool generate_c, int32_t scheduler,
         int32_t tile_m, int32_t tile_n, int32_t cluster_m, int32_t sm_margin,
         int32_t weight_layout, int32_t activation, float glu_scale, float glu_limit, float glu_offset,
         int32_t glu_backward, int32_t glu_pre_dtype) {
        ggemm_plan_desc_init(&desc, sizeof desc);
        desc.device = device;
        desc.n = n;
        desc.k = k;
        desc.num_experts = num_experts;
        desc.weight_mode = weight_mode;
        desc.c_dtype = c_dtype;
        desc.d_dtype = d_dtype;
        desc.bias_dtype = bias_dtype;
        desc.generate_c = generate_c ? 1 : 0;
        desc.scheduler = scheduler;
        desc.tile_m = tile_m;
        desc.tile_n = tile_n;
        desc.cluster_m = cluster_m;
        desc.sm_margin = sm_margin;
        desc.weight_layout = weight_layout;
        desc.activation = activation;
        desc.glu_scale = glu_scale;
        desc.glu_limit = glu_limit;
        desc.glu_offset = glu_offset;
        desc.glu_backward = glu_backward;
        desc.glu_pre_dtype = glu_pre_dtype;
    }

    // A copy for one call: m_capacity is that call's M (at least the contract's 256), since
    // the cached plan serves any M.
    ggemm_plan_desc for_rows(int64_t m) const {
        ggemm_plan_desc copy = desc;
        copy.m_capacity = std::max<int64_t>(m, 256);
        return copy;
    }
};

ggemm_args make_args(int64_t m, uintptr_t a, uintptr_t b, uintptr_t b_ptrs, uintptr_t offsets,
                     uintptr_t alpha, uintptr_t prob, uintptr_t bias, uintptr_t c, uintptr_t d,
                     uintptr_t workspace, uint64_t workspace_size, uintptr_t device_status,
                     uintptr_t valid_rows) {
    ggemm_args args;
    ggemm_args_init(&args, sizeof args);
    args.m = m;
    args.a = reinterpret_cast<const void*>(a);
    args.b = reinterpret_cast<const void*>(b);
    args.b_ptrs = reinterpret_cast<const uint64_t*>(b_ptrs);
    args.padded_offsets = reinterpret_cast<const int32_t*>(offsets);
    args.alpha = reinterpret_cast<const float*>(alpha);
    args.prob = reinterpret_cast<const float*>(prob);
    args.bias = reinterpret_cast<const void*>(bias);
    args.c = reinterpret_cast<void*>(c);
    args.d = reinterpret_cast<void*>(d);
    args.workspace = reinterpret_cast<void*>(workspace);
    args.workspace_size = workspace_size;
    args.device_status = reinterpret_cast<uint32_t*>(device_status);
    args.valid_rows = reinterpret_cast<const int32_t*>(valid_rows);
    return args;
}

CUstream_st* as_stream(uintptr_t stream) { return reinterpret_cast<CUstream_st*>(stream); }

// A plan created with ggemm_plan_create, destroyed with the Python object.
class Plan {
  public:
    Plan() = default;
    Plan(const Plan&) = delete;
    Plan& operator=(const Plan&) = delete;
    ~Plan() { ggemm_plan_destroy(plan_); }

    ggemm_status_t create(const Desc& desc, int64_t m_capacity) {
        ggemm_plan_desc copy = desc.desc;
        copy.m_capacity = m_capacity;
        return ggemm_plan_create(&plan_, &copy);
    }

    std::tuple<ggemm_status_t, uint64_t> workspace_size() const {
        uint64_t bytes = 0;
        const ggemm_status_t status = ggemm_plan_workspace_size(plan_, &bytes);
        return {status, bytes};
    }

    std::tuple<ggemm_status_t, std::string> describe() const {
        uint64_t required = 0;
        ggemm_status_t status = ggemm_plan_describe(plan_, nullptr, 0, &required);
        if (status != GGEMM_SUCCESS) return {status, std::string()};
        std::string text(required, '\0');
        status = ggemm_plan_describe(plan_, text.data(), required, nullptr);
        text.resize(required > 0 ? required - 1 : 0);
        return {status, text};
    }

    ggemm_status_t execute(int64_t m, uintptr_t a, uintptr_t b, uintptr_t b_ptrs, uintptr_t offsets,
                           uintptr_t alpha, uintptr_t prob, uintptr_t bias, uintptr_t c, uintptr_t d,
                           uintptr_t workspace, uint64_t workspace_size, uintptr_t device_status,
                           uintptr_t valid_rows, uintptr_t stream) const {
        const ggemm_args args = make_args(m, a, b, b_ptrs, offsets, alpha, prob, bias, c, d,
                                          workspace, workspace_size, device_status, valid_rows);
        return ggemm_execute(plan_, &args, as_stream(stream));
    }

  private:
    ggemm_plan_t plan_ = nullptr;
};

// A weight-gradient plan (ggemm_wgrad_plan_create), destroyed with the Python object. There is
// no one-shot call for it: Python keeps these per shape.
class WgradPlan {
  public:
    WgradPlan() = default;
    WgradPlan(const WgradPlan&) = delete;
    WgradPlan& operator=(const WgradPlan&) = delete;
    ~WgradPlan() { ggemm_plan_destroy(plan_); }

    ggemm_status_t create(int32_t device, int64_t m_capacity, int64_t p, int64_t q, int32_t num_experts,
                          int32_t out_dtype, int32_t output_mode, bool accumulate, int32_t scheduler,
                          int32_t sm_margin) {
        ggemm_wgrad_desc desc;
        ggemm_wgrad_desc_init(&desc, sizeof desc);
        desc.device = device;
        desc.m_capacity = m_capacity;
        desc.p = p;
        desc.q = q;
        desc.num_experts = num_experts;
        desc.out_dtype = out_dtype;
        desc.output_mode = output_mode;
        desc.accumulate = accumulate ? 1 : 0;
        desc.scheduler = scheduler;
        desc.sm_margin = sm_margin;
        return ggemm_wgrad_plan_create(&plan_, &desc);
    }

    std::tuple<ggemm_status_t, uint64_t> workspace_size() const {
        uint64_t bytes = 0;
        const ggemm_status_t status = ggemm_plan_workspace_size(plan_, &bytes);
        return {status, bytes};
    }

    ggemm_status_t execute(int64_t m, uintptr_t x1, uintptr_t x2, uintptr_t offsets, uintptr_t alpha, uintptr_t out,
                           uintptr_t out_ptrs, uintptr_t workspace, uint64_t workspace_size,
                           uintptr_t device_status, uintptr_t stream) const {
        ggemm_wgrad_args args;
        ggemm_wgrad_args_init(&args, sizeof args);
        args.m = m;
        args.x1 = reinterpret_cast<const void*>(x1);
        args.x2 = reinterpret_cast<const void*>(x2);
        args.padded_offsets = reinterpret_cast<const int32_t*>(offsets);
        args.alpha = reinterpret_cast<const float*>(alpha);
        args.out = reinterpret_cast<void*>(out);
        args.out_ptrs = reinterpret_cast<const uint64_t*>(out_ptrs);
        args.workspace = reinterpret_cast<void*>(workspace);
        args.workspace_size = workspace_size;
        args.device_status = reinterpret_cast<uint32_t*>(device_status);
        return ggemm_wgrad_execute(plan_, &args, as_stream(stream));
    }

  private:
    ggemm_plan_t plan_ = nullptr;
};

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

}  // namespace

NB_MODULE(_ggemm, m) {
    m.doc() = "The C ABI of libggemm.so.0 over integers; use ggemm.torch or ggemm.jax.";

    m.def("version", &ggemm_version);
    m.def("status_string", [](int32_t status) { return std::string(ggemm_status_string(status)); });
    m.def("last_error_message", &last_error_message);

    nb::class_<Desc>(m, "Desc")
        .def(nb::init<int32_t, int64_t, int64_t, int32_t, int32_t, int32_t, int32_t, int32_t, bool,
                      int32_t, int32_t, int32_t, int32_t, int32_t, int32_t, int32_t, float, float, float,
                      int32_t, int32_t>(),
             nb::arg("device"), nb::arg("n"), nb::arg("k"), nb::arg("num_experts"),
             nb::arg("weight_mode"), nb::arg("c_dtype"), nb::arg("d_dtype"), nb::arg("bias_dtype"),
             nb::arg("generate_c"), nb::arg("scheduler"), nb::arg("tile_m"), nb::arg("tile_n"),
             nb::arg("cluster_m"), nb::arg("sm_margin"),
             nb::arg("weight_layout") = GGEMM_WEIGHT_LAYOUT_K_MAJOR,
             nb::arg("activation") = GGEMM_ACTIVATION_NONE, nb::arg("glu_scale") = 1.702f,
             nb::arg("glu_limit") = 7.0f, nb::arg("glu_offset") = 1.0f, nb::arg("glu_backward") = 0,
             nb::arg("glu_pre_dtype") = GGEMM_DTYPE_BF16)
        .def("workspace_size",
             [](const Desc& self, int64_t m) {
                 const ggemm_plan_desc desc = self.for_rows(m);
                 uint64_t bytes = 0;
                 const ggemm_status_t status = ggemm_workspace_size(&desc, &bytes);
                 return std::make_tuple(status, bytes);
             })
        .def("grouped_gemm",
             [](const Desc& self, int64_t m, uintptr_t a, uintptr_t b, uintptr_t b_ptrs,
                uintptr_t offsets, uintptr_t alpha, uintptr_t prob, uintptr_t bias, uintptr_t c,
                uintptr_t d, uintptr_t workspace, uint64_t workspace_size, uintptr_t device_status,
                uintptr_t valid_rows, uintptr_t stream) {
                 const ggemm_plan_desc desc = self.for_rows(m);
                 const ggemm_args args = make_args(m, a, b, b_ptrs, offsets, alpha, prob, bias, c,
                                                   d, workspace, workspace_size, device_status,
                                                   valid_rows);
                 return ggemm_grouped_gemm(&desc, &args, as_stream(stream));
             })
        .def("dglu",
             [](const Desc& self, int64_t m, uintptr_t a, uintptr_t b, uintptr_t b_ptrs, uintptr_t offsets,
                uintptr_t alpha, uintptr_t prob, uintptr_t glu_pre, uintptr_t d, uintptr_t d_prob,
                uintptr_t workspace, uint64_t workspace_size, uintptr_t device_status, uintptr_t stream) {
                 const ggemm_plan_desc desc = self.for_rows(m);
                 ggemm_args args = make_args(m, a, b, b_ptrs, offsets, alpha, prob, 0, 0, d, workspace,
                                             workspace_size, device_status, /*valid_rows=*/0);
                 args.glu_pre = reinterpret_cast<const void*>(glu_pre);
                 args.d_prob = reinterpret_cast<float*>(d_prob);
                 return ggemm_grouped_gemm(&desc, &args, as_stream(stream));
             });

    nb::class_<Plan>(m, "Plan")
        .def(nb::init<>())
        .def("create", &Plan::create)
        .def("workspace_size", &Plan::workspace_size)
        .def("describe", &Plan::describe)
        .def("execute", &Plan::execute);

    nb::class_<WgradPlan>(m, "WgradPlan")
        .def(nb::init<>())
        .def("create", &WgradPlan::create)
        .def("workspace_size", &WgradPlan::workspace_size)
        .def("execute", &WgradPlan::execute);

    m.def("plan_cache_size", []() {
        uint64_t count = 0;
        const ggemm_status_t status = ggemm_plan_cache_size(&count);
        return std::make_tuple(status, count);
    });
    m.def("plan_cache_clear", &ggemm_plan_cache_clear);
    m.def("check_offsets", [](const std::vector<int32_t>& offsets, int64_t m) {
        return ggemm_check_offsets(offsets.data(), static_cast<int32_t>(offsets.size()), m);
    });
    m.def("check_weight_pointers", [](const std::vector<uint64_t>& pointers, int32_t device) {
        return ggemm_check_weight_pointers(pointers.data(), static_cast<int32_t>(pointers.size()),
                                           device);
    });

    m.attr("GGEMM_VERSION") = GGEMM_VERSION;
}
