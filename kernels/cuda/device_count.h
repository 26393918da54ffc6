#pragma once
// How many CUDA GPUs this process can use: the one place that asks the runtime (cudaGetDeviceCount) and
// handles its failure. Declared for every build: without CUDA it answers 0, so callers need no #ifdef.
#include <string>

namespace ts::cuda {

// 0 where no GPU is present, where the driver or runtime cannot start, and in a build without CUDA; then
// *whyNone (when given) says why: "cudaGetDeviceCount: <CUDA's text>", "the CUDA runtime sees no device" or
// "built without CUDA". CUDA's error is cleared, so that the next CUDA call does not report it again.
int usableDeviceCount(std::string* whyNone = nullptr);

}  // namespace ts::cuda
