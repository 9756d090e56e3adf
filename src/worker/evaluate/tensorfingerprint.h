#pragma once
// The evaluator's check that a candidate did not write into the evaluator's own copies of its
// inputs and parameters (ownCopiesProblem, correctnessstage.cpp) compares these fingerprints, taken
// before and after the candidate ran. Declared apart so tests reach it without the evaluator.
#include <cstdint>
#include <vector>

namespace at {
class Tensor;
}

namespace kwb {

/// Per tensor, the sum (mod 2^64) of its bytes read as 64-bit words plus its last < 8 bytes,
/// computed where the tensor lives, with no copy of a contiguous tensor's data; an undefined or
/// empty tensor gives 0. All sums reach the host in one copy (one synchronisation).
std::vector<int64_t> byteFingerprints(const std::vector<at::Tensor>& tensors);

} // namespace kwb
