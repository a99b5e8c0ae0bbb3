// Status names, the per-thread message, GGEMM_LOG, and the exported calls that read them.
#include "src/error.h"

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace ggemm {
namespace {

// One message per thread (cuDNN's cudnnGetLastErrorString model): threads never see each
// other's failures. A trivially constructible array needs no TLS constructor.
thread_local char t_message[kMaxMessageBytes];

}  // namespace

ggemm_status_t fail(ggemm_status_t status, const char* format, ...) noexcept {
    va_list arguments;
    va_start(arguments, format);
    // vsnprintf truncates and always terminates; a message is diagnostic text, so a
    // truncated one is still better than none.
    std::vsnprintf(t_message, sizeof t_message, format, arguments);
    va_end(arguments);
    return status;
}

void clear_error() noexcept { t_message[0] = '\0'; }

const char* last_error() noexcept { return t_message; }

const char* status_name(ggemm_status_t status) noexcept {
    switch (status) {
        case GGEMM_SUCCESS: return "GGEMM_SUCCESS";
        case GGEMM_ERROR_NULL_ARGUMENT: return "GGEMM_ERROR_NULL_ARGUMENT";
        case GGEMM_ERROR_STRUCT_SIZE: return "GGEMM_ERROR_STRUCT_SIZE";
        case GGEMM_ERROR_INVALID_SHAPE: return "GGEMM_ERROR_INVALID_SHAPE";
        case GGEMM_ERROR_INVALID_DTYPE: return "GGEMM_ERROR_INVALID_DTYPE";
        case GGEMM_ERROR_MISALIGNED: return "GGEMM_ERROR_MISALIGNED";
        case GGEMM_ERROR_NOT_DEVICE_MEMORY: return "GGEMM_ERROR_NOT_DEVICE_MEMORY";
        case GGEMM_ERROR_WEIGHT_SOURCE: return "GGEMM_ERROR_WEIGHT_SOURCE";
        case GGEMM_ERROR_BIAS_MISMATCH: return "GGEMM_ERROR_BIAS_MISMATCH";
        case GGEMM_ERROR_UNSUPPORTED_CONFIG: return "GGEMM_ERROR_UNSUPPORTED_CONFIG";
        case GGEMM_ERROR_WORKSPACE: return "GGEMM_ERROR_WORKSPACE";
        case GGEMM_ERROR_WRONG_DEVICE: return "GGEMM_ERROR_WRONG_DEVICE";
        case GGEMM_ERROR_UNSUPPORTED_ARCH: return "GGEMM_ERROR_UNSUPPORTED_ARCH";
        case GGEMM_ERROR_NO_DEVICE: return "GGEMM_ERROR_NO_DEVICE";
        case GGEMM_ERROR_CUDA: return "GGEMM_ERROR_CUDA";
        case GGEMM_ERROR_OUT_OF_MEMORY: return "GGEMM_ERROR_OUT_OF_MEMORY";
        case GGEMM_ERROR_INTERNAL: return "GGEMM_ERROR_INTERNAL";
        case GGEMM_ERROR_BAD_OFFSETS: return "GGEMM_ERROR_BAD_OFFSETS";
        case GGEMM_ERROR_BAD_WEIGHT_POINTERS: return "GGEMM_ERROR_BAD_WEIGHT_POINTERS";
        case GGEMM_ERROR_INVALID_VALUE: return "GGEMM_ERROR_INVALID_VALUE";
        default: return "GGEMM_ERROR_UNKNOWN_STATUS";
    }
}

bool log_enabled() noexcept {
    // A function-local static is initialized once, thread-safely; getenv is read only here.
    static const bool enabled = [] {
        const char* value = std::getenv("GGEMM_LOG");
        return value != nullptr && std::strcmp(value, "1") == 0;
    }();
    return enabled;
}

void log(const char* format, ...) noexcept {
    if (!log_enabled()) return;
    char line[kMaxMessageBytes + 256];
    va_list arguments;
    va_start(arguments, format);
    std::vsnprintf(line, sizeof line, format, arguments);
    va_end(arguments);
    std::fprintf(stderr, "ggemm: %s\n", line);
}

ggemm_status_t copy_text(const char* text, char* buffer, uint64_t buffer_size, uint64_t* required,
                         const char* function) noexcept {
    if (buffer == nullptr && buffer_size != 0) {
        return fail(GGEMM_ERROR_NULL_ARGUMENT,
                    "%s: buffer is NULL but buffer_size = %llu; pass buffer_size = 0 to query "
                    "the required length only",
                    function, static_cast<unsigned long long>(buffer_size));
    }
    const std::size_t length = std::strlen(text);
    if (required != nullptr) *required = length + 1;
    if (buffer_size == 0) return GGEMM_SUCCESS;
    const std::size_t copied = length < buffer_size - 1 ? length : static_cast<std::size_t>(buffer_size - 1);
    std::memmove(buffer, text, copied);  // memmove: the caller may pass our own text back
    buffer[copied] = '\0';
    return GGEMM_SUCCESS;
}

}  // namespace ggemm

extern "C" {

GGEMM_API int32_t ggemm_version(void) { return GGEMM_VERSION; }

GGEMM_API const char* ggemm_status_string(ggemm_status_t status) {
    return ggemm::status_name(status);
}

// Unlike every other call, reading the message does not clear it: a caller may ask for the
// required length first and read the text with a second call.
GGEMM_API ggemm_status_t ggemm_last_error_message(char* buffer, uint64_t buffer_size,
                                                  uint64_t* required) {
    return ggemm::copy_text(ggemm::last_error(), buffer, buffer_size, required,
                            "ggemm_last_error_message");
}

}  // extern "C"
