// Reads a fuzzer's input as a stream of little values; past the end every read gives zero, so
// any input, the empty one included, is a complete case.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace ggemm_fuzz {

class FuzzInput {
public:
    FuzzInput(const uint8_t* data, std::size_t size) : data_(data), size_(size) {}

    template <class T>
    T take() {
        T value{};
        const std::size_t count = size_ < sizeof value ? size_ : sizeof value;
        if (count > 0) std::memcpy(&value, data_, count);
        data_ += count;
        size_ -= count;
        return value;
    }

    // A value in [0, bound) (bound > 0).
    uint32_t below(uint32_t bound) { return take<uint32_t>() % bound; }
    bool flip() { return (take<uint8_t>() & 1) != 0; }
    bool empty() const { return size_ == 0; }

    // Copies up to `count` bytes into `out` and zero-fills the rest.
    void fill(void* out, std::size_t count) {
        const std::size_t copied = size_ < count ? size_ : count;
        if (copied > 0) std::memcpy(out, data_, copied);
        std::memset(static_cast<unsigned char*>(out) + copied, 0, count - copied);
        data_ += copied;
        size_ -= copied;
    }

private:
    const uint8_t* data_;
    std::size_t size_;
};

}  // namespace ggemm_fuzz
