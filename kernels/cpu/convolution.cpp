// Which CPU convolution runs: oneDNN when the build has it, else im2col + GEMM (kernels/cpu/convolution.h).
#include "kernels/cpu/convolution.h"

#include <fmt/format.h>

#include "base/error.h"
#include "kernels/cpu/convolution_backends.h"

namespace ts::cpu {

bool haveOneDnn() { return onednn::available(); }

ConvAlgorithm defaultConvAlgorithm() { return haveOneDnn() ? ConvAlgorithm::kOneDnn : ConvAlgorithm::kIm2col; }

void requireConvMethod(const ConvMethod& m) {
  if (m.algorithm == ConvAlgorithm::kOneDnn && !haveOneDnn())
    throw Error("the onednn convolution needs a build with oneDNN (libdnnl-dev), and this one has none");
  if (m.algorithm == ConvAlgorithm::kIm2col && m.layout != ConvLayout::kNchw)
    throw Error(fmt::format("the im2col convolution runs in nchw only, not {}", nameOf(m.layout)));
}

void conv2dForward(float* y, const float* x, const float* w, const float* bias, const Conv2dShape& s, const ConvMethod& m) {
  requireConvMethod(m);
  if (m.algorithm == ConvAlgorithm::kIm2col) return im2col::forward(y, x, w, bias, s);
  onednn::forward(y, x, w, bias, s, m);
}

void conv2dBackwardData(float* dx, const float* dy, const float* w, const Conv2dShape& s, const ConvMethod& m, Write write) {
  requireConvMethod(m);
  if (m.algorithm == ConvAlgorithm::kIm2col) return im2col::backwardData(dx, dy, w, s, write);
  onednn::backwardData(dx, dy, w, s, m, write);
}

void conv2dBackwardFilter(float* dw, float* dbias, const float* dy, const float* x, const Conv2dShape& s, const ConvMethod& m) {
  requireConvMethod(m);
  if (m.algorithm == ConvAlgorithm::kIm2col) return im2col::backwardFilter(dw, dbias, dy, x, s);
  onednn::backwardFilter(dw, dbias, dy, x, s, m);
}

std::string convImplementation(ConvPass p, const Conv2dShape& s, const ConvMethod& m) {
  requireConvMethod(m);
  return m.algorithm == ConvAlgorithm::kIm2col ? "gemm" : onednn::implementation(p, s, m);
}

std::string oneDnnDescription() { return onednn::description(); }

// cpu_ops.h's convolution: the layers' NCHW with the default method.
void conv2dForward(float* y, const float* x, const float* w, const float* bias, const Conv2dShape& s) {
  conv2dForward(y, x, w, bias, s, ConvMethod{});
}
void conv2dBackwardData(float* dx, const float* dy, const float* w, const Conv2dShape& s, Write write) {
  conv2dBackwardData(dx, dy, w, s, ConvMethod{}, write);
}
void conv2dBackwardFilter(float* dw, float* dbias, const float* dy, const float* x, const Conv2dShape& s) {
  conv2dBackwardFilter(dw, dbias, dy, x, s, ConvMethod{});
}

}  // namespace ts::cpu
