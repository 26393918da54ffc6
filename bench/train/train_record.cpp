#include "bench/train/train_record.h"

#include <cmath>

#include "bench/config_version.h"
#include "bench/results/record_json.h"

namespace ts {

double PipelineRecord::theoreticalBubble() const {
  const double m = static_cast<double>(microBatches), p = static_cast<double>(stages.size());
  return (p - 1) / (m + p - 1);
}

double TrainRecord::medianStepS() const { return summarize(ranks.stepSeconds).median; }

std::int64_t TrainRecord::skippedSteps() const {
  std::int64_t n = 0;
  for (const LossPoint& p : steps.lossCurve) n += p.skipped;
  return n;
}

namespace {

nlohmann::json lossCurve(const TrainRecord& r) {
  nlohmann::json curve = nlohmann::json::array();
  for (const LossPoint& p : r.steps.lossCurve) {
    nlohmann::json point = {{"step", p.step},
                            {"loss", p.loss},
                            {"lr", p.lr},
                            {"grad_norm", p.skipped ? nlohmann::json() : nlohmann::json(p.gradNorm)}};
    if (r.float16) {
      point["loss_scale"] = p.lossScale;
      point["skipped"] = p.skipped;
    }
    if (p.staleness >= 0) point["staleness"] = p.staleness;
    curve.push_back(point);
  }
  return curve;
}

nlohmann::json meshJson(const std::vector<wl::MeshAxis>& mesh) {
  nlohmann::json out = nlohmann::json::array();
  for (const wl::MeshAxis& a : mesh) out.push_back({{"name", a.name}, {"size", a.size}, {"stride", a.stride}});
  return out;
}

nlohmann::json pipelineJson(const PipelineRecord& p, const std::optional<double>& measuredBubble) {
  nlohmann::json layers = nlohmann::json::array();
  for (const wl::StageRange& s : p.stages) layers.push_back({s.from, s.to});
  return {{"stages", p.stages.size()},
          {"microbatches", p.microBatches},
          {"schedule", nameOf(p.schedule)},
          {"layers", layers},
          {"theoretical_bubble", p.theoreticalBubble()},
          {"measured_bubble", orNull(measuredBubble)}};
}

nlohmann::json phasesJson(const RankSteps& s) {
  return {{"data", usStats(s.data)},
          {"forward", usStats(s.forward)},
          {"backward", usStats(s.backward)},
          {"sync", usStats(s.sync)},
          {"optimizer", usStats(s.optimizer)}};
}

nlohmann::json rankJson(const RankRow& row, const std::vector<wl::MeshAxis>& mesh) {
  nlohmann::json j = {{"rank", row.rank},
                      {"step_us", row.step * 1e6},
                      {"data_us", row.data * 1e6},
                      {"compute_us", row.compute * 1e6},
                      {"forward_us", row.forward * 1e6},
                      {"backward_us", row.backward * 1e6},
                      {"optimizer_us", row.optimizer * 1e6},
                      {"forward_compute_us", row.forwardCompute * 1e6},
                      {"backward_compute_us", row.backwardCompute * 1e6},
                      {"forward_flops", row.work.forwardFlops},
                      {"recompute_flops", row.work.recomputeFlops},
                      {"optimizer_elements", row.work.updatedElements},
                      {"sync_us", row.sync * 1e6},
                      {"communication_us", row.communication * 1e6},
                      {"exposed_communication_us", row.exposed * 1e6},
                      {"waiting_for_peers_us", row.waiting * 1e6},
                      {"exposed_transfer_us", row.transfer * 1e6},
                      {"pipeline_wait_us", row.pipelineWait * 1e6},
                      {"idle_us", row.idle() * 1e6},
                      {"overlap", orNull(overlapOf(row.communication, row.exposed))}};
  for (std::size_t a = 0; a < mesh.size() && a < row.coordinates.size(); ++a)
    j[wl::coordinateField(mesh[a])] = row.coordinates[a];
  return j;
}

nlohmann::json collectiveJson(const CollectiveRow& c) {
  return {{"group", wl::axisSetName(c.group)},
          {"group_size", c.groupSize},
          {"op", c.op.name()},
          {"bytes", c.bytes},
          {"count", c.seconds.size()},
          {"time_us", usStats(c.seconds)},
          {"algbw_gbps", c.algbwGbps},
          {"busbw_gbps", c.busbwGbps},
          {"transfer_us", usStats(c.transferSeconds)},
          {"transfer_busbw_gbps", c.transferBusbwGbps}};
}

// What every rank's steps came to: written for a completed run.
void addRanks(const TrainRecord& r, nlohmann::json& rec) {
  const RankSteps& own = r.steps.timed;
  const double comm = own.communication.empty() ? 0.0 : summarize(own.communication).median;
  const double exposed = own.exposed.empty() ? 0.0 : summarize(own.exposed).median;
  rec["communication"] = {{"communication_us", usStats(own.communication)}, {"exposed_us", usStats(own.exposed)},
                          {"waiting_us", usStats(r.ranks.waitingSeconds)},  {"transfer_us", usStats(r.ranks.transferSeconds)},
                          {"overlap", orNull(overlapOf(comm, exposed))},    {"rank_spread", r.ranks.rankSpread}};
  nlohmann::json ranks = nlohmann::json::array(), collectives = nlohmann::json::array();
  for (const RankRow& row : r.ranks.ranks) ranks.push_back(rankJson(row, r.mesh));
  for (const CollectiveRow& c : r.ranks.collectives) collectives.push_back(collectiveJson(c));
  rec["ranks"] = ranks;
  rec["collectives"] = collectives;
  if (r.ranks.stragglers) rec["stragglers"] = toJson(*r.ranks.stragglers);
}

// Every rank's account beside its coordinates on the mesh, and the limit they ran under.
nlohmann::json memoryJson(const TrainRecord& r) {
  nlohmann::json ranks = nlohmann::json::array();
  for (std::size_t i = 0; i < r.memory.size(); ++i) {
    nlohmann::json row = r.memory[i];
    row["rank"] = i;
    ranks.push_back(row);
  }
  return {{"limit_bytes", r.memoryLimitBytes ? nlohmann::json(r.memoryLimitBytes) : nlohmann::json()},
          {"recompute", nameOf(r.recompute)},
          {"ranks", ranks}};
}

void addTimedSteps(const TrainRecord& r, nlohmann::json& rec) {
  rec["step_time_us"] = usStats(r.ranks.stepSeconds);
  nlohmann::json samples = nlohmann::json::array();
  for (double t : r.ranks.stepSeconds) samples.push_back(t * 1e6);
  rec["step_samples_us"] = samples;
  rec["phases_us"] = phasesJson(r.steps.timed);
  if (r.completed()) addRanks(r, rec);
  rec["throughput_per_s"] = r.throughputPerS();
  rec["tflops"] = r.tflops();
  rec["tflops_per_device"] = r.tflopsPerDevice;
  rec["mfu"] = r.mfu;
}

nlohmann::json evalPointJson(const EvalPoint& p) {
  const wl::EvalResult& e = p.result;
  nlohmann::json j = {{"step", e.step},       {"loss", e.loss},          {"accuracy", e.accuracy}, {"items", e.items},
                      {"seconds", e.seconds}, {"elapsed_s", p.elapsedS}, {"train_s", p.trainS}};
  if (e.perplexity > 0) j["perplexity"] = e.perplexity;
  return j;
}

// The evaluations (with --eval-every) and the target (with --target-*): MLPerf's time to train is
// time_to_target_s, from the loop's start to the end of the first evaluation at the target.
void addEvaluation(const TrainRecord& r, nlohmann::json& rec) {
  if (r.steps.evals.empty() && !r.steps.target) return;
  nlohmann::json points = nlohmann::json::array();
  double seconds = 0;
  for (const EvalPoint& p : r.steps.evals) {
    points.push_back(evalPointJson(p));
    seconds += p.result.seconds;
  }
  rec["eval"] = {
      {"every", r.evalEvery}, {"batches", r.evalBatches}, {"split", r.evalSplit}, {"seconds", seconds}, {"points", points}};
  if (!r.steps.target) return;
  const TargetRecord& t = *r.steps.target;
  nlohmann::json target = {
      {"metric", nameOf(t.metric)}, {"value", t.value}, {"reached", t.reached.has_value()}, {"eval_every", r.evalEvery}};
  if (t.reached) {
    target["steps_to_target"] = t.reached->result.step;
    target["time_to_target_s"] = t.reached->elapsedS;
    target["train_time_to_target_s"] = t.reached->trainS;
    target["at"] = evalPointJson(*t.reached);
  }
  rec["target"] = target;
}

// --ep: a layer's all-to-alls in each direction over the timed steps (process 0's), per call.
nlohmann::json allToAllJson(const TrainRecord& r, const std::string& layer) {
  const int ranks = r.layout.ep;
  nlohmann::json j = {{"group_size", ranks}};
  for (const auto& [name, d] : EnumNames<wl::MoeExchange>::kNames) {
    const MoeExchangeFigures f = moeExchangeFigures(r.steps.expertExchanges, layer, d, ranks);
    j[std::string(name)] = {{"calls", f.calls},
                            {"rows_sent", f.rowsSent},
                            {"bytes_per_call", orNull(f.bytesPerCall)},
                            {"largest_bytes", f.largestBytes},
                            {"time_per_call_us", f.secondsPerCall ? nlohmann::json(*f.secondsPerCall * 1e6) : nlohmann::json()},
                            {"busbw_gbps", orNull(f.busbwGbps)}};
  }
  return j;
}

// Each MoE layer's routing: tokens per expert (assignments, summed over the run), max/mean, the drops, the aux loss;
// under expert parallelism its all-to-alls.
nlohmann::json moeJson(const TrainRecord& r) {
  const wl::MoeSettings& s = r.moeSettings;
  nlohmann::json layers = nlohmann::json::array();
  for (const wl::MoeLayerStats& l : r.moe) {
    const wl::MoeStats& st = l.stats;
    layers.push_back({{"layer", l.name},
                      {"capacity", l.capacity},
                      {"micro_batches", st.forwards},
                      {"tokens_per_expert", st.routed},
                      {"assignments", st.assignments},
                      {"imbalance", st.imbalance()},
                      {"worst_micro_batch_imbalance", st.worstImbalance},
                      {"dropped", st.dropped},
                      {"dropped_fraction", st.assignments > 0 ? double(st.dropped) / double(st.assignments) : 0.0},
                      {"aux_loss", st.meanAux()}});
    if (r.layout.ep > 1) layers.back()["all_to_all"] = allToAllJson(r, l.name);
    if (!st.exchangeRows.empty()) {  // the dispatch's rows from each rank to each rank's experts: a counts file's matrix
      const auto n = static_cast<std::size_t>(std::llround(std::sqrt(static_cast<double>(st.exchangeRows.size()))));
      nlohmann::json rows = nlohmann::json::array();
      for (std::size_t s = 0; s < n; ++s)
        rows.push_back(std::vector<std::int64_t>(st.exchangeRows.begin() + static_cast<std::ptrdiff_t>(s * n),
                                                 st.exchangeRows.begin() + static_cast<std::ptrdiff_t>((s + 1) * n)));
      layers.back()["exchange_counts"] = rows;
    }
  }
  return {{"experts", s.experts},
          {"top_k", s.topK},
          {"capacity_factor", s.capacityFactor > 0 ? nlohmann::json(s.capacityFactor) : nlohmann::json()},
          {"aux_loss_coef", s.auxCoef},
          {"router_skew", s.routerSkew},
          {"layers", layers}};
}

}  // namespace

nlohmann::json toJson(const TrainRecord& r) {
  nlohmann::json rec = {{"kind", "train"},
                        {"model", nameOf(r.model)},
                        {"preset", r.preset},
                        {"backend", nameOf(r.backend)},
                        {"device", r.device},
                        {"precision", nameOf(r.precision)},
                        {"world_size", r.worldSize},
                        {"layout", r.layout.toJson()},
                        {"mesh", meshJson(r.mesh)},
                        {"config", r.config},
                        {"config_version", kConfigVersion},
                        {"parameters", r.parameters},
                        {"owned_parameters", r.ownedParameters},
                        {"flops_per_step", r.flopsPerStep},
                        {"recompute_flops_per_step", r.recomputeFlopsPerStep},
                        {"items_per_step", r.itemsPerStep},
                        {"item", nameOf(r.item)},
                        {"first_step", r.firstStep},
                        {"steps_done", static_cast<std::int64_t>(r.steps.lossCurve.size())},
                        {"warmup_steps", r.warmupSteps},
                        {"timed_steps", static_cast<std::int64_t>(r.ranks.stepSeconds.size())},
                        {"completed", r.completed()},
                        {"peak_memory_bytes", r.peakMemoryBytes},
                        {"memory", memoryJson(r)},
                        {"checkpoint_time_s", r.steps.checkpointS},
                        {"loss", {{"initial", r.steps.initialLoss}, {"final", r.steps.finalLoss}}},
                        {"loss_curve", lossCurve(r)}};
  if (r.parameterNorms) rec["parameter_norms"] = *r.parameterNorms;
  if (r.checkpoint) rec["checkpoint"] = *r.checkpoint;
  if (r.pipeline) rec["pipeline"] = pipelineJson(*r.pipeline, r.ranks.measuredBubble);
  if (r.steps.error) rec["error"] = *r.steps.error;
  if (r.float16) rec["skipped_steps"] = r.skippedSteps();
  if (r.timed()) addTimedSteps(r, rec);
  addEvaluation(r, rec);
  if (r.staleness)
    rec["ps_async"] = {{"staleness_bound", r.layout.staleness},  {"workers", r.layout.workers()},
                       {"servers", r.layout.psServers},          {"staleness_mean", r.staleness->mean()},
                       {"staleness_max", r.staleness->max()},    {"staleness_counts", r.staleness->counts},
                       {"bytes_per_step", r.asyncPsBytesPerStep}};
  if (r.moeSettings.enabled()) rec["moe"] = moeJson(r);
  if (!r.label.empty()) rec["label"] = r.label;
  if (!r.suiteStep.empty()) rec["step"] = r.suiteStep;
  return rec;
}

}  // namespace ts

namespace ts {

nlohmann::json progressJson(const wl::StepResult& r, bool timed, const TrainRecord& about, bool first) {
  nlohmann::json rec = {{"kind", "train_progress"},
                        {"train_step", r.step},
                        {"loss", r.loss},
                        {"lr", r.lr},
                        {"grad_norm", r.skipped ? nlohmann::json() : nlohmann::json(r.gradNorm)},
                        {"timed", timed},
                        {"step_us", r.totalS * 1e6},
                        {"phases_us",
                         {{"data", r.dataS * 1e6},
                          {"forward", r.forwardS * 1e6},
                          {"backward", r.backwardS * 1e6},
                          {"sync", r.syncS * 1e6},
                          {"optimizer", r.optimizerS * 1e6}}}};
  if (about.float16) {
    rec["loss_scale"] = r.lossScale;
    rec["skipped"] = r.skipped;
  }
  if (first) rec["train"] = toJson(about);
  if (!about.label.empty()) rec["label"] = about.label;
  if (!about.suiteStep.empty()) rec["step"] = about.suiteStep;
  return rec;
}

}  // namespace ts
