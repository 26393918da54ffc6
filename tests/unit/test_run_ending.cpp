// How a run of several processes ends without a launcher to end it (RANK/WORLD_SIZE over the TCP bootstrap,
// bench/failures/run_ending.h): real processes on loopback, forked here. A process that fails, or dies without a word,
// while the others wait or work: every process ends within seconds, and process 0 alone prints the one true line.
// (Under mpirun the same is tested end to end: tests/integration/test_failures_end_in_seconds.py.)
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "base/error.h"
#include "base/stop_request.h"
#include "bench/failures/activity.h"
#include "bench/failures/peer_census.h"
#include "bench/failures/run_ending.h"
#include "comm/bootstrap_tcp.h"

namespace ts {
namespace {

int freePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  socklen_t len = sizeof(a);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

enum class Role { kWaits, kWorks, kFails, kDies };

// One process of the world: meets the others, opens the lifelines, then plays its role. Never returns.
[[noreturn]] void member(int rank, int size, int port, Role role) {
  std::unique_ptr<Bootstrap> boot;
  try {
    TcpBootstrapConfig cfg;
    cfg.rank = rank;
    cfg.size = size;
    cfg.masterPort = port;
    cfg.connectTimeoutS = 20;
    cfg.jobToken = "unit-test-job";
    boot = makeTcpBootstrap(cfg);
    activity::setIdentity(rank, size, "here");
    PeerCensus census(*boot, "here");
    ending::openLifelines(*boot, census.mine());
    boot->barrier();  // every lifeline is open
    switch (role) {
      case Role::kFails:
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        throw Error("step 3: bad input found late");
      case Role::kDies:
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        ::raise(SIGKILL);
        break;
      case Role::kWaits:
        boot->barrier();  // for a peer that never comes: only the run's ending ends it
        break;
      case Role::kWorks:
        activity::set("its own long work");
        std::this_thread::sleep_for(std::chrono::seconds(60));
        break;
    }
    std::_Exit(90);                // never here
  } catch (const PeerFailed& e) {  // as bench/main.cpp
    ending::endRun({ending::FailureKind::kPeer, e.what(), e.exitCode()});
    std::_Exit(92);
  } catch (const Error& e) {
    // As RunSession does on the way out of a failure nobody agreed on: the bootstrap goes without closing its
    // connections, which a peer would take for this process's death.
    if (boot) boot->abandon();
    boot.reset();
    ending::endRun({ending::FailureKind::kError, activity::who() + ": " + e.what(), 2});
    std::_Exit(91);  // endRun ends a process with a lifeline
  }
}

struct Ended {
  std::vector<int> codes;        // each process's exit code (-signal when a signal ended it)
  std::vector<std::string> err;  // each process's stderr
  double seconds = 0;            // from the start until every process ended
};

// Forks one process per role, each with its own stderr, and waits (at most 60 s) for all of them.
Ended runWorld(const std::vector<Role>& roles) {
  const int port = freePort();
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<pid_t> pids;
  std::vector<int> pipes;
  for (std::size_t r = 0; r < roles.size(); ++r) {
    int fds[2];
    EXPECT_EQ(::pipe(fds), 0);
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::dup2(fds[1], STDERR_FILENO);
      ::close(fds[0]);
      member(static_cast<int>(r), static_cast<int>(roles.size()), port, roles[r]);
    }
    ::close(fds[1]);
    ::fcntl(fds[0], F_SETFL, O_NONBLOCK);
    pids.push_back(pid);
    pipes.push_back(fds[0]);
  }
  Ended out;
  out.codes.assign(roles.size(), 0);
  out.err.assign(roles.size(), "");
  std::size_t left = roles.size();
  while (left > 0 && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(60)) {
    for (std::size_t r = 0; r < roles.size(); ++r) {
      char buf[4096];
      for (ssize_t k; (k = ::read(pipes[r], buf, sizeof(buf))) > 0;) out.err[r].append(buf, static_cast<std::size_t>(k));
      if (pids[r] <= 0) continue;
      int status = 0;
      if (::waitpid(pids[r], &status, WNOHANG) == pids[r]) {
        out.codes[r] = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
        pids[r] = 0;
        --left;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (std::size_t r = 0; r < roles.size(); ++r) {
    if (pids[r] > 0) {
      ::kill(pids[r], SIGKILL);
      ::waitpid(pids[r], nullptr, 0);
      out.codes[r] = 999;  // still running after 60 s
    }
    char buf[4096];
    for (ssize_t k; (k = ::read(pipes[r], buf, sizeof(buf))) > 0;) out.err[r].append(buf, static_cast<std::size_t>(k));
    ::close(pipes[r]);
  }
  return out;
}

int errorLines(const std::string& err) {
  int n = 0;
  for (std::size_t at = 0; (at = err.find("trainscope: error:", at)) != std::string::npos; ++at) ++n;
  return n;
}

TEST(RunEnding, WithoutALauncherAProcessThatFailsEndsEveryProcessWithProcess0SayingItsLine) {
  // Process 0 and rank 1 wait for rank 2 in a bootstrap exchange it never joins; rank 3 is in its own work.
  const Ended e = runWorld({Role::kWaits, Role::kWaits, Role::kFails, Role::kWorks});
  EXPECT_EQ(e.codes, (std::vector<int>{2, 2, 2, 2})) << e.err[0];
  EXPECT_LT(e.seconds, 15.0);  // the bootstrap's waits have no timeout here: only the ending ends them
  EXPECT_EQ(errorLines(e.err[0]), 1) << e.err[0];
  EXPECT_NE(e.err[0].find("trainscope: error: rank 2 of 4 (here): step 3: bad input found late; ending all ranks\n"),
            std::string::npos)
      << e.err[0];
  for (int r = 1; r < 4; ++r) EXPECT_EQ(errorLines(e.err[r]), 0) << r << ": " << e.err[r];
}

TEST(RunEnding, WithoutALauncherAProcessKilledWithoutAWordIsNamedByProcess0AndEveryProcessEnds) {
  const Ended e = runWorld({Role::kWorks, Role::kWaits, Role::kDies});
  EXPECT_EQ(e.codes, (std::vector<int>{1, 1, -SIGKILL})) << e.err[0];
  EXPECT_LT(e.seconds, 15.0);
  EXPECT_EQ(errorLines(e.err[0]), 1) << e.err[0];
  EXPECT_NE(e.err[0].find("trainscope: error: rank 0 of 3 (here): its own long work: rank 2 of 3 (here) ended without a "
                          "word (killed, or crashed); ending all ranks\n"),
            std::string::npos)
      << e.err[0];
  EXPECT_EQ(errorLines(e.err[1]), 0) << e.err[1];
}

}  // namespace
}  // namespace ts
