#pragma once
// Interconnect A/B: the same collective sweep once per transport setting (and NCCL algorithm/protocol),
// each in its own launch, because NCCL and Open MPI read their settings when they start. trainscope
// launches each setting itself (with --launcher), then merges the records into one result, each labelled
// with its transport and the environment it ran under.
#include <map>
#include <optional>
#include <string>
#include <vector>

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

struct VariantRequest {
  std::vector<std::string> transports, algos, protos;  // empty = not an axis
  std::string launcher;                                // e.g. "mpirun -np 8"; "" = the backend's default
  BackendKind backend = BackendKind::kAuto;
  std::string jsonPath;
};

// Runs one child run per (transport, algo, proto), merges, writes jsonPath; returns the exit code.
int runVariants(const VariantRequest& req, const std::vector<std::string>& argv);

// argv without the options named (both "--opt value" and "--opt=value" forms).
std::vector<std::string> withoutOptions(const std::vector<std::string>& argv, const std::vector<std::string>& names);

}  // namespace ts
