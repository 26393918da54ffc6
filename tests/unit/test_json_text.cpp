// Every string that reaches JSON text is valid UTF-8 (base/json_text.h): a bad byte becomes U+FFFD
// instead of ending the run with nlohmann's type_error.316, and no source file writes JSON around it.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/json_text.h"

namespace ts {
namespace fs = std::filesystem;

TEST(JsonText, ReplacesBytesThatAreNotUtf8) {
  const nlohmann::json j = {{"label", std::string("caf\xe9 \xff") + "ok"}, {"nested", {std::string("a\xc3")}}};
  EXPECT_THROW((void)j.dump(), nlohmann::json::type_error);  // what a run died of
  const std::string text = jsonText(j);
  const nlohmann::json back = nlohmann::json::parse(text);
  EXPECT_EQ(back["label"], "caf\xef\xbf\xbd \xef\xbf\xbdok");
  EXPECT_EQ(back["nested"][0], "a\xef\xbf\xbd");
  EXPECT_EQ(jsonText(nlohmann::json{{"x", "\xc3\xa9"}}, 1),
            "{\n \"x\": \"\xc3\xa9\"\n}");  // valid UTF-8 passes as it is; indent kept
  nlohmann::ordered_json ordered;           // a safetensors header: its keys stay in the order written
  ordered["b"] = "\xff";
  ordered["a"] = 1;
  EXPECT_EQ(jsonTextInOrder(ordered), "{\"b\":\"\xef\xbf\xbd\",\"a\":1}");
}

// Python's json.dumps separators (HTA's regexes search trace files for "rank": N), on one line, strings left as written.
TEST(JsonText, SpacedTextHasPythonsSeparatorsOnOneLine) {
  const nlohmann::json j = {
      {"distributedInfo", {{"rank", 3}, {"pg_config", nlohmann::json::array({{{"ranks", "[0, 1]"}}})}}},
      {"traceEvents", {{{"name", "a,\nb: {c}"}, {"ts", 1.5}}, nlohmann::json::object(), nlohmann::json::array()}}};
  const std::string text = jsonTextSpaced(j);
  EXPECT_EQ(text,
            "{\"distributedInfo\": {\"pg_config\": [{\"ranks\": \"[0, 1]\"}], \"rank\": 3}, "
            "\"traceEvents\": [{\"name\": \"a,\\nb: {c}\", \"ts\": 1.5}, {}, []]}");
  EXPECT_EQ(nlohmann::json::parse(text), j);
  EXPECT_EQ(jsonTextSpaced(nlohmann::json{{"x", std::string("\xff")}}), "{\"x\": \"\xef\xbf\xbd\"}");  // still valid UTF-8
}

// A dump() outside the helper is a run that dies on the first Latin-1 byte: none is left in the program.
TEST(JsonText, EveryDocumentIsWrittenThroughTheHelper) {
  std::vector<std::string> offenders;
  for (const char* dir : {"base", "comm", "kernels", "workloads", "bench"})
    for (const auto& e : fs::recursive_directory_iterator(fs::path(TRAINSCOPE_SOURCE_DIR) / dir)) {
      const std::string ext = e.path().extension().string();
      if (ext != ".cpp" && ext != ".h" && ext != ".cu" && ext != ".cuh") continue;
      if (e.path().filename() == "json_text.cpp") continue;
      std::ifstream in(e.path());
      std::stringstream text;
      text << in.rdbuf();
      if (text.str().find(".dump(") != std::string::npos) offenders.push_back(e.path().string());
    }
  EXPECT_TRUE(offenders.empty()) << "use ts::jsonText (base/json_text.h) instead of dump() in: "
                                 << ::testing::PrintToString(offenders);
}

}  // namespace ts
