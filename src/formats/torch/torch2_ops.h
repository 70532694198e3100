#pragma once
// Operators that PyTorch 2.x writes into TorchScript files and LibTorch 1.13 lacks, registered
// from our code with PyTorch's exact schema and the math of its reference path, so a file
// exported by 2.x loads and runs unchanged in the 1.13 build. On a LibTorch that has an op
// already (2.x), nothing is registered for it: its own kernel runs.
//
// The list (how it was found: audits/README.md "PyTorch 2.x files"): the operator tables of 2.6
// and 1.13 compared (torch._C._jit_get_all_schemas() in each: names, and arguments added to
// existing schemas), and every fixture of reference/make_torch2_fixtures.py, exported by PyTorch
// 2.6, loaded by the 1.13 build until no "Unknown builtin op" was left.
//   aten::scaled_dot_product_attention  F.scaled_dot_product_attention, and inside scripted
//                                       nn.MultiheadAttention / nn.TransformerEncoder(Layer)
//   aten::rms_norm                      nn.RMSNorm and F.rms_norm (2.4+), the norm of most new LMs
// Also read off the operator tables: the public aten ops of 2.6 that 1.13 lacks are these two plus
// nonzero_static, empty_permuted, get_autocast_dtype, seed, initial_seed, slice_inverse,
// sym_constrain_range(_for_size) and backward/quantized/mkldnn internals, none of which a model's
// forward emits in practice; a file that calls one gets a one-line error naming it.
#include <string>
#include <vector>

namespace grassaudit {

// Registers the missing ops once (thread-safe, idempotent). Returns the names of the ops this
// process registered (empty on a LibTorch that has them all).
const std::vector<std::string>& ensure_torch2_ops();

}  // namespace grassaudit
