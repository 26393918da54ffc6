#include "workloads/checkpoint/checkpoint.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include <fmt/format.h>

#include "base/atomic_file.h"
#include "base/error.h"
#include "base/json_text.h"
#include "workloads/checkpoint/content_hash.h"

namespace ts::ckpt {
namespace fs = std::filesystem;

namespace {
constexpr const char* kModelFile = "model.safetensors";
constexpr const char* kOptimizerFile = "optimizer.safetensors";
constexpr const char* kTrainerFile = "trainer.json";
constexpr const char* kLatestFile = "latest";
const std::regex kStepName(R"(step-(\d+))");

// Removes a directory unless release()d: a save that fails half-way leaves nothing behind.
class RemoveOnFailure {
 public:
  explicit RemoveOnFailure(fs::path p) : path_(std::move(p)) {}
  ~RemoveOnFailure() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
  }
  void release() { path_.clear(); }

 private:
  fs::path path_;
};

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

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}
}  // namespace

std::string saveCheckpoint(const std::string& dir, std::span<const TensorView> model, std::span<const TensorView> optimizer,
                           const TrainerState& state, const SaveOptions& options) {
  if (state.step < 0) throw Error(fmt::format("checkpoint of step {}: steps count from 0", state.step));
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw Error(fmt::format("cannot create checkpoint directory {}: {}", dir, ec.message()));
  removeStalePartials(dir);

  const std::string name = fmt::format("step-{:08d}", state.step);
  const fs::path partial = fs::path(dir) / fmt::format(".{}.partial-{}", name, ::getpid());
  const fs::path final = fs::path(dir) / name;
  fs::remove_all(partial, ec);
  if (!fs::create_directory(partial, ec) || ec)
    throw Error(fmt::format("cannot create {}: {}", partial.string(), ec ? ec.message() : "it exists"));
  RemoveOnFailure cleanup(partial);

  std::map<std::string, std::string> modelMeta = options.modelMetadata;
  modelMeta.emplace("format", "pt");  // what Hugging Face loaders look for
  modelMeta.emplace("trainscope_step", std::to_string(state.step));
  const WrittenFile m = writeSafetensors((partial / kModelFile).string(), model, modelMeta);
  const WrittenFile o =
      writeSafetensors((partial / kOptimizerFile).string(), optimizer, {{"trainscope_step", std::to_string(state.step)}});
  const nlohmann::json trainer = {
      {"format", kCheckpointFormat},
      {"step", state.step},
      {"data", state.data},
      {"scaler", state.scaler},
      {"rng", state.rng},
      {"config", state.config},
      {"files",
       {{kModelFile, {{"bytes", m.bytes}, {"hash", ContentHash::hex(m.hash)}}},
        {kOptimizerFile, {{"bytes", o.bytes}, {"hash", ContentHash::hex(o.hash)}}}}},
  };
  writeFileAtomically((partial / kTrainerFile).string(), jsonText(trainer, 1) + "\n");
  syncDirectory(partial.string());

  publish(partial, final);
  cleanup.release();
  syncDirectory(dir);
  // Only now, with the step directory complete and durable, does `latest` move.
  writeFileAtomically((fs::path(dir) / kLatestFile).string(), name + "\n");
  if (options.keepLast > 0) keepNewest(dir, options.keepLast, name);
  return final.string();
}

std::optional<std::string> latestCheckpoint(const std::string& dir) {
  const fs::path pointer = fs::path(dir) / kLatestFile;
  std::error_code ec;
  if (!fs::exists(pointer, ec)) return std::nullopt;
  std::string name = slurp(pointer);
  while (!name.empty() && (name.back() == '\n' || name.back() == ' ' || name.back() == '\r')) name.pop_back();
  if (!std::regex_match(name, kStepName))
    throw UsageError(fmt::format("checkpoint {}: {} does not name a step directory (it holds {} bytes): damaged", dir,
                                 pointer.string(), name.size()));
  const fs::path step = fs::path(dir) / name;
  if (!fs::is_directory(step, ec)) throw UsageError(fmt::format("checkpoint {}: latest names {}, which is not there", dir, name));
  return step.string();
}

LoadedCheckpoint loadCheckpoint(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) throw UsageError(fmt::format("checkpoint {} does not exist", path));
  if (!fs::is_directory(path, ec)) throw UsageError(fmt::format("checkpoint {} is not a directory", path));
  std::string stepDir = path;
  if (!fs::exists(fs::path(path) / kTrainerFile, ec)) {
    const auto latest = latestCheckpoint(path);
    if (!latest)
      throw UsageError(fmt::format("checkpoint {} holds no checkpoint: no {} and no {}", path, kLatestFile, kTrainerFile));
    stepDir = *latest;
  }
  auto bad = [&](const std::string& what) { return UsageError(fmt::format("checkpoint {}: {}", stepDir, what)); };

  const fs::path trainerPath = fs::path(stepDir) / kTrainerFile;
  if (!fs::exists(trainerPath, ec)) throw bad(fmt::format("{} is missing", kTrainerFile));
  nlohmann::json trainer;
  try {
    trainer = nlohmann::json::parse(slurp(trainerPath));
  } catch (const nlohmann::json::parse_error& e) {
    throw bad(fmt::format("{} is not valid JSON (at byte {}): corrupt", kTrainerFile, e.byte));
  } catch (const nlohmann::json::exception&) {  // out_of_range.406: 1e999, as the safetensors header's fuzzing found
    throw bad(fmt::format("{} holds a number out of any range: corrupt", kTrainerFile));
  }
  if (!trainer.is_object() || !trainer.contains("format") || !trainer["format"].is_string())
    throw bad(fmt::format("{} has no format: not a trainscope checkpoint", kTrainerFile));
  if (const auto format = trainer["format"].get<std::string>(); format != kCheckpointFormat)
    throw bad(fmt::format("written in format {}; this trainscope reads {}", format, kCheckpointFormat));
  if (!trainer.contains("step") || !trainer["step"].is_number_unsigned())
    throw bad(fmt::format("{} has no step (a non-negative integer)", kTrainerFile));
  if (!trainer.contains("files") || !trainer["files"].is_object())
    throw bad(fmt::format("{} does not list the checkpoint's files", kTrainerFile));

  auto open = [&](const char* file) {
    const auto& rec = trainer["files"].contains(file) ? trainer["files"][file] : nlohmann::json();
    if (!rec.is_object() || !rec.contains("bytes") || !rec["bytes"].is_number_unsigned() || !rec.contains("hash") ||
        !rec["hash"].is_string())
      throw bad(fmt::format("{} does not record the size and hash of {}", kTrainerFile, file));
    const fs::path p = fs::path(stepDir) / file;
    if (!fs::exists(p, ec)) throw bad(fmt::format("{} is missing", file));
    const auto saved = rec["bytes"].get<std::uint64_t>();
    const auto size = fs::file_size(p, ec);
    if (ec || size != saved) throw bad(fmt::format("{} is {} bytes but {} were saved: truncated or replaced", file, size, saved));
    SafetensorsFile st = SafetensorsFile::open(p.string());
    ContentHash h;
    h.update(st.fileBytes().data(), st.fileBytes().size());
    if (ContentHash::hex(h.digest()) != rec["hash"].get<std::string>())
      throw bad(fmt::format("{} does not hash to what was saved: corrupt", file));
    return st;
  };
  SafetensorsFile model = open(kModelFile);
  SafetensorsFile optimizer = open(kOptimizerFile);

  TrainerState state;
  state.step = trainer["step"].get<std::int64_t>();
  state.data = trainer.value("data", nlohmann::json::object());
  state.scaler = trainer.value("scaler", nlohmann::json());
  state.rng = trainer.value("rng", nlohmann::json());
  state.config = trainer.value("config", nlohmann::json::object());
  return LoadedCheckpoint{stepDir, std::move(state), std::move(model), std::move(optimizer)};
}

}  // namespace ts::ckpt
