// The named presets of each model kind, the key=value overrides, and the checks of a configuration
// against itself and the data. Presets are fixed so that runs compare across machines.
#include <charconv>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/error.h"
#include "workloads/models/model.h"

namespace ts::wl {
namespace {

struct Preset {
  ModelKind kind;
  const char* name;
  ModelConfig config;
};

ModelConfig mlp(std::int64_t depth, std::int64_t width) {
  ModelConfig c;
  c.depth = depth;
  c.width = width;
  return c;
}
ModelConfig cnn(std::vector<std::int64_t> widths, std::vector<std::int64_t> blocks, CnnStem stem) {
  ModelConfig c;
  c.widths = std::move(widths);
  c.blocks = std::move(blocks);
  c.stem = stem;
  return c;
}
ModelConfig gpt(std::int64_t layers, std::int64_t hidden, std::int64_t heads, std::int64_t seq, std::int64_t vocab) {
  ModelConfig c;
  c.layers = layers;
  c.hidden = hidden;
  c.heads = heads;
  c.seqLen = seq;
  c.vocab = vocab;
  return c;
}

// A GPT whose every block's MLP is a mixture of `experts` MLPs, each token routed to top_k of them.
ModelConfig moe(ModelConfig c, std::int64_t experts, std::int64_t topK) {
  c.moe.experts = experts;
  c.moe.topK = topK;
  return c;
}

const std::vector<Preset>& presets() {
  static const std::vector<Preset> all = {
      {ModelKind::kMlp, "tiny", mlp(2, 64)},
      {ModelKind::kMlp, "small", mlp(4, 512)},
      {ModelKind::kMlp, "base", mlp(8, 2048)},
      {ModelKind::kMlp, "deep", mlp(32, 1024)},  // as many parameters as base in 33 small layers: model states dominate
      {ModelKind::kCnn, "tiny", cnn({16, 32, 64}, {1, 1, 1}, CnnStem::kCifar)},      // a 8-layer CIFAR ResNet
      {ModelKind::kCnn, "resnet20", cnn({16, 32, 64}, {3, 3, 3}, CnnStem::kCifar)},  // He et al.'s CIFAR ResNet-20
      {ModelKind::kCnn, "resnet18", cnn({64, 128, 256, 512}, {2, 2, 2, 2}, CnnStem::kImagenet)},
      {ModelKind::kCnn, "resnet34", cnn({64, 128, 256, 512}, {3, 4, 6, 3}, CnnStem::kImagenet)},
      {ModelKind::kTransformer, "tiny", gpt(2, 64, 4, 32, 256)},
      {ModelKind::kTransformer, "small", gpt(6, 384, 6, 256, 256)},      // byte-level, llm.c's shakespeare size
      {ModelKind::kTransformer, "gpt2", gpt(12, 768, 12, 1024, 50304)},  // GPT-2 small (vocabulary padded to 64)
      {ModelKind::kTransformer, "gpt2-medium", gpt(24, 1024, 16, 1024, 50304)},
      {ModelKind::kTransformer, "moe-tiny", moe(gpt(2, 64, 4, 32, 256), 4, 2)},  // tiny's blocks, 4 experts, top-2 (Mixtral's k)
      {ModelKind::kTransformer, "moe-small", moe(gpt(6, 384, 6, 256, 256), 8, 2)},  // small's blocks, 8 experts, top-2
  };
  return all;
}

std::int64_t parseInt(const std::string& key, const std::string& v) {
  std::int64_t out = 0;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (ec != std::errc() || end != v.data() + v.size())
    throw UsageError(fmt::format("--set {}={}: '{}' is not an integer", key, v, v));
  return out;
}

// A shape value, held to its field's maximum before anything is built from it (model.h: kMaxModelLayers, ...).
std::int64_t parseShape(const std::string& key, const std::string& v, std::int64_t most) {
  const std::int64_t n = parseInt(key, v);
  if (n > most) throw UsageError(fmt::format("--set {}={}: out of range (at most {})", key, v, most));
  return n;
}

std::vector<std::int64_t> parseList(const std::string& key, const std::string& v, std::int64_t most) {
  std::vector<std::int64_t> out;
  std::stringstream in(v);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (static_cast<std::int64_t>(out.size()) == kMaxModelStages)
      throw UsageError(fmt::format("--set {}={}: more than {} stages", key, v, kMaxModelStages));
    const std::int64_t n = parseInt(key, item);
    if (n > most) throw UsageError(fmt::format("--set {}={}: out of range (at most {} each)", key, v, most));
    out.push_back(n);
  }
  if (out.empty()) throw UsageError(fmt::format("--set {}=: an empty list", key));
  return out;
}

// A closed choice of the model (activation, stem, layout), refused where it is set, in the words of the check it replaced.
template <NamedEnum E>
E choice(const ModelConfig& c, const std::string& key, const std::string& v) {
  if (const auto e = enumFromName<E>(v)) return *e;
  throw UsageError(fmt::format("{}: {} '{}' is not {}", nameOf(c.kind), key, v, enumNameList<E>()));
}

}  // namespace

std::vector<std::string> modelPresetNames(ModelKind kind) {
  std::vector<std::string> names;
  for (const auto& p : presets())
    if (kind == p.kind) names.push_back(p.name);
  return names;
}

ModelConfig modelPreset(ModelKind kind, const std::string& preset) {
  for (const auto& p : presets())
    if (kind == p.kind && preset == p.name) {
      ModelConfig c = p.config;
      c.kind = kind;
      c.preset = preset;
      return c;
    }
  throw UsageError(
      fmt::format("--preset: unknown {} preset '{}' ({})", nameOf(kind), preset, fmt::join(modelPresetNames(kind), ", ")));
}

void applyModelOverride(ModelConfig& c, const std::string& assignment) {
  const auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) throw UsageError(fmt::format("--set '{}': expected key=value", assignment));
  const std::string key = assignment.substr(0, eq), v = assignment.substr(eq + 1);
  const bool mlpKey = key == "depth" || key == "width" || key == "activation";
  const bool cnnKey = key == "widths" || key == "blocks" || key == "stem" || key == "layout";
  const bool gptKey = key == "layers" || key == "hidden" || key == "heads" || key == "seq_len" || key == "vocab" ||
                      key == "experts" || key == "top_k";
  if ((mlpKey && c.kind != ModelKind::kMlp) || (cnnKey && c.kind != ModelKind::kCnn) ||
      (gptKey && c.kind != ModelKind::kTransformer) || (!mlpKey && !cnnKey && !gptKey))
    throw UsageError(
        fmt::format("--set {}: not a field of the {} model (mlp: depth, width, activation; cnn: widths, blocks, stem, layout; "
                    "transformer: layers, hidden, heads, seq_len, vocab, experts, top_k)",
                    key, nameOf(c.kind)));
  if (key == "depth")
    c.depth = parseShape(key, v, kMaxModelLayers);
  else if (key == "width")
    c.width = parseShape(key, v, kMaxModelWidth);
  else if (key == "activation")
    c.activation = choice<ActivationKind>(c, key, v);
  else if (key == "widths")
    c.widths = parseList(key, v, kMaxModelWidth);
  else if (key == "blocks")
    c.blocks = parseList(key, v, kMaxModelLayers);
  else if (key == "stem")
    c.stem = choice<CnnStem>(c, key, v);
  else if (key == "layout")
    c.layout = choice<ImageLayoutChoice>(c, key, v);
  else if (key == "layers")
    c.layers = parseShape(key, v, kMaxModelLayers);
  else if (key == "hidden")
    c.hidden = parseShape(key, v, kMaxModelWidth);
  else if (key == "heads")
    c.heads = parseShape(key, v, kMaxModelWidth);
  else if (key == "seq_len")
    c.seqLen = parseShape(key, v, kMaxModelWidth);
  else if (key == "vocab")
    c.vocab = parseShape(key, v, kMaxModelVocab);
  else if (key == "experts")
    c.moe.experts = parseShape(key, v, kMaxModelExperts);
  else if (key == "top_k")
    c.moe.topK = parseShape(key, v, 2);
}

void validateModelConfig(const ModelConfig& c, const data::DataInfo& d) {
  auto need = [](bool ok, const std::string& why) {
    if (!ok) throw UsageError(why);
  };
  switch (c.kind) {
    case ModelKind::kMlp:
      need(c.depth >= 0 && c.width >= 1, fmt::format("mlp: depth {} and width {} must be >= 0 and >= 1", c.depth, c.width));
      need(d.task == data::Task::kClassification, fmt::format("mlp: the data '{}' is not a classification set", d.name));
      break;
    case ModelKind::kCnn: {
      need(!c.widths.empty() && c.widths.size() == c.blocks.size(),
           fmt::format("cnn: {} stage widths but {} block counts: give one of each per stage", c.widths.size(), c.blocks.size()));
      for (std::size_t i = 0; i < c.widths.size(); ++i)
        need(c.widths[i] >= 1 && c.blocks[i] >= 1, "cnn: every stage needs a width >= 1 and at least 1 block");
      need(d.task == data::Task::kClassification && d.sampleShape.size() == 3,
           fmt::format("cnn: the data '{}' does not have images [C, H, W] (sample shape of {} dimensions)", d.name,
                       d.sampleShape.size()));
      const std::int64_t minSide = (c.stem == CnnStem::kImagenet ? 4 : 1) << (c.widths.size() - 1);
      need(d.sampleShape[1] >= minSide && d.sampleShape[2] >= minSide,
           fmt::format("cnn: {}x{} images are too small for {} stages (at least {}x{})", d.sampleShape[1], d.sampleShape[2],
                       c.widths.size(), minSide, minSide));
      break;
    }
    case ModelKind::kTransformer:
      need(c.layers >= 1 && c.hidden >= 1 && c.heads >= 1 && c.seqLen >= 1 && c.vocab >= 2,
           "transformer: layers, hidden, heads, seq_len >= 1 and vocab >= 2");
      need(c.hidden % c.heads == 0, fmt::format("transformer: {} heads do not divide the hidden size {}", c.heads, c.hidden));
      need(c.moe.experts >= 0, fmt::format("transformer: experts {}: 0 (a dense MLP) or more", c.moe.experts));
      need(c.moe.enabled() || c.moe.topK == 1,
           fmt::format("transformer: top_k {} without experts (--set experts=E routes each token to top_k of E)", c.moe.topK));
      need(!c.moe.enabled() || (c.moe.topK >= 1 && c.moe.topK <= 2 && c.moe.topK <= c.moe.experts),
           fmt::format("transformer: top_k {} with {} experts: 1 or 2, and at most the experts", c.moe.topK, c.moe.experts));
      need(d.task == data::Task::kLanguageModel,
           fmt::format("transformer: the data '{}' is not a token stream (use synthetic or text:FILE)", d.name));
      need(d.vocab <= c.vocab,
           fmt::format("transformer: the data has {} tokens but the model's vocabulary is {}", d.vocab, c.vocab));
      break;
  }
}

}  // namespace ts::wl
