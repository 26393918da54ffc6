// The one writer of every output file (base/atomic_file.h) against what a local user can put in a shared folder:
// a link at the temporary or the final name, a link for the folder itself, an earlier run's file at a stream's name.
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "base/atomic_file.h"
#include "base/error.h"
#include "test_support.h"

namespace ts {
namespace {

namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
  const auto bytes = test::readBytes(p);
  return {bytes.begin(), bytes.end()};
}

class OutputFiles : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = test::scratchDir("output", ::testing::UnitTest::GetInstance()->current_test_info()->name()); }
  void TearDown() override { fs::remove_all(dir_); }
  std::string at(const std::string& name) const { return (dir_ / name).string(); }
  // The names in the folder, sorted: what a write left behind.
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(dir_)) out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
  }
  fs::path dir_;
};

// The old temporary name was "<path>.tmp.<pid>.<counter>": links planted at every such name for this process lead
// nowhere now.
TEST_F(OutputFiles, AnAtomicWriteNeverGoesThroughALinkAtAGuessableName) {
  std::ofstream(at("victim")) << "precious";
  for (int n = 0; n < 1000; ++n) fs::create_symlink(at("victim"), fmt::format("{}.tmp.{}.{}", at("r.json"), ::getpid(), n));
  writeFileAtomically(at("r.json"), "result");
  EXPECT_EQ(slurp(at("victim")), "precious");
  EXPECT_FALSE(fs::is_symlink(at("r.json")));
  EXPECT_EQ(slurp(at("r.json")), "result");
  EXPECT_EQ(names().size(), 1002u) << "no temporary file left behind";
}

// A link (or a FIFO) put at the final name while the file was being written is not replaced, nor written through.
TEST_F(OutputFiles, ALinkPutAtTheTargetDuringTheWriteIsRefusedAtCommit) {
  std::ofstream(at("victim")) << "precious";
  AtomicFile f(at("r.json"));
  f.write("result");
  fs::create_symlink(at("victim"), at("r.json"));
  EXPECT_THROW(f.commit(), Error);
  EXPECT_TRUE(fs::is_symlink(at("r.json")));
  EXPECT_EQ(slurp(at("victim")), "precious");
  EXPECT_EQ(names(), (std::vector<std::string>{"r.json", "victim"})) << "the temporary file is gone";
}

// What is at the target and not a regular file is named, at the start of a write, at commit and for a stream.
TEST_F(OutputFiles, WhatIsNotARegularFileIsNamedAndKept) {
  auto errorOf = [](auto&& f) -> std::string {
    try {
      f();
    } catch (const Error& e) {
      return e.what();
    }
    return "no error";
  };
  ASSERT_EQ(::mkfifo(at("fifo").c_str(), 0600), 0);
  EXPECT_EQ(errorOf([&] { AtomicFile f(at("fifo")); }), at("fifo") + " exists and is a FIFO: it is not replaced");
  EXPECT_EQ(errorOf([&] { StreamFile s(at("fifo")); }), at("fifo") + " exists and is a FIFO: it is not replaced");
  AtomicFile f(at("r.json"));
  f.write("result");
  fs::create_symlink(at("fifo"), at("r.json"));
  EXPECT_EQ(errorOf([&] { f.commit(); }), at("r.json") + " exists and is a symbolic link: it is not replaced");
  EXPECT_EQ(names(), (std::vector<std::string>{"fifo", "r.json"})) << "nothing else made, nothing replaced";
}

TEST_F(OutputFiles, AWriterDestroyedWithoutCommitLeavesNothing) {
  {
    AtomicFile f(at("sub/r.json"));
    f.write("half");
  }
  EXPECT_TRUE(fs::is_empty(at("sub")));
}

// A folder that is a link the user made (results -> /scratch/results) is followed.
TEST_F(OutputFiles, AFolderLinkOfTheUsersOwnIsFollowed) {
  fs::create_directory(at("real"));
  fs::create_directory_symlink(at("real"), at("results"));
  writeFileAtomically(at("results/r.json"), "x");
  EXPECT_EQ(slurp(at("real/r.json")), "x");
}

// fs.protected_symlinks, whatever the sysctl says: another user's link in a sticky world-writable folder is not
// followed (as root, the case the audit found: root's run steered into a folder a user chose).
TEST_F(OutputFiles, AFolderLinkAnotherUserPlantedInASharedFolderIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root, to give the link to another user";
  fs::create_directory(at("shared"));
  ASSERT_EQ(::chmod(at("shared").c_str(), 01777), 0);
  fs::create_directory(at("elsewhere"));
  fs::create_directory_symlink(at("elsewhere"), at("shared/results"));
  ASSERT_EQ(::lchown(at("shared/results").c_str(), 65534, 65534), 0);
  const std::string what = test::usageError([&] { writeFileAtomically(at("shared/results/r.json"), "x"); });
  EXPECT_EQ(what, at("shared/results") + " is a link that user 65534 made in the shared folder " + at("shared") +
                      ": it is not followed");
  EXPECT_TRUE(fs::is_empty(at("elsewhere")));
  EXPECT_THROW(StreamFile(at("shared/results/r.jsonl")), UsageError);
}

// An earlier run's stream may be the only copy of what it measured: kept aside at the lowest free number.
TEST_F(OutputFiles, AStreamKeepsAnEarlierFileAside) {
  std::ofstream(at("r.jsonl")) << "earlier\n";
  std::ofstream(at("r.jsonl.1")) << "earliest\n";
  StreamFile s(at("r.jsonl"));
  s.write("new\n");
  EXPECT_EQ(slurp(at("r.jsonl")), "new\n");
  EXPECT_EQ(slurp(at("r.jsonl.2")), "earlier\n");
  EXPECT_EQ(slurp(at("r.jsonl.1")), "earliest\n");
  EXPECT_EQ(keepAside(at("absent")), "");
}

// The folder is opened once: opened twice, its name could lead to two folders (a link swapped between the opens), the
// earlier file kept aside in one and the stream made in the other. inotify counts the opens of the folder itself (its
// closes watched too: two identical events in a row are one).
TEST_F(OutputFiles, AStreamOpensItsFolderOnce) {
  std::ofstream(at("r.jsonl")) << "earlier\n";
  const int watch = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  ASSERT_GE(watch, 0);
  ASSERT_GE(::inotify_add_watch(watch, dir_.c_str(), IN_OPEN | IN_CLOSE_NOWRITE), 0);
  {
    StreamFile s(at("r.jsonl"));
    s.write("new\n");
    s.sync();
  }
  int folderOpens = 0;
  alignas(inotify_event) char events[4096];
  for (ssize_t n; (n = ::read(watch, events, sizeof events)) > 0;)
    for (const char* p = events; p < events + n;) {
      const auto* e = reinterpret_cast<const inotify_event*>(p);
      if ((e->mask & IN_OPEN) && (e->mask & IN_ISDIR) && e->len == 0) ++folderOpens;  // the folder, not an entry in it
      p += sizeof(inotify_event) + e->len;
    }
  ::close(watch);
  EXPECT_EQ(folderOpens, 1);
  EXPECT_EQ(slurp(at("r.jsonl.1")), "earlier\n");
  EXPECT_EQ(slurp(at("r.jsonl")), "new\n");
}

TEST_F(OutputFiles, AStreamNeverWritesThroughALinkAtItsName) {
  std::ofstream(at("victim")) << "precious";
  fs::create_symlink(at("victim"), at("r.jsonl"));
  EXPECT_THROW(StreamFile(at("r.jsonl")), Error);
  EXPECT_EQ(slurp(at("victim")), "precious");
  EXPECT_TRUE(fs::is_symlink(at("r.jsonl")));
}

// remove() takes the file the stream made, and nothing that took its name since.
TEST_F(OutputFiles, AStreamRemovesOnlyWhatItMade) {
  {
    StreamFile s(at("a.jsonl"));
    s.remove();
  }
  EXPECT_FALSE(fs::exists(at("a.jsonl")));
  StreamFile s(at("b.jsonl"));
  fs::rename(at("b.jsonl"), at("moved"));
  std::ofstream(at("b.jsonl")) << "someone else's";
  s.remove();
  EXPECT_EQ(slurp(at("b.jsonl")), "someone else's");
}

}  // namespace
}  // namespace ts
