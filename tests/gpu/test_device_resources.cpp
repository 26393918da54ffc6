// The owners of kernels/cuda/device_resources.h on a real GPU: a buffer moves and round-trips through
// release/adopt, an allocation too large fails without leaving an error behind, a capture an exception
// interrupts leaves its stream usable, a graph replays, and an owner made on one GPU is released there
// without changing the caller's current GPU. Skips, saying why, where no GPU is usable.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_count.h"
#include "kernels/cuda/device_resources.h"
#include "tests/gpu/gpu_test_support.h"

namespace ts {
namespace {

std::vector<unsigned char> download(const void* p, std::size_t bytes) {
  std::vector<unsigned char> h(bytes);
  CUDA_CHECK(cudaMemcpy(h.data(), p, bytes, cudaMemcpyDeviceToHost));
  return h;
}

}  // namespace

TEST(DeviceResources, BufferMovesAndRoundTripsThroughReleaseAndAdopt) {
  REQUIRE_GPU();
  cuda::DeviceBuffer a(64);
  ASSERT_TRUE(a);
  EXPECT_EQ(a.bytes(), 64u);
  CUDA_CHECK(cudaMemset(a.get(), 0x2a, 64));
  cuda::DeviceBuffer b = std::move(a);
  EXPECT_FALSE(a);
  EXPECT_EQ(a.bytes(), 0u);
  void* raw = b.release();
  EXPECT_FALSE(b);
  EXPECT_EQ(download(raw, 64), std::vector<unsigned char>(64, 0x2a));
  cuda::DeviceBuffer back = cuda::DeviceBuffer::adopt(raw);
  EXPECT_EQ(back.get(), raw);
  back.reset();
  EXPECT_FALSE(back);
  EXPECT_FALSE(cuda::DeviceBuffer(0));  // nothing allocated for zero bytes
}

TEST(DeviceResources, TooLargeAnAllocationFailsCleanly) {
  REQUIRE_GPU();
  cudaError_t rc = cudaSuccess;
  const cuda::DeviceBuffer b = cuda::DeviceBuffer::tryAllocate(std::size_t{1} << 60, rc);
  EXPECT_FALSE(b);
  EXPECT_EQ(rc, cudaErrorMemoryAllocation);
  EXPECT_EQ(cudaPeekAtLastError(), cudaSuccess);
  EXPECT_THROW(cuda::DeviceBuffer(std::size_t{1} << 60), Error);
}

TEST(DeviceResources, AnInterruptedCaptureLeavesTheStreamUsable) {
  REQUIRE_GPU();
  cuda::Stream stream;
  cuda::DeviceBuffer buf(256);
  EXPECT_THROW(
      {
        cuda::StreamCapture capture(stream.get());
        CUDA_CHECK(cudaMemsetAsync(buf.get(), 1, 256, stream.get()));
        throw std::runtime_error("interrupted");
      },
      std::runtime_error);
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusActive;
  CUDA_CHECK(cudaStreamIsCapturing(stream.get(), &status));
  EXPECT_EQ(status, cudaStreamCaptureStatusNone);
  CUDA_CHECK(cudaMemsetAsync(buf.get(), 3, 256, stream.get()));
  CUDA_CHECK(cudaStreamSynchronize(stream.get()));
  EXPECT_EQ(download(buf.get(), 256), std::vector<unsigned char>(256, 3));
}

TEST(DeviceResources, ACapturedGraphReplays) {
  REQUIRE_GPU();
  cuda::Stream stream;
  cuda::DeviceBuffer buf(256);
  CUDA_CHECK(cudaMemset(buf.get(), 0, 256));
  cuda::StreamCapture capture(stream.get());
  CUDA_CHECK(cudaMemsetAsync(buf.get(), 7, 256, stream.get()));
  const cuda::Graph graph = capture.end();
  EXPECT_EQ(download(buf.get(), 256), std::vector<unsigned char>(256, 0));  // captured, not run
  graph.launch(stream.get());
  graph.launch(stream.get());
  CUDA_CHECK(cudaStreamSynchronize(stream.get()));
  EXPECT_EQ(download(buf.get(), 256), std::vector<unsigned char>(256, 7));
}

TEST(DeviceResources, EventsTimeTheWorkBetweenThem) {
  REQUIRE_GPU();
  cuda::Stream stream;
  cuda::DeviceBuffer buf(64u << 20);
  const std::vector<cuda::Event> ev = cuda::makeEvents(2);
  ev[0].record(stream.get());
  CUDA_CHECK(cudaMemsetAsync(buf.get(), 1, buf.bytes(), stream.get()));
  ev[1].record(stream.get());
  CUDA_CHECK(cudaStreamSynchronize(stream.get()));
  EXPECT_GT(cuda::elapsedMs(ev[0], ev[1]), 0.0f);
}

TEST(DeviceResources, OwnersAreReleasedOnTheirGpuWithoutMovingTheCallers) {
  REQUIRE_GPU();
  if (cuda::usableDeviceCount() < 2) GTEST_SKIP() << "needs two GPUs";
  CUDA_CHECK(cudaSetDevice(1));
  auto stream = std::make_unique<cuda::Stream>();
  auto event = std::make_unique<cuda::Event>();
  auto buf = std::make_unique<cuda::DeviceBuffer>(1024);
  CUDA_CHECK(cudaSetDevice(0));
  stream.reset();
  event.reset();
  buf.reset();
  EXPECT_EQ(cuda::currentDevice(), 0);
  EXPECT_EQ(cudaPeekAtLastError(), cudaSuccess);
}

}  // namespace ts
