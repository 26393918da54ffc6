#include "bench/run/child_process.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <optional>

#include <fmt/format.h>

#include "base/atomic_file.h"
#include "base/error.h"

extern char** environ;

namespace ts {
namespace {

bool launcherVariable(const std::string& name) {
  for (const char* keep : {"OMPI_ALLOW_RUN_AS_ROOT", "OMPI_MCA_btl", "OMPI_MCA_pml", "OMPI_MCA_rmaps", "OMPI_MCA_coll",
                           "OMPI_MCA_mtl", "OMPI_MCA_osc", "OMPI_MCA_hwloc", "OMPI_MCA_opal_cuda"})
    if (name.rfind(keep, 0) == 0) return false;
  return name.rfind("OMPI_", 0) == 0 || name.rfind("PMIX_", 0) == 0 || name.rfind("PRTE_", 0) == 0;
}

}  // namespace

int runChild(const std::vector<std::string>& argv, const ChildOptions& options) {
  std::optional<StreamFile> log;  // made like every file trainscope writes: never through a planted link
  if (!options.logPath.empty()) log.emplace(options.logPath);
  const int fd = log ? log->fd() : -1;
  const pid_t pid = ::fork();
  if (pid < 0) throw Error(fmt::format("fork failed: {}", std::strerror(errno)));
  if (pid == 0) {
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
    }
    if (options.scrubLauncher) {
      std::vector<std::string> names;
      for (char** e = environ; *e; ++e) {
        const std::string kv = *e;
        const std::string name = kv.substr(0, kv.find('='));
        if (launcherVariable(name)) names.push_back(name);
      }
      for (const auto& n : names) ::unsetenv(n.c_str());
    }
    for (const auto& [k, v] : options.env) ::setenv(k.c_str(), v.c_str(), 1);
    std::vector<char*> cargv;
    for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
    cargv.push_back(nullptr);
    ::execvp(cargv[0], cargv.data());
    std::fprintf(stderr, "trainscope: error: cannot start %s: %s\n", cargv[0], std::strerror(errno));
    std::_Exit(127);
  }
  log.reset();
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) throw Error(fmt::format("waitpid: {}", std::strerror(errno)));
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace ts
