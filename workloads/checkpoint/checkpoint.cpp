#include "workloads/checkpoint/checkpoint.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <regex>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/atomic_file.h"
#include "base/error.h"
#include "base/input_file.h"
#include "base/json_text.h"
#include "workloads/checkpoint/content_hash.h"

namespace ts::ckpt {
namespace fs = std::filesystem;

namespace {
constexpr const char* kIndexFile = "index.json";
constexpr const char* kLatestFile = "latest";
const std::regex kStepName(R"(step-(\d+))");
const std::regex kRankFileName(R"(rank-\d{5,9}\.safetensors)");  // what the writer names them: no path, no ".."

double secondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Moves the finished directory to its final name. When a directory of that step exists already (a run
// restarted without --resume into the same place), the two are swapped atomically, so that a crash keeps
// one complete copy under the name `latest` may be pointing at.
void publish(const fs::path& partial, const fs::path& final) {
  if (::renameat2(AT_FDCWD, partial.c_str(), AT_FDCWD, final.c_str(), RENAME_NOREPLACE) == 0) return;
  if (errno == EEXIST || errno == ENOTEMPTY) {
    if (::renameat2(AT_FDCWD, partial.c_str(), AT_FDCWD, final.c_str(), RENAME_EXCHANGE) == 0) {
      std::error_code ec;
      fs::remove_all(partial, ec);  // now the old copy
      return;
    }
  }
  if (errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP) {
    // A filesystem without renameat2 flags: replace in two steps (a crash in between loses only this step's old copy).
    std::error_code ec;
    fs::remove_all(final, ec);
    if (std::rename(partial.c_str(), final.c_str()) == 0) return;
  }
  throw Error(fmt::format("renaming {} to {} failed: {}", partial.string(), final.string(), std::strerror(errno)));
}

// Directories of earlier saves that crashed before their rename.
void removeStalePartials(const fs::path& dir) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.starts_with(".step-") && name.find(".partial-") != std::string::npos) fs::remove_all(e.path(), ec);
  }
}

void keepNewest(const fs::path& dir, int keep, const std::string& current) {
  std::vector<std::pair<std::int64_t, fs::path>> steps;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    std::smatch m;
    if (e.is_directory(ec) && std::regex_match(name, m, kStepName)) steps.emplace_back(std::stoll(m[1].str()), e.path());
  }
  std::sort(steps.begin(), steps.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (std::size_t i = static_cast<std::size_t>(keep); i < steps.size(); ++i)
    if (steps[i].second.filename() != current) fs::remove_all(steps[i].second, ec);
}

// Bounds on the metadata a checkpoint is found by: a step name, and the index (a few hundred bytes per piece: a
// thousand tensors on a thousand ranks stay under it). Read as files trainscope did not write (base/input_file.h):
// a FIFO or a device put in their place is one line, not a hang or a read without end.
constexpr std::uint64_t kMaxLatestBytes = 4096;
constexpr std::uint64_t kMaxIndexBytes = std::uint64_t{256} << 20;
}  // namespace

std::vector<std::string> SaveGroup::gather(const std::string& mine) const {
  if (size == 1 || !allGather) return {mine};
  return allGather(mine);
}

CheckpointSave::CheckpointSave(const std::string& dir, std::int64_t step, SaveGroup group) : dir_(dir), group_(std::move(group)) {
  if (step < 0) throw Error(fmt::format("checkpoint of step {}: steps count from 0", step));
  name_ = fmt::format("step-{:08d}", step);
  std::string made;  // rank 0: the hidden directory, or "!" and why it could not be made
  if (group_.rank == 0) {
    try {
      std::error_code ec;
      fs::create_directories(dir, ec);
      if (ec) throw Error(fmt::format("cannot create checkpoint directory {}: {}", dir, ec.message()));
      removeStalePartials(dir);
      const fs::path partial = fs::path(dir) / fmt::format(".{}.partial-{}", name_, ::getpid());
      fs::remove_all(partial, ec);
      if (!fs::create_directory(partial, ec) || ec)
        throw Error(fmt::format("cannot create {}: {}", partial.string(), ec ? ec.message() : "it exists"));
      made = partial.string();
    } catch (const std::exception& e) {
      made = std::string("!") + e.what();
    }
  }
  const std::string agreed = group_.gather(made).at(0);
  if (agreed.starts_with("!")) throw Error(agreed.substr(1));
  partial_ = agreed;
}

CheckpointSave::~CheckpointSave() {
  if (committed_ || group_.rank != 0) return;
  std::error_code ec;
  fs::remove_all(partial_, ec);
}

void CheckpointSave::write(std::span<const Piece> pieces, const std::map<std::string, std::string>& metadata) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::string file = fmt::format("rank-{:05d}.safetensors", group_.rank);
  try {
    std::vector<TensorView> views;
    std::vector<nlohmann::json> list;
    for (const Piece& p : pieces) {
      p.region.check(fmt::format("{}: the region of {}", file, p.tensor));
      // A whole tensor keeps its name and shape, so that PyTorch reads it as itself.
      const bool whole = p.region.isWhole();
      const std::string key = whole ? p.tensor : fmt::format("{}[{}:{}]", p.tensor, p.region.from, p.region.to);
      views.push_back({key, TensorDType::kF32, whole ? p.region.shape : std::vector<std::int64_t>{p.region.elements()}, p.data});
      list.push_back({{"tensor", p.tensor}, {"kind", nameOf(p.kind)}, {"key", key}, {"region", p.region.toJson()}});
    }
    std::map<std::string, std::string> meta = metadata;
    meta.emplace("format", "pt");  // what Hugging Face loaders look for
    const WrittenFile w = writeSafetensors((fs::path(partial_) / file).string(), views, meta);
    // Each piece its own hash: a reader checks what it reads, which may be a few pieces of the file (a resume on
    // another layout), not the whole file.
    for (std::size_t i = 0; i < list.size(); ++i) list[i]["hash"] = ContentHash::hex(w.tensorHashes[i]);
    mine_ = {{"file", file}, {"bytes", w.bytes}, {"pieces", std::move(list)}};
    bytes_ = w.bytes;
  } catch (const std::exception& e) {
    mine_ = {{"error", fmt::format("rank {}: {}", group_.rank, e.what())}};
  }
  writeS_ = secondsSince(t0);
}

namespace {
// Rank 0's part of a commit: every rank's file checked, the index written, the directory published.
nlohmann::json publishIndex(const fs::path& dir, const fs::path& partial, const std::string& name,
                            const std::vector<std::string>& ranks, const TrainerState& state, const SaveOptions& options) {
  nlohmann::json files = nlohmann::json::object(), tensors = nlohmann::json::object();
  double slowest = 0;
  std::uint64_t total = 0;
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    const nlohmann::json f = nlohmann::json::parse(ranks[r], nullptr, false);
    if (f.is_discarded() || !f.is_object()) throw Error(fmt::format("rank {} sent a malformed checkpoint entry", r));
    if (f.contains("error")) throw Error(f["error"].get<std::string>());
    const std::string file = f.at("file").get<std::string>();
    std::error_code ec;
    const auto size = fs::file_size(partial / file, ec);
    if (ec || size != f.at("bytes").get<std::uint64_t>())
      throw Error(
          fmt::format("rank {}'s {} is not in {} as written (the checkpoint directory must be on a filesystem every "
                      "rank shares)",
                      r, file, partial.string()));
    files[file] = {{"bytes", f["bytes"]}};
    total += size;
    slowest = std::max(slowest, f.value("write_s", 0.0));
    for (const auto& p : f.at("pieces")) {
      const std::string tensor = p.at("tensor").get<std::string>();
      nlohmann::json& t = tensors[tensor];
      if (t.is_null())
        t = {
            {"kind", p.at("kind")}, {"dtype", "F32"}, {"shape", p.at("region").at("shape")}, {"pieces", nlohmann::json::array()}};
      if (t["kind"] != p["kind"] || t["shape"] != p["region"]["shape"])
        throw Error(fmt::format("internal: ranks disagree on the kind or shape of {}", tensor));
      t["pieces"].push_back({{"file", file}, {"key", p.at("key")}, {"hash", p.at("hash")}, {"region", p.at("region")}});
    }
  }
  const nlohmann::json index = {
      {"format", kCheckpointFormat},
      {"step", state.step},
      {"data", state.data},
      {"scaler", state.scaler},
      {"rng", state.rng},
      {"config", state.config},
      {"ranks", ranks.size()},
      {"write", {{"bytes", total}, {"seconds", slowest}}},
      {"files", files},
      {"tensors", tensors},
  };
  writeFileAtomically((partial / kIndexFile).string(), jsonText(index, 1) + "\n");
  syncDirectory(partial.string());
  publish(partial, dir / name);
  syncDirectory(dir.string());
  // Only now, with the step directory complete and durable, does `latest` move.
  writeFileAtomically((dir / kLatestFile).string(), name + "\n");
  if (options.keepLast > 0) keepNewest(dir, options.keepLast, name);
  return index["write"];
}
}  // namespace

std::string CheckpointSave::commit(const TrainerState& state, const SaveOptions& options) {
  if (committed_) throw Error("internal: a checkpoint committed twice");
  if (mine_.is_null()) mine_ = {{"error", fmt::format("rank {}: wrote no checkpoint file", group_.rank)}};
  mine_["write_s"] = writeS_;
  const std::vector<std::string> ranks = group_.gather(jsonText(mine_));
  nlohmann::json outcome;  // rank 0: what was written, or what went wrong
  if (group_.rank == 0) {
    try {
      outcome = publishIndex(dir_, partial_, name_, ranks, state, options);
    } catch (const std::exception& e) {
      outcome = {{"error", std::string(e.what())}};
    }
  }
  const nlohmann::json agreed = nlohmann::json::parse(group_.gather(jsonText(outcome)).at(0));
  if (agreed.contains("error")) throw Error(agreed["error"].get<std::string>());
  totalBytes_ = agreed.at("bytes").get<std::uint64_t>();
  slowestS_ = agreed.at("seconds").get<double>();
  committed_ = true;
  return (fs::path(dir_) / name_).string();
}

std::optional<std::string> latestCheckpoint(const std::string& dir) {
  const fs::path pointer = fs::path(dir) / kLatestFile;
  std::error_code ec;
  if (!fs::exists(pointer, ec)) return std::nullopt;
  std::string name = readInputFile("", pointer.string(), kMaxLatestBytes);
  while (!name.empty() && (name.back() == '\n' || name.back() == ' ' || name.back() == '\r')) name.pop_back();
  if (!std::regex_match(name, kStepName))
    throw UsageError(fmt::format("checkpoint {}: {} does not name a step directory (it holds {} bytes): damaged", dir,
                                 pointer.string(), name.size()));
  const fs::path step = fs::path(dir) / name;
  if (!fs::is_directory(step, ec)) throw UsageError(fmt::format("checkpoint {}: latest names {}, which is not there", dir, name));
  return step.string();
}

namespace {
// What is wrong with the checkpoint in dir, as its reader says it.
UsageError damaged(const std::string& dir, const std::string& what) {
  return UsageError(fmt::format("checkpoint {}: {}", dir, what));
}

// The step directory that path names: itself, or the one its `latest` names.
std::string stepDirectoryOf(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) throw UsageError(fmt::format("checkpoint {} does not exist", path));
  if (!fs::is_directory(path, ec)) throw UsageError(fmt::format("checkpoint {} is not a directory", path));
  if (fs::exists(fs::path(path) / kIndexFile, ec)) return path;
  const auto latest = latestCheckpoint(path);
  if (!latest) throw UsageError(fmt::format("checkpoint {} holds no checkpoint: no {} and no {}", path, kLatestFile, kIndexFile));
  return *latest;
}

// The step directory's index, with the format, step, files and tensors that every reader needs.
nlohmann::json readIndex(const std::string& stepDir) {
  auto bad = [&](const std::string& what) { return damaged(stepDir, what); };
  std::error_code ec;
  const fs::path indexPath = fs::path(stepDir) / kIndexFile;
  if (!fs::exists(indexPath, ec)) throw bad(fmt::format("{} is missing", kIndexFile));
  nlohmann::json index;
  try {
    index = nlohmann::json::parse(readInputFile("", indexPath.string(), kMaxIndexBytes));
  } catch (const nlohmann::json::parse_error& e) {
    throw bad(fmt::format("{} is not valid JSON (at byte {}): corrupt", kIndexFile, e.byte));
  } catch (const nlohmann::json::exception&) {  // out_of_range.406: 1e999, as the safetensors header's fuzzing found
    throw bad(fmt::format("{} holds a number out of any range: corrupt", kIndexFile));
  }
  if (!index.is_object() || !index.contains("format") || !index["format"].is_string())
    throw bad(fmt::format("{} has no format: not a trainscope checkpoint", kIndexFile));
  if (const auto format = index["format"].get<std::string>(); format != kCheckpointFormat)
    throw bad(fmt::format("written in format {}; this trainscope reads {}", format, kCheckpointFormat));
  if (!index.contains("step") || !index["step"].is_number_unsigned())
    throw bad(fmt::format("{} has no step (a non-negative integer)", kIndexFile));
  if (!index.contains("files") || !index["files"].is_object())
    throw bad(fmt::format("{} does not list the checkpoint's files", kIndexFile));
  if (!index.contains("tensors") || !index["tensors"].is_object())
    throw bad(fmt::format("{} does not list the checkpoint's tensors", kIndexFile));
  return index;
}
}  // namespace

struct CheckpointReader::Impl {
  struct PieceRef {
    std::string file, key, hash;
    Region region;
  };
  struct Entry {
    std::size_t tensor = 0;  // its place in the reader's list: find() is one lookup, not a search of the list
    std::vector<PieceRef> pieces;
  };
  struct File {
    std::uint64_t bytes = 0;
    std::optional<SafetensorsReader> opened;
  };
  std::map<std::string, Entry, std::less<>> entries;
  std::map<std::string, File, std::less<>> files;

  // The index's files, each with its size (opened when first read).
  void addFiles(const nlohmann::json& listed, const std::string& stepDir) {
    for (const auto& [file, rec] : listed.items()) {
      if (!std::regex_match(file, kRankFileName))
        throw damaged(stepDir, fmt::format("{} lists a file named '{}'", kIndexFile, file));
      if (!rec.is_object() || !rec.contains("bytes") || !rec["bytes"].is_number_unsigned())
        throw damaged(stepDir, fmt::format("{} does not record the size of {}", kIndexFile, file));
      files[file] = {rec["bytes"].get<std::uint64_t>(), std::nullopt};
    }
  }

  // The index's tensor `name` (t: its entry), its pieces checked against the files listed; `at` its place in the list.
  Tensor addTensor(const std::string& name, const nlohmann::json& t, const std::string& stepDir, std::size_t at) {
    const std::string where = fmt::format("checkpoint {}: {}: tensor {}", stepDir, kIndexFile, name);
    if (!t.is_object() || !t.contains("kind") || !t["kind"].is_string() || !t.contains("pieces") || !t["pieces"].is_array() ||
        !t.contains("shape"))
      throw UsageError(fmt::format("{}: no kind, shape or pieces", where));
    const auto kind = enumFromName<StateKind>(t["kind"].get<std::string>());
    if (!kind) throw UsageError(fmt::format("{}: unknown kind {}", where, jsonText(t["kind"])));
    Entry e{at, {}};
    std::vector<std::int64_t> shape;
    for (const auto& p : t["pieces"]) {
      if (!p.is_object() || !p.contains("file") || !p["file"].is_string() || !p.contains("key") || !p["key"].is_string() ||
          !p.contains("hash") || !p["hash"].is_string() || !p.contains("region"))
        throw UsageError(fmt::format("{}: a piece without file, key, hash or region", where));
      const std::string file = p["file"].get<std::string>();
      if (!files.count(file)) throw UsageError(fmt::format("{}: a piece in {}, which the index does not list", where, file));
      Region region = Region::fromJson(p["region"], where);
      if (e.pieces.empty()) shape = region.shape;
      if (region.shape != shape) throw UsageError(fmt::format("{}: its pieces disagree on its shape", where));
      e.pieces.push_back({file, p["key"].get<std::string>(), p["hash"].get<std::string>(), std::move(region)});
    }
    if (e.pieces.empty()) throw UsageError(fmt::format("{}: no pieces", where));
    entries[name] = std::move(e);
    return {name, *kind, shape};
  }

  // A piece's values, read from its file (its header read and checked the first time) and checked by their hash.
  std::vector<float> values(const PieceRef& p, const std::string& dir, std::uint64_t& bytesRead) {
    auto bad = [&](const std::string& what) { return damaged(dir, what); };
    File& f = files.at(p.file);
    if (!f.opened) {
      const fs::path path = fs::path(dir) / p.file;
      std::error_code ec;
      if (!fs::exists(path, ec)) throw bad(fmt::format("{} is missing", p.file));
      InputFile file("", path.string(), kMaxSafetensorsBytes);  // a FIFO or a device: one line
      if (file.size() != f.bytes)
        throw bad(fmt::format("{} is {} bytes but {} were saved: truncated or replaced", p.file, file.size(), f.bytes));
      f.opened.emplace(std::move(file));
      bytesRead += f.opened->headerBytes();
    }
    const TensorView* v = f.opened->find(p.key);
    if (!v || v->dtype != TensorDType::kF32 || v->elements() != p.region.elements())
      throw bad(
          fmt::format("{} holds no float32 tensor {} of {} elements, as the index says", p.file, p.key, p.region.elements()));
    std::vector<float> out(static_cast<std::size_t>(v->elements()));
    f.opened->read(*v, out.data());
    bytesRead += v->bytes();
    ContentHash h;
    h.update(out.data(), v->bytes());
    if (ContentHash::hex(h.digest()) != p.hash)
      throw bad(fmt::format("{}: {} does not hash to what was saved: corrupt", p.file, p.key));
    return out;
  }
};

namespace {
// Same slice as every piece (a resume on the same tensor-parallel layout): copies the overlaps of the element ranges,
// reading only the pieces that overlap.
template <typename Pieces, typename ValuesOf, typename Uncovered>
void readSameSlices(const Pieces& pieces, const Region& region, float* out, const ValuesOf& valuesOf,
                    const Uncovered& uncovered) {
  std::vector<std::pair<std::int64_t, std::int64_t>> covered;
  for (const auto& p : pieces) {
    const std::int64_t a = std::max(p.region.from, region.from), z = std::min(p.region.to, region.to);
    if (a >= z) continue;
    const std::vector<float> values = valuesOf(p);
    std::memcpy(out + (a - region.from), values.data() + (a - p.region.from), static_cast<std::size_t>(z - a) * sizeof(float));
    covered.emplace_back(a, z);
  }
  std::sort(covered.begin(), covered.end());
  std::int64_t reached = region.from;
  for (const auto& [a, z] : covered) {
    if (a > reached) break;
    reached = std::max(reached, z);
  }
  if (reached < region.to) throw uncovered();
}

// Another slicing: puts every piece in place in the whole tensor, then takes this region out.
template <typename Pieces, typename ValuesOf, typename Uncovered>
void readResliced(const Pieces& pieces, const Region& region, float* out, const ValuesOf& valuesOf, const Uncovered& uncovered) {
  std::vector<float> whole(static_cast<std::size_t>(region.wholeElements()));
  std::vector<std::uint8_t> have(whole.size(), 0);
  for (const auto& p : pieces) {
    const std::vector<float> values = valuesOf(p);
    p.region.forEachRun([&](std::int64_t at, std::int64_t in, std::int64_t n) {
      std::memcpy(whole.data() + in, values.data() + at, static_cast<std::size_t>(n) * sizeof(float));
      std::memset(have.data() + in, 1, static_cast<std::size_t>(n));
    });
  }
  region.forEachRun([&](std::int64_t at, std::int64_t in, std::int64_t n) {
    if (!std::all_of(have.begin() + in, have.begin() + in + n, [](std::uint8_t h) { return h != 0; })) throw uncovered();
    std::memcpy(out + at, whole.data() + in, static_cast<std::size_t>(n) * sizeof(float));
  });
}
}  // namespace

CheckpointReader::~CheckpointReader() = default;
CheckpointReader::CheckpointReader(CheckpointReader&&) noexcept = default;
CheckpointReader& CheckpointReader::operator=(CheckpointReader&&) noexcept = default;

CheckpointReader CheckpointReader::open(const std::string& path) {
  const std::string stepDir = stepDirectoryOf(path);
  const nlohmann::json index = readIndex(stepDir);
  CheckpointReader r;
  r.dir_ = stepDir;
  r.impl_ = std::make_unique<Impl>();
  r.impl_->addFiles(index["files"], stepDir);
  for (const auto& [name, t] : index["tensors"].items()) r.list_.push_back(r.impl_->addTensor(name, t, stepDir, r.list_.size()));
  TrainerState& state = r.state_;
  state.step = index["step"].get<std::int64_t>();
  state.data = index.value("data", nlohmann::json::object());
  state.scaler = index.value("scaler", nlohmann::json());
  state.rng = index.value("rng", nlohmann::json());
  state.config = index.value("config", nlohmann::json::object());
  return r;
}

const CheckpointReader::Tensor* CheckpointReader::find(const std::string& name) const {
  const auto it = impl_->entries.find(name);
  return it == impl_->entries.end() ? nullptr : &list_[it->second.tensor];
}

void CheckpointReader::read(const std::string& name, const Region& region, float* out) {
  const auto t0 = std::chrono::steady_clock::now();
  auto bad = [&](const std::string& what) { return damaged(dir_, what); };
  const auto it = impl_->entries.find(name);
  if (it == impl_->entries.end()) throw bad(fmt::format("holds no tensor {}", name));
  const auto& pieces = it->second.pieces;
  if (pieces.front().region.shape != region.shape)
    throw bad(fmt::format("{} is {} there and {} here", name, shapeText(pieces.front().region.shape), shapeText(region.shape)));
  auto valuesOf = [&](const Impl::PieceRef& p) { return impl_->values(p, dir_, bytesRead_); };
  auto uncovered = [&] {
    return bad(fmt::format("its pieces of {} do not cover the part this rank holds: damaged index", name));
  };
  const bool sameSlices = std::all_of(pieces.begin(), pieces.end(), [&](const auto& p) { return p.region.sameSlice(region); });
  if (sameSlices)
    readSameSlices(pieces, region, out, valuesOf, uncovered);
  else
    readResliced(pieces, region, out, valuesOf, uncovered);
  readS_ += secondsSince(t0);
}

std::size_t consolidate(const std::string& path, const std::string& out, bool optimizer) {
  CheckpointReader reader = CheckpointReader::open(path);
  std::vector<std::vector<float>> values;
  std::vector<TensorView> views;
  values.reserve(reader.tensors().size());
  for (const auto& t : reader.tensors()) {
    if ((t.kind == StateKind::kOptimizer && !optimizer) || t.kind == StateKind::kReplica) continue;
    const Region whole = Region::whole(t.shape);
    values.emplace_back(static_cast<std::size_t>(whole.elements()));
    reader.read(t.name, whole, values.back().data());
    views.push_back({t.name, TensorDType::kF32, t.shape, values.back().data()});
  }
  writeSafetensors(out, views, {{"format", "pt"}, {"trainscope_step", std::to_string(reader.state().step)}});
  return views.size();
}

}  // namespace ts::ckpt
