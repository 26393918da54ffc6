// NCCL's entry points that trainscope imports, refused: NCCL moves data between GPUs, which a fake GPU has
// none of. Without this, the real NCCL would look for a driver of its own (it links the CUDA runtime
// statically, which no preload reaches) and fail in its own words, or find a real GPU that the fake does not
// describe. Two calls touch no GPU and go to the real library: ncclGetVersion, and ncclGetUniqueId (a socket
// address that process 0 hands the others), so that process 0 goes on to the exchange of the id as it would on
// a real node; refusing it would hide the very failures the fake exists to show (a process waiting there for
// one that gave up).
#include <dlfcn.h>
#include <nccl.h>

#include <string>

#include "fake_node.h"

namespace {

thread_local std::string t_refusal;

ncclResult_t refuse(const char* call) {
  t_refusal = fakegpu::refusal(call);
  return ncclInvalidUsage;
}

}  // namespace

extern "C" {

const char* ncclGetErrorString(ncclResult_t result) {
  if (result == ncclSuccess) return "no error";
  return result == ncclInvalidUsage ? "invalid usage (fake GPU: NCCL does not run on it)"
                                    : "fake GPU: a code the fake never returns";
}

const char* ncclGetLastError(ncclComm_t) { return t_refusal.c_str(); }

ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
  using Real = ncclResult_t (*)(ncclUniqueId*);
  static const auto real = reinterpret_cast<Real>(::dlsym(RTLD_NEXT, "ncclGetUniqueId"));
  fakegpu::logCall("ncclGetUniqueId");
  return real ? real(id) : refuse("ncclGetUniqueId (no NCCL library loaded after the fake)");
}

#define FAKE_REFUSE(name, params) \
  ncclResult_t name params { return refuse(#name); }

FAKE_REFUSE(ncclCommInitRank, (ncclComm_t*, int, ncclUniqueId, int))
FAKE_REFUSE(ncclCommInitRankConfig, (ncclComm_t*, int, ncclUniqueId, int, ncclConfig_t*))
FAKE_REFUSE(ncclCommSplit, (ncclComm_t, int, int, ncclComm_t*, ncclConfig_t*))
FAKE_REFUSE(ncclCommDestroy, (ncclComm_t))
FAKE_REFUSE(ncclCommAbort, (ncclComm_t))
FAKE_REFUSE(ncclCommCount, (const ncclComm_t, int*))
FAKE_REFUSE(ncclCommUserRank, (const ncclComm_t, int*))
FAKE_REFUSE(ncclCommGetAsyncError, (ncclComm_t, ncclResult_t*))
FAKE_REFUSE(ncclGroupStart, ())
FAKE_REFUSE(ncclGroupEnd, ())
FAKE_REFUSE(ncclAllReduce, (const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t))
FAKE_REFUSE(ncclReduceScatter, (const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t))
FAKE_REFUSE(ncclAllGather, (const void*, void*, size_t, ncclDataType_t, ncclComm_t, cudaStream_t))
FAKE_REFUSE(ncclBroadcast, (const void*, void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t))
FAKE_REFUSE(ncclReduce, (const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, int, ncclComm_t, cudaStream_t))
FAKE_REFUSE(ncclAlltoAll, (const void*, void*, size_t, ncclDataType_t, ncclComm_t, cudaStream_t))
FAKE_REFUSE(ncclGather, (const void*, void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t))
FAKE_REFUSE(ncclScatter, (const void*, void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t))
FAKE_REFUSE(ncclSend, (const void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t))
FAKE_REFUSE(ncclRecv, (void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t))

}  // extern "C"
