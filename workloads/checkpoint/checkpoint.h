#pragma once
// Training checkpoints: everything a run needs to continue exactly where it stopped.
//
//   DIR/latest                  "step-00000200\n": the newest complete checkpoint (replaced atomically)
//   DIR/step-00000200/
//       model.safetensors       parameters by name (PyTorch reads it: safetensors.torch.load_file)
//       optimizer.safetensors   optimizer state tensors by name (moments, master weights, ...)
//       trainer.json            format, step, loss-scaler state, data position, RNG state, the resolved
//                               config, and each file's size and content hash
//
// Saving writes a hidden DIR/.step-N.partial-PID directory, syncs it, renames it to step-N and only then
// points `latest` at it. A crash at any moment leaves `latest` naming the previous complete checkpoint
// (or absent), never a half-written one; a file damaged later is caught by its size and content hash.
// Data needs no state of its own: a batch is a pure function of its step (data_source.h), so the data
// position is the step, and trainer.json keeps the data's identity to check it is the same on resume.
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include <nlohmann/json.hpp>

#include "workloads/checkpoint/safetensors.h"

namespace ts::ckpt {

inline constexpr const char* kCheckpointFormat = "trainscope/checkpoint/v1";

struct TrainerState {
  std::int64_t step = 0;  // optimizer steps completed: the resumed run trains on the batch of `step` next
  nlohmann::json data = nlohmann::json::object();    // DataSource::identity() of the run (the position is `step`)
  nlohmann::json scaler = nullptr;                   // loss-scaler state, as the scaler writes it (null: none)
  nlohmann::json rng = nullptr;                      // the trainer's RNG state (dropout streams, ...)
  nlohmann::json config = nlohmann::json::object();  // the resolved run configuration
};

struct SaveOptions {
  int keepLast = 0;                                  // > 0: afterwards remove all but the newest keepLast step directories
  std::map<std::string, std::string> modelMetadata;  // added to model.safetensors' __metadata__
};

// Saves a complete checkpoint of `state.step` under `dir` (created if needed) and makes it the latest.
// Returns the step directory. An existing directory of the same step is replaced. Error on I/O failure
// (disk full): the previous latest checkpoint is then untouched.
std::string saveCheckpoint(const std::string& dir, std::span<const TensorView> model, std::span<const TensorView> optimizer,
                           const TrainerState& state, const SaveOptions& options = {});

// The step directory `DIR/latest` names; nullopt when DIR has no `latest` (nothing saved yet). UsageError
// when `latest` is damaged or names a directory that is not there.
std::optional<std::string> latestCheckpoint(const std::string& dir);

// A checkpoint read back and validated: trainer.json parsed, both tensor files mapped and checked.
struct LoadedCheckpoint {
  std::string directory;  // the step directory read
  TrainerState state;
  SafetensorsFile model;
  SafetensorsFile optimizer;
};

// `path` is a checkpoint directory (its latest is read) or a step directory. UsageError, one line naming
// the directory and what is wrong: nothing to resume, wrong format version, a missing, truncated or
// corrupt file. Tensor names and shapes are checked against the model by model.restore(...) and
// optimizer.restore(...).
LoadedCheckpoint loadCheckpoint(const std::string& path);

}  // namespace ts::ckpt
