#pragma once
// Byte-level language modelling on any file: tokens are its bytes (vocabulary 256). Sample i is the
// window of T+1 bytes starting at byte i: the first T are the inputs, the last T (shifted by one) the
// targets; the DataSource's shuffled order picks which one each row gets. The last tenth of the file (at
// least T+1 bytes) is held out: training's windows end before it, the held-out split's lie inside it. A
// file too short for both (under 2 (T+1) bytes) trains on all of it and has no held-out split. Each window is read
// from the file when it is asked for (workloads/data/dataset_files.h): a file truncated while training is an error.
#include <string>

#include "base/input_file.h"
#include "workloads/data/dataset.h"

namespace ts::data {

class TextFile : public Dataset {
 public:
  // UsageError when the file cannot be read or is shorter than T+1 bytes (the held-out split: when there is none).
  TextFile(const std::string& path, std::int64_t seqLen, Split split = Split::kTrain);
  const DataInfo& info() const override { return info_; }
  void sample(std::int64_t index, float* features, std::int32_t* tokens, std::int32_t* targets) const override;
  nlohmann::json identity() const override;

 private:
  DataInfo info_;
  InputFile file_;
  std::int64_t first_ = 0;  // the byte sample 0 starts at
};

}  // namespace ts::data
