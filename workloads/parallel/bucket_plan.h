#pragma once
// The plan (SyncPlan) of the layouts that send gradient buckets (all-reduce, ZeRO 1/2, the parameter server):
// the Buckets their class builds, from the same parameters, --bucket-mb and parts, and when each is launched:
// the moment the backward completes it (--overlap, StepContext::gradReady), or after the backward.
#include <vector>

#include "workloads/parallel/buckets.h"
#include "workloads/parallel/gradient_sync.h"

namespace ts::wl {

class BucketsPlan : public SyncPlan {
 protected:
  BucketsPlan(const ModelPart& part, const LayoutOptions& layout, int parts, StepPlan& plan, PlanGroup dp);
  // Every bucket launched as it completes (`communicates`: on this micro-batch's backward at all).
  void launchAsReady(PlanContext& ctx, bool communicates);
  void launchRest();  // the ones not launched yet
  virtual void launch(std::size_t bucket) = 0;
  const Bucket& bucket(std::size_t b) const { return buckets_.all()[b]; }
  std::size_t count() const { return buckets_.all().size(); }
  StepPlan& plan_;
  PlanGroup dp_;
  bool overlap_;

 private:
  Buckets buckets_;
  std::vector<std::size_t> readyAfter_;  // per bucket: the part's layer whose backward completes it
  std::vector<bool> launched_;
};

// The elements of chunk k of b that are parameters' (not its padding): what its owner updates.
std::size_t coveredBy(const Bucket& b, int k);

}  // namespace ts::wl
