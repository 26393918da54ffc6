#include "comm/bootstrap_admission.h"

#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/error.h"
#include "base/terminal_text.h"
#include "comm/bootstrap_hello.h"

namespace ts {
namespace {

using Clock = std::chrono::steady_clock;

// Past this many lines a flood of connections is only counted: the log must not drown the job's own output.
constexpr int kMaxLoggedLines = 20;

struct Pending {
  Socket socket;
  std::string peer;
  Clock::time_point deadline;
  std::string bytes;  // of its hello, so far
};

class Admission {
 public:
  explicit Admission(const TcpBootstrapConfig& cfg)
      : cfg_(cfg),
        peers_(static_cast<std::size_t>(cfg.size)),
        joined_(static_cast<std::size_t>(cfg.size), false),
        joinedFrom_(static_cast<std::size_t>(cfg.size)) {
    joined_[0] = true;
  }

  std::vector<Socket> run() {
    listen();
    const auto deadline =
        Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(cfg_.connectTimeoutS));
    while (admitted_ < cfg_.size - 1) {
      const auto now = Clock::now();
      expire(now);
      if (now >= deadline) throw Error(timeoutMessage());
      auto wake = deadline;
      for (const auto& p : pending_) wake = std::min(wake, p.deadline);
      const double waitMs = std::ceil(std::chrono::duration<double, std::milli>(wake - now).count());
      std::vector<pollfd> fds;
      for (const auto& l : listeners_) fds.push_back({l.fd(), POLLIN, 0});
      for (const auto& p : pending_) fds.push_back({p.socket.fd(), POLLIN, 0});
      if (::poll(fds.data(), fds.size(), static_cast<int>(std::clamp(waitMs, 1.0, double{INT_MAX}))) < 0) {
        if (errno == EINTR) continue;
        throw Error(fmt::format("bootstrap: poll() failed: {}", std::strerror(errno)));
      }
      std::vector<Pending> still;
      for (std::size_t i = 0; i < pending_.size(); ++i) {
        const bool ready = fds[listeners_.size() + i].revents != 0;
        if (!ready || !hearFrom(pending_[i])) still.push_back(std::move(pending_[i]));
      }
      pending_ = std::move(still);
      for (std::size_t i = 0; i < listeners_.size(); ++i)
        if (fds[i].revents & POLLIN) acceptFrom(listeners_[i]);
    }
    for (auto& p : pending_) turnAway(p, "it had not said hello when every process of the job had joined");
    return std::move(peers_);
  }

 private:
  void listen() {
    int gai = 0;
    const auto addresses = resolveTcp(cfg_.masterAddr, cfg_.masterPort, gai);
    if (gai != 0)
      throw LocalUsageError(fmt::format("MASTER_ADDR={} cannot be resolved: {}", cfg_.masterAddr, ::gai_strerror(gai)));
    if (addresses.empty())
      throw LocalUsageError(fmt::format("MASTER_ADDR={} resolves to no IPv4 or IPv6 address", cfg_.masterAddr));
    std::vector<std::string> failures, tried;
    bool notHere = true;  // every failure was "not an address of this host"
    for (const auto& a : addresses) {
      tried.push_back(a.text());
      Socket s(::socket(a.family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
      int one = 1;
      if (s.open()) ::setsockopt(s.fd(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
      // One socket per address: an IPv6 one must not also take IPv4 connections on every interface.
      if (s.open() && a.family == AF_INET6) ::setsockopt(s.fd(), IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
      if (!s.open() || ::bind(s.fd(), reinterpret_cast<const sockaddr*>(&a.storage), a.length) != 0 ||
          ::listen(s.fd(), SOMAXCONN) != 0) {  // a full queue would turn the job's own processes away
        notHere = notHere && errno == EADDRNOTAVAIL;
        failures.push_back(fmt::format("{}: {}", a.text(), std::strerror(errno)));
        continue;
      }
      listeners_.push_back(std::move(s));
    }
    if (!listeners_.empty()) return;
    if (notHere)
      throw LocalUsageError(fmt::format("MASTER_ADDR={} ({}) is not an address of this host, where process 0 runs and listens",
                                        cfg_.masterAddr, fmt::join(tried, ", ")));
    throw Error(fmt::format("bootstrap: process 0 cannot listen on MASTER_ADDR={} MASTER_PORT={} ({})", cfg_.masterAddr,
                            cfg_.masterPort, fmt::join(failures, "; ")));
  }

  // Takes every connection waiting to be accepted and reads what each has said already: a process of the job says
  // its hello as soon as it is connected, so it is usually heard here and never waits among strangers. When the
  // waiting room is full, the connection that has waited longest goes: a silent stranger has had its chance, and a
  // flood of them cannot keep a new connection (maybe the job's) from being heard.
  void acceptFrom(const Socket& listener) {
    const std::size_t maxPending = static_cast<std::size_t>(cfg_.size) + 64;
    for (;;) {
      Socket s(::accept4(listener.fd(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
      if (!s.open()) return;  // EAGAIN: none left; anything else: the next poll() tries again
      const auto now = Clock::now();
      Pending p{std::move(s), "",
                now + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(cfg_.helloTimeoutS)), ""};
      p.peer = peerAddress(p.socket.fd());
      if (hearFrom(p)) continue;
      if (pending_.size() >= maxPending) {
        const auto oldest = std::min_element(pending_.begin(), pending_.end(),
                                             [](const Pending& a, const Pending& b) { return a.deadline < b.deadline; });
        turnAway(*oldest,
                 fmt::format("{} connections were waiting to say hello, and it had waited longest ({:.1f} s)", maxPending,
                             cfg_.helloTimeoutS - std::chrono::duration<double>(oldest->deadline - now).count()));
        pending_.erase(oldest);
      }
      pending_.push_back(std::move(p));
    }
  }

  void expire(Clock::time_point now) {
    std::vector<Pending> still;
    for (auto& p : pending_) {
      if (p.deadline <= now)
        turnAway(p, fmt::format("no whole hello within {:g} s", cfg_.helloTimeoutS));
      else
        still.push_back(std::move(p));
    }
    pending_ = std::move(still);
  }

  // Reads what `p` sent, never past the end of one hello. True when `p` is done with (admitted or turned away).
  bool hearFrom(Pending& p) {
    char buf[hello::kMaxFrameBytes];
    const std::size_t want = hello::parseHello(p.bytes).needed - p.bytes.size();
    const ssize_t k = ::recv(p.socket.fd(), buf, want, 0);
    if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return false;
    if (k < 0) return turnAway(p, fmt::format("receiving failed: {}", std::strerror(errno)));
    if (k == 0)
      return turnAway(
          p, p.bytes.empty() ? "it closed without a word" : fmt::format("it closed after {} bytes of a hello", p.bytes.size()));
    p.bytes.append(buf, static_cast<std::size_t>(k));
    const auto parsed = hello::parseHello(p.bytes);
    if (parsed.state == hello::Parsed<hello::Hello>::State::kNeedMore) return false;
    if (parsed.state == hello::Parsed<hello::Hello>::State::kInvalid) return turnAway(p, parsed.why);
    const hello::Hello& h = parsed.message;
    if (const auto why = hello::refusal(h, cfg_.size, cfg_.jobToken, joined_)) {
      std::string line = *why;
      if (*why != "wrong job token" && h.rank > 0 && h.rank < cfg_.size && joined_[static_cast<std::size_t>(h.rank)])
        line += fmt::format(" (RANK={} joined from {})", h.rank, joinedFrom_[static_cast<std::size_t>(h.rank)]);
      answer(p, {false, cfg_.size, *why});
      return turnAway(p, line, fmt::format("RANK={} WORLD_SIZE={}", h.rank, h.worldSize));
    }
    if (!answer(p, {true, cfg_.size, ""}))
      return turnAway(p, "it went away before its answer", fmt::format("RANK={} WORLD_SIZE={}", h.rank, h.worldSize));
    p.socket.setNonBlocking(false);
    p.socket.setNoDelay();
    const auto r = static_cast<std::size_t>(h.rank);
    joined_[r] = true;
    joinedFrom_[r] = p.peer;
    peers_[r] = std::move(p.socket);
    ++admitted_;
    return true;
  }

  // The answer is at most kMaxFrameBytes on a fresh connection: it fits the socket's buffer in one send.
  static bool answer(const Pending& p, const hello::Answer& a) {
    const std::string bytes = hello::encodeAnswer(a);
    return ::send(p.socket.fd(), bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size());
  }

  // One line naming the peer (and what its hello claimed, when it said one). Always true (the connection is
  // done with), for `return turnAway(...)`.
  bool turnAway(Pending& p, const std::string& why, const std::string& claim = "") {
    ++turnedAway_;
    if (turnedAway_ <= kMaxLoggedLines)
      log(claim.empty() ? fmt::format("dropped the connection from {}: {}", p.peer, why)
                        : fmt::format("refused {} claiming {}: {}", p.peer, claim, why));
    else if (turnedAway_ == kMaxLoggedLines + 1)
      log("more connections turned away are counted, not logged");
    p.socket.reset();
    return true;
  }

  void log(const std::string& line) const {
    if (cfg_.log) return cfg_.log(line);
    // A stranger's claim is in the line: its bytes reach the terminal escaped.
    std::fprintf(stderr, "trainscope: bootstrap: %s\n", printable(line).c_str());
    std::fflush(stderr);
  }

  std::string timeoutMessage() const {
    std::vector<int> missing;
    for (int r = 1; r < cfg_.size; ++r)
      if (!joined_[static_cast<std::size_t>(r)]) missing.push_back(r);
    const std::size_t shown = std::min<std::size_t>(missing.size(), 8);
    std::string msg = fmt::format(
        "bootstrap: only {} of {} processes connected to MASTER_ADDR={} MASTER_PORT={} within {:g} s (missing RANK {}{})",
        admitted_ + 1, cfg_.size, cfg_.masterAddr, cfg_.masterPort, cfg_.connectTimeoutS,
        fmt::join(missing.begin(), missing.begin() + static_cast<std::ptrdiff_t>(shown), ", "),
        missing.size() > shown ? fmt::format(" and {} more", missing.size() - shown) : "");
    if (turnedAway_ > 0) msg += fmt::format("; {} other connection(s) were turned away, logged above", turnedAway_);
    return msg;
  }

  const TcpBootstrapConfig& cfg_;
  std::vector<Socket> listeners_;
  std::vector<Pending> pending_;
  std::vector<Socket> peers_;
  std::vector<bool> joined_;
  std::vector<std::string> joinedFrom_;
  int admitted_ = 0;
  int turnedAway_ = 0;
};

}  // namespace

std::vector<Socket> admitProcesses(const TcpBootstrapConfig& cfg) { return Admission(cfg).run(); }

}  // namespace ts
