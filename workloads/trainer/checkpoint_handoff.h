#pragma once
// A rank's side of checkpoints: the snapshot of its share of the training state and its save (written in the
// background under --checkpoint-async) until the commit, how the ranks agree on a save, a resume's reading back, and
// what saving and resuming cost.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "workloads/checkpoint/checkpoint.h"
#include "workloads/parallel/mesh.h"
#include "workloads/trainer/model_on_mesh.h"
#include "workloads/trainer/trainer_options.h"

namespace ts::wl {

// What checkpointing cost the run: the training's stall per save, the writes (every rank's, per save the
// slowest rank's time) and this rank's read on a resume.
struct CheckpointStats {
  bool async = false;
  std::vector<double> stallS;   // per save: how long this rank's training stood still for it
  std::uint64_t bytes = 0;      // written, over every rank and save
  double writeS = 0;            // per save the slowest rank's write (sync included), summed
  std::uint64_t readBytes = 0;  // a resume: the files this rank read (mapped and hashed)
  double readS = 0;
  nlohmann::json toJson() const;
};

class CheckpointHandOff {
 public:
  CheckpointHandOff(std::string dir, bool async);
  ~CheckpointHandOff();
  // How the ranks agree on a checkpoint (the run's control plane); needed before a save by several ranks.
  void setGroup(ckpt::SaveGroup group) { group_ = std::move(group); }
  // Snapshots this rank's share of m's state (the state after state.step) and writes it (async: in the background);
  // returns the step directory committed (async: the previous save's, committed first; "" when none). Collective.
  std::string save(ckpt::TrainerState state, ModelOnMesh& m, const Mesh& mesh);
  // Async: waits for the save in the background and commits it (collective); "" when none is pending.
  std::string finish();
  // Reads into m every tensor this rank holds from the checkpoint in stepDir (whichever of its pieces cover it: the
  // same layout or another), after checking that it is this run's (`data`: the data's identity; `config`: the
  // model's); returns the step to continue at (UsageError when there is none left).
  std::int64_t resume(const std::string& stepDir, const nlohmann::json& data, const ModelConfig& config, const TrainOptions& o,
                      ModelOnMesh& m, const Mesh& mesh);
  void recordStall(double seconds) { stats_.stallS.push_back(seconds); }
  const CheckpointStats& stats() const { return stats_; }

 private:
  struct PendingSave;
  std::string dir_;
  ckpt::SaveGroup group_;
  std::unique_ptr<PendingSave> pending_;  // a save written (or being written) but not committed
  CheckpointStats stats_;
};

}  // namespace ts::wl
