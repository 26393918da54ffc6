#include "comm/job_token.h"

#include <cstdlib>
#include <string_view>

#include <fmt/format.h>

#include "base/error.h"
#include "comm/bootstrap_hello.h"

namespace ts {

JobToken jobTokenFromEnvironment() {
  auto get = [](const char* name) -> std::string_view {
    const char* v = std::getenv(name);
    return v ? v : "";
  };
  if (const auto t = get("TRAINSCOPE_JOB_TOKEN"); !t.empty()) {
    if (t.size() > hello::kMaxFramePayload)
      throw LocalUsageError(
          fmt::format("TRAINSCOPE_JOB_TOKEN is {} bytes; at most {} are allowed", t.size(), hello::kMaxFramePayload));
    return {std::string(t), "TRAINSCOPE_JOB_TOKEN"};
  }
  for (const char* name : {"TORCHELASTIC_RUN_ID", "SLURM_JOB_ID", "OMPI_MCA_ess_base_jobid", "PMIX_NAMESPACE"}) {
    const auto id = get(name);
    if (id.empty() || (std::string_view(name) == "TORCHELASTIC_RUN_ID" && id == "none")) continue;
    // Over-long ids are cut to what a hello carries: every process cuts its own copy the same way.
    return {fmt::format("{}={}", name, id).substr(0, hello::kMaxFramePayload), name};
  }
  return {};
}

}  // namespace ts
