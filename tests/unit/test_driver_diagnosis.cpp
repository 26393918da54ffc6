// Why no device, in every case the runtime words alike (issue #35): no driver installed, a driver library
// without its kernel module or the reverse, a driver too old for this build's runtime, and any other failure.
#include <gtest/gtest.h>

#include <string>

#include "kernels/cuda/driver_diagnosis.h"

namespace ts::cuda {
namespace {

constexpr const char* kInsufficient = "CUDA driver version is insufficient for CUDA runtime version";

DriverFacts facts(int driver, std::optional<std::string> module, bool insufficient = true) {
  return {insufficient, insufficient ? kInsufficient : "unknown error", driver, 13000, std::move(module)};
}

TEST(DriverDiagnosis, NothingInstalledIsNoDriverNotAnOldOne) {
  EXPECT_EQ(whyNoDevice(facts(0, std::nullopt)),
            "no NVIDIA driver: neither its library libcuda.so.1 nor its kernel module (/proc/driver/nvidia) is present; this "
            "build's CUDA 13.0 runtime needs a driver for CUDA 13.x, R580 or newer");
}

TEST(DriverDiagnosis, AModuleWithoutItsLibraryIsNamed) {
  const std::string why = whyNoDevice(facts(0, "580.65.06"));
  EXPECT_EQ(why.rfind("no NVIDIA driver library: kernel module 580.65.06 is loaded but libcuda.so.1 is not found", 0), 0u) << why;
}

TEST(DriverDiagnosis, AnOldDriverSaysWhatItSupportsAndWhatIsNeeded) {
  EXPECT_EQ(whyNoDevice(facts(12020, "535.104.05")),
            "NVIDIA driver too old: it supports CUDA 12.2, kernel module 535.104.05; this build's CUDA 13.0 runtime needs a "
            "driver for CUDA 13.x, R580 or newer");
  EXPECT_EQ(whyNoDevice(facts(12080, std::nullopt)),
            "NVIDIA driver too old: it supports CUDA 12.8; this build's CUDA 13.0 runtime needs a driver for CUDA 13.x, R580 or "
            "newer");
}

TEST(DriverDiagnosis, OtherFailuresKeepCudasWordsAndAMissingModule) {
  EXPECT_EQ(whyNoDevice(facts(13000, "580.65.06", false)), "cudaGetDeviceCount: unknown error");
  EXPECT_EQ(whyNoDevice(facts(13000, std::nullopt, false)),
            "cudaGetDeviceCount: unknown error; no NVIDIA kernel module is loaded: no /proc/driver/nvidia");
}

TEST(DriverDiagnosis, TheKernelModuleVersionIsReadFromProc) {
  EXPECT_EQ(kernelModuleVersion("NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.65.06  Sun Jul 27 07:09:18 UTC 2025\n"
                                "GCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n"),
            "580.65.06");
  EXPECT_EQ(kernelModuleVersion("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  575.57.08  Release Build\n"),
            "575.57.08");
  EXPECT_EQ(kernelModuleVersion("NVRM version: NVIDIA UNIX x86_64 Kernel Module\n580.65.06\n"), "");
  EXPECT_EQ(kernelModuleVersion(""), "");
  EXPECT_EQ(cudaVersionText(12020), "12.2");
}

}  // namespace
}  // namespace ts::cuda
