#include "bench/train/train_console.h"
#include "base/terminal_text.h"

#include <cmath>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/units.h"
#include "bench/kernels/roofline.h"
#include "bench/train/train_mfu.h"

namespace ts {

void printTrainBanner(wl::Trainer& trainer, const TrainRunOptions& o, const wl::Mesh& mesh) {
  wl::Model& model = trainer.model();
  const auto& cfg = model.config();
  std::printf(
      "# train %s %s on %s in %s: %lld parameters, %.3g GFLOP per step (3x forward), %lld %s per step, batch %lld in %lld "
      "micro-batch(es), data %s\n",
      std::string(nameOf(cfg.kind)).c_str(), cfg.preset.c_str(), trainer.device().name().c_str(),
      std::string(nameOf(o.train.precision)).c_str(), static_cast<long long>(model.parameterCount()),
      trainer.flopsPerStep() / 1e9, static_cast<long long>(trainer.itemsPerStep()), model.itemName().c_str(),
      static_cast<long long>(o.train.batch), static_cast<long long>(o.train.microBatches), trainer.dataInfo().name.c_str());
  if (mesh.worldSize() > 1) {
    // Whether batch norm meets the ranks that split the data.
    const bool syncBn = mesh.layout().dataShards() > 1 && cfg.kind == wl::ModelKind::kCnn;
    // Expert parallel: which of each mixture's experts this rank holds.
    const int ep = mesh.size(wl::kExpertAxes);
    const std::int64_t held = cfg.moe.experts / ep, first = mesh.coordinate(wl::kExpertAxes) * held;
    const std::string experts =
        ep > 1 ? fmt::format(", experts {}-{} of each mixture's {}", first, first + held - 1, cfg.moe.experts) : "";
    std::printf("# layout %s over %d ranks: %lld %s per rank per micro-batch%s%s; this rank updates %zu of %lld parameters\n",
                mesh.layout().name().c_str(), mesh.worldSize(), static_cast<long long>(trainer.microBatchSize()),
                model.itemKind() == wl::ItemKind::kTokens ? "sequences" : "samples",
                !syncBn                                                     ? ""
                : trainer.options().layout.syncBn == wl::SyncBatchNorm::kOn ? ", batch norm over the whole batch (--sync-bn on)"
                                                                            : ", batch norm over each rank's own (--sync-bn off)",
                experts.c_str(), trainer.ownedParameterElements(), static_cast<long long>(model.parameterCount()));
  }
  if (cfg.recompute != wl::Recompute::kNone)
    std::printf("# recompute %s: %.3g GFLOP per step run again in the backward (hardware FLOPs; MFU counts the model's)\n",
                std::string(nameOf(cfg.recompute)).c_str(), trainer.recomputeFlopsPerStep() / 1e9);
  if (trainer.firstStep() > 0)
    std::printf("# resumed at step %lld from %s\n", static_cast<long long>(trainer.firstStep()),
                printable(o.train.checkpointDir).c_str());
}

void printEvalLine(const EvalPoint& p, const std::string& itemName) {
  const wl::EvalResult& e = p.result;
  std::printf("# eval after step %lld: loss %.5f, accuracy %.2f%%%s on %lld held-out %s (%.3f s, kept out of the step times)\n",
              static_cast<long long>(e.step), e.loss, 100.0 * e.accuracy,
              e.perplexity > 0 ? fmt::format(", perplexity {:.3f}", e.perplexity).c_str() : "", static_cast<long long>(e.items),
              itemName.c_str(), e.seconds);
}

void printTargetLine(const TargetRecord& t) {
  const EvalPoint& at = *t.reached;
  std::printf("# target %s %s %g reached after %lld steps: %.3f s to target, evaluations included (%.3f s in the steps)\n",
              nameOf(t.metric).data(), t.metric == TargetMetric::kLoss ? "<=" : ">=", t.value,
              static_cast<long long>(at.result.step), at.elapsedS, at.trainS);
}

void printStepHeader(const std::string& itemName) {
  std::printf("# %8s %12s %10s %10s %10s %10s %10s %10s %10s %12s\n", "step", "loss", "lr", "grad_norm", "data(ms)", "fwd(ms)",
              "bwd(ms)", "sync(ms)", "opt(ms)", (itemName + "/s").c_str());
}

void printStepLine(const wl::StepResult& r, std::int64_t itemsPerStep) {
  std::printf("  %8lld %12.5f %10.3g %10.4g%s %10.3f %10.3f %10.3f %10.3f %10.3f %12.1f\n", static_cast<long long>(r.step),
              r.loss, r.lr, r.gradNorm, r.skipped ? " (overflow: skipped)" : "", r.dataS * 1e3, r.forwardS * 1e3,
              r.backwardS * 1e3, r.syncS * 1e3, r.optimizerS * 1e3, double(itemsPerStep) / r.totalS);
  std::fflush(stdout);
}

namespace {

void printPipeline(const PipelineRecord& p, const std::optional<double>& measuredBubble) {
  std::string cuts;
  for (const auto& s : p.stages) cuts += fmt::format(" [{},{})", s.from, s.to);
  std::printf("# pipeline: %zu stages, layers%s, %lld micro-batches, %s: bubble %s measured, %.1f%% theoretical\n",
              p.stages.size(), cuts.c_str(), static_cast<long long>(p.microBatches), std::string(nameOf(p.schedule)).c_str(),
              measuredBubble ? fmt::format("{:.1f}%", 100 * *measuredBubble).c_str() : "n/a", 100 * p.theoreticalBubble());
}

void printStepTime(const TrainRecord& r) {
  const double median = r.medianStepS();
  std::printf("# step %.3f ms median over %zu timed steps%s: %.1f %s/s, %.4f TFLOP/s; peak memory %.1f MiB; loss %.4f -> %.4f\n",
              median * 1e3, r.ranks.stepSeconds.size(), r.worldSize > 1 ? " (slowest rank)" : "", r.throughputPerS(),
              nameOf(r.item).data(), r.tflops(), double(r.peakMemoryBytes) / (1 << 20), r.steps.initialLoss, r.steps.finalLoss);
  if (const std::string line = mfuConsoleLine(r.mfu); !line.empty()) std::printf("%s\n", line.c_str());
  if (const std::string warning = suspectWarning(mfuSuspects(r.mfu)); !warning.empty()) std::printf("%s\n", warning.c_str());
}

void printCommunication(const TrainRecord& r) {
  const RankSteps& own = r.steps.timed;
  const double comm = usSummary(own.communication).median, exposed = usSummary(own.exposed).median;
  const std::optional<double> overlap = overlapOf(summarize(own.communication).median, summarize(own.exposed).median);
  std::printf("# communication %.3f ms per step, exposed %.3f ms (overlap %s), rank spread %.1f%%\n", comm / 1e3, exposed / 1e3,
              overlap ? fmt::format("{:.0f}%", 100 * *overlap).c_str() : "n/a", 100 * r.ranks.rankSpread);
  // A straggler's cost is not the network's: say how much of the exposed time waited for the last peer to launch.
  if (r.worldSize > 1 && !r.ranks.waitingSeconds.empty() && exposed > 0) {
    const double waiting = exposed * waitingShare(r.ranks.waitingSeconds, own.exposed);
    std::printf(
        "# exposed %.3f ms = waiting for peers %.3f ms (a collective's last member not yet launched) + transfer %.3f ms\n",
        exposed / 1e3, waiting / 1e3, (exposed - waiting) / 1e3);
  }
  // Model averaging every K > 1 steps: most steps send nothing, so the median says 0; the mean is the cost.
  if (r.layout.sync == wl::SyncKind::kAverage && r.layout.averageEvery > 1)
    std::printf("# the parameters are averaged every %d steps: communication %.3f ms per step on average, exposed %.3f ms\n",
                r.layout.averageEvery, usSummary(own.communication).mean / 1e3, usSummary(own.exposed).mean / 1e3);
  if (r.staleness) {
    const wl::StalenessCounts& st = *r.staleness;
    std::vector<std::string> byBehind;
    for (std::size_t s = 0; s < st.counts.size(); ++s) byBehind.push_back(fmt::format("{}: {}", s, st.counts[s]));
    const std::string counts = fmt::format("{}", fmt::join(byBehind, ", "));
    std::printf(
        "# ps-async: %d worker(s), %s, staleness bound %d: the workers' steps ran %.2f updates behind on average, at most %d "
        "(steps by updates behind: %s); each worker sends %.1f KiB of gradients per step (communication above: the time "
        "waited)\n",
        r.layout.workers(),
        r.layout.psServers > 0 ? fmt::format("{} dedicated server(s)", r.layout.psServers).c_str()
                               : fmt::format("{} shard(s) served by workers", r.layout.psShards).c_str(),
        r.layout.staleness, st.mean(), st.max(), counts.c_str(), double(r.asyncPsBytesPerStep) / 1024);
  }
  // Arrival skew is measured at collectives, which ps-async's steps have none of: its staleness is the measure.
  if (!r.ranks.stragglers || r.staleness) return;
  const ArrivalSkew& s = *r.ranks.stragglers;
  std::vector<std::string> late;
  for (const RankSkew& k : s.ranks)
    if (k.late) late.push_back(fmt::format("rank {} ({:.3f} ms median arrival skew)", k.rank, k.medianSkewUs / 1e3));
  const std::string stragglers = late.empty()
                                     ? fmt::format("none (no rank consistently late by more than {:g} ms)", s.thresholdMs)
                                     : fmt::format("{}", fmt::join(late, ", "));
  std::printf("# stragglers: %s\n", stragglers.c_str());
}

}  // namespace

// What checkpointing cost: the saves' stall on rank 0, every rank's writes, and the resume's read.
void printCheckpoints(const nlohmann::json& c) {
  auto rate = [](const nlohmann::json& v) {
    return v.is_number() ? fmt::format("{:.1f} MiB/s", v.get<double>() / (1 << 20)) : "-";
  };
  const auto saves = c["saves"].get<std::size_t>();
  if (saves > 0)
    std::printf("# checkpoints (%s): %zu save(s), training stalled %.3f ms in all; wrote %.2f MiB at %s (slowest rank)\n",
                c["mode"].get<std::string>().c_str(), saves, c["stall_total_s"].get<double>() * 1e3,
                c["write_bytes"].get<double>() / (1 << 20), rate(c["write_bytes_per_s"]).c_str());
  if (c["read_bytes"].get<std::uint64_t>() > 0)
    std::printf("# resumed from %.2f MiB read at %s (rank 0)\n", c["read_bytes"].get<double>() / (1 << 20),
                rate(c["read_bytes_per_s"]).c_str());
}

// --ep: a MoE layer's all-to-alls over the timed steps, per call (the record's "all_to_all"): a line for the forward's
// two (dispatch to the experts, combine back) and one for the backward's (the gradients' way: combine's, then
// dispatch's).
void printMoeAllToAll(const TrainRecord& r, const std::string& layer) {
  using wl::MoeExchange;
  struct Pass {
    const char* name;
    std::pair<const char*, MoeExchange> exchanges[2];
  };
  static constexpr Pass kPasses[] = {
      {"forward", {{"dispatch", MoeExchange::kDispatch}, {"combine", MoeExchange::kCombine}}},
      {"backward", {{"combine", MoeExchange::kCombineBackward}, {"dispatch", MoeExchange::kDispatchBackward}}}};
  for (const Pass& pass : kPasses) {
    std::string line = fmt::format("# moe {} all-to-all {} (rank 0 of ep {}, per call):", layer, pass.name, r.layout.ep);
    for (const auto& [name, d] : pass.exchanges) {
      const MoeExchangeFigures f = moeExchangeFigures(r.steps.expertExchanges, layer, d, r.layout.ep);
      line += fmt::format("{} {} ", d == pass.exchanges[0].second ? "" : ",", name);
      if (!f.bytesPerCall) {
        line += "none timed";
        continue;
      }
      line += fmt::format("{} {:.1f} us", formatBytes(static_cast<std::uint64_t>(std::llround(*f.bytesPerCall))),
                          *f.secondsPerCall * 1e6);
      if (f.busbwGbps) line += fmt::format(" (busbw {:.3g} GB/s)", *f.busbwGbps);
    }
    std::printf("%s\n", line.c_str());
  }
}

// Each MoE layer's routing over the run (the record's "moe").
void printMoe(const TrainRecord& r) {
  for (const wl::MoeLayerStats& l : r.moe) {
    const wl::MoeStats& st = l.stats;
    std::string counts;
    for (std::int64_t c : st.routed) counts += (counts.empty() ? "" : " ") + std::to_string(c);
    std::printf(
        "# moe %s: tokens per expert %s; imbalance max/mean %.3f (worst micro-batch %.3f); dropped %lld of %lld "
        "(%.2f%%); aux loss %.5f\n",
        l.name.c_str(), counts.c_str(), st.imbalance(), st.worstImbalance, static_cast<long long>(st.dropped),
        static_cast<long long>(st.assignments), st.assignments > 0 ? 100.0 * double(st.dropped) / double(st.assignments) : 0.0,
        st.meanAux());
    if (r.layout.ep > 1) printMoeAllToAll(r, l.name);
  }
}

void printTrainSummary(const TrainRecord& r) {
  if (r.steps.target && !r.steps.target->reached && !r.steps.evals.empty()) {
    const TargetRecord& t = *r.steps.target;
    const wl::EvalResult& last = r.steps.evals.back().result;
    const bool loss = t.metric == TargetMetric::kLoss;
    std::printf("# target %s %s %g not reached in %lld steps (last evaluation: %s %.5f)\n", nameOf(t.metric).data(),
                loss ? "<=" : ">=", t.value, static_cast<long long>(last.step), nameOf(t.metric).data(),
                loss ? last.loss : last.accuracy);
  }
  if (r.pipeline) printPipeline(*r.pipeline, r.ranks.measuredBubble);
  if (r.checkpoint) printCheckpoints(*r.checkpoint);
  printMoe(r);
  if (!r.timed()) return;
  printStepTime(r);
  if (r.worldSize > 1 && r.completed()) printCommunication(r);
}

}  // namespace ts
