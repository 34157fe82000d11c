// expect: data_length: this batch type holds no tensor, so its length is unknown
// The Trainer counts records with get_batch_length(batch), by default dtl::data_length(batch),
// which finds a batch's first tensor; a batch type with none needs get_batch_length overridden.
#include <dtl/trainer.hpp>

struct Sentences {
  std::string first, second;
};

int main() {
  std::int64_t fine = dtl::data_length(std::make_tuple(torch::ones({4, 2}), Sentences{}));
  std::int64_t bad = dtl::data_length(Sentences{"a", "b"});  // the misuse
  return static_cast<int>(fine + bad);
}
