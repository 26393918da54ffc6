// The CPU convolution through oneDNN (dnnl.hpp), each pass over the whole batch (kernels/cpu/convolution.h).
//
// Layouts: the primitives pick their own activation layout for NCHW callers of 16 channels or more (format
// any: the blocked nChw16c its fastest kernels take; plain NCHW would get its im2col + GEMM kernel) and the
// filter layout always; NHWC callers keep NHWC activations, which oneDNN 2.6 convolves natively (brgconv / jit). Where the
// primitive's layout is not the caller's, the tensor passes through a staging buffer by a reorder, as
// PyTorch's mkldnn convolution does. Those reorders are why the CNN's layers are channels-last on the CPU
// (workloads/layers/convolution.h): in NCHW, moving cnn tiny's activations in and out of nChw16c took 10 of
// the 25 ms its convolutions spent per step at batch 32 on one core; NHWC needs none.
//
// Accumulation: oneDNN 2.6's backward convolutions take no sum post-op and no beta (their descriptors
// refuse the attribute), so a backward pass writes its gradient into the staging buffer and the reorder out
// adds it into the caller's dx / dw / dbias (a reorder's sum post-op: one read-add-write pass, no second
// temporary).
//
// Plans (primitive, reorders, staging, scratchpad) are cached per thread by pass, layout and shape: created
// once, then each call only binds the caller's pointers. Per thread, so that concurrent callers share no
// staging buffer; the scratchpad is ours (scratchpad_mode::user) for the same reason. oneDNN's own primitive
// cache makes a second thread's creation of the same primitive cheap.
//
// Threads: oneDNN runs its kernels on its CPU runtime's threads (Debian's build: OpenMP), whose count the
// process's thread policy sets; nothing here sets one.
#include <array>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>
#include <oneapi/dnnl/dnnl_debug.h>
#include <oneapi/dnnl/dnnl.hpp>

#include "base/error.h"
#include "kernels/cpu/convolution_backends.h"
#include "kernels/cpu/onednn_engine.h"

namespace ts::cpu::onednn {
namespace {

using dnnl::memory;
using Tag = memory::format_tag;

// What the primitive does with a tensor: reads it, overwrites it, or adds its result into it.
enum class Role { kInput, kOutput, kAccumulate };

// One tensor of a primitive, held in the caller's layout (user); staged in the primitive's (inner) when the
// two differ or the primitive's result must be added rather than stored.
class Port {
 public:
  Port(int arg, Role role, const memory::desc& user, const memory::desc& inner)
      : arg_(arg), role_(role), user_(user, cpuEngine(), DNNL_MEMORY_NONE) {
    if (role == Role::kAccumulate || inner != user) {
      staged_ = memory(inner, cpuEngine());
      dnnl::primitive_attr attr;
      if (role == Role::kAccumulate) {
        dnnl::post_ops add;
        add.append_sum(1.0f);
        attr.set_post_ops(add);
      }
      const bool in = role == Role::kInput;
      move_ = dnnl::reorder(dnnl::reorder::primitive_desc(cpuEngine(), in ? user : inner, cpuEngine(), in ? inner : user, attr));
    }
  }
  // Points the port at the caller's tensor (const for inputs: oneDNN takes void* but only reads them).
  void bind(const void* data) { user_.set_data_handle(const_cast<void*>(data)); }
  int arg() const { return arg_; }
  const memory& forPrimitive() const { return staged_ ? *staged_ : user_; }
  void stageIn(dnnl::stream& s) {
    if (move_ && role_ == Role::kInput) move_->execute(s, user_, *staged_);
  }
  void stageOut(dnnl::stream& s) {
    if (move_ && role_ != Role::kInput) move_->execute(s, *staged_, user_);
  }

 private:
  int arg_;
  Role role_;
  memory user_;
  std::optional<memory> staged_;
  std::optional<dnnl::reorder> move_;
};

// A pass at one shape, ready to run on any pointers: the primitive, its ports in the order run() takes the
// tensors, and its scratchpad.
class Plan {
 public:
  // primitive: made from pd (which compiles its kernel, or takes it from oneDNN's primitive cache).
  Plan(dnnl::primitive primitive, const dnnl::primitive_desc_base& pd, std::vector<Port> ports)
      : primitive_(std::move(primitive)),
        impl_(pd.impl_info_str()),
        ports_(std::move(ports)),
        scratchpad_(pd.scratchpad_desc(), cpuEngine()) {}
  void run(const std::vector<const void*>& tensors) {
    dnnl::stream& s = threadStream();
    std::unordered_map<int, memory> args{{DNNL_ARG_SCRATCHPAD, scratchpad_}};
    for (std::size_t i = 0; i < ports_.size(); ++i) {
      ports_[i].bind(tensors[i]);
      ports_[i].stageIn(s);
      args.emplace(ports_[i].arg(), ports_[i].forPrimitive());
    }
    primitive_.execute(s, args);
    for (Port& p : ports_) p.stageOut(s);
    s.wait();
  }
  const std::string& implementation() const { return impl_; }

 private:
  dnnl::primitive primitive_;
  std::string impl_;
  std::vector<Port> ports_;
  memory scratchpad_;
};

// The descriptors of one convolution: the caller's layouts (user) and those the primitives are asked for.
struct Descs {
  memory::desc x, w, y, bias;           // the caller's
  memory::desc xAsked, wAsked, yAsked;  // any where oneDNN chooses
  memory::dims strides, padding;
};
Descs descsOf(const Conv2dShape& s, const ConvMethod& m) {
  const bool nhwc = m.layout == ConvLayout::kNhwc;
  const memory::dims xd{s.N, s.C, s.H, s.W}, wd{s.K, s.C, s.R, s.S}, yd{s.N, s.K, s.P(), s.Q()};
  const Tag act = nhwc ? Tag::nhwc : Tag::nchw;
  // NCHW activations of fewer channels than oneDNN's 16-wide blocks stay NCHW: blocked, they would be
  // padded to 16 channels (the stem's 3 become 16: backward-data 3.5 ms blocked, 1.6 ms in NCHW at
  // N=32 C=3 H=W=32 K=64 on one AVX-512 core).
  const auto asked = [&](int channels) { return nhwc || channels < 16 ? act : Tag::any; };
  return {memory::desc(xd, kF32, act),
          memory::desc(wd, kF32, m.krscFilter() ? Tag::ohwi : Tag::oihw),
          memory::desc(yd, kF32, act),
          memory::desc({s.K}, kF32, Tag::x),
          memory::desc(xd, kF32, asked(s.C)),
          memory::desc(wd, kF32, Tag::any),
          memory::desc(yd, kF32, asked(s.K)),
          {s.stride, s.stride},
          // Right padding equal to the left: oneDNN checks P = (H + left + right - R) / stride + 1 with integer
          // division, as Conv2dShape::P computes it.
          {s.pad, s.pad}};
}

dnnl::primitive_attr userScratchpad() {
  dnnl::primitive_attr a;
  a.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return a;
}

// The forward primitive descriptor: the plan of the forward pass, and the hint the backward passes need.
// convolution_direct: oneDNN's Winograd would round differently and is no faster on these small filters.
dnnl::convolution_forward::primitive_desc forwardDesc(const Descs& d, bool bias) {
  using F = dnnl::convolution_forward;
  const auto prop = dnnl::prop_kind::forward_training;
  const auto algo = dnnl::algorithm::convolution_direct;
  const F::desc desc = bias ? F::desc(prop, algo, d.xAsked, d.wAsked, d.bias, d.yAsked, d.strides, d.padding, d.padding)
                            : F::desc(prop, algo, d.xAsked, d.wAsked, d.yAsked, d.strides, d.padding, d.padding);
  return F::primitive_desc(desc, userScratchpad(), cpuEngine());
}

std::unique_ptr<Plan> makePlan(ConvPass pass, const Conv2dShape& s, const ConvMethod& m, bool bias, Write write) {
  const Descs d = descsOf(s, m);
  const auto fwd = forwardDesc(d, bias);
  const auto algo = dnnl::algorithm::convolution_direct;
  switch (pass) {
    case ConvPass::kForward: {
      std::vector<Port> ports{{DNNL_ARG_SRC, Role::kInput, d.x, fwd.src_desc()},
                              {DNNL_ARG_WEIGHTS, Role::kInput, d.w, fwd.weights_desc()}};
      if (bias) ports.emplace_back(DNNL_ARG_BIAS, Role::kInput, d.bias, fwd.bias_desc());
      ports.emplace_back(DNNL_ARG_DST, Role::kOutput, d.y, fwd.dst_desc());
      return std::make_unique<Plan>(dnnl::convolution_forward(fwd), fwd, std::move(ports));
    }
    case ConvPass::kBackwardData: {
      using B = dnnl::convolution_backward_data;
      const B::primitive_desc pd(B::desc(algo, d.xAsked, d.wAsked, d.yAsked, d.strides, d.padding, d.padding), userScratchpad(),
                                 cpuEngine(), fwd);
      return std::make_unique<Plan>(
          B(pd), pd,
          std::vector<Port>{
              {DNNL_ARG_DIFF_DST, Role::kInput, d.y, pd.diff_dst_desc()},
              {DNNL_ARG_WEIGHTS, Role::kInput, d.w, pd.weights_desc()},
              {DNNL_ARG_DIFF_SRC, write == Write::kOverwrite ? Role::kOutput : Role::kAccumulate, d.x, pd.diff_src_desc()}});
    }
    case ConvPass::kBackwardFilter: {
      using B = dnnl::convolution_backward_weights;
      const B::desc desc = bias ? B::desc(algo, d.xAsked, d.wAsked, d.bias, d.yAsked, d.strides, d.padding, d.padding)
                                : B::desc(algo, d.xAsked, d.wAsked, d.yAsked, d.strides, d.padding, d.padding);
      const B::primitive_desc pd(desc, userScratchpad(), cpuEngine(), fwd);
      std::vector<Port> ports{{DNNL_ARG_SRC, Role::kInput, d.x, pd.src_desc()},
                              {DNNL_ARG_DIFF_DST, Role::kInput, d.y, pd.diff_dst_desc()},
                              {DNNL_ARG_DIFF_WEIGHTS, Role::kAccumulate, d.w, pd.diff_weights_desc()}};
      if (bias) ports.emplace_back(DNNL_ARG_DIFF_BIAS, Role::kAccumulate, d.bias, pd.diff_bias_desc());
      return std::make_unique<Plan>(B(pd), pd, std::move(ports));
    }
  }
  throw Error("unknown convolution pass");
}

// This thread's plan of the pass at s, created on first use.
Plan& planFor(ConvPass pass, const Conv2dShape& s, const ConvMethod& m, bool bias, Write write = Write::kAccumulate) {
  using Key = std::array<int, 14>;
  thread_local std::map<Key, std::unique_ptr<Plan>> plans;
  const Key key{int(pass), int(m.layout), int(m.krscFilter()), int(bias), int(write), s.N, s.C, s.H, s.W, s.K, s.R, s.S,
                s.stride,  s.pad};
  std::unique_ptr<Plan>& plan = plans[key];
  if (!plan) plan = makePlan(pass, s, m, bias, write);
  return *plan;
}

// Runs f, turning oneDNN's exception into the project's one-line Error naming the pass and shape.
template <class F>
auto guarded(ConvPass pass, const Conv2dShape& s, const ConvMethod& m, F f) {
  try {
    return f();
  } catch (const dnnl::error& e) {
    throw errorInContext(fmt::format("oneDNN convolution {} {} N={} C={} H={} W={} K={} R={} S={} stride={} pad={}: {} ({})",
                                     nameOf(pass), nameOf(m.layout), s.N, s.C, s.H, s.W, s.K, s.R, s.S, s.stride, s.pad, e.what(),
                                     dnnl_status2str(e.status)));
  }
}

const char* runtimeName(unsigned runtime) {
  switch (runtime) {
    case DNNL_RUNTIME_OMP:
      return "OpenMP";
    case DNNL_RUNTIME_TBB:
      return "TBB";
    case DNNL_RUNTIME_SEQ:
      return "sequential";
    case DNNL_RUNTIME_THREADPOOL:
      return "threadpool";
    default:
      return "unknown";
  }
}

}  // namespace

bool available() { return true; }

std::string description() {
  const dnnl_version_t* v = dnnl_version();
  return fmt::format("oneDNN {}.{}.{}, {} threads", v->major, v->minor, v->patch, runtimeName(v->cpu_runtime));
}

void forward(float* y, const float* x, const float* w, const float* bias, const Conv2dShape& s, const ConvMethod& m) {
  guarded(ConvPass::kForward, s, m, [&] {
    Plan& plan = planFor(ConvPass::kForward, s, m, bias != nullptr);
    if (bias)
      plan.run({x, w, bias, y});
    else
      plan.run({x, w, y});
  });
}

void backwardData(float* dx, const float* dy, const float* w, const Conv2dShape& s, const ConvMethod& m, Write write) {
  guarded(ConvPass::kBackwardData, s, m, [&] { planFor(ConvPass::kBackwardData, s, m, false, write).run({dy, w, dx}); });
}

void backwardFilter(float* dw, float* dbias, const float* dy, const float* x, const Conv2dShape& s, const ConvMethod& m) {
  guarded(ConvPass::kBackwardFilter, s, m, [&] {
    Plan& plan = planFor(ConvPass::kBackwardFilter, s, m, dbias != nullptr);
    if (dbias)
      plan.run({x, dy, dw, dbias});
    else
      plan.run({x, dy, dw});
  });
}

std::string implementation(ConvPass p, const Conv2dShape& s, const ConvMethod& m) {
  // The plans the benchmark runs: the forward with a bias, backward-filter without one.
  return guarded(p, s, m, [&] { return planFor(p, s, m, p == ConvPass::kForward).implementation(); });
}

}  // namespace ts::cpu::onednn
