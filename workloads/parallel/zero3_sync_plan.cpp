// Zero3Sync's plan (SyncPlan): its hooks' ops in their order, on the same groups (a Buckets of one bucket per
// group, the leading one first), with the same state per group: gathered or not, a gather in flight (a prefetch),
// its gradients in flight. Each function here is the one of zero3_sync.cpp by the same name, writing its ops.
#include "comm/collectives/collective.h"
#include "workloads/parallel/bucket_plan.h"
#include "workloads/parallel/zero3_sync.h"

namespace ts::wl {
namespace {

class Zero3Plan final : public SyncPlan {
 public:
  Zero3Plan(const ModelPart& part, const LayoutOptions& layout, int replica, StepPlan& plan, PlanGroup dp)
      : plan_(plan), dp_(std::move(dp)), prefetch_(layout.prefetch) {
    const Zero3Groups groups = zero3GroupsOf(part, dp_.size);
    for (const auto& buckets : groups.layouts) {
      const Bucket& b = buckets->all().front();
      groups_.push_back({b.chunk, coveredBy(b, replica)});
    }
    groupOf_ = groups.ofLayer;
    if (groups.leading) {
      leading_ = 0;
      firstLayer_ = 1;
    }
  }
  void beforeForward(PlanContext& ctx) override {
    hook(ctx);
    if (leading_ == SIZE_MAX) return;
    gather(leading_);
    prefetch(leading_, true);
  }
  void beforeBackward(PlanContext& ctx, bool) override {
    ctx.gradsReady = nullptr;
    hook(ctx);
    if (leading_ != SIZE_MAX) takeGradients();
  }
  void afterBackward(bool last) override {
    if (leading_ != SIZE_MAX) sendGradients(leading_);
    takeGradients();  // every one sent retired
    for (std::size_t i = firstLayer_; i < groups_.size(); ++i) release(i);
    plan_.waitAll(dp_);
    if (last && leading_ != SIZE_MAX) release(leading_);
  }
  void globalSumOfSquares() override { plan_.sum(1, dp_); }
  std::uint64_t updateElements() const override {
    std::uint64_t n = 0;
    for (const Group& g : groups_) n += g.owned;
    return n;
  }

 private:
  struct Group {
    std::size_t chunk, owned;  // elements per rank; of this rank's chunk, the parameters' (not padding)
    bool gathered = false;
    int gatherOp = -1, op = -1;
  };
  void startGather(std::size_t i) {
    Group& g = groups_[i];
    if (g.gathered) return;
    g.gathered = true;
    g.gatherOp = plan_.issue(collectives::all_gather(), g.chunk, sizeof(float), dp_);
  }
  void gather(std::size_t i) {
    startGather(i);
    if (groups_[i].gatherOp < 0) return;
    plan_.wait(groups_[i].gatherOp);
    groups_[i].gatherOp = -1;
  }
  void prefetch(std::size_t from, bool forward) {
    std::size_t i = from;
    for (int k = 0; k < prefetch_; ++k) {
      if (forward ? i + 1 >= groups_.size() : i <= firstLayer_) break;
      i = forward ? i + 1 : i - 1;
      startGather(i);
    }
  }
  void release(std::size_t i) {
    if (!groups_[i].gathered) return;
    gather(i);
    groups_[i].gathered = false;
  }
  void takeGradients() {  // the oldest in flight retired first
    for (std::size_t i : sent_) plan_.wait(groups_[i].op);
    sent_.clear();
  }
  void sendGradients(std::size_t i) {
    groups_[i].op = plan_.issue(collectives::reduce_scatter(), groups_[i].chunk, sizeof(float), dp_);
    sent_.push_back(i);
  }
  void hook(PlanContext& ctx);
  StepPlan& plan_;
  PlanGroup dp_;
  int prefetch_;
  std::vector<Group> groups_;
  std::vector<std::size_t> groupOf_;  // per layer of the part: its group, SIZE_MAX for none
  std::size_t leading_ = SIZE_MAX, firstLayer_ = 0;
  std::vector<std::size_t> sent_;
};

void Zero3Plan::hook(PlanContext& ctx) {
  ctx.beforeForward = [this](std::size_t l) {
    if (groupOf_[l] == SIZE_MAX) return;
    gather(groupOf_[l]);
    prefetch(groupOf_[l], true);
  };
  ctx.afterForward = [this](std::size_t l) {
    if (groupOf_[l] != SIZE_MAX && groupOf_[l] + 1 != groups_.size()) release(groupOf_[l]);  // the last stays
  };
  ctx.beforeBackward = [this](std::size_t l) {
    if (groupOf_[l] == SIZE_MAX) return;
    takeGradients();
    gather(groupOf_[l]);
    prefetch(groupOf_[l], false);
  };
  ctx.afterBackward = [this](std::size_t l) {
    if (groupOf_[l] == SIZE_MAX) return;
    sendGradients(groupOf_[l]);
    release(groupOf_[l]);
  };
}

}  // namespace

std::unique_ptr<SyncPlan> zero3SyncPlan(const ModelPart& part, const LayoutOptions& layout, int replica, StepPlan& plan,
                                        PlanGroup dp) {
  return std::make_unique<Zero3Plan>(part, layout, replica, plan, std::move(dp));
}

}  // namespace ts::wl
