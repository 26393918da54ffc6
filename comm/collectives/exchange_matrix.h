#pragma once
// The per-pair counts of an uneven all-to-all (alltoallv), as relative weights: rank s sends weight(s, d) units to
// rank d, and a call whose count argument is c moves weight(s, d) x c elements on that pair (c is the record's
// `count`). Rows are senders, columns receivers, as MPI_Alltoallv's sendcounts (a row) and recvcounts (a column) are,
// and as a MoE router's histogram of tokens sent from each rank to each expert's rank is.
// Both buffers are packed, as MPI_Alltoallv's displacements and a MoE dispatch lay them out: rank s's send buffer holds
// its blocks to ranks 0, 1, ..., n-1 one after another, rank d's receive buffer its blocks from ranks 0, 1, ..., n-1;
// a zero weight takes no room.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace ts {

class ExchangeMatrix {
 public:
  // `weights` row-major (weights[s * n + d]): n * n of them, not all zero (Error otherwise: user input is validated
  // before it gets here, with its own message).
  ExchangeMatrix(int n, std::vector<std::uint64_t> weights);

  // Every pair one unit: alltoall's exchange, so that at any size alltoallv moves what alltoall moves.
  static ExchangeMatrix uniform(int n);
  // A deterministic skew with zero blocks, as MoE routing makes one (docs/architecture.md "Formulas"): rank 0 is the hot
  // destination (every rank sends it n units), each rank s sends nothing to rank s+1 (unless that is rank 0), and one
  // unit to every other rank, itself included.
  static ExchangeMatrix skewed(int n);

  int ranks() const { return n_; }
  std::uint64_t weight(int s, int d) const { return w_[at(s, d)]; }
  std::uint64_t sent(int s) const { return sent_[static_cast<std::size_t>(s)]; }          // units rank s sends, to itself too
  std::uint64_t received(int d) const { return received_[static_cast<std::size_t>(d)]; }  // units rank d receives
  // The most units any rank sends or receives: what bounds the exchange's time, and what a record's bytes count.
  std::uint64_t busiest() const { return busiest_; }
  // Units before rank s's block to d in its send buffer, and before rank d's block from s in its receive buffer.
  std::uint64_t sendOffset(int s, int d) const { return sendOffset_[at(s, d)]; }
  std::uint64_t recvOffset(int d, int s) const { return recvOffset_[at(s, d)]; }
  // The rows, for a record.
  std::vector<std::vector<std::uint64_t>> rows() const;

  bool operator==(const ExchangeMatrix& o) const { return n_ == o.n_ && w_ == o.w_; }

 private:
  std::size_t at(int s, int d) const {
    return static_cast<std::size_t>(s) * static_cast<std::size_t>(n_) + static_cast<std::size_t>(d);
  }
  int n_;
  std::vector<std::uint64_t> w_, sent_, received_, sendOffset_, recvOffset_;
  std::uint64_t busiest_ = 0;
};

// The uniform matrix of n ranks, made once per n (a call or layout given no matrix is alltoall's exchange).
const ExchangeMatrix& uniformExchange(int n);

}  // namespace ts
