#include "kernels/cpu/onednn_engine.h"

namespace ts::cpu::onednn {

dnnl::engine& cpuEngine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

dnnl::stream& threadStream() {
  thread_local dnnl::stream stream(cpuEngine());
  return stream;
}

}  // namespace ts::cpu::onednn
