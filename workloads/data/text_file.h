#pragma once
// Byte-level language modelling on any file: tokens are its bytes (vocabulary 256). Sample i is the
// window of T+1 bytes starting at byte i: the first T are the inputs, the last T (shifted by one) the
// targets. There are size − T windows; the DataSource's shuffled order picks which one each row gets.
#include <string>

#include "workloads/data/dataset.h"
#include "workloads/data/mapped_file.h"

namespace ts::data {

class TextFile : public Dataset {
 public:
  // UsageError when the file cannot be read or is shorter than T+1 bytes.
  TextFile(const std::string& path, std::int64_t seqLen);
  const DataInfo& info() const override { return info_; }
  void sample(std::int64_t index, float* features, std::int32_t* tokens, std::int32_t* targets) const override;
  nlohmann::json identity() const override;

 private:
  DataInfo info_;
  MappedFile file_;
};

}  // namespace ts::data
