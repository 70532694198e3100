#pragma once
// AdamW's moment and decay terms with the defaults both trainers use (TrainConfig,
// NliTrainConfig derive from it), so the two tasks cannot drift apart on them. The peak learning
// rate is each task's own: its default differs.
namespace grassaudit {

struct AdamWTerms {
  double beta1 = 0.9;
  double beta2 = 0.98;
  double adam_eps = 1e-8;
  double weight_decay = 0.01;
};

}  // namespace grassaudit
