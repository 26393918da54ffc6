#pragma once
// The command line's one-line error for a value outside an enum option's names, in that option's own
// words: "--model: unknown model 'rnn' (mlp, cnn, transformer)", "--sync gossip: expected allreduce or ps".
// Without it the table's check (CLI11's CheckedTransformer) answers "Check rnn value in {cnn->1,...}
// FAILED". A suite step names its key instead (option_table.h).
//
//   onUnknownChoice(t.add("--model", "mlp, cnn or transformer", TS_FIELD(train.model)), unknownChoice<wl::ModelKind>("model"));
#include <algorithm>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <CLI/CLI.hpp>

#include "base/enum_names.h"
#include "bench/option_table.h"

namespace ts {

// What to say of `value`, given to `flag` ("--model"), which names none of E's choices.
template <NamedEnum E>
struct UnknownChoice {
  std::function<std::string(const std::string& flag, const std::string& value)> message;
};

// A whole error line. CLI11 catches only its ValidationError from a validator (and puts the flag before
// its text); this one passes through to main, which prints it as it prints every parse error.
class ChoiceError : public CLI::ParseError {
 public:
  explicit ChoiceError(std::string line) : CLI::ParseError("ChoiceError", std::move(line), CLI::ExitCodes::ValidationError) {}
};

// The declaration's command-line option rejects a value outside E's names with `unknown`'s line.
template <NamedEnum E, class Opts>
OptionDecl<Opts>& onUnknownChoice(OptionDecl<Opts>& d, UnknownChoice<E> unknown) {
  std::string flag = "--" + d.info.key;
  std::replace(flag.begin(), flag.end(), '_', '-');
  d.addToCommandLine = [add = std::move(d.addToCommandLine), flag, unknown = std::move(unknown)](CLI::App& app, Opts& o,
                                                                                                 const std::string& names) {
    CLI::Option* option = add(app, o, names);
    // transform() puts it before the table's own check, so it sees the text as given.
    option->transform(CLI::Validator(
        [flag, unknown](std::string& text) {
          if (!enumFromName<E>(text)) throw ChoiceError(unknown.message(flag, text));
          return std::string();
        },
        ""));
    return option;
  };
  return d;
}

// "--model: unknown model 'rnn' (mlp, cnn, transformer)": `what` and the canonical names.
template <NamedEnum E>
UnknownChoice<E> unknownChoice(std::string what) {
  std::vector<std::string_view> names;
  for (const auto& [name, e] : EnumNames<E>::kNames)
    if (nameOf(e) == name) names.push_back(name);
  return {[what, names](const std::string& flag, const std::string& value) {
    return fmt::format("{}: unknown {} '{}' ({})", flag, what, value, fmt::join(names, ", "));
  }};
}

// "--backend: 'tpu' is not auto, cpu or cuda".
template <NamedEnum E>
UnknownChoice<E> notOneOf() {
  return {[](const std::string& flag, const std::string& value) {
    return fmt::format("{}: '{}' is not {}", flag, value, enumNameList<E>());
  }};
}

// "--sync gossip: expected allreduce or ps".
template <NamedEnum E>
UnknownChoice<E> expectedChoice() {
  return {[](const std::string& flag, const std::string& value) {
    return fmt::format("{} {}: expected {}", flag, value, enumNameList<E>());
  }};
}

}  // namespace ts
