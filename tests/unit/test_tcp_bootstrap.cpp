// The environment-variable bootstrap with real processes on loopback: every process must see every
// other's contribution in rank order, local ranks must be derived, and a wrong world must fail clearly.
// Process 0's admission is also driven here by raw connections, whose order the test controls.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/host_name.h"
#include "comm/bootstrap_admission.h"
#include "comm/bootstrap_hello.h"
#include "comm/bootstrap_interface.h"
#include "comm/bootstrap_tcp.h"
#include "comm/liveness.h"
#include "comm/tcp_socket.h"

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
    cfg.jobToken = "unit-test-job";
    auto boot = makeTcpBootstrap(cfg);
    if (boot->rank() != rank || boot->size() != size || boot->kind() != BootstrapKind::kEnv) return 10;
    if (boot->localRank() != rank) return 11;  // all on one host: local rank = rank
    if (boot->localSize() != size) return 16;  // and the host's processes are all of them
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

// A connection to process 0 on loopback that says `h` (when given) and returns its answer, if any.
struct Stranger {
  Socket socket;
  std::string address;  // its own end, as process 0 logs it
  explicit Stranger(int port) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<uint16_t>(port));
    for (int attempt = 0; attempt < 400; ++attempt) {  // until process 0 listens
      socket = Socket(::socket(AF_INET, SOCK_STREAM, 0));
      if (::connect(socket.fd(), reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    sockaddr_in mine{};
    socklen_t len = sizeof(mine);
    ::getsockname(socket.fd(), reinterpret_cast<sockaddr*>(&mine), &len);
    address = "127.0.0.1:" + std::to_string(ntohs(mine.sin_port));
    socket.setTimeouts(20);
  }
  hello::Answer say(const hello::Hello& h) const {
    const std::string bytes = hello::encodeHello(h);
    socket.sendAll(bytes.data(), bytes.size(), "process 0");
    std::string got;
    for (;;) {
      const auto p = hello::parseAnswer(got);
      if (p.state == hello::Parsed<hello::Answer>::State::kComplete) return p.message;
      if (p.state == hello::Parsed<hello::Answer>::State::kInvalid) throw Error(p.why);
      std::string more(p.needed - got.size(), '\0');
      socket.recvAll(more.data(), more.size(), "process 0");
      got += more;
    }
  }
  bool closedByPeer() const {  // blocks until process 0 closes it (or 20 s pass)
    char c;
    return ::recv(socket.fd(), &c, 1, 0) == 0;
  }
};

TcpBootstrapConfig processZero(int size, int port, std::vector<std::string>& log, std::mutex& m) {
  TcpBootstrapConfig cfg;
  cfg.size = size;
  cfg.masterPort = port;
  cfg.connectTimeoutS = 20;
  cfg.jobToken = "tok";
  cfg.log = [&](const std::string& line) {
    std::lock_guard<std::mutex> lock(m);
    log.push_back(line);
  };
  return cfg;
}

}  // namespace

TEST(TcpBootstrap, DuplicateAndImpossibleRanksAreRefusedWithALineNamingThem) {
  const int port = freePort();
  std::vector<std::string> log;
  std::mutex m;
  const TcpBootstrapConfig cfg = processZero(3, port, log, m);
  std::vector<std::string> answers, addresses;
  std::thread others([&] {
    Stranger first(port), twin(port), outside(port), second(port);
    answers.push_back(first.say({1, 3, "tok"}).reason);  // admitted: ""
    answers.push_back(twin.say({1, 3, "tok"}).reason);
    answers.push_back(outside.say({3, 3, "tok"}).reason);
    answers.push_back(second.say({2, 3, "tok"}).reason);  // admitted: the job is complete
    addresses = {first.address, twin.address, outside.address};
  });
  const std::vector<Socket> peers = admitProcesses(cfg);
  others.join();
  EXPECT_TRUE(peers[1].open() && peers[2].open());
  ASSERT_EQ(answers.size(), 4u);
  EXPECT_EQ(answers[0], "");
  EXPECT_EQ(answers[1], "RANK=1 has joined already (two processes with one RANK?)");
  EXPECT_EQ(answers[2], "RANK=3 is outside 1..2 (WORLD_SIZE=3; process 0 is the one listening)");
  EXPECT_EQ(answers[3], "");
  ASSERT_EQ(log.size(), 2u);
  EXPECT_EQ(log[0], "refused " + addresses[1] +
                        " claiming RANK=1 WORLD_SIZE=3: RANK=1 has joined already (two processes with one RANK?) (RANK=1 "
                        "joined from " +
                        addresses[0] + ")");
  EXPECT_EQ(log[1], "refused " + addresses[2] +
                        " claiming RANK=3 WORLD_SIZE=3: RANK=3 is outside 1..2 (WORLD_SIZE=3; process 0 is the one listening)");
}

TEST(TcpBootstrap, ASilentConnectionIsDroppedAtItsHelloDeadlineWhileTheJobGoesOn) {
  const int port = freePort();
  std::vector<std::string> log;
  std::mutex m;
  TcpBootstrapConfig cfg = processZero(2, port, log, m);
  cfg.helloTimeoutS = 0.2;
  std::string silentAddress;
  bool dropped = false;
  std::string answer = "none";
  std::thread others([&] {
    Stranger silent(port);
    silentAddress = silent.address;
    dropped = silent.closedByPeer();  // process 0 drops it: only then does the real rank 1 come
    answer = Stranger(port).say({1, 2, "tok"}).reason;
  });
  const std::vector<Socket> peers = admitProcesses(cfg);
  others.join();
  EXPECT_TRUE(dropped);
  EXPECT_EQ(answer, "");
  EXPECT_TRUE(peers[1].open());
  ASSERT_EQ(log.size(), 1u);
  EXPECT_EQ(log[0], "dropped the connection from " + silentAddress + ": no whole hello within 0.2 s");
}

TEST(TcpBootstrap, AProcessWithAnotherJobsTokenIsToldWhy) {
  const int port = freePort();
  const pid_t pid = ::fork();
  if (pid == 0) {  // process 0 of a job whose token differs; it gives up soon
    TcpBootstrapConfig cfg;
    cfg.size = 2;
    cfg.masterPort = port;
    cfg.connectTimeoutS = 5;
    cfg.jobToken = "theirs";
    cfg.log = [](const std::string&) {};
    try {
      makeTcpBootstrap(cfg);
    } catch (const std::exception&) {
    }
    std::_Exit(0);
  }
  TcpBootstrapConfig cfg;
  cfg.rank = 1;
  cfg.size = 2;
  cfg.masterPort = port;
  cfg.connectTimeoutS = 20;
  cfg.jobToken = "mine";
  cfg.jobTokenSource = "TRAINSCOPE_JOB_TOKEN";
  try {
    makeTcpBootstrap(cfg);
    ADD_FAILURE() << "a process with another job's token was admitted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("refused this process (RANK=1 WORLD_SIZE=2): wrong job token (this process's token "
                                         "comes from TRAINSCOPE_JOB_TOKEN"),
              std::string::npos)
        << e.what();
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
}

// A bootstrap whose other process announces a string of 2^62 bytes.
class Boasting final : public Bootstrap {
 public:
  BootstrapKind kind() const override { return BootstrapKind::kSingle; }
  int rank() const override { return 0; }
  int size() const override { return 2; }
  int localRank() const override { return 0; }
  int localSize() const override { return 1; }
  void allGather(const void* in, void* out, std::size_t bytes) override {
    std::memcpy(out, in, bytes);
    const unsigned long long huge = 1ull << 62;
    std::memcpy(static_cast<char*>(out) + bytes, &huge, sizeof(huge));
  }
  void barrier() override {}
  [[noreturn]] void abortAll(int) override { std::abort(); }
};

TEST(TcpBootstrap, AHugeAnnouncedStringIsAnErrorNamingTheProcessNotAnAllocation) {
  Boasting boot;
  try {
    boot.allGatherStrings("host");
    FAIL() << "a 2^62-byte string was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "process 1 announced a 4611686018427387904-byte message, more than the 1073741824 bytes processes exchange");
  }
}

// Issue #34: a member announcing a 1 GiB string took process 0 to 3.3 GB (each string padded to the longest, for
// every process). Strings now travel as they are, and what one member sends process 0 over the run has a budget.
TEST(TcpBootstrap, EachMemberHasAByteBudgetForTheRunAndPassingItNamesTheMember) {
  const int port = freePort();
  const pid_t pid = ::fork();
  if (pid == 0) {
    try {
      TcpBootstrapConfig cfg;
      cfg.rank = 1;
      cfg.size = 2;
      cfg.masterPort = port;
      cfg.connectTimeoutS = 20;
      cfg.jobToken = "tok";
      auto boot = makeTcpBootstrap(cfg);
      const auto first = boot->allGatherStrings(std::string(40, 'x'));  // within the budget
      if (first.size() != 2 || first[0] != "" || first[1] != std::string(40, 'x')) std::_Exit(3);
      boot->allGatherStrings(std::string(40, 'y'));  // past it: process 0 stops here
    } catch (const std::exception&) {
    }
    std::_Exit(0);
  }
  TcpBootstrapConfig cfg;
  cfg.size = 2;
  cfg.masterPort = port;
  cfg.connectTimeoutS = 20;
  cfg.jobToken = "tok";
  cfg.memberByteBudget = 64 + hostName().size();  // the host names are the first strings exchanged
  auto boot = makeTcpBootstrap(cfg);
  EXPECT_EQ(boot->allGatherStrings(""), (std::vector<std::string>{"", std::string(40, 'x')}));
  try {
    boot->allGatherStrings("");
    ADD_FAILURE() << "a member past its budget was heard";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.rfind("bootstrap: process 1 (127.0.0.1:", 0), 0u) << what;
    EXPECT_NE(what.find(fmt::format("announced a 40-byte message, past its budget: one process may send process 0 at most {} "
                                    "bytes ({} B) in a run, and it had sent {}",
                                    cfg.memberByteBudget, cfg.memberByteBudget, 40 + hostName().size())),
              std::string::npos)
        << what;
  }
  boot.reset();
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

// Issue #34: 100 silent connections filled process 0's waiting room; the real rank 1 was closed unread, took the
// reset for a fatal error, and process 0 waited out the bootstrap timeout.
TEST(TcpBootstrap, StrangersFillingTheWaitingRoomDoNotKeepTheJobOut) {
  const int port = freePort();
  const pid_t zero = ::fork();
  if (zero == 0) std::_Exit(worldMember(0, 2, port));
  std::vector<std::unique_ptr<Stranger>> strangers;
  for (int i = 0; i < 100; ++i) strangers.push_back(std::make_unique<Stranger>(port));  // silent
  const pid_t one = ::fork();
  if (one == 0) std::_Exit(worldMember(1, 2, port));
  for (pid_t pid : {zero, one}) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "process " << (pid == zero ? 0 : 1);
  }
}

// Where the run's listeners go (comm/bootstrap_interface.h): the TCP bootstrap's own connection, on every process.
TEST(TcpBootstrap, TheRunListensWhereTheBootstrapConnects) {
  const int port = freePort();
  const pid_t pid = ::fork();
  if (pid == 0) {
    try {
      TcpBootstrapConfig cfg;
      cfg.rank = 1;
      cfg.size = 2;
      cfg.masterPort = port;
      cfg.connectTimeoutS = 20;
      cfg.jobToken = "tok";
      auto boot = makeTcpBootstrap(cfg);
      std::_Exit(runListenAddress(*boot) == "127.0.0.1" ? 0 : 3);
    } catch (const std::exception&) {
      std::_Exit(4);
    }
  }
  TcpBootstrapConfig cfg;
  cfg.size = 2;
  cfg.masterPort = port;
  cfg.connectTimeoutS = 20;
  cfg.jobToken = "tok";
  auto boot = makeTcpBootstrap(cfg);
  EXPECT_EQ(boot->controlAddress(), std::optional<std::string>("127.0.0.1"));
  EXPECT_EQ(runListenAddress(*boot), "127.0.0.1");
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

// A bootstrap of `hosts.size()` processes without connections of its own (as MPI's), this one being `rank`.
class Placed final : public Bootstrap {
 public:
  Placed(int rank, std::vector<std::string> hosts) : rank_(rank), hosts_(std::move(hosts)) {}
  BootstrapKind kind() const override { return BootstrapKind::kSingle; }
  int rank() const override { return rank_; }
  int size() const override { return static_cast<int>(hosts_.size()); }
  int localRank() const override { return 0; }
  int localSize() const override { return 1; }
  void allGather(const void*, void*, std::size_t) override { std::abort(); }
  std::vector<std::string> allGatherStrings(const std::string& mine) override {
    std::vector<std::string> out;
    for (const std::string& h : hosts_) {
      auto j = nlohmann::json::parse(mine);
      j["host"] = h;
      if (h != hostName()) j["addresses"] = addresses;
      out.push_back(j.dump());
    }
    return out;
  }
  void barrier() override {}
  [[noreturn]] void abortAll(int) override { std::abort(); }
  std::vector<std::string> addresses;  // of every process on another host

 private:
  int rank_;
  std::vector<std::string> hosts_;
};

TEST(BootstrapInterface, OneHostListensOnLoopbackSeveralOnTheRouteToProcess0) {
  EXPECT_EQ(runListenAddress(*std::make_unique<Placed>(1, std::vector<std::string>{hostName(), hostName()})), "127.0.0.1");
  // Process 0 elsewhere, reachable only at addresses this host has too (loopback, its own): nowhere to listen.
  Placed apart(1, {"elsewhere", hostName()});
  apart.addresses = {"127.0.0.1"};
  for (const std::string& mine : localIpv4Addresses()) apart.addresses.push_back(mine);
  EXPECT_EQ(runListenAddress(apart), "");
  // The route to an address of another host starts at an address of this one (when this host has a route at all).
  apart.addresses = {"192.0.2.7"};
  const std::string from = sourceAddressToward("192.0.2.7");
  EXPECT_EQ(runListenAddress(apart), from);
  if (from.empty()) GTEST_SKIP() << "no route to 192.0.2.7 here";
  EXPECT_TRUE(isAddressOfThisHost(from)) << from;
}

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
