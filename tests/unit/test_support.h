#pragma once
// Helpers of the unit tests that read and write files: a fresh scratch directory, whole-file bytes, and the
// one-line UsageError a call must throw.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "base/error.h"

namespace ts::test {

// An empty directory <tmp>/ts_<area>_<pid>_<name>, made afresh.
inline std::filesystem::path scratchDir(const std::string& area, const std::string& name) {
  const auto d = std::filesystem::temp_directory_path() / ("ts_" + area + "_" + std::to_string(::getpid()) + "_" + name);
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

inline std::vector<std::uint8_t> readBytes(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

inline void writeBytes(const std::filesystem::path& p, const std::vector<std::uint8_t>& bytes) {
  std::ofstream out(p, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

// The message of the UsageError `f` throws, checked to be one line; fails the test if it throws nothing
// or something else.
template <typename F>
std::string usageError(F&& f) {
  try {
    f();
  } catch (const UsageError& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.find('\n'), std::string::npos) << "one line: " << what;
    return what;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not a UsageError: " << e.what();
    return "";
  }
  ADD_FAILURE() << "no error";
  return "";
}

}  // namespace ts::test
