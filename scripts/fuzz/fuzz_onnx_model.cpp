// The ONNX reader (src/formats/onnx/onnx_program.h: OnnxProgram::from_bytes) on arbitrary bytes as
// the model file. The model's folder is a scratch folder holding weights.bin (64 bytes), so
// external data that names it reads real bytes, and a link out of it (outside.bin ->
// ../secret.bin); secret.bin lies beside the folder, where no model may read. A model that loads
// is run once on small inputs built from its declared inputs (a dynamic dimension is 2; a run
// whose inputs would be big is skipped), under lower limits than the CLI's, so what the fuzzer
// builds stays within a few MB and a second. Either the model loads and runs, or the reader
// throws InputError (or c10::Error from an ATen op, which the CLI reports as one line too);
// nothing else. A model that loads while its external data resolves outside the folder is a
// finding too.
#include <ATen/ATen.h>
#include <onnx/onnx_pb.h>

#include <filesystem>
#include <string>
#include <vector>

#include "formats/onnx/onnx_program.h"
#include "fuzz_common.h"
#include "util/error.h"

namespace {

namespace fs = std::filesystem;
using grassaudit::onnx_rt::OnnxProgram;

// Inputs within this many elements each are built; a model declaring bigger ones is not run.
constexpr int64_t kMaxInputElements = int64_t{1} << 16;

void write_file(const fs::path& path, const std::string& bytes) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f || std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size()) __builtin_trap();
  std::fclose(f);
}

// <scratch>/grassaudit-fuzz-<pid>-onnx/model: weights.bin, outside.bin -> ../secret.bin.
const fs::path& model_dir() {
  static const fs::path dir = [] {
    const fs::path root = fs::path(access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp") /
                          ("grassaudit-fuzz-" + std::to_string(getpid()) + "-onnx");
    fs::create_directories(root / "model");
    std::string weights;
    for (int i = 0; i < 64; ++i) weights += static_cast<char>(i % 4 == 3 ? 0x3f : 0);  // 16 float32 0.5
    write_file(root / "model" / "weights.bin", weights);
    write_file(root / "secret.bin", weights);
    std::error_code ec;
    fs::create_symlink("../secret.bin", root / "model" / "outside.bin", ec);
    return fs::canonical(root / "model");
  }();
  return dir;
}

// Traps when a tensor of `g` (or of a graph inside it) that the reader read from external data
// names a file that exists outside the model's folder.
void check_external(const onnx::GraphProto& g) {
  for (const auto& t : g.initializer()) {
    if (t.data_location() != onnx::TensorProto::EXTERNAL) continue;
    std::string location;
    for (const auto& kv : t.external_data())
      if (kv.key() == "location") location = kv.value();
    std::error_code ec;
    const fs::path file = fs::canonical(model_dir() / location, ec);
    if (ec) continue;
    const std::string inside = model_dir().string() + "/";
    if (file.string().rfind(inside, 0) != 0) __builtin_trap();
  }
  for (const auto& n : g.node())
    for (const auto& a : n.attribute()) {
      if (a.has_g()) check_external(a.g());
      for (const auto& sub : a.graphs()) check_external(sub);
    }
}

// Small inputs of the declared types and shapes (a dynamic dimension is 2, no shape: a scalar);
// empty when one would be over kMaxInputElements.
bool small_inputs(const std::vector<grassaudit::GraphInput>& declared, std::vector<at::Tensor>* out) {
  for (const auto& in : declared) {
    std::vector<int64_t> shape;
    int64_t n = 1;
    for (const auto& d : in.sizes) {
      const int64_t v = d ? *d : 2;
      if (v < 0 || v > kMaxInputElements || (v > 0 && n > kMaxInputElements / v)) return false;
      shape.push_back(v);
      n *= v;
    }
    at::Tensor t = at::arange(n, at::kLong);
    if (at::isFloatingType(in.dtype)) t = (t.remainder(5) - 2).to(at::kDouble) * 0.5;
    else t = t.remainder(2);
    out->push_back(t.to(in.dtype).reshape(shape));
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  std::unique_ptr<OnnxProgram> program;
  try {
    program = OnnxProgram::from_bytes(bytes, model_dir().string());
  } catch (const grassaudit::InputError&) {
    return 0;
  } catch (const c10::Error&) {
    return 0;
  }
  onnx::ModelProto model;
  if (!model.ParseFromString(bytes)) __builtin_trap();  // it loaded, so it parses
  check_external(model.graph());
  (void)program->describe();
  (void)program->op_census();
  (void)program->first_random_node();
  (void)program->opset();
  program->set_limits({/*max_elements=*/int64_t{1} << 20, /*max_subgraph_calls=*/int64_t{1} << 12});
  std::vector<at::Tensor> inputs;
  if (!small_inputs(program->inputs(), &inputs)) return 0;
  try {
    const std::vector<at::Tensor> out = program->run_all(inputs);
    if (out.size() != program->output_names().size()) __builtin_trap();
  } catch (const grassaudit::InputError&) {
  } catch (const c10::Error&) {
  }
  return 0;
}
