#pragma once
// How many CUDA GPUs this process can use: the one place that asks the runtime (cudaGetDeviceCount) and
// handles its failure. Declared for every build: without CUDA it answers 0, so callers need no #ifdef.
#include <string>

namespace ts::cuda {

// 0 where no GPU is present, where the driver or runtime cannot start, and in a build without CUDA; then
// *whyNone (when given) says why: "no NVIDIA driver: ...", "NVIDIA driver too old: ..." (driver_diagnosis.h),
// "cudaGetDeviceCount: <CUDA's text>", "the CUDA runtime sees no device" or "built without CUDA". CUDA's last error is cleared,
// so that the next checked call does not report "no device" (a runtime that cannot start, such as one newer than the driver,
// fails every call anyway).
int usableDeviceCount(std::string* whyNone = nullptr);

}  // namespace ts::cuda
