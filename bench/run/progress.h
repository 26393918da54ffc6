#pragma once
// The progress line on stderr for long work. Silent for the first two seconds (short runs print nothing);
// then, on a terminal, one line rewritten in place; elsewhere (CI logs, files) a first line, then a new
// line at most every ten seconds. Lines are printed when a step starts. Only the process that owns it
// prints (process 0).
#include <chrono>
#include <string>

namespace ts {

class Progress {
 public:
  // totalWork: the sum of the weights the steps will pass (any unit: steps, bytes, flops).
  Progress(std::string task, double totalWork, bool enabled);
  ~Progress();
  void step(const std::string& what, double work = 1);  // a step of this weight is about to start
  void done();                                          // clears the line on a terminal

 private:
  void print(const std::string& what);
  std::string task_;
  double total_;
  double done_ = 0;     // work of the steps finished
  double pending_ = 0;  // work of the step now running
  std::size_t steps_ = 0;
  bool enabled_;
  bool tty_;
  bool printed_ = false;     // a line is on the terminal now
  bool printedAny_ = false;  // any line so far
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point lastPrint_;
};

}  // namespace ts
