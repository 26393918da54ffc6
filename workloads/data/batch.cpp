#include "workloads/data/batch.h"

#include <fmt/format.h>

#include "base/error.h"

namespace ts::data {

namespace {
// Elements per row of a [rows, ...] shape.
std::int64_t perRow(const std::vector<std::int64_t>& shape) {
  std::int64_t n = 1;
  for (std::size_t i = 1; i < shape.size(); ++i) n *= shape[i];
  return n;
}

template <typename T>
std::vector<T> rowsOf(const std::vector<T>& v, std::int64_t rowElems, std::int64_t begin, std::int64_t end) {
  if (v.empty()) return {};
  return std::vector<T>(v.begin() + begin * rowElems, v.begin() + end * rowElems);
}
}  // namespace

Batch Batch::slice(std::int64_t begin, std::int64_t end) const {
  if (begin < 0 || end < begin || end > size())
    throw Error(fmt::format("rows [{}, {}) are not inside a batch of {}", begin, end, size()));
  Batch out;
  out.step = step;
  out.task = task;
  out.inputShape = inputShape;
  out.inputShape[0] = end - begin;
  out.targetShape = targetShape;
  out.targetShape[0] = end - begin;
  out.features = rowsOf(features, perRow(inputShape), begin, end);
  out.tokens = rowsOf(tokens, perRow(inputShape), begin, end);
  out.targets = rowsOf(targets, perRow(targetShape), begin, end);
  out.sampleIndices = rowsOf(sampleIndices, 1, begin, end);
  out.firstPosition = firstPosition + begin;
  out.staged = staged;
  out.stagedRow = stagedRow + begin;
  return out;
}

}  // namespace ts::data
