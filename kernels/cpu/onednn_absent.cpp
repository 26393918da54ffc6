// A build without oneDNN: the CPU convolution is im2col + GEMM alone, and the GEMM epilogue a pass over C
// after OpenBLAS. requireConvMethod refuses oneDNN before any of the convolution passes is reached; they throw
// rather than do nothing should a caller skip it.
#include "base/error.h"
#include "kernels/cpu/convolution_backends.h"
#include "kernels/cpu/gemm_backends.h"

namespace ts::cpu::onednn {
namespace {
[[noreturn]] void absent() { throw Error("this build has no oneDNN (libdnnl-dev): the CPU convolution is im2col"); }
}  // namespace

bool available() { return false; }
std::string description() { return ""; }
void forward(float*, const float*, const float*, const float*, const Conv2dShape&, const ConvMethod&) { absent(); }
void backwardData(float*, const float*, const float*, const Conv2dShape&, const ConvMethod&, Write) { absent(); }
void backwardFilter(float*, float*, const float*, const float*, const Conv2dShape&, const ConvMethod&) { absent(); }
std::string implementation(ConvPass, const Conv2dShape&, const ConvMethod&) { absent(); }

bool gemmEpilogue(bool, bool, int, int, int, float, const float*, int, const float*, int, float, float*, int, const float*,
                  bool) {
  return false;
}
std::string gemmEpilogueImplementation(bool, bool, int, int, int, bool, bool) { return ""; }

}  // namespace ts::cpu::onednn
