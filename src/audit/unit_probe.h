#pragma once
// Where a leak enters (checks/localise_check.cpp): the units a model's format can name (a
// submodule, a graph node, a module group of nodes), each unit's boundary values recorded in a
// forward, and a forward with some units fed other inputs or held to other outputs. A target
// offers one (AuditTarget::unit_probe) where it can see inside itself; every decision is the
// engine's (the helpers below and the localise check), none is the format's.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace grassaudit {

struct ProbeUnit {
  std::string path;                   // "" the model's own code; "blocks.0.mix"
  std::optional<std::string> op;      // what it is: a class name, an op ("aten.topk", "TopK")
  std::optional<std::string> source;  // "MoE.forward, model.py:57"
  std::optional<std::string> node;    // a graph node's name
  int parent = -1;                    // the enclosing unit (-1: none, the root itself)
};

// A unit's tensors at its first call in one forward: its tensor inputs and outputs, as flattened
// leaves in an order that is the same in every forward of one probe.
struct UnitValues {
  bool called = false;
  std::vector<at::Tensor> inputs, outputs;
};

// Values for some units by index: the inputs a unit is fed, or the outputs it is held to.
using UnitTensors = std::map<int, std::vector<at::Tensor>>;

class UnitProbe {
 public:
  virtual ~UnitProbe() = default;
  // Every unit, parents before children; unit 0 is the root (the whole model, path "").
  virtual const std::vector<ProbeUnit>& units() = 0;
  // One forward of x (in the mode, dtype and RNG state the caller set), every unit's values
  // recorded; with the tensor inputs of the units in `fed` replaced by the given ones, and the
  // tensor outputs of the units in `held` replaced by the given ones (recorded as replaced).
  virtual std::vector<UnitValues> run(const at::Tensor& x, const UnitTensors& fed, const UnitTensors& held) = 0;
};

// The axes of a unit's tensor that are the time axis: its size is L in the forward at length L
// and L2 in the forward at L2 (dim 0, the rows, never). Sizes L + k (a padded input), L / 8
// (chunks) or L - D (a slice) are not: an alignment would have to be guessed. Without a second
// shape (L2 = 0), every axis but dim 0 of size L.
std::vector<int64_t> time_axes(const std::vector<int64_t>& at_L, const std::vector<int64_t>& at_L2, int64_t L,
                               int64_t L2);

// [R, ...] tensors of one unit's leaf in the base rows (a) and the probe rows (b), `cuts` [R] the
// cut of each row: the leaf as a unit would see it with only its own future replaced, b where
// any time index is at or after the row's cut, else a.
at::Tensor fed_at_cut(const at::Tensor& a, const at::Tensor& b, const std::vector<int64_t>& axes,
                      const at::Tensor& cuts);
// y with every element whose time indices all lie before the row's cut taken from y_base: a
// unit's outputs held to what it gave before the cut on the base rows.
at::Tensor held_before_cut(const at::Tensor& y, const at::Tensor& y_base, const std::vector<int64_t>& axes,
                           const at::Tensor& cuts);
// [R, L] float64: at row r and position t < cuts[r] (the first time axis), the largest
// |y - y_base| over the elements whose time indices all lie before the cut, relative to the row's
// max |y_base|; 0 elsewhere.
at::Tensor effect_before_cut(const at::Tensor& y, const at::Tensor& y_base, const std::vector<int64_t>& axes,
                             const at::Tensor& cuts, int64_t L);

// Batch sites: [R, ...] leaves of the base rows (a) and the mixed rows (b), `keep` [R] bool: a
// where the row is kept, else b (a unit's leaf with only the other rows' part replaced).
at::Tensor rows_mixed(const at::Tensor& a, const at::Tensor& b, const at::Tensor& keep);
// The largest |y - y_base| over the kept rows, each relative to its row's max |y_base|.
double effect_in_kept_rows(const at::Tensor& y, const at::Tensor& y_base, const at::Tensor& keep);

}  // namespace grassaudit
