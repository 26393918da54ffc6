#include "comm/liveness.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <random>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/json_text.h"
#include "comm/tcp_socket.h"

namespace ts {

namespace {

constexpr const char* kGreeting = "trainscope-beacon ";

}  // namespace

std::string randomHex128() {
  std::random_device rd;
  return fmt::format("{:08x}{:08x}{:08x}{:08x}", rd(), rd(), rd(), rd());
}

WakePipe::WakePipe() {
  if (::pipe2(fd_, O_CLOEXEC | O_NONBLOCK) != 0) throw Error(fmt::format("liveness: pipe: {}", std::strerror(errno)));
}

WakePipe::~WakePipe() {
  for (int f : fd_)
    if (f >= 0) ::close(f);
}

void WakePipe::wake() const {
  const char byte = 1;
  (void)::write(fd_[1], &byte, 1);  // a full pipe wakes the reader as well
}

void WakePipe::drain() const {
  char buf[64];
  while (::read(fd_[0], buf, sizeof(buf)) > 0) {
  }
}

std::vector<std::string> addressesToReach(const BeaconCard& self, const std::string& host,
                                          const std::vector<std::string>& addresses) {
  if (host == self.host) return addresses;
  std::vector<std::string> out;
  for (const std::string& a : addresses)
    if (!isAddressOfThisHost(a)) out.push_back(a);
  return out;
}

std::string BeaconCard::encode() const {
  return jsonText(nlohmann::json{{"rank", rank}, {"host", host}, {"addresses", addresses}, {"port", port}, {"nonce", nonce}});
}

BeaconCard BeaconCard::decode(const std::string& text) {
  try {
    const nlohmann::json j = nlohmann::json::parse(text);
    BeaconCard c;
    c.rank = j.at("rank").get<int>();
    c.host = j.at("host").get<std::string>();
    c.addresses = j.at("addresses").get<std::vector<std::string>>();
    c.port = j.at("port").get<int>();
    c.nonce = j.at("nonce").get<std::string>();
    return c;
  } catch (const nlohmann::json::exception& e) {
    throw Error(fmt::format("a peer's liveness card is malformed: {}", e.what()));
  }
}

bool isAddressOfThisHost(const std::string& address) {
  const auto a = numericAddress(address, 0);
  if (!a) return false;
  const auto* sa = reinterpret_cast<const sockaddr*>(&a->storage);
  if (sa->sa_family == AF_INET && (ntohl(reinterpret_cast<const sockaddr_in*>(sa)->sin_addr.s_addr) >> 24) == 127) return true;
  if (sa->sa_family == AF_INET6 && IN6_IS_ADDR_LOOPBACK(&reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr)) return true;
  bool found = false;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return false;
  for (ifaddrs* i = list; i && !found; i = i->ifa_next) {
    if (!i->ifa_addr || i->ifa_addr->sa_family != sa->sa_family) continue;
    found = sa->sa_family == AF_INET ? reinterpret_cast<const sockaddr_in*>(i->ifa_addr)->sin_addr.s_addr ==
                                           reinterpret_cast<const sockaddr_in*>(sa)->sin_addr.s_addr
                                     : std::memcmp(&reinterpret_cast<const sockaddr_in6*>(i->ifa_addr)->sin6_addr,
                                                   &reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr, sizeof(in6_addr)) == 0;
  }
  ::freeifaddrs(list);
  return found;
}

std::vector<std::string> localIpv4Addresses() {
  std::vector<std::string> out;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return out;
  for (ifaddrs* a = list; a; a = a->ifa_next) {
    if (!a->ifa_addr || a->ifa_addr->sa_family != AF_INET) continue;
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(a->ifa_addr);
    if ((ntohl(v4->sin_addr.s_addr) >> 24) == 127) continue;
    char text[INET_ADDRSTRLEN] = {};
    if (::inet_ntop(AF_INET, &v4->sin_addr, text, sizeof(text)) && std::find(out.begin(), out.end(), text) == out.end())
      out.emplace_back(text);
  }
  ::freeifaddrs(list);
  return out;
}

struct LivenessBeacon::Impl {
  Socket listener;
  WakePipe stop;
  std::string greeting;
  std::thread thread;

  void serve() const {
    pollfd fds[2] = {{listener.fd(), POLLIN, 0}, {stop.readFd(), POLLIN, 0}};
    for (;;) {
      if (::poll(fds, 2, -1) < 0) {
        if (errno == EINTR) continue;
        return;
      }
      if (fds[1].revents) return;
      if (!(fds[0].revents & POLLIN)) continue;
      // Whoever connects gets the greeting and is closed at once: nothing is read, so a stranger on the port
      // can neither block the beacon nor tell it anything.
      const Socket peer(::accept4(listener.fd(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
      if (peer.open()) (void)::send(peer.fd(), greeting.data(), greeting.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    }
  }
};

LivenessBeacon::LivenessBeacon(int rank, const std::string& host, const std::string& address) : impl_(std::make_unique<Impl>()) {
  int port = 0;  // the kernel picks a free one; the port travels in the card
  impl_->listener = listenOnEphemeralPort(address, 64, false, "liveness beacon", port);
  card_ = BeaconCard{rank, host, {address}, port, randomHex128()};
  impl_->greeting = kGreeting + card_.nonce + "\n";
  impl_->thread = std::thread([impl = impl_.get()] { impl->serve(); });
}

LivenessBeacon::~LivenessBeacon() {
  impl_->stop.wake();
  if (impl_->thread.joinable()) impl_->thread.join();
}

namespace {

// One connection attempt to one address of one peer.
struct Attempt {
  std::size_t peer = 0;
  Socket socket;
  bool connected = false;
  bool done = false;
  std::string reply;  // what came back on a connected attempt
};

void note(std::vector<PeerState>& states, std::size_t peer, PeerState s) { states[peer] = std::max(states[peer], s); }

}  // namespace

std::vector<PeerState> askBeacons(const BeaconCard& self, const std::vector<BeaconCard>& peers, double deadlineS) {
  std::vector<PeerState> states(peers.size(), PeerState::kUnreachable);
  std::vector<Attempt> attempts;
  for (std::size_t p = 0; p < peers.size(); ++p) {
    for (const std::string& a : addressesToReach(self, peers[p].host, peers[p].addresses)) {
      const auto to = numericAddress(a, peers[p].port);
      if (!to) continue;
      Attempt at;
      at.peer = p;
      at.socket = Socket(::socket(to->family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
      if (!at.socket.open()) continue;
      if (::connect(at.socket.fd(), reinterpret_cast<const sockaddr*>(&to->storage), to->length) == 0) {
        at.connected = true;
      } else if (errno != EINPROGRESS) {
        if (errno == ECONNREFUSED) note(states, p, PeerState::kGone);
        continue;
      }
      attempts.push_back(std::move(at));
    }
  }
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(deadlineS);
  for (;;) {
    std::vector<pollfd> fds;
    std::vector<Attempt*> polled;
    for (Attempt& at : attempts) {
      if (at.done || states[at.peer] == PeerState::kAlive) continue;
      fds.push_back({at.socket.fd(), static_cast<short>(at.connected ? POLLIN : POLLOUT), 0});
      polled.push_back(&at);
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now()).count();
    if (fds.empty() || left <= 0) break;
    if (::poll(fds.data(), fds.size(), static_cast<int>(left)) < 0 && errno != EINTR) break;
    for (std::size_t i = 0; i < fds.size(); ++i) {
      Attempt& at = *polled[i];
      if (!fds[i].revents) continue;
      if (!at.connected) {
        int err = 0;
        socklen_t len = sizeof(err);
        ::getsockopt(at.socket.fd(), SOL_SOCKET, SO_ERROR, &err, &len);
        if (err != 0) {
          if (err == ECONNREFUSED) note(states, at.peer, PeerState::kGone);
          at.done = true;
          continue;
        }
        at.connected = true;  // the host is up; the greeting says whether the process is
        continue;
      }
      char buf[128];
      const ssize_t k = ::recv(at.socket.fd(), buf, sizeof(buf), 0);
      if (k > 0 && at.reply.size() < 256) at.reply.append(buf, static_cast<std::size_t>(k));
      if (k <= 0 || at.reply.find('\n') != std::string::npos) {
        at.done = true;
        // Anything but the peer's greeting (another program on its port, a beacon of another run) means the
        // peer's process is no longer the one there.
        note(states, at.peer, at.reply == kGreeting + peers[at.peer].nonce + "\n" ? PeerState::kAlive : PeerState::kGone);
      }
    }
  }
  // Accepted and silent until the deadline: the kernel accepts for a process that is stopped or stuck.
  for (const Attempt& at : attempts)
    if (at.connected && !at.done) note(states, at.peer, PeerState::kFrozen);
  return states;
}

}  // namespace ts
