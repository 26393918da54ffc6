#include "comm/mpi/point_to_point.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstring>

#include <fmt/format.h>

#include "base/heartbeat.h"
#include "comm/mpi/mpi_check.h"

namespace ts {
namespace {
constexpr int kData = 11, kAck = 12;

int count(std::size_t bytes) {
  if (bytes > static_cast<std::size_t>(INT_MAX)) throw errorInContext(fmt::format("{} bytes exceed the MPI count limit", bytes));
  return static_cast<int>(bytes);
}

double nowUs() { return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
}  // namespace

MpiPointToPoint::MpiPointToPoint() {
  MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &comm_));
  MPI_CHECK(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
  MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
  MPI_CHECK(MPI_Comm_size(comm_, &size_));
}

MpiPointToPoint::~MpiPointToPoint() {
  if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

void MpiPointToPoint::prepare(std::size_t bytes, int window) {
  if (send_.size() < bytes) {
    send_.resize(bytes);
    recv_.resize(bytes);
  }
  for (std::size_t i = 0; i < bytes; ++i) send_[i] = payloadByte(rank_, i);
  std::memset(recv_.data(), 0, bytes);
  requests_.resize(static_cast<std::size_t>(2 * window + 2));
}

long long MpiPointToPoint::checkFrom(int sender, std::size_t bytes) const {
  long long wrong = 0;
  for (std::size_t i = 0; i < bytes; ++i) wrong += recv_[i] != payloadByte(sender, i);
  return wrong;
}

// The ranks outside the measured pair spend the measurement here: a stall is the pair's, not theirs.
void MpiPointToPoint::waitForAll() {
  const heartbeat::WaitingForPeers waiting;
  MPI_CHECK(MPI_Barrier(comm_));
}

long long MpiPointToPoint::agreeWrong(long long mine) {
  long long all = 0;
  const heartbeat::WaitingForPeers waiting;
  MPI_CHECK(MPI_Allreduce(&mine, &all, 1, MPI_LONG_LONG, MPI_SUM, comm_));
  return all;
}

PairSamples MpiPointToPoint::pingPong(int a, int b, std::size_t bytes, int warmup, int iters) {
  prepare(bytes, 1);
  PairSamples out;
  // The clock reads enclose the round trip alone, as osu_latency's loop holds nothing else: the samples'
  // storage is reserved before it, the sample's store comes after the second read, and the heartbeat after
  // that: for small messages one every 64 round trips (on rank b it falls between its send and its next
  // receive, where one per iteration cost ~3% of an 8-byte round trip), for larger ones (10 us and more
  // each) one per round trip, so that the watchdog hears from a long message's every iteration.
  if (rank_ == a) out.us.reserve(static_cast<std::size_t>(std::max(iters, 0)));
  waitForAll();
  const int n = count(bytes);
  const int beatEvery = bytes < (std::size_t{64} << 10) ? 64 : 1;
  for (int i = -warmup; i < iters; ++i) {
    if (rank_ == a) {
      const auto t0 = std::chrono::steady_clock::now();
      MPI_CHECK(MPI_Send(send_.data(), n, MPI_BYTE, b, kData, comm_));
      MPI_CHECK(MPI_Recv(recv_.data(), n, MPI_BYTE, b, kData, comm_, MPI_STATUS_IGNORE));
      const auto t1 = std::chrono::steady_clock::now();
      if (i >= 0) out.us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / 2);
      if (i % beatEvery == 0) heartbeat::beat();
    } else if (rank_ == b) {
      MPI_CHECK(MPI_Recv(recv_.data(), n, MPI_BYTE, a, kData, comm_, MPI_STATUS_IGNORE));
      MPI_CHECK(MPI_Send(send_.data(), n, MPI_BYTE, a, kData, comm_));
      if (i % beatEvery == 0) heartbeat::beat();
    }
  }
  // Both received the other's payload on every iteration: check the last one.
  long long wrong = 0;
  if (rank_ == a) wrong = checkFrom(b, bytes);
  if (rank_ == b) wrong = checkFrom(a, bytes);
  out.wrong = agreeWrong(wrong);
  return out;
}

PairSamples MpiPointToPoint::stream(int a, int b, std::size_t bytes, int window, int warmup, int iters, bool bidirectional) {
  prepare(bytes, window);
  PairSamples out;
  waitForAll();
  const int n = count(bytes);
  const bool inPair = rank_ == a || rank_ == b;
  const int peer = rank_ == a ? b : a;
  const bool sends = rank_ == a || bidirectional;
  const bool receives = rank_ == b || bidirectional;
  char ack = 0;
  for (int i = -warmup; i < iters && inPair; ++i) {
    const double t0 = nowUs();
    int k = 0;
    for (int w = 0; w < window; ++w) {
      if (receives) MPI_CHECK(MPI_Irecv(recv_.data(), n, MPI_BYTE, peer, kData, comm_, &requests_[k++]));
      if (sends) MPI_CHECK(MPI_Isend(send_.data(), n, MPI_BYTE, peer, kData, comm_, &requests_[k++]));
    }
    MPI_CHECK(MPI_Waitall(k, requests_.data(), MPI_STATUSES_IGNORE));
    // The receiver acknowledges the whole window, so the sender's clock covers delivery, as osu_bw does.
    if (rank_ == a)
      MPI_CHECK(MPI_Recv(&ack, 1, MPI_CHAR, b, kAck, comm_, MPI_STATUS_IGNORE));
    else
      MPI_CHECK(MPI_Send(&ack, 1, MPI_CHAR, a, kAck, comm_));
    const double t1 = nowUs();
    if (rank_ == a && i >= 0) out.us.push_back(t1 - t0);
    heartbeat::beat();
  }
  long long wrong = 0;
  if (rank_ == b || (rank_ == a && bidirectional)) wrong = checkFrom(peer, bytes);
  out.wrong = agreeWrong(wrong);
  return out;
}

}  // namespace ts
