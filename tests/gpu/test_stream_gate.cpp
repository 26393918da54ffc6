// The stream gate (kernels/cuda/stream_gate.h) on a GPU: a gate opened in time lets the timing stand; one
// that gave up by itself (the host took longer to queue than its limit, issue #33) says so, and the timing
// refuses to record the host's gaps. Skips where no GPU is usable.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "base/error.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_resources.h"
#include "kernels/cuda/stream_gate.h"
#include "tests/gpu/gpu_test_support.h"

namespace ts {
namespace {

TEST(StreamGate, OpenedInTimeItIsNotExpired) {
  REQUIRE_GPU();
  cuda::Stream stream;
  cuda::StreamGate gate;
  gate.close(stream.get());
  gate.open();
  CUDA_CHECK(cudaStreamSynchronize(stream.get()));
  EXPECT_FALSE(gate.expired());
  EXPECT_NO_THROW(gate.checkOpenedInTime("a timing"));
}

TEST(StreamGate, AGateThatGaveUpFailsTheTiming) {
  REQUIRE_GPU();
  cuda::Stream stream;
  cuda::StreamGate gate;
  gate.close(stream.get(), 1'000'000);  // 1 ms
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  gate.open();
  CUDA_CHECK(cudaStreamSynchronize(stream.get()));
  EXPECT_TRUE(gate.expired());
  try {
    gate.checkOpenedInTime("timing 20 iteration(s)");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("timing 20 iteration(s): the stream gate gave up after 0.001 s"), std::string::npos)
        << e.what();
  }
  // Closed again, it starts afresh.
  gate.close(stream.get());
  gate.open();
  CUDA_CHECK(cudaStreamSynchronize(stream.get()));
  EXPECT_FALSE(gate.expired());
}

}  // namespace
}  // namespace ts
