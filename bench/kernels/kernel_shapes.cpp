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
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
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

// The shapes file, parsed; UsageError (file:line) when it is not TOML or holds anything but [[shape]] tables.
toml::table readShapesFile(const std::string& path) {
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
  return doc;
}

// The op a [[shape]] table names (`op = "<kernel>"`).
const KernelOp& shapeOp(const toml::table& t, const std::string& path, int line) {
  const auto* opNode = t.get("op");
  if (!opNode || !opNode->is_string()) throw UsageError(fmt::format("{}:{}: each shape needs op = \"<kernel>\"", path, line));
  try {
    return findKernelOp(opNode->as_string()->get());
  } catch (const UsageError& e) {
    throw UsageError(fmt::format("{}:{}: {}", path, line, e.what()));
  }
}

// An op's dimensions, from its built-in shapes: the first one's are required, those only the others have optional.
struct OpDimensions {
  KernelShape model;
  std::vector<std::string> optional;

  explicit OpDimensions(const std::vector<KernelShape>& builtIn) : model(builtIn.front()) {
    for (const auto& other : builtIn)
      for (const auto& dim : other.dims)  // not a structured binding: clang 14 (the fuzz build) cannot capture one
        if (const std::string& d = dim.first;
            std::none_of(model.dims.begin(), model.dims.end(), [&](const auto& m) { return m.first == d; }) &&
            std::find(optional.begin(), optional.end(), d) == optional.end())
          optional.push_back(d);
  }
  bool isOptional(const std::string& k) const { return std::find(optional.begin(), optional.end(), k) != optional.end(); }
  bool isRequired(const std::string& k) const {
    return std::any_of(model.dims.begin(), model.dims.end(), [&](const auto& d) { return d.first == k; });
  }
};

// UsageError naming the op's dimensions, for a key that is none of them.
[[noreturn]] void unknownDimension(const std::string& path, std::int64_t line, const KernelOp& op, const OpDimensions& dims,
                                   const std::string& k) {
  std::vector<std::string_view> names;
  for (const auto& d : dims.model.dims) names.push_back(d.first);
  const std::string optionalNames = dims.optional.empty() ? "" : fmt::format("; optional: {}", fmt::join(dims.optional, ", "));
  throw UsageError(fmt::format("{}:{}: {} has no dimension '{}' (its dimensions: {}){}", path, line, op.name(), k,
                               fmt::join(names, ", "), optionalNames));
}

// An optional dimension's value: within its range (kOptionalRanges), else 0 or more.
void checkOptionalValue(const std::string& path, const std::string& k, const toml::node& v) {
  std::int64_t lo = 0, hi = std::numeric_limits<std::int64_t>::max();
  for (const auto& r : kOptionalRanges)
    if (k == r.dim) lo = r.lo, hi = r.hi;
  if (!v.is_integer() || v.as_integer()->get() < lo || v.as_integer()->get() > hi)
    throw UsageError(hi == 1 && lo == 0 ? fmt::format("{}:{}: '{}' must be 0 or 1", path, v.source().begin.line, k)
                     : hi < std::numeric_limits<std::int64_t>::max()
                         ? fmt::format("{}:{}: '{}' must be an integer from {} to {}", path, v.source().begin.line, k, lo, hi)
                         : fmt::format("{}:{}: '{}' must be a {} integer", path, v.source().begin.line, k,
                                       lo > 0 ? "positive" : "non-negative"));
}

// One [[shape]] table as the op's shape: its name, and every dimension checked (names and values).
std::pair<const KernelOp*, KernelShape> readShape(const toml::table& t, const std::string& path, std::int64_t H, std::int64_t S,
                                                  std::int64_t B, std::int64_t V) {
  const int line = static_cast<int>(t.source().begin.line);
  const KernelOp& op = shapeOp(t, path, line);
  const OpDimensions dims(op.shapes(H, S, B, V));
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
    if (dims.isOptional(k)) {
      checkOptionalValue(path, k, v);
      continue;
    }
    if (!dims.isRequired(k)) unknownDimension(path, v.source().begin.line, op, dims, k);
    if (!v.is_integer() || v.as_integer()->get() < (k == "pad" ? 0 : 1))
      throw UsageError(fmt::format("{}:{}: '{}' must be a positive integer", path, v.source().begin.line, k));
  }
  for (const auto& [d, unused] : dims.model.dims) {
    const auto* v = t.get(d);
    if (!v) throw UsageError(fmt::format("{}:{}: {} needs '{}'", path, line, op.name(), d));
    shape.dims.emplace_back(d, v->as_integer()->get());
  }
  for (const auto& d : dims.optional)
    if (const auto* v = t.get(d)) shape.dims.emplace_back(d, v->as_integer()->get());  // absent: the op's default
  return {&op, shape};
}

}  // namespace

std::vector<std::pair<const KernelOp*, KernelShape>> loadKernelShapes(const std::string& path, std::int64_t H, std::int64_t S,
                                                                      std::int64_t B, std::int64_t V) {
  const toml::table doc = readShapesFile(path);
  const auto* list = doc.get("shape");
  if (!list || !list->is_array_of_tables() || list->as_array()->empty())
    throw UsageError(fmt::format("{}: no [[shape]] tables", path));
  std::vector<std::pair<const KernelOp*, KernelShape>> out;
  for (const auto& node : *list->as_array()) out.push_back(readShape(*node.as_table(), path, H, S, B, V));
  return out;
}

}  // namespace ts
