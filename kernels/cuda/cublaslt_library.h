#pragma once
// cuBLASLt is loaded the first time it is used, not when trainscope starts. Linked, its 354,000 relocations made
// every process of the CUDA build start with 0.1 s of CPU and 26,000 page faults (937 page faults without it, for
// `trainscope --version`): each rank, each `trainscope env`, each of the test suite's thousands of processes, most
// of which never run a GPU GEMM.
// kernels/cuda/cublaslt_library.cpp defines the cuBLASLt entry points trainscope calls (the declarations stay
// <cublasLt.h>'s, so callers are unchanged); each forwards to the library, loaded once (dlopen of the SONAME the
// headers were built for, found as the linker would: LD_LIBRARY_PATH, then the binary's RUNPATH).
#include <string>

namespace ts::cuda {

// The library's file name (libcublasLt.so.<major of the headers>: kernels/CMakeLists.txt names it, for the scripts too).
std::string cublasLtFileName();
// Loads it if it is not loaded; false (and why, one line) when it cannot be, in which case every entry point
// returns CUBLAS_STATUS_NOT_INITIALIZED and cublasLtGetStatusString says why.
bool cublasLtAvailable(std::string* why = nullptr);

}  // namespace ts::cuda
