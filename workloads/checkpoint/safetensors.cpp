#include "workloads/checkpoint/safetensors.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <filesystem>
#include <set>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "base/atomic_file.h"
#include "base/error.h"
#include "base/json_text.h"
#include "workloads/checkpoint/content_hash.h"

namespace ts::ckpt {

static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian; so is every host trainscope runs on");

namespace {
struct DTypeEntry {
  TensorDType type;
  const char* name;
  std::size_t size;
};
constexpr DTypeEntry kDTypes[] = {
    {TensorDType::kF64, "F64", 8}, {TensorDType::kF32, "F32", 4}, {TensorDType::kF16, "F16", 2}, {TensorDType::kBF16, "BF16", 2},
    {TensorDType::kI64, "I64", 8}, {TensorDType::kI32, "I32", 4}, {TensorDType::kI8, "I8", 1},   {TensorDType::kU8, "U8", 1},
};
const DTypeEntry& entryOf(TensorDType t) {
  for (const auto& e : kDTypes)
    if (e.type == t) return e;
  throw Error("unknown tensor dtype");
}

// The official implementation refuses headers over 100 MB; so does this one, before allocating anything.
constexpr std::uint64_t kMaxHeaderBytes = 100'000'000;
}  // namespace

std::string shapeText(const std::vector<std::int64_t>& shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

std::string_view tensorDTypeName(TensorDType t) { return entryOf(t).name; }
std::size_t tensorDTypeSize(TensorDType t) { return entryOf(t).size; }

std::optional<TensorDType> parseTensorDType(std::string_view name) {
  for (const auto& e : kDTypes)
    if (name == e.name) return e.type;
  return std::nullopt;
}

TensorDType tensorDType(DType t) {
  switch (t) {
    case DType::kFloat32:
      return TensorDType::kF32;
    case DType::kFloat64:
      return TensorDType::kF64;
    case DType::kFloat16:
      return TensorDType::kF16;
    case DType::kBFloat16:
      return TensorDType::kBF16;
    case DType::kInt32:
      return TensorDType::kI32;
    case DType::kInt8:
      return TensorDType::kI8;
    case DType::kUInt8:
      return TensorDType::kU8;
  }
  throw Error("unknown dtype");
}

std::int64_t TensorView::elements() const {
  std::int64_t n = 1;
  for (std::int64_t d : shape) n *= d;
  return n;
}

WrittenFile writeSafetensors(const std::string& path, std::span<const TensorView> tensors,
                             const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::set<std::string_view> names;
  std::uint64_t offset = 0;
  for (const TensorView& t : tensors) {
    if (t.name.empty() || t.name == "__metadata__") throw Error(fmt::format("{}: '{}' cannot name a tensor", path, t.name));
    if (!names.insert(t.name).second) throw Error(fmt::format("{}: two tensors are named '{}'", path, t.name));
    for (std::int64_t d : t.shape)
      if (d < 0) throw Error(fmt::format("{}: tensor '{}' has shape {}", path, t.name, shapeText(t.shape)));
    if (t.bytes() > 0 && !t.data) throw Error(fmt::format("{}: tensor '{}' has no data", path, t.name));
    header[t.name] = {{"dtype", tensorDTypeName(t.dtype)}, {"shape", t.shape}, {"data_offsets", {offset, offset + t.bytes()}}};
    offset += t.bytes();
  }
  std::string text;
  try {
    text = jsonTextInOrder(header);
  } catch (const nlohmann::json::type_error&) {
    throw Error(fmt::format("{}: a tensor name or metadata string is not valid UTF-8", path));
  }
  text.append((8 - text.size() % 8) % 8, ' ');  // the data buffer starts 8-byte aligned

  unsigned char length[8];
  const std::uint64_t n = text.size();
  std::memcpy(length, &n, 8);
  WrittenFile written{8 + n + offset, {}};
  AtomicFile file(path);
  file.write(length, 8);
  file.write(text.data(), text.size());
  for (const TensorView& t : tensors) {
    ContentHash hash;
    hash.update(t.data, t.bytes());
    written.tensorHashes.push_back(hash.digest());
    file.write(t.data, t.bytes());
  }
  file.commit();
  return written;
}

const TensorView* SafetensorsFile::find(std::string_view name) const {
  const auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

namespace {
// What is wrong with the file `origin`, as parseSafetensors says it.
UsageError malformed(const std::string& origin, const std::string& what) {
  return UsageError(fmt::format("{}: {}", origin, what));
}

// The header's length, from the first bytes of a file of `size` bytes (at least 8 of them when it has them).
std::uint64_t headerLength(std::span<const std::uint8_t> start, std::uint64_t size, const std::string& origin) {
  auto bad = [&](const std::string& what) { return malformed(origin, what); };
  if (size < 8 || start.size() < 8) throw bad(fmt::format("{} bytes is too short for a safetensors file (truncated?)", size));
  std::uint64_t n;
  std::memcpy(&n, start.data(), 8);
  if (n > kMaxHeaderBytes) throw bad(fmt::format("header length {} is not plausible: not a safetensors file, or corrupt", n));
  if (n > size - 8) throw bad(fmt::format("header length {} runs past the end of the file ({} bytes): truncated?", n, size));
  return n;
}

// The JSON header (its `headerLength` bytes after the first 8).
nlohmann::json parseHeader(std::span<const std::uint8_t> text, const std::string& origin) {
  auto bad = [&](const std::string& what) { return malformed(origin, what); };
  const std::uint64_t n = text.size();
  if (n < 2 || text[0] != '{') throw bad("the header is not a JSON object: not a safetensors file, or corrupt");
  const auto* headerStart = reinterpret_cast<const char*>(text.data());
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(headerStart, headerStart + n);
  } catch (const nlohmann::json::parse_error& e) {
    throw bad(fmt::format("the header is not valid JSON (at byte {} of {}): corrupt", e.byte, n));
  } catch (const nlohmann::json::exception&) {  // out_of_range.406: a number no JSON type holds (found by fuzz/)
    throw bad("the header holds a number out of any range: corrupt");
  }
  if (!header.is_object()) throw bad("the header is not a JSON object");
  return header;
}

void readMetadata(const nlohmann::json& entry, SafetensorsContents& f, const std::string& origin) {
  if (!entry.is_object()) throw malformed(origin, "__metadata__ is not an object of strings");
  for (const auto& [k, v] : entry.items()) {
    if (!v.is_string()) throw malformed(origin, fmt::format("__metadata__ value of '{}' is not a string", k));
    f.metadata[k] = v.get<std::string>();
  }
}

// Where a tensor's bytes are in the data buffer: [begin, end).
struct Span {
  std::uint64_t begin, end;
  std::size_t tensor;
};

// The shape of t from its header entry, and its elements: counted without overflow, as any product past the buffer
// size is already wrong (tooBig: more elements than the buffer's bytes).
template <typename Bad>
std::uint64_t readShape(const nlohmann::json& shape, std::uint64_t buffer, TensorView& t, bool& tooBig, const Bad& badTensor) {
  if (!shape.is_array()) throw badTensor("\"shape\" is not an array");
  std::uint64_t elements = 1;
  tooBig = false;
  for (const auto& d : shape) {
    if (!d.is_number_unsigned()) throw badTensor("\"shape\" holds something other than non-negative integers");
    const std::uint64_t v = d.get<std::uint64_t>();
    if (v > static_cast<std::uint64_t>(INT64_MAX)) throw badTensor("a dimension is out of range");
    t.shape.push_back(static_cast<std::int64_t>(v));
    if (v != 0 && elements > buffer / v) tooBig = true;
    elements *= v;  // may wrap when tooBig; then only `tooBig` is used
  }
  return elements;
}

// A tensor's header entry, checked against the data buffer (buffer bytes); its data pointer is left null.
std::pair<TensorView, Span> readTensor(const std::string& name, const nlohmann::json& entry, std::uint64_t buffer,
                                       const std::string& origin) {
  auto badTensor = [&](const std::string& what) { return malformed(origin, fmt::format("tensor '{}': {}", name, what)); };
  if (!entry.is_object()) throw badTensor("its entry is not an object");
  for (const char* key : {"dtype", "shape", "data_offsets"})
    if (!entry.contains(key)) throw badTensor(fmt::format("no \"{}\"", key));
  if (!entry["dtype"].is_string()) throw badTensor("\"dtype\" is not a string");
  const std::string dtypeName = entry["dtype"].get<std::string>();
  const auto dtype = parseTensorDType(dtypeName);
  if (!dtype)
    throw badTensor(fmt::format("dtype \"{}\" is not one trainscope reads (F64, F32, F16, BF16, I64, I32, I8, U8)", dtypeName));
  TensorView t;
  t.name = name;
  t.dtype = *dtype;
  bool tooBig = false;
  const std::uint64_t elements = readShape(entry["shape"], buffer, t, tooBig, badTensor);
  const bool empty = std::find(t.shape.begin(), t.shape.end(), 0) != t.shape.end();
  const auto& off = entry["data_offsets"];
  if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() || !off[1].is_number_unsigned())
    throw badTensor("\"data_offsets\" is not a pair of non-negative integers");
  const std::uint64_t begin = off[0].get<std::uint64_t>(), end = off[1].get<std::uint64_t>();
  if (begin > end) throw badTensor(fmt::format("data_offsets [{}, {}] run backwards", begin, end));
  if (end > buffer)
    throw badTensor(fmt::format("data_offsets [{}, {}] run past the end of the data ({} bytes): truncated?", begin, end, buffer));
  const std::uint64_t size1 = tensorDTypeSize(*dtype);
  if ((tooBig && !empty) || (empty ? 0 : elements * size1) != end - begin)
    throw badTensor(fmt::format("shape {} of {} needs {} bytes but data_offsets [{}, {}] hold {}", shapeText(t.shape), dtypeName,
                                tooBig && !empty ? std::string("more than the file") : std::to_string(elements * size1), begin,
                                end, end - begin));
  return {std::move(t), Span{begin, end, 0}};
}

// f's tensors in the order of their bytes, which must be contiguous, in order, and cover the whole buffer: the
// official reader insists on it too. Returns where each starts in the buffer, in that order.
std::vector<std::uint64_t> orderTensors(SafetensorsContents& f, std::vector<Span>& spans, std::uint64_t buffer,
                                        const std::string& origin) {
  auto bad = [&](const std::string& what) { return malformed(origin, what); };
  std::sort(spans.begin(), spans.end(),
            [](const Span& a, const Span& b) { return a.begin != b.begin ? a.begin < b.begin : a.end < b.end; });
  std::uint64_t covered = 0;
  for (std::size_t i = 0; i < spans.size(); ++i) {
    const std::string& tensor = f.tensors[spans[i].tensor].name;
    if (spans[i].begin < covered)
      throw bad(fmt::format("tensor '{}' overlaps tensor '{}'", tensor, f.tensors[spans[i - 1].tensor].name));
    if (spans[i].begin > covered)
      throw bad(fmt::format("{} bytes before tensor '{}' belong to no tensor", spans[i].begin - covered, tensor));
    covered = spans[i].end;
  }
  if (covered != buffer)
    throw bad(fmt::format("the data is {} bytes but the tensors cover {}: {}", buffer, covered,
                          covered < buffer ? "trailing bytes belong to no tensor" : "truncated"));
  std::vector<TensorView> ordered;
  std::vector<std::uint64_t> begins;
  ordered.reserve(spans.size());
  begins.reserve(spans.size());
  for (const Span& s : spans) {
    ordered.push_back(std::move(f.tensors[s.tensor]));
    begins.push_back(s.begin);
  }
  f.tensors = std::move(ordered);
  return begins;
}

// What the header of a file of `size` bytes says: its tensors (data null) in file order, where each starts in the
// data buffer (which starts at dataStart), and the metadata; all checked against the file's size.
std::pair<SafetensorsContents, std::vector<std::uint64_t>> parseLayout(const nlohmann::json& header, std::uint64_t dataStart,
                                                                       std::uint64_t size, const std::string& origin) {
  SafetensorsContents f;
  const std::uint64_t buffer = size - dataStart;
  std::vector<Span> spans;
  for (const auto& item : header.items()) {
    if (item.key() == "__metadata__") {
      readMetadata(item.value(), f, origin);
      continue;
    }
    auto [tensor, span] = readTensor(item.key(), item.value(), buffer, origin);
    span.tensor = f.tensors.size();
    spans.push_back(span);
    f.tensors.push_back(std::move(tensor));
  }
  std::vector<std::uint64_t> begins = orderTensors(f, spans, buffer, origin);
  return {std::move(f), std::move(begins)};
}
}  // namespace

SafetensorsContents parseSafetensors(std::span<const std::uint8_t> bytes, const std::string& origin) {
  const std::uint64_t n = headerLength(bytes.first(std::min<std::size_t>(bytes.size(), 8)), bytes.size(), origin);
  const std::uint64_t dataStart = 8 + n;
  auto [f, begins] = parseLayout(parseHeader(bytes.subspan(8, n), origin), dataStart, bytes.size(), origin);
  for (std::size_t i = 0; i < f.tensors.size(); ++i) f.tensors[i].data = bytes.data() + dataStart + begins[i];
  return std::move(f);
}

SafetensorsReader::SafetensorsReader(InputFile file) : file_(std::move(file)) {
  const std::string& origin = file_.path();
  std::uint8_t start[8] = {};
  if (file_.size() >= 8) file_.readAt(0, start, 8);
  const std::uint64_t n = headerLength({start, file_.size() >= 8 ? 8u : 0u}, file_.size(), origin);
  std::vector<std::uint8_t> text(static_cast<std::size_t>(n));
  file_.readAt(8, text.data(), text.size());
  dataStart_ = 8 + n;
  auto [f, begins] = parseLayout(parseHeader(text, origin), dataStart_, file_.size(), origin);
  tensors_ = std::move(f.tensors);
  begins_ = std::move(begins);
  for (std::size_t i = 0; i < tensors_.size(); ++i) index_[tensors_[i].name] = i;
}

const TensorView* SafetensorsReader::find(std::string_view name) const {
  const auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

void SafetensorsReader::read(const TensorView& t, void* into) const {
  const auto at = static_cast<std::size_t>(&t - tensors_.data());
  if (at >= tensors_.size())
    throw Error(fmt::format("{}: internal: tensor '{}' is not one of this file's", file_.path(), t.name));
  file_.readAt(dataStart_ + begins_[at], into, t.bytes());
}

SafetensorsFile SafetensorsFile::open(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw UsageError(fmt::format("{} does not exist", path));
  return read(InputFile("", path, kMaxSafetensorsBytes));
}

SafetensorsFile SafetensorsFile::read(const InputFile& file) {
  SafetensorsFile f{file.path(), file.readBytes()};
  SafetensorsContents contents = parseSafetensors(f.fileBytes(), f.path_);
  f.tensors_ = std::move(contents.tensors);
  f.metadata_ = std::move(contents.metadata);
  for (std::size_t i = 0; i < f.tensors_.size(); ++i) f.index_[f.tensors_[i].name] = i;
  return f;
}

void SafetensorsFile::restore(std::span<const MutableTensorView> into) const {
  std::vector<std::string> missing, unexpected;
  std::set<std::string_view> wanted;
  for (const auto& t : into) {
    wanted.insert(t.name);
    if (!find(t.name)) missing.push_back(t.name);
  }
  for (const auto& t : tensors_)
    if (!wanted.count(t.name)) unexpected.push_back(t.name);
  if (!missing.empty() || !unexpected.empty()) {
    // One line however many differ: the first few names, then a count.
    auto list = [](const std::vector<std::string>& names) {
      constexpr std::size_t kShown = 4;
      std::vector<std::string> shown(names.begin(), names.begin() + static_cast<std::ptrdiff_t>(std::min(names.size(), kShown)));
      std::string s = fmt::format("{}", fmt::join(shown, ", "));
      if (names.size() > kShown) s += fmt::format(" and {} more", names.size() - kShown);
      return s;
    };
    std::string what;
    if (!missing.empty()) what += fmt::format("has no {}", list(missing));
    if (!unexpected.empty())
      what += fmt::format("{}has {} that nothing here expects", what.empty() ? "" : "; ", list(unexpected));
    throw UsageError(fmt::format("{} does not match: it {}", path(), what));
  }
  for (const auto& t : into) {
    const TensorView& have = *find(t.name);
    if (have.dtype != t.dtype || have.shape != t.shape)
      throw UsageError(fmt::format("{}: tensor '{}' is {} {} but {} {} is expected", path(), t.name, tensorDTypeName(have.dtype),
                                   shapeText(have.shape), tensorDTypeName(t.dtype), shapeText(t.shape)));
  }
  for (const auto& t : into) {
    const TensorView& have = *find(t.name);
    if (have.bytes() > 0) std::memcpy(t.data, have.data, have.bytes());
  }
}

}  // namespace ts::ckpt
