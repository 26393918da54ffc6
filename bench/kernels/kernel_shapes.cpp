// --shapes FILE for `trainscope kernels`: the user's own shapes, checked before anything runs.
//   [[shape]]
//   op = "gemm"
//   name = "my qkv"      # optional
//   M = 4096
//   N = 12288
//   K = 4096
//   batch = 8            # optional: a dimension only some of the op's built-in shapes have
// The dimensions of the op's first built-in shape are required; those that only its other built-in shapes
// have are optional (the op gives them a default: gemm's batch, transA, transB, epilogue; attention's impl).
#include <algorithm>
#include <climits>
#include <limits>

#include <fmt/format.h>
#include <toml++/toml.h>

#include "base/error.h"
#include "base/input_file.h"
#include "bench/kernels/kernels_options.h"

namespace ts {
namespace {

// The values an optional dimension takes (the flags and choices of the ops that have them); any other
// optional dimension: 0 or more.
struct OptionalRange {
  const char* dim;
  std::int64_t lo, hi;
};
constexpr OptionalRange kOptionalRanges[] = {
    {"batch", 1, INT_MAX}, {"transA", 0, 1}, {"transB", 0, 1}, {"epilogue", 0, 3}, {"impl", 0, 1}};

}  // namespace

std::vector<std::pair<const KernelOp*, KernelShape>> loadKernelShapes(const std::string& path, std::int64_t H, std::int64_t S,
                                                                      std::int64_t B, std::int64_t V) {
  const std::string text = readInputFile("--shapes", path, 1 << 20);
  toml::table doc;
  try {
    doc = toml::parse(text, path);
  } catch (const toml::parse_error& e) {
    if (!e.source().begin) throw UsageError(fmt::format("--shapes {}: cannot read it: {}", path, e.description()));
    throw UsageError(fmt::format("{}:{}: {}", path, e.source().begin.line, e.description()));
  }
  for (const auto& [key, node] : doc)
    if (key.str() != "shape")
      throw UsageError(
          fmt::format("{}:{}: unknown key '{}' (a shapes file has [[shape]] tables)", path, node.source().begin.line, key.str()));
  const auto* list = doc.get("shape");
  if (!list || !list->is_array_of_tables() || list->as_array()->empty())
    throw UsageError(fmt::format("{}: no [[shape]] tables", path));
  std::vector<std::pair<const KernelOp*, KernelShape>> out;
  for (const auto& node : *list->as_array()) {
    const auto& t = *node.as_table();
    const int line = static_cast<int>(t.source().begin.line);
    const auto* opNode = t.get("op");
    if (!opNode || !opNode->is_string()) throw UsageError(fmt::format("{}:{}: each shape needs op = \"<kernel>\"", path, line));
    const KernelOp* op = nullptr;
    try {
      op = &findKernelOp(opNode->as_string()->get());
    } catch (const UsageError& e) {
      throw UsageError(fmt::format("{}:{}: {}", path, line, e.what()));
    }
    // The op's dimension names, from its built-in shapes: the first one's are required, the rest optional.
    const std::vector<KernelShape> builtIn = op->shapes(H, S, B, V);
    const KernelShape& model = builtIn.front();
    std::vector<std::string> optional;
    for (const auto& other : builtIn)
      for (const auto& dim : other.dims)  // not a structured binding: clang 14 (the fuzz build) cannot capture one
        if (const std::string& d = dim.first;
            std::none_of(model.dims.begin(), model.dims.end(), [&](const auto& m) { return m.first == d; }) &&
            std::find(optional.begin(), optional.end(), d) == optional.end())
          optional.push_back(d);
    KernelShape shape;
    shape.name = "custom";
    for (const auto& [key, v] : t) {
      const std::string k(key.str());
      if (k == "op") continue;
      if (k == "name") {
        if (!v.is_string()) throw UsageError(fmt::format("{}:{}: 'name' must be a string", path, v.source().begin.line));
        shape.name = v.as_string()->get();
        continue;
      }
      const bool isOptional = std::find(optional.begin(), optional.end(), k) != optional.end();
      const bool known =
          isOptional || std::any_of(model.dims.begin(), model.dims.end(), [&](const auto& d) { return d.first == k; });
      if (!known) {
        std::string names, optionalNames;
        for (const auto& d : model.dims) names += (names.empty() ? "" : ", ") + d.first;
        for (const auto& d : optional) optionalNames += (optionalNames.empty() ? "; optional: " : ", ") + d;
        throw UsageError(fmt::format("{}:{}: {} has no dimension '{}' (its dimensions: {}){}", path, v.source().begin.line,
                                     op->name(), k, names, optionalNames));
      }
      if (isOptional) {
        std::int64_t lo = 0, hi = std::numeric_limits<std::int64_t>::max();
        for (const auto& r : kOptionalRanges)
          if (k == r.dim) lo = r.lo, hi = r.hi;
        if (!v.is_integer() || v.as_integer()->get() < lo || v.as_integer()->get() > hi)
          throw UsageError(
              hi == 1 && lo == 0 ? fmt::format("{}:{}: '{}' must be 0 or 1", path, v.source().begin.line, k)
              : hi < std::numeric_limits<std::int64_t>::max()
                  ? fmt::format("{}:{}: '{}' must be an integer from {} to {}", path, v.source().begin.line, k, lo, hi)
                  : fmt::format("{}:{}: '{}' must be a {} integer", path, v.source().begin.line, k,
                                lo > 0 ? "positive" : "non-negative"));
        continue;
      }
      if (!v.is_integer() || v.as_integer()->get() < (k == "pad" ? 0 : 1))
        throw UsageError(fmt::format("{}:{}: '{}' must be a positive integer", path, v.source().begin.line, k));
    }
    for (const auto& [d, unused] : model.dims) {
      const auto* v = t.get(d);
      if (!v) throw UsageError(fmt::format("{}:{}: {} needs '{}'", path, line, op->name(), d));
      shape.dims.emplace_back(d, v->as_integer()->get());
    }
    for (const auto& d : optional)
      if (const auto* v = t.get(d)) shape.dims.emplace_back(d, v->as_integer()->get());  // absent: the op's default
    out.emplace_back(op, shape);
  }
  return out;
}

}  // namespace ts
