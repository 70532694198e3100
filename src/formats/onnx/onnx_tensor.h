#pragma once
// ONNX TensorProto <-> ATen: the data types LibTorch has, raw or typed data, external data (a
// file beside the model, never outside its folder), every byte count checked against the shape.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include <ATen/core/Tensor.h>

namespace onnx {
class TensorProto;
}

namespace grassaudit::onnx_rt {

// ONNX's TensorProto.DataType code as an ATen type; nullopt with `why` for the types LibTorch
// lacks (uint16/32/64, string, complex, float8) or an unknown code.
std::optional<at::ScalarType> scalar_type_of(int64_t code, std::string* why);
// The ONNX code of an ATen type (float, double, half, bfloat16, the ints, bool).
int64_t onnx_code_of(at::ScalarType t);
std::string onnx_type_name(int64_t code);  // "FLOAT", "UINT16", ...; "unknown"

// The tensor a TensorProto holds (a copy, owned). `model_dir`: the folder external data is read
// from ("" = none allowed). `fail` is called with one line (and must throw) on a wrong byte count,
// a type LibTorch lacks, external data that is missing or points outside model_dir.
at::Tensor tensor_from_proto(const onnx::TensorProto& proto, const std::string& model_dir,
                             const std::function<void(const std::string&)>& fail);

}  // namespace grassaudit::onnx_rt
