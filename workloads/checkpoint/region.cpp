#include "workloads/checkpoint/region.h"

#include <algorithm>

#include <fmt/format.h>

#include "base/error.h"
#include "base/json_text.h"

namespace ts::ckpt {
namespace {
// Larger than any tensor trainscope builds, small enough that no product or sum of two overflows.
constexpr std::int64_t kMaxElements = std::int64_t{1} << 48;
}  // namespace

Region Region::whole(std::vector<std::int64_t> shape) {
  Region r;
  r.shape = std::move(shape);
  r.cols = r.colTo = r.to = r.wholeElements();
  return r;
}

Region Region::sliced(std::vector<std::int64_t> shape, std::int64_t rows, std::int64_t cols,
                      const std::vector<std::int64_t>& heldRows, std::int64_t colFrom, std::int64_t colTo) {
  Region r;
  r.shape = std::move(shape);
  r.rows = rows;
  r.cols = cols;
  r.rowRuns = runsOf(heldRows);
  r.colFrom = colFrom;
  r.colTo = colTo;
  r.to = r.sliceElements();
  return r;
}

std::vector<std::pair<std::int64_t, std::int64_t>> Region::runsOf(const std::vector<std::int64_t>& rows) {
  std::vector<std::pair<std::int64_t, std::int64_t>> runs;
  for (std::int64_t r : rows) {
    if (!runs.empty() && runs.back().second == r)
      ++runs.back().second;
    else
      runs.emplace_back(r, r + 1);
  }
  return runs;
}

std::int64_t Region::wholeElements() const {
  std::int64_t n = 1;
  for (std::int64_t d : shape) n *= d;
  return n;
}

std::int64_t Region::sliceRows() const {
  if (rowRuns.empty()) return rows;
  std::int64_t n = 0;
  for (const auto& [b, e] : rowRuns) n += e - b;
  return n;
}

bool Region::sameSlice(const Region& o) const {
  return shape == o.shape && rows == o.rows && cols == o.cols && rowRuns == o.rowRuns && colFrom == o.colFrom && colTo == o.colTo;
}

bool Region::isWhole() const {
  const bool allRows = rowRuns.empty() || (rowRuns.size() == 1 && rowRuns[0].first == 0 && rowRuns[0].second == rows);
  return allRows && colFrom == 0 && colTo == cols && from == 0 && to == wholeElements();
}

void Region::forEachRun(const std::function<void(std::int64_t, std::int64_t, std::int64_t)>& run) const {
  const std::int64_t width = colTo - colFrom;
  if (width <= 0) return;
  // The slice's row lr is the whole tensor's row `rowAt(lr)`: walk the runs alongside.
  std::size_t runIndex = 0;
  std::int64_t runStart = 0;  // the slice row where rowRuns[runIndex] begins
  auto rowAt = [&](std::int64_t lr) {
    if (rowRuns.empty()) return lr;
    while (lr >= runStart + (rowRuns[runIndex].second - rowRuns[runIndex].first)) {
      runStart += rowRuns[runIndex].second - rowRuns[runIndex].first;
      ++runIndex;
    }
    return rowRuns[runIndex].first + (lr - runStart);
  };
  for (std::int64_t i = from; i < to;) {
    const std::int64_t lr = i / width, lc = i % width;
    const std::int64_t n = std::min(to - i, width - lc);
    run(i - from, rowAt(lr) * cols + colFrom + lc, n);
    i += n;
  }
}

nlohmann::json Region::toJson() const {
  nlohmann::json j = {{"shape", shape}, {"view", {rows, cols}}, {"cols", {colFrom, colTo}}, {"elements", {from, to}}};
  if (!rowRuns.empty()) {
    nlohmann::json runs = nlohmann::json::array();
    for (const auto& [b, e] : rowRuns) runs.push_back({b, e});
    j["rows"] = runs;
  }
  return j;
}

void Region::check(const std::string& origin) const {
  auto bad = [&](const std::string& what) { return UsageError(fmt::format("{}: {}", origin, what)); };
  std::int64_t n = 1;
  for (std::int64_t d : shape) {
    if (d < 0 || (d > 0 && n > kMaxElements / d)) throw bad(fmt::format("shape dimension {} is out of range", d));
    n *= d;
  }
  if (rows < 1 || cols < 0 || (cols == 0 ? n != 0 : n % cols != 0 || n / cols != rows))
    throw bad(fmt::format("view [{}, {}] does not hold the {} elements of the shape", rows, cols, n));
  std::int64_t held = 0;
  for (const auto& [b, e] : rowRuns) {
    if (b < 0 || e <= b || e > rows) throw bad(fmt::format("row run [{}, {}) is not within the view's {} rows", b, e, rows));
    held += e - b;
  }
  if (held > rows) throw bad(fmt::format("the row runs hold {} rows of {}", held, rows));
  if (colFrom < 0 || colTo < colFrom || colTo > cols)
    throw bad(fmt::format("columns [{}, {}) are not within the view's {}", colFrom, colTo, cols));
  if (from < 0 || to < from || to > sliceElements())
    throw bad(fmt::format("elements [{}, {}) are not within the slice's {}", from, to, sliceElements()));
}

Region Region::fromJson(const nlohmann::json& j, const std::string& origin) {
  auto bad = [&](const std::string& what) { return UsageError(fmt::format("{}: {}", origin, what)); };
  auto ints = [&](const char* key, std::size_t count) {  // count 0: any length
    if (!j.is_object() || !j.contains(key) || !j[key].is_array() || (count && j[key].size() != count))
      throw bad(fmt::format("'{}' is missing or not a list of {} integers", key, count ? std::to_string(count) : "any"));
    std::vector<std::int64_t> out;
    for (const auto& v : j[key]) {
      if (!v.is_number_integer()) throw bad(fmt::format("'{}' holds {}, not an integer", key, jsonText(v)));
      out.push_back(v.get<std::int64_t>());
    }
    return out;
  };
  Region r;
  r.shape = ints("shape", 0);
  const auto view = ints("view", 2), cols = ints("cols", 2), elements = ints("elements", 2);
  r.rows = view[0];
  r.cols = view[1];
  r.colFrom = cols[0];
  r.colTo = cols[1];
  r.from = elements[0];
  r.to = elements[1];
  if (j.contains("rows")) {
    if (!j["rows"].is_array()) throw bad("'rows' is not a list of [begin, end) runs");
    for (const auto& run : j["rows"]) {
      if (!run.is_array() || run.size() != 2 || !run[0].is_number_integer() || !run[1].is_number_integer())
        throw bad("'rows' is not a list of [begin, end) runs");
      r.rowRuns.emplace_back(run[0].get<std::int64_t>(), run[1].get<std::int64_t>());
    }
  }
  r.check(origin);
  return r;
}

}  // namespace ts::ckpt
