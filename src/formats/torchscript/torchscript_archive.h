#pragma once
// Why a file did not load as TorchScript, in one line: what the file is (a TorchScript archive, a
// torch.export .pt2 archive, a torch.save checkpoint, not a PyTorch file at all), the producer
// version the archive records where it records one, the first real reason LibTorch gave (an
// unknown operator by name), and what to do about it. Never an empty reason.
#include <string>

namespace grassaudit {

// path: the file that failed; loader_error: the exception text of torch::jit::load (any number
// of lines, possibly starting with blank ones). Returns one line, without the path.
std::string explain_torchscript_load_failure(const std::string& path, const std::string& loader_error);

}  // namespace grassaudit
