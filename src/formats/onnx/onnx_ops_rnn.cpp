#include <ATen/ATen.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>

#include "formats/onnx/onnx_op.h"

// The recurrent ops LSTM, GRU and RNN (one layer, one or two directions), as the ONNX spec states
// them (opsets 7 to 22; `layout` from 14). Each step is a few ATen ops on the whole batch; a loop
// over time steps carries the state, in X's dtype so the audit's float64 re-run stays float64.
//
// Where the spec leaves a detail open, the ops do what ONNX Runtime does:
// - activation_alpha/activation_beta go, in order, to the activations that take them (Affine,
//   LeakyRelu, ThresholdedRelu, ScaledTanh, HardSigmoid, Elu); once a list runs out, defaults.
//   The defaults are the ONNX operators' (Affine 1 and 0, ThresholdedRelu 1), where ONNX Runtime
//   takes 0.
// - clip bounds each gate's pre-activation (biases and peepholes included), not the cell state
//   that LSTM's h() reads.
// - a sequence of length 0 gives zeros in Y and in its final states.
// - LSTM's input_forget couples the gates as ft = 1 - it.
namespace grassaudit::onnx_rt {

namespace {

enum class Fn {
  Sigmoid, Tanh, Relu, Affine, LeakyRelu, ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, Softsign, Softplus
};

// One activation function with the alpha/beta it takes.
struct Activation {
  Fn fn = Fn::Tanh;
  double alpha = 0.0, beta = 0.0;

  at::Tensor operator()(const at::Tensor& x) const {
    switch (fn) {
      case Fn::Sigmoid: return at::sigmoid(x);
      case Fn::Tanh: return at::tanh(x);
      case Fn::Relu: return at::relu(x);
      case Fn::Affine: return x * alpha + beta;
      case Fn::LeakyRelu: return at::where(x >= 0, x, x * alpha);
      // The RNN spec writes `x if x >= alpha else 0`.
      case Fn::ThresholdedRelu: return at::where(x >= alpha, x, at::zeros_like(x));
      case Fn::ScaledTanh: return at::tanh(x * beta) * alpha;
      case Fn::HardSigmoid: return at::clamp(x * alpha + beta, 0.0, 1.0);
      // expm1 reads only the negative side, so a large x cannot overflow into the unused branch.
      case Fn::Elu: return at::where(x >= 0, x, at::expm1(at::clamp_max(x, 0.0)) * alpha);
      case Fn::Softsign: return x / (at::abs(x) + 1.0);
      // log(1 + e^x) written so that neither side overflows.
      case Fn::Softplus: return at::relu(x) + at::log1p(at::exp(-at::abs(x)));
    }
    return x;
  }
};

struct ActivationSpec {
  Fn fn;
  bool alpha, beta;
  double alpha_default, beta_default;
};

// An activation by its lower-case name: whether it takes alpha and beta, and their defaults (the
// ONNX operators' own; ScaledTanh, which has no ONNX operator, scales by 1).
std::optional<ActivationSpec> activation_spec(const std::string& lower) {
  static const std::map<std::string, ActivationSpec> specs{
      {"sigmoid", {Fn::Sigmoid, false, false, 0.0, 0.0}},
      {"tanh", {Fn::Tanh, false, false, 0.0, 0.0}},
      {"relu", {Fn::Relu, false, false, 0.0, 0.0}},
      {"affine", {Fn::Affine, true, true, 1.0, 0.0}},
      {"leakyrelu", {Fn::LeakyRelu, true, false, 0.01, 0.0}},
      {"thresholdedrelu", {Fn::ThresholdedRelu, true, false, 1.0, 0.0}},
      {"scaledtanh", {Fn::ScaledTanh, true, true, 1.0, 1.0}},
      {"hardsigmoid", {Fn::HardSigmoid, true, true, 0.2, 0.5}},
      {"elu", {Fn::Elu, true, false, 1.0, 0.0}},
      {"softsign", {Fn::Softsign, false, false, 0.0, 0.0}},
      {"softplus", {Fn::Softplus, false, false, 0.0, 0.0}},
  };
  const auto it = specs.find(lower);
  if (it == specs.end()) return std::nullopt;
  return it->second;
}

// The node's activations, `per_dir` for each of `dirs` directions (the second direction's follow
// the first's). Absent: `defaults` in every direction. A bidirectional node that lists one
// direction's uses them for both; a one-direction node that lists two directions' (RNN's
// schema default is {"Tanh", "Tanh"}) uses the first.
std::vector<Activation> parse_activations(const OpContext& c, const std::vector<std::string>& defaults, int64_t dirs) {
  const size_t per_dir = defaults.size();
  std::vector<std::string> names = c.attr_strings("activations");
  if (names.empty()) names = defaults;
  const std::vector<float> alphas = c.attr_floats("activation_alpha"), betas = c.attr_floats("activation_beta");
  size_t next_alpha = 0, next_beta = 0;
  std::vector<Activation> out;
  for (const std::string& name : names) {
    std::string lower = name;
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
    const auto spec = activation_spec(lower);
    if (!spec) c.fail(fmt::format("unknown activation '{}'", name));
    Activation a;
    a.fn = spec->fn;
    if (spec->alpha) a.alpha = next_alpha < alphas.size() ? alphas[next_alpha++] : spec->alpha_default;
    if (spec->beta) a.beta = next_beta < betas.size() ? betas[next_beta++] : spec->beta_default;
    out.push_back(a);
  }
  const size_t want = per_dir * static_cast<size_t>(dirs);
  if (out.size() == per_dir && dirs == 2) {
    const std::vector<Activation> first = out;
    out.insert(out.end(), first.begin(), first.end());
  } else if (out.size() == 2 * per_dir && dirs == 1) {
    out.resize(per_dir);
  }
  if (out.size() != want)
    c.fail(fmt::format("{} activations given, expected {} ({} per direction)", names.size(), want, per_dir));
  return out;
}

// What the three ops share: the inputs in time-major form, checked against each other.
struct Recurrence {
  at::Tensor x;        // [seq, batch, input]
  at::Tensor w, r, b;  // [dirs, gates*hidden, input], [dirs, gates*hidden, hidden], [dirs, 2*gates*hidden]
  at::Tensor h0;       // [dirs, batch, hidden]
  at::Tensor lens;     // [batch] int64, or undefined when every sequence is full length
  int64_t seq = 0, batch = 0, hidden = 0, dirs = 1;
  bool layout1 = false;
  bool reverse_only = false;  // direction == "reverse"
  std::optional<double> clip;

  bool reversed(int64_t d) const { return reverse_only || d == 1; }

  at::Tensor clipped(const at::Tensor& t) const { return clip ? at::clamp(t, -*clip, *clip) : t; }

  // A state input ([dirs, batch, hidden], or [batch, dirs, hidden] in layout 1), zeros when absent.
  at::Tensor state_input(const OpContext& c, size_t i, const char* what) const {
    at::Tensor s = c.input(i);
    if (!s.defined()) return at::zeros({dirs, batch, hidden}, x.options());
    if (layout1 && s.dim() == 3) s = s.transpose(0, 1);
    if (s.dim() != 3 || s.size(0) != dirs || s.size(1) != batch || s.size(2) != hidden)
      c.fail(fmt::format("{} has shape {}, expected {} (layout {})", what, s.sizes(),
                         layout1 ? std::vector<int64_t>{batch, dirs, hidden}
                                 : std::vector<int64_t>{dirs, batch, hidden},
                         layout1 ? 1 : 0));
    return s.to(x.scalar_type());
  }

  // [batch, 1] true where step t lies within the sequence; undefined when all do.
  at::Tensor valid_at(int64_t t) const { return lens.defined() ? (lens > t).unsqueeze(1) : at::Tensor(); }

  // Y in the node's layout from each direction's [seq, batch, hidden] outputs.
  at::Tensor y_out(const Ts& per_dir) const {
    at::Tensor y = at::stack(per_dir, 1);  // [seq, dirs, batch, hidden]
    return (layout1 ? y.permute({2, 0, 1, 3}) : y).contiguous();
  }

  // A final state in the node's layout from each direction's [batch, hidden] state; zero for a
  // sequence of length 0.
  at::Tensor state_out(const Ts& per_dir) const {
    at::Tensor s = at::stack(per_dir, 0);  // [dirs, batch, hidden]
    if (lens.defined()) s = at::where((lens > 0).view({1, batch, 1}), s, at::zeros_like(s));
    return (layout1 ? s.transpose(0, 1) : s).contiguous();
  }
};

Recurrence prepare(const OpContext& c, int64_t gates) {
  Recurrence rc;
  at::Tensor x = c.required(0);
  if (x.dim() != 3) c.fail(fmt::format("X has rank {}, expected 3", x.dim()));
  if (!at::isFloatingType(x.scalar_type()))
    c.fail(fmt::format("X has type {}, expected a float type", c10::toString(x.scalar_type())));
  const int64_t layout = c.attr_int("layout", 0);
  if (layout != 0 && layout != 1) c.fail(fmt::format("layout {} is neither 0 nor 1", layout));
  rc.layout1 = layout == 1;
  rc.x = rc.layout1 ? x.transpose(0, 1) : x;
  rc.seq = rc.x.size(0);
  rc.batch = rc.x.size(1);
  const int64_t input = rc.x.size(2);

  const std::string direction = c.attr_string("direction", "forward");
  if (direction == "bidirectional") rc.dirs = 2;
  else if (direction == "reverse") rc.reverse_only = true;
  else if (direction != "forward")
    c.fail(fmt::format("direction '{}' is not forward, reverse or bidirectional", direction));

  const auto dtype = x.scalar_type();
  rc.w = c.required(1).to(dtype);
  rc.r = c.required(2).to(dtype);
  if (rc.r.dim() != 3) c.fail(fmt::format("R has shape {}, expected rank 3", rc.r.sizes()));
  rc.hidden = c.attr_int("hidden_size", rc.r.size(2));
  if (rc.hidden <= 0 || rc.hidden > c.max_elements())
    c.fail(fmt::format("hidden_size {} is not a positive size", rc.hidden));
  const int64_t gh = gates * rc.hidden;
  // The gates of every step, [seq, dirs, batch, gates*hidden], bound what the op allocates.
  c.check_size({rc.seq, rc.dirs, rc.batch, gh}, "the gates");
  if (rc.w.dim() != 3 || rc.w.size(0) != rc.dirs || rc.w.size(1) != gh || rc.w.size(2) != input)
    c.fail(fmt::format("W has shape {}, expected [{}, {}, {}]", rc.w.sizes(), rc.dirs, gh, input));
  if (rc.r.size(0) != rc.dirs || rc.r.size(1) != gh || rc.r.size(2) != rc.hidden)
    c.fail(fmt::format("R has shape {}, expected [{}, {}, {}]", rc.r.sizes(), rc.dirs, gh, rc.hidden));
  if (c.input(3).defined()) {
    rc.b = c.input(3).to(dtype);
    if (rc.b.dim() != 2 || rc.b.size(0) != rc.dirs || rc.b.size(1) != 2 * gh)
      c.fail(fmt::format("B has shape {}, expected [{}, {}]", rc.b.sizes(), rc.dirs, 2 * gh));
  } else {
    rc.b = at::zeros({rc.dirs, 2 * gh}, rc.x.options());
  }

  if (c.input(4).defined()) {
    const at::Tensor lens = c.input(4);
    if (at::isFloatingType(lens.scalar_type()) || lens.dim() != 1 || lens.size(0) != rc.batch)
      c.fail(fmt::format("sequence_lens has shape {} and type {}, expected [{}] integers", lens.sizes(),
                         c10::toString(lens.scalar_type()), rc.batch));
    rc.lens = lens.to(at::kLong);
    if (rc.batch > 0 && (rc.lens.min().item<int64_t>() < 0 || rc.lens.max().item<int64_t>() > rc.seq))
      c.fail(fmt::format("sequence_lens holds a length outside [0, {}]", rc.seq));
  }
  rc.h0 = rc.state_input(c, 5, "initial_h");
  if (c.has("clip")) {
    const double clip = c.attr_float("clip", 0.0f);
    if (!(clip > 0.0)) c.fail(fmt::format("clip {} is not positive", clip));
    rc.clip = clip;
  }
  return rc;
}

// The steps of direction d in the order it takes them.
std::vector<int64_t> step_order(const Recurrence& rc, int64_t d) {
  std::vector<int64_t> order(rc.seq);
  for (int64_t k = 0; k < rc.seq; ++k) order[k] = rc.reversed(d) ? rc.seq - 1 - k : k;
  return order;
}

// y_t where step t is valid for a row, zero past its length.
at::Tensor masked_output(const at::Tensor& valid, const at::Tensor& h) {
  return valid.defined() ? at::where(valid, h, at::zeros_like(h)) : h;
}

// The new state where step t is valid, the carried one past a row's length (so the final state is
// the state at the last valid step, and a reverse pass starts at each row's own last step).
at::Tensor masked_state(const at::Tensor& valid, const at::Tensor& next, const at::Tensor& prev) {
  return valid.defined() ? at::where(valid, next, prev) : next;
}

at::Tensor stack_steps(const Recurrence& rc, const Ts& ys) {
  if (ys.empty()) return at::zeros({0, rc.batch, rc.hidden}, rc.x.options());
  return at::stack(ys, 0);
}

// One direction d of a recurrence from hidden state h: `step(h, t, valid)` gives the hidden state
// after step t (a step that keeps more state, the LSTM's cell, holds it where `valid` is false
// itself). The steps run in the direction's order; past a sequence's length the output is zero
// and the hidden state held. Returns Y [seq, batch, hidden] (stack_steps) and the last state.
template <class Step>
std::pair<at::Tensor, at::Tensor> run_direction(const Recurrence& rc, int64_t d, at::Tensor h, Step step) {
  Ts y(rc.seq);
  for (int64_t t : step_order(rc, d)) {
    const at::Tensor valid = rc.valid_at(t);
    const at::Tensor next = step(h, t, valid);
    y[t] = masked_output(valid, next);
    h = masked_state(valid, next, h);
  }
  return {stack_steps(rc, y), h};
}

Ts rnn(OpContext& c) {
  // X [seq, batch, input] (layout 1: [batch, seq, input]); W [dirs, hidden, input];
  // R [dirs, hidden, hidden]; B [dirs, 2*hidden] = [Wb, Rb]; sequence_lens [batch];
  // initial_h [dirs, batch, hidden] (layout 1: [batch, dirs, hidden]).
  // Y [seq, dirs, batch, hidden] (layout 1: [batch, seq, dirs, hidden]); Y_h like initial_h.
  // Ht = f(Xt*(Wi^T) + Ht-1*(Ri^T) + Wbi + Rbi)
  const Recurrence rc = prepare(c, 1);
  const std::vector<Activation> acts = parse_activations(c, {"Tanh"}, rc.dirs);
  const int64_t H = rc.hidden;
  Ts ys, hs;
  for (int64_t d = 0; d < rc.dirs; ++d) {
    const Activation& f = acts[d];
    const at::Tensor wb = rc.b[d].slice(0, 0, H), rb = rc.b[d].slice(0, H, 2 * H);
    const at::Tensor xw = at::matmul(rc.x, rc.w[d].t()) + wb;  // [seq, batch, hidden]
    const at::Tensor rt = rc.r[d].t();
    auto [y, h] = run_direction(rc, d, rc.h0[d], [&](const at::Tensor& h, int64_t t, const at::Tensor&) {
      return f(rc.clipped(xw[t] + at::matmul(h, rt) + rb));
    });
    ys.push_back(std::move(y));
    hs.push_back(std::move(h));
  }
  return {rc.y_out(ys), rc.state_out(hs)};
}

Ts gru(OpContext& c) {
  // X [seq, batch, input] (layout 1: [batch, seq, input]); W [dirs, 3*hidden, input] (zrh);
  // R [dirs, 3*hidden, hidden]; B [dirs, 6*hidden] = [Wb[zrh], Rb[zrh]]; sequence_lens [batch];
  // initial_h [dirs, batch, hidden] (layout 1: [batch, dirs, hidden]).
  // Y [seq, dirs, batch, hidden] (layout 1: [batch, seq, dirs, hidden]); Y_h like initial_h.
  // zt = f(Xt*(Wz^T) + Ht-1*(Rz^T) + Wbz + Rbz)
  // rt = f(Xt*(Wr^T) + Ht-1*(Rr^T) + Wbr + Rbr)
  // ht = g(Xt*(Wh^T) + (rt (.) Ht-1)*(Rh^T) + Rbh + Wbh)        linear_before_reset = 0
  // ht = g(Xt*(Wh^T) + (rt (.) (Ht-1*(Rh^T) + Rbh)) + Wbh)      linear_before_reset != 0
  // Ht = (1 - zt) (.) ht + zt (.) Ht-1
  const Recurrence rc = prepare(c, 3);
  const std::vector<Activation> acts = parse_activations(c, {"Sigmoid", "Tanh"}, rc.dirs);
  const bool linear_before_reset = c.attr_int("linear_before_reset", 0) != 0;
  const int64_t H = rc.hidden;
  Ts ys, hs;
  for (int64_t d = 0; d < rc.dirs; ++d) {
    const Activation &f = acts[2 * d], &g = acts[2 * d + 1];
    const at::Tensor wb = rc.b[d].slice(0, 0, 3 * H), rb = rc.b[d].slice(0, 3 * H, 6 * H);
    const at::Tensor xw = at::matmul(rc.x, rc.w[d].t()) + wb;  // [seq, batch, 3*hidden]
    const at::Tensor r_zr = rc.r[d].slice(0, 0, 2 * H).t(), r_h = rc.r[d].slice(0, 2 * H, 3 * H).t();
    const at::Tensor rb_zr = rb.slice(0, 0, 2 * H), rb_h = rb.slice(0, 2 * H, 3 * H);
    auto [y, h] = run_direction(rc, d, rc.h0[d], [&](const at::Tensor& h, int64_t t, const at::Tensor&) {
      const at::Tensor xt = xw[t];
      const at::Tensor zr = xt.slice(1, 0, 2 * H) + at::matmul(h, r_zr) + rb_zr;  // [batch, 2*hidden]
      const at::Tensor z = f(rc.clipped(zr.slice(1, 0, H)));
      const at::Tensor r = f(rc.clipped(zr.slice(1, H, 2 * H)));
      const at::Tensor hh = linear_before_reset ? r * (at::matmul(h, r_h) + rb_h) : at::matmul(r * h, r_h) + rb_h;
      const at::Tensor cand = g(rc.clipped(xt.slice(1, 2 * H, 3 * H) + hh));
      return (1.0 - z) * cand + z * h;
    });
    ys.push_back(std::move(y));
    hs.push_back(std::move(h));
  }
  return {rc.y_out(ys), rc.state_out(hs)};
}

Ts lstm(OpContext& c) {
  // X [seq, batch, input] (layout 1: [batch, seq, input]); W [dirs, 4*hidden, input] (iofc);
  // R [dirs, 4*hidden, hidden]; B [dirs, 8*hidden] = [Wb[iofc], Rb[iofc]]; sequence_lens [batch];
  // initial_h, initial_c [dirs, batch, hidden] (layout 1: [batch, dirs, hidden]);
  // P [dirs, 3*hidden] (iof).
  // Y [seq, dirs, batch, hidden] (layout 1: [batch, seq, dirs, hidden]); Y_h, Y_c like initial_h.
  // it = f(Xt*(Wi^T) + Ht-1*(Ri^T) + Pi (.) Ct-1 + Wbi + Rbi)
  // ft = f(Xt*(Wf^T) + Ht-1*(Rf^T) + Pf (.) Ct-1 + Wbf + Rbf)      (1 - it with input_forget)
  // ct = g(Xt*(Wc^T) + Ht-1*(Rc^T) + Wbc + Rbc)
  // Ct = ft (.) Ct-1 + it (.) ct
  // ot = f(Xt*(Wo^T) + Ht-1*(Ro^T) + Po (.) Ct + Wbo + Rbo)
  // Ht = ot (.) h(Ct)
  const Recurrence rc = prepare(c, 4);
  const std::vector<Activation> acts = parse_activations(c, {"Sigmoid", "Tanh", "Tanh"}, rc.dirs);
  const bool input_forget = c.attr_int("input_forget", 0) != 0;
  const int64_t H = rc.hidden;
  const at::Tensor c0 = rc.state_input(c, 6, "initial_c");
  at::Tensor p;
  if (c.input(7).defined()) {
    p = c.input(7).to(rc.x.scalar_type());
    if (p.dim() != 2 || p.size(0) != rc.dirs || p.size(1) != 3 * H)
      c.fail(fmt::format("P has shape {}, expected [{}, {}]", p.sizes(), rc.dirs, 3 * H));
  }
  Ts ys, hs, cs;
  for (int64_t d = 0; d < rc.dirs; ++d) {
    const Activation &f = acts[3 * d], &g = acts[3 * d + 1], &hact = acts[3 * d + 2];
    const at::Tensor bias = rc.b[d].slice(0, 0, 4 * H) + rc.b[d].slice(0, 4 * H, 8 * H);
    const at::Tensor xw = at::matmul(rc.x, rc.w[d].t()) + bias;  // [seq, batch, 4*hidden]
    const at::Tensor rt = rc.r[d].t();
    at::Tensor pi, po, pf;
    if (p.defined()) {
      pi = p[d].slice(0, 0, H);
      po = p[d].slice(0, H, 2 * H);
      pf = p[d].slice(0, 2 * H, 3 * H);
    }
    at::Tensor cell = c0[d];
    auto [y, h] = run_direction(rc, d, rc.h0[d], [&](const at::Tensor& h, int64_t t, const at::Tensor& valid) {
      const at::Tensor gates = xw[t] + at::matmul(h, rt);  // [batch, 4*hidden]
      at::Tensor gi = gates.slice(1, 0, H), go = gates.slice(1, H, 2 * H);
      at::Tensor gf = gates.slice(1, 2 * H, 3 * H), gc = gates.slice(1, 3 * H, 4 * H);
      if (p.defined()) {
        gi = gi + pi * cell;
        gf = gf + pf * cell;
      }
      const at::Tensor i = f(rc.clipped(gi));
      const at::Tensor fg = input_forget ? 1.0 - i : f(rc.clipped(gf));
      const at::Tensor next_c = fg * cell + i * g(rc.clipped(gc));
      if (p.defined()) go = go + po * next_c;
      cell = masked_state(valid, next_c, cell);
      return f(rc.clipped(go)) * hact(next_c);
    });
    ys.push_back(std::move(y));
    hs.push_back(std::move(h));
    cs.push_back(cell);
  }
  return {rc.y_out(ys), rc.state_out(hs), rc.state_out(cs)};
}

}  // namespace

void add_rnn_ops(OpTable& table) {
  table["LSTM"] = lstm;
  table["GRU"] = gru;
  table["RNN"] = rnn;
}

}  // namespace grassaudit::onnx_rt
