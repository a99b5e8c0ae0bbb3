// Status codes, the thread-local last-error message, and the guard every exported function
// runs its body under. Nothing here allocates: the message lives in a fixed per-thread
// buffer, so recording a failure can itself never fail.
#pragma once

#include <cstdint>
#include <exception>
#include <new>

#include "ggemm.h"

namespace ggemm {

// Bytes kept of one message (longer messages are truncated, never refused).
constexpr std::size_t kMaxMessageBytes = 2048;

// Records a printf-style message for the calling thread and returns `status`, so a refusal
// reads `return fail(GGEMM_ERROR_INVALID_SHAPE, "desc->k must be ..., got %lld", k);`.
ggemm_status_t fail(ggemm_status_t status, const char* format, ...) noexcept
    __attribute__((format(printf, 2, 3)));

// Forgets the calling thread's message (every successful call ends with this).
void clear_error() noexcept;

// The calling thread's current message ("" after a success).
const char* last_error() noexcept;

// The English name of a status code; never NULL.
const char* status_name(ggemm_status_t status) noexcept;

// True when the environment variable GGEMM_LOG is "1" (read once per process).
bool log_enabled() noexcept;

// Prints "ggemm: <message>" to stderr when log_enabled().
void log(const char* format, ...) noexcept __attribute__((format(printf, 1, 2)));

// Copies `text` into buffer[0, buffer_size) NUL-terminated and truncated to fit; *required,
// when given, receives strlen(text) + 1. `function` names the caller in refusals.
ggemm_status_t copy_text(const char* text, char* buffer, uint64_t buffer_size, uint64_t* required,
                         const char* function) noexcept;

// Runs `body` (returning ggemm_status_t) as the body of the exported C function `function`:
// exceptions become GGEMM_ERROR_OUT_OF_MEMORY (std::bad_alloc) or GGEMM_ERROR_INTERNAL, a
// success clears the thread's message and a failure is logged when GGEMM_LOG=1.
template <class Body>
ggemm_status_t guarded(const char* function, Body&& body) noexcept {
    ggemm_status_t status;
    try {
        status = body();
    } catch (const std::bad_alloc&) {
        status = fail(GGEMM_ERROR_OUT_OF_MEMORY, "%s: a host memory allocation failed", function);
    } catch (const std::exception& e) {
        status = fail(GGEMM_ERROR_INTERNAL, "%s: unexpected C++ exception: %s", function, e.what());
    } catch (...) {
        status = fail(GGEMM_ERROR_INTERNAL, "%s: unexpected C++ exception", function);
    }
    if (status == GGEMM_SUCCESS) {
        clear_error();
    } else if (log_enabled()) {
        log("%s returned %s: %s", function, status_name(status), last_error());
    }
    return status;
}

}  // namespace ggemm
