#pragma once
// Interconnect A/B: the same job once per transport setting (and NCCL algorithm/protocol), each in its own
// launch, because NCCL and Open MPI read their settings when they start. trainscope launches each setting
// itself (with --launcher), then merges the records into one result, each labelled with its transport and the
// environment it ran under. `collectives` (a sweep per setting) and `train` (a training job per setting) run
// their variants through this one implementation; `scale` labels its points with the same settings.
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "comm/communicator.h"

namespace ts {

struct TransportSetting {
  std::string name;
  std::optional<BackendKind> backend;  // set when the setting is a backend (mpi)
  std::map<std::string, std::string> env;
  std::string description;
};

// The settings known for a backend, in one table: NCCL: nvlink, pcie, ib, socket, mpi; MPI: shm, tcp.
// UsageError naming the known ones for an unknown name.
TransportSetting transportSetting(const std::string& name, BackendKind backend);
std::vector<std::string> transportNames(BackendKind backend);
// The setting of a job whose backend follows its --device (train, scale: cuda: nccl, cpu: mpi): as above, but a setting
// that is a backend of its own (nccl's `mpi`) is one line (UsageError) naming `subcommand`.
TransportSetting deviceTransportSetting(const std::string& name, BackendKind backend, const char* subcommand);

// The subcommands whose runs can be variants: what each takes decides the options, the errors and the labels.
enum class VariantSubcommand {
  kCollectives,  // --transports, --algos, --protos; each run told its backend (--backend)
  kTrain,        // --transports; the backend follows --device (cpu: mpi, cuda: nccl)
};

// An option whose value is a path every run writes: each run gets its own, named for its variant, so that none
// overwrites another's (a folder: DIR/shm; a file: log.shm.txt).
enum class PathKind { kFolder, kFile };
struct VariantPath {
  std::string option;  // "--trace"
  PathKind kind;
};

struct VariantRequest {
  VariantSubcommand subcommand = VariantSubcommand::kCollectives;
  std::vector<std::string> transports, algos, protos;  // empty = not an axis
  std::string launcher;                                // e.g. "mpirun -np 8"; "" = the backend's default
  BackendKind backend = BackendKind::kAuto;
  std::string jsonPath;
  std::vector<VariantPath> paths;  // the subcommand's options that name where a run writes
  // Called with the merged records once every variant ran, before the result's path is printed: the console's
  // side-by-side summary (none: nothing printed).
  std::function<void(const nlohmann::json& records)> summary;
};

// Whether the request asks for variants at all; --launcher without any variant option is one line (UsageError).
bool variantsRequested(const VariantRequest& req);

// Runs one child run per (transport, algo, proto), merges, writes jsonPath; returns the exit code. Every check of
// the request (a name it does not know, mpirun around it, no --json) is one line before any run starts.
int runVariants(const VariantRequest& req, const std::vector<std::string>& argv);

// A record as a merged result keeps it: with its setting's name and environment (`transport`, `transport_env`),
// where its kind ran over the fabric (collective, train, train_progress, scaling) or sampled the machine meanwhile
// (telemetry); others (a GEMM ceiling, measured on one process) are left as they are.
void labelWithTransport(nlohmann::json& rec, const TransportSetting& setting, const std::map<std::string, std::string>& env);

// A launcher's command line told to pass `env` to every rank: mpirun/mpiexec take `-x NAME` (it passes a variable
// to the ranks on other hosts only when told); any other launcher is left as it is (srun exports the environment).
std::vector<std::string> withEnvPassed(std::vector<std::string> launcher, const std::map<std::string, std::string>& env);

// argv without the options named (both "--opt value" and "--opt=value" forms).
std::vector<std::string> withoutOptions(const std::vector<std::string>& argv, const std::vector<std::string>& names);

}  // namespace ts
