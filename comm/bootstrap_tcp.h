#pragma once
// The environment-variable bootstrap over TCP, for launchers without MPI (torchrun, Kubernetes, containers).
// Process 0 listens on the address MASTER_ADDR resolves to (only there), port MASTER_PORT (TRAINSCOPE_MASTER_PORT
// when set; MASTER_PORT + 1 under torchrun, whose rendezvous store holds MASTER_PORT); every other
// process connects and says hello with its RANK, its WORLD_SIZE and the job token (job_token.h); process 0
// admits one connection per rank and turns away everything else without stopping (bootstrap_admission.h).
// All exchanges then go through process 0 (a star), plenty for the few small messages of the control plane.
// A process with the token is a member, but what it may make process 0 hold is bounded: the strings it sends
// process 0 over the run total at most memberByteBudget bytes, each length checked before anything is allocated.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "comm/bootstrap.h"
#include "comm/launcher.h"

namespace ts {

inline constexpr std::uint64_t kMemberByteBudget = 256ull << 20;

struct TcpBootstrapConfig {
  int rank = 0;
  int size = 1;
  int localRank = -1;  // -1: derive from host names
  std::string masterAddr = "127.0.0.1";
  int masterPort = 29500;
  double connectTimeoutS = 60.0;  // for the whole job to meet
  double helloTimeoutS = 5.0;     // for one connection to process 0 to say hello, else it is dropped
  std::string jobToken;           // every hello carries it; empty: none (any hello is admitted)
  std::string jobTokenSource;     // where it came from, for messages
  // What each other process's strings (allGatherStrings) may total over the run on process 0: a run's metadata,
  // inventories and cards take kilobytes; a trace or the telemetry of a long run some megabytes.
  std::uint64_t memberByteBudget = kMemberByteBudget;
  // Where process 0 reports each connection it turns away (default: "trainscope: bootstrap: ..." on stderr).
  std::function<void(const std::string&)> log;
};

std::unique_ptr<Bootstrap> makeTcpBootstrap(const TcpBootstrapConfig& cfg);
// Reads RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT, TRAINSCOPE_BOOTSTRAP_TIMEOUT and the job
// token; LocalUsageError naming a missing or bad variable, before any connection is made. `launcher` (as
// detectLaunch found it) decides the port: under torchrun, whose store holds MASTER_PORT, MASTER_PORT + 1.
std::unique_ptr<Bootstrap> makeTcpBootstrapFromEnv(Launcher launcher);

}  // namespace ts
