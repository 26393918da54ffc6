#pragma once
// The system inventory every result carries (`trainscope env`): host, CPU, memory, NUMA, GPUs and the
// links between them, NICs, library versions and the environment variables that change behaviour.
#include <string>

#include <nlohmann/json.hpp>

#include "base/host_name.h"  // hostName(), which results name hosts by

namespace ts {

// Everything about this host that this process can see.
nlohmann::json collectHostInventory();
// The software versions: trainscope, driver, CUDA runtime, cuBLAS, cuDNN, NCCL, MPI (those built in).
nlohmann::json collectVersions();
// NCCL_*, CUDA_VISIBLE_DEVICES and the other variables that steer communication libraries.
nlohmann::json collectEnvironment();

// The parts, one file each.
nlohmann::json collectCpuInventory();  // inventory_cpu.cpp (hwloc where built in, else /proc)
nlohmann::json collectGpuInventory();  // inventory_gpu.cpp: {"available", "reason", "devices", "links"}
nlohmann::json collectGpuVersions();   // inventory_gpu.cpp: driver, CUDA, cuBLAS, cuDNN, NCCL (null where not built in)
nlohmann::json collectNicInventory();  // inventory_nic.cpp (libibverbs where built in, and /sys/class/net)

// Text rendering for `trainscope env`.
std::string formatInventory(const nlohmann::json& host, const nlohmann::json& versions, const nlohmann::json& env);

}  // namespace ts
