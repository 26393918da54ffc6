#pragma once
// The order of ZeRO-3's operations over its groups (zero3_sync.h): when each group's parameters are all-gathered,
// prefetched, waited for and let go, and when its gradients are taken, reduce-scattered and retired. One order, two
// executors: Zero3Sync runs it on the communicator (buffers, views, the tracker), its plan (train --plan) writes the
// same ops down (zero3_sync_plan.cpp). Written once here so that the plan a prediction replays cannot drift from the
// step that is measured.
//
// Groups are numbered as Zero3Groups lays them out: the leading parameters' group first when there is one (the
// embeddings, used outside the layers and gathered for the whole step), then each layer's that has parameters.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace ts::wl {

class Zero3Order {
 public:
  static constexpr std::size_t kNone = SIZE_MAX;  // a layer without parameters: no group
  Zero3Order(std::size_t groups, bool leading, int prefetch);
  virtual ~Zero3Order() = default;

  // Around one layer of the pass, with its group (kNone for a layer without parameters).
  void layerForwardStarts(std::size_t g);
  void layerForwardEnds(std::size_t g);
  void layerBackwardStarts(std::size_t g);
  void layerBackwardEnds(std::size_t g);
  // Around one micro-batch's passes: the leading group gathered before the forward, its gradients taken before the
  // backward and sent after it (the embeddings' backward runs after every layer's), everything settled after it.
  void forwardStarts();
  void forwardOnlyEnds();  // an evaluation: no backward follows, so every group still gathered goes
  void backwardStarts();
  void backwardEnds(bool lastMicroBatch);

  // Group g's values in place (issued if not yet, waited for) and given back.
  void gather(std::size_t g);
  void release(std::size_t g);
  bool gathered(std::size_t g) const { return state_[g].gathered; }
  std::size_t groups() const { return state_.size(); }

 protected:
  // The executor's part. issueGather starts g's all-gather into a buffer it takes; waitGather waits for it;
  // dropGathered gives the buffer back; takeGradientBuffer gives g's backward a buffer to write its gradients into;
  // issueGradients starts their reduce-scatter; retireGradients waits for it and keeps this rank's part; waitAll
  // settles every op in flight; poll enters the library so that what is in flight progresses (MPI moves a
  // nonblocking collective only when entered); microBatchEnds follows each backward.
  virtual void issueGather(std::size_t g) = 0;
  virtual void waitGather(std::size_t g) = 0;
  virtual void dropGathered(std::size_t g) = 0;
  virtual void takeGradientBuffer(std::size_t) {}
  virtual void issueGradients(std::size_t g) = 0;
  virtual void retireGradients(std::size_t g) = 0;
  virtual void waitAll() = 0;
  virtual void poll() {}
  virtual void microBatchEnds(bool) {}

 private:
  struct State {
    bool gathered = false;  // its values are (being) gathered into a buffer
    bool inFlight = false;  // that gather was issued and not yet waited for (a prefetch)
  };
  void startGather(std::size_t g);
  void prefetch(std::size_t from, bool forward);  // the next `prefetch_` layer groups of the pass after `from`
  void releaseLayers();                           // every layer group still gathered (not the leading one)
  void retireSent();                              // the gradients in flight retired, oldest first
  void sendGradients(std::size_t g);              // the ones sent before retired, then g's issued
  std::vector<State> state_;
  std::vector<std::size_t> sent_;  // groups whose gradients are in flight, oldest first
  std::size_t leading_ = kNone;    // the leading group, if any
  std::size_t firstLayer_ = 0;     // the first layer group
  int prefetch_;
};

}  // namespace ts::wl
