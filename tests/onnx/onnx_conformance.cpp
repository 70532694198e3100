// ONNX's own backend tests (libonnx-testdata) run through the ONNX reader: every test whose ops
// are all ones this reader runs is run on its recorded inputs and compared with its recorded
// outputs at ONNX's tolerances (the backend runner's: dtype equal, integers exactly, floats with
// rtol 1e-3 and atol 1e-7, NaN where NaN). A test with an op, domain, opset or value type this
// reader does not take is skipped, with that reason.
//
//   onnx_conformance DATA_DIR [--min-passed N] [--only SUBSTRING] [--verbose]
//
// DATA_DIR: onnx/backend/test/data (its node/, pytorch-converted/, pytorch-operator/, simple/).
// Prints the skipped tests with what skipped each, the failures with why, then
// "K skipped as unsupported" and, last, "N passed, M failed". Exit 0 when nothing failed and at
// least N passed; 1 otherwise; 2 on bad arguments.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <fmt/format.h>
#include <onnx/onnx-data_pb.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <set>

#include "formats/onnx/onnx_op.h"
#include "formats/onnx/onnx_program.h"
#include "formats/onnx/onnx_tensor.h"
#include "util/error.h"

namespace fs = std::filesystem;
using grassaudit::InputError;
using namespace grassaudit::onnx_rt;

namespace {

// Tests whose recorded outputs follow another rule than the op's spec and LibTorch: the test,
// this testdata's version (its node/ count), and why.
struct Divergence {
  const char* test;
  const char* why;
};
constexpr const char* kBf16Rounding =
    "bfloat16 rounding: ONNX's recorded outputs truncate float32 to bfloat16; LibTorch's cast rounds to nearest even";
const Divergence kDivergences[] = {
    {"node/test_cast_FLOAT_to_BFLOAT16", kBf16Rounding},
    {"node/test_castlike_FLOAT_to_BFLOAT16", kBf16Rounding},
    {"node/test_castlike_FLOAT_to_BFLOAT16_expanded", kBf16Rounding},
};

std::string read_bytes(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

// Why this reader does not take the model ("" = it does): an op it does not run (anywhere,
// sub-graphs included), another domain, an opset outside its range, a value that is not a tensor
// of a type LibTorch has.
std::string unsupported(const onnx::ModelProto& m) {
  int64_t opset = -1;
  for (const auto& os : m.opset_import())
    if (os.domain().empty() || os.domain() == "ai.onnx") opset = os.version();
  if (opset < 7) return fmt::format("opset {}", opset);
  if (opset > OnnxProgram::newest_opset()) return fmt::format("opset {}", opset);
  std::string why;
  std::function<void(const onnx::GraphProto&)> walk = [&](const onnx::GraphProto& g) {
    auto value_ok = [&](const onnx::ValueInfoProto& v) {
      if (!why.empty() || v.type().value_case() == onnx::TypeProto::VALUE_NOT_SET) return;  // a sub-graph's untyped value
      const bool sequence = v.type().has_sequence_type() && v.type().sequence_type().elem_type().has_tensor_type();
      if (!v.type().has_tensor_type() && !sequence) {
        why = "a value that is neither a tensor nor a sequence of tensors (a map or optional)";
        return;
      }
      const auto& tt = sequence ? v.type().sequence_type().elem_type().tensor_type() : v.type().tensor_type();
      if (!scalar_type_of(tt.elem_type(), nullptr)) why = fmt::format("type {}", onnx_type_name(tt.elem_type()));
    };
    for (const auto& v : g.input()) value_ok(v);
    for (const auto& v : g.output()) value_ok(v);
    for (const auto& n : g.node()) {
      if (!why.empty()) return;
      if (!n.domain().empty() && n.domain() != "ai.onnx") why = fmt::format("domain {}", n.domain());
      else if (!runs_op(n.op_type())) why = fmt::format("op {}", n.op_type());
      else if (n.op_type() == "Scan" && opset < 9) why = "op Scan before opset 9";
      else if (n.op_type() == "Dropout" && n.input_size() >= 3 && !n.input(2).empty())
        why = "random numbers (training-mode Dropout draws its own mask)";
      else if (n.op_type().rfind("Random", 0) == 0 || n.op_type() == "Bernoulli" || n.op_type() == "Multinomial")
        why = "random numbers (no recorded output to compare with)";
      for (const auto& a : n.attribute()) {
        if (a.has_g()) walk(a.g());
        if (a.type() == onnx::AttributeProto::TENSOR && !scalar_type_of(a.t().data_type(), nullptr))
          why = why.empty() ? fmt::format("type {}", onnx_type_name(a.t().data_type())) : why;
      }
    }
  };
  walk(m.graph());
  if (why.empty() && m.functions_size()) why = "model-local functions";
  return why;
}

bool is_sequence(const onnx::ValueInfoProto& v) { return v.type().has_sequence_type(); }

// A recorded value: a TensorProto, or a SequenceProto of tensors where the graph declares a sequence.
Value read_value(const fs::path& file, bool sequence, const std::function<void(onnx::TensorProto&)>& as_declared) {
  auto fail = [&](const std::string& w) { throw InputError(w); };
  const std::string bytes = read_bytes(file);
  if (!sequence) {
    onnx::TensorProto t;
    if (!t.ParseFromString(bytes)) throw InputError(file.filename().string() + " does not parse");
    as_declared(t);
    return Value(tensor_from_proto(t, file.parent_path().string(), fail));
  }
  onnx::SequenceProto q;
  if (!q.ParseFromString(bytes)) throw InputError(file.filename().string() + " does not parse as a sequence");
  std::vector<at::Tensor> items;
  for (const auto& t : q.tensor_values()) items.push_back(tensor_from_proto(t, file.parent_path().string(), fail));
  return Value::of_sequence(std::move(items));
}

std::string compare(const at::Tensor& want, const at::Tensor& got, const std::string& name) {
  if (want.scalar_type() != got.scalar_type())
    return fmt::format("{}: dtype {} expected, got {}", name, c10::toString(want.scalar_type()), c10::toString(got.scalar_type()));
  if (want.sizes() != got.sizes())
    return fmt::format("{}: shape [{}] expected, got [{}]", name, fmt::join(want.sizes().vec(), ", "),
                       fmt::join(got.sizes().vec(), ", "));
  if (!at::isFloatingType(want.scalar_type())) {
    if (!at::equal(want, got)) return fmt::format("{}: integer values differ", name);
    return "";
  }
  const at::Tensor w = want.to(at::kDouble), g = got.to(at::kDouble);
  const at::Tensor both_nan = at::logical_and(at::isnan(w), at::isnan(g));
  const at::Tensor same_inf = at::logical_and(at::isinf(w), w == g);
  const at::Tensor close = (w - g).abs() <= 1e-7 + 1e-3 * w.abs();
  const at::Tensor ok = at::logical_or(at::logical_or(close, both_nan), same_inf);
  if (ok.all().item<bool>()) return "";
  const at::Tensor bad = at::logical_not(ok).nonzero();
  const int64_t flat = bad.size(0);
  const at::Tensor err = at::where(ok, at::zeros_like(w), (w - g).abs());
  return fmt::format("{}: {} of {} values outside rtol 1e-3 / atol 1e-7 (largest error {:.3g})", name, flat, w.numel(),
                     err.max().item<double>());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: onnx_conformance DATA_DIR [--min-passed N] [--only SUBSTRING] [--verbose]\n";
    return 2;
  }
  const fs::path data = argv[1];
  int64_t min_passed = 0;
  std::string only;
  bool verbose = false;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--min-passed" && i + 1 < argc) min_passed = std::stoll(argv[++i]);
    else if (a == "--only" && i + 1 < argc) only = argv[++i];
    else if (a == "--verbose") verbose = true;
    else {
      std::cerr << "onnx_conformance: unknown argument '" << a << "'\n";
      return 2;
    }
  }
  if (!fs::is_directory(data / "node")) {
    std::cerr << "onnx_conformance: " << data.string() << " has no node/ folder (install libonnx-testdata)\n";
    return 2;
  }
  at::set_num_threads(1);
  std::vector<fs::path> tests;
  for (const char* kind : {"node", "pytorch-converted", "pytorch-operator", "simple"}) {
    if (!fs::is_directory(data / kind)) continue;
    for (const auto& e : fs::directory_iterator(data / kind))
      if (fs::exists(e.path() / "model.onnx") && (only.empty() || e.path().string().find(only) != std::string::npos))
        tests.push_back(e.path());
  }
  std::sort(tests.begin(), tests.end());
  int passed = 0, failed = 0;
  std::map<std::string, std::vector<std::string>> skipped;  // reason -> tests
  std::map<std::string, int> passed_by_kind, total_by_kind;
  for (const auto& dir : tests) {
    const std::string kind = dir.parent_path().filename().string();
    const std::string label = kind + "/" + dir.filename().string();
    ++total_by_kind[kind];
    onnx::ModelProto m;
    if (!m.ParseFromString(read_bytes(dir / "model.onnx"))) {
      std::cout << "FAILED " << label << ": model.onnx does not parse\n";
      ++failed;
      continue;
    }
    std::string why = unsupported(m);
    for (const auto& d : kDivergences)
      if (why.empty() && label == d.test) why = std::string("known divergence: ") + d.why;
    if (!why.empty()) {
      skipped[why].push_back(label);
      continue;
    }
    std::string error;
    try {
      auto program = OnnxProgram::load((dir / "model.onnx").string());
      int sets = 0;
      for (int s = 0; fs::is_directory(dir / fmt::format("test_data_set_{}", s)); ++s, ++sets) {
        const fs::path set = dir / fmt::format("test_data_set_{}", s);
        std::vector<Value> inputs, wanted;
        // ONNX's test data writes bfloat16 values as their uint16 bit patterns
        auto as_declared = [](onnx::TensorProto& t, const onnx::ValueInfoProto* v) {
          if (v && t.data_type() == onnx::TensorProto::UINT16 &&
              v->type().tensor_type().elem_type() == onnx::TensorProto::BFLOAT16)
            t.set_data_type(onnx::TensorProto::BFLOAT16);
        };
        std::vector<const onnx::ValueInfoProto*> graph_inputs;
        std::set<std::string> inits;
        for (const auto& init : m.graph().initializer()) inits.insert(init.name());
        for (const auto& v : m.graph().input())
          if (!inits.count(v.name())) graph_inputs.push_back(&v);
        bool sequences = false;
        for (int i = 0; fs::exists(set / fmt::format("input_{}.pb", i)); ++i) {
          const onnx::ValueInfoProto* v = i < static_cast<int>(graph_inputs.size()) ? graph_inputs[i] : nullptr;
          sequences = sequences || (v && is_sequence(*v));
          inputs.push_back(read_value(set / fmt::format("input_{}.pb", i), v && is_sequence(*v),
                                      [&](onnx::TensorProto& t) { as_declared(t, v); }));
        }
        for (int i = 0; fs::exists(set / fmt::format("output_{}.pb", i)); ++i) {
          const onnx::ValueInfoProto* v = i < m.graph().output_size() ? &m.graph().output(i) : nullptr;
          sequences = sequences || (v && is_sequence(*v));
          wanted.push_back(read_value(set / fmt::format("output_{}.pb", i), v && is_sequence(*v),
                                      [&](onnx::TensorProto& t) { as_declared(t, v); }));
        }
        std::vector<Value> got;
        if (sequences) {
          got = program->run_values(inputs);
        } else {
          std::vector<at::Tensor> tensors;
          for (const auto& v : inputs) tensors.push_back(v.tensor);
          for (auto& t : program->run_all(tensors, /*check_declared=*/false)) got.emplace_back(t);
        }
        if (got.size() != wanted.size())
          throw InputError(fmt::format("{} outputs expected, got {}", wanted.size(), got.size()));
        for (size_t k = 0; k < got.size() && error.empty(); ++k) {
          const std::string name = fmt::format("set {} output {} '{}'", s, k, program->output_names()[k]);
          if (wanted[k].is_sequence() != got[k].is_sequence()) {
            error = name + ": a sequence and a tensor";
          } else if (!wanted[k].is_sequence()) {
            error = compare(wanted[k].tensor, got[k].tensor.contiguous(), name);
          } else if (wanted[k].sequence->size() != got[k].sequence->size()) {
            error = fmt::format("{}: {} tensors expected, got {}", name, wanted[k].sequence->size(), got[k].sequence->size());
          } else {
            for (size_t j = 0; j < got[k].sequence->size() && error.empty(); ++j)
              error = compare((*wanted[k].sequence)[j], (*got[k].sequence)[j].contiguous(), fmt::format("{}[{}]", name, j));
          }
        }
        if (!error.empty()) break;
      }
      if (error.empty() && sets == 0) error = "no test_data_set_0";
    } catch (const InputError& e) {
      error = e.what();
    } catch (const c10::Error& e) {
      error = e.what_without_backtrace();
    } catch (const std::exception& e) {
      error = e.what();
    }
    if (error.empty()) {
      ++passed;
      ++passed_by_kind[kind];
      if (verbose) std::cout << "passed " << label << "\n";
    } else {
      ++failed;
      error = error.substr(0, error.find('\n'));
      std::cout << "FAILED " << label << ": " << error << "\n";
    }
  }
  size_t n_skipped = 0;
  for (const auto& [why, list] : skipped) {
    n_skipped += list.size();
    std::cout << "skipped (" << why << "): ";
    for (size_t i = 0; i < list.size(); ++i) std::cout << (i ? ", " : "") << list[i];
    std::cout << "\n";
  }
  for (const auto& [kind, total] : total_by_kind) std::cout << kind << ": " << passed_by_kind[kind] << " of " << total << " passed\n";
  std::cout << n_skipped << " skipped as unsupported\n";
  std::cout << passed << " passed, " << failed << " failed\n";
  if (passed < min_passed) std::cerr << "onnx_conformance: fewer than " << min_passed << " passed\n";
  return failed == 0 && passed >= min_passed ? 0 : 1;
}
