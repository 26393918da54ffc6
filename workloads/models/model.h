#pragma once
// A model: layers built for one micro-batch size, a loss, its parameters, and its cost written down
// (parameter count, FLOPs per step, analytic, beside each model). Three kinds: mlp, cnn, transformer,
// each with named presets (models/presets.cpp) whose every field can be overridden.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/enum_names.h"
#include "base/precision.h"
#include "workloads/data/batch.h"
#include "workloads/data/dataset.h"
#include "workloads/layers/activation.h"
#include "workloads/layers/cross_entropy.h"
#include "workloads/layers/layer.h"
#include "workloads/layers/moe.h"
#include "workloads/layers/recompute.h"

namespace ts::wl {

enum class ModelKind { kMlp, kCnn, kTransformer };
// What a model's throughput counts: samples (classification) or tokens (language model; its loss has a perplexity).
enum class ItemKind { kSamples, kTokens };
// The cnn's stem: cifar (a 3x3 convolution) or imagenet (7x7 stride 2, then a 3x3 stride-2 max pool).
enum class CnnStem { kCifar, kImagenet };
// The cnn's activations layout (--set layout): auto is nhwc on the CPU with oneDNN, else nchw.
enum class ImageLayoutChoice { kAuto, kNchw, kNhwc };

}  // namespace ts::wl

namespace ts {
template <>
struct EnumNames<wl::ItemKind> {
  static constexpr std::pair<std::string_view, wl::ItemKind> kNames[] = {{"samples", wl::ItemKind::kSamples},
                                                                         {"tokens", wl::ItemKind::kTokens}};
};
template <>
struct EnumNames<wl::CnnStem> {
  static constexpr std::pair<std::string_view, wl::CnnStem> kNames[] = {{"cifar", wl::CnnStem::kCifar},
                                                                        {"imagenet", wl::CnnStem::kImagenet}};
};
template <>
struct EnumNames<wl::ImageLayoutChoice> {
  static constexpr std::pair<std::string_view, wl::ImageLayoutChoice> kNames[] = {
      {"auto", wl::ImageLayoutChoice::kAuto}, {"nchw", wl::ImageLayoutChoice::kNchw}, {"nhwc", wl::ImageLayoutChoice::kNhwc}};
};
}  // namespace ts

namespace ts::wl {

// Which layers' activation buffers a model builds. A pipeline rank builds its stage's layers [from, to), the
// embedding in front when from is 0 and the loss behind when `tail`; every other layer is built too (its shapes,
// FLOPs and deferred parameters are the cut's inputs) but takes its buffers from scratch that the others share,
// and is never run. The probe that measures the shapes crossing the cuts (pipeline.h) is all scratch, in two
// sets that the layers alternate between, enough for one forward. Default: every layer's own.
struct BuiltLayers {
  std::size_t from = 0, to = SIZE_MAX;
  bool tail = true;
  // The probe's forward runs through the scratch layers: consecutive ones alternate between two sets. A stage's
  // scratch layers never run: one set, each layer reusing it.
  bool runsScratch = false;
  static BuiltLayers none() { return {SIZE_MAX, SIZE_MAX, false, true}; }  // the probe's: every buffer scratch
  bool builds(std::size_t layer) const { return layer >= from && layer < to; }
};

// A model's resolved configuration: the preset's fields with the overrides applied and, where the data
// decides them (input shape, classes, vocabulary), the data's values.
struct ModelConfig {
  ModelKind kind = ModelKind::kMlp;
  std::string preset;  // tiny | small | ...
  // mlp
  std::int64_t depth = 0, width = 0;
  ActivationKind activation = ActivationKind::kRelu;
  // cnn: stage widths and residual blocks per stage, and the stem
  std::vector<std::int64_t> widths, blocks;
  CnnStem stem = CnnStem::kCifar;
  // The activations' layout (nhwc: the CPU's only). Speed only: the same function, so not part of the model's
  // identity (toJson, --resume).
  ImageLayoutChoice layout = ImageLayoutChoice::kAuto;
  // transformer
  std::int64_t layers = 0, hidden = 0, heads = 0, seqLen = 0, vocab = 0;
  // A mixture of experts in every block's MLP (layers/moe.h; experts 0: dense). experts and top_k are the model's
  // (presets, --set); the capacity factor, the auxiliary loss's coefficient and the test hook's skew are training
  // options (--capacity-factor, --aux-loss-coef, TRAINSCOPE_FAULT=router), not part of the model's identity.
  MoeSettings moe;
  // inputs and outputs (from the data for mlp/cnn)
  std::vector<std::int64_t> inputShape;  // per sample
  std::int64_t classes = 0;
  std::uint64_t seed = 0;  // parameter initialisation (and dropout's masks)
  // Dropout's drop probability (0: no dropout layers): after each hidden activation (mlp), before the head
  // (cnn), on the embeddings and on each block's attention and MLP outputs before their residual sums
  // (transformer, as GPT-2's embd_pdrop and resid_pdrop; no dropout on the attention probabilities). A
  // training option, not part of the model's identity (toJson, --resume).
  double dropout = 0;
  // --recompute (layers/recompute.h): what the backward computes again instead of keeping. A training option: the
  // same function (the losses bit-equal), so not part of the model's identity (toJson, --resume).
  Recompute recompute = Recompute::kNone;
  // Which layers' activations are built (a pipeline stage's): a build option, not part of the identity.
  BuiltLayers built;

  nlohmann::json toJson() const;
};

// The preset of a kind (UsageError naming the known ones), and the fields `--set`-style overrides may name.
ModelConfig modelPreset(ModelKind kind, const std::string& preset);
std::vector<std::string> modelPresetNames(ModelKind kind);
// Applies "key=value" overrides (depth=4, widths=16,32,64, heads=8, ...): UsageError for an unknown key or
// a bad value.
void applyModelOverride(ModelConfig& config, const std::string& assignment);
// Checks the config against itself and the data (heads dividing hidden, image size for the CNN, ...).
void validateModelConfig(const ModelConfig& config, const data::DataInfo& data);

// The most a shape field may be (an override beyond it is a UsageError, "--set layers=2147483648: out of range (at
// most 4096)"): far past any model trained here, and small enough that every product of the size formulas fits 64 bits.
inline constexpr std::int64_t kMaxModelLayers = 4096;    // mlp depth, transformer layers, a cnn stage's blocks
inline constexpr std::int64_t kMaxModelWidth = 1 << 20;  // mlp width, transformer hidden, heads and seq_len, cnn widths
inline constexpr std::int64_t kMaxModelVocab = 1 << 24;  // transformer vocab
inline constexpr std::int64_t kMaxModelStages = 16;      // cnn stages (entries of widths and blocks)
inline constexpr std::int64_t kMaxModelExperts = 4096;   // a transformer's experts per block
// The parameters of `config` (inputShape and classes set for mlp and cnn) by the formulas beside each model, from the
// config alone, every product checked: nullopt past 2^64. Nothing is allocated to find a model too large. A mixture's
// experts are those the config's expert-parallel rank holds (MoeSettings::ep: all of them unless placed).
std::optional<std::uint64_t> modelParameterCount(const ModelConfig& config);
// Of that count, a mixture's experts' (0 for a model without): those the config's expert-parallel rank holds.
std::optional<std::uint64_t> modelExpertParameterCount(const ModelConfig& config);
// How many ranks share a rank's parameter values and their gradients (a lower bound on each one's part: what is
// replicated is not divided, nor are a pipeline's stages even), and how the layout shares them, for the line.
struct ModelShare {
  std::uint64_t valueShards = 1, gradientShards = 1;
  std::string by;  // "--tp 2 --pp 4 --zero 3 over 4 replicas"; empty: one rank holds it all
  // The same of a mixture's experts (modelExpertParameterCount), which a layout divides otherwise: the
  // expert-parallel ranks split them, tensor parallelism does not, ZeRO shards them over their own copies.
  std::uint64_t expertValueShards = 1, expertGradientShards = 1;
};
// UsageError, one line, when a rank's share of the model's parameters and their gradients (4 bytes each, allocated as
// it is built) needs more than `availableBytes` (0: no bound); `whose` names what that is ("this host's memory").
void checkModelFits(const ModelConfig& config, std::uint64_t availableBytes, std::string_view whose,
                    const ModelShare& share = {});

class Model {
 public:
  virtual ~Model() = default;
  // Forward on one micro-batch (its size must be the one the model was built for) and the mean loss:
  // embed, every layer, the loss.
  double forward(const data::Batch& batch, StepContext& ctx);
  // Accumulates d(scale * loss)/dθ of the last forward into the parameters' gradients.
  void backward(float scale, StepContext& ctx);
  const Tensor& logits() const { return *logits_; }
  // Matmul and convolution FLOPs of one forward of one micro-batch; a training step costs 3x (the
  // backward computes two products per forward product), the convention MFU is quoted in.
  double forwardFlops() const;
  // Of those, the FLOPs the backward computes again (--recompute; 0 without): hardware FLOPs beside the model's.
  double recomputedFlops() const;
  // Samples (classification) or tokens (language model) per micro-batch: the unit of throughput.
  virtual std::int64_t itemsPerMicroBatch() const = 0;
  virtual ItemKind itemKind() const = 0;
  std::string itemName() const { return std::string(nameOf(itemKind())); }  // for the console and the record
  // The layout of the image activations (the CNN's); none for the others.
  virtual std::optional<ConvLayout> imageLayout() const { return std::nullopt; }
  // What each mixture-of-experts layer this process ran counted (layers/moe.h), in layer order; none in a dense model.
  virtual std::vector<MoeLayerStats> moeStats() const { return {}; }

  // The same pass in pieces, for pipeline stages: embed (the batch to layer 0's input: features uploaded,
  // or token + position embeddings), layers [from, to), the loss on the last layer's output; and back.
  virtual const Tensor& embed(const data::Batch& batch, StepContext& ctx) = 0;
  virtual void embedBackward(const Tensor& dx, StepContext& ctx) = 0;
  const Tensor& forwardLayers(const Tensor& x, StepContext& ctx, std::size_t from, std::size_t to);
  const Tensor& backwardLayers(const Tensor& dy, StepContext& ctx, std::size_t from, std::size_t to);
  double lossForward(const Tensor& logits, const data::Batch& batch);
  const Tensor& lossBackward(float scale);
  std::size_t layerCount() const { return layers_.size(); }

  const ModelConfig& config() const { return config_; }
  std::vector<Param*> params();
  std::vector<Layer*> layers();                                          // in forward order
  const std::vector<Param*>& leadingParams() const { return leading_; }  // used outside the layers (embeddings)
  std::vector<NamedTensor> buffers();
  std::int64_t parameterCount();
  Arena& arena() { return arena_; }
  // The scratch buffers the layers outside config().built share (0 when every layer is built).
  std::size_t scratchActivationBytes() const;
  void zeroGrads();
  // bfloat16/float16: round the activations and activation gradients passed between layers (see
  // mixed_precision.h); float32 (the default): nothing.
  void setComputePrecision(Precision p) { compute_ = p; }
  Precision computePrecision() const { return compute_; }

 protected:
  // The parameters are deferred while the layers are built (makeModel materialises them unless asked not to).
  Model(ModelConfig config, Device& device);
  ModelConfig config_;
  Arena arena_;
  std::vector<std::unique_ptr<Layer>> layers_;  // in forward order
  std::vector<Param*> leading_;                 // parameters outside the layers (embeddings), listed first
  std::unique_ptr<CrossEntropy> loss_;          // over the last layer's output: rows x classes
  const Tensor* logits_ = nullptr;
  Precision compute_ = Precision::kFloat32;

  // Appends a layer: every layer goes through here, so that the next one is built into its own buffers or into
  // scratch ones (config_.built). beginTail() before what follows the layers (the loss).
  void add(std::unique_ptr<Layer> layer);
  void beginTail();
  // --recompute full: the layers `build` makes, built inside the shared buffers' scope, appended as one unit
  // (recompute.h). selective: the pool of the attention probabilities (made on first use).
  void addRecomputedUnit(const RecomputedUnit& unit, const std::function<std::vector<std::unique_ptr<Layer>>()>& build);
  // A unit of one layer (a transformer block, a basic block).
  void addRecomputedUnit(const RecomputedUnit& unit, const std::function<std::unique_ptr<Layer>()>& build);
  ActivationPool* scorePool();

 private:
  void scopeFor(bool builds);  // the buffers of what is built next: its own (builds) or scratch
  bool scratch() const;        // whether what is built now takes scratch buffers
  std::unique_ptr<RecomputePools> recomputePools_;
  std::unique_ptr<ActivationPool> scorePool_;
  std::unique_ptr<ActivationPool> scratch_[2];  // BuiltLayers: the two sets the layers of other stages alternate between
  int scratchSide_ = 0;
};

// This rank's place in a tensor-parallel group (Megatron's split; see each model's file for what it splits).
struct TensorParallel {
  int rank = 0, ranks = 1;
  TensorSplit column() const { return {TensorSplit::kColumn, rank, ranks, {}}; }
  TensorSplit row() const { return {TensorSplit::kRow, rank, ranks, {}}; }
};

// Whether a model is built with its parameters' memory (values drawn, gradients zero), or deferred: shapes and
// initialisations only, for a layout to materialise the part it keeps (param_init.h).
enum class ParamStorage { kMaterialized, kDeferred };

// Builds a model for micro-batches of `batch` samples (sequences for the transformer). The model's memory
// and ops are on `device`; with tp.ranks > 1 it holds this rank's slices (UsageError when a dimension
// does not divide by the group: heads, widths, channels).
std::unique_ptr<Model> makeModel(const ModelConfig& config, std::int64_t batch, Device& device = Device::hostCpu(),
                                 TensorParallel tp = {}, ParamStorage storage = ParamStorage::kMaterialized);

std::unique_ptr<Model> makeMlp(const ModelConfig& config, std::int64_t batch, Device& device, TensorParallel tp);
std::unique_ptr<Model> makeCnn(const ModelConfig& config, std::int64_t batch, Device& device, TensorParallel tp);
std::unique_ptr<Model> makeTransformer(const ModelConfig& config, std::int64_t batch, Device& device, TensorParallel tp);

}  // namespace ts::wl

namespace ts {
template <>
struct EnumNames<wl::ModelKind> {
  static constexpr std::pair<std::string_view, wl::ModelKind> kNames[] = {
      {"mlp", wl::ModelKind::kMlp}, {"cnn", wl::ModelKind::kCnn}, {"transformer", wl::ModelKind::kTransformer}};
};
}  // namespace ts
