#pragma once
// The compute threads of a process: one number for OpenBLAS, the OpenMP pool of the CPU kernels (and any
// library on it, as oneDNN), set once when a run starts (bench/run/compute_threads.h decides it).
// With OpenBLAS's OpenMP build they are one pool; with its pthread build, two pools of that size that never
// run at once (a GEMM, then an element-wise kernel).
#include <string>

namespace ts::cpu {

void setComputeThreads(int n);
int computeThreads();  // 1 until set
// How OpenBLAS runs its threads: "openmp", "pthread", "serial", or "none" (built without OpenBLAS).
std::string blasThreading();

}  // namespace ts::cpu
