// What trainscope decides on the host about GPUs, on the nodes the fake GPU describes (tests/tools/fake_gpu):
// how many GPUs it counts, the inventory and its NVLink matrix, the peak each GPU link is held to, the SM
// clock it states, the datasheet peak MFU is taken against, and that the fake refuses work. ctest runs these
// with the fake preloaded (tests/CMakeLists.txt); each case sets the node it needs (TS_FAKE_GPU is read at
// every call). Run directly without the preload, every case skips and says so.
#include <dlfcn.h>

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "bench/inventory/inventory.h"
#include "bench/links/link_peaks.h"
#include "bench/telemetry/compute_clock.h"
#include "bench/train/compute_peaks.h"
#include "kernels/cuda/device_count.h"

namespace ts {
namespace {

bool fakePreloaded() {
  Dl_info info{};
  const void* f = reinterpret_cast<const void*>(&cudaGetDeviceCount);
  return ::dladdr(f, &info) != 0 && info.dli_fname && std::string(info.dli_fname).find("ts_fake_gpu") != std::string::npos;
}

class FakeGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fakePreloaded()) GTEST_SKIP() << "needs the fake GPU preloaded (LD_PRELOAD=build/tests/libts_fake_gpu.so; ctest does)";
    ::unsetenv("CUDA_VISIBLE_DEVICES");
  }
  static void node(const char* spec) { ::setenv("TS_FAKE_GPU", spec, 1); }
};

TEST_F(FakeGpu, TheGpuCountIsTheNodesAsCudaVisibleDevicesNarrowsIt) {
  node("h100:8");
  EXPECT_EQ(cuda::usableDeviceCount(), 8);
  ::setenv("CUDA_VISIBLE_DEVICES", "2,5", 1);
  EXPECT_EQ(cuda::usableDeviceCount(), 2);
  ::setenv("CUDA_VISIBLE_DEVICES", "6,9,1", 1);  // CUDA stops at the first GPU that is not there
  EXPECT_EQ(cuda::usableDeviceCount(), 1);
  ::unsetenv("CUDA_VISIBLE_DEVICES");
  node("h200:0");
  std::string why;
  EXPECT_EQ(cuda::usableDeviceCount(&why), 0);
  // (with "; no NVIDIA kernel module is loaded" after it on a host without one, as here)
  EXPECT_EQ(why.rfind("cudaGetDeviceCount: no CUDA-capable device is detected", 0), 0u) << why;
  ::unsetenv("TS_FAKE_GPU");
  EXPECT_EQ(cuda::usableDeviceCount(&why), 0);
  EXPECT_NE(why.find("TS_FAKE_GPU is not set"), std::string::npos) << why;
}

// The runtime says "CUDA driver version is insufficient" both for a driver too old and for none: each is told.
TEST_F(FakeGpu, ADriverTooOldIsToldFromNone) {
  node("h100:8");
  std::string why;
  ::setenv("TS_FAKE_CUDA_DRIVER", "12020", 1);  // a 535 driver
  EXPECT_EQ(cuda::usableDeviceCount(&why), 0);
  EXPECT_EQ(why.rfind("NVIDIA driver too old: it supports CUDA 12.2", 0), 0u) << why;
  EXPECT_NE(why.find("this build's CUDA 13."), std::string::npos) << why;
  ::setenv("TS_FAKE_CUDA_DRIVER", "0", 1);  // none installed
  EXPECT_EQ(cuda::usableDeviceCount(&why), 0);
  EXPECT_EQ(why.rfind("no NVIDIA driver", 0), 0u) << why;
  ::unsetenv("TS_FAKE_CUDA_DRIVER");
  EXPECT_EQ(cuda::usableDeviceCount(), 8);
}

TEST_F(FakeGpu, TheInventoryOfAnEightGpuNodeIsAnNvSwitchFabric) {
  node("h100:8");
  const nlohmann::json g = collectGpuInventory();
  ASSERT_TRUE(g["available"].get<bool>()) << g.dump();
  ASSERT_EQ(g["devices"].size(), 8u);
  const auto& d = g["devices"][7];
  EXPECT_EQ(d["name"], "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(d["memory_bytes"], 81559ull << 20);
  EXPECT_EQ(d["sm_count"], 132);
  EXPECT_EQ(d["compute_capability"], "9.0");
  EXPECT_EQ(d["pci_bus_id"], "0000:DB:00.0");
  EXPECT_EQ(d["sm_clock_max_mhz"], 1980);
  EXPECT_EQ(d["pcie_generation"], 5);
  EXPECT_EQ(d["pcie_width"], 16);
  ASSERT_EQ(g["links"]["source"], "nvml") << g["links"].dump();
  const auto& m = g["links"]["matrix"];
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 8; ++j) EXPECT_EQ(m[i][j], i == j ? "X" : "NV18") << i << "," << j;
}

TEST_F(FakeGpu, ALoneGpuHasNoLinks) {
  node("h200:1");
  const nlohmann::json g = collectGpuInventory();
  ASSERT_EQ(g["devices"].size(), 1u);
  EXPECT_EQ(g["devices"][0]["name"], "NVIDIA H200");
  EXPECT_EQ(g["devices"][0]["memory_bytes"], 143771ull << 20);
  EXPECT_EQ(g["links"]["matrix"], nlohmann::json::parse(R"([["X"]])"));
}

// The peak each link of `links --tests gpu` is held to comes from the inventory's cell, the GPU's compute
// capability and PCIe link, and its name (links_gpu.cpp): NVLink4 x18 between any two GPUs of an HGX node.
TEST_F(FakeGpu, TheLinkPeaksOfAnHgxNode) {
  for (const char* spec : {"h100:8", "h200:2"}) {
    node(spec);
    const nlohmann::json g = collectGpuInventory();
    const auto& d = g["devices"][1];
    const int major = std::stoi(d["compute_capability"].get<std::string>());
    const std::optional<double> pcie = pcieGbps(d["pcie_generation"].get<int>(), d["pcie_width"].get<int>());
    ASSERT_TRUE(pcie);
    EXPECT_NEAR(*pcie, 63.0, 0.1) << "PCIe Gen5 x16, per direction";
    const LinkClass pair = gpuPairLink(g["links"]["matrix"][0][1].get<std::string>(), major, 0, pcie);
    EXPECT_EQ(pair.type, "nvlink") << spec;
    EXPECT_EQ(pair.detail, "NVLink4 x18") << spec;
    ASSERT_TRUE(pair.peakGbps);
    EXPECT_DOUBLE_EQ(*pair.peakGbps, 450.0) << spec;
    const std::optional<double> hbm = deviceMemoryGbps(d["name"].get<std::string>());
    ASSERT_TRUE(hbm) << spec;
    EXPECT_DOUBLE_EQ(*hbm, std::string(spec) == "h100:8" ? 3350.0 : 4800.0);
  }
}

TEST_F(FakeGpu, TheDatasheetPeakOfTheGpuAndItsBoostClock) {
  for (const auto& [spec, entry] : {std::pair{"h100:1", "H100 SXM5"}, std::pair{"h200:1", "H200 SXM"}}) {
    node(spec);
    cudaDeviceProp p{};
    ASSERT_EQ(cudaGetDeviceProperties(&p, 0), cudaSuccess);
    const auto peak = datasheetPeak(p.name, Precision::kBFloat16);
    ASSERT_TRUE(peak) << p.name;
    EXPECT_EQ(peak->gpu, entry);
    EXPECT_DOUBLE_EQ(peak->tflops, 989.4);
    int khz = 0;
    ASSERT_EQ(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0), cudaSuccess);
    EXPECT_DOUBLE_EQ(peak->boostMhz, khz / 1000.0) << "the datasheet's boost clock is the GPU's maximum";
  }
}

// The clock a measurement states is NVML's current SM clock, found by the CUDA device's PCI bus id.
TEST_F(FakeGpu, TheComputeClockIsNvmlsByTheCudaBusId) {
  node("h100:8");
  ::setenv("CUDA_VISIBLE_DEVICES", "4", 1);
  EXPECT_EQ(gpuSmClockMhz(0), 345.0) << "an idle GPU's clock";
}

TEST_F(FakeGpu, WorkIsRefusedSayingFakeGpu) {
  node("h100:2");
  void* p = nullptr;
  const cudaError_t rc = cudaMalloc(&p, 1024);
  ASSERT_EQ(rc, cudaErrorNotSupported);
  EXPECT_EQ(std::string(cudaGetErrorName(rc)), "cudaErrorNotSupported (fake GPU)");
  EXPECT_NE(std::string(cudaGetErrorString(rc)).find("fake GPU (TS_FAKE_GPU=h100:2): cudaMalloc runs nothing"),
            std::string::npos);
  EXPECT_EQ(cudaGetLastError(), cudaErrorNotSupported);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  int device = -1;
  EXPECT_EQ(cudaSetDevice(2), cudaErrorInvalidDevice);
  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
  ASSERT_EQ(cudaGetDevice(&device), cudaSuccess);
  EXPECT_EQ(device, 1);
  int attr = 0;
  EXPECT_EQ(cudaDeviceGetAttribute(&attr, cudaDevAttrMaxTexture1DWidth, 0), cudaErrorNotSupported)
      << "an attribute the fake does not model is refused, not made up";
}

}  // namespace
}  // namespace ts
