// Sources: NVIDIA H100 Tensor Core GPU datasheet (SXM5 and PCIe), H200 product brief, A100 datasheet.
// Dense (no 2:4 sparsity) TFLOP/s; float32 is the non-tensor-core FP32 rate.
#include "bench/train/compute_peaks.h"

#include <vector>

namespace ts {
namespace {

struct Entry {
  const char* match;  // a substring of the CUDA device name
  const char* gpu;
  double fp32, tf32, bf16, fp16, boostMhz;
};

// Most specific names first.
const std::vector<Entry>& table() {
  static const std::vector<Entry> t = {
      {"H100 PCIe", "H100 PCIe", 51.2, 378.0, 756.0, 756.0, 1755}, {"H100 NVL", "H100 NVL", 60.0, 417.5, 835.0, 835.0, 1785},
      {"H100", "H100 SXM5", 66.9, 494.7, 989.4, 989.4, 1980},      {"H200", "H200 SXM", 66.9, 494.7, 989.4, 989.4, 1980},
      {"A100", "A100", 19.5, 156.0, 312.0, 312.0, 1410},
  };
  return t;
}

}  // namespace

std::optional<ComputePeak> datasheetPeak(const std::string& name, Precision p) {
  for (const Entry& e : table())
    if (name.find(e.match) != std::string::npos) {
      const double tflops = p == Precision::kFloat32    ? e.fp32
                            : p == Precision::kTF32     ? e.tf32
                            : p == Precision::kBFloat16 ? e.bf16
                                                        : e.fp16;
      return ComputePeak{e.gpu, tflops, e.boostMhz};
    }
  return std::nullopt;
}

}  // namespace ts
