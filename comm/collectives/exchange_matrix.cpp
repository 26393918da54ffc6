#include "comm/collectives/exchange_matrix.h"

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>

#include <fmt/format.h>

#include "base/error.h"

namespace ts {

ExchangeMatrix::ExchangeMatrix(int n, std::vector<std::uint64_t> weights) : n_(n), w_(std::move(weights)) {
  const auto un = static_cast<std::size_t>(n);
  if (n < 1 || w_.size() != un * un)
    throw Error(fmt::format("internal: an exchange matrix of {} ranks given {} weights", n, w_.size()));
  sent_.assign(un, 0);
  received_.assign(un, 0);
  sendOffset_.assign(un * un, 0);
  recvOffset_.assign(un * un, 0);
  for (int s = 0; s < n; ++s)
    for (int d = 0; d < n; ++d) {
      sendOffset_[at(s, d)] = sent_[static_cast<std::size_t>(s)];
      recvOffset_[at(s, d)] = received_[static_cast<std::size_t>(d)];
      sent_[static_cast<std::size_t>(s)] += weight(s, d);
      received_[static_cast<std::size_t>(d)] += weight(s, d);
    }
  busiest_ = std::max(*std::max_element(sent_.begin(), sent_.end()), *std::max_element(received_.begin(), received_.end()));
  if (busiest_ == 0) throw Error(fmt::format("internal: an exchange matrix of {} ranks that moves nothing", n));
}

ExchangeMatrix ExchangeMatrix::uniform(int n) {
  return {n, std::vector<std::uint64_t>(static_cast<std::size_t>(n) * static_cast<std::size_t>(n), 1)};
}

ExchangeMatrix ExchangeMatrix::skewed(int n) {
  std::vector<std::uint64_t> w;
  for (int s = 0; s < n; ++s)
    for (int d = 0; d < n; ++d) w.push_back(d == 0 ? static_cast<std::uint64_t>(n) : d == (s + 1) % n ? 0 : 1);
  return {n, std::move(w)};
}

std::vector<std::vector<std::uint64_t>> ExchangeMatrix::rows() const {
  std::vector<std::vector<std::uint64_t>> out;
  for (int s = 0; s < n_; ++s)
    out.emplace_back(w_.begin() + static_cast<std::ptrdiff_t>(at(s, 0)),
                     w_.begin() + static_cast<std::ptrdiff_t>(at(s, 0) + static_cast<std::size_t>(n_)));
  return out;
}

const ExchangeMatrix& uniformExchange(int n) {
  static std::mutex mutex;
  static std::map<int, std::unique_ptr<const ExchangeMatrix>> made;
  const std::lock_guard<std::mutex> lock(mutex);
  auto& m = made[n];
  if (!m) m = std::make_unique<const ExchangeMatrix>(ExchangeMatrix::uniform(n));
  return *m;
}

}  // namespace ts
