#pragma once
// Which GPUs a process drives on the NCCL backend, decided by each process from what it alone knows (its
// local rank, the GPUs its host shows) before the processes exchange anything. The one rule for every
// command that gives each process GPUs of its own (collectives, train):
//   - by default the local process l of a host drives GPUs l*G .. l*G+G-1 (G = --gpus-per-process, 0 = all);
//   - --device cuda:N names the first GPU instead, the same for every process of a host: processes share
//     those GPUs deliberately (with a distinct NCCL_HOSTID each, which NCCL needs to put two ranks on one GPU).
// A host with fewer GPUs than that asks for is refused, saying both ways out. (kernels measure on cuda:0 from
// process 0, links test every GPU of a host from its first process: neither gives processes GPUs of their own.)
#include <vector>

namespace ts {

struct GpuChoice {
  int perProcess = 1;  // GPUs each process drives; 0: every GPU its host shows
  int first = -1;      // --device cuda:N: N; -1: by local rank
};

// The CUDA ordinals local process `localRank` drives on a host that shows `visible` GPUs (at least one), or a
// UsageError saying why they are not there and what to do; the same on every process of a host that asks alike.
std::vector<int> planLocalGpus(const GpuChoice& choice, int localRank, int visible);

}  // namespace ts
