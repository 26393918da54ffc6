// Which GPUs each process drives on the NCCL backend (comm/gpu_plan.h), on hosts of 1, 2 and 8 GPUs: by local
// rank, several per process, all of them, a named first GPU shared by every process; and each refusal says
// what to do instead.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/error.h"
#include "comm/gpu_plan.h"

namespace ts {
namespace {

using Gpus = std::vector<int>;

std::string refusal(const GpuChoice& c, int localRank, int visible) {
  try {
    planLocalGpus(c, localRank, visible);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

TEST(GpuPlan, OneGpuPerProcessByLocalRank) {
  for (int local = 0; local < 8; ++local) EXPECT_EQ(planLocalGpus({1, -1}, local, 8), Gpus{local});
  EXPECT_EQ(planLocalGpus({1, -1}, 1, 2), Gpus{1});
  EXPECT_EQ(planLocalGpus({1, -1}, 0, 1), Gpus{0});
}

TEST(GpuPlan, SeveralGpusPerProcessAreConsecutive) {
  EXPECT_EQ(planLocalGpus({4, -1}, 0, 8), (Gpus{0, 1, 2, 3}));
  EXPECT_EQ(planLocalGpus({4, -1}, 1, 8), (Gpus{4, 5, 6, 7}));
  EXPECT_EQ(planLocalGpus({2, -1}, 3, 8), (Gpus{6, 7}));
  EXPECT_EQ(planLocalGpus({0, -1}, 0, 8), (Gpus{0, 1, 2, 3, 4, 5, 6, 7}));  // 0: every GPU
  EXPECT_EQ(planLocalGpus({0, -1}, 0, 1), Gpus{0});
}

TEST(GpuPlan, ANamedGpuIsEveryProcessesFirst) {
  for (int local = 0; local < 4; ++local) EXPECT_EQ(planLocalGpus({1, 0}, local, 1), Gpus{0});  // sharing one GPU
  EXPECT_EQ(planLocalGpus({1, 5}, 3, 8), Gpus{5});
  EXPECT_EQ(planLocalGpus({2, 6}, 1, 8), (Gpus{6, 7}));
  EXPECT_EQ(planLocalGpus({0, 6}, 0, 8), (Gpus{6, 7}));  // from GPU 6 to the last
}

TEST(GpuPlan, MoreLocalProcessesThanGpusIsRefusedWithBothWaysOut) {
  const std::string why = refusal({1, -1}, 1, 1);
  EXPECT_NE(why.find("this host has 1 GPU and runs 2 or more processes of this job, 1 GPU each"), std::string::npos) << why;
  EXPECT_NE(why.find("its local process 1 would drive cuda:1"), std::string::npos) << why;
  EXPECT_NE(why.find("Start at most 1 process per host"), std::string::npos) << why;
  EXPECT_NE(why.find("--device cuda:0 and a distinct NCCL_HOSTID for each process"), std::string::npos) << why;
  EXPECT_NE(refusal({1, -1}, 8, 8).find("would drive cuda:8. Start at most 8 processes per host"), std::string::npos);
  EXPECT_NE(refusal({4, -1}, 2, 8).find("would drive cuda:8..cuda:11. Start at most 2 processes per host"), std::string::npos);
  EXPECT_NE(refusal({0, -1}, 1, 2).find("would drive cuda:2..cuda:3. Start at most 1 process per host"), std::string::npos);
}

TEST(GpuPlan, MoreGpusPerProcessThanTheHostHasIsRefused) {
  EXPECT_EQ(refusal({4, -1}, 0, 2), "--gpus-per-process 4 asks for more GPUs than this host has (2)");
  EXPECT_EQ(refusal({9, -1}, 0, 8), "--gpus-per-process 9 asks for more GPUs than this host has (8)");
  EXPECT_EQ(refusal({-1, -1}, 0, 8), "--gpus-per-process -1 cannot be negative");
}

TEST(GpuPlan, ANamedGpuThatIsNotThereIsRefused) {
  EXPECT_EQ(refusal({1, 1}, 0, 1), "--device cuda:1: this host has 1 GPU (cuda:0..cuda:0)");
  EXPECT_EQ(refusal({1, 8}, 0, 8), "--device cuda:8: this host has 8 GPUs (cuda:0..cuda:7)");
  EXPECT_EQ(refusal({2, 7}, 0, 8), "--device cuda:7 with --gpus-per-process 2: this host has 8 GPUs (cuda:0..cuda:7)");
}

}  // namespace
}  // namespace ts
