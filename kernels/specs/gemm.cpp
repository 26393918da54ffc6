// gemm: C[M,N] = op(A)[M,K] @ op(B)[K,N], `batch` times (strided), optionally followed by a bias over N
// and GELU. 2*batch*MNK FLOPs (the epilogue's few per element are not counted); moves at least A, B and C
// once: batch*(e(MK + KN) + 4MN) bytes (+4N for a bias; e = the input element size; C is float32).
// Shapes: the four GEMMs of a transformer block's forward over B*S tokens (QKV, attention output, MLP up
// and down) and their two backward products each, the LM head, the attention score and value GEMMs
// batched over B*NH heads, two fused epilogues, and large squares (the compute ceiling).
// CPU: OpenBLAS, float32 (a batch's matrices whole to the compute threads); with an epilogue, oneDNN's
// inner product where built with it (the record's implementation says which). CUDA: cuBLASLt, float32 (or
// TF32), bfloat16 or float16 inputs.
//
// Dimensions: M, N, K (the row-major product: C is M x N, the sum runs over K) and, optional in a shapes
// file: batch (default 1), transA / transB (0 or 1, default 0: A stored [M,K], or [K,M] when set; B stored
// [K,N], or [N,K]), epilogue (0 none, 1 bias, 2 GELU, 3 bias then GELU; default 0).
// A layer Y[T,N] = X[T,K] W[K,N] has the backward products dX = dY W^T (dgrad: M=T, N=K, K=N, transB) and
// dW = X^T dY (wgrad: M=K, N=N, K=T, transA).
#include <climits>
#include <cmath>
#include <string>

#include <fmt/format.h>

#include "base/error.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/specs/kernel_op.h"
#ifdef TRAINSCOPE_HAVE_CUDA
#include "kernels/cuda/device_resources.h"
#include "kernels/cuda/gemm.h"
#endif

namespace ts {
namespace {

struct Dims {
  int m = 0, n = 0, k = 0, batch = 1;
  bool transA = false, transB = false, bias = false, gelu = false;
  // Row-major storage of one matrix of the batch: A is [M,K] or [K,M], B [K,N] or [N,K].
  int lda() const { return transA ? m : k; }
  int ldb() const { return transB ? k : n; }
  std::size_t sizeA() const { return std::size_t(m) * k; }
  std::size_t sizeB() const { return std::size_t(k) * n; }
  std::size_t sizeC() const { return std::size_t(m) * n; }
  double flops() const { return 2.0 * batch * double(m) * n * k; }
  double bytes(std::size_t inputSize) const {
    return double(batch) * (double(inputSize) * double(sizeA() + sizeB()) + 4.0 * double(sizeC())) + (bias ? 4.0 * n : 0.0);
  }
};

// float64: for each matrix of the batch, op(A) op(B) (+ bias[n]) (then GELU).
std::vector<double> reference(const std::vector<float>& a, const std::vector<float>& b, const std::vector<float>& bias,
                              const Dims& d) {
  std::vector<double> ad(a.begin(), a.end()), bd(b.begin(), b.end()), c(d.sizeC() * d.batch);
  cpu::gemmStridedBatched(d.transA, d.transB, d.m, d.n, d.k, 1.0, ad.data(), d.lda(), std::int64_t(d.sizeA()), bd.data(), d.ldb(),
                          std::int64_t(d.sizeB()), 0.0, c.data(), d.n, std::int64_t(d.sizeC()), d.batch);
  if (d.bias || d.gelu)
    for (std::size_t i = 0; i < c.size(); ++i) {
      double x = c[i] + (d.bias ? double(bias[i % d.n]) : 0.0);
      if (d.gelu) x = 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
      c[i] = x;
    }
  return c;
}

// Sums of K float32 products; TF32 rounds each input to a 10-bit mantissa first. (bfloat16 and float16
// inputs are rounded on the host too, so only the float32 accumulation differs.) cuBLASLt's GELU epilogue
// may evaluate tanh with a fast approximation: 1e-3 more there (a wrong bias or order errs by O(1)).
double tolerance(const Dims& d, bool tf32 = false, bool gpuGelu = false) {
  return (tf32 ? 2e-3 : 4e-6) * std::sqrt(static_cast<double>(d.k)) + (gpuGelu ? 1e-3 : 0.0);
}

class GemmCase final : public KernelCase {
 public:
  explicit GemmCase(Dims d)
      : d_(d),
        a_(randomInputs(d.sizeA() * d.batch, 1)),
        b_(randomInputs(d.sizeB() * d.batch, 2)),
        bias_(randomInputs(std::size_t(d.n), 3)),
        c_(d.sizeC() * d.batch) {}
  void run() override {
    if (!d_.bias && !d_.gelu) {
      cpu::gemmStridedBatched(d_.transA, d_.transB, d_.m, d_.n, d_.k, 1.0f, a_.data(), d_.lda(), std::int64_t(d_.sizeA()),
                              b_.data(), d_.ldb(), std::int64_t(d_.sizeB()), 0.0f, c_.data(), d_.n, std::int64_t(d_.sizeC()),
                              d_.batch);
      return;
    }
    for (int i = 0; i < d_.batch; ++i)
      cpu::gemmEpilogue(d_.transA, d_.transB, d_.m, d_.n, d_.k, 1.0f, a_.data() + i * d_.sizeA(), d_.lda(),
                        b_.data() + i * d_.sizeB(), d_.ldb(), 0.0f, c_.data() + i * d_.sizeC(), d_.n,
                        d_.bias ? bias_.data() : nullptr, d_.gelu);
  }
  double flops() const override { return d_.flops(); }
  double bytes() const override { return d_.bytes(4); }
  nlohmann::json details() const override {
    if (!d_.bias && !d_.gelu)
      return {{"implementation", cpu::gemmStridedBatchedImplementation(d_.m, d_.n, d_.n, std::int64_t(d_.sizeC()), d_.batch)}};
    return {{"implementation", cpu::gemmEpilogueImplementation(d_.transA, d_.transB, d_.m, d_.n, d_.k, d_.bias, d_.gelu)}};
  }
  KernelCheck check() override {
    a_ = randomInputs(a_.size(), 11);
    b_ = randomInputs(b_.size(), 12);
    bias_ = randomInputs(bias_.size(), 13);
    poison(c_);
    run();
    const auto want = reference(a_, b_, bias_, d_);
    return compareWith(c_.data(), want.data(), want.size(), tolerance(d_));
  }

 private:
  Dims d_;
  std::vector<float> a_, b_, bias_, c_;
};

#ifdef TRAINSCOPE_HAVE_CUDA
class CudaGemmCase final : public KernelCase {
 public:
  CudaGemmCase(Dims d, Precision p)
      : d_(d),
        t_(storageType(p)),
        tf32_(p == Precision::kTF32),
        a_(d.sizeA() * d.batch * dtypeSize(t_)),
        b_(d.sizeB() * d.batch * dtypeSize(t_)),
        bias_(std::size_t(d.n)),
        c_(d.sizeC() * d.batch) {
    upload(randomInputs(d.sizeA() * d.batch, 1), randomInputs(d.sizeB() * d.batch, 2), randomInputs(std::size_t(d.n), 3));
    spec_.transA = d.transA;
    spec_.transB = d.transB;
    spec_.m = d.m;
    spec_.n = d.n;
    spec_.k = d.k;
    spec_.lda = d.lda();
    spec_.ldb = d.ldb();
    spec_.ldc = d.n;
    spec_.batch = d.batch;
    spec_.strideA = std::int64_t(d.sizeA());
    spec_.strideB = std::int64_t(d.sizeB());
    spec_.strideC = std::int64_t(d.sizeC());
    spec_.bias = d.bias ? bias_.get() : nullptr;
    spec_.gelu = d.gelu;
    spec_.inputs = t_;
    spec_.tf32 = tf32_;
  }
  void run() override { blas_.gemm(spec_, a_.get(), b_.get(), c_.get(), stream_.get()); }
  double flops() const override { return d_.flops(); }
  double bytes() const override { return d_.bytes(dtypeSize(t_)); }
  KernelCheck check() override {
    const auto a = roundedInputs(d_.sizeA() * d_.batch, 11, t_), b = roundedInputs(d_.sizeB() * d_.batch, 12, t_);
    const auto bias = randomInputs(std::size_t(d_.n), 13);
    upload(a, b, bias);
    c_.poison(stream_.get());
    run();
    const auto got = c_.download(stream_.get());
    const auto want = reference(a, b, bias, d_);
    return compareWith(got.data(), want.data(), want.size(), tolerance(d_, tf32_, d_.gelu));
  }
  void* deviceStream() const override { return stream_.get(); }

 private:
  // The inputs in the dtype, byte for byte; the bias in float32 (the output's type).
  void upload(const std::vector<float>& a, const std::vector<float>& b, const std::vector<float>& bias) {
    auto bytesOf = [&](const std::vector<float>& v) {
      std::vector<unsigned char> out(v.size() * dtypeSize(t_));
      for (std::size_t i = 0; i < v.size(); ++i) storeElement(out.data(), t_, i, v[i]);
      return out;
    };
    a_.upload(bytesOf(a), stream_.get());
    b_.upload(bytesOf(b), stream_.get());
    bias_.upload(bias, stream_.get());
  }
  Dims d_;
  DType t_;
  bool tf32_;
  cuda::GemmSpec spec_;
  cuda::Stream stream_;
  cuda::Blas blas_;
  cuda::DeviceArray<unsigned char> a_, b_;
  cuda::DeviceArray<float> bias_, c_;
};
#else
using CudaGemmCase = void;  // built without CUDA
#endif

class GemmOp final : public KernelOp {
 public:
  std::string_view name() const override { return "gemm"; }
  std::vector<KernelShape> shapes(std::int64_t H, std::int64_t S, std::int64_t B, std::int64_t V) const override {
    const std::int64_t T = B * S, NH = H / 64;
    using Dim = std::pair<std::string, std::int64_t>;
    auto s = [](std::string n, std::int64_t m, std::int64_t nn, std::int64_t k, std::vector<Dim> extra = {}) {
      KernelShape shape{std::move(n), {{"M", m}, {"N", nn}, {"K", k}}};
      shape.dims.insert(shape.dims.end(), extra.begin(), extra.end());
      return shape;
    };
    // Forward Y[T,N] = X[T,K] W[K,N]; its dgrad and wgrad.
    std::vector<KernelShape> out;
    const struct {
      const char* name;
      std::int64_t n, k;
    } layers[] = {{"attn.qkv", 3 * H, H}, {"attn.proj", H, H}, {"mlp.up", 4 * H, H}, {"mlp.down", H, 4 * H}};
    for (const auto& l : layers) out.push_back(s(l.name, T, l.n, l.k));  // attn.qkv first: its dims are the required ones
    out.push_back(s("lm_head", T, V, H));
    for (const auto& l : layers) {
      out.push_back(s(std::string(l.name) + ".dgrad", T, l.k, l.n, {{"transA", 0}, {"transB", 1}}));
      out.push_back(s(std::string(l.name) + ".wgrad", l.k, l.n, T, {{"transA", 1}, {"transB", 0}}));
    }
    // Attention per (batch, head): scores[S,S] = q[S,64] k[S,64]^T, then out[S,64] = P[S,S] v[S,64].
    out.push_back(s("attn.scores", S, S, 64, {{"batch", B * NH}, {"transB", 1}}));
    out.push_back(s("attn.values", S, 64, S, {{"batch", B * NH}}));
    out.push_back(s("attn.qkv+bias", T, 3 * H, H, {{"epilogue", 1}}));
    out.push_back(s("mlp.up+bias+gelu", T, 4 * H, H, {{"epilogue", 3}}));
    out.push_back(s("square 1024", 1024, 1024, 1024));
    out.push_back(s("square 2048", 2048, 2048, 2048));
    return out;
  }
  bool supports(Precision p, bool cuda) const override { return cuda || p == Precision::kFloat32; }
  std::unique_ptr<KernelCase> make(const KernelShape& shape, const KernelSettings& settings) const override {
    requireFloat32(name(), settings.precision);
    return std::make_unique<GemmCase>(dims(shape));
  }
  std::unique_ptr<KernelCase> makeCuda(const KernelShape& shape, const KernelSettings& settings) const override {
    return makeCase<CudaGemmCase>(dims(shape), settings.precision);
  }

 private:
  // A dimension of the shape, or `fallback` where the shape (from a shapes file) leaves it out; checked
  // to lie in [lo, hi].
  static int dim(const KernelShape& s, std::string_view d, std::int64_t fallback, std::int64_t lo, std::int64_t hi) {
    std::int64_t v = fallback;
    for (const auto& [k, x] : s.dims)
      if (k == d) v = x;
    if (v < lo || v > hi) throw UsageError(fmt::format("gemm shape '{}': {} = {} is outside [{}, {}]", s.name, d, v, lo, hi));
    return static_cast<int>(v);
  }
  static Dims dims(const KernelShape& s) {
    Dims d;
    d.m = dim(s, "M", 0, 1, INT_MAX);
    d.n = dim(s, "N", 0, 1, INT_MAX);
    d.k = dim(s, "K", 0, 1, INT_MAX);
    d.batch = dim(s, "batch", 1, 1, INT_MAX);
    d.transA = dim(s, "transA", 0, 0, 1) != 0;
    d.transB = dim(s, "transB", 0, 0, 1) != 0;
    const int epilogue = dim(s, "epilogue", 0, 0, 3);
    d.bias = epilogue & 1;
    d.gelu = epilogue & 2;
    return d;
  }
};

}  // namespace
TS_DEFINE_KERNEL_OP(gemm, GemmOp)
}  // namespace ts
