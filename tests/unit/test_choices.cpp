// The closed choices of a training run, a scaling study and a collectives sweep, each named once (EnumNames): every
// value has the name the records wrote when these were strings and reads back from it; the options' JSON writes
// names, not numbers; a --device text is read into its kind and GPU; and the command line answers a value
// outside an option's names in that option's own words (bench/choice_errors.h).
#include <gtest/gtest.h>

#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

#include "base/precision.h"
#include "bench/choice_errors.h"
#include "bench/collectives/collectives_choices.h"
#include "bench/scale/scale_options.h"
#include "tests/unit/test_support.h"
#include "workloads/device_spec.h"
#include "workloads/trainer.h"

namespace ts {
namespace {

// The canonical names of E's first `count` values, each checked to read back as its value.
template <NamedEnum E>
std::vector<std::string_view> roundTripped(int count) {
  std::vector<std::string_view> names;
  for (int i = 0; i < count; ++i) {
    const E e = static_cast<E>(i);
    names.push_back(nameOf(e));
    EXPECT_EQ(enumFromName<E>(nameOf(e)), e) << nameOf(e);
  }
  return names;
}

using Names = std::vector<std::string_view>;

TEST(Choices, EveryValueHasTheNameTheRecordsWrite) {
  EXPECT_EQ(roundTripped<Precision>(4), (Names{"float32", "tf32", "bfloat16", "float16"}));
  EXPECT_EQ(roundTripped<wl::ModelKind>(3), (Names{"mlp", "cnn", "transformer"}));
  EXPECT_EQ(roundTripped<wl::OptimizerKind>(5), (Names{"sgd", "adam", "adamw", "rmsprop", "lamb"}));
  EXPECT_EQ(roundTripped<wl::ScheduleKind>(4), (Names{"constant", "step", "cosine", "linear"}));
  EXPECT_EQ(roundTripped<wl::SyncKind>(2), (Names{"allreduce", "ps"}));
  EXPECT_EQ(roundTripped<wl::PipelineSchedule>(2), (Names{"gpipe", "1f1b"}));
  EXPECT_EQ(roundTripped<ScaleMode>(2), (Names{"weak", "strong"}));
  EXPECT_EQ(roundTripped<LauncherKind>(3), (Names{"mpirun", "srun", "none"}));
  EXPECT_EQ(roundTripped<PlacementChoice>(3), (Names{"both", "out", "in"}));
  EXPECT_EQ(roundTripped<MpiReduceScatterChoice>(3), (Names{"block", "counts", "both"}));
}

// --mpi-reduce-scatter names each MPI call by the call's own name (which a record writes as its algo), and both: a call
// declared without its choice, or a choice measuring another call than the one it names, fails here.
TEST(Choices, TheMpiReduceScatterChoicesAreEachCallAndBoth) {
  std::vector<MpiReduceScatter> every;
  for (const auto& [name, call] : EnumNames<MpiReduceScatter>::kNames) {
    every.push_back(call);
    const MpiReduceScatterChoice alone = mpiReduceScatterChoiceOf(call);
    EXPECT_EQ(nameOf(alone), name);
    EXPECT_EQ(mpiReduceScatterCalls(alone), std::vector<MpiReduceScatter>{call}) << name;
  }
  EXPECT_EQ(mpiReduceScatterCalls(MpiReduceScatterChoice::kBoth), every);
  EXPECT_EQ(std::size(EnumNames<MpiReduceScatterChoice>::kNames), every.size() + 1);  // the calls, and both
  EXPECT_EQ(nameOf(mpiReduceScatterChoiceOf(kDefaultMpiReduceScatter)), nameOf(kDefaultMpiReduceScatter));
}

// --issue names each form of an MPI call by its own name (which a record writes as its issue), and both: a form declared
// without its choice fails here.
TEST(Choices, TheIssueChoicesAreEachFormAndBoth) {
  std::vector<IssueKind> every;
  for (const auto& [name, kind] : EnumNames<IssueKind>::kNames) {
    every.push_back(kind);
    const std::optional<IssueChoice> alone = enumFromName<IssueChoice>(name);
    ASSERT_TRUE(alone) << name;
    EXPECT_EQ(issueKinds(*alone), std::vector<IssueKind>{kind}) << name;
  }
  EXPECT_EQ(issueKinds(IssueChoice::kBoth), every);
  EXPECT_EQ(std::size(EnumNames<IssueChoice>::kNames), every.size() + 1);  // the forms, and both
}

TEST(Choices, APlacementChoiceMeasuresItsPlacements) {
  EXPECT_TRUE(measuresOutOfPlace(PlacementChoice::kBoth) && measuresInPlace(PlacementChoice::kBoth));
  EXPECT_TRUE(measuresOutOfPlace(PlacementChoice::kOutOfPlace) && !measuresInPlace(PlacementChoice::kOutOfPlace));
  EXPECT_TRUE(!measuresOutOfPlace(PlacementChoice::kInPlace) && measuresInPlace(PlacementChoice::kInPlace));
}

TEST(Choices, PrecisionKeepsTheAliasesTheKernelsTookButListsOnlyItsNames) {
  EXPECT_EQ(enumFromName<Precision>("bf16"), Precision::kBFloat16);
  EXPECT_EQ(enumFromName<Precision>("half"), Precision::kFloat16);
  EXPECT_EQ(enumFromName<Precision>("fp32"), Precision::kFloat32);
  EXPECT_EQ(enumFromName<Precision>("tfloat32"), Precision::kTF32);
  EXPECT_FALSE(enumFromName<Precision>("fp8"));
  EXPECT_EQ(enumNameList<Precision>(), "float32, tf32, bfloat16 or float16");
  EXPECT_EQ(nameOf(*enumFromName<Precision>("bf16")), "bfloat16");  // an alias is written by its canonical name
}

// What a train run resolved its choices to is written by name (the record's config.resolved, a checkpoint's config).
TEST(Choices, TheResolvedTrainChoicesAreWrittenByName) {
  wl::OptimizerOptions optimizer;
  optimizer.kind = wl::OptimizerKind::kSgd;
  EXPECT_EQ(optimizer.toJson()["kind"], "sgd");
  EXPECT_TRUE(optimizer.toJson().contains("momentum") && !optimizer.toJson().contains("beta1"));
  wl::Schedule schedule;
  schedule.kind = wl::ScheduleKind::kCosine;
  EXPECT_EQ(schedule.toJson()["kind"], "cosine");
  EXPECT_TRUE(schedule.toJson().contains("warmup"));
  wl::LayoutOptions layout;
  layout.sync = wl::SyncKind::kParameterServer;
  layout.pp = 2;
  layout.schedule = wl::PipelineSchedule::kGPipe;
  const nlohmann::json j = layout.toJson();
  EXPECT_EQ(j["sync"], "ps");
  EXPECT_EQ(j["schedule"], "gpipe");
  EXPECT_EQ(j["name"], "pp=2 ps(1) gpipe");
}

TEST(DeviceSpec, ReadsCpuCudaAndCudaN) {
  const wl::DeviceSpec cpu = wl::parseDeviceSpec("cpu");
  EXPECT_FALSE(cpu.cuda());
  EXPECT_EQ(cpu.name(), "cpu");
  const wl::DeviceSpec cuda = wl::parseDeviceSpec("cuda");
  EXPECT_TRUE(cuda.cuda());
  EXPECT_EQ(cuda.index, -1);  // no index given: each process of a multi-process run takes its own
  EXPECT_EQ(cuda.ordinal(), 0);
  EXPECT_EQ(cuda.name(), "cuda");
  const wl::DeviceSpec third = wl::parseDeviceSpec("cuda:3");
  EXPECT_EQ(third, (wl::DeviceSpec{wl::DeviceKind::kCuda, 3}));
  EXPECT_EQ(third.name(), "cuda:3");
  EXPECT_EQ(test::usageError([] { wl::parseDeviceSpec("gpu"); }), "--device gpu: expected cpu, cuda or cuda:N");
  for (const char* bad : {"", "CPU", "cuda:", "cuda:-1", "cuda:1x", "cuda:+1", "cuda0"})
    EXPECT_NE(test::usageError([&] { wl::parseDeviceSpec(bad); }).find("expected cpu, cuda or cuda:N"), std::string::npos) << bad;
}

struct Chosen {
  wl::SyncKind sync = wl::SyncKind::kAllReduce;
  Precision precision = Precision::kFloat32;
  wl::ModelKind model = wl::ModelKind::kMlp;
};

OptionTable<Chosen> chosenOptions() {
  OptionTable<Chosen> t;
  onUnknownChoice(t.add("--sync", "", TS_FIELD(sync)), expectedChoice<wl::SyncKind>());
  onUnknownChoice(t.add("-d,--dtype", "", TS_FIELD(precision)), unknownChoice<Precision>("precision"));
  onUnknownChoice(t.add("--model", "", TS_FIELD(model)), unknownChoice<wl::ModelKind>("model"));
  return t;
}

// What the command line makes of `args`: the options, or the error line.
std::string parsed(const std::string& args, Chosen& o) {
  const OptionTable<Chosen> table = chosenOptions();
  CLI::App app;
  table.addToCommandLine(app, o);
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    return e.what();
  }
  return "";
}

TEST(ChoiceErrors, TheNamesAndAliasesSetTheField) {
  Chosen o;
  EXPECT_EQ(parsed("--sync ps -d bf16 --model transformer", o), "");
  EXPECT_EQ(o.sync, wl::SyncKind::kParameterServer);
  EXPECT_EQ(o.precision, Precision::kBFloat16);
  EXPECT_EQ(o.model, wl::ModelKind::kTransformer);
}

TEST(ChoiceErrors, AValueOutsideTheNamesIsTheOptionsOwnLine) {
  Chosen o;
  EXPECT_EQ(parsed("--sync gossip", o), "--sync gossip: expected allreduce, ps, ps-async or average");
  EXPECT_EQ(parsed("--dtype fp8", o), "--dtype: unknown precision 'fp8' (float32, tf32, bfloat16, float16)");
  EXPECT_EQ(parsed("--model rnn", o), "--model: unknown model 'rnn' (mlp, cnn, transformer)");
  EXPECT_EQ(o.sync, wl::SyncKind::kAllReduce);  // untouched by the values refused
}

// An enum option with no line of its own, and an on/off one: our words, not CLI11's map ("Check rnn value in
// {cnn->1,mlp->0,transformer->2} OR {1,0,2} FAILED"), and the help lists the names with the default (issue #35).
struct Plain {
  wl::ModelKind model = wl::ModelKind::kMlp;
  bool overlap = true;
};

TEST(ChoiceErrors, AnEnumOrOnOffOptionWithoutItsOwnLineIsSaidInOurWords) {
  OptionTable<Plain> t;
  t.add("--model", "", TS_FIELD(model));
  t.addOnOff("--overlap", "", TS_FIELD(overlap));
  Plain o;
  CLI::App app;
  t.addToCommandLine(app, o);
  const auto error = [&](const std::string& args) -> std::string {
    try {
      app.parse(args);
    } catch (const CLI::ParseError& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(error("--model rnn"), "--model: 'rnn' is not one of mlp, cnn, transformer");
  EXPECT_EQ(error("--overlap maybe"), "--overlap: 'maybe' is not on or off");
  EXPECT_EQ(error("--model cnn --overlap off"), "");
  EXPECT_EQ(o.model, wl::ModelKind::kCnn);
  EXPECT_FALSE(o.overlap);
  const std::string help = app.help();
  EXPECT_NE(help.find("--model {mlp,cnn,transformer}=mlp"), std::string::npos) << help;
  EXPECT_NE(help.find("--overlap {on,off}=on"), std::string::npos) << help;
}

}  // namespace
}  // namespace ts
