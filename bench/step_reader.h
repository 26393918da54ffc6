#pragma once
// Reads the keys of one TOML table (a suite's [suite] or [[step]]), checking each one's type; finish()
// rejects the keys nobody asked for. The option tables (bench/option_table.h) read a step through it, so a
// step takes exactly the options of its subcommand, under their long names with dashes as underscores.
#include <cstdint>
#include <string>
#include <vector>

namespace toml {
inline namespace v3 {
class table;
}
}  // namespace toml

namespace ts {

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
  // An array of strings, or one string of items separated by `separator` ("depth=4;width=64").
  std::vector<std::string> strings(const std::string& key, const std::vector<std::string>& fallback, char separator);
  // An array of integers, or a string of comma-separated integers ("1,2,4").
  std::vector<long long> integers(const std::string& key, const std::vector<long long>& fallback);
  void finish();
  int line() const;
  // The keys asked for so far, in order (the suite/command-line parity test reads them).
  const std::vector<std::string>& keys() const { return used_; }
  // A UsageError naming the file, the key's line and the key.
  [[noreturn]] void invalid(const std::string& key, const std::string& why) const;

 private:
  [[noreturn]] void wrongType(const std::string& key, const char* expected) const;
  std::string file_;  // a copy: a reader may outlive the string it was given
  const toml::table& table_;
  std::vector<std::string> used_;
};

}  // namespace ts
