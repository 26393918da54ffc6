// ts_config_schema FILE: rewrites the config part of the result schema FILE from the option tables (config_schema.h);
// `cmake --build build --target config-schema` runs it on reports/schema/result-v1.schema.json.
#include <cstdio>
#include <exception>
#include <string>

#include <nlohmann/json.hpp>

#include "base/atomic_file.h"
#include "base/input_file.h"
#include "bench/config_schema.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: ts_config_schema %s\n", ts::kResultSchemaPath);
    return 2;
  }
  try {
    const std::string path = argv[1];
    const std::string text = ts::readInputFile("the result schema", path, 16 << 20);
    const std::string rewritten = ts::withConfigSchemaText(text);
    (void)nlohmann::json::parse(rewritten);  // a splice that broke the document is never written
    if (rewritten == text) {
      std::printf("%s: the config part is what the option tables declare\n", path.c_str());
      return 0;
    }
    ts::writeFileAtomically(path, rewritten);
    std::printf("%s: the config part rewritten from the option tables\n", path.c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ts_config_schema: error: %s\n", e.what());
    return 1;
  }
}
