// The NCCL backend on real GPUs: every collective, in and out of place, over every local GPU driven by
// one process (--gpus-per-process semantics) and over one GPU (world size 1), checked element by element.
// Skips, saying why, where no GPU is usable.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <vector>

#include "comm/bootstrap_single.h"
#include "comm/collectives/check.h"
#include "comm/nccl/nccl_communicator.h"
#include "kernels/cuda/device_count.h"

namespace ts {
namespace {

void runAll(int gpus) {
  SingleBootstrap boot;
  NcclCommunicator comm(boot, GpuChoice{gpus, -1});
  ASSERT_EQ(comm.worldSize(), gpus);
  for (const Collective* c : allCollectives()) {
    for (DType t : {DType::kFloat32, DType::kBFloat16, DType::kInt32}) {
      for (RedOp op : c->reduces() ? allRedOps() : std::vector<RedOp>{RedOp::kSum}) {
        // alltoallv: uniform counts (no matrix) and the skewed ones, whose zero blocks are sends and receives left out
        std::vector<std::shared_ptr<const ExchangeMatrix>> patterns = {nullptr};
        if (c->perPairCounts()) patterns.push_back(std::make_shared<const ExchangeMatrix>(ExchangeMatrix::skewed(gpus)));
        for (const auto& exchange : patterns)
          for (bool inPlace : {false, true}) {
            if (inPlace && !comm.supportsInPlace(*c)) continue;
            CollectiveArgs a{t, op, 0, gpus};
            a.exchange = exchange;
            const CollectiveLayout lay = c->layout(std::size_t{1} << 20, dtypeSize(t), gpus, exchange.get());
            std::vector<CommBuffer> A, B;
            std::vector<std::vector<unsigned char>> host(gpus, std::vector<unsigned char>(std::size_t{1} << 20));
            std::vector<void*> send(gpus), recv(gpus);
            for (int l = 0; l < gpus; ++l) {
              A.emplace_back(comm, l, std::size_t{1} << 20);
              B.emplace_back(comm, l, std::size_t{1} << 20);
              const InPlaceGeometry g = c->inPlace(comm.rank(l), lay);
              char* base = static_cast<char*>(A[l].get());
              send[l] = inPlace ? (g.outputInsideInput ? base : base + g.offsetElems * dtypeSize(t)) : base;
              recv[l] = inPlace ? (g.outputInsideInput ? base + g.offsetElems * dtypeSize(t) : base) : B[l].get();
              fillInput(*c, a, comm.rank(l), lay, host[l].data());
              comm.copyIn(l, send[l], host[l].data(), lay.sendElems * dtypeSize(t));
            }
            comm.groupStart();
            for (int l = 0; l < gpus; ++l) c->launch(comm, l, send[l], recv[l], lay, a);
            comm.groupEnd();
            comm.synchronize(60);
            for (int l = 0; l < gpus; ++l) {
              comm.copyOut(l, host[l].data(), recv[l], lay.recvElems * dtypeSize(t));
              const CheckResult r = checkOutput(*c, a, comm.rank(l), lay, host[l].data());
              EXPECT_EQ(r.wrong, 0u) << c->name() << " " << dtypeName(t) << " " << redOpName(op) << (inPlace ? " in-place" : "")
                                     << (exchange ? " skewed" : "") << " rank " << comm.rank(l);
            }
          }
      }
    }
  }
}

}  // namespace

TEST(NcclWorld, OneGpu) {
  if (cuda::usableDeviceCount() < 1) GTEST_SKIP() << "no CUDA GPU is usable here (cudaGetDeviceCount found none)";
  runAll(1);
}

// Issue #33: a pipeline stage posts each send with the receive beside it in one NCCL group
// (Communicator::startTogether), its completion event recorded after the group. At world size 1 a rank that
// sends GPT-2-sized activations (25 MB) to itself and receives them is the smallest case where a send must
// progress beside a receive: posted one after the other on the stream, the send, larger than NCCL's
// buffering, would wait for a receive queued behind it (the wait below then fails after 30 s).
TEST(NcclWorld, ASendAndTheReceivePostedWithItComplete) {
  if (cuda::usableDeviceCount() < 1) GTEST_SKIP() << "no CUDA GPU is usable here (cudaGetDeviceCount found none)";
  SingleBootstrap boot;
  NcclCommunicator comm(boot, GpuChoice{1, -1});
  constexpr std::size_t kCount = 25'000'000 / sizeof(float);
  CommBuffer a(comm, 0, kCount * sizeof(float)), b(comm, 0, kCount * sizeof(float));
  std::vector<float> host(kCount);
  for (std::size_t i = 0; i < kCount; ++i) host[i] = static_cast<float>(i % 4093);
  comm.copyIn(0, a.get(), host.data(), kCount * sizeof(float));
  const std::vector<PointToPoint> ops = {{PointToPoint::Kind::kSend, a.get(), kCount, DType::kFloat32, 0, 0},
                                         {PointToPoint::Kind::kRecv, b.get(), kCount, DType::kFloat32, 0, 0}};
  comm.startTogether(0, ops)->wait(30);
  std::vector<float> got(kCount, -1.0f);
  comm.copyOut(0, got.data(), b.get(), kCount * sizeof(float));
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < kCount; ++i) wrong += got[i] != host[i];
  EXPECT_EQ(wrong, 0u);
}

TEST(NcclWorld, AllLocalGpusFromOneProcess) {
  const int n = cuda::usableDeviceCount();
  if (n < 2) GTEST_SKIP() << "needs at least 2 GPUs on this host, found " << n;
  runAll(n);
}

}  // namespace ts
