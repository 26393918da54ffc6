// The GEMM epilogue through oneDNN's inner product with a bias and an eltwise GELU post-op (gemm_backends.h).
// dst[M,N] = src[M,K] weights[N,K]^T + bias[N]: src is op(A) (A [M,K] as nc, or stored [K,M] as cn), weights
// are op(B)^T (B stored [K,N] is weights in io order, B stored [N,K] is oi), so no operand is copied.
// Primitives are cached per thread by shape and epilogue, as the convolution's plans are (created once: the
// creation compiles the kernel); each call binds the caller's pointers.
#include <array>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include <fmt/format.h>
#include <oneapi/dnnl/dnnl_debug.h>
#include <oneapi/dnnl/dnnl.hpp>

#include "base/error.h"
#include "kernels/cpu/gemm_backends.h"
#include "kernels/cpu/onednn_engine.h"

namespace ts::cpu::onednn {
namespace {

using dnnl::memory;
using Tag = memory::format_tag;

class EpiloguePlan {
 public:
  EpiloguePlan(bool ta, bool tb, int m, int n, int k, bool bias, bool gelu) {
    const memory::desc src({m, k}, kF32, ta ? Tag::cn : Tag::nc), weights({n, k}, kF32, tb ? Tag::oi : Tag::io),
        biasDesc({n}, kF32, Tag::x), dst({m, n}, kF32, Tag::nc);
    dnnl::post_ops post;
    if (gelu) post.append_eltwise(1.0f, dnnl::algorithm::eltwise_gelu_tanh, 0.0f, 0.0f);
    dnnl::primitive_attr attr;
    attr.set_post_ops(post);
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);  // ours: a plan is this thread's alone
    using IP = dnnl::inner_product_forward;
    const auto prop = dnnl::prop_kind::forward_inference;
    const IP::desc desc = bias ? IP::desc(prop, src, weights, biasDesc, dst) : IP::desc(prop, src, weights, dst);
    const IP::primitive_desc pd(desc, attr, cpuEngine());
    // Only where the primitive takes the operands as they lie (it may ask for blocked weights instead), and
    // not oneDNN's reference loops (both operands transposed get "ref:any", far slower than OpenBLAS).
    if (pd.src_desc() != src || pd.weights_desc() != weights || pd.dst_desc() != dst) return;
    if (std::string(pd.impl_info_str()).rfind("ref", 0) == 0) return;
    primitive_.emplace(pd);
    impl_ = pd.impl_info_str();
    src_ = memory(src, cpuEngine(), DNNL_MEMORY_NONE);
    weights_ = memory(weights, cpuEngine(), DNNL_MEMORY_NONE);
    dst_ = memory(dst, cpuEngine(), DNNL_MEMORY_NONE);
    if (bias) bias_ = memory(biasDesc, cpuEngine(), DNNL_MEMORY_NONE);
    scratchpad_ = memory(pd.scratchpad_desc(), cpuEngine());
  }
  bool usable() const { return primitive_.has_value(); }
  const std::string& implementation() const { return impl_; }
  void run(const float* A, const float* B, float* C, const float* bias) {
    src_.set_data_handle(const_cast<float*>(A));
    weights_.set_data_handle(const_cast<float*>(B));
    dst_.set_data_handle(C);
    std::unordered_map<int, memory> args{
        {DNNL_ARG_SRC, src_}, {DNNL_ARG_WEIGHTS, weights_}, {DNNL_ARG_DST, dst_}, {DNNL_ARG_SCRATCHPAD, scratchpad_}};
    if (bias) {
      bias_.set_data_handle(const_cast<float*>(bias));
      args.emplace(DNNL_ARG_BIAS, bias_);
    }
    dnnl::stream& s = threadStream();
    primitive_->execute(s, args);
    s.wait();
  }

 private:
  std::optional<dnnl::inner_product_forward> primitive_;
  std::string impl_;
  memory src_, weights_, dst_, bias_, scratchpad_;
};

// Runs f, turning oneDNN's exception into the project's one-line Error naming the shape.
template <class F>
auto guarded(int m, int n, int k, F f) {
  try {
    return f();
  } catch (const dnnl::error& e) {
    throw Error(fmt::format("oneDNN GEMM epilogue M={} N={} K={}: {} ({})", m, n, k, e.what(), dnnl_status2str(e.status)));
  }
}

// This thread's plan for the shape, created on first use (one that declines is kept as such).
EpiloguePlan& planFor(bool ta, bool tb, int m, int n, int k, bool bias, bool gelu) {
  using Key = std::array<int, 7>;
  thread_local std::map<Key, std::unique_ptr<EpiloguePlan>> plans;
  std::unique_ptr<EpiloguePlan>& plan = plans[Key{int(ta), int(tb), m, n, k, int(bias), int(gelu)}];
  if (!plan) plan = guarded(m, n, k, [&] { return std::make_unique<EpiloguePlan>(ta, tb, m, n, k, bias, gelu); });
  return *plan;
}

bool takes(bool ta, bool tb, int m, int n, int k, float alpha, int lda, int ldb, float beta, int ldc, bool bias, bool gelu) {
  return (bias || gelu) && m > 0 && n > 0 && k > 0 && alpha == 1.0f && beta == 0.0f && lda == (ta ? m : k) &&
         ldb == (tb ? k : n) && ldc == n;
}

}  // namespace

bool gemmEpilogue(bool ta, bool tb, int m, int n, int k, float alpha, const float* A, int lda, const float* B, int ldb,
                  float beta, float* C, int ldc, const float* bias, bool gelu) {
  if (!takes(ta, tb, m, n, k, alpha, lda, ldb, beta, ldc, bias != nullptr, gelu)) return false;
  EpiloguePlan& plan = planFor(ta, tb, m, n, k, bias != nullptr, gelu);
  if (!plan.usable()) return false;
  guarded(m, n, k, [&] { plan.run(A, B, C, bias); });
  return true;
}

std::string gemmEpilogueImplementation(bool ta, bool tb, int m, int n, int k, bool bias, bool gelu) {
  if (!takes(ta, tb, m, n, k, 1.0f, ta ? m : k, tb ? k : n, 0.0f, n, bias, gelu)) return "";
  EpiloguePlan& plan = planFor(ta, tb, m, n, k, bias, gelu);
  return plan.usable() ? "oneDNN inner product " + plan.implementation() : "";
}

}  // namespace ts::cpu::onednn
