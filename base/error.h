#pragma once
// The two kinds of failure trainscope reports. Both end the program with one line on stderr:
//   UsageError — the user asked for something invalid (exit 2);
//   Error      — something failed while running: a CUDA/NCCL/MPI call, memory, a timeout (exit 1).
// Context (which op, size, rank, host) is added by ErrorContext scopes so that the line names where it broke.
#include <stdexcept>
#include <string>

namespace ts {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class UsageError : public Error {
 public:
  using Error::Error;
};

// A UsageError found in this process's own setup before the processes have met (its RANK, WORLD_SIZE,
// MASTER_ADDR): process 0 may not have found it, so every process that does prints it.
class LocalUsageError : public UsageError {
 public:
  using UsageError::UsageError;
};

// What the program is doing right now on this thread ("all_reduce 4 MiB float32"); innermost last.
class ErrorContext {
 public:
  explicit ErrorContext(std::string what);
  ~ErrorContext();
  ErrorContext(const ErrorContext&) = delete;
  ErrorContext& operator=(const ErrorContext&) = delete;
  // The active contexts joined with ": ", or "" when none.
  static std::string current();

 private:
  std::string previous_;
};

// Builds an Error whose message is "<context>: <what>" (context from the active ErrorContext scopes).
Error errorInContext(const std::string& what);

}  // namespace ts
