"""The package around the library: it loads the copy shipped inside it, and the library's
refusals surface as ggemm.GgemmError with the status name and the library's message."""
import os
import subprocess
import sys

import pytest

import ggemm
from ggemm import _ggemm
from ggemm import _library as lib


def test_the_shipped_library_is_loaded_without_ld_library_path():
    package = os.path.dirname(ggemm.__file__)
    assert os.path.isfile(os.path.join(package, "libggemm.so.0"))
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    code = ("import ggemm, ggemm._ggemm\n"
            "print([l.split()[-1] for l in open('/proc/self/maps') if 'libggemm.so' in l][0])")
    loaded = subprocess.run([sys.executable, "-c", code], env=env, check=True,
                            capture_output=True, text=True).stdout.strip()
    assert os.path.realpath(loaded) == os.path.realpath(os.path.join(package, "libggemm.so.0"))


def test_versions_agree():
    assert ggemm.library_version() == (0, 1, 0)
    assert _ggemm.version() == _ggemm.GGEMM_VERSION


def test_status_names_come_from_the_library():
    assert _ggemm.status_string(0) == "GGEMM_SUCCESS"
    assert _ggemm.status_string(5) == "GGEMM_ERROR_MISALIGNED"
    assert _ggemm.status_string(9999) == "GGEMM_ERROR_UNKNOWN_STATUS"


def test_a_refused_descriptor_raises_ggemm_error_with_name_and_message():
    with pytest.raises(ggemm.GgemmError) as info:
        lib.desc_for((0, 500, 128, 4, 0, 1, 1, 0, False, 0, 0, 0, 0, 0))
    error = info.value
    assert error.status == 3 and error.name == "GGEMM_ERROR_INVALID_SHAPE"
    assert "desc->n" in error.message and "500" in error.message
    assert str(error) == f"GGEMM_ERROR_INVALID_SHAPE: {error.message}"
    assert isinstance(error, RuntimeError)


def test_unknown_enum_value_is_invalid_value():
    with pytest.raises(ggemm.GgemmError) as info:
        lib.desc_for((0, 256, 128, 4, 7, 1, 1, 0, False, 0, 0, 0, 0, 0))
    assert info.value.name == "GGEMM_ERROR_INVALID_VALUE"
    assert "weight_mode" in info.value.message


def test_workspace_size_needs_no_gpu():
    # Dense weights with the static scheduler need none; the dynamic scheduler a 128-byte
    # counter; discrete weights also one 128-byte map and one 4-byte status word per expert.
    assert lib.desc_for((0, 256, 128, 4, 0, 1, 1, 0, False, 0, 0, 0, 0, 0))[1] == 0
    assert lib.desc_for((0, 256, 128, 4, 0, 1, 1, 0, False, 1, 0, 0, 0, 0))[1] == 128
    assert lib.desc_for((0, 256, 128, 4, 1, 1, 1, 0, False, 0, 0, 0, 0, 0))[1] == 128 + 4 * 128 + 128
    assert lib.desc_for((0, 256, 128, 40, 1, 1, 1, 0, False, 0, 0, 0, 0, 0))[1] == 128 + 40 * 128 + 256


def test_host_offset_check_names_the_bad_entry():
    assert _ggemm.check_offsets([256, 512, 512], 512) == 0
    status = _ggemm.check_offsets([256, 300, 512], 512)
    error = ggemm.GgemmError(status)
    assert error.name == "GGEMM_ERROR_BAD_OFFSETS"
    assert error.message == "padded_offsets[1] = 300 is not a multiple of 256"


def test_host_pointer_check_without_device():
    assert _ggemm.check_weight_pointers([0x7F0000000000, 0x7F0000000100], -1) == 0
    error = ggemm.GgemmError(_ggemm.check_weight_pointers([0x7F0000000000, 0], -1))
    assert error.name == "GGEMM_ERROR_BAD_WEIGHT_POINTERS"


def test_device_status_words_decode_to_errors():
    error = lib.device_status_error(0x2 | 0x4)
    assert error.name == "GGEMM_ERROR_BAD_OFFSETS"
    assert "not a multiple of 256" in error.message and "greater than M" in error.message
    error = lib.device_status_error(0x10)
    assert error.name == "GGEMM_ERROR_BAD_WEIGHT_POINTERS" and "NULL" in error.message


def test_a_successful_call_clears_the_message():
    _ggemm.check_offsets([1], 256)
    assert _ggemm.last_error_message()
    _ggemm.check_offsets([256], 256)
    assert _ggemm.last_error_message() == ""


def test_plan_cache_counts():
    assert ggemm.plan_cache_size() >= 0
    ggemm.plan_cache_clear()
    assert ggemm.plan_cache_size() == 0
