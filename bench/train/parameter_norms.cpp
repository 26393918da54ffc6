#include "bench/train/parameter_norms.h"

#include <cmath>
#include <utility>

#include <nlohmann/json.hpp>

#include "base/json_text.h"
#include "comm/bootstrap.h"
#include "workloads/parallel/part_sums.h"

namespace ts {
namespace {

// Every parameter's squared L2 norm (float64 sums), size and whether it is a tensor-parallel slice.
// Collective: every rank visits (ZeRO-3 gathers each layer); the copy that counts keeps it (its first replica's, an
// expert's owner's: part_sums.h).
nlohmann::json parameterSquares(wl::Trainer& trainer, const wl::Mesh& mesh) {
  nlohmann::json out = nlohmann::json::object();
  trainer.visitParameters([&](wl::Param& p) {
    if (!wl::countsHere(p, mesh)) return;
    double sq = 0;
    for (float v : p.value.toHost()) sq += double(v) * double(v);
    out[p.name] = {sq, p.value.numel(), p.tpShard()};
  });
  return out;
}

// A square as the JSON between the ranks carries it: NaN and infinities travel as null.
double squareOf(const nlohmann::json& v) { return v.is_number() ? v.get<double>() : NAN; }

}  // namespace

bool ParameterNorms::finite() const {
  for (const auto& [name, norm] : norms)
    if (!std::isfinite(norm)) return false;
  return true;
}

ParameterNorms gatherParameterNorms(Bootstrap& boot, const wl::Mesh& mesh, wl::Trainer& trainer) {
  const nlohmann::json mine = parameterSquares(trainer, mesh);
  std::vector<std::string> all = {jsonText(mine)};
  if (mesh.worldSize() > 1) all = boot.allGatherStrings(jsonText(mine));
  std::map<std::string, std::pair<double, std::int64_t>> total;
  for (const auto& s : all) {
    const nlohmann::json rank = nlohmann::json::parse(s);
    for (const auto& [name, v] : rank.items()) {
      auto& [sq, n] = total[name];
      if (v[2].get<bool>() || n == 0) {  // slices add up; a replicated tensor counts once
        sq += squareOf(v[0]);
        n += v[1].get<std::int64_t>();
      }
    }
  }
  ParameterNorms out;
  for (const auto& [name, v] : total) {
    out.norms[name] = std::sqrt(v.first);
    out.count += v.second;
  }
  return out;
}

}  // namespace ts
