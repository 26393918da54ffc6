// The environment bootstrap's wire format and process 0's judgement of a hello (comm/bootstrap_hello.h),
// and where the job token comes from (comm/job_token.h).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "base/error.h"
#include "comm/bootstrap_hello.h"
#include "comm/job_token.h"

namespace ts {
namespace {

using HelloState = hello::Parsed<hello::Hello>::State;

// The bytes of a hello as docs/reliability.md describes them, written out here rather than by the encoder.
std::string rawHello(std::uint32_t rank, std::uint32_t size, const std::string& token, std::uint32_t claimedLength) {
  std::string b = "TSHELLO2";
  for (std::uint32_t v : {rank, size, claimedLength})
    for (int shift = 24; shift >= 0; shift -= 8) b.push_back(static_cast<char>((v >> shift) & 0xff));
  return b + token;
}

TEST(BootstrapHello, EncodesTheDocumentedBytesAndParsesThemBack) {
  const std::string bytes = hello::encodeHello({3, 8, "job-7"});
  EXPECT_EQ(bytes, rawHello(3, 8, "job-7", 5));
  const auto p = hello::parseHello(bytes);
  ASSERT_EQ(p.state, HelloState::kComplete) << p.why;
  EXPECT_EQ(p.message.rank, 3);
  EXPECT_EQ(p.message.worldSize, 8);
  EXPECT_EQ(p.message.token, "job-7");
}

TEST(BootstrapHello, APartialHelloAsksForExactlyTheRest) {
  const std::string bytes = hello::encodeHello({1, 2, "abc"});
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    const auto p = hello::parseHello(std::string_view(bytes).substr(0, n));
    ASSERT_EQ(p.state, HelloState::kNeedMore) << n;
    EXPECT_EQ(p.needed, n < hello::kHeaderBytes ? hello::kHeaderBytes : bytes.size()) << n;
  }
}

TEST(BootstrapHello, GarbageIsRefusedFromItsFirstWrongByte) {
  for (const std::string& junk : {std::string("G"), std::string("GET / HTTP/1.0\r\n\r\n"), std::string("\x01\x00\x00\x00", 4)}) {
    const auto p = hello::parseHello(junk);
    EXPECT_EQ(p.state, HelloState::kInvalid) << junk;
    EXPECT_NE(p.why.find("not a trainscope hello"), std::string::npos) << p.why;
  }
}

// Version 2 (issue #34) sends strings unpadded after the hello: a process of version 1 would misread them, so its
// hello is refused at its eighth byte, with a reason that says so.
TEST(BootstrapHello, AHelloOfAnotherVersionIsRefusedNamingTheVersions) {
  std::string old = rawHello(1, 2, "tok", 3);
  old[7] = '1';
  const auto p = hello::parseHello(old);
  ASSERT_EQ(p.state, HelloState::kInvalid);
  EXPECT_EQ(p.why, "a hello of trainscope's version 1 of this exchange, and this one speaks version 2");
  old[7] = '\x1b';  // not a version: garbage
  EXPECT_EQ(hello::parseHello(old).why, "not a trainscope hello (it starts with other bytes)");
}

TEST(BootstrapHello, AHugeClaimedLengthIsRefusedBeforeAnythingIsRead) {
  const auto p = hello::parseHello(rawHello(1, 2, "", 0xffffffffu));
  ASSERT_EQ(p.state, HelloState::kInvalid);
  EXPECT_NE(p.why.find("claims 4294967295 bytes of payload, more than the 256 allowed"), std::string::npos) << p.why;
  EXPECT_EQ(hello::parseHello(rawHello(1, 2, std::string(257, 'x'), 257)).state, HelloState::kInvalid);
  EXPECT_EQ(hello::parseHello(rawHello(1, 2, std::string(256, 'x'), 256)).state, HelloState::kComplete);
}

TEST(BootstrapHello, BytesAfterTheHelloAreRefused) {
  const auto p = hello::parseHello(hello::encodeHello({1, 2, "t"}) + "x");
  ASSERT_EQ(p.state, HelloState::kInvalid);
  EXPECT_NE(p.why.find("1 bytes after its hello"), std::string::npos) << p.why;
}

TEST(BootstrapHello, ProcessZeroRefusesWithOneReasonEach) {
  const std::vector<bool> joined = {true, true, false};  // WORLD_SIZE=3, RANK=1 has joined
  EXPECT_FALSE(hello::refusal({2, 3, "tok"}, 3, "tok", joined).has_value());
  EXPECT_EQ(hello::refusal({2, 3, "tox"}, 3, "tok", joined), "wrong job token");
  EXPECT_EQ(hello::refusal({2, 3, "tok!"}, 3, "tok", joined), "wrong job token");
  EXPECT_EQ(hello::refusal({2, 3, ""}, 3, "tok", joined), "wrong job token");
  // The token first: a stranger without it learns nothing about the world.
  EXPECT_EQ(hello::refusal({9, 4, "no"}, 3, "tok", joined), "wrong job token");
  EXPECT_EQ(hello::refusal({2, 4, "tok"}, 3, "tok", joined), "it has WORLD_SIZE=4 but this job has WORLD_SIZE=3");
  EXPECT_EQ(hello::refusal({1, 3, "tok"}, 3, "tok", joined), "RANK=1 has joined already (two processes with one RANK?)");
  for (int rank : {0, 3, -1})
    EXPECT_EQ(hello::refusal({rank, 3, "tok"}, 3, "tok", joined),
              "RANK=" + std::to_string(rank) + " is outside 1..2 (WORLD_SIZE=3; process 0 is the one listening)");
  EXPECT_FALSE(hello::refusal({2, 3, ""}, 3, "", joined).has_value());  // no token set: any hello with a free rank
}

TEST(BootstrapHello, AnswersRoundTripAndAStrangersReasonCannotReachTheTerminalRaw) {
  const auto ok = hello::parseAnswer(hello::encodeAnswer({true, 4, ""}));
  ASSERT_EQ(ok.state, hello::Parsed<hello::Answer>::State::kComplete);
  EXPECT_TRUE(ok.message.admitted);
  EXPECT_EQ(ok.message.worldSize, 4);
  const auto no = hello::parseAnswer(hello::encodeAnswer({false, 4, "bad\x1b[31m\nline"}));
  ASSERT_EQ(no.state, hello::Parsed<hello::Answer>::State::kComplete);
  EXPECT_FALSE(no.message.admitted);
  EXPECT_EQ(no.message.reason, "bad?[31m?line");
  EXPECT_EQ(hello::parseAnswer(hello::encodeHello({1, 2, ""})).state, hello::Parsed<hello::Answer>::State::kInvalid);
}

// Sets the launcher variables for one test and restores the environment after it.
class JobTokenEnv : public ::testing::Test {
 protected:
  static constexpr const char* kNames[] = {"TRAINSCOPE_JOB_TOKEN", "TORCHELASTIC_RUN_ID", "SLURM_JOB_ID",
                                           "OMPI_MCA_ess_base_jobid", "PMIX_NAMESPACE"};
  void SetUp() override {
    for (const char* n : kNames) {
      const char* v = std::getenv(n);
      saved_.emplace_back(n, v ? std::optional<std::string>(v) : std::nullopt);
      ::unsetenv(n);
    }
  }
  void TearDown() override {
    for (const auto& [n, v] : saved_) v ? (void)::setenv(n.c_str(), v->c_str(), 1) : (void)::unsetenv(n.c_str());
  }
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

TEST_F(JobTokenEnv, TheFirstSetVariableWinsAndALaunchersIdIsNamed) {
  EXPECT_EQ(jobTokenFromEnvironment().value, "");
  ::setenv("PMIX_NAMESPACE", "ns1", 1);
  EXPECT_EQ(jobTokenFromEnvironment().value, "PMIX_NAMESPACE=ns1");
  ::setenv("OMPI_MCA_ess_base_jobid", "77", 1);
  EXPECT_EQ(jobTokenFromEnvironment().value, "OMPI_MCA_ess_base_jobid=77");
  ::setenv("SLURM_JOB_ID", "1234", 1);
  EXPECT_EQ(jobTokenFromEnvironment().value, "SLURM_JOB_ID=1234");
  ::setenv("TORCHELASTIC_RUN_ID", "none", 1);  // torchrun's default: no id
  EXPECT_EQ(jobTokenFromEnvironment().value, "SLURM_JOB_ID=1234");
  ::setenv("TORCHELASTIC_RUN_ID", "run-5", 1);
  EXPECT_EQ(jobTokenFromEnvironment().value, "TORCHELASTIC_RUN_ID=run-5");
  ::setenv("TRAINSCOPE_JOB_TOKEN", "s3cret", 1);
  const JobToken t = jobTokenFromEnvironment();
  EXPECT_EQ(t.value, "s3cret");
  EXPECT_EQ(t.source, "TRAINSCOPE_JOB_TOKEN");
}

TEST_F(JobTokenEnv, NoneAsksForNoTokenAndNothingSetIsNoTokenWithoutAsking) {
  EXPECT_FALSE(jobTokenFromEnvironment().waived);
  ::setenv("SLURM_JOB_ID", "1234", 1);
  ::setenv("TRAINSCOPE_JOB_TOKEN", "none", 1);  // above a launcher's id too
  const JobToken t = jobTokenFromEnvironment();
  EXPECT_EQ(t.value, "");
  EXPECT_TRUE(t.waived);
  EXPECT_EQ(t.source, "TRAINSCOPE_JOB_TOKEN=none");
}

TEST_F(JobTokenEnv, ATokenTooLongForAHelloIsAUsageError) {
  ::setenv("TRAINSCOPE_JOB_TOKEN", std::string(hello::kMaxFramePayload + 1, 'k').c_str(), 1);
  EXPECT_THROW(jobTokenFromEnvironment(), UsageError);
}

}  // namespace
}  // namespace ts
