#pragma once
// MPI point-to-point measurements between two ranks, for the links layer: ping-pong latency and
// osu_bw-style windowed bandwidth (one direction, or both at once). One pair is measured at a time; the
// other ranks only take part in the barriers. Payloads carry a pattern that names the sender and are
// checked after the timed loop (untimed), so a transport that corrupts data is caught.
#include <mpi.h>

#include <cstddef>
#include <vector>

namespace ts {

struct PairSamples {
  std::vector<double> us;  // on rank a: one sample per iteration; empty elsewhere
  long long wrong = 0;     // wrong payload bytes seen by a or b (summed over both, on every rank)
};

class MpiPointToPoint {
 public:
  MpiPointToPoint();  // needs MPI initialised (the MPI bootstrap)
  ~MpiPointToPoint();
  MpiPointToPoint(const MpiPointToPoint&) = delete;
  MpiPointToPoint& operator=(const MpiPointToPoint&) = delete;
  int rank() const { return rank_; }
  int size() const { return size_; }

  // Samples: half of each round trip of `bytes` from a to b and back, in microseconds.
  PairSamples pingPong(int a, int b, std::size_t bytes, int warmup, int iters);
  // Samples: microseconds for a window of `window` messages of `bytes` from a to b (and b to a at the same
  // time when bidirectional), closed by a 1-byte acknowledgement.
  PairSamples stream(int a, int b, std::size_t bytes, int window, int warmup, int iters, bool bidirectional);

 private:
  void prepare(std::size_t bytes, int window);
  long long checkFrom(int sender, std::size_t bytes) const;
  long long agreeWrong(long long mine);
  void waitForAll();  // a barrier
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
  std::vector<unsigned char> send_, recv_;
  std::vector<MPI_Request> requests_;
};

// The pattern byte i of a payload from `sender` carries.
inline unsigned char payloadByte(int sender, std::size_t i) {
  return static_cast<unsigned char>((sender * 131 + i * 7 + 1) & 0xff);
}

}  // namespace ts
