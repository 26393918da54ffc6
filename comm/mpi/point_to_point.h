#pragma once
// MPI point-to-point measurements between two ranks, for the links layer: ping-pong latency and
// windowed bandwidth by osu_bw's and osu_bibw's method (one direction, or both at once). One pair is measured at a time; the
// other ranks only take part in the barriers. Payloads carry a pattern that names the sender and are
// checked after the timed loop (untimed), so a transport that corrupts data is caught.
#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ts {

struct PairSamples {
  std::vector<double> us;  // on rank a: one sample per iteration; empty elsewhere
  long long wrong = 0;     // wrong payload bytes seen by a or b (summed over both, on every rank)
  // stream() only. On rank a: the timed loop's wall time, from the start of the first timed window to the end of the
  // last (osu_bw's t_end - t_start: the figure is the bytes of all timed windows over it); 0 elsewhere.
  double totalUs = 0;
  // stream() only, on every rank: the bytes the receiving rank(s) got in the timed windows, as MPI counted them
  // (both directions together when bidirectional), so a record can show it sent what it says.
  std::uint64_t deliveredBytes = 0;
};

// What stream() sends: `window` messages of `bytes` per window; `warmup` windows untimed, then `iters` timed.
struct StreamPlan {
  std::size_t bytes = 0;
  int window = 1;
  int warmup = 0;
  int iters = 1;
  bool bidirectional = false;
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
  // osu_bw's method (osu_bibw's when bidirectional): per window, the receiver posts its `window` receives into one
  // buffer, the sender its sends from one buffer (both sides' when bidirectional: receives first, then sends), each
  // waits for its own, and the receiver's 1-byte acknowledgement closes the window, so that rank a's clock covers
  // delivery. Samples: microseconds per timed window; totalUs and deliveredBytes as PairSamples says.
  PairSamples stream(int a, int b, const StreamPlan& plan);

 private:
  void prepare(std::size_t bytes, int window);
  long long checkFrom(int sender, std::size_t bytes) const;
  long long receivedBytes(const MPI_Status* statuses, int n) const;  // the bytes MPI counted in n receives' statuses
  long long agreeWrong(long long mine);
  void waitForAll();  // a barrier
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
  std::vector<unsigned char> send_, recv_;
  std::vector<MPI_Request> requests_;
  std::vector<MPI_Status> statuses_;
};

// The pattern byte i of a payload from `sender` carries.
inline unsigned char payloadByte(int sender, std::size_t i) {
  return static_cast<unsigned char>((sender * 131 + i * 7 + 1) & 0xff);
}

}  // namespace ts
