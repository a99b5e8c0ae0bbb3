// SM90's shared memory per block and what a kernel's shared copy of the offsets can hold in what
// its stages and buffers leave.
#pragma once

#include "kernels/common/contract.h"

namespace ggemm::sm90 {

constexpr int kSharedMemoryLimit = 227 * 1024;  // per block (opt-in)

// The experts whose offsets (and whatever else a kernel keeps per expert: bytes_per_expert in
// all) fit in `bytes` of shared memory: whole groups of 32 (one per warp lane), at most the
// contract's kMaxExperts.
constexpr int offset_capacity(int bytes, int bytes_per_expert = 4) {
    return bytes / bytes_per_expert / 32 * 32 >= kMaxExperts ? kMaxExperts : bytes / bytes_per_expert / 32 * 32;
}

}  // namespace ggemm::sm90
