#include "workloads/layers/convolution.h"

#include <cmath>

#include "workloads/device_ops.h"

namespace ts::wl {
namespace {
// Channels [rank c/ranks, (rank+1) c/ranks) of c (a column-parallel convolution's output channels).
TensorSlice channelsOf(std::int64_t c, int rank, int ranks) {
  if (ranks == 1) return {};
  TensorSlice s{{c}, c, 1, {}, 0, 1};
  for (std::int64_t k = rank * (c / ranks); k < (rank + 1) * (c / ranks); ++k) s.rows.push_back(k);
  return s;
}

cpu::Conv2dShape convShape(std::int64_t n, std::int64_t cin, std::int64_t h, std::int64_t w, std::int64_t cout, int k,
                           int stride) {
  return {static_cast<int>(n),
          static_cast<int>(cin),
          static_cast<int>(h),
          static_cast<int>(w),
          static_cast<int>(cout),
          k,
          k,
          stride,
          k / 2};
}
}  // namespace

Conv2d::Conv2d(Arena& arena, const Init& init, const std::string& name, const cpu::Conv2dShape& s, ConvLayout layout,
               TensorSplit split)
    : s_(s), full_(s), layout_(layout), split_(split) {
  const bool column = split.split() && split.kind == TensorSplit::kColumn, row = split.split() && split.kind == TensorSplit::kRow;
  if (column) s_.K = s.K / split.ranks;
  if (row) s_.C = s.C / split.ranks;
  // The slice of the one-device [K, C R S] weights: rows of the output channels, columns of the input ones.
  const std::int64_t rs = std::int64_t(s.R) * s.S;
  TensorSlice slice{
      {s.K, s.C, s.R, s.S}, s.K, s.C * rs, {}, row ? split.rank * s_.C * rs : 0, row ? (split.rank + 1) * s_.C * rs : s.C * rs};
  for (std::int64_t k = column ? split.rank * s_.K : 0; column && k < (split.rank + 1) * s_.K; ++k) slice.rows.push_back(k);
  w_ = makeParam(arena, name + ".weight", {s_.K, s_.C, s_.R, s_.S}, true, init.normal(std::sqrt(2.0 / (double(s.K) * s.R * s.S))),
                 column || row ? slice : TensorSlice{});
  y_ = arena.tensor(imageShape(s_.N, s_.K, s_.P(), s_.Q(), layout));
  dx_ = arena.tensor(imageShape(s_.N, s_.C, s_.H, s_.W, layout));
}

double Conv2d::flopsOf(const cpu::Conv2dShape& s) { return 2.0 * s.N * s.K * s.P() * s.Q() * double(s.C) * s.R * s.S; }

const Tensor& Conv2d::forward(const Tensor& x, StepContext& ctx) {
  x_ = &x;
  ops::conv2dForward(*y_.device, y_.data, x.data, w_.value.data, s_, layout_);
  if (split_.split() && split_.kind == TensorSplit::kRow) ctx.sumOverTensorParallel(y_);
  return y_;
}

void Conv2d::skipInputGradient() {
  inputGradient_ = false;
  zero(dx_);
}

const Tensor& Conv2d::backward(const Tensor& dy, StepContext& ctx) {
  ops::conv2dBackwardFilter(*y_.device, w_.grad.data, dy.data, x_->data, s_, layout_);
  ctx.ready(w_);
  if (!inputGradient_) return dx_;
  ops::conv2dBackwardData(*y_.device, dx_.data, dy.data, w_.value.data, s_, ops::Write::kOverwrite, layout_);
  if (split_.split() && split_.kind == TensorSplit::kColumn) ctx.sumOverTensorParallel(dx_);
  return dx_;
}

GlobalAvgPool::GlobalAvgPool(Arena& arena, std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w, ConvLayout layout)
    : n_(n), c_(c), hw_(h * w), layout_(layout), y_(arena.tensor({n, c})), dx_(arena.tensor(imageShape(n, c, h, w, layout))) {}

const Tensor& GlobalAvgPool::forward(const Tensor& x, StepContext&) {
  ops::globalAvgPoolForward(*y_.device, y_.data, x.data, n_, c_, hw_, layout_);
  return y_;
}

const Tensor& GlobalAvgPool::backward(const Tensor& dy, StepContext&) {
  zero(dx_);
  ops::globalAvgPoolBackward(*y_.device, dx_.data, dy.data, n_, c_, hw_, layout_);
  return dx_;
}

MaxPool2d::MaxPool2d(Arena& arena, const MaxPool2dConfig& c)
    : n_(c.n),
      c_(c.c),
      h_(c.h),
      w_(c.w),
      k_(c.k),
      stride_(c.stride),
      pad_(c.pad),
      layout_(c.layout),
      p_((c.h + 2 * c.pad - c.k) / c.stride + 1),
      q_((c.w + 2 * c.pad - c.k) / c.stride + 1),
      argmax_(arena.ints(static_cast<std::size_t>(c.n * c.c * p_ * q_))),
      y_(arena.tensor(imageShape(c.n, c.c, p_, q_, c.layout))),
      dx_(arena.tensor(imageShape(c.n, c.c, c.h, c.w, c.layout))) {}

const Tensor& MaxPool2d::forward(const Tensor& x, StepContext&) {
  ops::maxPool2dForward(*y_.device, y_.data, argmax_, x.data, static_cast<int>(n_), static_cast<int>(c_), static_cast<int>(h_),
                        static_cast<int>(w_), k_, stride_, pad_, layout_);
  return y_;
}

const Tensor& MaxPool2d::backward(const Tensor& dy, StepContext&) {
  zero(dx_);
  ops::maxPool2dBackward(*y_.device, dx_.data, dy.data, argmax_, dy.numel());
  return dx_;
}

BasicBlock::BasicBlock(Arena& arena, const Init& init, const std::string& name, const BasicBlockConfig& c)
    : conv1_(arena, init, name + ".conv1", convShape(c.n, c.cin, c.h, c.w, c.cout, 3, c.stride), c.layout,
             TensorSplit{TensorSplit::kColumn, c.tpRank, c.tpRanks, {}}),
      bn1_(arena, name + ".bn1", c.n, c.cout / c.tpRanks, conv1_.shape().P(), conv1_.shape().Q(), c.layout,
           channelsOf(c.cout, c.tpRank, c.tpRanks)),
      conv2_(arena, init, name + ".conv2", convShape(c.n, c.cout, conv1_.shape().P(), conv1_.shape().Q(), c.cout, 3, 1), c.layout,
             TensorSplit{TensorSplit::kRow, c.tpRank, c.tpRanks, {}}),
      bn2_(arena, name + ".bn2", c.n, c.cout, conv1_.shape().P(), conv1_.shape().Q(), c.layout) {
  const std::int64_t n = c.n, cin = c.cin, h = c.h, w = c.w, cout = c.cout;
  const int stride = c.stride, tpRanks = c.tpRanks;
  const ConvLayout layout = c.layout;
  const std::int64_t p = conv1_.shape().P(), q = conv1_.shape().Q();
  if (stride != 1 || cin != cout) {
    cpu::Conv2dShape s = convShape(n, cin, h, w, cout, 1, stride);
    downConv_ = std::make_unique<Conv2d>(arena, init, name + ".downsample.0", s, layout);
    downBn_ = std::make_unique<BatchNorm2d>(arena, name + ".downsample.1", n, cout, s.P(), s.Q(), layout);
  }
  sum_ = arena.tensor(imageShape(n, cout, p, q, layout));
  bn1_.fuseRelu();
  drelu1_ = arena.tensor(imageShape(n, cout / tpRanks, p, q, layout));  // conv1's slice
  dsum_ = arena.tensor(imageShape(n, cout, p, q, layout));
  dx_ = arena.tensor(imageShape(n, cin, h, w, layout));
}

std::pair<std::int64_t, std::int64_t> BasicBlock::outputSize(const BasicBlockConfig& c) {
  const cpu::Conv2dShape s = convShape(c.n, c.cin, c.h, c.w, c.cout, 3, c.stride);  // conv1's, as the constructor's
  return {s.P(), s.Q()};
}

void BasicBlock::groupSums(LayerSums& out) const {
  // In forward's order (the shortcut's convolution is replicated: it sums nothing over tensor parallelism).
  std::vector<const Layer*> order{&conv1_, &bn1_, &conv2_, &bn2_};
  if (downConv_) order.insert(order.end(), {downConv_.get(), downBn_.get()});
  addSumsOf(order, out);
}

double BasicBlock::sumOver(double (Conv2d::*flops)() const) const {
  return (conv1_.*flops)() + (conv2_.*flops)() + (downConv_ ? ((*downConv_).*flops)() : 0.0);
}

const Tensor& BasicBlock::forward(const Tensor& x, StepContext& ctx) {
  x_ = &x;
  const Tensor& relu1 = bn1_.forward(conv1_.forward(x, ctx), ctx);  // relu(bn1(conv1(x))): bn1 applies the ReLU
  const Tensor& b = bn2_.forward(conv2_.forward(relu1, ctx), ctx);
  const Tensor& shortcut = downConv_ ? downBn_->forward(downConv_->forward(x, ctx), ctx) : x;
  // The block's output, relu(b + shortcut); > 0 exactly where the sum was, which its backward reads.
  ops::residualAddRelu(*sum_.device, sum_.data, b.data, shortcut.data, b.numel());
  return sum_;
}

const Tensor& BasicBlock::backward(const Tensor& dy, StepContext& ctx) {
  ops::reluBackward(*sum_.device, dsum_.data, sum_.data, dy.data, dy.numel(), ops::Write::kOverwrite);  // relu(s) > 0 iff s > 0
  // Shortcut branch first (its gradient goes straight to x: dsum itself, or the downsampling's input
  // gradient, which that layer owns until its next backward), then the main branch; dx is their sum, in one pass.
  const Tensor& shortcut = downConv_ ? downConv_->backward(downBn_->backward(dsum_, ctx), ctx) : dsum_;
  const Tensor& drelu = conv2_.backward(bn2_.backward(dsum_, ctx), ctx);
  const Tensor& relu1 = bn1_.output();
  ops::reluBackward(*sum_.device, drelu1_.data, relu1.data, drelu.data, drelu.numel(), ops::Write::kOverwrite);
  const Tensor& dx1 = conv1_.backward(bn1_.backward(drelu1_, ctx), ctx);
  ops::residualAdd(*sum_.device, dx_.data, shortcut.data, dx1.data, dx_.numel());
  return dx_;
}

void BasicBlock::params(std::vector<Param*>& out) {
  conv1_.params(out);
  bn1_.params(out);
  conv2_.params(out);
  bn2_.params(out);
  if (downConv_) {
    downConv_->params(out);
    downBn_->params(out);
  }
}

void BasicBlock::buffers(std::vector<NamedTensor>& out) {
  bn1_.buffers(out);
  bn2_.buffers(out);
  if (downBn_) downBn_->buffers(out);
}

ChannelsLast::ChannelsLast(Arena& arena, std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w)
    : n_(n), c_(c), hw_(h * w), y_(arena.tensor(imageShape(n, c, h, w, ConvLayout::kNhwc))), dx_(arena.tensor({n, c, h, w})) {}

const Tensor& ChannelsLast::forward(const Tensor& x, StepContext&) {
  ops::transposeImages(*y_.device, y_.data, x.data, n_, c_, hw_, ConvLayout::kNchw);
  return y_;
}

void ChannelsLast::skipInputGradient() {
  inputGradient_ = false;
  zero(dx_);
}

const Tensor& ChannelsLast::backward(const Tensor& dy, StepContext&) {
  if (inputGradient_) ops::transposeImages(*y_.device, dx_.data, dy.data, n_, c_, hw_, ConvLayout::kNhwc);
  return dx_;
}

}  // namespace ts::wl
