#include "bench/run/transports.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/atomic_file.h"
#include "base/error.h"
#include "base/split.h"
#include "base/terminal_text.h"
#include "bench/results/result_stream.h"
#include "bench/results/result_writer.h"
#include "bench/run/child_process.h"
#include "bench/run/run_metadata.h"
#include "comm/bootstrap.h"

extern char** environ;

namespace ts {
namespace fs = std::filesystem;

namespace {

struct Row {
  BackendKind backend;
  TransportSetting setting;
};

// The one table of transport settings. NCCL's names follow what users compare; Open MPI's pin the BTL
// (and the ob1 PML, so that UCX does not take over the choice). `shm` keeps tcp for the pairs on different hosts,
// so that over a cluster it is "shared memory inside each host" against `tcp` everywhere (vader alone cannot
// reach another host and its ranks hang): for a pair on one host Open MPI uses only the BTL of the highest
// exclusivity, vader (same bandwidth as self,vader, measured), so on one host it is shared memory alone.
const std::vector<Row>& table() {
  static const std::vector<Row> rows = {
      {BackendKind::kNccl, {"nvlink", std::nullopt, {}, "NCCL's default: NVLink (and NVLS) where present"}},
      {BackendKind::kNccl,
       {"pcie",
        std::nullopt,
        {{"NCCL_P2P_DISABLE", "1"}, {"NCCL_NVLS_ENABLE", "0"}},
        "no peer-to-peer: GPU traffic staged through host memory over PCIe"}},
      {BackendKind::kNccl,
       {"ib", std::nullopt, {{"NCCL_NET", "IB"}, {"NCCL_IB_DISABLE", "0"}}, "between nodes over InfiniBand/RoCE verbs"}},
      {BackendKind::kNccl,
       {"socket", std::nullopt, {{"NCCL_NET", "Socket"}, {"NCCL_IB_DISABLE", "1"}}, "between nodes over TCP sockets"}},
      {BackendKind::kNccl, {"mpi", BackendKind::kMpi, {}, "the MPI backend on host buffers, for comparison"}},
      {BackendKind::kMpi,
       {"shm",
        std::nullopt,
        {{"OMPI_MCA_pml", "ob1"}, {"OMPI_MCA_btl", "self,vader,tcp"}},
        "Open MPI shared memory (vader) inside a host, TCP only between hosts"}},
      {BackendKind::kMpi,
       {"tcp",
        std::nullopt,
        {{"OMPI_MCA_pml", "ob1"}, {"OMPI_MCA_btl", "self,tcp"}},
        "Open MPI TCP between every pair (loopback inside a host)"}},
  };
  return rows;
}

std::string capitalized(const std::string& algo) {  // NCCL_ALGO takes Ring, Tree, NVLS, CollNetDirect, ...
  static const std::map<std::string, std::string> known = {{"ring", "Ring"},
                                                           {"tree", "Tree"},
                                                           {"nvls", "NVLS"},
                                                           {"nvlstree", "NVLSTree"},
                                                           {"collnetdirect", "CollNetDirect"},
                                                           {"collnetchain", "CollNetChain"},
                                                           {"pat", "PAT"}};
  std::string lower = algo;
  for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  auto it = known.find(lower);
  if (it == known.end())
    throw UsageError(
        fmt::format("--algos: unknown NCCL algorithm '{}' (ring, tree, nvls, nvlstree, collnetdirect, collnetchain, pat)", algo));
  return it->second;
}

std::string protocol(const std::string& proto) {
  for (const char* p : {"LL", "LL128", "Simple"})
    if (proto == p || (proto.size() == std::string(p).size() && std::equal(proto.begin(), proto.end(), p, [](char a, char b) {
                         return std::tolower(a) == std::tolower(b);
                       })))
      return p;
  throw UsageError(fmt::format("--protos: unknown NCCL protocol '{}' (LL, LL128, Simple)", proto));
}

struct Variant {
  std::string name;
  TransportSetting transport;  // name "" when transports are not an axis
  std::string algo, proto;
  std::map<std::string, std::string> env;
};

// What a subcommand's variants are made of.
struct SubcommandTraits {
  const char* name;                  // the merged result's subcommand, and every run's
  std::vector<std::string> options;  // its variant options, as the errors name them
  bool ncclSettings;                 // --algos and --protos (NCCL_ALGO, NCCL_PROTO): its records name both
  bool backendFlag;                  // each run is told its backend with --backend (train's follows --device)
};

SubcommandTraits traitsOf(VariantSubcommand s) {
  switch (s) {
    case VariantSubcommand::kCollectives:
      return {"collectives", {"--transports", "--algos", "--protos"}, true, true};
    case VariantSubcommand::kTrain:
      return {"train", {"--transports"}, false, false};
  }
  throw Error("unknown variant subcommand");
}

// "--transports/--algos/--protos", or "--transports, --algos or --protos" with `last` " or ".
std::string optionList(const std::vector<std::string>& options, const char* sep, const char* last) {
  std::string out;
  for (std::size_t i = 0; i < options.size(); ++i) out += (i == 0 ? "" : i + 1 == options.size() ? last : sep) + options[i];
  return out;
}

}  // namespace

std::vector<std::string> transportNames(BackendKind backend) {
  std::vector<std::string> names;
  for (const auto& r : table())
    if (r.backend == backend) names.push_back(r.setting.name);
  return names;
}

TransportSetting transportSetting(const std::string& name, BackendKind backend) {
  for (const auto& r : table())
    if (r.backend == backend && r.setting.name == name) return r.setting;
  throw UsageError(fmt::format("--transports: unknown transport '{}' for the {} backend (known: {})", name, nameOf(backend),
                               fmt::join(transportNames(backend), ", ")));
}

TransportSetting deviceTransportSetting(const std::string& name, BackendKind backend, const char* subcommand) {
  TransportSetting setting = transportSetting(name, backend);
  if (setting.backend)
    throw UsageError(
        fmt::format("--transports {}: {}'s backend follows --device (cuda: nccl, cpu: mpi); for the {} backend "
                    "run it with --device cpu",
                    name, subcommand, nameOf(*setting.backend)));
  return setting;
}

std::vector<std::string> withoutOptions(const std::vector<std::string>& argv, const std::vector<std::string>& names) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < argv.size(); ++i) {
    bool drop = false;
    for (const auto& n : names) {
      if (argv[i] == n) {
        drop = true;
        ++i;  // and its value
        break;
      }
      if (argv[i].rfind(n + "=", 0) == 0) {
        drop = true;
        break;
      }
    }
    if (!drop) out.push_back(argv[i]);
  }
  return out;
}

bool variantsRequested(const VariantRequest& req) {
  if (!req.transports.empty() || !req.algos.empty() || !req.protos.empty()) return true;
  if (!req.launcher.empty())
    throw UsageError(fmt::format("--launcher goes with {}", optionList(traitsOf(req.subcommand).options, ", ", " or ")));
  return false;
}

std::vector<std::string> withEnvPassed(std::vector<std::string> launcher, const std::map<std::string, std::string>& env) {
  const bool mpirun =
      !launcher.empty() && (fs::path(launcher[0]).filename() == "mpirun" || fs::path(launcher[0]).filename() == "mpiexec");
  if (mpirun)
    for (const auto& [k, val] : env) {
      launcher.insert(launcher.begin() + 1, k);
      launcher.insert(launcher.begin() + 1, "-x");
    }
  return launcher;
}

void labelWithTransport(nlohmann::json& rec, const TransportSetting& setting, const std::map<std::string, std::string>& env) {
  static const std::vector<std::string> overFabric = {"collective", "train", "train_progress", "scaling", "telemetry"};
  if (std::find(overFabric.begin(), overFabric.end(), rec.value("kind", "")) == overFabric.end()) return;
  rec["transport"] = setting.name.empty() ? nlohmann::json(nullptr) : nlohmann::json(setting.name);
  rec["transport_env"] = env;
  // A run that stopped left its progress, whose first record carries the train record readers rebuild it from.
  if (rec.contains("train") && rec["train"].is_object()) labelWithTransport(rec["train"], setting, env);
}

namespace {

// Every combination of the requested transports, algorithms and protocols, each with its environment.
std::vector<Variant> variantsOf(const VariantRequest& req, BackendKind backend) {
  std::vector<Variant> variants;
  const std::vector<std::string> ts = req.transports.empty() ? std::vector<std::string>{""} : req.transports;
  const std::vector<std::string> as = req.algos.empty() ? std::vector<std::string>{""} : req.algos;
  const std::vector<std::string> ps = req.protos.empty() ? std::vector<std::string>{""} : req.protos;
  for (const auto& t : ts)
    for (const auto& a : as)
      for (const auto& p : ps) {
        Variant v;
        if (!t.empty())
          v.transport = traitsOf(req.subcommand).backendFlag ? transportSetting(t, backend)
                                                             : deviceTransportSetting(t, backend, traitsOf(req.subcommand).name);
        v.env = v.transport.env;
        if (!a.empty()) v.env["NCCL_ALGO"] = v.algo = capitalized(a);
        if (!p.empty()) v.env["NCCL_PROTO"] = v.proto = protocol(p);
        std::vector<std::string> parts;
        for (const auto& s : {t, v.algo, v.proto})
          if (!s.empty()) parts.push_back(s);
        for (const auto& s : parts) v.name += (v.name.empty() ? "" : "/") + s;
        variants.push_back(v);
      }

  return variants;
}

// The command line of one variant's run: the launcher (told to pass `env`, the variant's environment, to every
// host), this program, the user's flags without the variant ones, its backend where the subcommand takes one
// (`backendFlag`), and the part file it writes.
std::vector<std::string> variantCommand(std::string launcher, const std::map<std::string, std::string>& env,
                                        BackendKind childBackend, bool backendFlag, const std::string& self,
                                        const std::vector<std::string>& childArgs, const fs::path& part) {
  if (launcher.empty() && childBackend == BackendKind::kMpi) launcher = "mpirun -np 2";
  std::vector<std::string> args = withEnvPassed(splitNonEmpty(launcher, ' '), env);
  args.push_back(self);
  args.insert(args.end(), childArgs.begin(), childArgs.end());
  if (backendFlag) args.insert(args.end(), {"--backend", std::string(nameOf(childBackend))});
  args.insert(args.end(), {"--json", part.string()});
  return args;
}

// A folder of this run's own beside the result for the variants' documents (a fresh random name, mode 0700): the
// removal at the end takes only what this run made, never an earlier run's parts or a link someone planted.
fs::path makeScratchFolder(const std::string& jsonPath) {
  createParentDirectories(jsonPath);
  const fs::path parent = fs::path(jsonPath).parent_path();
  std::string name =
      ((parent.empty() ? fs::path(".") : parent) / fmt::format(".{}.parts-XXXXXX", fs::path(jsonPath).filename().string()))
          .string();
  if (!::mkdtemp(name.data())) throw Error(fmt::format("cannot make a folder beside {}: {}", jsonPath, std::strerror(errno)));
  return name;
}

// The request's backend, once the request is one trainscope can run as variants.
BackendKind checkedBackend(const VariantRequest& req) {
  const std::vector<std::string>& options = traitsOf(req.subcommand).options;
  const std::string named = optionList(options, "/", "/");
  const bool plural = options.size() > 1;
  if (launchedByMpi())
    throw UsageError(fmt::format(
        "{} {} one run per setting {}: start trainscope without mpirun, and give the launcher with --launcher 'mpirun -np 4'",
        named, plural ? "launch" : "launches", plural ? "themselves" : "itself"));
  if (req.jsonPath.empty())
    throw UsageError(fmt::format("{} {} --json FILE for the merged result", named, plural ? "need" : "needs"));
  const BackendKind backend = resolveBackend(req.backend);
  if ((!req.algos.empty() || !req.protos.empty()) && backend != BackendKind::kNccl)
    throw UsageError("--algos and --protos are NCCL settings: they need --backend nccl");
  return backend;
}

// What every variant's run shares: how it is started, and where it writes its part.
struct VariantLaunch {
  const VariantRequest& req;
  BackendKind backend;
  std::string self;                    // this program
  std::vector<std::string> childArgs;  // the user's flags without the variant ones
  fs::path scratch;                    // the variants' documents
};

// The merged result as the variants add to it: the first run block any of them left, and every one's layouts.
struct Merged {
  nlohmann::json run;
  nlohmann::json layouts = nlohmann::json::array();
};

// What a variant's run measured, finished or not: from its document, else from its stream. Its run block and
// layouts join `merged`.
std::vector<nlohmann::json> variantRecords(const fs::path& part, const Variant& v, Merged& merged) {
  if (const nlohmann::json doc = readDocument(part.string()); doc.is_object()) {
    if (merged.run.is_null()) merged.run = doc["run"];
    for (auto l : doc["run"]["layouts"]) {
      l["step"] = v.name;
      merged.layouts.push_back(l);
    }
    return doc["records"].get<std::vector<nlohmann::json>>();
  }
  StreamedRun streamed = readStream(ResultWriter::streamPathFor(part.string()));
  if (merged.run.is_null()) merged.run = std::move(streamed.run);
  return std::move(streamed.records);
}

// A record as the merged result keeps it: with the variant's transport and environment, and where the subcommand
// takes NCCL's settings, its algorithm and protocol.
void labelRecord(nlohmann::json& rec, const Variant& v, bool ncclSettings) {
  labelWithTransport(rec, v.transport, v.env);
  if (!ncclSettings || !rec.contains("transport")) return;
  // A record that names its own algo (reduce_scatter's MPI call) keeps it: --algos is NCCL's alone.
  if (!v.algo.empty())
    rec["algo"] = v.algo;
  else if (!rec.contains("algo"))
    rec["algo"] = nullptr;
  rec["proto"] = v.proto.empty() ? nlohmann::json(nullptr) : nlohmann::json(v.proto);
}

// The path `value` of `kind` as variant `name`'s run writes it: DIR/name, or stem.name.ext (a name of several settings,
// shm/ring/LL, with '-' for '/': one folder level, one file name).
std::string variantPath(const std::string& value, PathKind kind, std::string name) {
  std::replace(name.begin(), name.end(), '/', '-');
  const fs::path p(value);
  if (kind == PathKind::kFolder) return (p / name).string();
  return (p.parent_path() / (p.stem().string() + "." + name + p.extension().string())).string();
}

// The run's arguments with every path option of `paths` (both "--opt value" and "--opt=value") made its own.
std::vector<std::string> withVariantPaths(std::vector<std::string> args, const std::vector<VariantPath>& paths,
                                          const std::string& name) {
  for (std::size_t i = 0; i < args.size(); ++i)
    for (const auto& [option, kind] : paths) {
      if (args[i] == option && i + 1 < args.size())
        args[i + 1] = variantPath(args[i + 1], kind, name);
      else if (args[i].rfind(option + "=", 0) == 0)
        args[i] = option + "=" + variantPath(args[i].substr(option.size() + 1), kind, name);
    }
  return args;
}

// Runs variant i of `count` and adds what it measured to `writer` and `merged`; its exit code.
int runVariant(const VariantLaunch& launch, std::size_t i, std::size_t count, const Variant& v, ResultWriter& writer,
               Merged& merged) {
  const SubcommandTraits traits = traitsOf(launch.req.subcommand);
  const BackendKind childBackend = v.transport.backend.value_or(launch.backend);
  const fs::path part = launch.scratch / fmt::format("{}.json", i);
  std::map<std::string, std::string> childEnv = v.env;  // the variant's settings, and where its records end up
  childEnv[kMergedIntoVariable] = launch.req.jsonPath;
  const std::vector<std::string> args =
      variantCommand(launch.req.launcher, childEnv, childBackend, traits.backendFlag, launch.self,
                     withVariantPaths(launch.childArgs, launch.req.paths, v.name), part);
  std::string envText;
  for (const auto& [k, val] : v.env) envText += fmt::format(" {}={}", k, val);
  std::printf("#\n# ===== variant %zu/%zu: %s (%s%s)\n", i + 1, count, printable(v.name).c_str(),
              v.transport.description.empty() ? "NCCL settings" : v.transport.description.c_str(), printable(envText).c_str());
  std::fflush(stdout);
  const int childRc = runChild(args, ChildOptions{childEnv, "", false});
  for (auto& rec : variantRecords(part, v, merged)) {
    labelRecord(rec, v, traits.ncclSettings);
    writer.add(rec);
  }
  return childRc;
}

// The merged document: the first variant's run block, with this command line, the variants and every layout.
void finishMerged(ResultWriter& writer, Merged merged, const std::vector<Variant>& variants, const char* subcommand,
                  const std::vector<std::string>& argv) {
  nlohmann::json& run = merged.run;
  run.erase("kind");
  run.erase("schema");
  run["subcommand"] = subcommand;
  run["command_line"] = argv;
  // What --transports, --algos and --protos resolved to: the variants run (the options' own keys are the table's).
  nlohmann::json& ran = run["config"]["resolved"]["variants"] = nlohmann::json::array();
  for (const auto& v : variants) ran.push_back({{"name", v.name}, {"env", v.env}});
  run["layouts"] = merged.layouts;
  run["ended_at"] = isoTimeNow();
  writer.finish(run);
}

}  // namespace

int runVariants(const VariantRequest& req, const std::vector<std::string>& argv) {
  const BackendKind backend = checkedBackend(req);
  const std::vector<Variant> variants = variantsOf(req, backend);
  const SubcommandTraits traits = traitsOf(req.subcommand);
  const std::string self = fs::read_symlink("/proc/self/exe").string();
  std::vector<std::string> stripped = traits.options;  // each run's own: its setting, its launch, its part file
  stripped.insert(stripped.end(), {"--launcher", "--json"});
  if (traits.backendFlag) stripped.push_back("--backend");
  auto childArgs = withoutOptions(std::vector<std::string>(argv.begin() + 1, argv.end()), stripped);
  ResultWriter writer(req.jsonPath);
  nlohmann::json names = nlohmann::json::array();
  for (const auto& v : variants) names.push_back(v.name);
  writer.begin({{"subcommand", traits.name}, {"command_line", argv}, {"variants", names}});  // the stream's first line
  const VariantLaunch launch{req, backend, self, std::move(childArgs), makeScratchFolder(req.jsonPath)};
  Merged merged;
  int rc = 0;
  std::string failedVariant;
  for (std::size_t i = 0; i < variants.size(); ++i) {
    const int childRc = runVariant(launch, i, variants.size(), variants[i], writer, merged);
    if (childRc != 0 && rc == 0) {
      rc = childRc;
      failedVariant = variants[i].name;
    }
  }
  std::error_code ec;
  fs::remove_all(launch.scratch, ec);
  if (!merged.run.is_null()) {
    finishMerged(writer, std::move(merged), variants, traits.name, argv);
    if (req.summary) req.summary(writer.records());
    std::printf("#\n# results: %s (%zu variants merged)\n", printable(req.jsonPath).c_str(), variants.size());
  }
  if (rc != 0)
    std::fprintf(stderr, "trainscope: error: variant %s ended with exit code %d (the records of every variant are in %s)\n",
                 printable(failedVariant).c_str(), rc, printable(req.jsonPath).c_str());
  return rc;
}

}  // namespace ts
