// The checks of user-given paths (base/user_paths.h) against what the file system really holds: each
// refusal names the path and why, and the names the checks let through are the ones a run can write.
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "base/atomic_file.h"
#include "base/error.h"
#include "base/user_paths.h"
#include "test_support.h"

namespace ts {
namespace {

namespace fs = std::filesystem;

class UserPaths : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ts-user-paths-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string at(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

TEST_F(UserPaths, OutputFileTakesANewNameOrARegularFile) {
  EXPECT_NO_THROW(checkOutputFile("--json", at("new.json")));
  EXPECT_NO_THROW(checkOutputFile("--json", at("a/b/c/new.json")));  // the directories are created later
  std::ofstream(at("old.json")) << "{}";
  EXPECT_NO_THROW(checkOutputFile("--json", at("old.json")));
}

TEST_F(UserPaths, OutputFileRefusesWhatIsNotARegularFile) {
  ASSERT_EQ(::mkfifo(at("fifo").c_str(), 0644), 0);
  EXPECT_EQ(test::usageError([&] { checkOutputFile("--json", at("fifo")); }),
            "--json " + at("fifo") + ": is a FIFO; only a regular file is replaced");
  fs::create_symlink(at("target"), at("link"));
  EXPECT_EQ(test::usageError([&] { checkOutputFile("--json", at("link")); }),
            "--json " + at("link") + ": is a symbolic link; only a regular file is replaced");
  EXPECT_EQ(test::usageError([&] { checkOutputFile("--json", dir_.string()); }),
            "--json " + dir_.string() + ": is a directory; only a regular file is replaced");
  EXPECT_EQ(test::usageError([&] { checkOutputFile("--json", "/dev/null"); }),
            "--json /dev/null: is a character device; only a regular file is replaced");
  EXPECT_EQ(test::usageError([&] { checkOutputFile("--json", at("x/")); }),
            "--json " + at("x/") + ": names a directory (a file name is expected)");
  std::ofstream(at("file")) << "x";
  EXPECT_EQ(test::usageError([&] { checkOutputFile("--json", at("file/under.json")); }),
            "--json " + at("file/under.json") + ": " + at("file") + " is a regular file, not a directory");
}

TEST_F(UserPaths, OutputDirectory) {
  EXPECT_NO_THROW(checkOutputDirectory("--trace", dir_.string()));
  EXPECT_NO_THROW(checkOutputDirectory("--trace", at("new/deeper")));
  std::ofstream(at("file")) << "x";
  EXPECT_EQ(test::usageError([&] { checkOutputDirectory("--trace", at("file")); }),
            "--trace " + at("file") + ": is a regular file, not a directory");
}

TEST_F(UserPaths, InputFileIsRegularAndBounded) {
  std::ofstream(at("in.toml")) << "0123456789";
  EXPECT_NO_THROW(checkInputFile("suite", at("in.toml"), 10));
  EXPECT_EQ(test::usageError([&] { checkInputFile("suite", at("in.toml"), 9); }),
            "suite " + at("in.toml") + ": 10 bytes, more than the 9 this input may be");
  EXPECT_EQ(test::usageError([&] { checkInputFile("--pairs", "/dev/zero", 1 << 20); }),
            "--pairs /dev/zero: is a character device, not a regular file");
  EXPECT_EQ(test::usageError([&] { checkInputFile("--pairs", at("absent"), 1); }),
            "--pairs " + at("absent") + ": cannot read it: No such file or directory");
}

TEST_F(UserPaths, AtomicFilesNeverReplaceANonRegularFile) {
  ASSERT_EQ(::mkfifo(at("fifo").c_str(), 0644), 0);
  EXPECT_THROW(writeFileAtomically(at("fifo"), "x"), Error);
  struct stat st {};
  ASSERT_EQ(::lstat(at("fifo").c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
}

TEST(SafeFileComponent, KeepsOnlyOneHarmlessComponent) {
  EXPECT_EQ(safeFileComponent("quick"), "quick");
  EXPECT_EQ(safeFileComponent("../../../../tmp/evil"), "_.._.._.._.._tmp_evil");
  EXPECT_EQ(safeFileComponent(".."), "_..");
  EXPECT_EQ(safeFileComponent(""), "_");
  EXPECT_EQ(safeFileComponent("a b\n\xff"), "a_b__");
  EXPECT_EQ(safeFileComponent(std::string(300, 'x')).size(), 100u);
}

}  // namespace
}  // namespace ts
