// The result schema's description of the recorded config (its $defs config_*) is what the option tables declare
// (bench/config_schema.h): a table changed without the schema fails here, naming the command that rewrites it; what
// the schema says of each option (its type, its default) is what the record holds.
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <toml++/toml.h>

#include "bench/commands.h"
#include "bench/config_schema.h"
#include "bench/suite/suite.h"

namespace ts {
namespace {

std::string schemaText() {
  std::ifstream in(std::string(TRAINSCOPE_SOURCE_DIR "/") + kResultSchemaPath);
  if (!in) throw std::runtime_error("cannot read the result schema");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Whether `value` is of the JSON Schema type `type`.
bool ofType(const nlohmann::json& value, const std::string& type) {
  if (type == "integer") return value.is_number_integer();
  if (type == "number") return value.is_number();
  if (type == "string") return value.is_string();
  if (type == "boolean") return value.is_boolean();
  if (type == "array") return value.is_array();
  return false;
}

TEST(ConfigSchema, TheSchemaFileHoldsWhatTheTablesDeclare) {
  const std::string text = schemaText();
  const auto schema = nlohmann::ordered_json::parse(text);
  const nlohmann::ordered_json generated = configSchemaDefs();
  const std::string regenerate = std::string("; rewrite it with `") + kRegenerateConfigSchema + "`";
  for (const auto& [name, def] : generated.items()) {
    ASSERT_TRUE(schema.at("$defs").contains(name)) << kResultSchemaPath << " has no $defs." << name << regenerate;
    EXPECT_TRUE(schema["$defs"][name] == def)
        << kResultSchemaPath << "'s $defs." << name << " is not what the option tables declare" << regenerate;
  }
  for (const auto& [name, def] : schema.at("$defs").items())
    EXPECT_TRUE(!generatedConfigDef(name) || generated.contains(name))
        << kResultSchemaPath << "'s $defs." << name << " is no table's" << regenerate;
  EXPECT_TRUE(withConfigSchemaText(text) == text) << kResultSchemaPath << "'s config part is not as written" << regenerate;
}

// The splice rewrites the generated definitions and leaves every other byte as it was (the hand-written parts keep their
// own layout), the first time too.
TEST(ConfigSchema, TheRewriteLeavesTheRestAsItWas) {
  const std::string head =
      "{\"title\": \"x\",\n  \"$defs\": {\n    \"run\": {\"type\":   \"object\"},\n    \"b\": [1, {\"s\": \"}\\\"{\"}]";
  const std::string first = withConfigSchemaText(head + "\n  }\n}\n");
  ASSERT_EQ(first.substr(0, head.size()), head);
  EXPECT_EQ(first.substr(first.size() - 7), "\n  }\n}\n");
  const auto parsed = nlohmann::ordered_json::parse(first);
  EXPECT_EQ(parsed.at("$defs").at("config_run"), configSchemaDefs().at("config_run"));
  EXPECT_EQ(withConfigSchemaText(first), first);
  // A stale generated part in the middle is replaced where it stands.
  const std::string stale = "{\"$defs\": {\"a\": 1, \"config_run\": {\"old\": true}, \"config_gone\": 2, \"z\": 3}}";
  const std::string rewritten = withConfigSchemaText(stale);
  EXPECT_EQ(rewritten.substr(0, 21), "{\"$defs\": {\"a\": 1, \"c");
  EXPECT_EQ(rewritten.substr(rewritten.size() - 10), ", \"z\": 3}}");
  EXPECT_FALSE(nlohmann::json::parse(rewritten)["$defs"].contains("config_gone"));
  EXPECT_THROW(withConfigSchemaText("{\"$defs\": {\"config_a\": 1, \"b\": 2, \"config_c\": 3}}"), std::runtime_error);
}

// Every option says the type of its value, and its default is of that type and is what a run that sets nothing records.
TEST(ConfigSchema, EachOptionsTypeAndDefaultAreWhatTheRecordHolds) {
  int checked = 0;
  for (const Subcommand& command : subcommands()) {
    if (command.options.empty()) continue;
    SCOPED_TRACE(command.name);
    const toml::table empty;
    StepReader reader("defaults.toml", empty);
    const nlohmann::json config = command.readStep(reader).config;
    for (const OptionInfo& option : command.options) {
      SCOPED_TRACE(option.names);
      ASSERT_TRUE(option.value.contains("type")) << "no type for its value: " << option.value.dump();
      if (!option.notRecorded.empty()) continue;
      ++checked;
      const std::string type = option.value["type"].get<std::string>();
      EXPECT_TRUE(ofType(option.defaultValue, type)) << option.defaultValue.dump() << " is no " << type;
      EXPECT_EQ(config.value(option.key, nlohmann::json()), option.defaultValue);
      if (option.value.contains("enum")) {
        const auto& names = option.value["enum"];
        EXPECT_NE(std::find(names.begin(), names.end(), option.defaultValue), names.end()) << names.dump();
      }
    }
  }
  EXPECT_GT(checked, 100);
}

TEST(ConfigSchema, TheSuitesKeysAreTheOnesItsConfigHolds) {
  const Suite suite = parseSuite("[suite]\nname = \"s\"\n[[step]]\nkind = \"env\"\n", "keys.toml");
  const nlohmann::ordered_json properties = suiteConfigSchema({}).at("properties");
  std::vector<std::string> declared, written;
  for (const auto& [key, value] : properties.items()) declared.push_back(key);
  const nlohmann::ordered_json config = suite.config();
  for (const auto& [key, value] : config.items()) written.push_back(key);
  std::sort(declared.begin(), declared.end());
  std::sort(written.begin(), written.end());
  EXPECT_EQ(declared, written);
}

}  // namespace
}  // namespace ts
