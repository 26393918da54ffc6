#include "bench/suite.h"

#include <algorithm>

#include <fmt/format.h>
#include <toml++/toml.h>

#include "base/error.h"
#include "base/units.h"

namespace ts {

StepReader::StepReader(const std::string& file, const toml::table& table) : file_(file), table_(table) {}

int StepReader::line() const { return static_cast<int>(table_.source().begin.line); }

void StepReader::wrongType(const std::string& key, const char* expected) {
  const auto* node = table_.get(key);
  throw UsageError(fmt::format("{}:{}: '{}' must be {}", file_, node ? node->source().begin.line : table_.source().begin.line, key, expected));
}

std::string StepReader::string(const std::string& key, const std::string& fallback) {
  used_.push_back(key);
  const auto* node = table_.get(key);
  if (!node) return fallback;
  if (!node->is_string()) wrongType(key, "a string");
  return node->as_string()->get();
}

std::string StepReader::list(const std::string& key, const std::string& fallback) {
  used_.push_back(key);
  const auto* node = table_.get(key);
  if (!node) return fallback;
  if (node->is_string()) return node->as_string()->get();
  if (!node->is_array()) wrongType(key, "a string or an array of strings");
  std::string joined;
  for (const auto& item : *node->as_array()) {
    if (!item.is_string()) wrongType(key, "a string or an array of strings");
    joined += (joined.empty() ? "" : ",") + item.as_string()->get();
  }
  if (joined.empty()) wrongType(key, "a non-empty list");
  return joined;
}

std::string StepReader::size(const std::string& key, const std::string& fallback) {
  used_.push_back(key);
  const auto* node = table_.get(key);
  if (!node) return fallback;
  if (node->is_integer()) return std::to_string(node->as_integer()->get());
  if (node->is_string()) return node->as_string()->get();
  wrongType(key, "a size (an integer, or a string like \"64M\")");
}

long long StepReader::integer(const std::string& key, long long fallback) {
  used_.push_back(key);
  const auto* node = table_.get(key);
  if (!node) return fallback;
  if (!node->is_integer()) wrongType(key, "an integer");
  return node->as_integer()->get();
}

double StepReader::number(const std::string& key, double fallback) {
  used_.push_back(key);
  const auto* node = table_.get(key);
  if (!node) return fallback;
  if (node->is_integer()) return static_cast<double>(node->as_integer()->get());
  if (!node->is_floating_point()) wrongType(key, "a number");
  const double value = node->as_floating_point()->get();
  // TOML writes nan, inf and -inf as fmt prints them.
  if (const std::string reason = nonFiniteReason(value, fmt::format("{}", value)); !reason.empty())
    throw UsageError(fmt::format("{}:{}: '{}': {}", file_, node->source().begin.line, key, reason));
  return value;
}

bool StepReader::boolean(const std::string& key, bool fallback) {
  used_.push_back(key);
  const auto* node = table_.get(key);
  if (!node) return fallback;
  if (!node->is_boolean()) wrongType(key, "true or false");
  return node->as_boolean()->get();
}

void StepReader::finish() {
  for (const auto& [key, node] : table_) {
    const std::string k(key.str());
    if (std::find(used_.begin(), used_.end(), k) == used_.end()) {
      std::string known;
      for (const auto& u : used_)
        if (u != "kind") known += (known.empty() ? "" : ", ") + u;
      throw UsageError(fmt::format("{}:{}: unknown key '{}' (this step takes: {})", file_, node.source().begin.line, k, known));
    }
  }
}

nlohmann::json Suite::config() const {
  nlohmann::json steps = nlohmann::json::array();
  for (const auto& s : this->steps) steps.push_back(s.config);
  return {{"suite", path}, {"name", name}, {"description", description}, {"steps", steps}};
}

Suite loadSuite(const std::string& path) {
  toml::table doc;
  try {
    doc = toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    const auto& where = e.source().begin;
    if (!where) throw UsageError(fmt::format("{}: cannot read the suite: {}", path, e.description()));
    throw UsageError(fmt::format("{}:{}: {}", path, where.line, e.description()));
  }
  Suite suite;
  suite.path = path;
  for (const auto& [key, node] : doc) {
    const std::string k(key.str());
    if (k != "suite" && k != "step")
      throw UsageError(fmt::format("{}:{}: unknown key '{}' (a suite has a [suite] table and [[step]] tables)", path, node.source().begin.line, k));
  }
  if (const auto* head = doc.get("suite")) {
    if (!head->is_table()) throw UsageError(fmt::format("{}:{}: 'suite' must be a table", path, head->source().begin.line));
    StepReader r(path, *head->as_table());
    suite.name = r.string("name", "");
    suite.description = r.string("description", "");
    r.finish();
  }
  const auto* steps = doc.get("step");
  if (!steps || !steps->is_array_of_tables() || steps->as_array()->empty())
    throw UsageError(fmt::format("{}: no steps (add [[step]] tables)", path));
  for (const auto& node : *steps->as_array()) {
    const auto& table = *node.as_table();
    StepReader r(path, table);
    const std::string kind = r.string("kind", "");
    const auto& types = stepTypes();
    auto it = std::find_if(types.begin(), types.end(), [&](const StepType& t) { return t.kind == kind; });
    if (it == types.end()) {
      std::string known;
      for (const auto& t : types) known += (known.empty() ? "" : ", ") + t.kind;
      throw UsageError(fmt::format("{}:{}: unknown step kind '{}' (expected {})", path, r.line(), kind, known));
    }
    const std::string name = r.string("name", kind);
    try {
      SuiteStep step = it->parse(r);
      r.finish();
      step.kind = kind;
      step.name = name;
      step.line = r.line();
      step.config["kind"] = kind;
      step.config["name"] = name;
      suite.steps.push_back(std::move(step));
    } catch (const UsageError& e) {
      const std::string what = e.what();
      if (what.rfind(path + ":", 0) == 0) throw;
      throw UsageError(fmt::format("{}:{}: step '{}': {}", path, r.line(), name, what));  // e.g. a bad size or op name
    }
  }
  if (suite.name.empty()) suite.name = "suite";
  return suite;
}

}  // namespace ts
