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
// The field's type picks the parsing: bool (a flag; "--x,!--no-x" for both), integers (decimal, held to the
// field's type on both sides and to the range declared: an unsigned one takes no minus sign, so --seed -1 does
// not wrap, and an int64 takes no 99999999999999999999), double (finite on both sides, and in the range it
// declares: `.range(...)`, which every real-valued option has: tests/unit/test_number_options.cpp holds them
// to it), std::string (in the form given: text, comma list, size), std::vector<std::string> (a repeated option;
// a suite's array or ';'-separated string), std::vector<int> (comma-separated, each held to int), enums with
// EnumNames (base/enum_names.h), and std::vector of such an enum (`--tests memory,mpi`, or `all`: a set of the
// enum's values, recorded as the array of their names in declaration order; a suite's array or comma string). A range can be
// given to an integer option too (closed ends): a count says
// "--batch: must be a positive integer, got -1" and "--steps: 2147483648 is out of range (at most 2147483647)",
// in a suite the same after the file, line and key.
//
// The table also writes the run's `config` (OptionTable::record): every option's value as given, under its suite key,
// so an option added to the table is recorded with nothing else to keep in step; one left out says why
// (`.notRecorded("an output path")`), and tests/unit/test_option_records.cpp holds every subcommand to that. A recorded
// option is part of the record's identity unless it says why runs that differ in it measured the same thing
// (`.notInIdentity("another draw of the same work")`). What a table
// says of each option's value (its type, choices, range, default; OptionInfo::value) is also the result schema's description
// of that config (bench/config_schema.h, generated from the tables).
#include <algorithm>
#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "base/enum_names.h"
#include "base/split.h"
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

// The values a number option takes, each end closed or open: "[0, 1)", "(0, 1e+06]".
struct NumberRange {
  double lo, hi;
  bool loOpen = false, hiOpen = false;
  bool contains(double v) const { return (loOpen ? v > lo : v >= lo) && (hiOpen ? v < hi : v <= hi); }  // false for NaN
  std::string describe() const { return fmt::format("{}{}, {}{}", loOpen ? '(' : '[', lo, hi, hiOpen ? ')' : ']'); }
};

// The most a count option takes (steps, iterations, a batch, a rank count): a count past int's range is a typo, not a run.
inline constexpr double kMaxCount = std::numeric_limits<std::int32_t>::max();

namespace option_detail {

// The integers an integer option takes, both ends included: its field's type's, narrowed by a declared range.
struct IntegerBounds {
  long long lo;
  unsigned long long hi;
};

template <class T>
IntegerBounds typeBounds() {
  return {static_cast<long long>(std::numeric_limits<T>::min()), static_cast<unsigned long long>(std::numeric_limits<T>::max())};
}

// Why a suite's integer is not in `b`, in our words ("must be a positive integer, got -1", "2147483648 is out of range (at
// most 2147483647)"); "" when it is.
std::string integerProblem(long long value, const IntegerBounds& b);
// The command line's check of an integer (each item of a list): decimal digits with an optional sign, in `*b` (read when
// the option is parsed, after every range was declared), in the words above ("must be an integer, got '1.5'"); a value
// taken is rewritten as the decimal it is (CLI11 alone reads 010 as octal 8 and 0x10 as 16).
CLI::Validator integerIn(std::shared_ptr<const IntegerBounds> b);

}  // namespace option_detail

// What the parity test and the docs read of a declaration.
struct OptionInfo {
  std::string names, key, help;
  OptionScope scope = OptionScope::kBoth;
  std::string why;
  bool real = false;                 // the field is a double: it needs a range
  bool number = false;               // any number (a double or an integer)
  std::optional<NumberRange> range;  // the values it takes, when declared
  // Other spellings the command line takes (an old name, nccl-tests' letter), each as `names` is written
  // ("--warmup-steps", "--ceilings,!--no-ceilings"); the help marks them as aliases. The suite key stays the key.
  std::vector<std::string> aliases;
  std::string group;  // the help's heading over it; "" for the subcommand's plain "Options"
  bool hidden = false;
  // Why the record's config leaves it out; "": it is there, under `key`, as given.
  std::string notRecorded;
  // Why two records that differ only in it are still one measurement (another seed's draw, a label, how long to wait);
  // "": they are not, it is part of the record's identity (compare pairs only records that agree on it).
  std::string notInIdentity;
  // Its value as the record's config holds it, as JSON Schema ({"type": "integer", "minimum": 1, ...}: the field's type,
  // an enum's names, the range declared), and the value when nothing sets it (the options struct's default). Filled by
  // OptionTable::describe (a range declared after add() narrows it); the result schema's config part is made of them.
  nlohmann::json value = nlohmann::json::object();
  nlohmann::json defaultValue;
};

// The names the command line declares for an option: its own, then its aliases ("--ceiling,--ceilings,!--no-ceiling,
// !--no-ceilings" in the form option_detail::addField reads).
std::string commandLineNames(const OptionInfo& info);
// Its aliases one by one, without the "!" ("--ceilings", "--no-ceilings").
std::vector<std::string> aliasNames(const OptionInfo& info);
// Marks what the command line's help shows of the options added since `from` (the table's order): the group and the
// aliases (help_format.h).
void describeInHelp(CLI::App& app, std::size_t from, const OptionInfo& info);

template <class Opts>
struct OptionDecl {
  OptionInfo info;
  // Adds the option under `names` (commandLineNames: its own and its aliases). Null: suite only.
  std::function<CLI::Option*(CLI::App&, Opts&, const std::string& names)> addToCommandLine;
  std::function<void(StepReader&, Opts&)> readFromSuite;  // null: command line only

  std::function<double(const Opts&)> numberOf;  // a number option's value; null otherwise
  // Its value in the record's config (OptionTable::record); null: not recorded, and info.notRecorded says why.
  std::function<nlohmann::json(const Opts&)> recordOf;
  // Its value as the record would hold it, recorded or not (the default's, for describe()); null for a suite-only key
  // without a record.
  std::function<nlohmann::json(const Opts&)> valueOf;
  // The JSON Schema of that value (OptionInfo::value), made when describe() asks: a range narrows it until then.
  std::function<nlohmann::json(const OptionInfo&)> schemaOf;
  // An integer option's (or a list of integers') bounds, which the checks on both sides read when they run: a range
  // declared after add() narrows them. Null for any other option.
  std::shared_ptr<option_detail::IntegerBounds> integer;

  // Settable on the command line only; `why` says what a suite step does instead.
  OptionDecl& commandLineOnly(std::string why) {
    info.scope = OptionScope::kCommandLineOnly;
    info.why = std::move(why);
    readFromSuite = nullptr;
    return *this;
  }

  // Left out of the record's config; `why` says why (an output path, a console setting).
  OptionDecl& notRecorded(std::string why) {
    info.notRecorded = std::move(why);
    recordOf = nullptr;
    return *this;
  }

  // Not part of the record's identity: runs that differ in it measured the same thing (`why` says how); compare pairs
  // them. Every recorded option is part of it otherwise (reports/common/identity.py reads this from the schema).
  OptionDecl& notInIdentity(std::string why) {
    info.notInIdentity = std::move(why);
    return *this;
  }

  // Also taken on the command line as `names` (an old name kept working, another tool's spelling); the help marks it.
  OptionDecl& alias(std::string names) {
    info.aliases.push_back(std::move(names));
    return *this;
  }

  // Named `names` on the command line from now on (one name per concept across subcommands); the names it was
  // declared with stay accepted as an alias, and its suite key stays.
  OptionDecl& renamed(std::string names) {
    info.aliases.push_back(std::exchange(info.names, std::move(names)));
    return *this;
  }

  // Taken but not listed in the help (a spelling that is answered with one line, never a setting).
  OptionDecl& hiddenFromHelp() {
    info.hidden = true;
    return *this;
  }

  // The values a number option takes, checked on both sides before anything runs: "--momentum: 1 is not
  // in [0, 1)" on the command line, the file, line and key in a suite; an integer option's in its own words
  // ("--batch: must be a positive integer, got 0").
  OptionDecl& range(NumberRange r) {
    if (!numberOf) throw std::logic_error(info.names + ": a range is for an option that takes a number");
    info.range = r;
    if (integer) {
      if (r.loOpen || r.hiOpen || r.lo != static_cast<double>(static_cast<long long>(r.lo)) || r.hi < 0 ||
          r.hi != static_cast<double>(static_cast<unsigned long long>(r.hi)))
        throw std::logic_error(info.names + ": an integer option's range has whole, closed ends");
      integer->lo = std::max(integer->lo, static_cast<long long>(r.lo));
      integer->hi = std::min(integer->hi, static_cast<unsigned long long>(r.hi));
      return *this;  // the integer checks read the bounds when they run
    }
    if (addToCommandLine)
      addToCommandLine = [add = std::move(addToCommandLine), r](CLI::App& app, Opts& o, const std::string& names) {
        return add(app, o, names)
            ->check(CLI::Validator(
                [r](std::string& text) {
                  double value = 0;
                  // Read as CLI11 reads it; text that is no number is finiteNumber's to report.
                  if (!CLI::detail::lexical_cast(text, value) || r.contains(value)) return std::string();
                  return fmt::format("{} is not in {}", text, r.describe());
                },
                ""));
      };
    if (readFromSuite)
      readFromSuite = [read = std::move(readFromSuite), r, key = info.key, value = numberOf](StepReader& reader, Opts& o) {
        read(reader, o);
        if (const double v = value(o); !r.contains(v)) reader.invalid(key, fmt::format("{} is not in {}", v, r.describe()));
      };
    return *this;
  }
};

namespace option_detail {

// Every real-valued option: a number ("--lr: must be a number, got 'abc'"), and NaN and the infinities are no
// settings ("--lr: nan is not a finite number").
CLI::Validator finiteNumber();

template <class T>
struct IsVector : std::false_type {};
template <class T>
struct IsVector<std::vector<T>> : std::true_type {};

template <class T>
struct IntegerElement {
  using type = T;
};
template <class T>
struct IntegerElement<std::vector<T>> {
  using type = T;
};
// An integer field, or a list of integers: the options the integer checks are for.
template <class T>
constexpr bool kIntegerField = std::is_integral_v<typename IntegerElement<T>::type> &&
                               !std::is_same_v<typename IntegerElement<T>::type, bool> && !NamedEnum<T>;

// An enum's canonical names joined by `sep`, in declaration order.
template <NamedEnum E>
std::string choiceList(const char* sep) {
  std::string out;
  for (const auto& [name, e] : EnumNames<E>::kNames)
    if (nameOf(e) == name) out += (out.empty() ? "" : sep) + std::string(name);
  return out;
}

// A set of an enum's values (std::vector<E> of a named enum): every canonical value named once, or "all".
template <class T>
struct EnumList : std::false_type {};
template <NamedEnum E>
struct EnumList<std::vector<E>> : std::true_type {};
template <class T>
constexpr bool kEnumList = EnumList<T>::value;

// The word that names every value of an enum list.
inline constexpr std::string_view kAllValues = "all";

// E's canonical values in declaration order.
template <NamedEnum E>
std::vector<E> allValues() {
  std::vector<E> out;
  for (const auto& [name, e] : EnumNames<E>::kNames)
    if (nameOf(e) == name) out.push_back(e);
  return out;
}

// The values `items` name ("all": every one), each once, in declaration order (a set: the order given means
// nothing); an item that names none is returned in `unknown` (the first such).
template <NamedEnum E>
std::vector<E> enumListOf(const std::vector<std::string>& items, std::string& unknown) {
  std::vector<bool> named(allValues<E>().size(), false);
  const std::vector<E> every = allValues<E>();
  for (const std::string& item : items) {
    if (item == kAllValues) {
      named.assign(named.size(), true);
      continue;
    }
    const std::optional<E> value = enumFromName<E>(item);
    if (!value) {
      unknown = item;
      return {};
    }
    named[static_cast<std::size_t>(std::find(every.begin(), every.end(), *value) - every.begin())] = true;
  }
  std::vector<E> out;
  for (std::size_t i = 0; i < every.size(); ++i)
    if (named[i]) out.push_back(every[i]);
  return out;
}

// The list as the command line writes it: "all" for every value, else the names joined by commas.
template <NamedEnum E>
std::string enumListText(const std::vector<E>& values) {
  if (values == allValues<E>()) return std::string(kAllValues);
  std::string out;
  for (E e : values) out += (out.empty() ? "" : ",") + std::string(nameOf(e));
  return out;
}

// A field's value as the record's config holds it: an enum by its name, a list of them as the array of their names,
// anything else as JSON has it.
template <class T>
nlohmann::json recordValue(const T& field) {
  if constexpr (NamedEnum<T>) {
    return std::string(nameOf(field));
  } else if constexpr (kEnumList<T>) {
    nlohmann::json names = nlohmann::json::array();
    for (auto e : field) names.push_back(std::string(nameOf(e)));
    return names;
  } else {
    return field;
  }
}

// The JSON Schema of an integer in `b` ({"type": "integer", "minimum": .., "maximum": ..}) and of a number in `r` (its
// ends closed or open; no range: any finite number).
nlohmann::json integerSchema(const IntegerBounds& b);
nlohmann::json numberSchema(const std::optional<NumberRange>& r);

// The JSON Schema of a field's value in the record's config (recordValue): what add() reads from the field's type.
template <class T>
nlohmann::json valueSchema(const OptionInfo& info, TextForm form, const IntegerBounds* bounds) {
  if constexpr (std::is_same_v<T, bool>) {
    return {{"type", "boolean"}};
  } else if constexpr (NamedEnum<T>) {
    return {{"type", "string"}, {"enum", recordValue(allValues<T>())}};  // the record writes the canonical names
  } else if constexpr (kEnumList<T>) {
    using E = typename T::value_type;
    return {{"type", "array"}, {"items", {{"type", "string"}, {"enum", recordValue(allValues<E>())}}}, {"uniqueItems", true}};
  } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
    return {{"type", "array"}, {"items", {{"type", "string"}}}};
  } else if constexpr (IsVector<T>::value) {
    return {{"type", "array"}, {"items", integerSchema(*bounds)}};
  } else if constexpr (std::is_same_v<T, std::string>) {
    nlohmann::json s = {{"type", "string"}};
    if (form == TextForm::kList) s["x-form"] = "list";  // comma-separated
    if (form == TextForm::kSize) s["x-form"] = "size";  // bytes with an optional suffix: 64M
    return s;
  } else if constexpr (std::is_floating_point_v<T>) {
    return numberSchema(info.range);
  } else {
    return integerSchema(*bounds);
  }
}

// "'maybe' is not on or off": the check of an on/off option (addOnOff).
CLI::Validator onOff();

// A list of a named enum (`links --tests memory,mpi` or `all`). CLI11 cannot turn one item ("all") into several
// values: the names are taken as text, each checked, then resolved.
template <class E>
CLI::Option* addEnumListField(CLI::App& app, const std::string& names, const std::string& help, std::vector<E>& field) {
  return app
      .add_option_function<std::vector<std::string>>(
          names,
          [&field](const std::vector<std::string>& items) {
            std::string unknown;
            field = enumListOf<E>(items, unknown);  // each item was checked: none is unknown
          },
          help)
      ->delimiter(',')
      ->check(CLI::Validator(
          [](std::string& text) {
            std::string unknown;
            enumListOf<E>({text}, unknown);
            return unknown.empty() ? std::string()
                                   : fmt::format("'{}' is not one of {}, or {}", text, choiceList<E>(", "), kAllValues);
          },
          ""))
      ->type_name("{" + choiceList<E>(",") + "," + std::string(kAllValues) + "}")
      ->default_str(enumListText(field));
}

template <class T>
CLI::Option* addField(CLI::App& app, const std::string& names, const std::string& help, T& field) {
  if constexpr (std::is_same_v<T, bool>) {
    // "--x,!--no-x": two flags, each with its own line of help and the default said in words (CLI11's own
    // rendering, "--x,--no-x{false}", read as "off by default" whatever the default was).
    const std::string note = fmt::format(" (default: {})", field ? "on" : "off");
    const auto bang = names.find(",!");
    if (bang == std::string::npos) return app.add_flag(names, field, help + note);
    const std::string yes = names.substr(0, bang), no = names.substr(bang + 2);
    CLI::Option* option = app.add_flag(yes, field, help + note);
    app.add_flag_callback(
        no, [&field] { field = false; }, fmt::format("The opposite of {}", yes.substr(0, yes.find(','))));
    return option;
  } else if constexpr (NamedEnum<T>) {
    // The choices as the help lists them, {mlp,cnn,transformer}, and an error in our words (CLI11's CheckedTransformer
    // prints its map: "ENUM:value in {cnn->1,mlp->0,...} OR {1,0,...}", "Check rnn value in {...} FAILED").
    return app.add_option(names, field, help)
        ->transform(CLI::Validator(
            [](std::string& text) {
              const std::optional<T> value = enumFromName<T>(text);
              if (!value) return fmt::format("'{}' is not one of {}", text, choiceList<T>(", "));
              text = std::to_string(static_cast<std::underlying_type_t<T>>(*value));  // as CLI11 reads an enum
              return std::string();
            },
            ""))
        ->type_name("{" + choiceList<T>(",") + "}")
        ->default_str(std::string(nameOf(field)));
  } else if constexpr (kEnumList<T>) {
    return addEnumListField<typename T::value_type>(app, names, help, field);
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
    CLI::Option* option = app.add_option(names, field, help)->capture_default_str();
    if constexpr (std::is_floating_point_v<T>) option->check(finiteNumber());
    return option;
  }
}

// An integer read from a suite, held to `b` (within T's range: a negative seed, a rank count past int).
template <class T>
T narrowed(StepReader& r, const std::string& key, long long value, const IntegerBounds& b) {
  if (const std::string why = integerProblem(value, b); !why.empty()) r.invalid(key, why);
  return static_cast<T>(value);
}

// One field from a suite; `bounds` holds an integer field's (null for any other).
template <class T>
void readField(StepReader& r, const std::string& key, T& field, TextForm form, const IntegerBounds* bounds) {
  if constexpr (std::is_same_v<T, bool>) {
    field = r.boolean(key, field);
  } else if constexpr (NamedEnum<T>) {
    const std::string name = r.string(key, std::string(nameOf(field)));
    const auto value = enumFromName<T>(name);
    if (!value) r.invalid(key, fmt::format("unknown '{}' (expected {})", name, enumNameList<T>()));
    field = *value;
  } else if constexpr (kEnumList<T>) {
    using E = typename T::value_type;
    std::string unknown;
    T values = enumListOf<E>(splitNonEmpty(r.list(key, enumListText(field)), ','), unknown);
    if (!unknown.empty())
      r.invalid(key, fmt::format("unknown '{}' (expected {}, or a list of {})", unknown, kAllValues, enumNameList<E>()));
    field = std::move(values);
  } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
    field = r.strings(key, field, ';');
  } else if constexpr (IsVector<T>::value) {
    using Elt = typename T::value_type;
    static_assert(std::is_integral_v<Elt>, "a vector option holds strings or integers");
    const std::vector<long long> values = r.integers(key, std::vector<long long>(field.begin(), field.end()));
    field.clear();
    for (long long v : values) field.push_back(narrowed<Elt>(r, key, v, *bounds));
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
    field = narrowed<T>(r, key, r.integer(key, static_cast<long long>(field)), *bounds);
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
    using T = std::remove_cvref_t<decltype(get(std::declval<Opts&>()))>;
    OptionDecl<Opts> d;
    d.info = infoOf(names, help);
    if constexpr (option_detail::kIntegerField<T>)
      d.integer = std::make_shared<option_detail::IntegerBounds>(
          option_detail::typeBounds<typename option_detail::IntegerElement<T>::type>());
    d.addToCommandLine = [help, get, bounds = d.integer](CLI::App& app, Opts& o, const std::string& names) {
      CLI::Option* option = option_detail::addField(app, names, help, get(o));
      if (bounds) option->transform(option_detail::integerIn(bounds));
      return option;
    };
    d.readFromSuite = [key = d.info.key, get, form, bounds = d.integer](StepReader& r, Opts& o) {
      option_detail::readField(r, key, get(o), form, bounds.get());
    };
    d.valueOf = d.recordOf = [get](const Opts& o) { return option_detail::recordValue(get(o)); };
    d.schemaOf = [form, bounds = d.integer](const OptionInfo& info) {
      return option_detail::valueSchema<T>(info, form, bounds.get());
    };
    if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) {
      d.info.number = true;
      d.info.real = std::is_floating_point_v<T>;
      d.numberOf = [get](const Opts& o) { return static_cast<double>(get(o)); };
    }
    return push(std::move(d));
  }

  // A bool written "on" or "off" on the command line (`--overlap off`); true or false in a suite.
  template <class Get>
  OptionDecl<Opts>& addOnOff(std::string names, std::string help, Get get) {
    OptionDecl<Opts> d;
    d.info = infoOf(names, help);
    d.addToCommandLine = [help, get](CLI::App& app, Opts& o, const std::string& names) {
      bool& field = get(o);
      return app.add_option(names, field, help)
          ->transform(option_detail::onOff())
          ->type_name("{on,off}")
          ->default_str(field ? "on" : "off");
    };
    d.readFromSuite = [key = d.info.key, get](StepReader& r, Opts& o) { get(o) = r.boolean(key, get(o)); };
    d.valueOf = d.recordOf = [get](const Opts& o) { return nlohmann::json(get(o)); };
    d.schemaOf = [](const OptionInfo&) { return nlohmann::json{{"type", "boolean"}, {"x-form", "on-off"}}; };
    return push(std::move(d));
  }

  // A suite key with no command-line option of its own (`why` says what the command line has instead); `recordOf` gives
  // its value in the record's config, whose JSON Schema is `recordSchema` (null: say why with notRecorded).
  OptionDecl<Opts>& addSuiteOnly(std::string key, std::string help, std::function<void(StepReader&, Opts&)> read, std::string why,
                                 std::function<nlohmann::json(const Opts&)> recordOf = nullptr,
                                 nlohmann::json recordSchema = nlohmann::json::object()) {
    OptionDecl<Opts> d;
    d.info = infoOf(key, std::move(help));
    d.info.key = key;
    d.info.scope = OptionScope::kSuiteOnly;
    d.info.why = std::move(why);
    d.readFromSuite = std::move(read);
    d.valueOf = d.recordOf = std::move(recordOf);
    d.schemaOf = [recordSchema = std::move(recordSchema)](const OptionInfo&) { return recordSchema; };
    return push(std::move(d));
  }

  // The options declared after this call are shown in the help under `heading` (CLI11's option groups).
  void group(std::string heading) { group_ = std::move(heading); }

  void addToCommandLine(CLI::App& app, Opts& o) const {
    for (const auto& d : decls_) {
      if (!d.addToCommandLine) continue;
      const std::size_t before = app.get_options().size();
      d.addToCommandLine(app, o, commandLineNames(d.info));
      describeInHelp(app, before, d.info);
    }
  }
  void readFromSuite(StepReader& r, Opts& o) const {
    for (const auto& d : decls_)
      if (d.readFromSuite) d.readFromSuite(r, o);
  }
  // The record's config: every recorded option's value as given, under its suite key (the values a suite step or the
  // command line filled in, defaults included).
  nlohmann::json record(const Opts& o) const {
    nlohmann::json j = nlohmann::json::object();
    for (const auto& d : decls_)
      if (d.recordOf) j[d.info.key] = d.recordOf(o);
    return j;
  }
  std::vector<OptionInfo> describe() const {
    std::vector<OptionInfo> out;
    const Opts defaults{};
    for (const auto& d : decls_) {
      out.push_back(d.info);
      if (d.schemaOf) out.back().value = d.schemaOf(d.info);
      if (d.valueOf) out.back().defaultValue = d.valueOf(defaults);
    }
    return out;
  }

 private:
  OptionInfo infoOf(const std::string& names, std::string help) const {
    OptionInfo info;
    info.group = group_;
    info.names = names;
    info.key = optionKey(names);
    info.help = std::move(help);
    return info;
  }
  OptionDecl<Opts>& push(OptionDecl<Opts> d) {
    decls_.push_back(std::move(d));
    return decls_.back();
  }
  std::deque<OptionDecl<Opts>> decls_;  // a deque: add() hands out references that later adds keep valid
  std::string group_;
};

}  // namespace ts
