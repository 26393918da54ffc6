// `trainscope scale`: for each rank count, runs `trainscope train` under the launcher (a process of its
// own, so every point starts from a fresh job exactly as a user would run it), reads the point's train
// record, and writes it with a `scaling` record: throughput, speedup and efficiency against the
// smallest point, and where the step went. A point that fails is recorded as failed and the study goes
// on; the exit code says that one did.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include <fmt/format.h>

#include "base/error.h"
#include "bench/commands.h"
#include "bench/scale/scale_options.h"
#include "bench/session/child_process.h"
#include "bench/session/progress.h"
#include "bench/session/result_writer.h"
#include "bench/session/run_session.h"
#include "comm/bootstrap.h"

namespace ts {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> words(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// Flags a point sets itself; given to scale they would be ambiguous.
void rejectOwnedFlags(const std::vector<std::string>& args) {
  for (const auto& a : args)
    for (const char* f : {"--json", "--dp", "--label"})
      if (a == f || a.rfind(std::string(f) + "=", 0) == 0)
        throw UsageError(fmt::format(
            "{}: scale sets it for each point (use --json/--label of scale; the data-parallel size follows --ranks)", a));
}

// The train flags read as `trainscope train` reads them, so that a typo or a non-finite number is one
// line before any point starts, not the same failure at every point.
void checkTrainFlags(const std::vector<std::string>& args) {
  CLI::App app;
  trainSubcommand().addToCommandLine(*app.add_subcommand("train"));
  requireFiniteNumbers(app);
  std::vector<const char*> argv = {"trainscope", "train"};
  for (const auto& a : args) argv.push_back(a.c_str());
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::ParseError& e) {
    throw UsageError(fmt::format("train flags: {}", e.what()));
  }
}

std::string selfExe() {
  std::error_code ec;
  const fs::path p = fs::read_symlink("/proc/self/exe", ec);
  if (ec) throw Error(fmt::format("cannot find this program's path (/proc/self/exe): {}", ec.message()));
  return p.string();
}

// The point's error from its log: the first "trainscope: error:" line (later ones are ranks the
// launcher stopped because of it), else the log's last line.
std::string failureOf(const fs::path& log, int rc) {
  std::ifstream in(log);
  std::string line, error, last;
  while (std::getline(in, line)) {
    if (error.empty() && line.rfind("trainscope: error: ", 0) == 0) error = line.substr(19);
    if (!line.empty()) last = line;
  }
  if (rc == 127 && error.empty()) error = last;
  return fmt::format("exit {}: {}", rc, error.empty() ? last : error);
}

std::optional<nlohmann::json> trainRecordOf(const fs::path& json) {
  std::ifstream in(json);
  if (!in) return std::nullopt;
  nlohmann::json doc = nlohmann::json::parse(in, nullptr, false);
  if (doc.is_discarded() || !doc.contains("records")) return std::nullopt;
  for (const auto& r : doc["records"])
    if (r.value("kind", "") == "train") return r;
  return std::nullopt;
}

double medianOfRanks(const nlohmann::json& ranks, const char* field) {
  std::vector<double> v;
  for (const auto& r : ranks)
    if (r.contains(field)) v.push_back(r[field].get<double>());
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

}  // namespace

std::vector<int> validateScale(const ScaleOptions& o) {
  if (o.ranks.empty()) throw UsageError("--ranks: give at least one rank count");
  for (int n : o.ranks)
    if (n < 1) throw UsageError(fmt::format("--ranks: {} is not a rank count", n));
  if (o.batch < 1) throw UsageError(fmt::format("--batch {}: must be at least 1", o.batch));
  if (o.launcher == LauncherKind::kNone && (o.ranks.size() != 1 || o.ranks[0] != 1))
    throw UsageError("--launcher none runs one process: --ranks 1 only (use mpirun or srun for more)");
  rejectOwnedFlags(o.trainArgs);
  checkTrainFlags(o.trainArgs);
  std::vector<int> ranks = o.ranks;
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  return ranks;
}

int runScaleStudy(const ScaleOptions& o, ResultWriter& writer, const std::string& step) {
  const std::vector<int> ranks = validateScale(o);
  fs::path dir = o.pointsDir;
  if (dir.empty())
    dir = o.jsonPath.empty() ? fs::temp_directory_path() / fmt::format("trainscope-scale-{}", ::getpid())
                             : fs::path(o.jsonPath + ".points");
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw UsageError(fmt::format("--points-dir {}: {}", dir.string(), ec.message()));
  const std::string exe = selfExe();
  const bool nested = launchedByMpi();  // a suite under mpirun: the points' launcher must start afresh
  std::printf("# scale (%s): %s ranks, batch %lld %s; each point's result and log in %s\n", std::string(nameOf(o.mode)).c_str(),
              fmt::format("{}", fmt::join(ranks, ",")).c_str(), static_cast<long long>(o.batch),
              o.mode == ScaleMode::kWeak ? "per rank" : "global", dir.c_str());
  std::printf("# %6s %8s %12s %14s %9s %10s %12s %12s  %s\n", "ranks", "batch", "step(ms)", "items/s", "speedup", "efficiency",
              "compute(ms)", "exposed(ms)", "layout");
  std::fflush(stdout);
  std::optional<std::pair<int, double>> base;  // (ranks, throughput) of the smallest point that ran
  int failed = 0;
  Progress progress("scale", static_cast<double>(ranks.size()), true);
  for (int n : ranks) {
    const std::int64_t batch = o.mode == ScaleMode::kWeak ? o.batch * n : o.batch;
    const fs::path json = dir / fmt::format("ranks{}.json", n), log = dir / fmt::format("ranks{}.log", n);
    fs::remove(json, ec);
    std::vector<std::string> cmd;
    switch (o.launcher) {
      case LauncherKind::kMpirun:
        cmd = {"mpirun", "-np", std::to_string(n)};
        break;
      case LauncherKind::kSrun:
        cmd = {"srun", "-n", std::to_string(n)};
        break;
      case LauncherKind::kNone:
        break;
    }
    for (const auto& w : words(o.launcherArgs)) cmd.push_back(w);
    cmd.insert(cmd.end(), {exe, "train", "--batch", std::to_string(batch), "--json", json.string(), "--label",
                           fmt::format("scale {} rank(s)", n)});
    if (!o.traceDir.empty()) cmd.insert(cmd.end(), {"--trace", (fs::path(o.traceDir) / fmt::format("ranks{}", n)).string()});
    cmd.insert(cmd.end(), o.trainArgs.begin(), o.trainArgs.end());
    progress.step(fmt::format("{} rank(s)", n));
    const int rc = runChild(cmd, ChildOptions{{}, log.string(), nested && o.launcher == LauncherKind::kMpirun});
    progress.done();
    const std::optional<nlohmann::json> train = trainRecordOf(json);
    nlohmann::json rec = {{"kind", "scaling"},
                          {"mode", nameOf(o.mode)},
                          {"ranks", n},
                          {"global_batch", batch},
                          {"launcher", nameOf(o.launcher)},
                          {"completed", false},
                          {"series", fmt::format("{} {}", nameOf(o.mode),
                                                 o.trainArgs.empty() ? std::string("(defaults)")
                                                                     : fmt::format("{}", fmt::join(o.trainArgs, " ")))}};
    if (!o.label.empty()) rec["label"] = o.label;
    if (!step.empty()) rec["step"] = step;
    if (!o.traceDir.empty()) rec["trace"] = (fs::path(o.traceDir) / fmt::format("ranks{}", n)).string();
    if (train) {
      nlohmann::json t = *train;
      if (!step.empty()) t["step"] = step;
      if (!o.label.empty()) t["label"] = fmt::format("{}: {} rank(s)", o.label, n);
      writer.add(t);
      rec["model"] = t["model"];
      rec["preset"] = t["preset"];
      rec["backend"] = t["backend"];
      rec["precision"] = t["precision"];
      rec["layout"] = t.contains("layout") ? t["layout"]["name"] : nlohmann::json("single");
    }
    if (rc != 0 || !train || !train->value("completed", false) || !train->contains("throughput_per_s")) {
      ++failed;
      rec["error"] =
          rc != 0 ? failureOf(log, rc) : fmt::format("the point wrote no complete train record (see {})", log.string());
      writer.add(rec);
      std::printf("  %6d %8lld  failed: %s\n", n, static_cast<long long>(batch), rec["error"].get<std::string>().c_str());
      std::fflush(stdout);
      continue;
    }
    const nlohmann::json& t = *train;
    const double thr = t["throughput_per_s"].get<double>(), step = t["step_time_us"]["median"].get<double>();
    if (!base) base = std::make_pair(n, thr);
    const double speedup = thr / base->second, efficiency = (thr / n) / (base->second / base->first);
    const nlohmann::json ranksJson = t.value("ranks", nlohmann::json::array());
    rec["completed"] = true;
    rec["baseline_ranks"] = base->first;
    rec["step_time_us"] = step;
    rec["throughput_per_s"] = thr;
    rec["item"] = t["item"];
    rec["speedup"] = speedup;
    rec["efficiency"] = efficiency;
    rec["breakdown_us"] = {{"compute", medianOfRanks(ranksJson, "compute_us")},
                           {"data", medianOfRanks(ranksJson, "data_us")},
                           {"sync", medianOfRanks(ranksJson, "sync_us")},
                           {"idle", medianOfRanks(ranksJson, "idle_us")},
                           {"communication", medianOfRanks(ranksJson, "communication_us")},
                           {"exposed_communication", medianOfRanks(ranksJson, "exposed_communication_us")}};
    if (t.contains("communication")) rec["overlap"] = t["communication"]["overlap"];
    if (t.contains("stragglers")) rec["late_ranks"] = t["stragglers"]["late_ranks"];
    if (t.contains("pipeline")) rec["pipeline_bubble"] = t["pipeline"]["measured_bubble"];
    writer.add(rec);
    std::printf("  %6d %8lld %12.3f %14.1f %9.2f %9.1f%% %12.3f %12.3f  %s\n", n, static_cast<long long>(batch), step / 1e3, thr,
                speedup, 100 * efficiency, rec["breakdown_us"]["compute"].get<double>() / 1e3,
                rec["breakdown_us"]["exposed_communication"].get<double>() / 1e3, rec["layout"].get<std::string>().c_str());
    std::fflush(stdout);
  }
  return failed;
}

int runScale(const ScaleOptions& o, const std::vector<std::string>& argv) {
  if (launchedByMpi()) throw UsageError("scale launches its own jobs: run it as one process (not under mpirun or srun)");
  const std::vector<int> ranks = validateScale(o);
  const nlohmann::json config = {{"ranks", ranks},
                                 {"mode", nameOf(o.mode)},
                                 {"batch", o.batch},
                                 {"launcher", nameOf(o.launcher)},
                                 {"launcher_args", o.launcherArgs},
                                 {"train_args", o.trainArgs}};
  auto session = RunSession::open(BootstrapKind::kSingle, false, "scale", argv, config, o.jsonPath);
  const int failed = runScaleStudy(o, *session->context().writer);
  session->finish();
  if (failed)
    throw Error(fmt::format("{} of {} scaling point(s) failed (their errors are in the result and in the points' logs)", failed,
                            ranks.size()));
  return 0;
}

}  // namespace ts
