#pragma once
// --alltoallv-counts: the per-pair counts `collectives` measures alltoallv with (comm/collectives/exchange_matrix.h).
//   uniform  every pair one unit: alltoall's exchange, the same bytes at every size
//   skewed   ExchangeMatrix::skewed: a hot destination (rank 0) and zero blocks, as MoE routing makes
//   FILE     a JSON file of an n x n matrix of whole, non-negative weights, rows = sender rank, columns = receiver rank
//            (a MoE run's tokens routed from each rank to each expert's rank):
//              {"counts": [[3, 0, 1], [2, 2, 0], [5, 1, 1]], "source": "anything that says where it came from"}
//            "counts" is required; other keys are the writer's own and are not read. Or a train result of an --ep run
//            (`train --ep N --json FILE`): its mixtures' dispatch rows from each rank to each rank's experts (the record's
//            moe layers' exchange_counts), summed over the layers: the all-to-all pattern that training's routing made.
// A file is read and checked when the options are (one line and exit 2 for an unreadable file, one that is not such
// a matrix, a negative, fractional, non-finite or too large entry, or all zeros), its rank count once the world is
// known, before any work.
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include <nlohmann/json.hpp>

#include "base/enum_names.h"
#include "comm/collectives/exchange_matrix.h"

namespace ts {

enum class AlltoallvCountsKind { kUniform, kSkewed, kFile };
template <>
struct EnumNames<AlltoallvCountsKind> {
  static constexpr std::pair<std::string_view, AlltoallvCountsKind> kNames[] = {
      {"uniform", AlltoallvCountsKind::kUniform}, {"skewed", AlltoallvCountsKind::kSkewed}, {"file", AlltoallvCountsKind::kFile}};
};

struct AlltoallvCounts {
  AlltoallvCountsKind kind = AlltoallvCountsKind::kUniform;
  std::string path;                        // kFile: as given
  std::optional<ExchangeMatrix> fromFile;  // kFile: its matrix, checked
};

// "uniform", "skewed", or a file's path (read and checked here); UsageError of one line otherwise.
AlltoallvCounts parseAlltoallvCounts(const std::string& text);
// The option's value as given: "skewed", or the file's path (section headers and errors).
std::string spelled(const AlltoallvCounts& c);
// The matrix on `nranks` ranks; UsageError when a file's matrix is of another rank count.
ExchangeMatrix exchangeFor(const AlltoallvCounts& c, int nranks);
// What an alltoallv record says of its counts: {"pattern": "skewed", "weights": [[...], ...]} (and "file" for a file).
nlohmann::json toJson(const AlltoallvCounts& c, const ExchangeMatrix& m);

}  // namespace ts
