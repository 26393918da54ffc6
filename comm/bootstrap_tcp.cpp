#include "comm/bootstrap_tcp.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "base/error.h"

namespace ts {
namespace {

class Socket {
 public:
  Socket() = default;
  explicit Socket(int fd) : fd_(fd) {}
  Socket(Socket&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  Socket& operator=(Socket&& o) noexcept {
    if (this != &o) {
      reset();
      fd_ = o.fd_;
      o.fd_ = -1;
    }
    return *this;
  }
  ~Socket() { reset(); }
  int fd() const { return fd_; }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

  void sendAll(const void* data, std::size_t n, const char* peer) const {
    const auto* p = static_cast<const char*>(data);
    while (n > 0) {
      const ssize_t k = ::send(fd_, p, n, MSG_NOSIGNAL);
      if (k < 0 && errno == EINTR) continue;
      if (k <= 0) throw Error(fmt::format("bootstrap: lost the connection to {} while sending: {}", peer, std::strerror(errno)));
      p += k;
      n -= static_cast<std::size_t>(k);
    }
  }
  void recvAll(void* data, std::size_t n, const char* peer) const {
    auto* p = static_cast<char*>(data);
    while (n > 0) {
      const ssize_t k = ::recv(fd_, p, n, 0);
      if (k < 0 && errno == EINTR) continue;
      if (k == 0) throw Error(fmt::format("bootstrap: {} closed the connection (did it exit?)", peer));
      if (k < 0) throw Error(fmt::format("bootstrap: receiving from {} failed: {}", peer, std::strerror(errno)));
      p += k;
      n -= static_cast<std::size_t>(k);
    }
  }

 private:
  int fd_ = -1;
};

void setNoDelay(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

std::string hostName() {
  char buf[256] = {};
  ::gethostname(buf, sizeof(buf) - 1);
  return buf;
}

class TcpBootstrap final : public Bootstrap {
 public:
  explicit TcpBootstrap(const TcpBootstrapConfig& cfg) : cfg_(cfg) {
    if (cfg.size < 1) throw UsageError(fmt::format("WORLD_SIZE={} must be at least 1", cfg.size));
    if (cfg.rank < 0 || cfg.rank >= cfg.size)
      throw UsageError(fmt::format("RANK={} is outside the world of WORLD_SIZE={}", cfg.rank, cfg.size));
    if (cfg.masterPort <= 0 || cfg.masterPort > 65535)
      throw UsageError(fmt::format("MASTER_PORT={} is not a TCP port", cfg.masterPort));
    if (cfg.size > 1) (cfg.rank == 0 ? listenAndAccept() : connectToMaster());
    const auto hosts = allGatherStrings(hostName());
    local_ = cfg.localRank;
    if (local_ < 0) {
      local_ = 0;
      for (int p = 0; p < cfg.rank; ++p) local_ += hosts[p] == hosts[cfg.rank];
    }
  }

  std::string kind() const override { return "env"; }
  int rank() const override { return cfg_.rank; }
  int size() const override { return cfg_.size; }
  int localRank() const override { return local_; }

  void allGather(const void* in, void* out, std::size_t bytes) override {
    auto* o = static_cast<char*>(out);
    if (cfg_.size == 1) {
      std::memmove(o, in, bytes);
      return;
    }
    if (cfg_.rank == 0) {
      std::memmove(o, in, bytes);
      for (int p = 1; p < cfg_.size; ++p) peers_[p].recvAll(o + p * bytes, bytes, peerName(p).c_str());
      for (int p = 1; p < cfg_.size; ++p) peers_[p].sendAll(o, bytes * cfg_.size, peerName(p).c_str());
    } else {
      master_.sendAll(in, bytes, "process 0");
      master_.recvAll(o, bytes * cfg_.size, "process 0");
    }
  }

  void barrier() override {
    std::vector<char> out(static_cast<std::size_t>(cfg_.size));
    char one = 1;
    allGather(&one, out.data(), 1);
  }

  [[noreturn]] void abortAll(int exitCode) override {
    // Closing the sockets makes every other process fail its next exchange with a clear message.
    peers_.clear();
    master_.reset();
    std::_Exit(exitCode);
  }

 private:
  static std::string peerName(int p) { return fmt::format("process {}", p); }

  void listenAndAccept() {
    Socket listener(::socket(AF_INET6, SOCK_STREAM, 0));
    if (listener.fd() < 0) listener = Socket(::socket(AF_INET, SOCK_STREAM, 0));
    if (listener.fd() < 0) throw Error(fmt::format("bootstrap: socket() failed: {}", std::strerror(errno)));
    int one = 1;
    ::setsockopt(listener.fd(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_storage addr{};
    socklen_t len = 0;
    int family = 0;
    {
      socklen_t l = sizeof(family);
      ::getsockopt(listener.fd(), SOL_SOCKET, SO_DOMAIN, &family, &l);
    }
    if (family == AF_INET6) {
      int zero = 0;
      ::setsockopt(listener.fd(), IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
      auto* a = reinterpret_cast<sockaddr_in6*>(&addr);
      a->sin6_family = AF_INET6;
      a->sin6_addr = in6addr_any;
      a->sin6_port = htons(static_cast<uint16_t>(cfg_.masterPort));
      len = sizeof(sockaddr_in6);
    } else {
      auto* a = reinterpret_cast<sockaddr_in*>(&addr);
      a->sin_family = AF_INET;
      a->sin_addr.s_addr = htonl(INADDR_ANY);
      a->sin_port = htons(static_cast<uint16_t>(cfg_.masterPort));
      len = sizeof(sockaddr_in);
    }
    if (::bind(listener.fd(), reinterpret_cast<sockaddr*>(&addr), len) != 0)
      throw Error(fmt::format("bootstrap: process 0 cannot listen on MASTER_PORT={}: {}", cfg_.masterPort, std::strerror(errno)));
    if (::listen(listener.fd(), cfg_.size) != 0) throw Error(fmt::format("bootstrap: listen() failed: {}", std::strerror(errno)));
    peers_.resize(static_cast<std::size_t>(cfg_.size));
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(cfg_.connectTimeoutS);
    for (int accepted = 1; accepted < cfg_.size; ++accepted) {
      timeval tv{};
      const double left = std::chrono::duration<double>(deadline - std::chrono::steady_clock::now()).count();
      if (left <= 0)
        throw Error(fmt::format("bootstrap: only {} of {} processes connected to MASTER_PORT={} within {:.0f} s", accepted,
                                cfg_.size, cfg_.masterPort, cfg_.connectTimeoutS));
      tv.tv_sec = static_cast<long>(left);
      tv.tv_usec = static_cast<long>((left - static_cast<double>(tv.tv_sec)) * 1e6);
      ::setsockopt(listener.fd(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
      Socket s(::accept(listener.fd(), nullptr, nullptr));
      if (s.fd() < 0) {
        if (errno == EINTR) {
          --accepted;
          continue;
        }
        throw Error(fmt::format("bootstrap: only {} of {} processes connected to MASTER_PORT={} within {:.0f} s", accepted,
                                cfg_.size, cfg_.masterPort, cfg_.connectTimeoutS));
      }
      setNoDelay(s.fd());
      int32_t hello[2] = {0, 0};  // rank, world size
      s.recvAll(hello, sizeof(hello), "a connecting process");
      if (hello[1] != cfg_.size || hello[0] <= 0 || hello[0] >= cfg_.size || peers_[hello[0]].fd() >= 0)
        throw Error(
            fmt::format("bootstrap: a process connected as RANK={} WORLD_SIZE={}, but this world has WORLD_SIZE={} (two runs on "
                        "one MASTER_PORT?)",
                        hello[0], hello[1], cfg_.size));
      peers_[hello[0]] = std::move(s);
    }
  }

  void connectToMaster() {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    const std::string port = std::to_string(cfg_.masterPort);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(cfg_.connectTimeoutS);
    std::string last = "no attempt";
    while (std::chrono::steady_clock::now() < deadline) {
      addrinfo* res = nullptr;
      const int gai = ::getaddrinfo(cfg_.masterAddr.c_str(), port.c_str(), &hints, &res);
      if (gai != 0) throw UsageError(fmt::format("MASTER_ADDR={}: {}", cfg_.masterAddr, ::gai_strerror(gai)));
      for (addrinfo* a = res; a; a = a->ai_next) {
        Socket s(::socket(a->ai_family, a->ai_socktype, a->ai_protocol));
        if (s.fd() < 0) continue;
        if (::connect(s.fd(), a->ai_addr, a->ai_addrlen) == 0) {
          ::freeaddrinfo(res);
          setNoDelay(s.fd());
          const int32_t hello[2] = {cfg_.rank, cfg_.size};
          s.sendAll(hello, sizeof(hello), "process 0");
          master_ = std::move(s);
          return;
        }
        last = std::strerror(errno);
      }
      ::freeaddrinfo(res);
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    throw Error(fmt::format("bootstrap: could not reach process 0 at {}:{} within {:.0f} s ({})", cfg_.masterAddr,
                            cfg_.masterPort, cfg_.connectTimeoutS, last));
  }

  TcpBootstrapConfig cfg_;
  int local_ = 0;
  std::vector<Socket> peers_;  // on process 0: one per other process
  Socket master_;              // on the others: to process 0
};

int envInt(const char* name, bool required, int fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) {
    if (required) throw UsageError(fmt::format("the environment bootstrap needs {} to be set", name));
    return fallback;
  }
  char* end = nullptr;
  const long x = std::strtol(v, &end, 10);
  if (*end != '\0') throw UsageError(fmt::format("{}='{}' is not an integer", name, v));
  return static_cast<int>(x);
}

}  // namespace

std::unique_ptr<Bootstrap> makeTcpBootstrap(const TcpBootstrapConfig& cfg) { return std::make_unique<TcpBootstrap>(cfg); }

std::unique_ptr<Bootstrap> makeTcpBootstrapFromEnv() {
  TcpBootstrapConfig cfg;
  cfg.rank = envInt("RANK", true, 0);
  cfg.size = envInt("WORLD_SIZE", true, 1);
  cfg.localRank = envInt("LOCAL_RANK", false, -1);
  if (cfg.size > 1) {
    const char* addr = std::getenv("MASTER_ADDR");
    if (!addr || !*addr) throw UsageError("the environment bootstrap needs MASTER_ADDR to be set");
    cfg.masterAddr = addr;
    cfg.masterPort = envInt("MASTER_PORT", true, 0);
  }
  if (const char* t = std::getenv("TRAINSCOPE_BOOTSTRAP_TIMEOUT")) cfg.connectTimeoutS = std::atof(t);
  return makeTcpBootstrap(cfg);
}

}  // namespace ts
