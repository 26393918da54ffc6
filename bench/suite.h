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
#include <vector>

#include <nlohmann/json.hpp>

namespace toml {
inline namespace v3 {
class table;
}
}  // namespace toml

namespace ts {

struct RunContext;

struct SuiteStep {
  std::string kind;
  std::string name;      // the step's `name`, or its kind
  int line = 0;          // where it starts in the file
  bool wantsMpi = false; // needs the MPI bootstrap (an MPI backend step)
  nlohmann::json config; // the step as resolved, for the record
  std::function<std::size_t(RunContext&)> run;  // returns the number of failed checks
};

struct Suite {
  std::string path, name, description;
  std::vector<SuiteStep> steps;
  nlohmann::json config() const;
};

Suite loadSuite(const std::string& path);

// Reads the keys of one TOML table, checking each one's type; finish() rejects the keys nobody asked for.
class StepReader {
 public:
  StepReader(const std::string& file, const toml::table& table);
  std::string string(const std::string& key, const std::string& fallback);
  // A string, or an array of strings joined with commas ("all_reduce,all_gather").
  std::string list(const std::string& key, const std::string& fallback);
  // An integer, or a string with a size suffix ("64M").
  std::string size(const std::string& key, const std::string& fallback);
  long long integer(const std::string& key, long long fallback);
  double number(const std::string& key, double fallback);
  bool boolean(const std::string& key, bool fallback);
  void finish();
  int line() const;

 private:
  [[noreturn]] void wrongType(const std::string& key, const char* expected);
  const std::string& file_;
  const toml::table& table_;
  std::vector<std::string> used_;
};

// A step kind: its name, and how to read a table into a runnable step. The registry is suite_steps.cpp.
struct StepType {
  std::string kind;
  std::function<SuiteStep(StepReader&)> parse;
};
const std::vector<StepType>& stepTypes();

}  // namespace ts
