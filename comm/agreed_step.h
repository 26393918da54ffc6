#pragma once
// Steps that one process can fail alone (no GPU for it on its host, a GPU that will not start, a choice the
// others did not make), made safe to follow with an exchange. A process that throws before an exchange the
// others are already in leaves them waiting for it until a timeout: two processes on one GPU hung so, the
// second refusing GPU 1 of 1 before the ncclUniqueId exchange the first was waiting in.
//
// The rule, for every step of setting up the processes: whatever a process can fail alone runs inside an
// agreed step, which ends in one exchange of verdicts that every process takes part in, whatever its step
// did; when any failed, every process throws the same error, so all end together and one line (process 0's)
// says what failed where. Whatever is exchanged after an agreed step is reached by every process or by none.
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace ts {

class Bootstrap;

// What one process's step came to, as every process learns it.
struct StepVerdict {
  enum class Outcome { kPassed, kUsage, kFailed };  // kUsage: a UsageError (exit 2), kFailed: any other error
  Outcome outcome = Outcome::kPassed;
  std::string message;  // the error's text
  std::string host;     // where the process runs (for a failure)
};

// Runs `step` on this process, catching what it throws, then exchanges every process's verdict; returns them
// in process order. The exchange is made whether or not `step` threw.
std::vector<StepVerdict> gatherVerdicts(Bootstrap& boot, const std::function<void()>& step);

// The one line that says the failures among `verdicts`, and whether it is a usage error; nothing when every
// step passed. The message alone when every process failed alike, else one failure (the first usage error,
// else the first failure) with its process and host before it ("process 1 on node-b: ...") and how many
// more processes failed.
struct AgreedFailure {
  std::string line;
  bool usage = false;
};
std::optional<AgreedFailure> agreedFailure(const std::vector<StepVerdict>& verdicts);

// gatherVerdicts, then, when any step failed, the same error thrown on every process: a UsageError when the
// line is a usage error, else an Error. One process alone runs `step` as it is (nothing to agree with).
void agreedStep(Bootstrap& boot, const std::function<void()>& step);

}  // namespace ts
