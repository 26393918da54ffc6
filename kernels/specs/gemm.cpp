// gemm: C[M,N] = A[M,K] @ B[K,N]. 2MNK FLOPs; moves at least A, B and C once: e(MK + KN) + 4MN bytes
// (e = the input element size; C is float32). Shapes: the four GEMMs of a transformer block's forward
// over B*S tokens (QKV, attention output, MLP up and down) and the LM head, plus large squares (the
// compute ceiling). CPU: OpenBLAS, float32. CUDA: cuBLASLt, float32, bfloat16 or float16 inputs.
#include <cmath>

#include "base/error.h"
#include "kernels/cpu/ops.h"
#include "kernels/specs/kernel_op.h"
#ifdef TRAINSCOPE_HAVE_CUDA
#include "kernels/cuda/device_array.h"
#include "kernels/cuda/blas.h"
#endif

namespace ts {
namespace {

struct Dims {
  int m, n, k;
};

std::vector<double> reference(const std::vector<float>& a, const std::vector<float>& b, Dims d) {
  std::vector<double> ad(a.begin(), a.end()), bd(b.begin(), b.end()), c(static_cast<std::size_t>(d.m) * d.n);
  cpu::gemm(false, false, d.m, d.n, d.k, 1.0, ad.data(), d.k, bd.data(), d.n, 0.0, c.data(), d.n);
  return c;
}

// Sums of K float32 products; TF32 rounds each input to a 10-bit mantissa first. (bfloat16 and float16
// inputs are rounded on the host too, so only the float32 accumulation differs.)
double tolerance(Dims d, bool tf32 = false) { return (tf32 ? 2e-3 : 4e-6) * std::sqrt(static_cast<double>(d.k)); }

class GemmCase final : public KernelCase {
 public:
  explicit GemmCase(Dims d) : d_(d), a_(randomInputs(std::size_t(d.m) * d.k, 1)), b_(randomInputs(std::size_t(d.k) * d.n, 2)), c_(std::size_t(d.m) * d.n) {}
  void run() override { cpu::gemm(false, false, d_.m, d_.n, d_.k, 1.0f, a_.data(), d_.k, b_.data(), d_.n, 0.0f, c_.data(), d_.n); }
  double flops() const override { return 2.0 * d_.m * d_.n * d_.k; }
  double bytes() const override { return 4.0 * (double(d_.m) * d_.k + double(d_.k) * d_.n + double(d_.m) * d_.n); }
  KernelCheck check() override {
    a_ = randomInputs(a_.size(), 11);
    b_ = randomInputs(b_.size(), 12);
    poison(c_);
    run();
    const auto want = reference(a_, b_, d_);
    return compareWith(c_.data(), want.data(), want.size(), tolerance(d_));
  }

 private:
  Dims d_;
  std::vector<float> a_, b_, c_;
};

#ifdef TRAINSCOPE_HAVE_CUDA
// Inputs rounded to the dtype, so that the reference sees exactly what the op sees.
std::vector<float> roundedInputs(std::size_t n, unsigned seed, DType t) {
  auto v = randomInputs(n, seed);
  for (auto& x : v) {
    if (t == DType::kBFloat16) x = bfloat16ToFloat(floatToBFloat16(x));
    if (t == DType::kFloat16) x = halfToFloat(floatToHalf(x));
  }
  return v;
}

class CudaGemmCase final : public KernelCase {
 public:
  CudaGemmCase(Dims d, Precision p)
      : d_(d), t_(storageType(p)), tf32_(p == Precision::kTF32), a_(std::size_t(d.m) * d.k * dtypeSize(t_)), b_(std::size_t(d.k) * d.n * dtypeSize(t_)), c_(std::size_t(d.m) * d.n) {
    upload(randomInputs(std::size_t(d.m) * d.k, 1), randomInputs(std::size_t(d.k) * d.n, 2));
  }
  void run() override { blas_.gemm(false, false, d_.m, d_.n, d_.k, 1.0f, a_.get(), d_.k, b_.get(), d_.n, 0.0f, c_.get(), d_.n, t_, tf32_, stream_.get()); }
  double flops() const override { return 2.0 * d_.m * d_.n * d_.k; }
  double bytes() const override {
    return double(dtypeSize(t_)) * (double(d_.m) * d_.k + double(d_.k) * d_.n) + 4.0 * double(d_.m) * d_.n;
  }
  KernelCheck check() override {
    const auto a = roundedInputs(std::size_t(d_.m) * d_.k, 11, t_), b = roundedInputs(std::size_t(d_.k) * d_.n, 12, t_);
    upload(a, b);
    c_.poison(stream_.get());
    run();
    const auto got = c_.download(stream_.get());
    const auto want = reference(a, b, d_);
    return compareWith(got.data(), want.data(), want.size(), tolerance(d_, tf32_));
  }
  void* deviceStream() const override { return stream_.get(); }

 private:
  // The inputs in the dtype, byte for byte.
  void upload(const std::vector<float>& a, const std::vector<float>& b) {
    auto bytesOf = [&](const std::vector<float>& v) {
      std::vector<unsigned char> out(v.size() * dtypeSize(t_));
      for (std::size_t i = 0; i < v.size(); ++i) storeElement(out.data(), t_, i, v[i]);
      return out;
    };
    a_.upload(bytesOf(a), stream_.get());
    b_.upload(bytesOf(b), stream_.get());
  }
  Dims d_;
  DType t_;
  bool tf32_;
  cuda::Stream stream_;
  cuda::Blas blas_;
  cuda::DeviceArray<unsigned char> a_, b_;
  cuda::DeviceArray<float> c_;
};
#else
using CudaGemmCase = void;  // built without CUDA
#endif

class GemmOp final : public KernelOp {
 public:
  std::string_view name() const override { return "gemm"; }
  std::vector<KernelShape> shapes(std::int64_t H, std::int64_t S, std::int64_t B, std::int64_t V) const override {
    const std::int64_t T = B * S;
    auto s = [](std::string n, std::int64_t m, std::int64_t nn, std::int64_t k) { return KernelShape{std::move(n), {{"M", m}, {"N", nn}, {"K", k}}}; };
    return {s("attn.qkv", T, 3 * H, H), s("attn.proj", T, H, H), s("mlp.up", T, 4 * H, H), s("mlp.down", T, H, 4 * H),
            s("lm_head", T, V, H), s("square 1024", 1024, 1024, 1024), s("square 2048", 2048, 2048, 2048)};
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
  static Dims dims(const KernelShape& s) { return {static_cast<int>(s["M"]), static_cast<int>(s["N"]), static_cast<int>(s["K"])}; }
};

}  // namespace
const KernelOp& gemmKernelOp() { static const GemmOp op; return op; }
}  // namespace ts
