#include "workloads/trainer/checkpoint_handoff.h"

#include <algorithm>
#include <map>
#include <thread>

#include <fmt/format.h>

#include "base/error.h"
#include "base/json_text.h"
#include "workloads/training_state.h"

namespace ts::wl {

// A save between its snapshot and its commit: the host copy the writer reads, and the writer.
struct CheckpointHandOff::PendingSave {
  std::unique_ptr<ckpt::CheckpointSave> save;
  ckpt::TrainerState state;
  std::vector<std::vector<float>> values;
  std::vector<ckpt::Piece> pieces;
  std::thread writer;
  ~PendingSave() {
    if (writer.joinable()) writer.join();
  }
};

CheckpointHandOff::CheckpointHandOff(std::string dir, bool async) : dir_(std::move(dir)) { stats_.async = async; }

CheckpointHandOff::~CheckpointHandOff() = default;

std::string CheckpointHandOff::save(ckpt::TrainerState state, ModelOnMesh& m, const Mesh& mesh) {
  if (group_.size != mesh.worldSize())
    throw Error(fmt::format("internal: a checkpoint of {} ranks with a save group of {}", mesh.worldSize(), group_.size));
  std::string committed = finish();  // async: the previous save first
  auto p = std::make_unique<PendingSave>();
  p->state = std::move(state);
  p->save = std::make_unique<ckpt::CheckpointSave>(dir_, p->state.step, group_);
  // The snapshot: this rank's share of the state, copied to host memory (the training may go on after this).
  const std::vector<StateTensor> tensors = stateTensors(*m.sync, *m.optimizer, m.part, mesh, StateUse::kSave);
  for (const StateTensor& t : tensors) p->values.push_back(t.value->toHost());
  for (std::size_t i = 0; i < tensors.size(); ++i)
    p->pieces.push_back({tensors[i].tensor, tensors[i].kind, tensors[i].region, p->values[i].data()});
  const std::map<std::string, std::string> meta = {{"model", std::string(nameOf(m.model->config().kind))},
                                                   {"preset", m.model->config().preset},
                                                   {"trainscope_step", std::to_string(p->state.step)}};
  PendingSave* raw = p.get();
  pending_ = std::move(p);
  if (stats_.async) {
    raw->writer = std::thread([raw, meta] { raw->save->write(raw->pieces, meta); });
    return committed;
  }
  raw->save->write(raw->pieces, meta);
  return finish();
}

std::string CheckpointHandOff::finish() {
  if (!pending_) return {};
  std::unique_ptr<PendingSave> p = std::move(pending_);
  if (p->writer.joinable()) p->writer.join();
  const std::string dir = p->save->commit(p->state);
  stats_.bytes += p->save->totalBytes();
  stats_.writeS += p->save->slowestWriteSeconds();
  return dir;
}

namespace {
// What a checkpoint's config says the run resolved `key` to: under "resolved" (Trainer::config), or at the top in a
// checkpoint written before its config was the option table's (issue #37), which resumes as well.
nlohmann::json savedResolved(const nlohmann::json& config, const std::string& key) {
  const nlohmann::json& resolved = config.contains("resolved") ? config["resolved"] : config;
  return resolved.is_object() ? resolved.value(key, nlohmann::json()) : nlohmann::json();
}

// That the checkpoint c is of this run: its data, its model, its optimizer.
void checkSameRun(const ckpt::CheckpointReader& c, const nlohmann::json& data, const ModelConfig& config, const TrainOptions& o) {
  const ckpt::TrainerState& s = c.state();
  if (s.data != data)
    throw UsageError(
        fmt::format("--resume: {} was trained on other data ({}), not {}", c.directory(), jsonText(s.data), jsonText(data)));
  if (savedResolved(s.config, "model") != config.toJson())
    throw UsageError(
        fmt::format("--resume: {} holds another model ({})", c.directory(), jsonText(savedResolved(s.config, "model"))));
  const nlohmann::json optimizer = savedResolved(s.config, "optimizer");
  const nlohmann::json theirs = optimizer.is_object() ? optimizer.value("kind", nlohmann::json()) : nlohmann::json();
  if (theirs != o.optimizer.toJson().value("kind", nlohmann::json()))
    throw UsageError(fmt::format("--resume: {} was trained with --optimizer {}, not {}", c.directory(),
                                 theirs.is_string() ? theirs.get<std::string>() : jsonText(theirs), nameOf(o.optimizer.kind)));
}

// Whether c holds --sync average's replicas apart; they continue only as the same replicas: each data-parallel rank
// its own.
bool checkReplicas(const ckpt::CheckpointReader& c, const TrainOptions& o) {
  const ckpt::TrainerState& s = c.state();
  const bool replicas = std::any_of(c.tensors().begin(), c.tensors().end(),
                                    [](const ckpt::CheckpointReader::Tensor& t) { return t.kind == ckpt::StateKind::kReplica; });
  nlohmann::json savedLayout = savedResolved(s.config, "layout");
  if (!savedLayout.is_object()) savedLayout = nlohmann::json::object();
  const nlohmann::json savedReplicas = recordedGroupSize(savedLayout, kReplicaAxes);
  if (replicas && (o.layout.sync != SyncKind::kAverage || savedReplicas != o.layout.replicas())) {
    const std::string saved = jsonText(savedReplicas);
    const std::string mine = o.layout.sync == SyncKind::kAverage
                                 ? std::to_string(o.layout.replicas())
                                 : fmt::format("{} under --sync {}", o.layout.replicas(), nameOf(o.layout.sync));
    throw UsageError(
        fmt::format("--resume: {} holds the {} data-parallel replicas of --sync average apart (saved between "
                    "two averagings, or without --average-optimizer): resume it with --sync average on {} "
                    "data-parallel ranks, not {}",
                    c.directory(), saved, saved, mine));
  }
  return replicas;
}
}  // namespace

std::int64_t CheckpointHandOff::resume(const std::string& stepDir, const nlohmann::json& data, const ModelConfig& config,
                                       const TrainOptions& o, ModelOnMesh& m, const Mesh& mesh) {
  ckpt::CheckpointReader c = ckpt::CheckpointReader::open(stepDir);
  const ckpt::TrainerState& s = c.state();
  checkSameRun(c, data, config, o);
  const bool replicas = checkReplicas(c, o);
  const int replica = mesh.replicaIndex();
  for (const StateTensor& t : stateTensors(*m.sync, *m.optimizer, m.part, mesh, StateUse::kLoad)) {
    std::vector<float> values(static_cast<std::size_t>(t.region.elements()));
    const std::string own = replica > 0 ? replicaName(t.tensor, replica) : std::string();
    c.read(replicas && replica > 0 && c.find(own) ? own : t.tensor, t.region, values.data());
    t.value->fromHost(values);
  }
  if (m.scaler) m.scaler->restore(s.scaler);
  if (s.step >= o.steps)
    throw UsageError(fmt::format("--resume: {} is at step {}, and --steps {} asks for no more", c.directory(), s.step, o.steps));
  stats_.readBytes = c.bytesRead();
  stats_.readS = c.readSeconds();
  return s.step;
}

nlohmann::json CheckpointStats::toJson() const {
  auto rate = [](double bytes, double s) { return s > 0 ? nlohmann::json(bytes / s) : nlohmann::json(); };
  double stall = 0;
  for (double s : stallS) stall += s;
  return {{"mode", async ? "async" : "sync"},
          {"saves", stallS.size()},
          {"stall_s", stallS},
          {"stall_total_s", stall},
          {"write_bytes", bytes},
          {"write_s", writeS},
          {"write_bytes_per_s", rate(static_cast<double>(bytes), writeS)},
          {"read_bytes", readBytes},
          {"read_s", readS},
          {"read_bytes_per_s", rate(static_cast<double>(readBytes), readS)}};
}

}  // namespace ts::wl
