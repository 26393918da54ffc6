#pragma once
// NCCL_CHECK: every NCCL call goes through here; a failure becomes a ts::Error with NCCL's reason and last message.
#include <nccl.h>

#include <string>

#include "base/error.h"

#define NCCL_CHECK(call)                                                                        \
  do {                                                                                          \
    const ncclResult_t ts_nccl_rc_ = (call);                                                    \
    if (ts_nccl_rc_ != ncclSuccess && ts_nccl_rc_ != ncclInProgress) {                          \
      std::string ts_msg_ = std::string(#call) + " failed: " + ncclGetErrorString(ts_nccl_rc_); \
      const char* ts_last_ = ncclGetLastError(nullptr);                                         \
      if (ts_last_ && *ts_last_) ts_msg_ += std::string(" (") + ts_last_ + ")";                 \
      throw ::ts::errorInContext(ts_msg_);                                                      \
    }                                                                                           \
  } while (0)
