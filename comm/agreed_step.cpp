#include "comm/agreed_step.h"

#include <exception>

#include <fmt/format.h>

#include "base/error.h"
#include "base/host_name.h"
#include "comm/bootstrap.h"

namespace ts {
namespace {

// A verdict travels as text: "" when the step passed, else 'U' (usage) or 'E', the host, a newline, the message.
std::string encode(const StepVerdict& v) {
  if (v.outcome == StepVerdict::Outcome::kPassed) return "";
  return (v.outcome == StepVerdict::Outcome::kUsage ? "U" : "E") + v.host + "\n" + v.message;
}

StepVerdict decode(const std::string& text) {
  StepVerdict v;
  if (text.empty()) return v;
  v.outcome = text[0] == 'U' ? StepVerdict::Outcome::kUsage : StepVerdict::Outcome::kFailed;
  const std::size_t newline = text.find('\n');
  v.host = text.substr(1, newline == std::string::npos ? std::string::npos : newline - 1);
  if (newline != std::string::npos) v.message = text.substr(newline + 1);
  return v;
}

StepVerdict failed(StepVerdict::Outcome outcome, const std::string& message) { return {outcome, message, hostName()}; }

}  // namespace

std::vector<StepVerdict> gatherVerdicts(Bootstrap& boot, const std::function<void()>& step) {
  StepVerdict mine;
  try {
    step();
  } catch (const UsageError& e) {
    mine = failed(StepVerdict::Outcome::kUsage, e.what());
  } catch (const std::exception& e) {  // a ts::Error, or anything else the step met (memory, a library's own)
    mine = failed(StepVerdict::Outcome::kFailed, e.what());
  }
  std::vector<StepVerdict> all;
  for (const std::string& text : boot.allGatherStrings(encode(mine))) all.push_back(decode(text));
  return all;
}

std::optional<AgreedFailure> agreedFailure(const std::vector<StepVerdict>& verdicts) {
  // A usage error is named before other failures: it is what the user asked for that cannot be, and the
  // other failures may only follow from it.
  std::size_t first = verdicts.size(), failures = 0;
  bool alike = true;
  for (std::size_t p = 0; p < verdicts.size(); ++p) {
    const StepVerdict& v = verdicts[p];
    alike = alike && v.outcome == verdicts[0].outcome && v.message == verdicts[0].message;
    if (v.outcome == StepVerdict::Outcome::kPassed) continue;
    ++failures;
    const bool usage = v.outcome == StepVerdict::Outcome::kUsage;
    if (first == verdicts.size() || (usage && verdicts[first].outcome != StepVerdict::Outcome::kUsage)) first = p;
  }
  if (failures == 0) return std::nullopt;
  const StepVerdict& f = verdicts[first];
  const bool usage = f.outcome == StepVerdict::Outcome::kUsage;
  if (alike) return AgreedFailure{f.message, usage};
  const std::string more = failures > 1 ? fmt::format(" ({} more process(es) failed too)", failures - 1) : "";
  return AgreedFailure{fmt::format("process {} on {}: {}{}", first, f.host, f.message, more), usage};
}

void agreedStep(Bootstrap& boot, const std::function<void()>& step) {
  if (boot.size() == 1) {
    step();
    return;
  }
  const std::optional<AgreedFailure> failure = agreedFailure(gatherVerdicts(boot, step));
  if (!failure) return;
  if (failure->usage) throw UsageError(failure->line);
  throw Error(failure->line);
}

}  // namespace ts
