#include "audit/onnx/onnx_op.h"

#include <ATen/ATen.h>

namespace grassaudit::onnx_rt {

void add_control_ops(OpTable& table) { (void)table; }

}  // namespace grassaudit::onnx_rt
