"""The loaded libggemm.so.0 (through the ggemm._ggemm module, linked with an $ORIGIN run path,
so the copy shipped in this package is found without LD_LIBRARY_PATH) and its error type."""
from . import _ggemm

# Enumerations of include/ggemm.h (fixed values).
DTYPE_NONE, DTYPE_BF16, DTYPE_FP16, DTYPE_FP32 = 0, 1, 2, 3
WEIGHTS_DENSE, WEIGHTS_DISCRETE = 0, 1
SCHEDULER_STATIC, SCHEDULER_DYNAMIC = 0, 1
WEIGHT_LAYOUT_K_MAJOR, WEIGHT_LAYOUT_N_MAJOR = 0, 1
WEIGHT_LAYOUTS = {"k_major": WEIGHT_LAYOUT_K_MAJOR, "n_major": WEIGHT_LAYOUT_N_MAJOR}
ACTIVATION_NONE, ACTIVATION_SWIGLU, ACTIVATION_CLAMPED_GEGLU = 0, 1, 2
ACTIVATIONS = {"swiglu": ACTIVATION_SWIGLU, "geglu_clamped": ACTIVATION_CLAMPED_GEGLU}
GLU_DEFAULTS = (1.702, 7.0, 1.0)  # the clamped GeGLU's (scale, limit, offset)

# Status codes used by the Python layer itself.
SUCCESS = 0
ERROR_NO_DEVICE = 13
ERROR_BAD_OFFSETS = 17
ERROR_BAD_WEIGHT_POINTERS = 18

# Bits of the device status word.
DEVICE_STATUS_BITS = {
    0x1: "an offset is negative",
    0x2: "an offset is not a multiple of 256",
    0x4: "an offset is greater than M",
    0x8: "an offset is less than the previous one",
    0x10: "a b_ptrs entry is NULL",
    0x20: "a b_ptrs entry is not 16-byte aligned",
    0x40: "an out_ptrs entry (weight gradient) is NULL",
    0x80: "an out_ptrs entry (weight gradient) is not 16-byte aligned",
    0x100: "a valid_rows count is negative or above its segment's size (clamped)",
}
OFFSET_BITS = 0xF
VALID_ROWS_CLAMPED = 0x100


class GgemmError(RuntimeError):
    """A refusal or failure reported by libggemm.

    `status` is the numeric ggemm_status_t, `name` its name (``"GGEMM_ERROR_MISALIGNED"``) and
    `message` the library's message for the call, which names the argument, the value and the
    rule."""

    def __init__(self, status, message=None):
        self.status = int(status)
        self.name = _ggemm.status_string(self.status)
        self.message = _ggemm.last_error_message() if message is None else message
        super().__init__(f"{self.name}: {self.message}" if self.message else self.name)


def check(status):
    """Raises GgemmError for a failed status, with the calling thread's last message."""
    if status:
        raise GgemmError(status)


def library_version():
    """The loaded library's version as (major, minor, patch)."""
    v = _ggemm.version()
    return (v // 10000, v // 100 % 100, v % 100)


def plan_cache_size():
    """Number of plans in the library's cache of one-shot calls."""
    status, count = _ggemm.plan_cache_size()
    check(status)
    return count


def plan_cache_clear():
    """Destroys every cached plan (not while another thread is inside a call)."""
    check(_ggemm.plan_cache_clear())


def device_status_error(word):
    """The GgemmError a non-zero device status word stands for."""
    reasons = [text for bit, text in DEVICE_STATUS_BITS.items() if word & bit]
    status = (ERROR_BAD_OFFSETS if word & (OFFSET_BITS | VALID_ROWS_CLAMPED)
              else ERROR_BAD_WEIGHT_POINTERS)
    consequence = ("the experts concerned were skipped" if word & ~VALID_ROWS_CLAMPED
                   else "the counts were clamped to their segments")
    return GgemmError(status, "device status 0x%x: %s; %s" % (word, "; ".join(reasons), consequence))


_desc_cache = {}


def desc_for(key):
    """The (Desc, workspace bytes) of one plan key, made once per key.

    key: (device, n, k, num_experts, weight_mode, c_dtype, d_dtype, bias_dtype, generate_c,
    scheduler, tile_m, tile_n, cluster_m, sm_margin[, weight_layout[, activation, glu_scale,
    glu_limit, glu_offset[, glu_backward, glu_pre_dtype]]]). Creating it asks the
    library for the workspace, which checks every field of the descriptor (no GPU needed):
    refusals of the descriptor's fields surface here, those that depend on the device at the
    first call."""
    entry = _desc_cache.get(key)
    if entry is None:
        desc = _ggemm.Desc(*key)
        status, workspace = desc.workspace_size(256)
        check(status)
        entry = _desc_cache[key] = (desc, workspace)
    return entry


_wgrad_plans = {}


def wgrad_plan_for(key):
    """The (WgradPlan, workspace bytes) of one weight-gradient key, made once per key.

    key: (device, m_capacity, p, q, num_experts, out_dtype, output_mode, accumulate, scheduler,
    sm_margin); m_capacity is a power of two (at least 256) covering the call's M, so a few plans
    serve every M."""
    entry = _wgrad_plans.get(key)
    if entry is None:
        plan = _ggemm.WgradPlan()
        check(plan.create(*key))
        status, workspace = plan.workspace_size()
        check(status)
        entry = _wgrad_plans[key] = (plan, workspace)
    return entry


def wgrad_capacity(m):
    """The m_capacity of the plan that serves M rows: the next power of two, at least 256."""
    capacity = 256
    while capacity < m:
        capacity *= 2
    return min(capacity, 2147483392)
