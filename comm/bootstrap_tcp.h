#pragma once
// The environment-variable bootstrap over TCP, for launchers without MPI (torchrun, Kubernetes, containers).
// Process 0 listens on MASTER_ADDR:MASTER_PORT; every other process connects to it; all exchanges go
// through process 0 (a star), which is plenty for the few small messages of the control plane.
#include <memory>
#include <string>

#include "comm/bootstrap.h"

namespace ts {

struct TcpBootstrapConfig {
  int rank = 0;
  int size = 1;
  int localRank = -1;  // -1: derive from host names
  std::string masterAddr = "127.0.0.1";
  int masterPort = 29500;
  double connectTimeoutS = 60.0;
};

std::unique_ptr<Bootstrap> makeTcpBootstrap(const TcpBootstrapConfig& cfg);
// Reads RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT; UsageError naming a missing or bad variable.
std::unique_ptr<Bootstrap> makeTcpBootstrapFromEnv();

}  // namespace ts
