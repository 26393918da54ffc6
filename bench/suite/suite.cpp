#include "bench/suite/suite.h"

#include <algorithm>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <toml++/toml.h>

#include "base/error.h"
#include "base/input_file.h"
#include "base/units.h"
#include "bench/commands.h"

namespace ts {

nlohmann::json Suite::config() const {
  nlohmann::json steps = nlohmann::json::array();
  for (const auto& s : this->steps) steps.push_back(s.config);
  return {{"suite", path}, {"name", name}, {"description", description}, {"steps", steps}};
}

nlohmann::ordered_json suiteConfigSchema(nlohmann::ordered_json step) {
  const nlohmann::ordered_json text = {{"type", "string"}};
  return {
      {"description", "`trainscope suite`: the suite file, its [suite] table's name and description, and each step's config."},
      {"type", "object"},
      {"properties",
       {{"suite", {{"description", "The suite file as given (a shipped suite's path)"}, {"type", "string"}}},
        {"name", text},
        {"description", text},
        {"steps", {{"type", "array"}, {"items", std::move(step)}}}}},
      {"additionalProperties", false}};
}

namespace {

UsageError parseFailure(const toml::parse_error& e, const std::string& path) {
  const auto& where = e.source().begin;
  if (!where) return UsageError(fmt::format("{}: cannot read the suite: {}", path, e.description()));
  return UsageError(fmt::format("{}:{}: {}", path, where.line, e.description()));
}

Suite suiteFrom(const toml::table& doc, const std::string& path) {
  Suite suite;
  suite.path = path;
  for (const auto& [key, node] : doc) {
    const std::string k(key.str());
    if (k != "suite" && k != "step")
      throw UsageError(fmt::format("{}:{}: unknown key '{}' (a suite has a [suite] table and [[step]] tables)", path,
                                   node.source().begin.line, k));
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
    const auto& commands = subcommands();
    auto it = std::find_if(commands.begin(), commands.end(), [&](const Subcommand& c) { return c.readStep && c.name == kind; });
    if (it == commands.end()) {
      std::vector<std::string_view> known;
      for (const auto& c : commands)
        if (c.readStep) known.push_back(c.name);
      throw UsageError(fmt::format("{}:{}: unknown step kind '{}' (expected {})", path, r.line(), kind, fmt::join(known, ", ")));
    }
    const std::string name = r.string("name", kind);
    try {
      SuiteStep step = it->readStep(r);
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

}  // namespace

Suite parseSuite(std::string_view text, const std::string& path) {
  toml::table doc;
  try {
    doc = toml::parse(text, path);
  } catch (const toml::parse_error& e) {
    throw parseFailure(e, path);
  }
  return suiteFrom(doc, path);
}

Suite loadSuite(const std::string& path) {
  return parseSuite(readInputFile("suite", path, 1 << 20), path);  // a page of TOML; /dev/zero would be read forever
}

}  // namespace ts
