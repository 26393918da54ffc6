// The CUPTI activity trace behind `--trace` on GPUs: a memcpy, a memset and a kernel on a stream of our own
// come back as spans with the right names, stream, bytes, grid/block and launching runtime call, placed on
// the host's steady clock inside the host's brackets of the work. Skips where no GPU is usable, or in a
// build without CUPTI.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <vector>

#include "kernels/cuda/memory_stream.h"
#include "kernels/trace.h"
#include "tests/gpu/gpu_test_support.h"
#ifdef TRAINSCOPE_HAVE_CUPTI
#include "kernels/cuda/cupti_activity.h"
#endif

namespace ts {
namespace {

#ifdef TRAINSCOPE_HAVE_CUPTI
const cuda::DeviceSpan* find(const std::vector<cuda::DeviceSpan>& spans, cuda::DeviceSpan::Kind kind, const std::string& part) {
  for (const auto& s : spans)
    if (s.kind == kind && s.name.find(part) != std::string::npos) return &s;
  return nullptr;
}
#endif

TEST(CuptiActivity, KernelMemcpyAndMemsetOnTheHostClock) {
  REQUIRE_GPU();
#ifndef TRAINSCOPE_HAVE_CUPTI
  GTEST_SKIP() << "built without CUPTI";
#else
  constexpr std::size_t kBytes = 8u << 20;
  std::optional<cuda::Stream> owned(std::in_place);  // destroyed before the second trace, below
  const cudaStream_t stream = owned->get();
  Dev<char> a(kBytes), b(kBytes);
  std::vector<char> host(kBytes, 1);
  CUDA_CHECK(cudaDeviceSynchronize());

  cuda::ActivityTrace t;
  EXPECT_LT(t.clockUncertaintyUs(), 100.0);  // the tightest bracket of cuptiGetTimestamp
  const double before = trace::nowUs();
  CUDA_CHECK(cudaMemcpyAsync(a.p, host.data(), kBytes, cudaMemcpyHostToDevice, stream));
  CUDA_CHECK(cudaMemsetAsync(b.p, 0, kBytes, stream));
  cuda::smCopy(b.p, a.p, kBytes, 4, stream);
  CUDA_CHECK(cudaStreamSynchronize(stream));
  const double after = trace::nowUs();
  const std::vector<cuda::DeviceSpan> spans = t.finish();
  EXPECT_EQ(t.droppedRecords(), 0u);
  EXPECT_EQ(t.incompleteRecords(), 0u);

  using K = cuda::DeviceSpan::Kind;
  const cuda::DeviceSpan* copy = find(spans, K::kMemcpy, "Memcpy HtoD");
  const cuda::DeviceSpan* set = find(spans, K::kMemset, "Memset");
  const cuda::DeviceSpan* kernel = find(spans, K::kKernel, "copy16");
  ASSERT_TRUE(copy && set && kernel);
  EXPECT_EQ(kernel->name.find("ts::cuda::"), 0u) << kernel->name;  // demangled
  EXPECT_EQ(copy->bytes, kBytes);
  EXPECT_EQ(set->bytes, kBytes);
  EXPECT_EQ(kernel->grid[0], 16);  // smCopy: 4 blocks per SM asked for
  EXPECT_EQ(kernel->block[0], 512);
  int device = -1;
  CUDA_CHECK(cudaGetDevice(&device));
  for (const cuda::DeviceSpan* s : {copy, set, kernel}) {
    EXPECT_EQ(s->stream, kernel->stream) << s->name;  // one stream (CUPTI's id for it)
    EXPECT_EQ(s->device, static_cast<std::uint32_t>(device)) << s->name;
    // On the host's clock, inside the host's brackets, within what the conversion states it may be off by
    // there (its offset's uncertainty, the clocks' drift since, the nanosecond tick).
    EXPECT_GE(s->startUs, before - t.clockErrorUs(before)) << s->name;
    EXPECT_LE(s->endUs, after + t.clockErrorUs(after)) << s->name;
    EXPECT_LE(s->startUs, s->endUs) << s->name;
  }
  // One stream: in order. Both ends read the same device clock and go through the same offset, so only the
  // nanosecond tick separates them.
  constexpr double kTick = cuda::ActivityTrace::kTimestampTickUs;
  EXPECT_LE(copy->endUs, set->startUs + kTick);
  EXPECT_LE(set->endUs, kernel->startUs + kTick);
  // Each one names the runtime call that launched it, and that call is among the spans, same correlation id.
  EXPECT_EQ(copy->launch.rfind("cudaMemcpyAsync", 0), 0u) << copy->launch;
  EXPECT_EQ(set->launch.rfind("cudaMemsetAsync", 0), 0u) << set->launch;
  EXPECT_EQ(kernel->launch.rfind("cudaLaunchKernel", 0), 0u) << kernel->launch;
  EXPECT_TRUE(std::any_of(spans.begin(), spans.end(), [&](const cuda::DeviceSpan& s) {
    // CUPTI puts host-side (API) and device-side timestamps on one clock itself; it states no error for
    // that, so the conversion's bound stands in for it.
    return s.kind == K::kRuntimeApi && s.correlation == kernel->correlation &&
           s.startUs <= kernel->startUs + t.clockErrorUs(kernel->startUs);
  }));
  owned.reset();

  cuda::ActivityTrace again;  // one at a time, not one per process
  CUDA_CHECK(cudaMemsetAsync(b.p, 1, 1024, nullptr));
  CUDA_CHECK(cudaDeviceSynchronize());
  const std::vector<cuda::DeviceSpan> second = again.finish();
  EXPECT_TRUE(find(second, K::kMemset, "Memset"));
  EXPECT_FALSE(find(second, K::kKernel, "copy16"));  // the first trace's spans went with it
#endif
}

}  // namespace
}  // namespace ts
