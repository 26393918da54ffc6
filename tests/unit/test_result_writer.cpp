#include <gtest/gtest.h>
#include <pthread.h>
#include <unistd.h>

#include <cmath>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "base/error.h"
#include "bench/failures/activity.h"
#include "bench/results/result_writer.h"

namespace ts {
namespace fs = std::filesystem;

namespace {
std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}
fs::path scratch(const char* name) {
  fs::path d = fs::temp_directory_path() / ("ts_writer_" + std::to_string(::getpid()) + "_" + name);
  fs::remove_all(d);
  return d;
}
}  // namespace

TEST(ResultWriter, StreamsEachRecordBeforeTheDocumentExists) {
  const fs::path dir = scratch("stream");
  ResultWriter w((dir / "sub" / "r.json").string());
  EXPECT_EQ(w.streamPath(), (dir / "sub" / "r.jsonl").string());
  w.begin({{"subcommand", "collectives"}});
  w.add({{"kind", "collective"}, {"bytes", 8}});
  // Measured so far: on disk already, line by line, while the final document does not exist yet.
  std::istringstream lines(slurp(w.streamPath()));
  std::string first, second;
  std::getline(lines, first);
  std::getline(lines, second);
  EXPECT_EQ(nlohmann::json::parse(first)["kind"], "run");
  EXPECT_EQ(nlohmann::json::parse(second)["bytes"], 8);
  EXPECT_FALSE(fs::exists(dir / "sub" / "r.json"));
  w.finish({{"subcommand", "collectives"}, {"ended_at", "now"}});
  const auto doc = nlohmann::json::parse(slurp(dir / "sub" / "r.json"));
  EXPECT_EQ(doc["schema"], kResultSchema);
  EXPECT_EQ(doc["records"].size(), 1u);
  EXPECT_EQ(doc["run"]["ended_at"], "now");
  for (const auto& e : fs::directory_iterator(dir / "sub"))  // no temporary file left behind
    EXPECT_FALSE(e.path().filename().string().ends_with(".tmp")) << e.path();
  fs::remove_all(dir);
}

TEST(ResultWriter, NeverWritesNaN) {
  const fs::path dir = scratch("nan");
  ResultWriter w((dir / "r.json").string());
  w.begin({});
  w.add({{"x", NAN}, {"y", {1.0, INFINITY}}});
  w.finish({});
  const auto doc = nlohmann::json::parse(slurp(dir / "r.json"));  // parses: valid JSON
  EXPECT_TRUE(doc["records"][0]["x"].is_null());
  EXPECT_TRUE(doc["records"][0]["y"][1].is_null());
  fs::remove_all(dir);
}

// Progress goes to the stream only (the record that sums it up is the document's), and the stream ends with
// the run line again, with its end time: a stream without it is a run that did not finish.
TEST(ResultWriter, StreamedOnlyRecordsAndTheEndOfTheRun) {
  const fs::path dir = scratch("progress");
  ResultWriter w((dir / "r.json").string());
  w.begin({{"ended_at", nullptr}});
  w.stream({{"kind", "train_progress"}, {"train_step", 0}});
  w.add({{"kind", "train"}});
  EXPECT_EQ(w.records().size(), 1u);
  w.finish({{"ended_at", "now"}});
  std::vector<nlohmann::json> lines;
  std::istringstream in(slurp(dir / "r.jsonl"));
  for (std::string line; std::getline(in, line);) lines.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0]["kind"], "run");
  EXPECT_TRUE(lines[0]["ended_at"].is_null());
  EXPECT_EQ(lines[1]["kind"], "train_progress");
  EXPECT_EQ(lines[2]["kind"], "train");
  EXPECT_EQ(lines[3]["kind"], "run");
  EXPECT_EQ(lines[3]["ended_at"], "now");
  const auto doc = nlohmann::json::parse(slurp(dir / "r.json"));
  EXPECT_EQ(doc["records"], nlohmann::json::parse(R"([{"kind":"train"}])"));
  fs::remove_all(dir);
}

// A label or a file name in Latin-1 is written, as U+FFFD, instead of ending the run (type_error.316).
TEST(ResultWriter, WritesStringsThatAreNotUtf8) {
  const fs::path dir = scratch("utf8");
  ResultWriter w((dir / "r.json").string());
  w.begin({{"environment", {{"NCCL_DEBUG", "\xff"}}}});
  w.add({{"kind", "train"}, {"label", "caf\xe9"}});
  w.finish({{"environment", {{"NCCL_DEBUG", "\xff"}}}});
  const auto doc = nlohmann::json::parse(slurp(dir / "r.json"));
  EXPECT_EQ(doc["records"][0]["label"], "caf\xef\xbf\xbd");
  EXPECT_EQ(doc["run"]["environment"]["NCCL_DEBUG"], "\xef\xbf\xbd");
  fs::remove_all(dir);
}

// The end of a signal's or a timeout's error line says what the stream holds, on the process that writes it:
// a count, or that nothing was kept (and no empty stream is left behind to say otherwise).
TEST(ResultWriter, TheErrorLineSaysWhatTheStreamKept) {
  const fs::path dir = scratch("kept");
  {
    ResultWriter w((dir / "r.json").string());
    activity::setStream(w.streamPath(), true);
    w.begin({});
    EXPECT_EQ(activity::keptRecords(), "; nothing was measured, so nothing was kept");
    EXPECT_FALSE(fs::exists(w.streamPath()));
  }
  ResultWriter w((dir / "r.json").string());
  activity::setStream(w.streamPath(), true);
  w.begin({});
  w.add({{"kind", "train"}});
  w.stream({{"kind", "train_progress"}});
  EXPECT_EQ(activity::keptRecords(), "; records measured so far are in " + w.streamPath() + " (2 records)");
  activity::setStream(w.streamPath(), false);  // another process: it does not know what process 0 kept
  EXPECT_EQ(activity::keptRecords(), "");
  activity::setStream("", false);
  fs::remove_all(dir);
}

TEST(ResultWriter, UnwritablePathIsAUsageError) { EXPECT_THROW(ResultWriter("/proc/version/r.json"), Error); }

TEST(ResultWriter, AtomicWriteReplacesWhole) {
  const fs::path dir = scratch("atomic");
  fs::create_directories(dir);
  writeFileAtomically((dir / "f").string(), "first version, longer");
  writeFileAtomically((dir / "f").string(), "second");
  EXPECT_EQ(slurp(dir / "f"), "second");
  fs::remove_all(dir);
}

TEST(ResultWriter, StreamPathNaming) {
  EXPECT_EQ(ResultWriter::streamPathFor("a/b.json"), "a/b.jsonl");
  EXPECT_EQ(ResultWriter::streamPathFor("out"), "out.jsonl");
}

}  // namespace ts

namespace ts {

TEST(ResultWriter, ARunThatMeasuredNothingLeavesNoStream) {
  const fs::path dir = fs::temp_directory_path() / ("ts_writer_empty_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  {
    ResultWriter w((dir / "r.json").string());
    w.begin({{"subcommand", "collectives"}});
    EXPECT_FALSE(fs::exists(dir));  // the paths are checked up front; the stream is made with the first record
  }
  EXPECT_FALSE(fs::exists(dir));
  fs::remove_all(dir);
}

// An earlier run's stream may be the only copy of a killed run's steps: a run that ends before measuring leaves it
// as it was (issue #34: a late error deleted it), and one that measures keeps it aside, never truncates it.
TEST(ResultWriter, AnEarlierStreamIsNeverDeletedOrTruncated) {
  const fs::path dir = scratch("earlier");
  fs::create_directories(dir);
  const std::string earlier = "{\"kind\":\"run\"}\n{\"kind\":\"train_progress\",\"train_step\":0}\n";
  std::ofstream(dir / "r.jsonl") << earlier;
  {
    ResultWriter w((dir / "r.json").string());
    activity::setStream(w.streamPath(), true);
    w.begin({});
    EXPECT_EQ(activity::keptRecords(), "; nothing was measured, so nothing was kept");  // what an error line ends with
  }
  activity::setStream("", false);
  EXPECT_EQ(slurp(dir / "r.jsonl"), earlier);
  {
    ResultWriter w((dir / "r.json").string());
    w.begin({});
    w.add({{"kind", "train"}});
    w.finish({{"ended_at", "now"}});
  }
  EXPECT_EQ(slurp(dir / "r.jsonl.1"), earlier);
  EXPECT_NE(slurp(dir / "r.jsonl").find("\"ended_at\":\"now\""), std::string::npos);
  fs::remove_all(dir);
}

}  // namespace ts

namespace ts {
namespace {
// Process 0 of one streams its third record while a SIGTERM comes: this thread holds it back as ResultWriter::stream
// does, so another one takes it; the record's count lands 200 ms later.
void stopWhileWriting() {
  activity::setIdentity(0, 1, "h");
  activity::setStream("/nonexistent/run.jsonl", true);
  activity::recordsStreamed(2);
  activity::installSignalHandlers();
  std::thread taker([] {
    for (;;) ::pause();  // the only thread that does not hold SIGTERM back: the kernel hands it the signal
  });
  sigset_t term;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &term, nullptr);
  activity::streamWriteStarts();
  ::kill(::getpid(), SIGTERM);
  const timespec ms200{0, 200'000'000};
  ::nanosleep(&ms200, nullptr);  // the record is being written
  activity::recordsStreamed(3);
  taker.join();  // never: the handler ends the process
}
}  // namespace

// A stop signal that another thread takes while this one writes a record (the writer's signal mask holds it back
// from its own thread only) says the count once the write is done: three records, not the two counted when the
// signal came. Without the wait the line said one record short (test_lost_results' SIGTERM case, once under load).
TEST(ResultWriterDeathTest, AStopSignalTakenByAnotherThreadWaitsForTheRecordBeingWritten) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(stopWhileWriting(), ::testing::ExitedWithCode(128 + SIGTERM),
              "records measured so far are in /nonexistent/run.jsonl \\(3 records\\)");
}
}  // namespace ts
