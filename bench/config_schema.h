#pragma once
// The result schema's description of the recorded `config` (reports/schema/result-v1.schema.json, its $defs named
// config_*), made from the option tables: every subcommand's options under their suite keys, each with its value's type,
// choices, range and default, its flags, and those the table leaves out with why. The schema file holds a copy, so
// that Python and any reader of a result see it without this binary; tests/unit/test_config_schema.cpp fails when
// the copy is not what the tables declare, naming the command that rewrites it (kRegenerateConfigSchema).
#include <string>

#include <nlohmann/json.hpp>

namespace ts {

// What rewrites the schema file's config part from the tables (bench/config_schema_main.cpp, bench/CMakeLists.txt).
inline constexpr const char* kRegenerateConfigSchema = "cmake --build build --target config-schema";
// The schema file, from the source tree's root.
inline constexpr const char* kResultSchemaPath = "reports/schema/result-v1.schema.json";

// The $defs this generates, in their order: config_run (which of them a run's config is, by its subcommand, when the run
// states this config_version), config_<subcommand> for each subcommand with an option table, config_version (the form's
// number, bench/config_version.h), config_train_record, config_suite and config_suite_step, config_legacy (a record's
// config of another version or of none).
nlohmann::ordered_json configSchemaDefs();
// Whether a $defs name is one this generates (config_ and its suffixes).
bool generatedConfigDef(const std::string& name);
// The schema file's text with its generated $defs replaced by configSchemaDefs(), the rest byte for byte as it was (the
// hand-written parts keep their own layout); the generated defs stay where they are, or go last in $defs the first time.
// Error when the text is not a schema with $defs.
std::string withConfigSchemaText(const std::string& text);

}  // namespace ts
