#pragma once
// The two CPU convolution implementations behind kernels/cpu/convolution.h's dispatch (internal to kernels/cpu).
// Each takes cpu_ops.h's arguments: the forward overwrites y; the backward passes accumulate (backward-data: or
// overwrites, as `write` says).
#include <string>

#include "kernels/cpu/convolution.h"

namespace ts::cpu {

namespace im2col {  // convolution_im2col.cpp: NCHW
void forward(float* y, const float* x, const float* w, const float* bias, const Conv2dShape& s);
void backwardData(float* dx, const float* dy, const float* w, const Conv2dShape& s, Write write);
void backwardFilter(float* dw, float* dbias, const float* dy, const float* x, const Conv2dShape& s);
}  // namespace im2col

// convolution_onednn.cpp; in a build without oneDNN, onednn_absent.cpp, whose available() is false
// and whose passes throw (requireConvMethod refuses oneDNN there before they are reached).
namespace onednn {
bool available();
void forward(float* y, const float* x, const float* w, const float* bias, const Conv2dShape& s, const ConvMethod& m);
void backwardData(float* dx, const float* dy, const float* w, const Conv2dShape& s, const ConvMethod& m, Write write);
void backwardFilter(float* dw, float* dbias, const float* dy, const float* x, const Conv2dShape& s, const ConvMethod& m);
std::string implementation(ConvPass p, const Conv2dShape& s, const ConvMethod& m);
std::string description();  // "" when absent
}  // namespace onednn

}  // namespace ts::cpu
