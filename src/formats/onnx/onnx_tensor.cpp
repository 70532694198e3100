#include "formats/onnx/onnx_tensor.h"

#include <ATen/ATen.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <onnx/onnx_pb.h>

#include <climits>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace grassaudit::onnx_rt {

std::optional<at::ScalarType> scalar_type_of(int64_t code, std::string* why) {
  switch (code) {
    case onnx::TensorProto::FLOAT: return at::kFloat;
    case onnx::TensorProto::DOUBLE: return at::kDouble;
    case onnx::TensorProto::FLOAT16: return at::kHalf;
    case onnx::TensorProto::BFLOAT16: return at::kBFloat16;
    case onnx::TensorProto::INT8: return at::kChar;
    case onnx::TensorProto::UINT8: return at::kByte;
    case onnx::TensorProto::INT16: return at::kShort;
    case onnx::TensorProto::INT32: return at::kInt;
    case onnx::TensorProto::INT64: return at::kLong;
    case onnx::TensorProto::BOOL: return at::kBool;
    default: break;
  }
  if (why) *why = fmt::format("data type {} is not one LibTorch computes with", onnx_type_name(code));
  return std::nullopt;
}

int64_t onnx_code_of(at::ScalarType t) {
  switch (t) {
    case at::kFloat: return onnx::TensorProto::FLOAT;
    case at::kDouble: return onnx::TensorProto::DOUBLE;
    case at::kHalf: return onnx::TensorProto::FLOAT16;
    case at::kBFloat16: return onnx::TensorProto::BFLOAT16;
    case at::kChar: return onnx::TensorProto::INT8;
    case at::kByte: return onnx::TensorProto::UINT8;
    case at::kShort: return onnx::TensorProto::INT16;
    case at::kInt: return onnx::TensorProto::INT32;
    case at::kLong: return onnx::TensorProto::INT64;
    case at::kBool: return onnx::TensorProto::BOOL;
    default: return onnx::TensorProto::UNDEFINED;
  }
}

std::string onnx_type_name(int64_t code) {
  if (code < 0 || code > INT_MAX || !onnx::TensorProto::DataType_IsValid(static_cast<int>(code))) return "unknown";
  return onnx::TensorProto::DataType_Name(static_cast<onnx::TensorProto::DataType>(code));
}

namespace {

// Reads [offset, offset + length) of the external file `location`, which must lie inside model_dir.
std::string read_external(const onnx::TensorProto& p, const std::string& model_dir,
                          const std::function<void(const std::string&)>& fail) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& kv : p.external_data()) {
    try {
      if (kv.key() == "location") location = kv.value();
      else if (kv.key() == "offset") offset = std::stoll(kv.value());
      else if (kv.key() == "length") length = std::stoll(kv.value());
    } catch (const std::exception&) {
      fail(fmt::format("tensor '{}': external data {} '{}' is not a number", p.name(), kv.key(), kv.value()));
    }
  }
  namespace fs = std::filesystem;
  if (location.empty()) fail(fmt::format("tensor '{}': external data without a location", p.name()));
  if (location.find('\0') != std::string::npos)
    fail(fmt::format("tensor '{}': external data location holds a NUL byte", p.name()));
  if (model_dir.empty()) fail(fmt::format("tensor '{}': external data '{}' where no model folder is known", p.name(), location));
  std::error_code ec;
  const fs::path dir = fs::weakly_canonical(fs::path(model_dir), ec);
  const fs::path file = fs::weakly_canonical(dir / fs::path(location), ec);
  const fs::path rel = file.lexically_relative(dir);
  if (ec || fs::path(location).is_absolute() || rel.empty() || *rel.begin() == "..")
    fail(fmt::format("tensor '{}': external data '{}' points outside the model's folder", p.name(), location));
  std::ifstream f(file, std::ios::binary);
  if (!f || fs::is_directory(file, ec)) fail(fmt::format("tensor '{}': external data file '{}' is missing", p.name(), location));
  f.seekg(0, std::ios::end);
  const int64_t size = f.tellg();
  if (offset < 0 || offset > size || (length >= 0 && length > size - offset))
    fail(fmt::format("tensor '{}': external data '{}' has {} bytes, the tensor asks for {} at offset {}", p.name(),
                     location, size, length, offset));
  if (length < 0) length = size - offset;
  std::string bytes(static_cast<size_t>(length), '\0');
  f.seekg(offset);
  f.read(bytes.data(), length);
  return bytes;
}

template <typename Field>
at::Tensor from_field(const Field& field, at::ScalarType as) {
  using T = typename std::decay_t<decltype(*field.begin())>;
  std::vector<T> v(field.begin(), field.end());
  at::ScalarType src = std::is_same_v<T, float>     ? at::kFloat
                       : std::is_same_v<T, double>  ? at::kDouble
                       : std::is_same_v<T, int32_t> ? at::kInt
                                                    : at::kLong;
  return at::from_blob(v.data(), {static_cast<int64_t>(v.size())}, at::TensorOptions().dtype(src)).clone().to(as);
}

}  // namespace

at::Tensor tensor_from_proto(const onnx::TensorProto& p, const std::string& model_dir,
                             const std::function<void(const std::string&)>& fail) {
  std::string why;
  const auto type = scalar_type_of(p.data_type(), &why);
  if (!type) {
    fail(fmt::format("tensor '{}': {}", p.name(), why));
    throw std::logic_error("fail returned");
  }
  if (p.has_segment()) fail(fmt::format("tensor '{}' is split into segments, which ONNX files no longer write", p.name()));
  std::vector<int64_t> dims;
  int64_t numel = 1, span = 1;  // span: a 0 counted as 1, so no sizes beside a 0 multiply past 2^40
  for (int64_t d : p.dims()) {
    if (d < 0 || (d > 1 && span > (int64_t{1} << 40) / d))
      fail(fmt::format("tensor '{}' has an impossible dimension {}", p.name(), d));
    dims.push_back(d);
    numel *= d;
    span *= std::max<int64_t>(d, 1);
  }
  const int64_t elem = static_cast<int64_t>(c10::elementSize(*type));
  const bool external = p.data_location() == onnx::TensorProto::EXTERNAL;
  if (external || p.has_raw_data()) {
    std::string ext;
    const std::string& raw = external ? (ext = read_external(p, model_dir, fail)) : p.raw_data();
    if (static_cast<int64_t>(raw.size()) != numel * elem)
      fail(fmt::format("tensor '{}' ({} [{}]) holds {} bytes, its shape needs {}", p.name(), onnx_type_name(p.data_type()),
                       fmt::join(dims, ", "), raw.size(), numel * elem));
    at::Tensor t = at::empty(dims, at::TensorOptions().dtype(*type));
    if (numel) std::memcpy(t.data_ptr(), raw.data(), raw.size());
    return t;
  }
  at::Tensor flat;
  int64_t count = 0;
  switch (p.data_type()) {
    case onnx::TensorProto::FLOAT: count = p.float_data_size(); flat = from_field(p.float_data(), at::kFloat); break;
    case onnx::TensorProto::DOUBLE: count = p.double_data_size(); flat = from_field(p.double_data(), at::kDouble); break;
    case onnx::TensorProto::INT64: count = p.int64_data_size(); flat = from_field(p.int64_data(), at::kLong); break;
    case onnx::TensorProto::FLOAT16:
    case onnx::TensorProto::BFLOAT16: {
      // int32_data holds the 16-bit patterns
      count = p.int32_data_size();
      std::vector<int16_t> bits;
      for (int32_t v : p.int32_data()) bits.push_back(static_cast<int16_t>(static_cast<uint16_t>(v)));
      flat = at::from_blob(bits.data(), {count}, at::TensorOptions().dtype(at::kShort)).clone().view(*type);
      break;
    }
    default: count = p.int32_data_size(); flat = from_field(p.int32_data(), *type); break;
  }
  if (count != numel)
    fail(fmt::format("tensor '{}' ({} [{}]) holds {} values, its shape needs {}", p.name(), onnx_type_name(p.data_type()),
                     fmt::join(dims, ", "), count, numel));
  return flat.reshape(dims).contiguous();
}

}  // namespace grassaudit::onnx_rt
