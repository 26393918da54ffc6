#pragma once
// A TCP socket owned by one object, and the few calls the environment bootstrap makes with it.
#include <sys/socket.h>

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace ts {

class Socket {
 public:
  Socket() = default;
  explicit Socket(int fd) : fd_(fd) {}
  Socket(Socket&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  Socket& operator=(Socket&& o) noexcept;
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  ~Socket() { reset(); }
  int fd() const { return fd_; }
  bool open() const { return fd_ >= 0; }
  void reset();
  int release() {  // gives the descriptor up without closing it
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }

  // Blocking whole-buffer transfers; Error naming `peer` when the connection breaks or closes.
  void sendAll(const void* data, std::size_t n, const std::string& peer) const;
  void recvAll(void* data, std::size_t n, const std::string& peer) const;

  void setNonBlocking(bool on) const;
  void setNoDelay() const;
  // Bounds how long one blocking send/connect (SO_SNDTIMEO) and recv (SO_RCVTIMEO) may wait; 0: no bound.
  void setTimeouts(double seconds) const;

 private:
  int fd_ = -1;
};

// An address to listen on or connect to.
struct SocketAddress {
  sockaddr_storage storage{};
  socklen_t length = 0;
  int family = 0;
  std::string text() const;  // "127.0.0.1:29500", "[::1]:29500"
};

// Every address `host` resolves to, with `port`. Returns the getaddrinfo error code in `gaiError` (0 when
// resolved), so that callers decide whether a failure is worth retrying (EAI_AGAIN) or a usage error.
std::vector<SocketAddress> resolveTcp(const std::string& host, int port, int& gaiError);

// The address of the other end of a connected socket ("?" when unknown).
std::string peerAddress(int fd);

// The numeric host of this end of a socket ("127.0.0.1", "::1"; "" when unknown).
std::string localHost(int fd);

// `host` as a numeric IPv4 or IPv6 address with `port`, never looked up by name; nullopt when it is none.
std::optional<SocketAddress> numericAddress(const std::string& host, int port);

// A listening socket on an ephemeral port of `host` (a numeric address) only, never every interface; its port in
// `port`. Error naming `what` when it cannot listen there.
Socket listenOnEphemeralPort(const std::string& host, int backlog, bool nonBlocking, const std::string& what, int& port);

}  // namespace ts
