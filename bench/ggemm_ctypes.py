"""ctypes binding of include/ggemm.h for the benchmark scripts.

The structures mirror the header field for field (same order, same fixed-width types) and are
filled through the library's own ggemm_plan_desc_init / ggemm_args_init, exactly as a C caller
does. The layout asserts below hold the mirror to the header's published minimum sizes.
"""
import ctypes as C

# Status codes (include/ggemm.h; never renumbered).
SUCCESS = 0
ERROR_CUDA = 14

# Enumerations.
DTYPE_NONE, DTYPE_BF16, DTYPE_FP16, DTYPE_FP32 = 0, 1, 2, 3
WEIGHTS_DENSE, WEIGHTS_DISCRETE = 0, 1
SCHEDULER_STATIC, SCHEDULER_DYNAMIC = 0, 1
SCHEDULERS = {"static": SCHEDULER_STATIC, "dynamic": SCHEDULER_DYNAMIC}
ACTIVATION_NONE, ACTIVATION_SWIGLU, ACTIVATION_CLAMPED_GEGLU = 0, 1, 2

PLAN_DESC_MIN_SIZE = 60
ARGS_MIN_SIZE = 104


class PlanDesc(C.Structure):
    _fields_ = [
        ("struct_size", C.c_uint32),
        ("device", C.c_int32),
        ("m_capacity", C.c_int64),
        ("n", C.c_int64),
        ("k", C.c_int64),
        ("num_experts", C.c_int32),
        ("weight_mode", C.c_int32),
        ("c_dtype", C.c_int32),
        ("d_dtype", C.c_int32),
        ("bias_dtype", C.c_int32),
        ("generate_c", C.c_int32),
        ("scheduler", C.c_int32),
        # End of the minimum version; optional fields follow.
        ("tile_m", C.c_int32),
        ("tile_n", C.c_int32),
        ("cluster_m", C.c_int32),
        ("sm_margin", C.c_int32),
        ("reserved0", C.c_int32),
        ("weight_layout", C.c_int32),
        ("reserved1", C.c_int32),
        ("split_k", C.c_int32),
        ("reserved2", C.c_int32),
        ("activation", C.c_int32),
        ("glu_scale", C.c_float),
        ("glu_limit", C.c_float),
        ("glu_offset", C.c_float),
        ("glu_backward", C.c_int32),
        ("glu_pre_dtype", C.c_int32),
    ]


class Args(C.Structure):
    _fields_ = [
        ("struct_size", C.c_uint32),
        ("reserved0", C.c_uint32),
        ("m", C.c_int64),
        ("a", C.c_void_p),
        ("b", C.c_void_p),
        ("b_ptrs", C.c_void_p),
        ("padded_offsets", C.c_void_p),
        ("alpha", C.c_void_p),
        ("prob", C.c_void_p),
        ("bias", C.c_void_p),
        ("c", C.c_void_p),
        ("d", C.c_void_p),
        ("workspace", C.c_void_p),
        ("workspace_size", C.c_uint64),
        ("device_status", C.c_void_p),  # optional: beyond ARGS_MIN_SIZE
        ("valid_rows", C.c_void_p),  # optional: per-expert valid-row counts (int32, device)
        ("glu_pre", C.c_void_p),
        ("d_prob", C.c_void_p),
    ]


# The mirror must match the C layout (x86-64 and aarch64 Linux ABIs alike).
assert PlanDesc.scheduler.offset + 4 == PLAN_DESC_MIN_SIZE
assert C.sizeof(PlanDesc) == 120
assert Args.device_status.offset == ARGS_MIN_SIZE
assert Args.valid_rows.offset == 112
assert C.sizeof(Args) == 136


class GgemmError(RuntimeError):
    def __init__(self, status, text):
        super().__init__(text)
        self.status = status


class Library:
    """The loaded libggemm.so with typed entry points."""

    def __init__(self, path):
        lib = C.CDLL(path)
        status = C.c_int32
        plan = C.c_void_p
        self._decl(lib.ggemm_version, C.c_int32, [])
        self._decl(lib.ggemm_status_string, C.c_char_p, [status])
        self._decl(lib.ggemm_last_error_message, status, [C.c_char_p, C.c_uint64, C.POINTER(C.c_uint64)])
        self._decl(lib.ggemm_plan_desc_init, status, [C.POINTER(PlanDesc), C.c_uint32])
        self._decl(lib.ggemm_args_init, status, [C.POINTER(Args), C.c_uint32])
        self._decl(lib.ggemm_plan_create, status, [C.POINTER(plan), C.POINTER(PlanDesc)])
        self._decl(lib.ggemm_plan_destroy, status, [plan])
        self._decl(lib.ggemm_plan_workspace_size, status, [plan, C.POINTER(C.c_uint64)])
        self._decl(lib.ggemm_plan_describe, status, [plan, C.c_char_p, C.c_uint64, C.POINTER(C.c_uint64)])
        self._decl(lib.ggemm_execute, status, [plan, C.POINTER(Args), C.c_void_p])
        self.lib = lib
        self.path = path
        self.version = lib.ggemm_version()

    @staticmethod
    def _decl(fn, restype, argtypes):
        fn.restype = restype
        fn.argtypes = argtypes

    def error_text(self, status):
        buffer = C.create_string_buffer(4096)
        self.lib.ggemm_last_error_message(buffer, len(buffer), None)
        name = self.lib.ggemm_status_string(status).decode()
        return "%s (%d): %s" % (name, status, buffer.value.decode(errors="replace"))

    def check(self, status, what):
        if status != SUCCESS:
            raise GgemmError(status, "%s: %s" % (what, self.error_text(status)))

    def plan_desc(self, **fields):
        desc = PlanDesc()
        self.check(self.lib.ggemm_plan_desc_init(C.byref(desc), C.sizeof(desc)), "ggemm_plan_desc_init")
        for name, value in fields.items():
            setattr(desc, name, value)
        return desc

    def args(self, **fields):
        args = Args()
        self.check(self.lib.ggemm_args_init(C.byref(args), C.sizeof(args)), "ggemm_args_init")
        for name, value in fields.items():
            setattr(args, name, value)
        return args

    def plan(self, desc):
        return Plan(self, desc)


class Plan:
    """A ggemm plan; destroy() (or the with-statement) frees it."""

    def __init__(self, library, desc):
        self.library = library
        self.desc = desc
        self.handle = C.c_void_p()
        library.check(library.lib.ggemm_plan_create(C.byref(self.handle), C.byref(desc)), "ggemm_plan_create")

    def workspace_size(self):
        size = C.c_uint64()
        self.library.check(self.library.lib.ggemm_plan_workspace_size(self.handle, C.byref(size)),
                           "ggemm_plan_workspace_size")
        return size.value

    def describe(self):
        required = C.c_uint64()
        buffer = C.create_string_buffer(4096)
        lib = self.library.lib
        self.library.check(lib.ggemm_plan_describe(self.handle, buffer, len(buffer), C.byref(required)),
                           "ggemm_plan_describe")
        if required.value > len(buffer):
            buffer = C.create_string_buffer(required.value)
            self.library.check(lib.ggemm_plan_describe(self.handle, buffer, len(buffer), C.byref(required)),
                               "ggemm_plan_describe")
        return buffer.value.decode(errors="replace")

    def execute_status(self, args, stream_handle):
        """Enqueues one call; returns the status (the timing loop checks it after the events)."""
        return self.library.lib.ggemm_execute(self.handle, C.byref(args), stream_handle)

    def execute(self, args, stream_handle):
        self.library.check(self.execute_status(args, stream_handle), "ggemm_execute")

    def destroy(self):
        if self.handle:
            self.library.lib.ggemm_plan_destroy(self.handle)
            self.handle = C.c_void_p()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.destroy()
