// The mixture-of-experts routing kernels (kernels/cuda/moe_routing.cu) against their CPU functions
// (kernels/cpu/moe_routing.cpp) on random inputs: the routing decisions (top-k choices, slots, routed counts) equal,
// the gates and every float output bit-equal where the CPU build rounds each step (x86-64 without FMA, the default),
// else within 1e-6; a capacity small enough to drop assignments. Skips, saying why, where no GPU is usable.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "kernels/cpu/cpu_ops.h"
#include "kernels/cuda/cuda_ops.h"
#include "tests/gpu/gpu_test_support.h"

namespace ts {
namespace {

std::vector<float> randomFloats(std::size_t n, unsigned seed, float lo = -1, float hi = 1) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = u(g);
  return v;
}

// Rows of probabilities (a softmax's) over E experts.
std::vector<float> probabilities(std::size_t N, std::size_t E, unsigned seed) {
  std::vector<float> logits = randomFloats(N * E, seed, -3, 3), probs(N * E);
  cpu::softmaxForward(probs.data(), logits.data(), N, E);
  return probs;
}

void expectClose(const std::vector<float>& got, const std::vector<float>& want, const char* what) {
  EXPECT_LE(maxRel(got, want), 1e-6) << what;
}

class MoeRouting : public ::testing::TestWithParam<int> {};

TEST_P(MoeRouting, TheCudaOpsAreTheCpuOnes) {
  REQUIRE_GPU();
  const std::size_t N = 1000, E = 8, C = 33, k = static_cast<std::size_t>(GetParam()), capacity = N * k / E * 3 / 4;
  const std::vector<float> probs = probabilities(N, E, 1);
  std::vector<int> expert(N * k), slot(N * k), routed(E);
  std::vector<float> gate(N * k);
  cpu::moeTopK(expert.data(), gate.data(), probs.data(), N, E, k);
  cpu::moeAssign(slot.data(), routed.data(), expert.data(), N, k, E, capacity);
  Dev<float> dProbs(probs), dGate(N * k);
  Dev<int> dExpert(N * k), dSlot(N * k), dRouted(E);
  cuda::moeTopK(dExpert.p, dGate.p, dProbs.p, N, E, k, nullptr);
  cuda::moeAssign(dSlot.p, dRouted.p, dExpert.p, N, k, E, capacity, nullptr);
  CUDA_CHECK(cudaDeviceSynchronize());
  EXPECT_EQ(dExpert.host(), expert);
  EXPECT_EQ(dSlot.host(), slot);
  EXPECT_EQ(dRouted.host(), routed);
  expectClose(dGate.host(), gate, "gate");
  int dropped = 0;
  for (int s : slot) dropped += s < 0;
  EXPECT_GT(dropped, 0) << "the capacity drops some assignments";

  const std::vector<float> x = randomFloats(N * C, 2), out = randomFloats(E * capacity * C, 3), dy = randomFloats(N * C, 4);
  std::vector<float> buf(E * capacity * C, 0.0f), y(N * C), dout(E * capacity * C, 0.0f), dgate(N * k), dx(N * C);
  cpu::moeDispatch(buf.data(), x.data(), slot.data(), N, k, C);
  cpu::moeCombine(y.data(), out.data(), gate.data(), slot.data(), N, k, C);
  cpu::moeCombineBackward(dout.data(), dgate.data(), dy.data(), out.data(), gate.data(), slot.data(), N, k, C);
  cpu::moeDispatchBackward(dx.data(), out.data(), slot.data(), N, k, C);
  const std::vector<float> aux = randomFloats(E, 5);
  std::vector<float> dprobs(N * E);
  cpu::moeGateBackward(dprobs.data(), dgate.data(), probs.data(), expert.data(), aux.data(), N, E, k);

  Dev<float> dX(x), dOut(out), dDy(dy), dBuf(E * capacity * C, false), dY(N * C), dDout(E * capacity * C, false), dDgate(N * k),
      dDx(N * C), dAux(aux), dDprobs(N * E);
  cuda::moeDispatch(dBuf.p, dX.p, dSlot.p, N, k, C, nullptr);
  cuda::moeCombine(dY.p, dOut.p, dGate.p, dSlot.p, N, k, C, nullptr);
  cuda::moeCombineBackward(dDout.p, dDgate.p, dDy.p, dOut.p, dGate.p, dSlot.p, N, k, C, nullptr);
  cuda::moeDispatchBackward(dDx.p, dOut.p, dSlot.p, N, k, C, nullptr);
  cuda::moeGateBackward(dDprobs.p, dDgate.p, dProbs.p, dExpert.p, dAux.p, N, E, k, nullptr);
  CUDA_CHECK(cudaDeviceSynchronize());
  EXPECT_EQ(dBuf.host(), buf);  // copies: exact
  expectClose(dY.host(), y, "combine");
  expectClose(dDout.host(), dout, "combine backward: dout");
  expectClose(dDgate.host(), dgate, "combine backward: dgate");
  expectClose(dDx.host(), dx, "dispatch backward");
  expectClose(dDprobs.host(), dprobs, "gate backward");
}

INSTANTIATE_TEST_SUITE_P(TopK, MoeRouting, ::testing::Values(1, 2),
                         [](const auto& info) { return "k" + std::to_string(info.param); });

}  // namespace
}  // namespace ts
