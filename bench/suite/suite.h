#pragma once
// Suites: a TOML file (bench/suites/*.toml) listing steps to run in one go, with one result document.
//
//   [suite]
//   name = "quick"
//   description = "..."
//
//   [[step]]
//   kind = "env"
//
//   [[step]]
//   kind = "collectives"
//   ops = ["all_reduce", "all_gather"]
//   max_bytes = "64M"
//
// The whole file is checked before anything runs: an unknown step kind, an unknown key or a value of the
// wrong type is a UsageError naming the file, the line and the key.
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/step_reader.h"

namespace ts {

struct RunContext;

struct SuiteStep {
  std::string kind;
  std::string name;                             // the step's `name`, or its kind
  int line = 0;                                 // where it starts in the file
  bool wantsMpi = false;                        // needs the MPI bootstrap (an MPI backend step)
  nlohmann::json config;                        // the step as resolved, for the record
  std::function<std::size_t(RunContext&)> run;  // returns the number of failed checks
};

struct Suite {
  std::string path, name, description;
  std::vector<SuiteStep> steps;
  nlohmann::json config() const;  // the suite run's recorded config (suiteConfigSchema describes it)
};

// The JSON Schema of Suite::config(), each step's config as `step` says (bench/config_schema.h puts it in the result schema).
nlohmann::ordered_json suiteConfigSchema(nlohmann::ordered_json step);

Suite loadSuite(const std::string& path);
// The same for a suite's text, which may be anything; `path` names it in errors.
Suite parseSuite(std::string_view text, const std::string& path);

}  // namespace ts
