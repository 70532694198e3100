#pragma once
// The incremental API a TorchScript module may export beside forward (audit --incremental), in
// one place beside the model signature (audit/model_signature.h). The contract (audits/README.md):
//   init_state(self, batch: int) -> List[Tensor]
//   step(self, x: Tensor, state: List[Tensor]) -> Tuple[Tensor, List[Tensor]]
// x holds the next n >= 1 positions ([B, n] ids or [B, n, C] features) and the result their
// outputs [B, n, ...] with the new state; the state carries whatever offset it needs.
#include <string>

namespace torch::jit {
struct Module;
}

namespace grassaudit {

// The two signatures above, one line (for messages).
extern const char* const kIncrementalContract;

// "" when `m` exports both methods with the contract's argument and return types, else one line
// naming what is missing or mistyped, ending with the contract.
std::string check_incremental_api(const torch::jit::Module& m);

}  // namespace grassaudit
