// The CUDA runtime's entry points that trainscope imports (nm -D --undefined-only build/trainscope), as the
// fake GPU answers them: the device queries as the node of fake_node.h would answer; every other call
// (memory, streams, events, graphs, copies, kernel launches, peer access) refused with cudaErrorNotSupported,
// whose name and text say that a fake GPU refused it. The runtime's own registration calls (__cudaRegister*)
// are left to the real library: they only record the kernels, lazily.
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <utility>

#include "fake_node.h"

namespace {

thread_local int t_device = 0;  // CUDA's current device is per thread
thread_local cudaError_t t_lastError = cudaSuccess;
thread_local std::string t_refusal;  // what the last refused call was, for cudaGetErrorString

cudaError_t fail(cudaError_t rc) {
  t_lastError = rc;
  return rc;
}

cudaError_t refuse(const char* call) {
  t_refusal = fakegpu::refusal(call);
  return fail(cudaErrorNotSupported);
}

// The node, or the error every call returns without one: a fake GPU that is not configured says so.
bool node(fakegpu::Node& n, cudaError_t& rc) {
  if (fakegpu::driverCudaVersion() / 1000 < CUDART_VERSION / 1000) {
    rc = fail(cudaErrorInsufficientDriver);
    return false;
  }
  n = fakegpu::currentNode();
  if (!n.error.empty()) {
    t_refusal = "fake GPU: " + n.error;
    rc = fail(cudaErrorNotSupported);
    return false;
  }
  return true;
}

// The node's GPU behind CUDA ordinal `device`, or -1 with cudaErrorInvalidDevice.
int physical(int device, cudaError_t& rc, fakegpu::Node& n) {
  if (!node(n, rc)) return -1;
  const auto visible = fakegpu::visibleGpus(n);
  if (visible.empty()) {
    rc = fail(cudaErrorNoDevice);
    return -1;
  }
  if (device < 0 || device >= static_cast<int>(visible.size())) {
    rc = fail(cudaErrorInvalidDevice);
    return -1;
  }
  return visible[static_cast<std::size_t>(device)];
}

struct Code {
  cudaError_t code;
  const char* name;
  const char* text;
};
constexpr Code kCodes[] = {
    {cudaSuccess, "cudaSuccess", "no error"},
    {cudaErrorInvalidValue, "cudaErrorInvalidValue", "invalid argument"},
    {cudaErrorNoDevice, "cudaErrorNoDevice", "no CUDA-capable device is detected"},
    {cudaErrorInsufficientDriver, "cudaErrorInsufficientDriver", "CUDA driver version is insufficient for CUDA runtime version"},
    {cudaErrorInvalidDevice, "cudaErrorInvalidDevice", "invalid device ordinal"},
    {cudaErrorNotSupported, "cudaErrorNotSupported (fake GPU)", "fake GPU: operation not supported"}};

void fillProperties(cudaDeviceProp& p, const fakegpu::Model& m, int gpu) {
  std::memset(&p, 0, sizeof(p));
  std::snprintf(p.name, sizeof(p.name), "%s", m.name);
  for (int b = 0; b < 16; ++b) p.uuid.bytes[b] = static_cast<char>(m.uuidTag + b);
  p.uuid.bytes[15] = static_cast<char>(m.uuidTag + gpu);
  p.totalGlobalMem = m.memoryBytes;
  p.sharedMemPerBlock = 48 << 10;
  p.regsPerBlock = 65536;
  p.warpSize = 32;
  p.memPitch = 2147483647;
  p.maxThreadsPerBlock = 1024;
  p.maxThreadsDim[0] = p.maxThreadsDim[1] = 1024;
  p.maxThreadsDim[2] = 64;
  p.maxGridSize[0] = 2147483647;
  p.maxGridSize[1] = p.maxGridSize[2] = 65535;
  p.totalConstMem = 64 << 10;
  p.major = 9;
  p.minor = 0;
  p.textureAlignment = 512;
  p.texturePitchAlignment = 32;
  p.multiProcessorCount = 132;
  p.canMapHostMemory = 1;
  p.concurrentKernels = 1;
  p.ECCEnabled = 1;
  p.pciBusID = static_cast<int>(fakegpu::gpuBus(gpu));
  p.asyncEngineCount = 3;
  p.unifiedAddressing = 1;
  p.memoryBusWidth = m.memoryBusBits;
  p.l2CacheSize = m.l2Bytes;
  p.maxThreadsPerMultiProcessor = 2048;
  p.streamPrioritiesSupported = 1;
  p.globalL1CacheSupported = p.localL1CacheSupported = 1;
  p.sharedMemPerMultiprocessor = 228 << 10;
  p.regsPerMultiprocessor = 65536;
  p.managedMemory = p.concurrentManagedAccess = 1;
  p.computePreemptionSupported = 1;
  p.cooperativeLaunch = 1;
  p.sharedMemPerBlockOptin = 227 << 10;
  p.maxBlocksPerMultiProcessor = 32;
  p.reservedSharedMemPerBlock = 1 << 10;
  p.hostRegisterSupported = 1;
  p.memoryPoolsSupported = 1;
  p.gpuDirectRDMASupported = 1;
  p.clusterLaunch = 1;
  p.deviceNumaId = -1;
  p.hostNumaId = fakegpu::socketOf(gpu);
  p.gpuPciDeviceID = m.pciDeviceId;
}

}  // namespace

extern "C" {

cudaError_t cudaGetDeviceCount(int* count) {
  fakegpu::Node n;
  cudaError_t rc = cudaSuccess;
  *count = 0;
  if (!node(n, rc)) return rc;
  *count = static_cast<int>(fakegpu::visibleGpus(n).size());
  return *count ? cudaSuccess : fail(cudaErrorNoDevice);
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
  fakegpu::Node n;
  cudaError_t rc = cudaSuccess;
  const int gpu = physical(device, rc, n);
  if (gpu < 0) return rc;
  fillProperties(*prop, *n.model, gpu);
  return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device) {
  fakegpu::Node n;
  cudaError_t rc = cudaSuccess;
  const int gpu = physical(device, rc, n);
  if (gpu < 0) return rc;
  cudaDeviceProp p;
  fillProperties(p, *n.model, gpu);
  const std::pair<cudaDeviceAttr, int> known[] = {
      {cudaDevAttrMaxThreadsPerBlock, p.maxThreadsPerBlock},
      {cudaDevAttrMaxBlockDimX, p.maxThreadsDim[0]},
      {cudaDevAttrMaxBlockDimY, p.maxThreadsDim[1]},
      {cudaDevAttrMaxBlockDimZ, p.maxThreadsDim[2]},
      {cudaDevAttrMaxGridDimX, p.maxGridSize[0]},
      {cudaDevAttrMaxGridDimY, p.maxGridSize[1]},
      {cudaDevAttrMaxGridDimZ, p.maxGridSize[2]},
      {cudaDevAttrMaxSharedMemoryPerBlock, static_cast<int>(p.sharedMemPerBlock)},
      {cudaDevAttrTotalConstantMemory, static_cast<int>(p.totalConstMem)},
      {cudaDevAttrWarpSize, p.warpSize},
      {cudaDevAttrMaxRegistersPerBlock, p.regsPerBlock},
      {cudaDevAttrClockRate, n.model->smClockMhz * 1000},  // kHz
      {cudaDevAttrMultiProcessorCount, p.multiProcessorCount},
      {cudaDevAttrIntegrated, p.integrated},
      {cudaDevAttrCanMapHostMemory, p.canMapHostMemory},
      {cudaDevAttrComputeMode, cudaComputeModeDefault},
      {cudaDevAttrEccEnabled, p.ECCEnabled},
      {cudaDevAttrPciBusId, p.pciBusID},
      {cudaDevAttrPciDeviceId, p.pciDeviceID},
      {cudaDevAttrPciDomainId, p.pciDomainID},
      {cudaDevAttrMemoryClockRate, n.model->memClockMhz * 1000},  // kHz
      {cudaDevAttrGlobalMemoryBusWidth, p.memoryBusWidth},
      {cudaDevAttrL2CacheSize, p.l2CacheSize},
      {cudaDevAttrMaxThreadsPerMultiProcessor, p.maxThreadsPerMultiProcessor},
      {cudaDevAttrAsyncEngineCount, p.asyncEngineCount},
      {cudaDevAttrUnifiedAddressing, p.unifiedAddressing},
      {cudaDevAttrComputeCapabilityMajor, p.major},
      {cudaDevAttrComputeCapabilityMinor, p.minor},
      {cudaDevAttrMaxSharedMemoryPerMultiprocessor, static_cast<int>(p.sharedMemPerMultiprocessor)},
      {cudaDevAttrMaxRegistersPerMultiprocessor, p.regsPerMultiprocessor},
      {cudaDevAttrConcurrentManagedAccess, p.concurrentManagedAccess},
      {cudaDevAttrCooperativeLaunch, p.cooperativeLaunch},
      {cudaDevAttrMaxSharedMemoryPerBlockOptin, static_cast<int>(p.sharedMemPerBlockOptin)},
      {cudaDevAttrMaxBlocksPerMultiprocessor, p.maxBlocksPerMultiProcessor},
      {cudaDevAttrMemoryPoolsSupported, p.memoryPoolsSupported},
      {cudaDevAttrGPUDirectRDMASupported, p.gpuDirectRDMASupported},
      {cudaDevAttrHostNumaId, p.hostNumaId},
      {cudaDevAttrGpuPciDeviceId, static_cast<int>(p.gpuPciDeviceID)},
  };
  for (const auto& [a, v] : known)
    if (a == attr) {
      *value = v;
      return cudaSuccess;
    }
  // An attribute the fake does not model is refused, never answered with a made-up value.
  const std::string call = "cudaDeviceGetAttribute(attribute " + std::to_string(static_cast<int>(attr)) + ")";
  return refuse(call.c_str());
}

cudaError_t cudaSetDevice(int device) {
  fakegpu::Node n;
  cudaError_t rc = cudaSuccess;
  if (physical(device, rc, n) < 0) {
    fakegpu::logCall("cudaSetDevice " + std::to_string(device) + " refused (invalid device)");
    return rc;
  }
  t_device = device;
  fakegpu::logCall("cudaSetDevice " + std::to_string(device));
  return cudaSuccess;
}

cudaError_t cudaGetDevice(int* device) {
  *device = t_device;
  return cudaSuccess;
}

cudaError_t cudaDeviceGetPCIBusId(char* pciBusId, int len, int device) {
  fakegpu::Node n;
  cudaError_t rc = cudaSuccess;
  const int gpu = physical(device, rc, n);
  if (gpu < 0) return rc;
  if (len <= 0) return fail(cudaErrorInvalidValue);
  std::snprintf(pciBusId, static_cast<std::size_t>(len), "0000:%02X:00.0", fakegpu::gpuBus(gpu));
  return cudaSuccess;
}

cudaError_t cudaDeviceCanAccessPeer(int* canAccessPeer, int device, int peerDevice) {
  fakegpu::Node n;
  cudaError_t rc = cudaSuccess;
  if (physical(device, rc, n) < 0 || physical(peerDevice, rc, n) < 0) return rc;
  *canAccessPeer = device != peerDevice;  // every pair through the NVSwitches; a device is not its own peer
  return cudaSuccess;
}

cudaError_t cudaMemGetInfo(size_t* free, size_t* total) {
  fakegpu::Node n;
  cudaError_t rc = cudaSuccess;
  if (physical(t_device, rc, n) < 0) return rc;
  *total = n.model->memoryBytes;
  *free = n.model->memoryBytes - (512ull << 20);  // what the context of a fresh process leaves
  return cudaSuccess;
}

// CUDA 13 needs a driver of the 580 series, which reports 13.0 (TS_FAKE_CUDA_DRIVER: another, or 0 for none).
cudaError_t cudaDriverGetVersion(int* driverVersion) {
  *driverVersion = fakegpu::driverCudaVersion();
  return cudaSuccess;
}

cudaError_t cudaRuntimeGetVersion(int* runtimeVersion) {
  *runtimeVersion = CUDART_VERSION;
  return cudaSuccess;
}

cudaError_t cudaGetLastError(void) {
  const cudaError_t rc = t_lastError;
  t_lastError = cudaSuccess;
  return rc;
}

cudaError_t cudaPeekAtLastError(void) { return t_lastError; }

// The codes the fake returns, with the runtime's own names and texts; cudaErrorNotSupported says "fake GPU".
const char* cudaGetErrorName(cudaError_t error) {
  for (const Code& c : kCodes)
    if (c.code == error) return c.name;
  return "cudaErrorUnknown (fake GPU: a code the fake never returns)";
}

const char* cudaGetErrorString(cudaError_t error) {
  if (error == cudaErrorNotSupported && !t_refusal.empty()) return t_refusal.c_str();
  for (const Code& c : kCodes)
    if (c.code == error) return c.text;
  return "fake GPU: a code the fake never returns";
}

// Everything else trainscope calls does work on a GPU: refused.
#define FAKE_REFUSE(name, params) \
  cudaError_t name params { return refuse(#name); }

FAKE_REFUSE(cudaDeviceEnablePeerAccess, (int, unsigned int))
FAKE_REFUSE(cudaDeviceDisablePeerAccess, (int))
FAKE_REFUSE(cudaDeviceSynchronize, (void))
FAKE_REFUSE(cudaEventCreateWithFlags, (cudaEvent_t*, unsigned int))
FAKE_REFUSE(cudaEventDestroy, (cudaEvent_t))
FAKE_REFUSE(cudaEventElapsedTime, (float*, cudaEvent_t, cudaEvent_t))
FAKE_REFUSE(cudaEventQuery, (cudaEvent_t))
FAKE_REFUSE(cudaEventRecord, (cudaEvent_t, cudaStream_t))
FAKE_REFUSE(cudaEventSynchronize, (cudaEvent_t))
FAKE_REFUSE(cudaFree, (void*))
FAKE_REFUSE(cudaFreeAsync, (void*, cudaStream_t))
FAKE_REFUSE(cudaFreeHost, (void*))
FAKE_REFUSE(cudaFuncSetAttribute, (const void*, enum cudaFuncAttribute, int))
FAKE_REFUSE(cudaGraphDestroy, (cudaGraph_t))
FAKE_REFUSE(cudaGraphExecDestroy, (cudaGraphExec_t))
FAKE_REFUSE(cudaGraphInstantiate, (cudaGraphExec_t*, cudaGraph_t, unsigned long long))
FAKE_REFUSE(cudaGraphLaunch, (cudaGraphExec_t, cudaStream_t))
FAKE_REFUSE(cudaHostAlloc, (void**, size_t, unsigned int))
FAKE_REFUSE(cudaHostGetDevicePointer, (void**, void*, unsigned int))
FAKE_REFUSE(cudaHostRegister, (void*, size_t, unsigned int))
FAKE_REFUSE(cudaHostUnregister, (void*))
FAKE_REFUSE(cudaMalloc, (void**, size_t))
FAKE_REFUSE(cudaMallocAsync, (void**, size_t, cudaStream_t))
FAKE_REFUSE(cudaMemcpy, (void*, const void*, size_t, enum cudaMemcpyKind))
FAKE_REFUSE(cudaMemcpyAsync, (void*, const void*, size_t, enum cudaMemcpyKind, cudaStream_t))
FAKE_REFUSE(cudaMemcpyPeerAsync, (void*, int, const void*, int, size_t, cudaStream_t))
FAKE_REFUSE(cudaMemset, (void*, int, size_t))
FAKE_REFUSE(cudaMemsetAsync, (void*, int, size_t, cudaStream_t))
FAKE_REFUSE(cudaStreamBeginCapture, (cudaStream_t, enum cudaStreamCaptureMode))
FAKE_REFUSE(cudaStreamCreateWithFlags, (cudaStream_t*, unsigned int))
FAKE_REFUSE(cudaStreamDestroy, (cudaStream_t))
FAKE_REFUSE(cudaStreamEndCapture, (cudaStream_t, cudaGraph_t*))
FAKE_REFUSE(cudaStreamQuery, (cudaStream_t))
FAKE_REFUSE(cudaStreamSynchronize, (cudaStream_t))
FAKE_REFUSE(cudaStreamWaitEvent, (cudaStream_t, cudaEvent_t, unsigned int))
FAKE_REFUSE(__cudaLaunchKernel, (cudaKernel_t, dim3, dim3, void**, size_t, cudaStream_t))
FAKE_REFUSE(__cudaLaunchKernel_ptsz, (cudaKernel_t, dim3, dim3, void**, size_t, cudaStream_t))

}  // extern "C"
