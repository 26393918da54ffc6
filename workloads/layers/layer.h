#pragma once
// A layer: forward on a batch it was built for, backward that returns the input gradient and accumulates
// its parameters' gradients, the parameters it owns, and its forward FLOPs. The models are lists of
// layers so that the parallel layouts can cut them into pipeline stages, split a layer across ranks
// (tensor parallel), and hand each parameter's gradient out the moment it is final (overlapped data
// parallel: StepContext::gradReady).
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "comm/collectives/exchange_matrix.h"
#include "kernels/cpu/cpu_ops.h"
#include "workloads/tensor.h"

namespace ts::wl {

// Which part of a one-device tensor a tensor-parallel rank holds: the tensor (of `shape`) seen as a
// [fullRows, fullCols] matrix, its `rows` (all when empty; in the order held) and columns [colFrom, colTo).
// Init draws a slice's values from the one-device tensor's, and checkpoints put the slice back in place,
// so a checkpoint written with one --tp loads with another.
struct TensorSlice {
  std::vector<std::int64_t> shape;  // the one-device tensor's; empty: the tensor is whole (not sliced)
  std::int64_t fullRows = 0, fullCols = 0;
  std::vector<std::int64_t> rows;
  std::int64_t colFrom = 0, colTo = 0;
  bool sliced() const { return !shape.empty(); }
};

// FNV-1a of a parameter's or layer's name: its part of a seed (initial weights, dropout masks), the same in every
// process and with every standard library.
std::uint64_t nameHash(const std::string& s);

// The shape an image tensor [n, c, h, w] is stored in: [n, h, w, c] when channels-last (the CNN's layers
// take the layout they were built with and allocate in it, so a tensor's shape is its memory order).
std::vector<std::int64_t> imageShape(std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w, ConvLayout layout);

// How a parameter's initial values are drawn. Normal and uniform values come from the one-device tensor's own
// stream (mt19937_64 seeded by seed ^ nameHash(name)), its element i being the one-device tensor's element i
// (normal: Box-Muller pairs, elements 2k and 2k+1 from one pair), so any part of it (a tensor-parallel slice, a
// ZeRO-3 chunk) is drawn alone with the values the whole tensor has (param_init.h).
enum class InitKind { kZeros, kConstant, kNormal, kUniform };
struct ParamInit {
  InitKind kind = InitKind::kZeros;
  std::uint64_t seed = 0;
  double scale = 0;  // the constant, the normal's standard deviation, the uniform's bound
};

struct Param {
  std::string name;  // "blocks.0.attn.qkv.weight": the name in checkpoints (PyTorch's naming style)
  // The shape is set from the start; the memory only once a layout materialises what it keeps (param_init.h):
  // a model built with deferred parameters holds none.
  Tensor value, grad;
  ParamInit init;     // how value starts (over `slice` of the one-device tensor when sliced)
  bool decay = true;  // weight decay applies (weights), not to biases and normalisation gains
  TensorSlice slice;  // tensor parallel: the part of the one-device tensor this rank holds
  // A sharded layout's piece of a parameter (ZeRO, the parameter server's chunks): the parameter's name and
  // the piece's first element in it (in this rank's slice, row-major). Empty for a parameter itself.
  std::string pieceOf;
  std::int64_t pieceOffset = 0;
  // Tensor parallel: this rank holds a slice; the tensor-parallel ranks' slices make the tensor.
  bool tpShard() const { return slice.sliced(); }
  // A mixture's expert (moe.h): under expert parallelism one expert-parallel rank holds it, its copies are the
  // expert-data-parallel group's (kExpertReplicaAxes), not every replica's.
  bool expert = false;
};

// State that is not trained but belongs in a checkpoint (BatchNorm's running statistics).
struct NamedTensor {
  std::string name;
  Tensor* tensor;
  TensorSlice slice = {};  // tensor parallel: as Param::slice
};

class Layer;

// Expert parallelism's communication over the expert-parallel group (workloads/parallel/expert_parallel.h), which a
// mixture of experts asks for through StepContext::experts: its ranks call each in the same order.
class ExpertExchange {
 public:
  virtual ~ExpertExchange() = default;
  virtual int rank() const = 0;
  virtual int ranks() const = 0;
  // Every rank's `mine` (as many values on each), concatenated in rank order: an all-gather.
  virtual std::vector<std::int64_t> gather(const std::vector<std::int64_t>& mine) = 0;
  // Rows of rowElems floats moved as `m` says (rows, not elements: an alltoallv of count rowElems): this rank's rows
  // to ranks 0..n-1 packed in `send`, its rows from ranks 0..n-1 packed into `recv` (exchange_matrix.h). `what`
  // names the exchange in the step's collectives ("h.0.moe dispatch").
  virtual void exchange(const std::string& what, const float* send, float* recv, const ExchangeMatrix& m,
                        std::size_t rowElems) = 0;
};

// What one forward/backward pass is part of.
struct StepContext {
  bool training = true;
  // Evaluation (model.eval()): batch norm normalises with its running statistics, and nothing is kept for a
  // backward. (training = false alone, the finite-difference probes', keeps batch statistics.)
  bool evaluating = false;
  // Called once per parameter when its gradient for this backward is complete.
  std::function<void(Param&)> gradReady;
  void ready(Param& p) {
    if (gradReady) gradReady(p);
  }
  // Around each of the model's layers, when set (ZeRO-3 gathers a layer's parameters before it runs and
  // releases them after).
  std::function<void(Layer&)> beforeForward, afterForward, beforeBackward, afterBackward;
  // Tensor parallel: sums t over the tensor-parallel group, in place (unset: one rank, nothing to do).
  std::function<void(const Tensor&)> tpSum;
  void sumOverTensorParallel(const Tensor& t) {
    if (tpSum) tpSum(t);
  }
  // SyncBatchNorm: adds batch norm's float64 statistics over the data-parallel group, in place (unset: each
  // rank normalises its own batch). The type is cpu::ReplicaSum's.
  std::function<void(double* values, std::size_t n)> bnSum;
  // Expert parallel: the exchanges of tokens between the ranks that hold different experts (null: one rank).
  ExpertExchange* experts = nullptr;
  // The micro-batch being run: its training step and its first row's place in the run's sample order
  // (data::Batch::firstPosition), which key dropout's masks (cpu::DropoutKeys).
  std::int64_t step = 0, firstSample = 0;
  // The factor on the loss whose gradient this backward carries (Model::backward's `scale`: 1 / micro-batches, a
  // loss scale): a layer that adds a loss of its own (the MoE's auxiliary loss) scales that loss's gradient by it.
  float lossScale = 1;
};

// Which part of a layer's weights this rank holds (Megatron's tensor parallelism). A column-parallel
// layer holds some of the output features (its output is a slice; the input gradient is a partial sum);
// a row-parallel one holds a slice of the input features (its output is a partial sum, summed over the
// group before the bias). A column layer followed by a row layer needs one sum each way.
struct TensorSplit {
  enum Kind { kNone, kColumn, kRow } kind = kNone;
  int rank = 0, ranks = 1;
  std::vector<std::int64_t> rows;  // column: the output features held (empty: the rank's contiguous block)
  bool split() const { return kind != kNone && ranks > 1; }
};

// The collectives over a group a layer's forward asks for, and its backward's, in the order it asks: what a plan of
// the step (train --plan) counts without running it. Sums over the tensor-parallel group (StepContext::tpSum, of
// `values` float elements) or, under SyncBatchNorm, over the data-parallel one (StepContext::bnSum, of float64 values);
// and a mixture of experts' exchanges over the expert-parallel group (StepContext::experts): the all-gather of the
// `values` float64 counts each rank routes (kExpertCounts), and an alltoallv of `values` floats between every pair of
// ranks (kExpertExchange: the exchange as balanced routing makes it, routing being the data's: moe.h).
enum class SumGroup { kTensorParallel, kBatchNorm, kExpertCounts, kExpertExchange };
struct GroupSum {
  SumGroup group;
  std::size_t values;
};
struct LayerSums {
  std::vector<GroupSum> forward, backward;
};

class Layer {
 public:
  virtual ~Layer() = default;
  // The output (owned by the layer, valid until its next forward). x must stay valid until backward.
  virtual const Tensor& forward(const Tensor& x, StepContext& ctx) = 0;
  // The gradient of the input (owned by the layer, overwritten each call); parameter gradients are
  // accumulated (+=) so micro-batches sum.
  virtual const Tensor& backward(const Tensor& dy, StepContext& ctx) = 0;
  virtual void params(std::vector<Param*>&) {}
  virtual void buffers(std::vector<NamedTensor>&) {}
  // Matmul/conv FLOPs of one forward at the built batch, counted two ways. forwardFlops() is the whole layer's
  // whatever slice of it this rank holds: the model's FLOPs, as Megatron counts them for MFU and throughput (a train
  // record's flops_per_step). rankForwardFlops() is what this rank itself computes of them (its tensor-parallel
  // slice's): what its time depends on, so a plan's schedule carries it (train --plan, replayed by predict). The two
  // differ only in a layer that tensor parallelism splits, and such a layer overrides both.
  virtual double forwardFlops() const { return 0; }
  virtual double rankForwardFlops() const { return forwardFlops(); }
  // Of those, what its backward computes again (activation recomputation, --recompute): hardware FLOPs, not the
  // model's; the whole layer's and this rank's share, as above.
  virtual double recomputedFlops() const { return 0; }
  virtual double rankRecomputedFlops() const { return recomputedFlops(); }
  // The model's first layer, whose input is the data: nothing reads its input gradient, so a layer that
  // would compute it with a GEMM or a convolution skips it (as PyTorch does for inputs that need no grad)
  // and backward returns zeros. On every tensor-parallel rank alike (the sum it skips is collective).
  virtual void skipInputGradient() {}
  // Appends what its forward and backward sum over a group: the tensor-parallel one (none unless split), and
  // batch norm's statistics (asked for whether or not SyncBatchNorm is on: the plan keeps those it runs); and a
  // mixture's exchanges with the other expert-parallel ranks (none without expert parallelism).
  virtual void groupSums(LayerSums&) const {}
};

// A split layer's sums (a Linear's, a Conv2d's): a row split sums its output forward, a column split its input
// gradient backward (unless nothing reads that: skipInputGradient).
void addSplitSums(const TensorSplit& split, bool inputGradient, std::size_t outputs, std::size_t inputs, LayerSums& out);
// Appends the sums of layers run in this order forward (and in the reverse backward): a composite layer's.
void addSumsOf(const std::vector<const Layer*>& forwardOrder, LayerSums& out);

// Parameters initialised from (seed, name): independent of the order layers are built in, and of which part of
// a tensor a rank holds (a tensor-parallel slice starts as that slice of the one-device weights).
class Init {
 public:
  explicit Init(std::uint64_t seed) : seed_(seed) {}
  ParamInit normal(double stddev) const { return {InitKind::kNormal, seed_, stddev}; }
  ParamInit uniform(double bound) const { return {InitKind::kUniform, seed_, bound}; }  // U(-bound, bound)
  static ParamInit constant(float value) { return {InitKind::kConstant, 0, value}; }
  void constant(const Tensor& t, float value) const;  // a buffer (batch norm's running variance)

 private:
  std::uint64_t seed_;
};

// A parameter of `shape` (this rank's: its slice's, when `slice` is set) starting as `init` says. Its value and
// gradient come from the arena at once, unless the arena defers parameters (Arena::deferParameters): then the
// layout materialises what it keeps (param_init.h).
Param makeParam(Arena& arena, std::string name, std::vector<std::int64_t> shape, bool decay = true, ParamInit init = {},
                TensorSlice slice = {});

}  // namespace ts::wl
