#pragma once
// Running another trainscope (or its launcher) as a child process: the interconnect A/B variants and the
// points of a scaling study each start a job of their own, because NCCL and MPI read their settings and
// their world when they start.
#include <map>
#include <string>
#include <vector>

namespace ts {

struct ChildOptions {
  std::map<std::string, std::string> env;  // set in the child
  std::string logPath;                     // stdout and stderr go here ("" = this process's); an earlier log is kept aside
  // Unset the variables an MPI launcher gives its processes (not the user's MCA settings), so that a
  // launcher started from inside a job (a suite under mpirun) starts a job of its own.
  bool scrubLauncher = false;
};

// Runs argv (found on PATH) and waits; the exit status, 128+signal when killed, 127 when it cannot start.
int runChild(const std::vector<std::string>& argv, const ChildOptions& options = {});

}  // namespace ts
