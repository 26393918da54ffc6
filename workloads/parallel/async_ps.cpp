#include "workloads/parallel/async_ps.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include <fmt/format.h>

#include "base/error.h"
#include "base/steady_seconds.h"
#include "base/stop_request.h"

namespace ts::wl {
namespace {
// Point-to-point tags on the data-parallel communicator (its collectives do not match them).
constexpr int kGradientTag = 7101, kValuesTag = 7102;

}  // namespace

void StalenessCounts::add(int s, std::int64_t steps) {
  if (s < 0 || steps == 0) return;
  if (counts.size() <= static_cast<std::size_t>(s)) counts.resize(static_cast<std::size_t>(s) + 1, 0);
  counts[static_cast<std::size_t>(s)] += steps;
}

double StalenessCounts::mean() const {
  double n = 0, sum = 0;
  for (std::size_t s = 0; s < counts.size(); ++s) {
    n += static_cast<double>(counts[s]);
    sum += static_cast<double>(s) * static_cast<double>(counts[s]);
  }
  return n > 0 ? sum / n : 0.0;
}

int StalenessCounts::max() const {
  for (std::size_t s = counts.size(); s > 0; --s)
    if (counts[s - 1] > 0) return static_cast<int>(s - 1);
  return 0;
}

// One transfer slot: its buffer (host memory: ps-async runs on the CPU) and the send or receive in flight.
struct AsyncPsSync::Peer {
  Tensor buf;
  std::unique_ptr<PendingCollective> op;
  bool done() {
    if (op && op->test()) op.reset();
    return !op;
  }
};

AsyncPsSync::AsyncPsSync(Communicator& dp, const ModelPart& model, const LayoutOptions& layout, std::int64_t steps,
                         double timeoutS)
    : GradientSync(model.params, dp, timeoutS),
      comm_(dp),
      arena_(*model.arena),
      rank_(dp.rank(0)),
      workers_(dp.worldSize() - layout.psServers),
      shards_(layout.psServers > 0 ? layout.psServers : layout.psShards),
      staleness_(layout.staleness),
      dedicated_(layout.psServers > 0),
      worker_(rank_ < workers_),
      steps_(steps),
      timeoutS_(timeoutS),
      buckets_(model.params, layout.bucketMb, shards_) {
  if (dedicated_ ? rank_ >= workers_ : rank_ < shards_) served_shard_ = dedicated_ ? rank_ - workers_ : rank_;
  buckets_.releaseParamGrads(arena_);
  buckets_.takeAll(arena_);
  shardElements_.assign(static_cast<std::size_t>(shards_), 0);
  for (Bucket& b : buckets_.all()) {
    // The values become views of a flat laid out as the bucket: a shard's values arrive straight into its
    // chunk of every flat, and a server updates its chunk where it lies.
    values_.push_back(Buckets::moveValuesIntoFlat(b, arena_));
    for (int k = 0; k < shards_; ++k) shardElements_[static_cast<std::size_t>(k)] += b.chunk;
    if (served_shard_ < 0) continue;
    const Tensor ownedValues = viewOf(values_.back(), static_cast<std::size_t>(served_shard_) * b.chunk, b.chunk);
    shardGrads_.push_back(arena_.tensor({static_cast<std::int64_t>(b.chunk)}, MemoryKind::kGradients));
    for (Param& p : buckets_.pieces(b, served_shard_, shardGrads_.back(), &ownedValues)) pieces_.push_back(std::move(p));
  }
  const auto buffer = [&](std::size_t n) {
    auto p = std::make_unique<Peer>();
    p->buf = arena_.tensor({static_cast<std::int64_t>(n)}, MemoryKind::kCommBuffers);
    return p;
  };
  if (worker_) {
    version_.assign(static_cast<std::size_t>(shards_), 0);
    gradsOut_.resize(static_cast<std::size_t>(staleness_ + 2));
    for (auto& ring : gradsOut_)
      for (int k = 0; k < shards_; ++k) ring.push_back(buffer(shardElements_[static_cast<std::size_t>(k)]));
    for (int k = 0; k < shards_; ++k) {
      valuesIn_.push_back(buffer(shardElements_[static_cast<std::size_t>(k)]));
      if (k != served_shard_)
        valuesIn_.back()->op = comm_.startRecv(0, valuesIn_.back()->buf.data, valuesIn_.back()->buf.numel(), DType::kFloat32,
                                               serverRank(k), kValuesTag);
    }
  }
  if (served_shard_ >= 0) {
    const std::size_t n = shardElements_[static_cast<std::size_t>(served_shard_)];
    for (int w = 0; w < workers_; ++w) {
      gradsIn_.push_back(buffer(n));
      if (steps_ > 0) gradsIn_.back()->op = comm_.startRecv(0, gradsIn_.back()->buf.data, n, DType::kFloat32, w, kGradientTag);
      valuesOut_.push_back(buffer(n));
    }
  }
}

AsyncPsSync::~AsyncPsSync() {
  // A run that failed mid-step leaves receives posted, whose messages may never come: their handles are let
  // go without the wait an MPI request's destructor makes (the caller aborts the communicator; the
  // buffers stay in the arena until it ends). A finished run has none.
  for (auto* list : {&valuesIn_, &gradsIn_, &valuesOut_})
    for (auto& p : *list) p->op.release();
  for (auto& ring : gradsOut_)
    for (auto& p : ring) p->op.release();
}

void AsyncPsSync::packGradients(int shard, float* out) const {
  for (const Bucket& b : buckets_.all()) {
    std::memcpy(out, b.chunkData(shard), b.chunk * sizeof(float));
    out += b.chunk;
  }
}

void AsyncPsSync::unpackValues(int shard, const float* in) {
  for (std::size_t i = 0; i < values_.size(); ++i) {
    const std::size_t chunk = buckets_.all()[i].chunk;
    std::memcpy(values_[i].data + static_cast<std::size_t>(shard) * chunk, in, chunk * sizeof(float));
    in += chunk;
  }
}

void AsyncPsSync::packValues(float* out) const {
  for (std::size_t i = 0; i < values_.size(); ++i) {
    const std::size_t chunk = buckets_.all()[i].chunk;
    std::memcpy(out, values_[i].data + static_cast<std::size_t>(served_shard_) * chunk, chunk * sizeof(float));
    out += chunk;
  }
}

void AsyncPsSync::pumpWorker() {
  for (int k = 0; k < shards_; ++k) {
    if (k == served_shard_) {
      version_[static_cast<std::size_t>(k)] = served_;  // its own shard: updated where it lies
      continue;
    }
    Peer& in = *valuesIn_[static_cast<std::size_t>(k)];
    // Versions arrive in order; each is applied as it comes (the newest wins), then the next is awaited.
    while (in.op && in.done()) {
      unpackValues(k, in.buf.data);
      const std::int64_t v = ++version_[static_cast<std::size_t>(k)];
      if (v < steps_) in.op = comm_.startRecv(0, in.buf.data, in.buf.numel(), DType::kFloat32, serverRank(k), kValuesTag);
    }
  }
  for (auto& ring : gradsOut_)
    for (auto& p : ring) p->done();
}

void AsyncPsSync::pumpServer() {
  for (auto& p : valuesOut_) p->done();
  while (served_ < steps_) {
    bool all = true;
    for (auto& g : gradsIn_) all = g->done() && all;
    if (!all) return;
    // Every worker's gradient of clock served_: their sum in worker order is the update's gradient.
    std::size_t offset = 0;
    for (std::size_t i = 0; i < shardGrads_.size(); ++i) {
      float* sum = shardGrads_[i].data;
      const std::size_t n = shardGrads_[i].numel();
      std::memcpy(sum, gradsIn_[0]->buf.data + offset, n * sizeof(float));
      for (std::size_t w = 1; w < gradsIn_.size(); ++w) {
        const float* g = gradsIn_[w]->buf.data + offset;
        for (std::size_t j = 0; j < n; ++j) sum[j] += g[j];
      }
      offset += n;
    }
    const std::int64_t clock = served_;
    for (int w = 0; w < workers_; ++w)  // the next clock's gradients may come in now
      if (clock + 1 < steps_) {
        Peer& g = *gradsIn_[static_cast<std::size_t>(w)];
        g.op = comm_.startRecv(0, g.buf.data, g.buf.numel(), DType::kFloat32, w, kGradientTag);
      }
    if (!update_) throw Error("internal: an asynchronous parameter server without an update");
    update_(clock);
    ++served_;
    // Version served_ to every worker but this rank (whose model holds the shard itself). A worker's
    // previous version has left before its buffer is refilled.
    for (int w = 0; w < workers_; ++w) {
      if (w == rank_) continue;
      Peer& out = *valuesOut_[static_cast<std::size_t>(w)];
      spinUntil([&] { return out.done(); },
                [&] {
                  if (worker_) pumpWorker();  // a serving worker takes its own versions meanwhile (never pumpServer: re-entry)
                },
                [&] {
                  return fmt::format("--sync ps-async: server {} waited {:.0f} s to hand worker {} version {}", served_shard_,
                                     timeoutS_, w, served_ - 1);
                });
      packValues(out.buf.data);
      out.op = comm_.startSend(0, out.buf.data, out.buf.numel(), DType::kFloat32, w, kValuesTag);
    }
  }
}

void AsyncPsSync::pump() {
  if (served_shard_ >= 0) pumpServer();
  if (worker_) pumpWorker();
}

double AsyncPsSync::spinUntil(const std::function<bool()>& done, const std::function<void()>& progress,
                              const std::function<std::string()>& timedOut) const {
  const double t0 = steadySeconds();
  for (int spins = 0;; ++spins) {
    progress();
    if (done()) return steadySeconds() - t0;
    if (timeoutS_ > 0 && steadySeconds() - t0 > timeoutS_) throw Error(timedOut());
    checkStopWhileWaiting("--sync ps-async's parameter exchange", 0);  // a peer failed, or a signal came
    if (spins > 64) std::this_thread::yield();  // MPI progresses inside test(); give the other ranks the cores
  }
}

void AsyncPsSync::pumpUntil(const std::function<bool()>& done, const char* what) {
  waitedS_ += spinUntil(
      done, [this] { pump(); },
      [&] { return fmt::format("--sync ps-async: rank {} waited {:.0f} s for {}", rank_, timeoutS_, what); });
}

int AsyncPsSync::beginStep(std::int64_t c) {
  const std::int64_t need = c - staleness_;
  pumpUntil([&] { return *std::min_element(version_.begin(), version_.end()) >= need; }, "the parameter versions a step needs");
  return static_cast<int>(c - *std::min_element(version_.begin(), version_.end()));
}

void AsyncPsSync::beforeBackward(StepContext& ctx, bool) {
  buckets_.startMicroBatch();
  ctx.gradReady = nullptr;  // the gradients are sent once whole, after the last micro-batch
}

void AsyncPsSync::afterBackward(bool last) {
  if (!last) return;
  for (Bucket& b : buckets_.all()) buckets_.depositRest(b);
  std::vector<std::unique_ptr<Peer>>& slot = gradsOut_[static_cast<std::size_t>(sentClocks_ % std::int64_t(gradsOut_.size()))];
  pumpUntil(
      [&] {
        for (auto& p : slot)
          if (!p->done()) return false;
        return true;
      },
      "a gradient buffer to free");
  for (int k = 0; k < shards_; ++k) {
    Peer& out = *slot[static_cast<std::size_t>(k)];
    packGradients(k, out.buf.data);
    out.op = comm_.startSend(0, out.buf.data, out.buf.numel(), DType::kFloat32, serverRank(k), kGradientTag);
  }
  ++sentClocks_;
  pump();
}

StepComm AsyncPsSync::takeWaits() {
  StepComm s;
  s.communicationS = s.exposedS = waitedS_;
  waitedS_ = 0;
  return s;
}

std::size_t AsyncPsSync::bytesPerStep() const {
  std::size_t n = 0;
  for (std::size_t e : shardElements_) n += e;
  return n * sizeof(float);
}

void AsyncPsSync::serve(std::int64_t c) {
  pumpUntil([&] { return served_ > c; }, "the workers' gradients");
}

void AsyncPsSync::finish() {
  pumpUntil(
      [&] {
        if (served_shard_ >= 0) {
          if (served_ < steps_) return false;
          for (auto& p : valuesOut_)
            if (!p->done()) return false;
        }
        if (worker_) {
          for (std::int64_t v : version_)
            if (v < steps_) return false;
          for (auto& ring : gradsOut_)
            for (auto& p : ring)
              if (!p->done()) return false;
        }
        return true;
      },
      "the last updates");
}

}  // namespace ts::wl
