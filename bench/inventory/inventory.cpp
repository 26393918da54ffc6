#include "bench/inventory/inventory.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "base/json_text.h"
#include "base/units.h"
#include "trainscope/build_info.h"
#ifdef TRAINSCOPE_HAVE_MPI
#include "comm/mpi/mpi_bootstrap.h"
#endif

extern char** environ;

namespace ts {

nlohmann::json collectHostInventory() {
  utsname u{};
  ::uname(&u);
  nlohmann::json host = {
      {"hostname", hostName()},        {"os", fmt::format("{} {} {}", u.sysname, u.release, u.machine)},
      {"cpu", collectCpuInventory()},  {"gpus", collectGpuInventory()},
      {"nics", collectNicInventory()},
  };
  return host;
}

nlohmann::json collectVersions() {
  nlohmann::json v = {{"trainscope", build::kVersion}, {"git_commit", build::kGitCommit}};
#ifdef TRAINSCOPE_HAVE_MPI
  v["mpi"] = mpiLibraryVersion();
#else
  v["mpi"] = nullptr;
#endif
  v.update(collectGpuVersions());
  return v;
}

nlohmann::json collectEnvironment() {
  static constexpr const char* kPrefixes[] = {
      "NCCL_", "CUDA_", "OMPI_MCA_", "UCX_", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "TRAINSCOPE_"};
  // What mpirun sets for its own processes (job ids, daemon URIs) says nothing about the measurement.
  static constexpr const char* kLauncherInternal[] = {"OMPI_MCA_orte_", "OMPI_MCA_ess", "OMPI_MCA_pmix", "OMPI_MCA_initial_wdir",
                                                      "OMPI_MCA_shmem_RUNTIME_QUERY_hint"};
  nlohmann::json env = nlohmann::json::object();
  for (char** e = environ; e && *e; ++e) {
    const std::string kv = *e;
    const auto eq = kv.find('=');
    if (eq == std::string::npos) continue;
    const std::string key = kv.substr(0, eq);
    bool internal = false;
    for (const char* p : kLauncherInternal) internal = internal || key.rfind(p, 0) == 0;
    if (internal) continue;
    for (const char* p : kPrefixes)
      if (key.rfind(p, 0) == 0) env[key] = kv.substr(eq + 1);
  }
  return env;
}

namespace {
std::string orDash(const nlohmann::json& j) {
  if (j.is_null()) return "-";
  if (j.is_string()) return j.get<std::string>();
  return jsonText(j);
}
}  // namespace

std::string formatInventory(const nlohmann::json& host, const nlohmann::json& versions, const nlohmann::json& env) {
  std::string out;
  const auto& cpu = host["cpu"];
  out += fmt::format("host      {}  ({})\n", host["hostname"].get<std::string>(), host["os"].get<std::string>());
  out += fmt::format("cpu       {}\n", orDash(cpu["model"]));
  out += fmt::format("          {} socket(s), {} core(s), {} hardware thread(s), {} NUMA node(s)\n", orDash(cpu["sockets"]),
                     orDash(cpu["cores"]), orDash(cpu["threads"]), orDash(cpu["numa_nodes"]));
  out += fmt::format("memory    {}\n", formatBytes(cpu["memory_bytes"].get<std::uint64_t>()));
  const auto& gpus = host["gpus"];
  if (!gpus["available"].get<bool>()) {
    out += fmt::format("gpus      none ({})\n", gpus["reason"].get<std::string>());
  } else {
    out += fmt::format("gpus      {}\n", gpus["devices"].size());
    for (const auto& d : gpus["devices"]) {
      out +=
          fmt::format("  [{}] {}  {}  bus {}  {}  {} SMs  cc {}  sm {} MHz  mem {} MHz\n", d["index"].get<int>(),
                      d["name"].get<std::string>(), d["uuid"].get<std::string>(), d["pci_bus_id"].get<std::string>(),
                      formatBytes(d["memory_bytes"].get<std::uint64_t>()), d["sm_count"].get<int>(),
                      d["compute_capability"].get<std::string>(), orDash(d["sm_clock_max_mhz"]), orDash(d["mem_clock_max_mhz"]));
    }
    const auto& links = gpus["links"];
    if (links.contains("matrix")) {
      out += "gpu links (as nvidia-smi topo -m: NV<n> = n NVLinks, PIX/PXB/PHB/NODE/SYS = PCIe path)\n        ";
      const auto& m = links["matrix"];
      for (std::size_t j = 0; j < m.size(); ++j) out += fmt::format("{:>7}", fmt::format("GPU{}", j));
      out += "\n";
      for (std::size_t i = 0; i < m.size(); ++i) {
        out += fmt::format("  {:<6}", fmt::format("GPU{}", i));
        for (const auto& cell : m[i]) out += fmt::format("{:>7}", cell.get<std::string>());
        out += "\n";
      }
    } else {
      out += fmt::format("gpu links unavailable ({})\n", links.value("reason", "unknown"));
    }
  }
  const auto& nics = host["nics"];
  out += "nics\n";
  for (const auto& r : nics["rdma"])
    out += fmt::format("  {} port {}  {}  {}  {} Gb/s\n", r["device"].get<std::string>(), r["port"].get<int>(),
                       r["link_layer"].get<std::string>(), r["state"].get<std::string>(), orDash(r["rate_gbps"]));
  if (nics["rdma"].empty()) out += fmt::format("  no InfiniBand/RoCE devices ({})\n", nics.value("rdma_reason", "none found"));
  for (const auto& n : nics["net"])
    out += fmt::format("  {}  {}  {} Mb/s  mtu {}\n", n["name"].get<std::string>(), n["state"].get<std::string>(),
                       orDash(n["speed_mbps"]), orDash(n["mtu"]));
  out += "versions\n";
  for (const auto& [k, v] : versions.items()) out += fmt::format("  {:<14}{}\n", k, orDash(v));
  out += "environment\n";
  if (env.empty()) out += "  (no NCCL_*, CUDA_*, UCX_*, OMPI_MCA_* variables set)\n";
  for (const auto& [k, v] : env.items()) out += fmt::format("  {}={}\n", k, v.get<std::string>());
  return out;
}

}  // namespace ts
