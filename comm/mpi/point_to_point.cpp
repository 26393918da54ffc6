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
  statuses_.resize(static_cast<std::size_t>(2 * window));
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

long long MpiPointToPoint::receivedBytes(const MPI_Status* statuses, int n) const {
  long long bytes = 0;
  for (int i = 0; i < n; ++i) {
    int got = 0;
    MPI_CHECK(MPI_Get_count(&statuses[i], MPI_BYTE, &got));
    bytes += got;
  }
  return bytes;
}

PairSamples MpiPointToPoint::stream(int a, int b, const StreamPlan& p) {
  prepare(p.bytes, p.window);
  PairSamples out;
  out.us.reserve(static_cast<std::size_t>(p.iters));
  waitForAll();
  const int n = count(p.bytes);
  const bool inPair = rank_ == a || rank_ == b;
  const int peer = rank_ == a ? b : a;
  const bool sends = inPair && (rank_ == a || p.bidirectional);
  const bool receives = inPair && (rank_ == b || p.bidirectional);
  // The receives' statuses alternate between two halves: a timed window's are counted during the next window, after
  // its receives are posted (while its messages are on their way), so memory stays 2 x window whatever -n is.
  auto half = [&](int i) { return statuses_.data() + ((i + p.warmup) % 2) * p.window; };
  long long delivered = 0;
  char ack = 0;
  double start = 0, end = 0;
  for (int i = -p.warmup; i < p.iters && inPair; ++i) {
    const double t0 = nowUs();
    if (i == 0) start = t0;
    // Receives first, then sends, as osu_bibw posts them: every message finds its receive already posted.
    int k = 0;
    if (receives)
      for (int m = 0; m < p.window; ++m) MPI_CHECK(MPI_Irecv(recv_.data(), n, MPI_BYTE, peer, kData, comm_, &requests_[k++]));
    if (sends)
      for (int m = 0; m < p.window; ++m) MPI_CHECK(MPI_Isend(send_.data(), n, MPI_BYTE, peer, kData, comm_, &requests_[k++]));
    if (receives && i > 0) delivered += receivedBytes(half(i - 1), p.window);
    if (receives) MPI_CHECK(MPI_Waitall(p.window, requests_.data(), half(i)));
    if (sends) MPI_CHECK(MPI_Waitall(p.window, requests_.data() + (receives ? p.window : 0), MPI_STATUSES_IGNORE));
    // The receiver acknowledges the whole window, so the sender's clock covers delivery, as osu_bw does.
    if (rank_ == a)
      MPI_CHECK(MPI_Recv(&ack, 1, MPI_CHAR, b, kAck, comm_, MPI_STATUS_IGNORE));
    else
      MPI_CHECK(MPI_Send(&ack, 1, MPI_CHAR, a, kAck, comm_));
    const double t1 = nowUs();
    if (rank_ == a && i >= 0) out.us.push_back(t1 - t0);
    end = t1;
    heartbeat::beat();
  }
  if (rank_ == a) out.totalUs = end - start;
  long long mine[2] = {0, 0};  // wrong payload bytes, bytes delivered in the timed windows
  if (receives) {
    mine[0] = checkFrom(peer, p.bytes);
    mine[1] = delivered + receivedBytes(half(p.iters - 1), p.window);  // the last timed window's
  }
  long long all[2] = {0, 0};
  {
    const heartbeat::WaitingForPeers waiting;
    MPI_CHECK(MPI_Allreduce(mine, all, 2, MPI_LONG_LONG, MPI_SUM, comm_));
  }
  out.wrong = all[0];
  out.deliveredBytes = static_cast<std::uint64_t>(all[1]);
  return out;
}

}  // namespace ts
