#pragma once
// Batches staged on a GPU ahead of their step. The loader thread (data::Prefetcher) runs a BatchStager on
// every batch it produces: the inputs and targets go into a pinned host buffer, then to device memory by
// an asynchronous copy on a side stream, and an event marks the copy done. The training thread then pays
// no host-to-device copy: the model asks stagedRows() for a batch's rows, which makes the compute stream
// wait on that event (normally long passed) and gives the device addresses.
//
// A bounded pool of slots (pinned + device buffer + events) is reused: a slot comes back when the last
// Batch (or micro-batch slice) holding it is dropped, and an event recorded on the compute stream then
// keeps the next upload into it from overwriting rows that queued work still reads. When every slot is
// taken the batch is simply not staged and the model uploads it itself: slower, never wrong.
//
// On the CPU there is nothing to stage: stagingHook() gives no hook and stagedRows() nothing.
#include <cstdint>
#include <memory>
#include <optional>

#include "workloads/data/batch.h"
#include "workloads/data/prefetcher.h"
#include "workloads/device.h"

namespace ts::wl {

// The device copy of a staged batch's rows, usable on the device's stream.
struct StagedRows {
  const void* inputs = nullptr;           // features (float32) or tokens (int32), row-major
  const std::int32_t* targets = nullptr;  // class indices or next tokens
};

// Makes the device's stream wait for the batch's upload and gives the device addresses of its rows (the
// rows of a slice, for a micro-batch); nothing for a batch that was not staged.
std::optional<StagedRows> stagedRows(Device& device, const data::Batch& batch);

class BatchStager {
 public:
  // Up to `slots` batches staged at once: the prefetch depth, one being prepared and one being trained on.
  BatchStager(Device& device, int slots);
  ~BatchStager();
  BatchStager(const BatchStager&) = delete;
  BatchStager& operator=(const BatchStager&) = delete;

  // Stages one batch (Batch::staged); in the loader thread. Error from a failing CUDA call.
  void stage(data::Batch& batch);
  int batchesStaged() const;    // so far
  int batchesUnstaged() const;  // found every slot taken

  struct Pool;

 private:
  std::shared_ptr<Pool> pool_;  // shared with the staged batches, so a batch may outlive its stager
};

// The Prefetcher hook for a device, with its stager in `holder`: staging on CUDA, none on the CPU.
data::Prefetcher::Prepare stagingHook(Device& device, int prefetchDepth, std::unique_ptr<BatchStager>& holder);

}  // namespace ts::wl
