#pragma once
// MNIST from its IDX files, as distributed (uncompressed): train-images-idx3-ubyte (magic 2051, count,
// rows, cols, then count·rows·cols pixel bytes) and train-labels-idx1-ubyte (magic 2049, count, then count
// label bytes); the held-out split is the test set, t10k-images-idx3-ubyte and t10k-labels-idx1-ubyte. Pixels are normalised to
// (x/255 − 0.1307) / 0.3081, the training set's mean and standard deviation. Samples are [1, rows, cols]. The labels
// are read whole at the start; each image when it is asked for (workloads/data/dataset_files.h).
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/input_file.h"
#include "workloads/data/dataset.h"

namespace ts::data {

// The readers of the two IDX files' bytes, which may be anything: UsageError "ORIGIN ..." saying what is wrong.
struct IdxImages {
  std::uint64_t count = 0, rows = 0, cols = 0;
};
// The images file from its first bytes (its header: min(16, fileBytes) of them) and its size.
IdxImages checkIdxImages(std::span<const std::uint8_t> header, std::uint64_t fileBytes, const std::string& origin);
// The number of labels; each is checked to be a digit 0-9.
std::uint64_t checkIdxLabels(std::span<const std::uint8_t> bytes, const std::string& origin);

class Mnist : public Dataset {
 public:
  // Reads and checks the split's two files (UsageError naming the file and what is wrong).
  explicit Mnist(const std::string& dir, Split split = Split::kTrain);
  // The split's images and labels files in `dir`, found as the constructor finds them; none is opened (UsageError for a
  // missing one).
  static std::vector<std::string> files(const std::string& dir, Split split);
  const DataInfo& info() const override { return info_; }
  void sample(std::int64_t index, float* features, std::int32_t* tokens, std::int32_t* targets) const override;
  nlohmann::json identity() const override;

 private:
  Mnist(const std::string& dir, Split split, const std::vector<std::string>& paths);
  DataInfo info_;
  InputFile images_;
  std::vector<std::uint8_t> labels_;  // the label file's bytes
};

}  // namespace ts::data
