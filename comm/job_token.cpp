#include "comm/job_token.h"

#include <cstdlib>
#include <string_view>

#include <fmt/format.h>

#include "base/error.h"
#include "comm/bootstrap_hello.h"

namespace ts {

namespace {
constexpr const char* kLauncherIds[] = {"TORCHELASTIC_RUN_ID", "SLURM_JOB_ID", "OMPI_MCA_ess_base_jobid", "PMIX_NAMESPACE"};
}  // namespace

JobToken jobTokenFromEnvironment() {
  auto get = [](const char* name) -> std::string_view {
    const char* v = std::getenv(name);
    return v ? v : "";
  };
  if (const auto t = get("TRAINSCOPE_JOB_TOKEN"); !t.empty()) {
    if (t == "none") return {"", "TRAINSCOPE_JOB_TOKEN=none", true};
    if (t.size() > hello::kMaxFramePayload)
      throw LocalUsageError(
          fmt::format("TRAINSCOPE_JOB_TOKEN is {} bytes; at most {} are allowed", t.size(), hello::kMaxFramePayload));
    return {std::string(t), "TRAINSCOPE_JOB_TOKEN"};
  }
  for (const char* name : kLauncherIds) {
    const auto id = get(name);
    if (id.empty() || (std::string_view(name) == "TORCHELASTIC_RUN_ID" && id == "none")) continue;
    // Over-long ids are cut to what a hello carries: every process cuts its own copy the same way.
    return {fmt::format("{}={}", name, id).substr(0, hello::kMaxFramePayload), name};
  }
  return {};
}

std::string missingJobTokenMessage() {
  return "no job token: the RANK/WORLD_SIZE bootstrap admits only processes that carry the job's token, and neither "
         "TRAINSCOPE_JOB_TOKEN nor a launcher's job id (TORCHELASTIC_RUN_ID other than none, SLURM_JOB_ID, "
         "OMPI_MCA_ess_base_jobid, PMIX_NAMESPACE) is set: set TRAINSCOPE_JOB_TOKEN to one secret in every process "
         "(TRAINSCOPE_JOB_TOKEN=$(openssl rand -hex 16)), or TRAINSCOPE_JOB_TOKEN=none to admit any process that reaches "
         "MASTER_ADDR:MASTER_PORT";
}

}  // namespace ts
