// `trainscope scale`: for each rank count, runs `trainscope train` under the launcher (a process of its
// own, so every point starts from a fresh job exactly as a user would run it), reads the point's train
// record, and writes it with a `scaling` record: throughput, speedup and efficiency against the
// smallest point, and where the step went. A point that fails is recorded as failed and the study goes
// on; the exit code says that one did.
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/error.h"
#include "base/input_file.h"
#include "base/split.h"
#include "base/terminal_text.h"
#include "base/user_paths.h"
#include "bench/commands.h"
#include "bench/results/result_stream.h"
#include "bench/results/result_writer.h"
#include "bench/run/child_process.h"
#include "bench/run/progress.h"
#include "bench/run/run_session.h"
#include "bench/run/transports.h"
#include "bench/scale/scale_options.h"
#include "bench/scale/scale_table.h"
#include "bench/scale/scaling_record.h"
#include "bench/scale/train_point.h"
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

// The transport settings every point runs once under, in the order given (one unnamed setting without --transports):
// of the backend the train flags' --device chose. The train flags are read as `trainscope train` reads them, so that a
// typo or a non-finite number is one line before any point starts, not the same failure at every point.
std::vector<TransportSetting> transportsOf(const ScaleOptions& o) {
  const BackendKind backend = trainBackendOf(o.trainArgs);
  std::vector<TransportSetting> settings;
  for (const std::string& name : splitNonEmpty(o.transports, ','))
    settings.push_back(deviceTransportSetting(name, backend, "scale"));
  if (settings.empty()) settings.emplace_back();
  return settings;
}

// "ranks4", or "ranks4-tcp" for a point of a transport: its files' and its trace's name.
std::string pointName(int n, const TransportSetting& t) {
  return t.name.empty() ? fmt::format("ranks{}", n) : fmt::format("ranks{}-{}", n, t.name);
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
  std::istringstream in(readInputFile("", log.string(), kMaxResultFileBytes));
  std::string line, error, last;
  while (std::getline(in, line)) {
    if (error.empty() && line.rfind("trainscope: error: ", 0) == 0) error = line.substr(19);
    if (!line.empty()) last = line;
  }
  if (rc == 127 && error.empty()) error = last;
  return fmt::format("exit {}: {}", rc, error.empty() ? last : error);
}

// What a point kept: the records of its document, else of its stream (a point killed or timed out writes
// no document): its train record, or the progress of the steps it trained when it never wrote one
// (bench/train/train_record.h, progressJson).
std::vector<nlohmann::json> pointRecords(const fs::path& json) {
  std::vector<nlohmann::json> records;
  const nlohmann::json doc = readDocument(json.string());
  if (doc.is_object() && doc.contains("records") && doc["records"].is_array())
    records = doc["records"].get<std::vector<nlohmann::json>>();
  else
    records = readStream(ResultWriter::streamPathFor(json.string())).records;
  std::vector<nlohmann::json> kept;
  for (const auto& r : records)
    if (r.value("kind", "") == "train") return {r};
  for (const auto& r : records)
    if (r.value("kind", "") == "train_progress") kept.push_back(r);
  return kept;
}

// The point's train record, or what its first progress record says of the run when it wrote none.
std::optional<nlohmann::json> trainRecordOf(const std::vector<nlohmann::json>& records) {
  if (records.empty()) return std::nullopt;
  if (records[0].value("kind", "") == "train") return records[0];
  if (records[0].contains("train")) return records[0]["train"];
  return std::nullopt;
}

// The study's step name and the point's label on a record the point wrote (and on the run a progress
// record describes).
void relabel(nlohmann::json& r, const std::string& step, const std::string& label) {
  if (!step.empty()) r["step"] = step;
  if (!label.empty()) r["label"] = label;
  if (r.contains("train")) relabel(r["train"], step, label);
}

// The command that runs one point: `trainscope train` under the launcher, with the point's batch, result
// file and label, then the study's train flags.
std::vector<std::string> pointCommand(const ScaleOptions& o, const std::string& exe, int n, std::int64_t batch,
                                      const fs::path& json, const TransportSetting& transport) {
  std::vector<std::string> cmd;
  switch (o.launcher) {
    case LauncherKind::kMpirun:
      cmd = {"mpirun", "-np", std::to_string(n)};
      break;
    case LauncherKind::kSrun: {
      cmd = {"srun", "-n", std::to_string(n)};
      // Without PMIx srun's tasks cannot form one MPI world (each would stop with one line): PMIx unless the
      // user chose the plugin, in --launcher-args or in SLURM_MPI_TYPE (srun's own variable).
      const auto args = words(o.launcherArgs);
      const bool chosen = std::getenv("SLURM_MPI_TYPE") != nullptr ||
                          std::any_of(args.begin(), args.end(), [](const std::string& a) { return a.rfind("--mpi", 0) == 0; });
      if (!chosen) cmd.push_back("--mpi=pmix");
      break;
    }
    case LauncherKind::kNone:
      break;
  }
  for (const auto& w : words(o.launcherArgs)) cmd.push_back(w);
  cmd = withEnvPassed(std::move(cmd), transport.env);  // the transport's settings reach the ranks on other hosts too
  cmd.insert(cmd.end(), {exe, "train", "--batch", std::to_string(batch), "--json", json.string(), "--label",
                         fmt::format("scale {} rank(s)", n) + (transport.name.empty() ? "" : " over " + transport.name)});
  if (!o.traceDir.empty()) cmd.insert(cmd.end(), {"--trace", (fs::path(o.traceDir) / pointName(n, transport)).string()});
  cmd.insert(cmd.end(), o.trainArgs.begin(), o.trainArgs.end());
  return cmd;
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
  transportsOf(o);
  if (!o.pointsDir.empty()) checkOutputDirectory("--points-dir", o.pointsDir);
  if (!o.traceDir.empty()) checkOutputDirectory("--trace", o.traceDir);
  std::vector<int> ranks = o.ranks;
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  return ranks;
}

namespace {

// What every point of a study shares: its options, where its points write, how they are started.
struct Study {
  const ScaleOptions& o;
  ResultWriter& writer;
  std::string step, exe;
  fs::path dir;
  bool nested;  // a suite under mpirun: the points' launcher must start afresh
};

// Runs the point of `n` ranks on `transport` and adds its records to the result; its scaling record. `base`: the
// (ranks, throughput) of the smallest point of this transport that ran, set by the first that does.
ScalingRecord runPoint(const Study& s, int n, const TransportSetting& transport, std::optional<std::pair<int, double>>& base) {
  const ScaleOptions& o = s.o;
  const std::int64_t batch = o.mode == ScaleMode::kWeak ? o.batch * n : o.batch;
  const fs::path json = s.dir / (pointName(n, transport) + ".json"), log = s.dir / (pointName(n, transport) + ".log");
  keepAside(json.string());  // an earlier study's point is kept, never read as this one's
  const int rc = runChild(pointCommand(o, s.exe, n, batch, json, transport),
                          ChildOptions{transport.env, log.string(), s.nested && o.launcher == LauncherKind::kMpirun});
  std::vector<nlohmann::json> kept = pointRecords(json);
  for (auto& r : kept) relabel(r, s.step, o.label.empty() ? "" : fmt::format("{}: {} rank(s)", o.label, n));
  const std::optional<nlohmann::json> train = trainRecordOf(kept);
  ScalingRecord rec;
  rec.mode = o.mode;
  rec.ranks = n;
  rec.globalBatch = batch;
  rec.launcher = o.launcher;
  rec.series = fmt::format("{} {}", nameOf(o.mode),
                           o.trainArgs.empty() ? std::string("(defaults)") : fmt::format("{}", fmt::join(o.trainArgs, " ")));
  if (!transport.name.empty()) rec.series += " over " + transport.name;  // a study per transport: a curve each
  rec.label = o.label;
  rec.step = s.step;
  if (!o.traceDir.empty()) rec.trace = (fs::path(o.traceDir) / pointName(n, transport)).string();
  for (auto& r : kept) {  // as the point ends: a study stopped later keeps it
    if (!transport.name.empty()) labelWithTransport(r, transport, transport.env);
    s.writer.add(r);
  }
  if (train) rec.train = trainFactsOf(*train);
  if (rc != 0 || !train || !completedPoint(*train)) {
    rec.error = rc != 0 ? failureOf(log, rc) : fmt::format("the point wrote no complete train record (see {})", log.string());
  } else {
    if (!base) base = std::make_pair(n, throughputOf(*train));
    rec.figures = figuresOf(*train, n, *base);
  }
  nlohmann::json scaling = toJson(rec);
  if (!transport.name.empty()) labelWithTransport(scaling, transport, transport.env);
  s.writer.add(scaling);
  return rec;
}

}  // namespace

int runScaleStudy(const ScaleOptions& o, ResultWriter& writer, const std::string& step) {
  const std::vector<int> ranks = validateScale(o);
  const std::vector<TransportSetting> transports = transportsOf(o);
  fs::path dir = o.pointsDir;
  if (dir.empty())
    dir = o.jsonPath.empty() ? fs::temp_directory_path() / fmt::format("trainscope-scale-{}", ::getpid())
                             : fs::path(o.jsonPath + ".points");
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw UsageError(fmt::format("--points-dir {}: {}", dir.string(), ec.message()));
  const Study study{o, writer, step, selfExe(), dir, launchedByMpi()};
  std::printf("%s", printableLines(scaleTableHeader(o, ranks, dir)).c_str());
  std::fflush(stdout);
  int failed = 0;
  Progress progress("scale", static_cast<double>(ranks.size() * transports.size()), true);
  for (const TransportSetting& transport : transports) {
    if (!transport.name.empty()) std::printf("%s", scaleTransportLine(transport).c_str());
    std::optional<std::pair<int, double>> base;  // (ranks, throughput) of this transport's smallest point that ran
    for (int n : ranks) {
      progress.step(transport.name.empty() ? fmt::format("{} rank(s)", n) : fmt::format("{} rank(s) over {}", n, transport.name));
      const ScalingRecord rec = runPoint(study, n, transport, base);
      progress.done();
      if (!rec.figures) ++failed;
      std::printf("%s", scaleTableRow(rec).c_str());
      std::fflush(stdout);
    }
  }
  return failed;
}

int runScale(const ScaleOptions& o, const std::vector<std::string>& argv) {
  if (launchedByMpi()) throw UsageError("scale launches its own jobs: run it as one process (not under mpirun or srun)");
  const std::vector<int> ranks = validateScale(o);
  auto session = RunSession::open(BootstrapKind::kSingle, false, "scale", argv, toJson(o), o.jsonPath,
                                  0 /* one process: each point's job has its own --timeout */);
  const int failed = runScaleStudy(o, *session->context().writer);
  session->finish();
  if (failed)
    throw Error(fmt::format("{} of {} scaling point(s) failed (their errors are in the result and in the points' logs)", failed,
                            ranks.size() * transportsOf(o).size()));
  return 0;
}

}  // namespace ts
