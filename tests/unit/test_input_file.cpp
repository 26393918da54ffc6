// Files trainscope reads but did not write (base/input_file.h): only a regular file is opened, within its bound,
// each refusal one line that says what the path really is; a file that shrinks under a reader is a line too.
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "base/input_file.h"
#include "test_support.h"

namespace ts {
namespace {

namespace fs = std::filesystem;

class InputFiles : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = test::scratchDir("input", ::testing::UnitTest::GetInstance()->current_test_info()->name()); }
  void TearDown() override { fs::remove_all(dir_); }
  std::string at(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

TEST_F(InputFiles, ReadsARegularFileAlsoThroughALink) {
  std::ofstream(at("data.txt")) << "0123456789";
  fs::create_symlink(at("data.txt"), at("link"));
  const InputFile f("", at("link"), 10);
  EXPECT_EQ(f.size(), 10u);
  EXPECT_EQ(f.readAll(), "0123456789");
  char part[3];
  f.readAt(4, part, 3);
  EXPECT_EQ(std::string(part, 3), "456");
  EXPECT_EQ(readInputFile("suite", at("data.txt"), 10), "0123456789");
}

// A FIFO is refused at once (opened, it would wait for a writer); a device says what it is, not a stale errno.
TEST_F(InputFiles, WhatIsNotARegularFileIsRefusedWithWhatItIs) {
  ASSERT_EQ(::mkfifo(at("fifo").c_str(), 0644), 0);
  EXPECT_EQ(test::usageError([&] { InputFile("", at("fifo"), 1 << 20); }),
            "cannot read " + at("fifo") + ": it is a FIFO, not a regular file");
  EXPECT_EQ(test::usageError([&] { InputFile("", "/dev/zero", 1 << 20); }),
            "cannot read /dev/zero: it is a character device, not a regular file");
  EXPECT_EQ(test::usageError([&] { InputFile("", dir_.string(), 1 << 20); }),
            "cannot read " + dir_.string() + ": it is a directory, not a regular file");
  EXPECT_EQ(test::usageError([&] { InputFile("", at("absent"), 1); }),
            "cannot read " + at("absent") + ": No such file or directory");
  fs::create_symlink("/dev/zero", at("zero"));  // through a link: what the link leads to
  EXPECT_EQ(test::usageError([&] { InputFile("--pairs", at("zero"), 1); }),
            "--pairs " + at("zero") + ": is a character device, not a regular file");
}

TEST_F(InputFiles, AFileOverItsBoundIsRefusedBeforeItIsRead) {
  std::ofstream(at("big")) << "0123456789";
  EXPECT_NO_THROW(InputFile("", at("big"), 10));
  EXPECT_EQ(test::usageError([&] { InputFile("", at("big"), 9); }),
            "cannot read " + at("big") + ": it is 10 bytes, more than the 9 this input may be");
  EXPECT_EQ(test::usageError([&] { InputFile("suite", at("big"), 9); }),
            "suite " + at("big") + ": 10 bytes, more than the 9 this input may be");
}

// Truncated under a reader (a data file while training): a line naming the file and both sizes, never SIGBUS.
TEST_F(InputFiles, AFileThatShrinksWhileInUseIsOneLine) {
  std::ofstream(at("data")) << "0123456789";
  const InputFile f("", at("data"), 100);
  ASSERT_EQ(::truncate(at("data").c_str(), 3), 0);
  char buf[4];
  f.readAt(0, buf, 3);  // what is still there reads
  EXPECT_EQ(test::usageError([&] { f.readAt(2, buf, 4); }),
            at("data") + " changed while in use: it is 3 bytes now, 10 when it was opened");
  EXPECT_NE(test::usageError([&] { f.readAll(); }).find("changed while in use"), std::string::npos);
}

}  // namespace
}  // namespace ts
