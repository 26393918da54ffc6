#include "comm/liveness_lifeline.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/json_text.h"
#include "comm/tcp_socket.h"

namespace ts {

std::string LifelineCard::encode() const {
  return jsonText(nlohmann::json{{"host", host}, {"addresses", addresses}, {"port", port}, {"key", key}});
}

LifelineCard LifelineCard::decode(const std::string& text) {
  try {
    const nlohmann::json j = nlohmann::json::parse(text);
    LifelineCard c;
    c.host = j.at("host").get<std::string>();
    c.addresses = j.at("addresses").get<std::vector<std::string>>();
    c.port = j.at("port").get<int>();
    c.key = j.at("key").get<std::string>();
    return c;
  } catch (const nlohmann::json::exception& e) {
    throw Error(fmt::format("process 0's lifeline card is malformed: {}", e.what()));
  }
}

namespace lifeline {
namespace {

constexpr std::string_view kHello = "TSLIFE1 ";

// One line of a frame: no line break inside, and short enough that the frame fits.
std::string oneLine(const std::string& line) {
  std::string out = line.substr(0, kMaxFrameBytes - 64);
  for (char& c : out)
    if (c == '\n' || c == '\r') c = ' ';
  return out;
}

std::optional<int> parseInt(std::string_view s) {
  int v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

// Splits "word rest" at the first space: {"word", "rest"} ("rest" empty when there is no space).
std::pair<std::string_view, std::string_view> head(std::string_view s) {
  const std::size_t space = s.find(' ');
  if (space == std::string_view::npos) return {s, {}};
  return {s.substr(0, space), s.substr(space + 1)};
}

}  // namespace

std::string helloFrame(const std::string& key, int rank) { return fmt::format("{}{} {}\n", kHello, key, rank); }
std::string failFrame(int exitCode, const std::string& line) { return fmt::format("fail {} {}\n", exitCode, oneLine(line)); }
std::string stopFrame(bool waiting, int exitCode, const std::string& line) {
  return fmt::format("stop {} {} {}\n", waiting ? "peers" : "own", exitCode, oneLine(line));
}
std::string saidFrame(int exitCode) { return fmt::format("said {}\n", exitCode); }
std::string byeFrame() { return "bye\n"; }
std::string endFrame(int exitCode) { return fmt::format("end {}\n", exitCode); }

std::optional<Hello> parseHello(std::string_view frame) {
  if (!frame.starts_with(kHello)) return std::nullopt;
  const auto [key, rank] = head(frame.substr(kHello.size()));
  const auto r = parseInt(rank);
  if (key.empty() || !r) return std::nullopt;
  return Hello{std::string(key), *r};
}

std::optional<Report> parseReport(std::string_view frame) {
  auto [word, rest] = head(frame);
  Report r;
  if (word == "bye" && rest.empty()) {
    r.kind = Report::Kind::kBye;
    return r;
  }
  if (word == "said") {
    const auto code = parseInt(rest);
    if (!code) return std::nullopt;
    r.kind = Report::Kind::kSaid;
    r.exitCode = *code;
    return r;
  }
  if (word == "stop") {
    const auto [where, after] = head(rest);
    if (where != "own" && where != "peers") return std::nullopt;
    r.kind = where == "own" ? Report::Kind::kStopOwn : Report::Kind::kStopWaiting;
    rest = after;
  } else if (word == "fail") {
    r.kind = Report::Kind::kFail;
  } else {
    return std::nullopt;
  }
  const auto [code, line] = head(rest);
  const auto c = parseInt(code);
  if (!c || line.empty()) return std::nullopt;
  r.exitCode = *c;
  r.line = std::string(line);
  return r;
}

std::optional<int> parseEnd(std::string_view frame) {
  const auto [word, code] = head(frame);
  if (word != "end") return std::nullopt;
  return parseInt(code);
}

}  // namespace lifeline

namespace {

using Clock = std::chrono::steady_clock;

// Every joined process's connection by rank (-1: none), for endAllFromSignal: a fixed array that a signal
// handler may read.
std::atomic<std::atomic<int>*> g_hubFds{nullptr};
std::atomic<int> g_hubFdCount{0};

// The write end of the last hub's wake pipe (-1: none), for wakeFromSignal.
std::atomic<int> g_hubWakeFd{-1};

// The lifeline of this process (-1: none), for sendFromSignal.
std::atomic<int> g_lifelineFd{-1};

// "end <code>\n" without allocating (for a signal handler).
std::size_t endFrameInto(char* buf, std::size_t size, int exitCode) {
  char digits[16];
  int i = sizeof(digits);
  unsigned v = exitCode < 0 ? 0u : static_cast<unsigned>(exitCode);
  do {
    digits[--i] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v > 0 && i > 0);
  std::size_t n = 0;
  for (char c : std::string_view("end "))
    if (n < size) buf[n++] = c;
  for (int k = i; k < static_cast<int>(sizeof(digits)); ++k)
    if (n < size) buf[n++] = digits[k];
  if (n < size) buf[n++] = '\n';
  return n;
}

void sendAllQuietly(int fd, const char* data, std::size_t n) {
  if (fd >= 0) (void)::send(fd, data, n, MSG_NOSIGNAL | MSG_DONTWAIT);  // best effort: a frame is a few bytes
}

}  // namespace

// ---- the hub ------------------------------------------------------------------------------------------------

struct LifelineHub::Impl {
  struct Conn {
    Socket socket;
    int rank = -1;  // -1 until its hello
    std::string pending;
    bool bye = false;
    bool ended = false;
    Clock::time_point since = Clock::now();
  };

  int world = 1;
  std::string key;
  Handlers handlers;
  Socket listener;
  WakePipe wake;
  std::atomic<bool> stopping{false};
  std::unique_ptr<std::atomic<int>[]> fds;  // by rank
  std::vector<Conn> conns;                  // the hub's thread only
  std::vector<bool> joinedRank;             // the hub's thread only

  mutable std::mutex mu;
  std::condition_variable cv;
  std::vector<PeerEnd> ends;
  std::uint64_t order = 0;
  std::uint64_t cycles = 0;
  int joined = 0;
  std::thread thread;

  void serve();
  void accept();
  void read(Conn& c);
  void frame(Conn& c, std::string_view f);
  void close(Conn& c, bool eof);
  void record(Conn& c, PeerEndKind kind, int exitCode, std::string line);
};

LifelineHub::LifelineHub(int worldSize, const std::string& host, const std::string& address, Handlers handlers)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.world = worldSize;
  m.key = randomHex128();
  m.handlers = std::move(handlers);
  m.fds = std::make_unique<std::atomic<int>[]>(static_cast<std::size_t>(worldSize));
  for (int r = 0; r < worldSize; ++r) m.fds[r].store(-1);
  m.joinedRank.assign(static_cast<std::size_t>(worldSize), false);
  int port = 0;
  m.listener = listenOnEphemeralPort(address, 128, true, "lifeline hub", port);
  card_ = LifelineCard{host, {address}, port, m.key};
  g_hubFdCount.store(0);
  g_hubFds.store(m.fds.get());
  g_hubFdCount.store(worldSize);
  g_hubWakeFd.store(m.wake.writeFd());
  m.thread = std::thread([&m] { m.serve(); });
}

LifelineHub::~LifelineHub() {
  if (g_hubFds.load() == impl_->fds.get()) {
    g_hubFdCount.store(0);
    g_hubFds.store(nullptr);
    g_hubWakeFd.store(-1);
  }
  impl_->stopping.store(true);
  impl_->wake.wake();
  if (impl_->thread.joinable()) impl_->thread.join();
}

int LifelineHub::joined() const {
  std::lock_guard lock(impl_->mu);
  return impl_->joined;
}

std::vector<PeerEnd> LifelineHub::ends() const {
  std::lock_guard lock(impl_->mu);
  return impl_->ends;
}

void LifelineHub::settle(double maxS) {
  std::unique_lock lock(impl_->mu);
  // The cycle running now may have polled before the last bytes came; the one after it has read them. Each cycle
  // is woken: a thread asleep in poll() would otherwise run one and sleep again, and this wait would last maxS.
  const std::uint64_t until = impl_->cycles + 2;
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(maxS));
  while (impl_->cycles < until) {
    const std::uint64_t seen = impl_->cycles;
    impl_->wake.wake();
    if (!impl_->cv.wait_until(lock, deadline, [&] { return impl_->cycles != seen; })) return;
  }
}

void LifelineHub::endAll(int exitCode) {
  const std::string f = lifeline::endFrame(exitCode);
  for (int r = 0; r < impl_->world; ++r) sendAllQuietly(impl_->fds[r].load(), f.data(), f.size());
}

void LifelineHub::endAllFromSignal(int exitCode) {
  std::atomic<int>* fds = g_hubFds.load();
  const int n = g_hubFdCount.load();
  if (!fds) return;
  char frame[32];
  const std::size_t len = endFrameInto(frame, sizeof(frame), exitCode);
  for (int r = 0; r < n; ++r) sendAllQuietly(fds[r].load(), frame, len);
}

void LifelineHub::wakeFromSignal() {
  if (const int fd = g_hubWakeFd.load(); fd >= 0) {
    const char byte = 1;
    (void)::write(fd, &byte, 1);
  }
}

void LifelineHub::Impl::serve() {
  int sleepMs = 50;
  while (!stopping.load()) {
    std::vector<pollfd> polled = {{wake.readFd(), POLLIN, 0}};
    if (listener.open()) polled.push_back({listener.fd(), POLLIN, 0});
    const std::size_t first = polled.size();
    for (const Conn& c : conns) polled.push_back({c.socket.fd(), POLLIN, 0});
    // While strangers may still be waiting for their hello deadline, look at least every 50 ms.
    const bool hellos = std::any_of(conns.begin(), conns.end(), [](const Conn& c) { return c.rank < 0; });
    if (::poll(polled.data(), polled.size(), hellos && (sleepMs < 0 || sleepMs > 50) ? 50 : sleepMs) < 0 && errno != EINTR) break;
    if (polled[0].revents) wake.drain();
    if (listener.open() && polled[1].revents) accept();
    for (std::size_t i = first; i < polled.size(); ++i)
      if (polled[i].revents) read(conns[i - first]);
    // A connection that has not said hello in time is no process of this run.
    for (Conn& c : conns)
      if (c.rank < 0 && c.socket.open() && Clock::now() - c.since > std::chrono::duration<double>(lifeline::kHelloDeadlineS))
        close(c, false);
    std::erase_if(conns, [](const Conn& c) { return !c.socket.open(); });
    {
      std::lock_guard lock(mu);
      if (listener.open() && joined == world - 1) listener.reset();  // everyone is here: nobody else may join
      ++cycles;
    }
    cv.notify_all();
    sleepMs = handlers.onTick ? handlers.onTick() : -1;
  }
}

void LifelineHub::Impl::accept() {
  for (;;) {
    Socket s(::accept4(listener.fd(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (!s.open()) return;
    // Strangers may connect; at most this many wait for their hello at once. A process of the run says its hello
    // as soon as it is connected, so it is read here at once; when the room is full the one that waited longest
    // goes, never the newest: a process whose lifeline was closed unread would take process 0 for gone.
    Conn c;
    c.socket = std::move(s);
    read(c);
    if (!c.socket.open() || c.rank >= 0) {
      if (c.socket.open()) conns.push_back(std::move(c));
      continue;
    }
    std::vector<Conn*> waiting;
    for (Conn& o : conns)
      if (o.rank < 0 && o.socket.open()) waiting.push_back(&o);
    if (waiting.size() >= static_cast<std::size_t>(world) + 64)
      (*std::min_element(waiting.begin(), waiting.end(), [](const Conn* a, const Conn* b) {
        return a->since < b->since;
      }))->socket.reset();
    conns.push_back(std::move(c));
  }
}

void LifelineHub::Impl::read(Conn& c) {
  char buf[4096];
  for (;;) {
    const ssize_t k = ::recv(c.socket.fd(), buf, sizeof(buf), MSG_DONTWAIT);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (k <= 0) {
      close(c, true);
      return;
    }
    c.pending.append(buf, static_cast<std::size_t>(k));
    for (std::size_t nl; c.socket.open() && (nl = c.pending.find('\n')) != std::string::npos;) {
      const std::string f = c.pending.substr(0, nl);
      c.pending.erase(0, nl + 1);
      frame(c, f);
    }
    if (!c.socket.open()) return;
    if (c.pending.size() > lifeline::kMaxFrameBytes) {  // no frame is that long
      close(c, true);
      return;
    }
  }
}

void LifelineHub::Impl::frame(Conn& c, std::string_view f) {
  if (c.rank < 0) {
    const auto hello = lifeline::parseHello(f);
    if (!hello || hello->key != key || hello->rank < 1 || hello->rank >= world || joinedRank[hello->rank]) {
      close(c, false);
      return;
    }
    c.rank = hello->rank;
    joinedRank[c.rank] = true;
    fds[c.rank].store(c.socket.fd());
    std::lock_guard lock(mu);
    ++joined;
    return;
  }
  const auto r = lifeline::parseReport(f);
  if (!r) return;
  using K = lifeline::Report::Kind;
  switch (r->kind) {
    case K::kBye:
      c.bye = true;
      break;
    case K::kFail:
      record(c, PeerEndKind::kFailed, r->exitCode, r->line);
      break;
    case K::kStopOwn:
      record(c, PeerEndKind::kStopped, r->exitCode, r->line);
      break;
    case K::kStopWaiting:
      record(c, PeerEndKind::kStoppedWaiting, r->exitCode, r->line);
      break;
    case K::kSaid:
      record(c, PeerEndKind::kSaid, r->exitCode, "");
      break;
  }
}

void LifelineHub::Impl::close(Conn& c, bool eof) {
  if (c.rank >= 0) {
    fds[c.rank].store(-1);
    if (eof) record(c, c.bye ? PeerEndKind::kClosed : PeerEndKind::kVanished, 1, "");
  }
  c.socket.reset();
}

void LifelineHub::Impl::record(Conn& c, PeerEndKind kind, int exitCode, std::string line) {
  if (c.ended) return;  // the first word is the one that counts (a "fail", then the connection closing)
  c.ended = true;
  PeerEnd e{c.rank, kind, exitCode, std::move(line), 0};
  {
    std::lock_guard lock(mu);
    e.order = ++order;
    ends.push_back(e);
  }
  if (handlers.onEnd) handlers.onEnd(e);
}

// ---- a process's lifeline -----------------------------------------------------------------------------------

struct Lifeline::Impl {
  Socket socket;
  WakePipe wake;
  Handlers handlers;
  std::mutex sendMu;
  std::atomic<bool> stopping{false};
  std::thread thread;

  void watch();
};

Lifeline::Lifeline(const LifelineCard& hub, const BeaconCard& self, int rank, Handlers handlers, double connectS)
    : impl_(std::make_unique<Impl>()) {
  impl_->handlers = std::move(handlers);
  const std::string hello = lifeline::helloFrame(hub.key, rank);
  std::string last = "no address to reach it by";
  for (const std::string& a : addressesToReach(self, hub.host, hub.addresses)) {
    const auto to = numericAddress(a, hub.port);
    if (!to) continue;
    Socket s(::socket(to->family, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!s.open()) {
      last = std::strerror(errno);
      continue;
    }
    s.setTimeouts(connectS);  // bounds the connect and each send
    if (::connect(s.fd(), reinterpret_cast<const sockaddr*>(&to->storage), to->length) != 0) {
      last = fmt::format("{}: {}", to->text(), std::strerror(errno));
      continue;
    }
    s.setNoDelay();
    if (::send(s.fd(), hello.data(), hello.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(hello.size())) {
      last = fmt::format("{}: sending the hello failed: {}", to->text(), std::strerror(errno));
      continue;
    }
    impl_->socket = std::move(s);
    break;
  }
  if (!impl_->socket.open()) throw Error(fmt::format("cannot reach process 0's lifeline on host {} ({})", hub.host, last));
  g_lifelineFd.store(impl_->socket.fd());
  impl_->thread = std::thread([impl = impl_.get()] { impl->watch(); });
}

Lifeline::~Lifeline() {
  int fd = impl_->socket.fd();
  g_lifelineFd.compare_exchange_strong(fd, -1);
  impl_->stopping.store(true);
  impl_->wake.wake();
  if (impl_->thread.joinable()) impl_->thread.join();
}

bool Lifeline::send(const std::string& frame) {
  std::lock_guard lock(impl_->sendMu);
  std::size_t off = 0;
  while (off < frame.size()) {
    const ssize_t k = ::send(impl_->socket.fd(), frame.data() + off, frame.size() - off, MSG_NOSIGNAL);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    off += static_cast<std::size_t>(k);
  }
  return true;
}

bool Lifeline::sendFromSignal(const char* frame, std::size_t bytes) {
  const int fd = g_lifelineFd.load();
  if (fd < 0) return false;
  return ::send(fd, frame, bytes, MSG_NOSIGNAL | MSG_DONTWAIT) == static_cast<ssize_t>(bytes);
}

void Lifeline::Impl::watch() {
  std::string pending;
  while (!stopping.load()) {
    pollfd polled[2] = {{socket.fd(), POLLIN, 0}, {wake.readFd(), POLLIN, 0}};
    if (::poll(polled, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (polled[1].revents || stopping.load()) return;
    char buf[256];
    const ssize_t k = ::recv(socket.fd(), buf, sizeof(buf), MSG_DONTWAIT);
    if (k < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) continue;
    if (k <= 0) {
      if (handlers.onHubGone) handlers.onHubGone();
      return;
    }
    pending.append(buf, static_cast<std::size_t>(k));
    for (std::size_t nl; (nl = pending.find('\n')) != std::string::npos;) {
      const auto code = lifeline::parseEnd(std::string_view(pending).substr(0, nl));
      pending.erase(0, nl + 1);
      if (code && handlers.onEnd) handlers.onEnd(*code);
    }
    if (pending.size() > lifeline::kMaxFrameBytes) pending.clear();
  }
}

}  // namespace ts
