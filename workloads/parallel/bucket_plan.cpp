#include "workloads/parallel/bucket_plan.h"

#include <algorithm>
#include <unordered_map>

namespace ts::wl {
namespace {

// Per bucket: the part's layer (its place in part.layers, PlanContext::kLeading for the leading parameters) whose
// backward completes it: the one of its last parameter in backward order.
std::vector<std::size_t> readyAfter(const std::vector<Bucket>& buckets, const ModelPart& part) {
  std::unordered_map<const Param*, std::size_t> layerOf;
  for (std::size_t i = 0; i < part.layers.size(); ++i) {
    std::vector<Param*> ps;
    part.layers[i]->params(ps);
    for (const Param* p : ps) layerOf[p] = i;
  }
  std::vector<std::size_t> out;
  for (const Bucket& b : buckets) {
    const auto it = layerOf.find(b.slots.back().param);
    out.push_back(it == layerOf.end() ? PlanContext::kLeading : it->second);
  }
  return out;
}

}  // namespace

BucketsPlan::BucketsPlan(const ModelPart& part, const LayoutOptions& layout, int parts, StepPlan& plan, PlanGroup dp)
    : plan_(plan),
      dp_(std::move(dp)),
      overlap_(layout.overlap),
      buckets_(part.params, layout.bucketMb, parts),
      readyAfter_(readyAfter(buckets_.all(), part)),
      launched_(buckets_.all().size(), false) {}

void BucketsPlan::launchAsReady(PlanContext& ctx, bool communicates) {
  launched_.assign(launched_.size(), false);  // Buckets::startMicroBatch
  ctx.gradsReady = nullptr;
  if (!communicates || !overlap_) return;
  ctx.gradsReady = [this](std::size_t layer) {
    for (std::size_t b = 0; b < launched_.size(); ++b)
      if (readyAfter_[b] == layer && !launched_[b]) {
        launched_[b] = true;
        launch(b);
      }
  };
}

void BucketsPlan::launchRest() {
  for (std::size_t b = 0; b < launched_.size(); ++b)
    if (!launched_[b]) {
      launched_[b] = true;
      launch(b);
    }
}

std::size_t coveredBy(const Bucket& b, int k) {
  const std::size_t lo = static_cast<std::size_t>(k) * b.chunk;
  return lo >= b.elements ? 0 : std::min(b.chunk, b.elements - lo);
}

}  // namespace ts::wl
