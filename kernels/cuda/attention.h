#pragma once
// Causal scaled dot-product attention on the GPU, q/k/v/out [B, NH, T, D] float32, the same meaning as
// cpu::attentionForward: out = softmax(q k^T / sqrt(D), causal) v. Two implementations:
//  - attentionForward: fused, one pass (flash-attention style: online softmax, the T x T scores never
//    leave the chip). Reads q, k, v and writes out: 16*B*NH*T*D bytes of DRAM traffic at best (k and v
//    are re-read once per query tile, mostly from L2); the causal half of 4*B*NH*T*T*D FLOPs.
//  - attentionForwardTwoPass: cuBLASLt batched GEMM for the scores, the causal softmax kernel, batched GEMM
//    with v. 4*B*NH*T*T*D FLOPs (the masked half too) and the scores written and read twice in float32:
//    16*B*NH*T*T bytes on top of q, k, v and out.
#include <cstddef>

#include <cuda_runtime_api.h>

#include "kernels/cuda/gemm.h"

namespace ts::cuda {

// The largest head dimension the fused kernel takes.
constexpr int kAttentionMaxHeadDim = 128;

// Fused; D from 1 to kAttentionMaxHeadDim (UsageError otherwise).
void attentionForward(float* out, const float* q, const float* k, const float* v, int B, int NH, int T, int D,
                      cudaStream_t stream);

// The scores and the probabilities, B*NH*T*T float32 each.
std::size_t attentionTwoPassWorkspaceBytes(int B, int NH, int T);
// Two-pass (unfused): `workspace` holds attentionTwoPassWorkspaceBytes(B, NH, T) bytes of device memory.
void attentionForwardTwoPass(float* out, const float* q, const float* k, const float* v, int B, int NH, int T, int D, Blas& blas,
                             void* workspace, cudaStream_t stream);

}  // namespace ts::cuda
