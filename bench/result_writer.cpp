#include "bench/result_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "base/error.h"

namespace ts {
namespace fs = std::filesystem;

namespace {
void makeParent(const std::string& path) {
  const fs::path parent = fs::path(path).parent_path();
  if (parent.empty()) return;
  std::error_code ec;
  fs::create_directories(parent, ec);
  if (ec) throw Error(fmt::format("cannot create directory {} for {}: {}", parent.string(), path, ec.message()));
}

// NaN and infinities are not JSON numbers; a figure that is not finite is written as null so the
// document stays valid (the schema then rejects it where a number is required, which is what we want).
void scrubNonFinite(nlohmann::json& j) {
  if (j.is_number_float()) {
    if (!std::isfinite(j.get<double>())) j = nullptr;
  } else if (j.is_structured()) {
    for (auto& v : j) scrubNonFinite(v);
  }
}
}  // namespace

std::string ResultWriter::streamPathFor(const std::string& jsonPath) {
  if (jsonPath.size() > 5 && jsonPath.ends_with(".json")) return jsonPath.substr(0, jsonPath.size() - 5) + ".jsonl";
  return jsonPath + ".jsonl";
}

ResultWriter::ResultWriter(std::string jsonPath) : jsonPath_(std::move(jsonPath)) {
  if (jsonPath_.empty()) return;
  streamPath_ = streamPathFor(jsonPath_);
  makeParent(jsonPath_);
  stream_ = std::fopen(streamPath_.c_str(), "w");
  if (!stream_) throw UsageError(fmt::format("--json {}: cannot write {}: {}", jsonPath_, streamPath_, std::strerror(errno)));
}

ResultWriter::~ResultWriter() {
  if (!stream_) return;
  std::fclose(stream_);
  // A run that stopped before its first record (bad input found after start-up) leaves no file behind.
  if (!wroteAny_) std::remove(streamPath_.c_str());
}

void ResultWriter::appendLine(const nlohmann::json& j) {
  if (!stream_) return;
  nlohmann::json clean = j;
  scrubNonFinite(clean);
  const std::string line = clean.dump() + "\n";
  if (std::fwrite(line.data(), 1, line.size(), stream_) != line.size() || std::fflush(stream_) != 0)
    throw Error(fmt::format("writing {} failed: {}", streamPath_, std::strerror(errno)));
}

void ResultWriter::begin(const nlohmann::json& run) {
  header_ = run;
  header_["kind"] = "run";
  header_["schema"] = kResultSchema;
}

void ResultWriter::add(const nlohmann::json& record) {
  if (!wroteAny_) appendLine(header_);  // the header goes out with the first record
  wroteAny_ = true;
  records_.push_back(record);
  appendLine(record);
}

void ResultWriter::finish(const nlohmann::json& run) {
  if (jsonPath_.empty()) return;
  if (stream_) {
    if (!wroteAny_) appendLine(header_);
    wroteAny_ = true;
    ::fsync(::fileno(stream_));
  }
  nlohmann::json doc = {{"schema", kResultSchema}, {"run", run}, {"records", records_}};
  scrubNonFinite(doc);
  writeFileAtomically(jsonPath_, doc.dump(1) + "\n");
}

void writeFileAtomically(const std::string& path, const std::string& text) {
  makeParent(path);
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) throw Error(fmt::format("cannot write {}: {}", tmp, std::strerror(errno)));
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t k = ::write(fd, text.data() + done, text.size() - done);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) {
      const int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      throw Error(fmt::format("writing {} failed: {}", tmp, std::strerror(err)));
    }
    done += static_cast<std::size_t>(k);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    ::unlink(tmp.c_str());
    throw Error(fmt::format("flushing {} failed: {}", tmp, std::strerror(errno)));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    throw Error(fmt::format("renaming {} to {} failed: {}", tmp, path, std::strerror(err)));
  }
  const std::string dir = fs::path(path).parent_path().empty() ? "." : fs::path(path).parent_path().string();
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

}  // namespace ts
