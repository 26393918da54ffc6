#include "workloads/batch_staging.h"

#include <atomic>
#include <cstring>
#include <mutex>
#include <vector>

#include "base/error.h"
#ifdef TRAINSCOPE_HAVE_CUDA
#include "kernels/cuda/device_resources.h"
#include "workloads/device_cuda.h"
#endif

namespace ts::wl {

#ifdef TRAINSCOPE_HAVE_CUDA

// Named, not anonymous: BatchStager::Pool (external linkage) holds Slots, and in a unity build (-DCMAKE_UNITY_BUILD=ON) a type
// of an anonymous namespace in a member of an external type is a -Wsubobject-linkage warning.
namespace batch_staging {
constexpr std::size_t kAlign = 256;
std::size_t aligned(std::size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// One staging place: a pinned host buffer and a device buffer of the same size (inputs, then targets at
// an aligned offset), the event that marks its upload done and the one that marks its last reader queued.
struct Slot {
  std::size_t capacity = 0;
  cuda::PinnedHostBuffer host;
  void* device = nullptr;  // from the device's allocator, given back by the pool
  cuda::Event uploaded{cudaEventDisableTiming};
  cuda::Event released{cudaEventDisableTiming};
};
}  // namespace batch_staging
using batch_staging::aligned;
using batch_staging::Slot;

struct BatchStager::Pool {
  Pool(Device& d, int count) : device(d), select(d.ordinal()), slots(static_cast<std::size_t>(count)) {
    for (std::size_t i = 0; i < slots.size(); ++i) free.push_back(i);
  }
  ~Pool() {  // the last staged batch is gone; nothing may fail here
    cudaSetDevice(device.ordinal());
    cudaStreamSynchronize(side.get());
    cudaStreamSynchronize(static_cast<cudaStream_t>(device.stream()));
    for (Slot& s : slots)
      if (s.device) device.release(s.device);
    slots.clear();  // pinned buffers and events, before the error state is cleared
    cudaGetLastError();
  }

  std::optional<std::size_t> take() {
    std::lock_guard lock(mutex);
    if (free.empty()) return std::nullopt;
    const std::size_t i = free.back();
    free.pop_back();
    return i;
  }
  // The batch holding slot i is gone (any thread): work already queued on the compute stream may still
  // read its rows, so the next upload into it waits for this point of the stream.
  void give(std::size_t i) {
    cudaSetDevice(device.ordinal());
    const cudaError_t rc = cudaEventRecord(slots[i].released.get(), static_cast<cudaStream_t>(device.stream()));
    std::lock_guard lock(mutex);
    if (rc != cudaSuccess) {  // a deleter cannot throw: the slot is lost (staging goes on with fewer)
      cudaGetLastError();
      return;
    }
    free.push_back(i);
  }

  Device& device;
  cuda::SelectDevice select;  // the stream and the slots' events on the device's GPU
  cuda::Stream side;
  std::vector<Slot> slots;
  std::mutex mutex;
  std::vector<std::size_t> free;
  std::atomic<int> staged{0}, unstaged{0};
};

namespace {
// What Batch::staged points to: a slot while the batch (or a slice of it) lives.
struct StagedBatch {
  std::shared_ptr<BatchStager::Pool> pool;
  std::size_t slot = 0;
  const char* inputs = nullptr;
  const std::int32_t* targets = nullptr;
  std::size_t inputRowBytes = 0, targetRowValues = 0;
  cudaEvent_t uploaded = nullptr;
  ~StagedBatch() { pool->give(slot); }
};

template <typename T>
std::size_t bytesOf(const std::vector<T>& v) {
  return v.size() * sizeof(T);
}
}  // namespace

BatchStager::BatchStager(Device& device, int slots) {
  if (!device.cuda()) throw Error("internal: batches are staged on CUDA devices only");
  if (slots < 1) throw Error("internal: a batch stager needs a slot");
  pool_ = std::make_shared<Pool>(device, slots);
}

BatchStager::~BatchStager() = default;

void BatchStager::stage(data::Batch& b) {
  const std::optional<std::size_t> i = pool_->take();
  if (!i) {
    ++pool_->unstaged;
    return;
  }
  // From here the slot goes back to the pool however this ends: the staged batch owns it.
  auto staged = std::make_shared<StagedBatch>();
  staged->pool = pool_;
  staged->slot = *i;
  Slot& s = pool_->slots[*i];
  Device& d = pool_->device;
  CUDA_CHECK(cudaSetDevice(d.ordinal()));  // the loader thread's current device
  const std::size_t inputBytes = b.hasTokens() ? bytesOf(b.tokens) : bytesOf(b.features);
  const std::size_t targetOffset = aligned(inputBytes), bytes = targetOffset + bytesOf(b.targets);
  CUDA_CHECK(cudaEventSynchronize(s.uploaded.get()));  // the slot's last upload has read its pinned buffer
  if (bytes > s.capacity) {                            // first use, or a larger batch: (re)allocated once, sized to fit
    CUDA_CHECK(cudaStreamWaitEvent(pool_->side.get(), s.released.get(), 0));
    CUDA_CHECK(cudaStreamSynchronize(pool_->side.get()));
    s.host.reset();
    if (s.device) d.release(s.device);
    s.device = nullptr;
    s.capacity = 0;
    s.host = cuda::PinnedHostBuffer(bytes);
    s.device =
        d.allocate(bytes, MemoryKind::kWorkspace);  // never freed during the run (the arena's rule); counted in peak memory
    s.capacity = bytes;
    // allocate() zeroes the memory on the compute stream: the upload below waits for that (via `released`).
    s.released.record(static_cast<cudaStream_t>(d.stream()));
  }
  char* host = static_cast<char*>(s.host.get());
  std::memcpy(host, b.hasTokens() ? static_cast<const void*>(b.tokens.data()) : static_cast<const void*>(b.features.data()),
              inputBytes);
  std::memcpy(host + targetOffset, b.targets.data(), bytesOf(b.targets));
  CUDA_CHECK(cudaStreamWaitEvent(pool_->side.get(), s.released.get(), 0));  // queued readers of the slot's last batch
  CUDA_CHECK(cudaMemcpyAsync(s.device, host, bytes, cudaMemcpyHostToDevice, pool_->side.get()));
  s.uploaded.record(pool_->side.get());
  staged->inputs = static_cast<const char*>(s.device);
  staged->targets = reinterpret_cast<const std::int32_t*>(static_cast<const char*>(s.device) + targetOffset);
  staged->inputRowBytes = b.size() ? inputBytes / static_cast<std::size_t>(b.size()) : 0;
  staged->targetRowValues = b.size() ? b.targets.size() / static_cast<std::size_t>(b.size()) : 0;
  staged->uploaded = s.uploaded.get();
  b.staged = std::move(staged);
  b.stagedRow = 0;
  ++pool_->staged;
}

int BatchStager::batchesStaged() const { return pool_->staged; }
int BatchStager::batchesUnstaged() const { return pool_->unstaged; }

std::optional<StagedRows> stagedRows(Device& device, const data::Batch& b) {
  if (!b.staged || !device.cuda()) return std::nullopt;
  const auto* s = static_cast<const StagedBatch*>(b.staged.get());
  CUDA_CHECK(cudaStreamWaitEvent(static_cast<cudaStream_t>(device.stream()), s->uploaded, 0));
  const auto row = static_cast<std::size_t>(b.stagedRow);
  return StagedRows{s->inputs + row * s->inputRowBytes, s->targets + row * s->targetRowValues};
}

data::Prefetcher::Prepare stagingHook(Device& device, int prefetchDepth, std::unique_ptr<BatchStager>& holder) {
  if (!device.cuda()) return {};
  holder = std::make_unique<BatchStager>(device, prefetchDepth + 2);
  return [s = holder.get()](data::Batch& b) { s->stage(b); };
}

#else  // a build without CUDA: every device is the CPU

struct BatchStager::Pool {};
BatchStager::BatchStager(Device&, int) { throw Error("internal: batches are staged on CUDA devices only"); }
BatchStager::~BatchStager() = default;
void BatchStager::stage(data::Batch&) {}
int BatchStager::batchesStaged() const { return 0; }
int BatchStager::batchesUnstaged() const { return 0; }
std::optional<StagedRows> stagedRows(Device&, const data::Batch&) { return std::nullopt; }
data::Prefetcher::Prepare stagingHook(Device&, int, std::unique_ptr<BatchStager>&) { return {}; }

#endif

}  // namespace ts::wl
