#pragma once
// The CPU convolution's two implementations, and how a caller picks one. cpu_ops.h's conv2dForward /
// conv2dBackwardData / conv2dBackwardFilter (NCHW) run the default method; the kernels benchmark names one.
//   onednn: oneDNN (the library PyTorch convolves with on CPUs) over the whole batch, NCHW or NHWC; its own
//           choice of kernel (impl below names it), primitives cached by shape, pass and layout.
//   im2col: each image's receptive fields unrolled into columns and one GEMM (OpenBLAS); NCHW only. The
//           fallback of a build without oneDNN.
// Both keep cpu_ops.h's contract: the forward overwrites y; the backward passes accumulate into dx, dw, dbias
// (dx: or overwrite it, as the caller asks).
#include <string>
#include <string_view>
#include <utility>

#include "base/enum_names.h"
#include "kernels/cpu/cpu_ops.h"

namespace ts {

template <>
struct EnumNames<ConvLayout> {
  static constexpr std::pair<std::string_view, ConvLayout> kNames[] = {{"nchw", ConvLayout::kNchw}, {"nhwc", ConvLayout::kNhwc}};
};

namespace cpu {

enum class ConvAlgorithm { kOneDnn, kIm2col };
enum class ConvPass { kForward, kBackwardData, kBackwardFilter };

bool haveOneDnn();                     // built with oneDNN
ConvAlgorithm defaultConvAlgorithm();  // oneDNN when built with it, else im2col
std::string oneDnnDescription();       // "oneDNN 2.6.3, OpenMP threads"; "" without oneDNN

// The filter's layout: the activations' (KCRS with NCHW, KRSC with NHWC: what a channels-last caller of the
// kernels benchmark holds), or KCRS whatever the activations' (the CNN's parameters and checkpoints, which
// stay KCRS when its activations are channels-last: oneDNN reorders a filter into its own blocked layout in
// either case).
enum class FilterLayout { kMatching, kKcrs };

struct ConvMethod {
  ConvAlgorithm algorithm = defaultConvAlgorithm();
  ConvLayout layout = ConvLayout::kNchw;
  FilterLayout filter = FilterLayout::kMatching;
  bool krscFilter() const { return layout == ConvLayout::kNhwc && filter == FilterLayout::kMatching; }
};
// Error when the build cannot run `m` (oneDNN absent; im2col asked for NHWC).
void requireConvMethod(const ConvMethod& m);

// As cpu_ops.h's, with x, y (dx, dy) in m.layout and w (dw) in m's filter layout. Error (one line) when oneDNN fails.
void conv2dForward(float* y, const float* x, const float* w, const float* bias, const Conv2dShape& s, const ConvMethod& m);
void conv2dBackwardData(float* dx, const float* dy, const float* w, const Conv2dShape& s, const ConvMethod& m,
                        Write write = Write::kAccumulate);
void conv2dBackwardFilter(float* dw, float* dbias, const float* dy, const float* x, const Conv2dShape& s, const ConvMethod& m);

// The kernel that runs pass p at s with m: oneDNN's implementation ("jit:avx512_core", "brgconv:avx512_core",
// "gemm:jit", ...), or "gemm" for im2col. For a benchmark's record.
std::string convImplementation(ConvPass p, const Conv2dShape& s, const ConvMethod& m);

}  // namespace cpu

template <>
struct EnumNames<cpu::ConvAlgorithm> {
  static constexpr std::pair<std::string_view, cpu::ConvAlgorithm> kNames[] = {{"onednn", cpu::ConvAlgorithm::kOneDnn},
                                                                               {"im2col", cpu::ConvAlgorithm::kIm2col}};
};
template <>
struct EnumNames<cpu::ConvPass> {
  static constexpr std::pair<std::string_view, cpu::ConvPass> kNames[] = {{"forward", cpu::ConvPass::kForward},
                                                                          {"backward_data", cpu::ConvPass::kBackwardData},
                                                                          {"backward_filter", cpu::ConvPass::kBackwardFilter}};
};

}  // namespace ts
