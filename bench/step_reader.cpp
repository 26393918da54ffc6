// The suite's reader of one TOML table: types checked per key, unknown keys rejected.
#include "bench/step_reader.h"

#include <algorithm>
#include <sstream>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <toml++/toml.h>

#include "base/error.h"
#include "base/units.h"

namespace ts {

StepReader::StepReader(const std::string& file, const toml::table& table) : file_(file), table_(table) {}

int StepReader::line() const { return static_cast<int>(table_.source().begin.line); }

void StepReader::wrongType(const std::string& key, const char* expected) const {
  const auto* node = table_.get(key);
  throw UsageError(
      fmt::format("{}:{}: '{}' must be {}", file_, node ? node->source().begin.line : table_.source().begin.line, key, expected));
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
      std::vector<std::string_view> known;
      for (const auto& u : used_)
        if (u != "kind") known.push_back(u);
      throw UsageError(fmt::format("{}:{}: unknown key '{}' (this step takes: {})", file_, node.source().begin.line, k,
                                   fmt::join(known, ", ")));
    }
  }
}

void StepReader::invalid(const std::string& key, const std::string& why) const {
  const auto* node = table_.get(key);
  throw UsageError(
      fmt::format("{}:{}: '{}': {}", file_, node ? node->source().begin.line : table_.source().begin.line, key, why));
}

std::vector<std::string> StepReader::strings(const std::string& key, const std::vector<std::string>& fallback, char separator) {
  used_.push_back(key);
  const auto* node = table_.get(key);
  if (!node) return fallback;
  std::vector<std::string> out;
  if (node->is_string()) {
    std::stringstream in(node->as_string()->get());
    for (std::string item; std::getline(in, item, separator);)
      if (!item.empty()) out.push_back(item);
    return out;
  }
  if (!node->is_array()) wrongType(key, "a string or an array of strings");
  for (const auto& item : *node->as_array()) {
    if (!item.is_string()) wrongType(key, "a string or an array of strings");
    out.push_back(item.as_string()->get());
  }
  return out;
}

std::vector<long long> StepReader::integers(const std::string& key, const std::vector<long long>& fallback) {
  used_.push_back(key);
  const auto* node = table_.get(key);
  if (!node) return fallback;
  std::vector<long long> out;
  if (node->is_string()) {
    std::stringstream in(node->as_string()->get());
    for (std::string item; std::getline(in, item, ',');) {
      std::size_t used = 0;
      long long value = 0;
      try {
        value = std::stoll(item, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used == 0 || used != item.size()) invalid(key, fmt::format("'{}' is not an integer", item));
      out.push_back(value);
    }
    return out;
  }
  if (!node->is_array()) wrongType(key, "an array of integers, or a string like \"1,2,4\"");
  for (const auto& item : *node->as_array()) {
    if (!item.is_integer()) wrongType(key, "an array of integers, or a string like \"1,2,4\"");
    out.push_back(item.as_integer()->get());
  }
  return out;
}

}  // namespace ts
