// The environment-variable bootstrap with real processes on loopback: every process must see every
// other's contribution in rank order, local ranks must be derived, and a wrong world must fail clearly.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>

#include "base/error.h"
#include "comm/bootstrap_tcp.h"

namespace ts {
namespace {

int freePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  socklen_t len = sizeof(a);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

// Runs one process of the world; returns 0 when everything it saw was right.
int worldMember(int rank, int size, int port) {
  try {
    TcpBootstrapConfig cfg;
    cfg.rank = rank;
    cfg.size = size;
    cfg.masterAddr = "127.0.0.1";
    cfg.masterPort = port;
    cfg.connectTimeoutS = 20;
    auto boot = makeTcpBootstrap(cfg);
    if (boot->rank() != rank || boot->size() != size || boot->kind() != "env") return 10;
    if (boot->localRank() != rank) return 11;  // all on one host: local rank = rank
    const auto strings = boot->allGatherStrings(std::string(static_cast<std::size_t>(rank) * 3, 'a' + rank));
    for (int p = 0; p < size; ++p)
      if (strings[p] != std::string(static_cast<std::size_t>(p) * 3, 'a' + p)) return 12;
    if (boot->sum(rank + 1) != size * (size + 1) / 2) return 13;
    const auto d = boot->allGatherDoubles({rank * 1.5, -1.0});
    for (int p = 0; p < size; ++p)
      if (d[2 * p] != p * 1.5 || d[2 * p + 1] != -1.0) return 14;
    boot->barrier();
    if (!boot->allTrue(true) || boot->allTrue(rank != size - 1)) return 15;
    return 0;
  } catch (const std::exception&) {
    return 20;
  }
}

}  // namespace

TEST(TcpBootstrap, FourProcessesExchangeInRankOrder) {
  const int size = 4, port = freePort();
  std::vector<pid_t> kids;
  for (int r = 1; r < size; ++r) {
    const pid_t pid = ::fork();
    if (pid == 0) std::_Exit(worldMember(r, size, port));
    kids.push_back(pid);
  }
  EXPECT_EQ(worldMember(0, size, port), 0);
  for (pid_t pid : kids) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0);
  }
}

TEST(TcpBootstrap, RejectsImpossibleWorlds) {
  TcpBootstrapConfig cfg;
  cfg.size = 2;
  cfg.rank = 2;
  EXPECT_THROW(makeTcpBootstrap(cfg), UsageError);
  cfg.rank = 0;
  cfg.masterPort = 70000;
  EXPECT_THROW(makeTcpBootstrap(cfg), UsageError);
}

TEST(TcpBootstrap, MissingPeerTimesOutWithAClearError) {
  TcpBootstrapConfig cfg;
  cfg.size = 2;
  cfg.rank = 0;
  cfg.masterPort = freePort();
  cfg.connectTimeoutS = 0.5;
  try {
    makeTcpBootstrap(cfg);
    FAIL() << "a world with a missing process came up";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("only 1 of 2 processes connected"), std::string::npos) << e.what();
  }
}

TEST(TcpBootstrap, SingleProcessNeedsNoNetwork) {
  TcpBootstrapConfig cfg;
  auto boot = makeTcpBootstrap(cfg);
  EXPECT_EQ(boot->size(), 1);
  EXPECT_EQ(boot->sum(5), 5);
}

}  // namespace ts
