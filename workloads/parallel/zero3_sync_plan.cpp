// Zero3Sync's plan (SyncPlan): its ops written down in Zero3Order's order (the one the sync runs), on the same
// groups (a Buckets of one bucket per group, the leading one first): an all-gather issued and waited for where the
// sync's would be, a reduce-scatter where its gradients are sent and retired.
#include "comm/collectives/collective.h"
#include "workloads/parallel/bucket_plan.h"
#include "workloads/parallel/zero3_sync.h"

namespace ts::wl {
namespace {

class Zero3Plan final : public SyncPlan, private Zero3Order {
 public:
  Zero3Plan(const ModelPart& part, const LayoutOptions& layout, int replica, StepPlan& plan, PlanGroup dp)
      : Zero3Plan(zero3GroupsOf(part, dp.size), layout, replica, plan, std::move(dp)) {}
  void beforeForward(PlanContext& ctx) override {
    hook(ctx);
    forwardStarts();
  }
  void beforeBackward(PlanContext& ctx, bool) override {
    ctx.gradsReady = nullptr;
    hook(ctx);
    backwardStarts();
  }
  void afterBackward(bool last) override { backwardEnds(last); }
  void globalSumOfSquares() override { plan_.sum(1, dp_); }
  std::uint64_t updateElements() const override {
    std::uint64_t n = 0;
    for (const Group& g : groups_) n += g.owned;
    return n;
  }

 private:
  // dp by reference: the public constructor reads its size for the groups in the same call.
  Zero3Plan(const Zero3Groups& groups, const LayoutOptions& layout, int replica, StepPlan& plan, PlanGroup&& dp)
      : Zero3Order(groups.layouts.size(), groups.leading, layout.prefetch),
        plan_(plan),
        dp_(std::move(dp)),
        groupOf_(groups.ofLayer) {
    for (const auto& buckets : groups.layouts) {
      const Bucket& b = buckets->all().front();
      groups_.push_back({b.chunk, coveredBy(b, replica)});
    }
  }
  struct Group {
    std::size_t chunk, owned;  // elements per rank; of this rank's chunk, the parameters' (not padding)
    int gatherOp = -1, op = -1;
  };
  void issueGather(std::size_t g) override {
    groups_[g].gatherOp = plan_.issue(collectives::all_gather(), groups_[g].chunk, sizeof(float), dp_, CallPlacement::kInPlace);
  }
  void waitGather(std::size_t g) override { plan_.wait(groups_[g].gatherOp); }
  void dropGathered(std::size_t) override {}
  void issueGradients(std::size_t g) override {
    groups_[g].op = plan_.issue(collectives::reduce_scatter(), groups_[g].chunk, sizeof(float), dp_, CallPlacement::kInPlace);
  }
  void retireGradients(std::size_t g) override { plan_.wait(groups_[g].op); }
  void waitAll() override { plan_.waitAll(dp_); }
  void hook(PlanContext& ctx) {
    ctx.beforeForward = [this](std::size_t l) { layerForwardStarts(groupOf_[l]); };
    ctx.afterForward = [this](std::size_t l) { layerForwardEnds(groupOf_[l]); };
    ctx.beforeBackward = [this](std::size_t l) { layerBackwardStarts(groupOf_[l]); };
    ctx.afterBackward = [this](std::size_t l) { layerBackwardEnds(groupOf_[l]); };
  }
  StepPlan& plan_;
  PlanGroup dp_;
  std::vector<Group> groups_;
  std::vector<std::size_t> groupOf_;  // per layer of the part: its group, kNone (SIZE_MAX) for none
};

}  // namespace

std::unique_ptr<SyncPlan> zero3SyncPlan(const ModelPart& part, const LayoutOptions& layout, int replica, StepPlan& plan,
                                        PlanGroup dp) {
  return std::make_unique<Zero3Plan>(part, layout, replica, plan, std::move(dp));
}

}  // namespace ts::wl
