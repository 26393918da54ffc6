#pragma once
// Batch normalisation over channels-last activations [R = N*HW rows, C channels] (normalization_channels_last.cpp),
// behind cpu_ops.h's batchnorm* with layout NHWC (internal to kernels/cpu). Arguments and results as cpu_ops.h's.
#include <cstddef>

#include "kernels/cpu/cpu_ops.h"

namespace ts::cpu::channels_last {
void batchnormInference(float* out, const float* inp, const float* weight, const float* bias, const float* runningMean,
                        const float* runningVar, std::size_t R, std::size_t C, float eps);
void batchnormForward(float* out, float* mean, float* rstd, const float* inp, const float* weight, const float* bias,
                      std::size_t R, std::size_t C, float eps, float* runningMean, float* runningVar, float momentum,
                      const ReplicaSum* replicas, bool reluAfter);
void batchnormBackward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp, const float* weight,
                       const float* mean, const float* rstd, std::size_t R, std::size_t C, Write write,
                       const ReplicaSum* replicas);
}  // namespace ts::cpu::channels_last
