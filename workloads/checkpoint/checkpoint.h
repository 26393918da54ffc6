#pragma once
// Training checkpoints of any layout: everything a run needs to continue where it stopped, on the same
// layout (exactly) or on another (resharded on load).
//
//   DIR/latest                      "step-00000200\n": the newest complete checkpoint (replaced atomically)
//   DIR/step-00000200/
//       rank-00000.safetensors      what rank 0 holds and writes: parameters, optimizer state and buffers,
//       rank-00001.safetensors      whole where the rank holds them whole (PyTorch reads them by name),
//       ...                         else its pieces ("<tensor>[from:to]"); every rank writes its own, in parallel
//       index.json                  format, step, loss-scaler state, data identity, RNG state, the resolved
//                                   config; each file's size; every whole tensor (kind, shape) and where its
//                                   pieces are (file, key, region.h's place in it) with each piece's content hash
//
// A replicated tensor is written once (by the first rank holding it: data-parallel rank 0, tensor-parallel
// rank 0); a sliced or sharded one by every rank that holds a piece. Where data-parallel replicas differ
// (model averaging between averagings), each other data-parallel rank writes its own copies too, as
// StateKind::kReplica tensors of their own names. Loading asks for a region of a whole
// tensor and gets it from whichever pieces cover it, so a rank of another layout reads what it holds now.
// `trainscope checkpoint consolidate` writes the whole model as one safetensors file.
//
// Saving: rank 0 makes a hidden DIR/.step-N.partial-PID that every rank writes its file into and syncs;
// rank 0 then writes the index, syncs, renames the directory to step-N and only then points `latest` at it.
// A crash at any moment leaves `latest` naming the previous complete checkpoint (or absent), never a
// half-written one; a file damaged later is caught by its size, its header's checks and the hash of each piece read. The
// directory must be one every rank sees (a shared filesystem, as for torch.distributed.checkpoint): rank 0 checks that every
// rank's file is there before publishing. Data needs no state of its own: a batch is a pure function of its step (data_source.h),
// so the data position is the step, and the index keeps the data's identity to check it is the same on resume.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/enum_names.h"
#include "workloads/checkpoint/region.h"
#include "workloads/checkpoint/safetensors.h"

namespace ts::ckpt {

// v3: each piece has its own hash (v2 hashed whole files, so reading one piece read its whole file).
inline constexpr const char* kCheckpointFormat = "trainscope/checkpoint/v3";

// What a tensor of the checkpoint is: the model's (parameters, buffers: what consolidate writes), the
// optimizer's (moments, named "<parameter>.exp_avg", ...), or another data-parallel rank's own copy of one of
// those where the replicas differ (--sync average between averagings: training_state.h names them).
enum class StateKind { kParameter, kBuffer, kOptimizer, kReplica };

// One piece of the run's state that a rank writes: `region` of the whole tensor `tensor`, float32 on the host.
struct Piece {
  std::string tensor;
  StateKind kind = StateKind::kParameter;
  Region region;
  const float* data = nullptr;  // region.elements() values
};

struct TrainerState {
  std::int64_t step = 0;  // optimizer steps completed: the resumed run trains on the batch of `step` next
  nlohmann::json data = nlohmann::json::object();    // DataSource::identity() of the run (the position is `step`)
  nlohmann::json scaler = nullptr;                   // loss-scaler state, as the scaler writes it (null: none)
  nlohmann::json rng = nullptr;                      // the trainer's RNG state (dropout streams, ...)
  nlohmann::json config = nlohmann::json::object();  // the resolved run configuration (its layout included)
};

struct SaveOptions {
  int keepLast = 0;  // > 0: afterwards remove all but the newest keepLast step directories
};

// The ranks that write one checkpoint together and how they exchange a line of text (the run's control
// plane, never the training's communicators). One rank: no exchange.
struct SaveGroup {
  int rank = 0, size = 1;
  std::function<std::vector<std::string>(const std::string&)> allGather;  // every rank's string, in rank order
  std::vector<std::string> gather(const std::string& mine) const;
};

// One save in progress. Collective where it says so: every rank of the group makes the same calls.
//   CheckpointSave save(dir, step, group);   // collective: agree on the hidden directory
//   save.write(pieces);                      // this rank's file: no communication (a background thread may do it)
//   save.commit(state, options);             // collective: index, publish, `latest`
class CheckpointSave {
 public:
  CheckpointSave(const std::string& dir, std::int64_t step, SaveGroup group);
  ~CheckpointSave();  // a save never committed leaves nothing behind (rank 0 removes the hidden directory)
  CheckpointSave(const CheckpointSave&) = delete;
  CheckpointSave& operator=(const CheckpointSave&) = delete;

  // Writes this rank's pieces (synced). An error is kept and reported by commit, on every rank.
  void write(std::span<const Piece> pieces, const std::map<std::string, std::string>& metadata = {});
  // Returns the step directory. Error (the first failing rank's message, on every rank) when any rank's
  // write failed or the index could not be written; the previous `latest` is then untouched.
  std::string commit(const TrainerState& state, const SaveOptions& options = {});

  std::uint64_t bytesWritten() const { return bytes_; }  // this rank's file
  double writeSeconds() const { return writeS_; }        // this rank's write, sync included
  // After commit: every rank's files together, and the slowest rank's write.
  std::uint64_t totalBytes() const { return totalBytes_; }
  double slowestWriteSeconds() const { return slowestS_; }

 private:
  std::string dir_, name_, partial_;
  SaveGroup group_;
  nlohmann::json mine_;  // this rank's file: name, bytes, hash, pieces; or its error
  std::uint64_t bytes_ = 0;
  double writeS_ = 0;
  std::uint64_t totalBytes_ = 0;
  double slowestS_ = 0;
  bool committed_ = false;
};

// The step directory `DIR/latest` names; nullopt when DIR has no `latest` (nothing saved yet). UsageError
// when `latest` is damaged or names a directory that is not there.
std::optional<std::string> latestCheckpoint(const std::string& dir);

// A checkpoint opened for reading: its index parsed and checked; a rank file opened (its size and header checked) the
// first time a read needs it, then only the pieces a read needs read from it, each checked by its hash.
class CheckpointReader {
 public:
  // `path` is a checkpoint directory (its latest is read) or a step directory. UsageError, one line naming
  // the directory and what is wrong: nothing to resume, another format version, a missing or corrupt index.
  static CheckpointReader open(const std::string& path);
  ~CheckpointReader();
  CheckpointReader(CheckpointReader&&) noexcept;
  CheckpointReader& operator=(CheckpointReader&&) noexcept;

  const std::string& directory() const { return dir_; }
  const TrainerState& state() const { return state_; }
  struct Tensor {
    std::string name;
    StateKind kind;
    std::vector<std::int64_t> shape;
  };
  const std::vector<Tensor>& tensors() const { return list_; }  // in the index's order
  const Tensor* find(const std::string& name) const;
  // Fills `out` (region.elements() values) with `region` of the whole tensor `name`, from whichever pieces
  // cover it. UsageError naming the checkpoint when it holds no such tensor, holds it with another shape,
  // or its pieces leave part of the region uncovered; or when a file it reads is missing or damaged.
  void read(const std::string& name, const Region& region, float* out);

  std::uint64_t bytesRead() const { return bytesRead_; }  // from the rank files: their headers and the pieces read
  double readSeconds() const { return readS_; }

 private:
  struct Impl;
  CheckpointReader() = default;
  std::string dir_;
  TrainerState state_;
  std::vector<Tensor> list_;
  std::unique_ptr<Impl> impl_;
  std::uint64_t bytesRead_ = 0;
  double readS_ = 0;
};

// Writes the model (parameters and buffers, whole, by name: what PyTorch's load_state_dict takes) of the
// checkpoint at `path` as one safetensors file; with optimizer, its state too (data-parallel rank 0's where the
// replicas differ: the other ranks' copies are not written). Returns the tensors written.
std::size_t consolidate(const std::string& path, const std::string& out, bool optimizer);

}  // namespace ts::ckpt

namespace ts {
template <>
struct EnumNames<ckpt::StateKind> {
  static constexpr std::pair<std::string_view, ckpt::StateKind> kNames[] = {{"parameter", ckpt::StateKind::kParameter},
                                                                            {"buffer", ckpt::StateKind::kBuffer},
                                                                            {"optimizer", ckpt::StateKind::kOptimizer},
                                                                            {"replica", ckpt::StateKind::kReplica}};
};
}  // namespace ts
