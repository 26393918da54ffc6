// Safetensors files and checkpoints: exact round trips, the byte layout PyTorch expects, every kind of
// damage reported as one line naming the file, and a `latest` pointer that only ever names a complete save.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

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
  ASSERT_EQ(w.tensorHashes.size(), tensors.size());
  const SafetensorsReader r(InputFile("", path, kMaxSafetensorsBytes));  // the same, a tensor at a time
  ASSERT_EQ(r.tensors().size(), tensors.size());
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    ContentHash h;
    h.update(tensors[i].data, tensors[i].bytes());
    EXPECT_EQ(w.tensorHashes[i], h.digest()) << tensors[i].name;
    const TensorView& header = r.tensors()[i];
    EXPECT_EQ(header.name, tensors[i].name);
    EXPECT_EQ(header.shape, tensors[i].shape);
    std::vector<std::uint8_t> got(header.bytes());
    r.read(header, got.data());
    if (!got.empty()) {
      EXPECT_EQ(std::memcmp(got.data(), tensors[i].data, got.size()), 0) << header.name;
    }
  }
  EXPECT_EQ(r.find("nothing"), nullptr);

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
    // The reader of a tensor at a time checks the header alike, against the file's size.
    EXPECT_EQ(usageError([&] { SafetensorsReader(InputFile("", path, kMaxSafetensorsBytes)); }), what);
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
// A small model and optimizer state whose values depend on `seed`, saved whole by one rank.
struct State {
  std::vector<float> w, b, m;
  explicit State(float seed) : w(12), b(3), m(12) {
    for (std::size_t i = 0; i < 12; ++i) {
      w[i] = seed + static_cast<float>(i);
      m[i] = seed * 0.5f - static_cast<float>(i);
    }
    for (std::size_t i = 0; i < 3; ++i) b[i] = -seed - static_cast<float>(i);
  }
  std::vector<Piece> pieces() const {
    return {{"fc.weight", StateKind::kParameter, Region::whole({3, 4}), w.data()},
            {"fc.bias", StateKind::kParameter, Region::whole({3}), b.data()},
            {"fc.weight.exp_avg", StateKind::kOptimizer, Region::whole({3, 4}), m.data()}};
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

std::string saveOne(const fs::path& dir, std::int64_t step, const std::vector<Piece>& pieces, const SaveOptions& o = {}) {
  CheckpointSave save(dir.string(), step, {});
  save.write(pieces);
  return save.commit(trainerAt(step), o);
}

std::vector<float> readAll(CheckpointReader& r, const std::string& name, const Region& region) {
  std::vector<float> out(static_cast<std::size_t>(region.elements()));
  r.read(name, region, out.data());
  return out;
}

// Every tensor of the checkpoint read whole: what a resume touches (the first damage found, as a UsageError).
void readEverything(const fs::path& dir) {
  CheckpointReader r = CheckpointReader::open(dir.string());
  for (const auto& t : r.tensors()) readAll(r, t.name, Region::whole(t.shape));
}

std::vector<std::string> entries(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

// The ranks of a save as threads of this process: allGather meets at a barrier.
class ThreadGroup {
 public:
  explicit ThreadGroup(int size) : size_(size), slots_(static_cast<std::size_t>(size)) {}
  SaveGroup member(int rank) {
    return {rank, size_, [this, rank](const std::string& mine) { return gather(rank, mine); }};
  }

 private:
  std::vector<std::string> gather(int rank, const std::string& mine) {
    std::unique_lock lock(mu_);
    const std::uint64_t round = round_;
    slots_[static_cast<std::size_t>(rank)] = mine;
    if (++arrived_ == size_) {
      result_ = slots_;
      arrived_ = 0;
      ++round_;
      cv_.notify_all();
    } else {
      cv_.wait(lock, [&] { return round_ != round; });
    }
    return result_;
  }
  int size_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::string> slots_, result_;
  int arrived_ = 0;
  std::uint64_t round_ = 0;
};

// Runs one save by `ranks` threads, rank r writing pieces[r]; returns each rank's commit (or its error).
std::vector<std::string> saveByRanks(const fs::path& dir, std::int64_t step, const std::vector<std::vector<Piece>>& pieces) {
  ThreadGroup group(static_cast<int>(pieces.size()));
  std::vector<std::string> out(pieces.size());
  std::vector<std::thread> threads;
  for (std::size_t r = 0; r < pieces.size(); ++r)
    threads.emplace_back([&, r] {
      try {
        CheckpointSave save(dir.string(), step, group.member(static_cast<int>(r)));
        save.write(pieces[r]);
        out[r] = save.commit(trainerAt(step));
      } catch (const Error& e) {
        out[r] = std::string("error: ") + e.what();
      }
    });
  for (auto& t : threads) t.join();
  return out;
}

std::vector<float> iota(std::size_t n, float from) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = from + static_cast<float>(i);
  return v;
}
}  // namespace

// Each element of a piece lands where the slice's definition puts it: row lr of the slice is the lr-th row of
// the runs, column lc is colFrom + lc; the piece is elements [from, to) of the slice, row-major.
TEST(CheckpointRegion, RunsPutEveryElementWhereTheSliceDefinitionSays) {
  Region r = Region::sliced({5, 2, 3}, 5, 6, {4, 0, 1, 3}, 1, 5);
  EXPECT_EQ(r.rowRuns, (std::vector<std::pair<std::int64_t, std::int64_t>>{{4, 5}, {0, 2}, {3, 4}}));
  EXPECT_EQ(r.to, 16) << "all of the slice: 4 rows of 4 columns";
  const std::vector<std::int64_t> rows{4, 0, 1, 3};
  for (std::int64_t from = 0; from <= 16; from += 3)
    for (std::int64_t to = from; to <= 16; to += 5) {
      r.from = from;
      r.to = to;
      r.check("test");
      std::vector<std::int64_t> got(static_cast<std::size_t>(to - from), -1);
      r.forEachRun([&](std::int64_t at, std::int64_t in, std::int64_t n) {
        for (std::int64_t k = 0; k < n; ++k) got[static_cast<std::size_t>(at + k)] = in + k;
      });
      for (std::int64_t i = from; i < to; ++i)
        EXPECT_EQ(got[static_cast<std::size_t>(i - from)], rows[static_cast<std::size_t>(i / 4)] * 6 + 1 + i % 4)
            << from << " " << to << " " << i;
    }
  EXPECT_FALSE(r.isWhole());
  EXPECT_TRUE(Region::whole({3, 4}).isWhole());
  EXPECT_TRUE(Region::fromJson(r.toJson(), "t").sameSlice(r));
}

TEST(CheckpointRegion, AHostileRegionIsOneLine) {
  auto bad = [](const std::string& text) { return usageError([&] { Region::fromJson(nlohmann::json::parse(text), "idx"); }); };
  EXPECT_EQ(bad(R"({"shape": [4], "view": [1, 4], "cols": [0, 4], "elements": [0, 5]})"),
            "idx: elements [0, 5) are not within the slice's 4");
  EXPECT_EQ(bad(R"({"shape": [4], "view": [2, 4], "cols": [0, 4], "elements": [0, 4]})"),
            "idx: view [2, 4] does not hold the 4 elements of the shape");
  EXPECT_EQ(bad(R"({"shape": [4294967296, 4294967296], "view": [1, 1], "cols": [0, 1], "elements": [0, 1]})"),
            "idx: shape dimension 4294967296 is out of range");
  EXPECT_EQ(bad(R"({"shape": [4, 2], "view": [4, 2], "rows": [[3, 9]], "cols": [0, 2], "elements": [0, 1]})"),
            "idx: row run [3, 9) is not within the view's 4 rows");
  EXPECT_EQ(bad(R"({"shape": [4, 2], "view": [4, 2], "cols": [1, 3], "elements": [0, 1]})"),
            "idx: columns [1, 3) are not within the view's 2");
  EXPECT_EQ(bad(R"({"shape": [4], "view": [1, 4], "cols": [0, 4], "elements": [0, 1.5]})"),
            "idx: 'elements' holds 1.5, not an integer");
  EXPECT_EQ(bad(R"({"shape": [4], "view": [1], "cols": [0, 4], "elements": [0, 1]})"),
            "idx: 'view' is missing or not a list of 2 integers");
  EXPECT_EQ(bad(R"({"shape": [4], "view": [1, 4], "rows": 3, "cols": [0, 4], "elements": [0, 1]})"),
            "idx: 'rows' is not a list of [begin, end) runs");
}

TEST(Checkpoint, SaveAndLoadRoundTrip) {
  const fs::path dir = scratch("roundtrip");
  const State saved(3.0f);
  const std::string stepDir = saveOne(dir, 120, saved.pieces());
  EXPECT_EQ(stepDir, (dir / "step-00000120").string());
  EXPECT_EQ(entries(dir), (std::vector<std::string>{"latest", "step-00000120"}));
  EXPECT_EQ(entries(stepDir), (std::vector<std::string>{"index.json", "rank-00000.safetensors"}));
  // One rank holding everything whole: its file is an ordinary safetensors file of named tensors.
  const SafetensorsFile file = SafetensorsFile::open((fs::path(stepDir) / "rank-00000.safetensors").string());
  ASSERT_NE(file.find("fc.weight"), nullptr);
  EXPECT_EQ(file.find("fc.weight")->shape, (std::vector<std::int64_t>{3, 4}));
  EXPECT_EQ(file.metadata().at("format"), "pt");

  for (const fs::path& from : {dir, fs::path(stepDir)}) {  // the checkpoint directory or one step directory
    CheckpointReader c = CheckpointReader::open(from.string());
    EXPECT_EQ(c.directory(), stepDir);
    EXPECT_EQ(c.state().step, 120);
    EXPECT_EQ(c.state().data, trainerAt(120).data);
    EXPECT_EQ(c.state().scaler, trainerAt(120).scaler);
    EXPECT_EQ(c.state().rng, trainerAt(120).rng);
    EXPECT_EQ(c.state().config, trainerAt(120).config);
    ASSERT_EQ(c.tensors().size(), 3u);
    EXPECT_EQ(c.find("fc.weight.exp_avg")->kind, StateKind::kOptimizer);
    EXPECT_EQ(readAll(c, "fc.weight", Region::whole({3, 4})), saved.w);
    EXPECT_EQ(readAll(c, "fc.bias", Region::whole({3})), saved.b);
    EXPECT_EQ(readAll(c, "fc.weight.exp_avg", Region::whole({3, 4})), saved.m);
    Region part = Region::whole({3, 4});  // a ZeRO-style piece of it: elements 5..9
    part.from = 5;
    part.to = 9;
    EXPECT_EQ(readAll(c, "fc.weight", part), std::vector<float>(saved.w.begin() + 5, saved.w.begin() + 9));
    EXPECT_GT(c.bytesRead(), 0u);
    EXPECT_EQ(usageError([&] { readAll(c, "fc.nothing", Region::whole({3})); }),
              "checkpoint " + stepDir + ": holds no tensor fc.nothing");
    EXPECT_EQ(usageError([&] { readAll(c, "fc.bias", Region::whole({4})); }),
              "checkpoint " + stepDir + ": fc.bias is [3] there and [4] here");
  }
  const auto index = nlohmann::json::parse(std::ifstream(fs::path(stepDir) / "index.json"));
  EXPECT_EQ(index["format"], kCheckpointFormat);
  fs::remove_all(dir);
}

// A resume on another layout reads a few pieces of many files: each file's header, then only the pieces asked for,
// each checked by its own hash. So a tensor reads back while another one's bytes in the same file are garbage, and
// the bytes read are the header's and the tensor's, not the file's.
TEST(Checkpoint, ReadingOneTensorReadsTheHeaderAndThatPieceOnly) {
  const fs::path dir = scratch("one-piece");
  const State saved(2.0f);
  const fs::path rankFile = fs::path(saveOne(dir, 4, saved.pieces())) / "rank-00000.safetensors";
  auto bytes = readBytes(rankFile);
  std::uint64_t header = 0;
  std::memcpy(&header, bytes.data(), 8);
  std::size_t momentAt = 0, momentBytes = 0;
  {
    const SafetensorsFile f = SafetensorsFile::open(rankFile.string());
    momentAt =
        static_cast<std::size_t>(static_cast<const std::uint8_t*>(f.find("fc.weight.exp_avg")->data) - f.fileBytes().data());
    momentBytes = f.find("fc.weight.exp_avg")->bytes();
  }
  std::fill_n(bytes.begin() + static_cast<std::ptrdiff_t>(momentAt), momentBytes, std::uint8_t{0xff});  // NaNs, same size
  writeBytes(rankFile, bytes);

  CheckpointReader c = CheckpointReader::open(dir.string());
  ASSERT_NE(c.find("fc.bias"), nullptr);
  EXPECT_EQ(c.find("fc.bias")->name, "fc.bias");
  EXPECT_EQ(c.find("fc.nothing"), nullptr);
  EXPECT_EQ(readAll(c, "fc.bias", Region::whole({3})), saved.b);
  EXPECT_EQ(c.bytesRead(), 8 + header + 3 * sizeof(float));
  EXPECT_EQ(readAll(c, "fc.weight", Region::whole({3, 4})), saved.w);
  EXPECT_EQ(c.bytesRead(), 8 + header + 15 * sizeof(float)) << "the header is read once";
  EXPECT_EQ(
      usageError([&] {
        readAll(c, "fc.weight.exp_avg", Region::whole({3, 4}));
      }),
      "checkpoint " + c.directory() + ": rank-00000.safetensors: fc.weight.exp_avg does not hash to what was saved: corrupt");
  fs::remove_all(dir);
}

// Two ranks write a tensor-parallel layer's slices (rows of a column-parallel weight, columns of a row-
// parallel one) and ZeRO pieces of them; every other cut of the same tensors reads back what was written.
TEST(Checkpoint, ShardsWrittenByRanksReadBackInAnyOtherCut) {
  const fs::path dir = scratch("shards");
  const std::vector<float> wholeQ = iota(6 * 4, 0.0f), wholeO = iota(4 * 6, 100.0f);
  // Rank r holds rows {r, r+2, r+4} of q [6, 4] (interleaved heads: three runs) and columns [3r, 3r+3) of o [4, 6].
  std::vector<std::vector<float>> held(4);
  std::vector<std::vector<Piece>> pieces(2);
  for (int r = 0; r < 2; ++r) {
    std::vector<float>& q = held[static_cast<std::size_t>(2 * r)];
    std::vector<float>& o = held[static_cast<std::size_t>(2 * r + 1)];
    for (int row : {r, r + 2, r + 4})
      for (int c = 0; c < 4; ++c) q.push_back(wholeQ[static_cast<std::size_t>(row * 4 + c)]);
    for (int row = 0; row < 4; ++row)
      for (int c = 3 * r; c < 3 * r + 3; ++c) o.push_back(wholeO[static_cast<std::size_t>(row * 6 + c)]);
    const Region rq = Region::sliced({6, 4}, 6, 4, {r, r + 2, r + 4}, 0, 4);
    // q's slice goes in two ZeRO-style pieces, [0, 5) and [5, 12); its optimizer state only in the second
    // (as a test of cover, not of a layout).
    Region first = rq, second = rq;
    first.to = 5;
    second.from = 5;
    const Region ro = Region::sliced({4, 6}, 4, 6, {}, 3 * r, 3 * r + 3);
    pieces[static_cast<std::size_t>(r)] = {{"q", StateKind::kParameter, first, q.data()},
                                           {"q", StateKind::kParameter, second, q.data() + 5},
                                           {"q.exp_avg", StateKind::kOptimizer, second, q.data() + 5},
                                           {"o", StateKind::kParameter, ro, o.data()}};
  }
  const auto commits = saveByRanks(dir, 9, pieces);
  EXPECT_EQ(commits[0], (dir / "step-00000009").string());
  EXPECT_EQ(commits[1], commits[0]);
  EXPECT_EQ(entries(commits[0]), (std::vector<std::string>{"index.json", "rank-00000.safetensors", "rank-00001.safetensors"}));

  CheckpointReader c = CheckpointReader::open(dir.string());
  // Whole (tp 1, consolidate): the slices put back in place.
  EXPECT_EQ(readAll(c, "q", Region::whole({6, 4})), wholeQ);
  EXPECT_EQ(readAll(c, "o", Region::whole({4, 6})), wholeO);
  // Another tensor-parallel cut (rows 0-2 as one run) and a ZeRO piece of it.
  Region rows = Region::sliced({6, 4}, 6, 4, {0, 1, 2}, 0, 4);
  rows.from = 2;
  rows.to = 10;
  EXPECT_EQ(readAll(c, "q", rows), std::vector<float>(wholeQ.begin() + 2, wholeQ.begin() + 10));
  // q.exp_avg: elements 5.. of each rank's slice only, so whole it is not covered; rank 1's own piece is.
  EXPECT_EQ(usageError([&] {
              readAll(c, "q.exp_avg", Region::whole({6, 4}));
            }),
            "checkpoint " + commits[0] + ": its pieces of q.exp_avg do not cover the part this rank holds: damaged index");
  const Region mine = pieces[1][2].region;
  EXPECT_EQ(readAll(c, "q.exp_avg", mine), std::vector<float>(held[2].begin() + 5, held[2].end()));
  fs::remove_all(dir);
}

TEST(Checkpoint, ARankThatFailsToWriteFailsTheSaveOnEveryRank) {
  const fs::path dir = scratch("rankfails");
  const State s(1);
  saveOne(dir, 10, s.pieces());
  const std::vector<float> x{1};
  // Rank 1's list names one key twice: its write fails; every rank reports it, nothing is published.
  const std::vector<std::vector<Piece>> pieces = {
      {{"a", StateKind::kParameter, Region::whole({1}), x.data()}},
      {{"b", StateKind::kParameter, Region::whole({1}), x.data()}, {"b", StateKind::kParameter, Region::whole({1}), x.data()}}};
  const auto commits = saveByRanks(dir, 20, pieces);
  for (const auto& c : commits) EXPECT_TRUE(c.starts_with("error: rank 1: ")) << c;
  EXPECT_EQ(entries(dir), (std::vector<std::string>{"latest", "step-00000010"}));
  EXPECT_EQ(CheckpointReader::open(dir.string()).state().step, 10);
  fs::remove_all(dir);
}

// Rank 0 publishes only once it sees every rank's file as written: a rank writing where rank 0 cannot see
// (a directory that is not on a shared filesystem) fails the save on every rank, naming why.
TEST(Checkpoint, AFileRankZeroCannotSeeFailsTheSaveOnEveryRank) {
  const fs::path dir = scratch("unshared");
  ThreadGroup group(2), meet(2);
  const std::vector<float> x{1, 2};
  std::vector<std::string> out(2);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r)
    threads.emplace_back([&, r] {
      try {
        CheckpointSave save(dir.string(), 5, group.member(r));
        const std::vector<Piece> mine{{"t" + std::to_string(r), StateKind::kParameter, Region::whole({2}), x.data()}};
        save.write(mine);
        meet.member(r).gather("");  // both written
        if (r == 1)
          for (const auto& e : fs::directory_iterator(dir))  // the hidden directory
            fs::remove(e.path() / "rank-00001.safetensors");
        meet.member(r).gather("");  // before either commits
        out[static_cast<std::size_t>(r)] = save.commit(trainerAt(5));
      } catch (const Error& e) {
        out[static_cast<std::size_t>(r)] = e.what();
      }
    });
  for (auto& t : threads) t.join();
  for (const auto& o : out)
    EXPECT_TRUE(o.starts_with("rank 1's rank-00001.safetensors is not in ") &&
                o.ends_with("as written (the checkpoint directory must be on a filesystem every rank shares)"))
        << o;
  EXPECT_EQ(entries(dir), std::vector<std::string>{}) << "nothing published, the hidden directory removed";
  fs::remove_all(dir);
}

TEST(Checkpoint, LatestNamesOnlyCompleteSaves) {
  const fs::path dir = scratch("latest");
  EXPECT_EQ(latestCheckpoint(dir.string()), std::nullopt);
  EXPECT_EQ(usageError([&] { CheckpointReader::open(dir.string()); }),
            "checkpoint " + dir.string() + " holds no checkpoint: no latest and no index.json");
  EXPECT_EQ(usageError([&] { CheckpointReader::open((dir / "none").string()); }),
            "checkpoint " + (dir / "none").string() + " does not exist");

  saveOne(dir, 10, State(1).pieces());
  saveOne(dir, 20, State(2).pieces());
  EXPECT_EQ(latestCheckpoint(dir.string()), (dir / "step-00000020").string());
  EXPECT_EQ(CheckpointReader::open(dir.string()).state().step, 20);

  // A save that crashed half-way (killed before its rename): invisible to loading, cleared by the next save.
  fs::create_directories(dir / ".step-00000030.partial-99999");
  writeBytes(dir / ".step-00000030.partial-99999" / "rank-00000.safetensors", {1, 2, 3});
  EXPECT_EQ(CheckpointReader::open(dir.string()).state().step, 20);
  // A save that fails (a bad tensor list) leaves latest and the directory as they were.
  const std::vector<float> x{1};
  const std::vector<Piece> dup{{"w", StateKind::kParameter, Region::whole({1}), x.data()},
                               {"w", StateKind::kParameter, Region::whole({1}), x.data()}};
  EXPECT_THROW(saveOne(dir, 30, dup), Error);
  EXPECT_EQ(entries(dir), (std::vector<std::string>{"latest", "step-00000010", "step-00000020"}));
  EXPECT_EQ(CheckpointReader::open(dir.string()).state().step, 20);

  // Saving a step that exists again (a fresh run into the same directory) replaces it.
  saveOne(dir, 10, State(7).pieces());
  EXPECT_EQ(latestCheckpoint(dir.string()), (dir / "step-00000010").string()) << "latest is the last save, not the highest step";
  CheckpointReader r = CheckpointReader::open(dir.string());
  EXPECT_EQ(readAll(r, "fc.weight", Region::whole({3, 4})), State(7).w);
  EXPECT_EQ(entries(dir), (std::vector<std::string>{"latest", "step-00000010", "step-00000020"}));

  writeBytes(dir / "latest", {'.', '.', '/', 'x'});
  EXPECT_NE(usageError([&] { CheckpointReader::open(dir.string()); }).find("does not name a step directory"), std::string::npos);
  writeBytes(dir / "latest", {'s', 't', 'e', 'p', '-', '5', '\n'});
  EXPECT_EQ(usageError([&] { CheckpointReader::open(dir.string()); }),
            "checkpoint " + dir.string() + ": latest names step-5, which is not there");
  fs::remove_all(dir);
}

TEST(Checkpoint, KeepsTheNewestWhenAsked) {
  const fs::path dir = scratch("keep");
  SaveOptions keep2;
  keep2.keepLast = 2;
  for (std::int64_t step : {100, 200, 300, 400, 500}) saveOne(dir, step, State(1).pieces(), keep2);
  EXPECT_EQ(entries(dir), (std::vector<std::string>{"latest", "step-00000400", "step-00000500"}));
  fs::remove_all(dir);
}

TEST(Checkpoint, ConsolidateWritesTheWholeModelByName) {
  const fs::path dir = scratch("consolidate");
  const State s(4);
  saveOne(dir, 3, s.pieces());
  const fs::path out = dir / "model.safetensors";
  EXPECT_EQ(consolidate(dir.string(), out.string(), false), 2u);
  SafetensorsFile f = SafetensorsFile::open(out.string());
  EXPECT_EQ(f.tensors().size(), 2u) << "parameters and buffers only, without --optimizer";
  std::vector<float> w(12), b(3);
  f.restore(std::vector<MutableTensorView>{{"fc.weight", TensorDType::kF32, {3, 4}, w.data()},
                                           {"fc.bias", TensorDType::kF32, {3}, b.data()}});
  EXPECT_EQ(w, s.w);
  EXPECT_EQ(b, s.b);
  EXPECT_EQ(consolidate(dir.string(), out.string(), true), 3u);
  fs::remove_all(dir);
}

TEST(Checkpoint, DamageIsOneClearLine) {
  const fs::path dir = scratch("damage");
  const State s(5);
  const fs::path step = saveOne(dir, 7, s.pieces());
  const auto file = readBytes(step / "rank-00000.safetensors");
  const auto index = readBytes(step / "index.json");
  auto load = [&] { return usageError([&] { readEverything(dir); }); };
  const std::string prefix = "checkpoint " + step.string() + ": ";

  auto flipped = file;
  flipped[flipped.size() - 5] ^= 0x10;  // one bit of one value: structurally fine, so only the hash can tell
  writeBytes(step / "rank-00000.safetensors", flipped);
  EXPECT_EQ(load(), prefix + "rank-00000.safetensors: fc.weight.exp_avg does not hash to what was saved: corrupt");
  writeBytes(step / "rank-00000.safetensors", std::vector<std::uint8_t>(file.begin(), file.end() - 4));
  EXPECT_EQ(load(), prefix + "rank-00000.safetensors is " + std::to_string(file.size() - 4) + " bytes but " +
                        std::to_string(file.size()) + " were saved: truncated or replaced");
  fs::remove(step / "rank-00000.safetensors");
  EXPECT_EQ(load(), prefix + "rank-00000.safetensors is missing");
  writeBytes(step / "rank-00000.safetensors", file);
  readEverything(dir);

  auto withIndex = [&](const nlohmann::json& j) {
    const std::string text = j.dump();
    writeBytes(step / "index.json", std::vector<std::uint8_t>(text.begin(), text.end()));
  };
  writeBytes(step / "index.json", {'{', '"', 'f'});
  EXPECT_EQ(load(), prefix + "index.json is not valid JSON (at byte 4): corrupt");
  const std::string overflow = R"({"format": 1e999})";
  writeBytes(step / "index.json", std::vector<std::uint8_t>(overflow.begin(), overflow.end()));
  EXPECT_EQ(load(), prefix + "index.json holds a number out of any range: corrupt");
  auto j = nlohmann::json::parse(index);
  j["format"] = "trainscope/checkpoint/v1";
  withIndex(j);
  EXPECT_EQ(load(), prefix + "written in format trainscope/checkpoint/v1; this trainscope reads trainscope/checkpoint/v3");
  // Hostile file names and regions: refused before anything is opened.
  j = nlohmann::json::parse(index);
  j["files"]["../../etc/passwd"] = j["files"]["rank-00000.safetensors"];
  withIndex(j);
  EXPECT_EQ(load(), prefix + "index.json lists a file named '../../etc/passwd'");
  j = nlohmann::json::parse(index);
  j["tensors"]["fc.bias"]["pieces"][0]["region"]["elements"] = {0, 1000};
  withIndex(j);
  EXPECT_EQ(load(), prefix + "index.json: tensor fc.bias: elements [0, 1000) are not within the slice's 3");
  j = nlohmann::json::parse(index);
  j["tensors"]["fc.bias"]["pieces"][0]["key"] = "fc.weight";  // 12 values where 3 are expected
  withIndex(j);
  EXPECT_EQ(load(), prefix + "rank-00000.safetensors holds no float32 tensor fc.weight of 3 elements, as the index says");
  withIndex(nlohmann::json::array());
  EXPECT_EQ(load(), prefix + "index.json has no format: not a trainscope checkpoint");
  fs::remove(step / "index.json");
  EXPECT_EQ(load(), prefix + "index.json is missing");
  fs::remove_all(dir);
}

}  // namespace ts::ckpt
