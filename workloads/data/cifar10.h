#pragma once
// CIFAR-10 training set, binary version: data_batch_1.bin .. data_batch_5.bin in DIR (or in
// DIR/cifar-10-batches-bin, as the archive unpacks), each a run of records of 1 label byte and 3072
// pixel bytes (3 planes of 32×32: red, green, blue). The real files hold 10000 records each; any whole
// number of records is accepted, so tests can use small ones. Pixels are normalised per channel with the
// training set's mean and standard deviation. Samples are [3, 32, 32]. Each file is read whole once at the start (its
// labels checked), then a record at a time when a sample is asked for (workloads/data/dataset_files.h).
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/input_file.h"
#include "workloads/data/dataset.h"

namespace ts::data {

// The number of records in the bytes of one batch file, which may be anything: UsageError "ORIGIN ..."
// unless they are a whole number of records, each with a label 0-9.
std::int64_t checkCifar10Batch(std::span<const std::uint8_t> bytes, const std::string& origin);

class Cifar10 : public Dataset {
 public:
  // Reads and checks the split's files: data_batch_1.bin .. data_batch_5.bin, or test_batch.bin (held out).
  explicit Cifar10(const std::string& dir, Split split = Split::kTrain);
  // The split's batch files, found as the constructor finds them (in DIR or the archive's folder in it); none is opened.
  static std::vector<std::string> files(const std::string& dir, Split split);
  const DataInfo& info() const override { return info_; }
  void sample(std::int64_t index, float* features, std::int32_t* tokens, std::int32_t* targets) const override;
  nlohmann::json identity() const override;

  static constexpr int kFiles = 5;
  static constexpr std::int64_t kRecordBytes = 1 + 3 * 32 * 32;

 private:
  DataInfo info_;
  std::vector<InputFile> files_;
  std::vector<std::int64_t> firstIndex_;  // the dataset index of each file's first record
};

}  // namespace ts::data
