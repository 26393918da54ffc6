#include "comm/bootstrap_tcp.h"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "base/env_value.h"
#include "base/error.h"
#include "base/heartbeat.h"
#include "base/host_name.h"
#include "base/stop_request.h"
#include "base/units.h"
#include "comm/bootstrap_admission.h"
#include "comm/bootstrap_hello.h"
#include "comm/job_token.h"
#include "comm/launcher.h"
#include "comm/tcp_socket.h"

namespace ts {
namespace {

using Clock = std::chrono::steady_clock;

// One socket per other process on process 0, and a vector sized by WORLD_SIZE: a bound keeps a typo from
// asking for gigabytes.
constexpr int kMaxWorldSize = 1 << 20;

double secondsUntil(Clock::time_point t) { return std::chrono::duration<double>(t - Clock::now()).count(); }

// Everything about the configuration that can be wrong, checked before any connection is made.
void validate(const TcpBootstrapConfig& cfg) {
  if (cfg.size < 1 || cfg.size > kMaxWorldSize)
    throw LocalUsageError(fmt::format("WORLD_SIZE={} must be between 1 and {}", cfg.size, kMaxWorldSize));
  if (cfg.rank < 0 || cfg.rank >= cfg.size)
    throw LocalUsageError(
        fmt::format("RANK={} is outside the world of WORLD_SIZE={} (ranks are 0..{})", cfg.rank, cfg.size, cfg.size - 1));
  if (cfg.localRank < -1 || cfg.localRank >= cfg.size)
    throw LocalUsageError(fmt::format("LOCAL_RANK={} is outside 0..{} (WORLD_SIZE={})", cfg.localRank, cfg.size - 1, cfg.size));
  if (cfg.size == 1) return;
  if (cfg.masterPort <= 0 || cfg.masterPort > 65535)
    throw LocalUsageError(fmt::format("MASTER_PORT={} is not a TCP port (1-65535)", cfg.masterPort));
  if (!(std::isfinite(cfg.connectTimeoutS) && cfg.connectTimeoutS > 0))
    throw LocalUsageError(fmt::format("the bootstrap timeout must be a number of seconds above 0, not {}", cfg.connectTimeoutS));
  if (!(std::isfinite(cfg.helloTimeoutS) && cfg.helloTimeoutS > 0))
    throw LocalUsageError(fmt::format("the hello timeout must be a number of seconds above 0, not {}", cfg.helloTimeoutS));
  if (cfg.jobToken.size() > hello::kMaxFramePayload)
    throw LocalUsageError(fmt::format("the job token is {} bytes; at most {}", cfg.jobToken.size(), hello::kMaxFramePayload));
}

// Until `s` has something to read: polls, so that a peer's failure or a stop ends the wait (as every wait for
// peers does, base/stop_request.h) instead of a read that a failed peer would never answer.
void awaitBytes(const Socket& s, std::size_t bytes) {
  for (pollfd p{s.fd(), POLLIN, 0}; ::poll(&p, 1, 50) <= 0 || !p.revents; p.revents = 0)
    checkStopWhileWaiting("a control-plane exchange", bytes);
}

class TcpBootstrap final : public Bootstrap {
 public:
  explicit TcpBootstrap(const TcpBootstrapConfig& cfg) : cfg_(cfg) {
    validate(cfg);
    if (cfg.size > 1) {
      if (cfg.rank == 0) {
        peers_ = admitProcesses(cfg);
        sent_.assign(peers_.size(), 0);
      } else {
        connectToMaster();
      }
    }
    const auto hosts = allGatherStrings(hostName());
    localSize_ = static_cast<int>(std::count(hosts.begin(), hosts.end(), hosts[static_cast<std::size_t>(cfg.rank)]));
    local_ = cfg.localRank;
    if (local_ < 0) {
      local_ = 0;
      for (int p = 0; p < cfg.rank; ++p) local_ += hosts[p] == hosts[cfg.rank];
    }
  }

  BootstrapKind kind() const override { return BootstrapKind::kEnv; }
  int rank() const override { return cfg_.rank; }
  int size() const override { return cfg_.size; }
  int localRank() const override { return local_; }
  int localSize() const override { return localSize_; }

  void allGather(const void* in, void* out, std::size_t bytes) override {
    auto* o = static_cast<char*>(out);
    if (cfg_.size == 1) {
      std::memmove(o, in, bytes);
      return;
    }
    const heartbeat::WaitingForPeers waiting;
    if (cfg_.rank == 0) {
      std::memmove(o, in, bytes);
      for (int p = 1; p < cfg_.size; ++p) {
        awaitBytes(peers_[p], bytes * static_cast<std::size_t>(cfg_.size));
        peers_[p].recvAll(o + p * bytes, bytes, peerName(p));
      }
      for (int p = 1; p < cfg_.size; ++p) peers_[p].sendAll(o, bytes * cfg_.size, peerName(p));
    } else {
      master_.sendAll(in, bytes, "process 0");
      awaitBytes(master_, bytes * static_cast<std::size_t>(cfg_.size));
      master_.recvAll(o, bytes * cfg_.size, "process 0");
    }
  }

  // Each process's string goes to process 0 as it is (its length first), never padded to the longest: one
  // process's length must not multiply by the world's size in what process 0 holds. Process 0 checks every
  // length against what that process may still send it in this run before it allocates anything.
  std::vector<std::string> allGatherStrings(const std::string& mine) override {
    if (mine.size() > kMaxGatheredString)
      throw Error(fmt::format("internal: a {}-byte message is more than the {} bytes processes exchange", mine.size(),
                              kMaxGatheredString));
    if (cfg_.size == 1) return {mine};
    const heartbeat::WaitingForPeers waiting;
    const auto world = static_cast<std::size_t>(cfg_.size);
    std::vector<std::uint64_t> lens(world);
    std::vector<std::string> out(world);
    if (cfg_.rank != 0) {
      const std::uint64_t len = mine.size();
      master_.sendAll(&len, sizeof(len), "process 0");
      master_.sendAll(mine.data(), mine.size(), "process 0");
      awaitBytes(master_, world * sizeof(std::uint64_t));
      master_.recvAll(lens.data(), world * sizeof(std::uint64_t), "process 0");
      // Process 0 holds every other process to its budget; checked again here before allocating.
      for (std::size_t p = 0; p < world; ++p)
        if (lens[p] > (p == 0 ? kMaxGatheredString : cfg_.memberByteBudget))
          throw Error(
              fmt::format("bootstrap: process 0 announced a {}-byte message from process {}, more than the {} bytes "
                          "a process may send",
                          lens[p], p, p == 0 ? kMaxGatheredString : cfg_.memberByteBudget));
      for (std::size_t p = 0; p < world; ++p) {
        out[p].resize(lens[p]);
        if (lens[p] > 0) master_.recvAll(out[p].data(), lens[p], "process 0");
      }
      return out;
    }
    lens[0] = mine.size();
    out[0] = mine;
    for (int p = 1; p < cfg_.size; ++p) {
      awaitBytes(peers_[p], sizeof(std::uint64_t));
      peers_[p].recvAll(&lens[p], sizeof(std::uint64_t), peerName(p));
      const std::uint64_t left = cfg_.memberByteBudget - std::min(cfg_.memberByteBudget, sent_[p]);
      if (lens[p] > left)
        throw Error(fmt::format(
            "bootstrap: {} ({}) announced a {}-byte message, past its budget: one process may send process 0 at most {} "
            "bytes ({}) in a run, and it had sent {}",
            peerName(p), peerAddress(peers_[p].fd()), lens[p], cfg_.memberByteBudget, formatBytes(cfg_.memberByteBudget),
            sent_[p]));
    }
    for (int p = 1; p < cfg_.size; ++p) {
      out[p].resize(lens[p]);
      if (lens[p] == 0) continue;
      awaitBytes(peers_[p], lens[p]);
      peers_[p].recvAll(out[p].data(), lens[p], peerName(p));
      sent_[p] += lens[p];
    }
    for (int p = 1; p < cfg_.size; ++p) {
      peers_[p].sendAll(lens.data(), world * sizeof(std::uint64_t), peerName(p));
      for (const std::string& s : out) peers_[p].sendAll(s.data(), s.size(), peerName(p));
    }
    return out;
  }

  std::optional<std::string> controlAddress() const override {
    if (cfg_.size == 1) return std::nullopt;
    return localHost(cfg_.rank == 0 ? peers_[1].fd() : master_.fd());
  }

  void barrier() override {
    std::vector<char> out(static_cast<std::size_t>(cfg_.size));
    char one = 1;
    allGather(&one, out.data(), 1);
  }

  // The connections stay open to the process's end: a peer that saw this one's close would take it for a death
  // before process 0 has said what happened (bench/failures/run_ending.h).
  void abandon() override {
    for (Socket& s : peers_) (void)s.release();
    (void)master_.release();
  }

  [[noreturn]] void abortAll(int exitCode) override {
    // Closing the sockets makes every other process fail its next exchange with a clear message.
    peers_.clear();
    master_.reset();
    std::_Exit(exitCode);
  }

 private:
  static std::string peerName(int p) { return fmt::format("process {}", p); }

  std::string where() const { return fmt::format("MASTER_ADDR={} MASTER_PORT={}", cfg_.masterAddr, cfg_.masterPort); }

  // Connects, says hello and waits for process 0's answer, retrying until the bootstrap deadline while
  // process 0 is not listening yet or closes the connection unanswered (it drops connections it is too
  // busy for). A refusal or an answer that is not process 0's ends this process with the reason.
  void connectToMaster() {
    const auto deadline =
        Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(cfg_.connectTimeoutS));
    const std::string helloBytes = hello::encodeHello({cfg_.rank, cfg_.size, cfg_.jobToken});
    std::string last = "no attempt";
    while (secondsUntil(deadline) > 0) {
      int gai = 0;
      const auto addresses = resolveTcp(cfg_.masterAddr, cfg_.masterPort, gai);
      if (gai == EAI_AGAIN)
        last = fmt::format("MASTER_ADDR={}: {}", cfg_.masterAddr, ::gai_strerror(gai));
      else if (gai != 0)
        throw LocalUsageError(fmt::format("MASTER_ADDR={} cannot be resolved: {}", cfg_.masterAddr, ::gai_strerror(gai)));
      for (const auto& a : addresses) {
        const double left = secondsUntil(deadline);
        if (left <= 0) break;
        Socket s(::socket(a.family, SOCK_STREAM | SOCK_CLOEXEC, 0));
        if (!s.open()) {
          last = std::strerror(errno);
          continue;
        }
        s.setTimeouts(left);  // bounds the connect, the hello and the wait for the answer
        if (::connect(s.fd(), reinterpret_cast<const sockaddr*>(&a.storage), a.length) != 0) {
          last = fmt::format("{}: {}", a.text(), std::strerror(errno));
          continue;
        }
        s.setNoDelay();
        if (::send(s.fd(), helloBytes.data(), helloBytes.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(helloBytes.size())) {
          last = fmt::format("{}: sending the hello failed: {}", a.text(), std::strerror(errno));
          continue;
        }
        const auto answer = readAnswer(s, a.text());
        if (!answer) {
          last = fmt::format("{} closed the connection without answering", a.text());
          continue;
        }
        if (!answer->admitted) throw Error(refusedMessage(a.text(), answer->reason));
        s.setTimeouts(0);
        master_ = std::move(s);
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    throw Error(
        fmt::format("bootstrap: could not reach process 0 at {} within {:g} s ({})", where(), cfg_.connectTimeoutS, last));
  }

  // Process 0's answer; nullopt when the connection closed or was reset before its first byte.
  std::optional<hello::Answer> readAnswer(const Socket& s, const std::string& peer) const {
    std::string bytes;
    for (;;) {
      char buf[hello::kMaxFrameBytes];
      const auto parsed = hello::parseAnswer(bytes);
      if (parsed.state == hello::Parsed<hello::Answer>::State::kComplete) return parsed.message;
      if (parsed.state == hello::Parsed<hello::Answer>::State::kInvalid)
        throw Error(fmt::format("bootstrap: what listens at {} ({}) is not a trainscope process 0 of this version: {}", where(),
                                peer, parsed.why));
      const ssize_t k = ::recv(s.fd(), buf, parsed.needed - bytes.size(), 0);
      if (k < 0 && errno == EINTR) continue;
      // Closed, or reset (process 0 closed it with the hello unread: strangers filled its waiting room), before a
      // word of answer: process 0 was too busy for this connection, and the next one may be admitted.
      if (bytes.empty() && (k == 0 || (k < 0 && (errno == ECONNRESET || errno == EPIPE)))) return std::nullopt;
      if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        throw Error(fmt::format("bootstrap: process 0 at {} did not answer the hello of this process within {:g} s", where(),
                                cfg_.connectTimeoutS));
      if (k <= 0)
        throw Error(fmt::format("bootstrap: the connection to process 0 at {} broke during its answer: {}", where(),
                                k == 0 ? "closed" : std::strerror(errno)));
      bytes.append(buf, static_cast<std::size_t>(k));
    }
  }

  std::string refusedMessage(const std::string& peer, const std::string& reason) const {
    std::string msg = fmt::format("bootstrap: process 0 at {} ({}) refused this process (RANK={} WORLD_SIZE={}): {}", where(),
                                  peer, cfg_.rank, cfg_.size, reason);
    if (reason == "wrong job token")
      msg += fmt::format(
          " (this process's token comes from {}; every process of a job needs the same one, and "
          "MASTER_ADDR:MASTER_PORT must be this job's)",
          cfg_.jobTokenSource.empty() ? "nothing: no job token is set" : cfg_.jobTokenSource);
    return msg;
  }

  TcpBootstrapConfig cfg_;
  int local_ = 0, localSize_ = 1;
  std::vector<Socket> peers_;        // on process 0: one per other process
  std::vector<std::uint64_t> sent_;  // on process 0: the bytes of strings each other process sent it so far
  Socket master_;                    // on the others: to process 0
};

// A whole decimal integer (optional sign) that fits an int; LocalUsageError naming the variable otherwise.
int envInt(const char* name, bool required, int fallback) {
  const char* v = envValue(name);
  if (!v) {
    if (required) throw LocalUsageError(fmt::format("the environment bootstrap needs {} to be set", name));
    return fallback;
  }
  char* end = nullptr;
  errno = 0;
  const long x = std::strtol(v, &end, 10);
  if (end == v || *end != '\0') throw LocalUsageError(fmt::format("{}='{}' is not an integer", name, v));
  if (errno == ERANGE || x < INT_MIN || x > INT_MAX) throw LocalUsageError(fmt::format("{}={} is out of range", name, v));
  return static_cast<int>(x);
}

double envSeconds(const char* name, double fallback) {
  const char* v = envValue(name);
  if (!v) return fallback;
  char* end = nullptr;
  const double x = std::strtod(v, &end);
  if (end == v || *end != '\0' || !std::isfinite(x) || x <= 0)
    throw LocalUsageError(fmt::format("{}='{}' is not a number of seconds above 0", name, v));
  return x;
}

// Where process 0 listens: TRAINSCOPE_MASTER_PORT when set, else MASTER_PORT, except under torchrun, whose own
// rendezvous store already holds MASTER_PORT on process 0's host: there, MASTER_PORT + 1 (documented in the README).
int bootstrapPort(Launcher launcher) {
  if (envValue("TRAINSCOPE_MASTER_PORT")) return envInt("TRAINSCOPE_MASTER_PORT", true, 0);
  const int port = envInt("MASTER_PORT", true, 0);
  if (launcher != Launcher::kTorchrun) return port;
  if (port >= 65535)
    throw LocalUsageError(
        fmt::format("under torchrun trainscope listens on MASTER_PORT + 1, and MASTER_PORT={} leaves no port "
                    "above it: set TRAINSCOPE_MASTER_PORT",
                    port));
  return port + 1;
}

}  // namespace

std::unique_ptr<Bootstrap> makeTcpBootstrap(const TcpBootstrapConfig& cfg) { return std::make_unique<TcpBootstrap>(cfg); }

std::unique_ptr<Bootstrap> makeTcpBootstrapFromEnv(Launcher launcher) {
  TcpBootstrapConfig cfg;
  cfg.rank = envInt("RANK", true, 0);
  cfg.size = envInt("WORLD_SIZE", true, 1);
  cfg.localRank = envInt("LOCAL_RANK", false, -1);
  if (cfg.size > 1) {
    const char* addr = envValue("MASTER_ADDR");
    if (!addr) throw LocalUsageError("the environment bootstrap needs MASTER_ADDR to be set");
    cfg.masterAddr = addr;
    cfg.masterPort = bootstrapPort(launcher);
  }
  cfg.connectTimeoutS = envSeconds("TRAINSCOPE_BOOTSTRAP_TIMEOUT", cfg.connectTimeoutS);
  const JobToken token = jobTokenFromEnvironment();
  cfg.jobToken = token.value;
  cfg.jobTokenSource = token.source;
  validate(cfg);
  if (cfg.size > 1 && cfg.jobToken.empty() && !token.waived) throw LocalUsageError(missingJobTokenMessage());
  if (cfg.rank == 0 && cfg.size > 1 && token.waived) {
    // Process 0 is the one that admits: it says so, once.
    std::fprintf(stderr,
                 "trainscope: warning: TRAINSCOPE_JOB_TOKEN=none: process 0 admits any process that reaches "
                 "MASTER_ADDR:MASTER_PORT and claims a free rank\n");
    std::fflush(stderr);
  }
  return makeTcpBootstrap(cfg);
}

}  // namespace ts
