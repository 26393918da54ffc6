#pragma once
// The progress line on stderr for long work. Silent for the first two seconds (short runs print nothing);
// then, on a terminal, one line rewritten in place; elsewhere (CI logs, files) a new line at most every
// ten seconds. Only the process that owns it prints (process 0).
#include <chrono>
#include <string>

namespace ts {

class Progress {
 public:
  Progress(std::string task, std::size_t totalSteps, bool enabled);
  ~Progress();
  void step(const std::string& what);  // one step is about to start
  void done();                         // clears the line on a terminal

 private:
  void print(const std::string& what);
  std::string task_;
  std::size_t total_;
  std::size_t current_ = 0;
  bool enabled_;
  bool tty_;
  bool printed_ = false;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point lastPrint_;
};

}  // namespace ts
