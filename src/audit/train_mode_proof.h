#pragma once
// Whether a TorchScript module's train-mode forward is, op for op, its eval-mode forward: then
// the audit's train-mode passes would repeat its eval-mode passes bit for bit, and the audit
// takes the eval-mode tables for both modes instead of probing twice (half the
// future tables of a model without dropout, the usual inference export).
//
// The proof reads forward's graph with every method and function call inlined. The module's
// `training` flag (all that train()/eval() change) reaches the arithmetic only through
// prim::GetAttr[name="training"]; a graph that never reads it computes the same in both modes
// unless it draws random numbers, which the audit's train passes reseed and its eval passes do
// not. So the proof fails on: a read of `training`; a random op (rand*, bernoulli, normal,
// multinomial, dropout with a train flag that is not the constant false, any op with a dropout_p
// that is not the constant 0 (scaled_dot_product_attention and its kernels), any op taking a
// Generator); a call the inliner could not
// resolve (a module interface); an op outside aten:: and prim:: (unknown semantics); recurrent
// ops with inter-layer dropout on; a TorchScript class object (its methods run through
// prim::Enter or aten::sort unseen); prim::SetAttr, or reading a list/dict/object attribute
// (state the audit does not restore between passes, so the number of calls could matter).
// Anything it cannot read is "not proven", never "proven". The audit also voids the proof when
// an eval-mode pass moves torch's default generator (causality_audit.cpp): the op list is a
// list, the generator's state is the ground truth.
#include <string>

namespace torch::jit {
struct Module;
}

namespace grassaudit {

struct TrainModeProof {
  bool proven = false;
  // proven: what was checked ("forward (1,234 nodes inlined) never reads `training` and draws no
  // random numbers"); not proven: the first thing that blocked it, naming the op.
  std::string why;
};

TrainModeProof prove_train_equals_eval(const torch::jit::Module& module);

}  // namespace grassaudit
