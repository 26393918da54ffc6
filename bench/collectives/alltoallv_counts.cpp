#include "bench/collectives/alltoallv_counts.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <vector>

#include <fmt/format.h>

#include "base/error.h"
#include "base/input_file.h"
#include "base/json_text.h"

namespace ts {
namespace {

constexpr const char* kOption = "--alltoallv-counts";
// A matrix of a few thousand ranks, written out; a larger file is not one of these.
constexpr std::uint64_t kMaxFileBytes = std::uint64_t{64} << 20;
// Weights are multiplied by the count argument: past 2^40 units a pair would overflow any buffer long before.
constexpr double kMaxWeight = 1099511627776.0;

// One entry, checked: a whole number of units, 0 or more.
std::uint64_t weightOf(const nlohmann::json& v, const std::string& path, std::size_t s, std::size_t d) {
  const auto bad = [&](const std::string& why) {
    return UsageError(fmt::format("{} {}: counts[{}][{}] is {}: {}", kOption, path, s, d, jsonText(v), why));
  };
  if (!v.is_number()) throw bad("each entry is a number (a whole number of units, 0 or more)");
  const double x = v.get<double>();
  if (!std::isfinite(x)) throw bad("not a finite number");
  if (x < 0) throw bad("negative; each entry is a whole number of units, 0 or more");
  if (x != std::floor(x)) throw bad("not a whole number; each entry is a whole number of units (scale the weights up)");
  if (x > kMaxWeight) throw bad(fmt::format("more than the {} units a pair may have", kMaxWeight));
  return v.is_number_unsigned() ? v.get<std::uint64_t>() : static_cast<std::uint64_t>(x);
}

// A train result's routing under expert parallelism: the rows its mixtures sent from each rank to each rank's experts
// (the record's moe layers' exchange_counts), summed over the layers: the pattern the training's dispatches moved.
// Null when the document is no train result; UsageError when it is one without that routing.
nlohmann::json routedCounts(const nlohmann::json& doc, const std::string& path) {
  if (!doc.is_object() || !doc.contains("records") || !doc["records"].is_array()) return nullptr;
  nlohmann::json sum;
  for (const nlohmann::json& r : doc["records"]) {
    if (!r.is_object() || r.value("kind", "") != "train" || !r.contains("moe") || !r["moe"].is_object()) continue;
    for (const nlohmann::json& layer : r["moe"].value("layers", nlohmann::json::array())) {
      if (!layer.is_object() || !layer.contains("exchange_counts")) continue;
      const nlohmann::json& m = layer["exchange_counts"];
      // Each layer's matrix as a counts file's (readMatrix checks the entries); all of one rank count.
      const bool square = m.is_array() && !m.empty() && std::all_of(m.begin(), m.end(), [&](const nlohmann::json& row) {
                            return row.is_array() && row.size() == m.size() &&
                                   std::all_of(row.begin(), row.end(), [](const nlohmann::json& v) { return v.is_number(); });
                          });
      if (!square || (!sum.is_null() && m.size() != sum.size()))
        throw UsageError(fmt::format("{} {}: layer {}'s exchange_counts is not an n x n matrix of numbers like the others'",
                                     kOption, path, layer.value("layer", std::string("?"))));
      if (sum.is_null()) {
        sum = m;
        continue;
      }
      for (std::size_t s = 0; s < m.size(); ++s)
        for (std::size_t d = 0; d < m.size(); ++d) sum[s][d] = sum[s][d].get<double>() + m[s][d].get<double>();
    }
    break;  // a result has one train record
  }
  if (sum.is_null())
    throw UsageError(
        fmt::format("{} {}: a result without a mixture of experts trained with --ep (no exchange_counts in its "
                    "train record's moe layers)",
                    kOption, path));
  return sum;
}

ExchangeMatrix readMatrix(const std::string& path) {
  const std::string text = readInputFile(kOption, path, kMaxFileBytes);
  nlohmann::json doc = nlohmann::json::parse(text, nullptr, false);
  if (doc.is_discarded()) throw UsageError(fmt::format("{} {}: not JSON", kOption, path));
  if (nlohmann::json routed = routedCounts(doc, path); !routed.is_null()) doc = {{"counts", std::move(routed)}};
  const std::string shape =
      "an object whose \"counts\" is an n x n array of arrays (rows = sender rank, columns = receiver rank), or a train "
      "result of an --ep run";
  if (!doc.is_object() || !doc.contains("counts") || !doc["counts"].is_array() || doc["counts"].empty())
    throw UsageError(fmt::format("{} {}: not {}", kOption, path, shape));
  const nlohmann::json& rows = doc["counts"];
  const std::size_t n = rows.size();
  std::vector<std::uint64_t> w;
  for (std::size_t s = 0; s < n; ++s) {
    if (!rows[s].is_array() || rows[s].size() != n)
      throw UsageError(
          fmt::format("{} {}: counts[{}] is not a row of {} entries (counts has {} rows: {})", kOption, path, s, n, n, shape));
    for (std::size_t d = 0; d < n; ++d) w.push_back(weightOf(rows[s][d], path, s, d));
  }
  bool any = false;
  for (const std::uint64_t x : w) any = any || x > 0;
  if (!any) throw UsageError(fmt::format("{} {}: every entry is 0: the exchange moves nothing", kOption, path));
  return {static_cast<int>(n), std::move(w)};
}

}  // namespace

AlltoallvCounts parseAlltoallvCounts(const std::string& text) {
  AlltoallvCounts c;
  if (text == nameOf(AlltoallvCountsKind::kUniform)) return c;
  if (text == nameOf(AlltoallvCountsKind::kSkewed)) {
    c.kind = AlltoallvCountsKind::kSkewed;
    return c;
  }
  std::error_code ec;
  if (!std::filesystem::exists(text, ec))
    throw UsageError(fmt::format("{} {}: neither uniform, skewed nor an existing file", kOption, text));
  c.kind = AlltoallvCountsKind::kFile;
  c.path = text;
  c.fromFile = readMatrix(text);
  return c;
}

std::string spelled(const AlltoallvCounts& c) {
  return c.kind == AlltoallvCountsKind::kFile ? c.path : std::string(nameOf(c.kind));
}

ExchangeMatrix exchangeFor(const AlltoallvCounts& c, int nranks) {
  switch (c.kind) {
    case AlltoallvCountsKind::kUniform:
      return ExchangeMatrix::uniform(nranks);
    case AlltoallvCountsKind::kSkewed:
      return ExchangeMatrix::skewed(nranks);
    case AlltoallvCountsKind::kFile:
      break;
  }
  if (c.fromFile->ranks() != nranks)
    throw UsageError(fmt::format("{} {}: a {} x {} matrix, but the run has {} rank(s)", kOption, c.path, c.fromFile->ranks(),
                                 c.fromFile->ranks(), nranks));
  return *c.fromFile;
}

nlohmann::json toJson(const AlltoallvCounts& c, const ExchangeMatrix& m) {
  nlohmann::json j = {{"pattern", std::string(nameOf(c.kind))}, {"weights", m.rows()}};
  if (c.kind == AlltoallvCountsKind::kFile) j["file"] = c.path;
  return j;
}

}  // namespace ts
