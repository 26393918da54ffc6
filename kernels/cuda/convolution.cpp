// cuDNN convolution through its convolution API (cudnn_cnn.h: descriptors, cudnnGet*Algorithm_v7,
// cudnnFind*AlgorithmEx, cudnnConvolution*). cuDNN 9 marks that API deprecated in favour of its graph
// API but still ships it in libcudnn; its deprecation attributes (active when CUDNN_WARN_DEPRECATED is
// defined) are silenced for this file alone, so that the build stays warning-free either way.
#if defined(__GNUC__)
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#endif

#include "kernels/cuda/convolution.h"

#include <algorithm>
#include <climits>
#include <initializer_list>
#include <iterator>
#include <optional>
#include <vector>

#include <cudnn.h>
#include <fmt/format.h>

#include "base/error.h"
#include "kernels/cuda/channel_bias.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_resources.h"

namespace ts::cuda {
namespace {

// "<call> failed: <status> (<cuDNN's last message>)", on one line.
std::string cudnnFailure(const char* call, cudnnStatus_t rc) {
  char detail[512] = {};
  cudnnGetLastErrorString(detail, sizeof(detail) - 1);
  std::string what = std::string(call) + " failed: " + cudnnGetErrorString(rc);
  std::string more(detail);
  std::replace(more.begin(), more.end(), '\n', ' ');
  if (!more.empty()) what += " (" + more + ")";
  return what;
}

}  // namespace
}  // namespace ts::cuda

// CUDNN_CHECK: every cuDNN call goes through here; a failure becomes a ts::Error naming the call, cuDNN's
// status and its last error message, and the active context.
#define CUDNN_CHECK(call)                                                                                                \
  do {                                                                                                                   \
    const cudnnStatus_t ts_cudnn_rc_ = (call);                                                                           \
    if (ts_cudnn_rc_ != CUDNN_STATUS_SUCCESS) throw ::ts::errorInContext(::ts::cuda::cudnnFailure(#call, ts_cudnn_rc_)); \
  } while (0)

namespace ts::cuda {
namespace {

constexpr int kDirections = 3;
int index(ConvDirection d) { return static_cast<int>(d); }

const char* directionName(ConvDirection d) {
  switch (d) {
    case ConvDirection::kForward:
      return "forward";
    case ConvDirection::kBackwardData:
      return "backward-data";
    case ConvDirection::kBackwardFilter:
      return "backward-filter";
  }
  return "?";
}

cudnnDataType_t cudnnType(Precision p) {
  switch (storageType(p)) {
    case DType::kFloat32:
      return CUDNN_DATA_FLOAT;
    case DType::kBFloat16:
      return CUDNN_DATA_BFLOAT16;
    case DType::kFloat16:
      return CUDNN_DATA_HALF;
    default:
      break;
  }
  throw UsageError(fmt::format("conv2d: precision {} is not supported by the cuDNN convolution", precisionName(p)));
}

// The math each precision may run in. float32: FMA only (from Ampere on, CUDNN_DEFAULT_MATH lets float32
// data use TF32 tensor cores, which would not be float32 arithmetic). TF32: tensor cores allowed, never
// CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION (float32 data down-converted to float16). bfloat16 / float16:
// tensor cores; the compute type (the accumulation) is float32 throughout.
cudnnMathType_t initialMath(Precision p) { return p == Precision::kFloat32 ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH; }

// Whether a ranked result's math may be taken. For float32 the first pass takes only FMA results; if
// there are none the second takes CUDNN_DEFAULT_MATH ones too, which then still run under
// CUDNN_FMA_MATH (runMath), so float32 never becomes TF32.
bool acceptableMath(cudnnMathType_t m, Precision p, bool relaxed) {
  if (p == Precision::kFloat32) return m == CUDNN_FMA_MATH || (relaxed && m == CUDNN_DEFAULT_MATH);
  if (p == Precision::kTF32) return m != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
  return true;
}
cudnnMathType_t runMath(cudnnMathType_t ranked, Precision p) { return p == Precision::kFloat32 ? CUDNN_FMA_MATH : ranked; }

const char* mathTypeName(cudnnMathType_t m) {
  switch (m) {
    case CUDNN_DEFAULT_MATH:
      return "default";
    case CUDNN_TENSOR_OP_MATH:
      return "tensor_op";
    case CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION:
      return "tensor_op_allow_conversion";
    case CUDNN_FMA_MATH:
      return "fma";
  }
  return "?";
}

// cuDNN's algorithm enumerators without their prefix, in enumerator order.
std::string algorithmName(ConvDirection d, int algo) {
  static const char* const kForward[] = {"IMPLICIT_GEMM", "IMPLICIT_PRECOMP_GEMM", "GEMM", "DIRECT", "FFT", "FFT_TILING",
                                         "WINOGRAD",      "WINOGRAD_NONFUSED"};
  static const char* const kBackwardData[] = {"ALGO_0", "ALGO_1", "FFT", "FFT_TILING", "WINOGRAD", "WINOGRAD_NONFUSED"};
  static const char* const kBackwardFilter[] = {"ALGO_0",    "ALGO_1", "FFT", "ALGO_3", "WINOGRAD", "WINOGRAD_NONFUSED",
                                                "FFT_TILING"};
  static_assert(std::size(kForward) == CUDNN_CONVOLUTION_FWD_ALGO_COUNT);
  static_assert(std::size(kBackwardData) == CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT);
  static_assert(std::size(kBackwardFilter) == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT);
  const char* const* names = d == ConvDirection::kForward        ? kForward
                             : d == ConvDirection::kBackwardData ? kBackwardData
                                                                 : kBackwardFilter;
  const int count = d == ConvDirection::kForward        ? int(std::size(kForward))
                    : d == ConvDirection::kBackwardData ? int(std::size(kBackwardData))
                                                        : int(std::size(kBackwardFilter));
  if (algo >= 0 && algo < count) return names[algo];
  return fmt::format("ALGO_{}", algo);
}

std::string describe(const cpu::Conv2dShape& s, const ConvolutionOptions& o) {
  return fmt::format("conv2d N={} C={} H={} W={} K={} R={} S={} stride={} pad={} {} {}", s.N, s.C, s.H, s.W, s.K, s.R, s.S,
                     s.stride, s.pad, precisionName(o.precision), convLayoutName(o.layout));
}

// The shape as cuDNN's int-indexed 4-D descriptors can take it.
void validate(const cpu::Conv2dShape& s) {
  if (s.N < 1 || s.C < 1 || s.H < 1 || s.W < 1 || s.K < 1 || s.R < 1 || s.S < 1 || s.stride < 1 || s.pad < 0)
    throw UsageError(
        fmt::format("conv2d: N, C, H, W, K, R, S and stride must be at least 1 and pad at least 0 (got N={} C={} H={} W={} K={} "
                    "R={} S={} stride={} pad={})",
                    s.N, s.C, s.H, s.W, s.K, s.R, s.S, s.stride, s.pad));
  if (s.H > INT_MAX / 4 || s.W > INT_MAX / 4 || s.pad > INT_MAX / 4)  // P() and Q() compute H + 2 pad in int
    throw UsageError(fmt::format("conv2d: H={} W={} pad={} is out of range", s.H, s.W, s.pad));
  if (s.H + 2 * s.pad < s.R || s.W + 2 * s.pad < s.S || s.P() < 1 || s.Q() < 1)
    throw UsageError(fmt::format("conv2d: a {}x{} filter does not fit the {}x{} input padded by {}", s.R, s.S, s.H, s.W, s.pad));
  const auto tooLarge = [](long long n) { return n > INT_MAX; };
  const long long nx = 1LL * s.N * s.C * s.H * s.W, ny = 1LL * s.N * s.K * s.P() * s.Q(), nw = 1LL * s.K * s.C * s.R * s.S;
  if (tooLarge(nx) || tooLarge(ny) || tooLarge(nw))
    throw UsageError(
        fmt::format("conv2d: x ({}), y ({}) or w ({}) elements exceed cuDNN's limit of 2^31-1 per tensor", nx, ny, nw));
}

template <typename Algo>
struct Chosen {
  Algo algo;
  cudnnMathType_t math;
  std::size_t workspace;
};

// The first of cuDNN's ranked results that succeeded, takes an allowed math and fits the workspace
// limit, its workspace queried under the math it will run with (left set on conv). workspaceOf(algo,
// &bytes) returns cuDNN's status; "not supported" passes to the next result.
template <typename Perf, typename WorkspaceQuery>
std::optional<Chosen<decltype(Perf::algo)>> firstUsable(const std::vector<Perf>& ranked, Precision p, std::size_t maxWorkspace,
                                                        cudnnConvolutionDescriptor_t conv, const char* queryName,
                                                        WorkspaceQuery workspaceOf) {
  for (bool relaxed : {false, true}) {
    if (relaxed && p != Precision::kFloat32) break;  // only float32 has a second pass
    for (const Perf& r : ranked) {
      if (r.status != CUDNN_STATUS_SUCCESS || !acceptableMath(r.mathType, p, relaxed) || r.memory > maxWorkspace) continue;
      if (relaxed && r.mathType == CUDNN_FMA_MATH) continue;  // already tried in the first pass
      const cudnnMathType_t math = runMath(r.mathType, p);
      CUDNN_CHECK(cudnnSetConvolutionMathType(conv, math));
      std::size_t bytes = 0;
      const cudnnStatus_t rc = workspaceOf(r.algo, &bytes);
      if (CUDNN_STATUS_CATEGORY(rc) == CUDNN_STATUS_NOT_SUPPORTED) continue;
      if (rc != CUDNN_STATUS_SUCCESS) throw errorInContext(cudnnFailure(queryName, rc));
      if (bytes > maxWorkspace) continue;
      return Chosen<decltype(Perf::algo)>{r.algo, math, bytes};
    }
  }
  return std::nullopt;
}

// Why nothing was usable, for the error: each ranked result's algorithm, status, math and memory.
template <typename Perf>
std::string rankedText(ConvDirection d, const std::vector<Perf>& ranked) {
  std::string out;
  for (const Perf& r : ranked)
    out += fmt::format("{}{} {} {} {} B", out.empty() ? "" : "; ", algorithmName(d, static_cast<int>(r.algo)),
                       cudnnGetErrorString(r.status), mathTypeName(r.mathType), r.memory);
  return out.empty() ? "none ranked" : out;
}

}  // namespace

std::string_view convLayoutName(ConvLayout l) { return l == ConvLayout::kNhwc ? "nhwc" : "nchw"; }

struct Convolution::State {
  cudnnHandle_t handle = nullptr;
  cudnnTensorDescriptor_t x = nullptr, y = nullptr, bias = nullptr;  // y also describes dy; x dx; bias dbias
  cudnnFilterDescriptor_t w = nullptr;                               // also dw
  // One convolution descriptor per direction: each carries the math its chosen algorithm runs with.
  cudnnConvolutionDescriptor_t conv[kDirections] = {nullptr, nullptr, nullptr};
  bool prepared[kDirections] = {false, false, false};
  cudnnConvolutionFwdAlgo_t forwardAlgo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  cudnnConvolutionBwdDataAlgo_t backwardDataAlgo = CUDNN_CONVOLUTION_BWD_DATA_ALGO_0;
  cudnnConvolutionBwdFilterAlgo_t backwardFilterAlgo = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0;
  int algo[kDirections] = {0, 0, 0};  // the three above, for names
  cudnnMathType_t math[kDirections] = {CUDNN_DEFAULT_MATH, CUDNN_DEFAULT_MATH, CUDNN_DEFAULT_MATH};
  std::size_t workspace[kDirections] = {0, 0, 0};
  DeviceBuffer workspaceBuffer;  // the largest of workspace[]

  State() = default;
  State(const State&) = delete;
  State& operator=(const State&) = delete;
  ~State() {  // destructors do not throw: statuses ignored
    for (auto& c : conv)
      if (c) cudnnDestroyConvolutionDescriptor(c);
    if (w) cudnnDestroyFilterDescriptor(w);
    if (bias) cudnnDestroyTensorDescriptor(bias);
    if (y) cudnnDestroyTensorDescriptor(y);
    if (x) cudnnDestroyTensorDescriptor(x);
    if (handle) cudnnDestroy(handle);
  }
};

Convolution::Convolution(const cpu::Conv2dShape& shape, const ConvolutionOptions& options)
    : shape_(shape), options_(options), s_(std::make_unique<State>()) {
  validate(shape_);
  const Precision p = options_.precision;
  const cudnnDataType_t type = cudnnType(p);
  const std::string what = describe(shape_, options_);
  ErrorContext context(what);
  const auto& s = shape_;
  const int P = s.P(), Q = s.Q();
  const cudnnTensorFormat_t format = options_.layout == ConvLayout::kNhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;

  CUDNN_CHECK(cudnnCreate(&s_->handle));
  CUDNN_CHECK(cudnnCreateTensorDescriptor(&s_->x));
  CUDNN_CHECK(cudnnCreateTensorDescriptor(&s_->y));
  CUDNN_CHECK(cudnnCreateTensorDescriptor(&s_->bias));
  CUDNN_CHECK(cudnnCreateFilterDescriptor(&s_->w));
  for (auto& c : s_->conv) CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&c));
  // Dimensions are always given as N,C,H,W (K,C,R,S); the format says how they are laid out.
  CUDNN_CHECK(cudnnSetTensor4dDescriptor(s_->x, format, type, s.N, s.C, s.H, s.W));
  CUDNN_CHECK(cudnnSetTensor4dDescriptor(s_->y, format, type, s.N, s.K, P, Q));
  CUDNN_CHECK(cudnnSetTensor4dDescriptor(s_->bias, format, type, 1, s.K, 1, 1));  // K contiguous values in either format
  CUDNN_CHECK(cudnnSetFilter4dDescriptor(s_->w, type, format, s.K, s.C, s.R, s.S));
  for (auto& c : s_->conv) {
    // Cross-correlation (no filter flip), as the CPU computes; float32 accumulation for every data type.
    CUDNN_CHECK(
        cudnnSetConvolution2dDescriptor(c, s.pad, s.pad, s.stride, s.stride, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    CUDNN_CHECK(cudnnSetConvolutionMathType(c, initialMath(p)));
  }
  int n = 0, k = 0, h = 0, w = 0;
  CUDNN_CHECK(cudnnGetConvolution2dForwardOutputDim(s_->conv[0], s_->x, s_->w, &n, &k, &h, &w));
  if (n != s.N || k != s.K || h != P || w != Q)
    throw errorInContext(
        fmt::format("internal: cuDNN's output is {}x{}x{}x{}, the CPU's {}x{}x{}x{}", n, k, h, w, s.N, s.K, P, Q));

  const bool wanted[kDirections] = {options_.forward, options_.backwardData, options_.backwardFilter};
  const bool search = options_.choice == ConvAlgoChoice::kSearch;
  std::size_t maxWorkspace = options_.maxWorkspaceBytes;
  // A search runs each algorithm on scratch tensors (not the caller's: it writes its outputs), with a
  // workspace of the limit, or half the free device memory if less. Filled with 0x3c bytes: finite,
  // non-zero values in all three types.
  std::optional<DeviceArray<unsigned char>> sx, sw, sy, sws;
  if (search && (wanted[0] || wanted[1] || wanted[2])) {
    std::size_t freeBytes = 0, totalBytes = 0;
    CUDA_CHECK(cudaMemGetInfo(&freeBytes, &totalBytes));
    maxWorkspace = std::min(maxWorkspace, freeBytes / 2);
    const std::size_t e = dtypeSize(storageType(p));
    sx.emplace(std::size_t(s.N) * s.C * s.H * s.W * e);
    sw.emplace(std::size_t(s.K) * s.C * s.R * s.S * e);
    sy.emplace(std::size_t(s.N) * s.K * P * Q * e);
    sws.emplace(maxWorkspace);
    for (auto* a : {&*sx, &*sw, &*sy}) CUDA_CHECK(cudaMemset(a->get(), 0x3c, a->size()));
    CUDA_CHECK(cudaDeviceSynchronize());
  }
  const auto noUsable = [&](ConvDirection d, const std::string& ranked) {
    return errorInContext(fmt::format("cuDNN has no usable {} algorithm within a workspace of {} bytes ({}: {})",
                                      directionName(d), maxWorkspace, search ? "timed" : "ranked", ranked));
  };

  if (wanted[index(ConvDirection::kForward)]) {
    const ConvDirection d = ConvDirection::kForward;
    cudnnConvolutionDescriptor_t conv = s_->conv[index(d)];
    int count = 0, returned = 0;
    CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithmMaxCount(s_->handle, &count));
    std::vector<cudnnConvolutionFwdAlgoPerf_t> ranked(std::max(count, 1));
    if (search)
      CUDNN_CHECK(cudnnFindConvolutionForwardAlgorithmEx(s_->handle, s_->x, sx->get(), s_->w, sw->get(), conv, s_->y, sy->get(),
                                                         int(ranked.size()), &returned, ranked.data(), sws->get(), maxWorkspace));
    else
      CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(s_->handle, s_->x, s_->w, conv, s_->y, int(ranked.size()), &returned,
                                                         ranked.data()));
    ranked.resize(std::clamp(returned, 0, int(ranked.size())));
    const auto chosen =
        firstUsable(ranked, p, maxWorkspace, conv, "cudnnGetConvolutionForwardWorkspaceSize",
                    [&](cudnnConvolutionFwdAlgo_t a, std::size_t* bytes) {
                      return cudnnGetConvolutionForwardWorkspaceSize(s_->handle, s_->x, s_->w, conv, s_->y, a, bytes);
                    });
    if (!chosen) throw noUsable(d, rankedText(d, ranked));
    s_->forwardAlgo = chosen->algo;
    s_->algo[index(d)] = static_cast<int>(chosen->algo);
    s_->math[index(d)] = chosen->math;
    s_->workspace[index(d)] = chosen->workspace;
    s_->prepared[index(d)] = true;
  }
  if (wanted[index(ConvDirection::kBackwardData)]) {
    const ConvDirection d = ConvDirection::kBackwardData;
    cudnnConvolutionDescriptor_t conv = s_->conv[index(d)];
    int count = 0, returned = 0;
    CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithmMaxCount(s_->handle, &count));
    std::vector<cudnnConvolutionBwdDataAlgoPerf_t> ranked(std::max(count, 1));
    if (search)  // dy in the y scratch, dx written to the x scratch
      CUDNN_CHECK(cudnnFindConvolutionBackwardDataAlgorithmEx(s_->handle, s_->w, sw->get(), s_->y, sy->get(), conv, s_->x,
                                                              sx->get(), int(ranked.size()), &returned, ranked.data(), sws->get(),
                                                              maxWorkspace));
    else
      CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(s_->handle, s_->w, s_->y, conv, s_->x, int(ranked.size()),
                                                              &returned, ranked.data()));
    ranked.resize(std::clamp(returned, 0, int(ranked.size())));
    const auto chosen =
        firstUsable(ranked, p, maxWorkspace, conv, "cudnnGetConvolutionBackwardDataWorkspaceSize",
                    [&](cudnnConvolutionBwdDataAlgo_t a, std::size_t* bytes) {
                      return cudnnGetConvolutionBackwardDataWorkspaceSize(s_->handle, s_->w, s_->y, conv, s_->x, a, bytes);
                    });
    if (!chosen) throw noUsable(d, rankedText(d, ranked));
    s_->backwardDataAlgo = chosen->algo;
    s_->algo[index(d)] = static_cast<int>(chosen->algo);
    s_->math[index(d)] = chosen->math;
    s_->workspace[index(d)] = chosen->workspace;
    s_->prepared[index(d)] = true;
  }
  if (wanted[index(ConvDirection::kBackwardFilter)]) {
    const ConvDirection d = ConvDirection::kBackwardFilter;
    cudnnConvolutionDescriptor_t conv = s_->conv[index(d)];
    int count = 0, returned = 0;
    CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(s_->handle, &count));
    std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> ranked(std::max(count, 1));
    if (search)  // dy in the y scratch, dw written to the w scratch
      CUDNN_CHECK(cudnnFindConvolutionBackwardFilterAlgorithmEx(s_->handle, s_->x, sx->get(), s_->y, sy->get(), conv, s_->w,
                                                                sw->get(), int(ranked.size()), &returned, ranked.data(),
                                                                sws->get(), maxWorkspace));
    else
      CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(s_->handle, s_->x, s_->y, conv, s_->w, int(ranked.size()),
                                                                &returned, ranked.data()));
    ranked.resize(std::clamp(returned, 0, int(ranked.size())));
    const auto chosen =
        firstUsable(ranked, p, maxWorkspace, conv, "cudnnGetConvolutionBackwardFilterWorkspaceSize",
                    [&](cudnnConvolutionBwdFilterAlgo_t a, std::size_t* bytes) {
                      return cudnnGetConvolutionBackwardFilterWorkspaceSize(s_->handle, s_->x, s_->y, conv, s_->w, a, bytes);
                    });
    if (!chosen) throw noUsable(d, rankedText(d, ranked));
    s_->backwardFilterAlgo = chosen->algo;
    s_->algo[index(d)] = static_cast<int>(chosen->algo);
    s_->math[index(d)] = chosen->math;
    s_->workspace[index(d)] = chosen->workspace;
    s_->prepared[index(d)] = true;
  }
  if (search) CUDA_CHECK(cudaDeviceSynchronize());  // the search's work done before its scratch is freed

  // One workspace for all directions: they run one after another on the caller's stream.
  s_->workspaceBuffer = DeviceBuffer(*std::max_element(std::begin(s_->workspace), std::end(s_->workspace)));
}

Convolution::~Convolution() = default;

namespace {
void require(bool prepared, ConvDirection d) {
  if (!prepared)
    throw Error(fmt::format("internal: the convolution's {} direction was not prepared (ConvolutionOptions)", directionName(d)));
}
void requirePointers(std::initializer_list<const void*> ps, ConvDirection d) {
  for (const void* p : ps)
    if (!p) throw Error(fmt::format("internal: a null tensor passed to the convolution's {} direction", directionName(d)));
}
}  // namespace

void Convolution::forward(void* y, const void* x, const void* w, const void* bias, cudaStream_t stream, float beta) {
  constexpr ConvDirection d = ConvDirection::kForward;
  require(s_->prepared[index(d)], d);
  requirePointers({y, x, w}, d);
  const float one = 1.0f;  // alpha and beta are float for float, bfloat16 and float16 tensors
  CUDNN_CHECK(cudnnSetStream(s_->handle, stream));
  CUDNN_CHECK(cudnnConvolutionForward(s_->handle, &one, s_->x, x, s_->w, w, s_->conv[index(d)], s_->forwardAlgo,
                                      s_->workspaceBuffer.get(), s_->workspaceBuffer.bytes(), &beta, s_->y, y));
  if (!bias) return;
  const DType storage = storageType(options_.precision);
  if (storage == DType::kFloat32)
    CUDNN_CHECK(cudnnAddTensor(s_->handle, &one, s_->bias, bias, &one, s_->y, y));  // y += bias[k], broadcast over N, P, Q
  else  // cuDNN 9 does not document cudnnAddTensor for bfloat16: our kernel (channel_bias.h)
    channelBiasAdd16(static_cast<std::uint16_t*>(y), static_cast<const std::uint16_t*>(bias), std::size_t(shape_.N),
                     std::size_t(shape_.K), std::size_t(shape_.P()) * shape_.Q(), options_.layout == ConvLayout::kNhwc, storage,
                     stream);
}

void Convolution::backwardData(void* dx, const void* dy, const void* w, cudaStream_t stream, float beta) {
  constexpr ConvDirection d = ConvDirection::kBackwardData;
  require(s_->prepared[index(d)], d);
  requirePointers({dx, dy, w}, d);
  const float one = 1.0f;
  CUDNN_CHECK(cudnnSetStream(s_->handle, stream));
  CUDNN_CHECK(cudnnConvolutionBackwardData(s_->handle, &one, s_->w, w, s_->y, dy, s_->conv[index(d)], s_->backwardDataAlgo,
                                           s_->workspaceBuffer.get(), s_->workspaceBuffer.bytes(), &beta, s_->x, dx));
}

void Convolution::backwardFilter(void* dw, void* dbias, const void* dy, const void* x, cudaStream_t stream, float beta) {
  constexpr ConvDirection d = ConvDirection::kBackwardFilter;
  require(s_->prepared[index(d)], d);
  requirePointers({dw, dy, x}, d);
  const float one = 1.0f;
  CUDNN_CHECK(cudnnSetStream(s_->handle, stream));
  CUDNN_CHECK(cudnnConvolutionBackwardFilter(s_->handle, &one, s_->x, x, s_->y, dy, s_->conv[index(d)], s_->backwardFilterAlgo,
                                             s_->workspaceBuffer.get(), s_->workspaceBuffer.bytes(), &beta, s_->w, dw));
  if (!dbias) return;
  const DType storage = storageType(options_.precision);
  if (storage == DType::kFloat32)
    CUDNN_CHECK(cudnnConvolutionBackwardBias(s_->handle, &one, s_->y, dy, &beta, s_->bias, dbias));
  else  // nor cudnnConvolutionBackwardBias: our kernel (channel_bias.h)
    channelBiasBackward16(static_cast<std::uint16_t*>(dbias), static_cast<const std::uint16_t*>(dy), std::size_t(shape_.N),
                          std::size_t(shape_.K), std::size_t(shape_.P()) * shape_.Q(), options_.layout == ConvLayout::kNhwc, beta,
                          storage, stream);
}

std::string Convolution::algoName(ConvDirection d) const {
  require(s_->prepared[index(d)], d);
  return algorithmName(d, s_->algo[index(d)]);
}

std::string Convolution::mathName(ConvDirection d) const {
  require(s_->prepared[index(d)], d);
  return mathTypeName(s_->math[index(d)]);
}

std::size_t Convolution::workspaceBytes(ConvDirection d) const {
  require(s_->prepared[index(d)], d);
  return s_->workspace[index(d)];
}

std::size_t Convolution::workspaceAllocatedBytes() const { return s_->workspaceBuffer.bytes(); }

}  // namespace ts::cuda
