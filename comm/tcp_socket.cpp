#include "comm/tcp_socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "base/error.h"

namespace ts {

Socket& Socket::operator=(Socket&& o) noexcept {
  if (this != &o) {
    reset();
    fd_ = o.fd_;
    o.fd_ = -1;
  }
  return *this;
}

void Socket::reset() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void Socket::sendAll(const void* data, std::size_t n, const std::string& peer) const {
  const auto* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t k = ::send(fd_, p, n, MSG_NOSIGNAL);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) throw Error(fmt::format("bootstrap: lost the connection to {} while sending: {}", peer, std::strerror(errno)));
    p += k;
    n -= static_cast<std::size_t>(k);
  }
}

void Socket::recvAll(void* data, std::size_t n, const std::string& peer) const {
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

void Socket::setNonBlocking(bool on) const {
  const int flags = ::fcntl(fd_, F_GETFL, 0);
  ::fcntl(fd_, F_SETFL, on ? (flags | O_NONBLOCK) : (flags & ~O_NONBLOCK));
}

void Socket::setNoDelay() const {
  int one = 1;
  ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

void Socket::setTimeouts(double seconds) const {
  timeval tv{};
  if (seconds > 0) {
    tv.tv_sec = static_cast<time_t>(seconds);
    tv.tv_usec = static_cast<suseconds_t>((seconds - std::floor(seconds)) * 1e6);
    if (tv.tv_sec == 0 && tv.tv_usec == 0) tv.tv_usec = 1;  // 0 would mean "wait forever"
  }
  ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
}

namespace {
// The numeric host of `a` ("" for another family).
std::string hostText(const sockaddr* a) {
  char host[INET6_ADDRSTRLEN] = "";
  if (a->sa_family == AF_INET) ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(a)->sin_addr, host, sizeof(host));
  if (a->sa_family == AF_INET6) ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(a)->sin6_addr, host, sizeof(host));
  return host;
}

std::string addressText(const sockaddr* a) {
  if (a->sa_family == AF_INET) return fmt::format("{}:{}", hostText(a), ntohs(reinterpret_cast<const sockaddr_in*>(a)->sin_port));
  if (a->sa_family == AF_INET6)
    return fmt::format("[{}]:{}", hostText(a), ntohs(reinterpret_cast<const sockaddr_in6*>(a)->sin6_port));
  return "?";
}
}  // namespace

std::string SocketAddress::text() const { return addressText(reinterpret_cast<const sockaddr*>(&storage)); }

std::vector<SocketAddress> resolveTcp(const std::string& host, int port, int& gaiError) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* res = nullptr;
  gaiError = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res);
  std::vector<SocketAddress> out;
  if (gaiError != 0) return out;
  for (addrinfo* a = res; a; a = a->ai_next) {
    if (a->ai_family != AF_INET && a->ai_family != AF_INET6) continue;
    SocketAddress s;
    std::memcpy(&s.storage, a->ai_addr, a->ai_addrlen);
    s.length = a->ai_addrlen;
    s.family = a->ai_family;
    bool seen = false;  // /etc/hosts may list one address twice
    for (const auto& o : out) seen = seen || (o.length == s.length && std::memcmp(&o.storage, &s.storage, s.length) == 0);
    if (!seen) out.push_back(s);
  }
  ::freeaddrinfo(res);
  return out;
}

std::string peerAddress(int fd) {
  sockaddr_storage a{};
  socklen_t len = sizeof(a);
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) return "?";
  return addressText(reinterpret_cast<const sockaddr*>(&a));
}

std::string localHost(int fd) {
  sockaddr_storage a{};
  socklen_t len = sizeof(a);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) return "";
  return hostText(reinterpret_cast<const sockaddr*>(&a));
}

std::optional<SocketAddress> numericAddress(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  if (host.empty() || ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res) != 0) return std::nullopt;
  std::optional<SocketAddress> out;
  if (res->ai_family == AF_INET || res->ai_family == AF_INET6) {
    out.emplace();
    std::memcpy(&out->storage, res->ai_addr, res->ai_addrlen);
    out->length = res->ai_addrlen;
    out->family = res->ai_family;
  }
  ::freeaddrinfo(res);
  return out;
}

Socket listenOnEphemeralPort(const std::string& host, int backlog, bool nonBlocking, const std::string& what, int& port) {
  auto a = numericAddress(host, 0);  // port 0: the kernel picks a free one
  if (!a) throw Error(fmt::format("{}: '{}' is no numeric address to listen on", what, host));
  Socket s(::socket(a->family, SOCK_STREAM | SOCK_CLOEXEC | (nonBlocking ? SOCK_NONBLOCK : 0), 0));
  if (!s.open()) throw Error(fmt::format("{}: socket: {}", what, std::strerror(errno)));
  int one = 1;
  // An IPv6 socket must not also take IPv4 connections on every interface.
  if (a->family == AF_INET6) ::setsockopt(s.fd(), IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
  socklen_t len = sizeof(a->storage);
  if (::bind(s.fd(), reinterpret_cast<const sockaddr*>(&a->storage), a->length) != 0 || ::listen(s.fd(), backlog) != 0 ||
      ::getsockname(s.fd(), reinterpret_cast<sockaddr*>(&a->storage), &len) != 0)
    throw Error(fmt::format("{}: cannot listen on {}: {}", what, host, std::strerror(errno)));
  port = a->family == AF_INET ? ntohs(reinterpret_cast<const sockaddr_in*>(&a->storage)->sin_port)
                              : ntohs(reinterpret_cast<const sockaddr_in6*>(&a->storage)->sin6_port);
  return s;
}

}  // namespace ts
