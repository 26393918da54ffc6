#pragma once
// Helpers of the unit tests of layers and models: a tensor filled with seeded uniform values, and the activation
// bytes the host device holds now. One definition here, not one per test file: a unity build (-DCMAKE_UNITY_BUILD=ON)
// compiles several test files as one, where two definitions of one helper collide.
#include <cstddef>
#include <random>

#include "workloads/device.h"
#include "workloads/memory.h"
#include "workloads/tensor.h"

namespace ts::wl::test {

inline void fillRandom(const Tensor& t, unsigned seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  for (std::size_t i = 0; i < t.numel(); ++i) t.data[i] = u(g);
}

inline std::size_t activationBytes() { return Device::hostCpu().memory().inUseOf(MemoryKind::kActivations); }

}  // namespace ts::wl::test
