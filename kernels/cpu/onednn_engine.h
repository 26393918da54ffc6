#pragma once
// The one oneDNN CPU engine of the process, and a stream per thread: shared by the convolution and the GEMM
// epilogue (internal to kernels/cpu; compiled only with oneDNN).
#include <oneapi/dnnl/dnnl.hpp>

namespace ts::cpu::onednn {

// Every tensor these kernels hand oneDNN is float32.
inline constexpr dnnl::memory::data_type kF32 = dnnl::memory::data_type::f32;

dnnl::engine& cpuEngine();
dnnl::stream& threadStream();

}  // namespace ts::cpu::onednn
