// Safetensors files and checkpoints: exact round trips, the byte layout PyTorch expects, every kind of
// damage reported as one line naming the file, and a `latest` pointer that only ever names a complete save.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "base/atomic_file.h"
#include "base/dtype.h"
#include "base/error.h"
#include "tests/unit/test_support.h"
#include "workloads/checkpoint/checkpoint.h"
#include "workloads/checkpoint/content_hash.h"
#include "workloads/checkpoint/safetensors.h"

namespace ts::ckpt {
namespace fs = std::filesystem;
using test::readBytes;
using test::usageError;
using test::writeBytes;

namespace {
fs::path scratch(const std::string& name) { return test::scratchDir("ckpt", name); }

template <typename T>
TensorView view(std::string name, TensorDType dtype, std::vector<std::int64_t> shape, const std::vector<T>& data) {
  return {std::move(name), dtype, std::move(shape), data.data()};
}

// The sample file the Python format test reads with its own parser (tests/integration/test_safetensors_format.py):
// one tensor of each dtype with values chosen to be exact in it, an empty tensor, a scalar, and metadata.
struct Sample {
  std::vector<float> weight{-1.0f, -0.5f, 0.0f, 0.5f, 1.0f, 1.5f};
  std::vector<std::uint16_t> bf16{floatToBFloat16(1.0f), floatToBFloat16(-2.5f), floatToBFloat16(3.140625f),
                                  floatToBFloat16(0.0078125f)};
  std::vector<std::uint16_t> half{floatToHalf(0.5f), floatToHalf(-1.25f), floatToHalf(65504.0f)};
  std::vector<std::int32_t> ids{-1, 0, 7, 2147483647};
  std::vector<std::int64_t> big{-(std::int64_t{1} << 40), std::int64_t{1} << 62};
  std::vector<std::uint8_t> bytes{0, 1, 127, 128, 255};
  std::vector<std::int8_t> int8{-128, 0, 127};
  std::vector<float> empty;
  std::vector<double> scalar{3.25};

  std::vector<TensorView> views() const {
    return {view("weight", TensorDType::kF32, {2, 3}, weight), view("bf16", TensorDType::kBF16, {4}, bf16),
            view("half", TensorDType::kF16, {3}, half),        view("ids", TensorDType::kI32, {2, 2}, ids),
            view("big", TensorDType::kI64, {2}, big),          view("bytes", TensorDType::kU8, {5}, bytes),
            view("int8", TensorDType::kI8, {3}, int8),         view("empty", TensorDType::kF32, {0, 4}, empty),
            view("scalar", TensorDType::kF64, {}, scalar)};
  }
};

// A file with this header (dumped as given, padded to 8) and this data buffer: for building damaged files.
std::vector<std::uint8_t> fileWith(const std::string& header, const std::vector<std::uint8_t>& buffer) {
  std::string h = header;
  h.append((8 - h.size() % 8) % 8, ' ');
  const std::uint64_t n = h.size();
  std::vector<std::uint8_t> out(8 + h.size() + buffer.size());
  std::memcpy(out.data(), &n, 8);
  std::memcpy(out.data() + 8, h.data(), h.size());
  if (!buffer.empty()) std::memcpy(out.data() + 8 + h.size(), buffer.data(), buffer.size());
  return out;
}
}  // namespace

TEST(Safetensors, RoundTripsEveryDTypeEmptyTensorsScalarsAndMetadata) {
  const fs::path dir = scratch("roundtrip");
  const Sample s;
  const auto tensors = s.views();
  const std::string path = (dir / "a.safetensors").string();
  const WrittenFile w = writeSafetensors(path, tensors, {{"format", "pt"}, {"note", "ünïcode ok"}});
  EXPECT_EQ(w.bytes, fs::file_size(path));

  const SafetensorsFile f = SafetensorsFile::open(path);
  ASSERT_EQ(f.tensors().size(), tensors.size());
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const TensorView& got = f.tensors()[i];
    EXPECT_EQ(got.name, tensors[i].name) << "the order given";
    EXPECT_EQ(got.dtype, tensors[i].dtype);
    EXPECT_EQ(got.shape, tensors[i].shape);
    ASSERT_EQ(got.bytes(), tensors[i].bytes());
    if (got.bytes() > 0) {
      EXPECT_EQ(std::memcmp(got.data, tensors[i].data, got.bytes()), 0) << got.name;
    }
  }
  EXPECT_EQ(f.find("scalar")->elements(), 1);
  EXPECT_EQ(f.find("empty")->bytes(), 0u);
  EXPECT_EQ(f.find("nothing"), nullptr);
  EXPECT_EQ(f.metadata().at("note"), "ünïcode ok");
  ContentHash h;
  h.update(f.fileBytes().data(), f.fileBytes().size());
  EXPECT_EQ(h.digest(), w.hash);

  // The layout: N little-endian, a JSON header padded with spaces to a multiple of 8, offsets in order.
  const auto raw = readBytes(path);
  std::uint64_t n;
  std::memcpy(&n, raw.data(), 8);
  EXPECT_EQ(n % 8, 0u);
  const std::string header(raw.begin() + 8, raw.begin() + 8 + static_cast<std::ptrdiff_t>(n));
  const auto j = nlohmann::ordered_json::parse(header);
  EXPECT_EQ(j.begin().key(), "__metadata__");
  std::uint64_t offset = 0;
  for (const auto& [name, e] : j.items()) {
    if (name == "__metadata__") continue;
    EXPECT_EQ(e["data_offsets"][0].get<std::uint64_t>(), offset) << name;
    offset = e["data_offsets"][1].get<std::uint64_t>();
  }
  EXPECT_EQ(8 + n + offset, raw.size());
  EXPECT_EQ(j["bf16"]["dtype"], "BF16");
  EXPECT_EQ(j["scalar"]["shape"], nlohmann::json::array());
  fs::remove_all(dir);
}

// Writes the sample where the Python test asks for it (TS_SAFETENSORS_SAMPLE); elsewhere a temporary file.
TEST(Safetensors, WritesTheSampleForThePythonFormatTest) {
  const char* where = std::getenv("TS_SAFETENSORS_SAMPLE");
  const fs::path dir = scratch("sample");
  const std::string path = where ? std::string(where) : (dir / "sample.safetensors").string();
  const Sample s;
  writeSafetensors(path, s.views(), {{"format", "pt"}, {"note", "trainscope sample"}});
  EXPECT_EQ(SafetensorsFile::open(path).tensors().size(), 9u);
  fs::remove_all(dir);
}

TEST(Safetensors, EveryTrainscopeDTypeHasAName) {
  for (DType t : allDTypes()) {
    const TensorDType st = tensorDType(t);
    EXPECT_EQ(tensorDTypeSize(st), dtypeSize(t));
    EXPECT_EQ(parseTensorDType(tensorDTypeName(st)), st);
  }
  EXPECT_FALSE(parseTensorDType("F8_E4M3"));
}

TEST(Safetensors, EveryDamageIsOneLineNamingTheFile) {
  const fs::path dir = scratch("damage");
  const std::string path = (dir / "bad.safetensors").string();
  const std::vector<std::uint8_t> eight(8, 0), twelve(12, 0);
  auto problem = [&](const std::vector<std::uint8_t>& bytes) {
    writeBytes(path, bytes);
    const std::string what = usageError([&] { SafetensorsFile::open(path); });
    EXPECT_EQ(what.rfind(path + ": ", 0), 0u) << what;
    return what.substr(std::min(what.size(), path.size() + 2));
  };
  const std::string ok =
      R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"U8","shape":[4],"data_offsets":[8,12]}})";
  writeBytes(path, fileWith(ok, twelve));
  EXPECT_EQ(SafetensorsFile::open(path).tensors().size(), 2u);  // the baseline is fine

  EXPECT_EQ(usageError([&] { SafetensorsFile::open((dir / "absent").string()); }), (dir / "absent").string() + " does not exist");
  EXPECT_EQ(problem({}), "0 bytes is too short for a safetensors file (truncated?)");
  EXPECT_EQ(problem({1, 2, 3}), "3 bytes is too short for a safetensors file (truncated?)");
  auto full = fileWith(ok, twelve);
  EXPECT_EQ(problem(std::vector<std::uint8_t>(full.begin(), full.begin() + 40)),
            "header length 112 runs past the end of the file (40 bytes): truncated?");
  auto huge = full;
  huge[6] = 1;
  EXPECT_NE(problem(huge).find("is not plausible"), std::string::npos);
  EXPECT_EQ(problem(fileWith("[1, 2]", {})), "the header is not a JSON object: not a safetensors file, or corrupt");
  EXPECT_NE(problem(fileWith(R"({"a": {"dtype": )", {})).find("the header is not valid JSON"), std::string::npos);
  // A number beyond every JSON type is an out_of_range, not a parse_error: it escaped as an internal error (fuzz/).
  EXPECT_EQ(problem(fileWith(R"({"a":{"shape":[1e999]}})", {})), "the header holds a number out of any range: corrupt");
  EXPECT_EQ(problem(fileWith(R"({"a":{"dtype":"F8","shape":[2],"data_offsets":[0,2]}})", {0, 0})),
            "tensor 'a': dtype \"F8\" is not one trainscope reads (F64, F32, F16, BF16, I64, I32, I8, U8)");
  EXPECT_EQ(problem(fileWith(R"({"a":{"dtype":"F32","data_offsets":[0,8]}})", eight)), "tensor 'a': no \"shape\"");
  EXPECT_EQ(problem(fileWith(R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", eight)),
            "tensor 'a': \"shape\" holds something other than non-negative integers");
  EXPECT_EQ(problem(fileWith(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", eight)),
            "tensor 'a': data_offsets [8, 0] run backwards");
  EXPECT_EQ(problem(fileWith(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", {0, 0, 0, 0})),
            "tensor 'a': data_offsets [0, 8] run past the end of the data (4 bytes): truncated?");
  EXPECT_EQ(problem(fileWith(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", eight)),
            "tensor 'a': shape [3] of F32 needs 12 bytes but data_offsets [0, 8] hold 8");
  EXPECT_EQ(problem(fileWith(R"({"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}})", eight)),
            "tensor 'a': shape [4294967296, 4294967296] of F32 needs more than the file bytes but data_offsets [0, 8] hold 8");
  EXPECT_EQ(problem(fileWith(
                R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"U8","shape":[4],"data_offsets":[4,8]}})",
                eight)),
            "tensor 'b' overlaps tensor 'a'");
  EXPECT_EQ(problem(fileWith(R"({"b":{"dtype":"U8","shape":[4],"data_offsets":[4,8]}})", eight)),
            "4 bytes before tensor 'b' belong to no tensor");
  EXPECT_EQ(problem(fileWith(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", twelve)),
            "the data is 12 bytes but the tensors cover 8: trailing bytes belong to no tensor");
  EXPECT_EQ(problem(fileWith(R"({"__metadata__":{"k":3}})", {})), "__metadata__ value of 'k' is not a string");
  EXPECT_EQ(problem(fileWith(R"({"a":[1,2]})", {})), "tensor 'a': its entry is not an object");
  EXPECT_EQ(problem(fileWith(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0.5,8]}})", eight)),
            "tensor 'a': \"data_offsets\" is not a pair of non-negative integers");
  // A real file cut short anywhere in its data.
  const Sample s;
  writeSafetensors(path, s.views());
  auto cut = readBytes(path);
  cut.resize(cut.size() - 3);
  EXPECT_NE(problem(cut).find("run past the end of the data"), std::string::npos);
  fs::remove_all(dir);
}

TEST(Safetensors, WriterRefusesBadNames) {
  const fs::path dir = scratch("names");
  const std::vector<float> x{1, 2};
  const std::string path = (dir / "n.safetensors").string();
  const std::vector<TensorView> dup{view("w", TensorDType::kF32, {2}, x), view("w", TensorDType::kF32, {2}, x)};
  EXPECT_THROW(writeSafetensors(path, dup), Error);
  const std::vector<TensorView> reserved{view("__metadata__", TensorDType::kF32, {2}, x)};
  EXPECT_THROW(writeSafetensors(path, reserved), Error);
  const std::vector<TensorView> unnamed{view("", TensorDType::kF32, {2}, x)};
  EXPECT_THROW(writeSafetensors(path, unnamed), Error);
  EXPECT_FALSE(fs::exists(path));
  EXPECT_TRUE(fs::is_empty(dir)) << "no temporary file left behind";
  fs::remove_all(dir);
}

TEST(Safetensors, RestoreChecksNamesDTypesAndShapes) {
  const fs::path dir = scratch("restore");
  const std::string path = (dir / "m.safetensors").string();
  const std::vector<float> w{1, 2, 3, 4, 5, 6}, b{7, 8};
  writeSafetensors(
      path, std::vector<TensorView>{view("fc.weight", TensorDType::kF32, {2, 3}, w), view("fc.bias", TensorDType::kF32, {2}, b)});
  const SafetensorsFile f = SafetensorsFile::open(path);
  std::vector<float> w2(6), b2(2);
  f.restore(std::vector<MutableTensorView>{{"fc.bias", TensorDType::kF32, {2}, b2.data()},
                                           {"fc.weight", TensorDType::kF32, {2, 3}, w2.data()}});
  EXPECT_EQ(w2, w);
  EXPECT_EQ(b2, b);

  EXPECT_EQ(usageError([&] {
              f.restore(std::vector<MutableTensorView>{{"fc.weight", TensorDType::kF32, {2, 3}, w2.data()}});
            }),
            path + " does not match: it has fc.bias that nothing here expects");
  EXPECT_EQ(usageError([&] {
              f.restore(std::vector<MutableTensorView>{{"fc.weight", TensorDType::kF32, {2, 3}, w2.data()},
                                                       {"fc.bias", TensorDType::kF32, {2}, b2.data()},
                                                       {"out.weight", TensorDType::kF32, {2}, b2.data()}});
            }),
            path + " does not match: it has no out.weight");
  EXPECT_EQ(usageError([&] {
              f.restore(std::vector<MutableTensorView>{{"fc.weight", TensorDType::kF32, {3, 2}, w2.data()},
                                                       {"fc.bias", TensorDType::kF32, {2}, b2.data()}});
            }),
            path + ": tensor 'fc.weight' is F32 [2, 3] but F32 [3, 2] is expected");
  EXPECT_EQ(usageError([&] {
              f.restore(std::vector<MutableTensorView>{{"fc.weight", TensorDType::kF32, {2, 3}, w2.data()},
                                                       {"fc.bias", TensorDType::kBF16, {2}, b2.data()}});
            }),
            path + ": tensor 'fc.bias' is F32 [2] but BF16 [2] is expected");
  fs::remove_all(dir);
}

TEST(CheckpointContentHash, IndependentOfHowTheBytesArriveAndSensitiveToEachByte) {
  std::vector<std::uint8_t> data(1000);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<std::uint8_t>(i * 7);
  ContentHash whole;
  whole.update(data.data(), data.size());
  for (std::size_t split : {1u, 3u, 8u, 13u, 999u}) {
    ContentHash parts;
    for (std::size_t at = 0; at < data.size(); at += split) parts.update(data.data() + at, std::min(split, data.size() - at));
    EXPECT_EQ(parts.digest(), whole.digest()) << split;
  }
  for (std::size_t i : {0u, 7u, 8u, 500u, 999u}) {
    auto changed = data;
    changed[i] ^= 1;
    ContentHash h;
    h.update(changed.data(), changed.size());
    EXPECT_NE(h.digest(), whole.digest()) << i;
  }
  ContentHash longer;
  longer.update(data.data(), data.size());
  longer.update("\0", 1);
  EXPECT_NE(longer.digest(), whole.digest());
  EXPECT_EQ(ContentHash::hex(0xabc).size(), 16u);
}

TEST(CheckpointAtomicFile, NothingAppearsWithoutCommit) {
  const fs::path dir = scratch("atomic");
  {
    AtomicFile f((dir / "sub" / "x").string());
    f.write("partial");
  }  // an exception on the way: no commit
  EXPECT_FALSE(fs::exists(dir / "sub" / "x"));
  EXPECT_TRUE(fs::is_empty(dir / "sub"));
  writeFileAtomically((dir / "sub" / "x").string(), "whole");
  AtomicFile f((dir / "sub" / "x").string());
  f.write("new");
  EXPECT_EQ(readBytes(dir / "sub" / "x").size(), 5u) << "the old version until commit";
  f.commit();
  EXPECT_EQ(readBytes(dir / "sub" / "x").size(), 3u);
  EXPECT_THROW(f.commit(), Error);
  fs::remove_all(dir);
}

namespace {
// A small model and optimizer state whose values depend on `seed`.
struct State {
  std::vector<float> w, b, m, v;
  std::vector<std::int64_t> count{0};
  explicit State(float seed) : w(12), b(3), m(12), v(12) {
    for (std::size_t i = 0; i < 12; ++i) {
      w[i] = seed + static_cast<float>(i);
      m[i] = seed * 0.5f - static_cast<float>(i);
      v[i] = seed * 0.25f;
    }
    for (std::size_t i = 0; i < 3; ++i) b[i] = -seed - static_cast<float>(i);
    count[0] = static_cast<std::int64_t>(seed);
  }
  std::vector<TensorView> model() const {
    return {view("fc.weight", TensorDType::kF32, {3, 4}, w), view("fc.bias", TensorDType::kF32, {3}, b)};
  }
  std::vector<TensorView> optimizer() const {
    return {view("fc.weight.exp_avg", TensorDType::kF32, {3, 4}, m), view("fc.weight.exp_avg_sq", TensorDType::kF32, {3, 4}, v),
            view("step", TensorDType::kI64, {1}, count)};
  }
  std::vector<MutableTensorView> modelSlots() {
    return {{"fc.weight", TensorDType::kF32, {3, 4}, w.data()}, {"fc.bias", TensorDType::kF32, {3}, b.data()}};
  }
  std::vector<MutableTensorView> optimizerSlots() {
    return {{"fc.weight.exp_avg", TensorDType::kF32, {3, 4}, m.data()},
            {"fc.weight.exp_avg_sq", TensorDType::kF32, {3, 4}, v.data()},
            {"step", TensorDType::kI64, {1}, count.data()}};
  }
};

TrainerState trainerAt(std::int64_t step) {
  TrainerState t;
  t.step = step;
  t.data = {{"dataset", {{"kind", "synthetic"}}}, {"seed", 1}, {"global_batch", 32}};
  t.scaler = {{"scale", 65536.0}, {"good_steps", 17}};
  t.rng = {{"dropout", {123456789u, 42u}}};
  t.config = {{"model", "mlp"}, {"lr", 0.001}};
  return t;
}

std::vector<std::string> entries(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}
}  // namespace

TEST(Checkpoint, SaveAndLoadRoundTrip) {
  const fs::path dir = scratch("roundtrip");
  const State saved(3.0f);
  const std::string stepDir = saveCheckpoint(dir.string(), saved.model(), saved.optimizer(), trainerAt(120));
  EXPECT_EQ(stepDir, (dir / "step-00000120").string());
  EXPECT_EQ(entries(dir), (std::vector<std::string>{"latest", "step-00000120"}));
  EXPECT_EQ(entries(stepDir), (std::vector<std::string>{"model.safetensors", "optimizer.safetensors", "trainer.json"}));

  for (const fs::path& from : {dir, fs::path(stepDir)}) {  // the checkpoint directory or one step directory
    const LoadedCheckpoint c = loadCheckpoint(from.string());
    EXPECT_EQ(c.directory, stepDir);
    EXPECT_EQ(c.state.step, 120);
    EXPECT_EQ(c.state.data, trainerAt(120).data);
    EXPECT_EQ(c.state.scaler, trainerAt(120).scaler);
    EXPECT_EQ(c.state.rng, trainerAt(120).rng);
    EXPECT_EQ(c.state.config, trainerAt(120).config);
    EXPECT_EQ(c.model.metadata().at("format"), "pt");
    State restored(0.0f);
    c.model.restore(restored.modelSlots());
    c.optimizer.restore(restored.optimizerSlots());
    EXPECT_EQ(restored.w, saved.w);
    EXPECT_EQ(restored.b, saved.b);
    EXPECT_EQ(restored.m, saved.m);
    EXPECT_EQ(restored.v, saved.v);
    EXPECT_EQ(restored.count, saved.count);
  }
  const auto trainer = nlohmann::json::parse(std::ifstream(fs::path(stepDir) / "trainer.json"));
  EXPECT_EQ(trainer["format"], kCheckpointFormat);
  fs::remove_all(dir);
}

TEST(Checkpoint, LatestNamesOnlyCompleteSaves) {
  const fs::path dir = scratch("latest");
  EXPECT_EQ(latestCheckpoint(dir.string()), std::nullopt);
  EXPECT_EQ(usageError([&] { loadCheckpoint(dir.string()); }),
            "checkpoint " + dir.string() + " holds no checkpoint: no latest and no trainer.json");
  EXPECT_EQ(usageError([&] { loadCheckpoint((dir / "none").string()); }),
            "checkpoint " + (dir / "none").string() + " does not exist");

  saveCheckpoint(dir.string(), State(1).model(), State(1).optimizer(), trainerAt(10));
  saveCheckpoint(dir.string(), State(2).model(), State(2).optimizer(), trainerAt(20));
  EXPECT_EQ(latestCheckpoint(dir.string()), (dir / "step-00000020").string());
  EXPECT_EQ(loadCheckpoint(dir.string()).state.step, 20);

  // A save that crashed half-way (killed before its rename): invisible to loading, cleared by the next save.
  fs::create_directories(dir / ".step-00000030.partial-99999");
  writeBytes(dir / ".step-00000030.partial-99999" / "model.safetensors", {1, 2, 3});
  EXPECT_EQ(loadCheckpoint(dir.string()).state.step, 20);
  // A save that fails (a bad tensor list) leaves latest and the directory as they were.
  const std::vector<float> x{1};
  const std::vector<TensorView> dup{view("w", TensorDType::kF32, {1}, x), view("w", TensorDType::kF32, {1}, x)};
  EXPECT_THROW(saveCheckpoint(dir.string(), dup, {}, trainerAt(30)), Error);
  EXPECT_EQ(entries(dir), (std::vector<std::string>{"latest", "step-00000010", "step-00000020"}));
  EXPECT_EQ(loadCheckpoint(dir.string()).state.step, 20);

  // Saving a step that exists again (a fresh run into the same directory) replaces it.
  saveCheckpoint(dir.string(), State(7).model(), State(7).optimizer(), trainerAt(10));
  EXPECT_EQ(latestCheckpoint(dir.string()), (dir / "step-00000010").string()) << "latest is the last save, not the highest step";
  State r(0);
  loadCheckpoint(dir.string()).model.restore(r.modelSlots());
  EXPECT_EQ(r.w, State(7).w);
  EXPECT_EQ(entries(dir), (std::vector<std::string>{"latest", "step-00000010", "step-00000020"}));

  writeBytes(dir / "latest", {'.', '.', '/', 'x'});
  EXPECT_NE(usageError([&] { loadCheckpoint(dir.string()); }).find("does not name a step directory"), std::string::npos);
  writeBytes(dir / "latest", {'s', 't', 'e', 'p', '-', '5', '\n'});
  EXPECT_EQ(usageError([&] { loadCheckpoint(dir.string()); }),
            "checkpoint " + dir.string() + ": latest names step-5, which is not there");
  fs::remove_all(dir);
}

TEST(Checkpoint, KeepsTheNewestWhenAsked) {
  const fs::path dir = scratch("keep");
  SaveOptions keep2;
  keep2.keepLast = 2;
  for (std::int64_t step : {100, 200, 300, 400, 500})
    saveCheckpoint(dir.string(), State(1).model(), State(1).optimizer(), trainerAt(step), keep2);
  EXPECT_EQ(entries(dir), (std::vector<std::string>{"latest", "step-00000400", "step-00000500"}));
  fs::remove_all(dir);
}

TEST(Checkpoint, DamageIsOneClearLine) {
  const fs::path dir = scratch("damage");
  const State s(5);
  const fs::path step = saveCheckpoint(dir.string(), s.model(), s.optimizer(), trainerAt(7));
  const auto model = readBytes(step / "model.safetensors");
  const auto trainer = readBytes(step / "trainer.json");
  auto load = [&] { return usageError([&] { loadCheckpoint(dir.string()); }); };
  const std::string prefix = "checkpoint " + step.string() + ": ";

  auto flipped = model;
  flipped[flipped.size() - 5] ^= 0x10;  // one bit of one weight: structurally fine, so only the hash can tell
  writeBytes(step / "model.safetensors", flipped);
  EXPECT_EQ(load(), prefix + "model.safetensors does not hash to what was saved: corrupt");
  writeBytes(step / "model.safetensors", std::vector<std::uint8_t>(model.begin(), model.end() - 4));
  EXPECT_EQ(load(), prefix + "model.safetensors is " + std::to_string(model.size() - 4) + " bytes but " +
                        std::to_string(model.size()) + " were saved: truncated or replaced");
  writeBytes(step / "model.safetensors", model);
  EXPECT_EQ(loadCheckpoint(dir.string()).state.step, 7);

  fs::remove(step / "optimizer.safetensors");
  EXPECT_EQ(load(), prefix + "optimizer.safetensors is missing");
  fs::remove_all(step);
  saveCheckpoint(dir.string(), s.model(), s.optimizer(), trainerAt(7));

  writeBytes(step / "trainer.json", {'{', '"', 'f'});
  EXPECT_EQ(load(), prefix + "trainer.json is not valid JSON (at byte 4): corrupt");
  const std::string overflow = R"({"format": 1e999})";
  writeBytes(step / "trainer.json", std::vector<std::uint8_t>(overflow.begin(), overflow.end()));
  EXPECT_EQ(load(), prefix + "trainer.json holds a number out of any range: corrupt");
  auto j = nlohmann::json::parse(trainer);
  j["format"] = "trainscope/checkpoint/v2";
  const std::string v2 = j.dump();
  writeBytes(step / "trainer.json", std::vector<std::uint8_t>(v2.begin(), v2.end()));
  EXPECT_EQ(load(), prefix + "written in format trainscope/checkpoint/v2; this trainscope reads trainscope/checkpoint/v1");
  writeBytes(step / "trainer.json", {'[', ']'});
  EXPECT_EQ(load(), prefix + "trainer.json has no format: not a trainscope checkpoint");
  fs::remove(step / "trainer.json");
  EXPECT_EQ(load(), prefix + "trainer.json is missing");
  fs::remove_all(dir);
}

}  // namespace ts::ckpt
