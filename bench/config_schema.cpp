// The config part of the result schema, from the option tables (config_schema.h).
#include "bench/config_schema.h"

#include <cctype>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/json_text.h"
#include "bench/commands.h"
#include "bench/config_version.h"
#include "bench/suite/suite.h"

namespace ts {

nlohmann::json option_detail::integerSchema(const IntegerBounds& b) {
  return {{"type", "integer"}, {"minimum", b.lo}, {"maximum", b.hi}};
}

nlohmann::json option_detail::numberSchema(const std::optional<NumberRange>& r) {
  nlohmann::json s = {{"type", "number"}};
  if (!r) return s;
  s[r->loOpen ? "exclusiveMinimum" : "minimum"] = r->lo;
  s[r->hiOpen ? "exclusiveMaximum" : "maximum"] = r->hi;
  return s;
}

namespace {

using Ordered = nlohmann::ordered_json;

const std::string kPrefix = "config_";

std::string defRef(const std::string& def) { return "#/$defs/" + def; }

// Its names on the command line, its own and its aliases: those that set it ("--check"), or with `clearing` those that
// turn a flag off ("--no-check"); none for a suite key.
Ordered flagsOf(const OptionInfo& info, bool clearing = false) {
  Ordered flags = Ordered::array();
  if (info.scope == OptionScope::kSuiteOnly) return flags;
  const std::string names = commandLineNames(info);
  for (std::size_t start = 0; start <= names.size();) {
    const std::size_t end = std::min(names.find(',', start), names.size());
    const std::string name = names.substr(start, end - start);
    const bool clears = !name.empty() && name[0] == '!';
    if (!name.empty() && clears == clearing) flags.push_back(clears ? name.substr(1) : name);
    start = end + 1;
  }
  return flags;
}

// One option's entry: its help, its value's schema and default, its flags, and where it can be set.
Ordered optionSchema(const OptionInfo& info) {
  Ordered s = {{"description", info.help}};
  for (const auto& [k, v] : info.value.items()) s[k] = v;
  if (!info.defaultValue.is_null()) s["default"] = info.defaultValue;
  s["x-flags"] = flagsOf(info);
  if (const Ordered off = flagsOf(info, true); !off.empty()) s["x-clear-flags"] = off;
  if (info.notInIdentity.empty())
    s["x-identity"] = true;
  else
    s["x-not-identity"] = info.notInIdentity;
  if (info.scope == OptionScope::kCommandLineOnly) s["x-command-line-only"] = info.why;
  if (info.scope == OptionScope::kSuiteOnly) s["x-suite-only"] = info.why;
  return s;
}

// A subcommand's config: its recorded options and `resolved`, open (the places that use it close it with
// unevaluatedProperties, so that a suite step may add its kind and name).
Ordered subcommandSchema(const Subcommand& c) {
  Ordered properties = Ordered::object(), notRecorded = Ordered::array();
  for (const OptionInfo& info : c.options) {
    if (info.notRecorded.empty())
      properties[info.key] = optionSchema(info);
    else
      notRecorded.push_back({{"key", info.key}, {"x-flags", flagsOf(info)}, {"why", info.notRecorded}});
  }
  properties["resolved"] = {{"type", "object"},
                            {"description",
                             "What the run resolved the options to (the runner's own account, not described "
                             "here)"}};
  return {{"description", "`trainscope " + c.name +
                              "`: every option as given, under its suite key, defaults included (the "
                              "option table's record); what they resolved to under `resolved`. Closed "
                              "where it is used."},
          {"type", "object"},
          {"properties", properties},
          {"x-not-recorded", notRecorded}};
}

// A config of `def`, and nothing else (`extra`: the properties a suite step adds).
Ordered closed(const std::string& def, Ordered extra = Ordered::object()) {
  Ordered s = {{"$ref", defRef(def)}};
  if (!extra.empty()) s["properties"] = std::move(extra);
  s["unevaluatedProperties"] = false;
  return s;
}

Ordered ifThen(const std::string& property, const std::string& value, Ordered then) {
  return {{"if", {{"properties", {{property, {{"const", value}}}}}, {"required", Ordered::array({property})}}},
          {"then", std::move(then)}};
}

Ordered legacySchema() {
  return {{"description",
           "The config of a record that states no config_version (written before records stated it; before issue #37 its names "
           "were picked by hand) or an older one: valid, not described; the readers read none of it."},
          {"type", "object"}};
}

// A record (run, train) whose config is of this version: the tables describe it. Otherwise its config is legacy.
Ordered byConfigVersion(Ordered current) {
  return {{"if",
           {{"properties", {{"config_version", {{"const", kConfigVersion}}}}}, {"required", Ordered::array({"config_version"})}}},
          {"then", std::move(current)},
          {"else", {{"properties", {{"config", {{"$ref", defRef(kPrefix + "legacy")}}}}}}}};
}

// The index just past the JSON value that starts at `i` (strings and their escapes skipped).
std::size_t skipValue(const std::string& t, std::size_t i) {
  const auto unterminated = [] { return std::runtime_error("the schema's text ends inside a value"); };
  if (t[i] == '"') {
    for (++i; i < t.size(); ++i)
      if (t[i] == '\\')
        ++i;
      else if (t[i] == '"')
        return i + 1;
    throw unterminated();
  }
  if (t[i] == '{' || t[i] == '[') {
    int depth = 0;
    for (; i < t.size(); ++i) {
      if (t[i] == '"') {
        i = skipValue(t, i) - 1;
      } else if (t[i] == '{' || t[i] == '[') {
        ++depth;
      } else if ((t[i] == '}' || t[i] == ']') && --depth == 0) {
        return i + 1;
      }
    }
    throw unterminated();
  }
  while (i < t.size() && t[i] != ',' && t[i] != '}' && t[i] != ']' && !std::isspace(static_cast<unsigned char>(t[i]))) ++i;
  return i;
}

std::size_t skipSpace(const std::string& t, std::size_t i) {
  while (i < t.size() && std::isspace(static_cast<unsigned char>(t[i]))) ++i;
  return i;
}

// One member of an object in the text: its name and where it starts (the key's quote) and ends (past its value).
struct Member {
  std::string name;
  std::size_t begin, end;
};

// The members of the object whose '{' is at `open`.
std::vector<Member> membersOf(const std::string& t, std::size_t open) {
  std::vector<Member> out;
  for (std::size_t i = skipSpace(t, open + 1); i < t.size() && t[i] != '}';) {
    if (t[i] != '"') throw std::runtime_error("the schema's $defs is not an object of named definitions");
    const std::size_t keyEnd = skipValue(t, i);
    const std::string name = nlohmann::json::parse(t.substr(i, keyEnd - i)).get<std::string>();
    const std::size_t value = skipSpace(t, skipSpace(t, keyEnd) + 1);  // past the ':'
    out.push_back({name, i, skipValue(t, value)});
    i = skipSpace(t, out.back().end);
    if (i < t.size() && t[i] == ',') i = skipSpace(t, i + 1);
  }
  return out;
}

// The generated definitions as members of $defs, indented as the file's are (4 spaces).
std::string generatedText() {
  std::string out;
  const Ordered defs = configSchemaDefs();  // held: items() does not keep a temporary alive
  for (const auto& [name, def] : defs.items()) {
    std::string text = jsonTextInOrder(def, 2);
    for (std::size_t at = text.find('\n'); at != std::string::npos; at = text.find('\n', at + 1)) text.insert(at + 1, "    ");
    out += (out.empty() ? "" : ",\n    ") + jsonText(nlohmann::json(name)) + ": " + text;
  }
  return out;
}

}  // namespace

std::string withConfigSchemaText(const std::string& text) {
  const std::size_t key = text.find("\"$defs\"");
  const std::size_t open = key == std::string::npos ? key : text.find('{', key);
  if (open == std::string::npos) throw std::runtime_error("the schema has no $defs");
  const std::vector<Member> members = membersOf(text, open);
  std::size_t first = members.size(), last = 0;
  for (std::size_t i = 0; i < members.size(); ++i)
    if (generatedConfigDef(members[i].name)) {
      if (first < members.size() && last + 1 != i)
        throw std::runtime_error("the generated config_* definitions of $defs must stand together");
      first = std::min(first, i);
      last = i;
    }
  if (first == members.size()) {  // the first time: after the last definition
    if (members.empty()) throw std::runtime_error("the schema's $defs is empty");
    const std::size_t at = members.back().end;
    return text.substr(0, at) + ",\n    " + generatedText() + text.substr(at);
  }
  return text.substr(0, members[first].begin) + generatedText() + text.substr(members[last].end);
}

bool generatedConfigDef(const std::string& name) { return name.rfind(kPrefix, 0) == 0; }

nlohmann::ordered_json configSchemaDefs() {
  const std::string generated =
      std::string(" Generated from the option tables (bench/config_schema.h): ") + kRegenerateConfigSchema + " rewrites it.";
  Ordered runs = Ordered::array(), steps = Ordered::array(), kinds = Ordered::array(), all = Ordered::array(),
          python = Ordered::array();
  Ordered defs = Ordered::object();
  defs[kPrefix + "run"] = {};  // first; filled below
  for (const Subcommand& c : subcommands()) {
    all.push_back(c.name);
    if (c.pythonTool) python.push_back(c.name);
    if (c.options.empty()) continue;
    const std::string def = kPrefix + c.name;
    defs[def] = subcommandSchema(c);
    runs.push_back(ifThen("subcommand", c.name, {{"properties", {{"config", closed(def)}}}}));
    if (!c.readStep) continue;
    kinds.push_back(c.name);
    steps.push_back(ifThen("kind", c.name, closed(def, {{"kind", {{"const", c.name}}}, {"name", {{"type", "string"}}}})));
  }
  runs.push_back(ifThen("subcommand", "suite", {{"properties", {{"config", {{"$ref", defRef(kPrefix + "suite")}}}}}}));
  Ordered run = {{"description",
                  "A run's config, by its subcommand: applied to the run (its `subcommand` says which) when it states this "
                  "config_version. x-subcommands: every subcommand, in the registry's order (bench/commands.cpp); "
                  "x-python-tools: those the Python tool in reports/ runs." +
                      generated}};
  run.update(byConfigVersion({{"allOf", runs}}));
  run["x-subcommands"] = all;
  run["x-python-tools"] = python;
  defs[kPrefix + "run"] = run;
  defs[kPrefix + "version"] = {{"description",
                                "The form of the record's config (bench/config_version.h): x-current is the one the tables "
                                "describe; a record of another, or of none, has a legacy config." +
                                    generated},
                               {"type", "integer"},
                               {"minimum", 1},
                               {"x-current", kConfigVersion}};
  Ordered train = {{"description",
                    "A train record's config, applied to the record when it states this config_version: train's options as "
                    "given and, under `resolved`, what the run resolved them to: the model's whole configuration, micro_batch, "
                    "data_info, optimizer, schedule (after --lr-scaling), memory_limit_bytes, activation_layout, layout (the "
                    "same as the checkpoint's index.json keeps)." +
                        generated}};
  train.update(byConfigVersion({{"properties", {{"config", closed(kPrefix + "train")}}}}));
  defs[kPrefix + "train_record"] = train;
  defs[kPrefix + "suite"] = suiteConfigSchema({{"$ref", defRef(kPrefix + "suite_step")}});
  defs[kPrefix + "suite"]["description"] = defs[kPrefix + "suite"]["description"].get<std::string>() + generated;
  defs[kPrefix + "suite_step"] = {
      {"description", "A suite step's config: its kind's config, with the step's kind and name." + generated},
      {"type", "object"},
      {"required", Ordered::array({"kind", "name"})},
      {"properties", {{"kind", {{"enum", kinds}}}}},
      {"allOf", steps}};
  defs[kPrefix + "legacy"] = legacySchema();
  return defs;
}

}  // namespace ts
