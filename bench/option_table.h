#pragma once
// One declaration per option: its names, help, the field it sets and how its text is read. Both the command
// line (CLI11, `--pp-split 2,2`) and the suite reader (TOML, `pp_split = [2, 2]`) walk the same table, so
// the two cannot drift apart; an option that only one side can take says why (the parity test holds every
// subcommand to that: tests/unit/test_option_parity.cpp).
//
//   OptionTable<TrainRunOptions> t;
//   t.add("--steps", "Optimizer steps", TS_FIELD(train.steps));
//   t.add("--json", "...", TS_FIELD(jsonPath)).commandLineOnly("a suite writes one document (suite --json)");
//
// The field's type picks the parsing: bool (a flag; "--x,!--no-x" for both), integers (range-checked in a
// suite), double (finite: bench/finite_options.cpp on the command line, StepReader in a suite), std::string
// (in the form given: text, comma list, size), std::vector<std::string> (a repeated option; a suite's array
// or ';'-separated string), std::vector<int> (comma-separated), and enums with EnumNames (base/enum_names.h).
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "base/enum_names.h"
#include "bench/step_reader.h"

namespace ts {

// The field an option sets, as a path inside the options struct: TS_FIELD(train.layout.dp).
#define TS_FIELD(path) \
  [](auto& o_) -> auto& { return o_.path; }

// How a text option may be written in a suite besides a plain string.
enum class TextForm {
  kText,  // a string
  kList,  // a string, or an array of strings joined with commas ("all_reduce,all_gather")
  kSize,  // an integer, or a string with a size suffix ("64M")
};

// Where an option can be set. One side only needs a reason (OptionInfo::why).
enum class OptionScope { kBoth, kCommandLineOnly, kSuiteOnly };

// "-w,--warmup" -> "warmup"; "--check,!--no-check" -> "check"; "--pp-split" -> "pp_split": the suite key.
std::string optionKey(const std::string& names);

// What the parity test and the docs read of a declaration.
struct OptionInfo {
  std::string names, key, help;
  OptionScope scope = OptionScope::kBoth;
  std::string why;
};

template <class Opts>
struct OptionDecl {
  OptionInfo info;
  std::function<CLI::Option*(CLI::App&, Opts&)> addToCommandLine;  // null: suite only
  std::function<void(StepReader&, Opts&)> readFromSuite;           // null: command line only

  // Settable on the command line only; `why` says what a suite step does instead.
  OptionDecl& commandLineOnly(std::string why) {
    info.scope = OptionScope::kCommandLineOnly;
    info.why = std::move(why);
    readFromSuite = nullptr;
    return *this;
  }
};

namespace option_detail {

template <class T>
struct IsVector : std::false_type {};
template <class T>
struct IsVector<std::vector<T>> : std::true_type {};

template <class T>
CLI::Option* addField(CLI::App& app, const std::string& names, const std::string& help, T& field) {
  if constexpr (std::is_same_v<T, bool>) {
    return app.add_flag(names, field, help);
  } else if constexpr (NamedEnum<T>) {
    std::map<std::string, T> byName;
    for (const auto& [name, value] : EnumNames<T>::kNames) byName.emplace(std::string(name), value);
    return app.add_option(names, field, help)
        ->transform(CLI::CheckedTransformer(byName))
        ->default_str(std::string(nameOf(field)));
  } else if constexpr (IsVector<T>::value) {
    CLI::Option* option = app.add_option(names, field, help);
    if constexpr (std::is_integral_v<typename T::value_type>) option->delimiter(',');
    if (!field.empty()) option->capture_default_str();
    return option;
  } else if constexpr (std::is_same_v<T, std::string>) {
    CLI::Option* option = app.add_option(names, field, help);
    if (!field.empty()) option->capture_default_str();
    return option;
  } else {
    static_assert(std::is_arithmetic_v<T>, "an option field is a bool, a number, a string, a vector or a named enum");
    return app.add_option(names, field, help)->capture_default_str();
  }
}

// An integer read from a suite, held to T's range (a negative seed, a rank count past int).
template <class T>
T narrowed(StepReader& r, const std::string& key, long long value) {
  if constexpr (std::is_unsigned_v<T>) {
    if (value < 0) r.invalid(key, fmt::format("{} is negative", value));
  } else {
    if (value < static_cast<long long>(std::numeric_limits<T>::min()) ||
        value > static_cast<long long>(std::numeric_limits<T>::max()))
      r.invalid(key, fmt::format("{} is out of range", value));
  }
  return static_cast<T>(value);
}

template <class T>
void readField(StepReader& r, const std::string& key, T& field, TextForm form) {
  if constexpr (std::is_same_v<T, bool>) {
    field = r.boolean(key, field);
  } else if constexpr (NamedEnum<T>) {
    const std::string name = r.string(key, std::string(nameOf(field)));
    const auto value = enumFromName<T>(name);
    if (!value) r.invalid(key, fmt::format("unknown '{}' (expected {})", name, enumNameList<T>()));
    field = *value;
  } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
    field = r.strings(key, field, ';');
  } else if constexpr (IsVector<T>::value) {
    using Elt = typename T::value_type;
    static_assert(std::is_integral_v<Elt>, "a vector option holds strings or integers");
    const std::vector<long long> values = r.integers(key, std::vector<long long>(field.begin(), field.end()));
    field.clear();
    for (long long v : values) field.push_back(narrowed<Elt>(r, key, v));
  } else if constexpr (std::is_same_v<T, std::string>) {
    switch (form) {
      case TextForm::kText:
        field = r.string(key, field);
        break;
      case TextForm::kList:
        field = r.list(key, field);
        break;
      case TextForm::kSize:
        field = r.size(key, field);
        break;
    }
  } else if constexpr (std::is_floating_point_v<T>) {
    field = static_cast<T>(r.number(key, field));
  } else {
    field = narrowed<T>(r, key, r.integer(key, static_cast<long long>(field)));
  }
}

}  // namespace option_detail

// The options of one subcommand, in the order of its help.
template <class Opts>
class OptionTable {
 public:
  // An option setting the field `get` reaches (TS_FIELD); `form` says how a suite may write a string.
  template <class Get>
  OptionDecl<Opts>& add(std::string names, std::string help, Get get, TextForm form = TextForm::kText) {
    OptionDecl<Opts> d;
    d.info = OptionInfo{names, optionKey(names), help, OptionScope::kBoth, ""};
    d.addToCommandLine = [names, help, get](CLI::App& app, Opts& o) { return option_detail::addField(app, names, help, get(o)); };
    d.readFromSuite = [key = d.info.key, get, form](StepReader& r, Opts& o) { option_detail::readField(r, key, get(o), form); };
    return push(std::move(d));
  }

  // A bool written "on" or "off" on the command line (`--overlap off`); true or false in a suite.
  template <class Get>
  OptionDecl<Opts>& addOnOff(std::string names, std::string help, Get get) {
    OptionDecl<Opts> d;
    d.info = OptionInfo{names, optionKey(names), help, OptionScope::kBoth, ""};
    d.addToCommandLine = [names, help, get](CLI::App& app, Opts& o) {
      bool& field = get(o);
      return app.add_option(names, field, help)
          ->transform(CLI::CheckedTransformer(std::map<std::string, bool>{{"on", true}, {"off", false}}))
          ->default_str(field ? "on" : "off");
    };
    d.readFromSuite = [key = d.info.key, get](StepReader& r, Opts& o) { get(o) = r.boolean(key, get(o)); };
    return push(std::move(d));
  }

  // A suite key with no command-line option of its own (`why` says what the command line has instead).
  OptionDecl<Opts>& addSuiteOnly(std::string key, std::string help, std::function<void(StepReader&, Opts&)> read,
                                 std::string why) {
    OptionDecl<Opts> d;
    d.info = {key, key, std::move(help), OptionScope::kSuiteOnly, std::move(why)};
    d.readFromSuite = std::move(read);
    return push(std::move(d));
  }

  void addToCommandLine(CLI::App& app, Opts& o) const {
    for (const auto& d : decls_)
      if (d.addToCommandLine) d.addToCommandLine(app, o);
  }
  void readFromSuite(StepReader& r, Opts& o) const {
    for (const auto& d : decls_)
      if (d.readFromSuite) d.readFromSuite(r, o);
  }
  std::vector<OptionInfo> describe() const {
    std::vector<OptionInfo> out;
    for (const auto& d : decls_) out.push_back(d.info);
    return out;
  }

 private:
  OptionDecl<Opts>& push(OptionDecl<Opts> d) {
    decls_.push_back(std::move(d));
    return decls_.back();
  }
  std::deque<OptionDecl<Opts>> decls_;  // a deque: add() hands out references that later adds keep valid
};

}  // namespace ts
