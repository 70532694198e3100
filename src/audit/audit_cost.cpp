#include "audit/audit_cost.h"

#include <algorithm>

namespace grassaudit {

namespace {
thread_local CostMeter* t_meter = nullptr;
}  // namespace

std::string dtype_name(at::ScalarType t) {
  return t == at::kDouble ? "float64" : t == at::kFloat ? "float32" : c10::toString(t);
}

ForwardCount ForwardLedger::total() const {
  ForwardCount c;
  for (const auto& [dtype, n] : by_dtype) c += n;
  return c;
}

ForwardLedger& ForwardLedger::operator+=(const ForwardLedger& o) {
  for (const auto& [dtype, n] : o.by_dtype) by_dtype[dtype] += n;
  conversions += o.conversions;
  return *this;
}

void CostMeter::record_forward(at::ScalarType dtype, int64_t rows, int64_t len) {
  const ForwardCount one{1, rows * len};
  const std::string key = dtype_name(dtype);
  total_.by_dtype[key] += one;
  if (!stack_.empty()) stack_.back().own.by_dtype[key] += one;
}

void CostMeter::record_conversion() {
  ++total_.conversions;
  if (!stack_.empty()) ++stack_.back().own.conversions;
}

void CostMeter::absorb(const CostMeter& other) {
  total_ += other.total_;
  if (!stack_.empty()) stack_.back().own += other.total_;
}

SectionCost& CostMeter::section(const std::string& name) {
  auto it = std::find_if(sections_.begin(), sections_.end(), [&](const SectionCost& s) { return s.name == name; });
  if (it != sections_.end()) return *it;
  sections_.push_back(SectionCost{name, 0, {}});
  return sections_.back();
}

void CostMeter::enter(const std::string& name) {
  section(name);  // listed in the order entered, an outer section before what it nests
  stack_.push_back(Frame{name, Clock::now(), 0, {}});
}

void CostMeter::leave() {
  Frame f = std::move(stack_.back());
  stack_.pop_back();
  const double elapsed = std::chrono::duration<double>(Clock::now() - f.start).count();
  SectionCost& s = section(f.name);
  s.seconds += std::max(0.0, elapsed - f.nested_seconds);
  s.forwards += f.own;
  if (!stack_.empty()) stack_.back().nested_seconds += elapsed;
}

CostScope::CostScope(CostMeter& meter) : previous_(t_meter) { t_meter = &meter; }

CostScope::~CostScope() {
  CostMeter* mine = t_meter;
  t_meter = previous_;
  if (previous_ && mine) previous_->absorb(*mine);
}

CostSection::CostSection(const std::string& name) : meter_(t_meter) {
  if (meter_) meter_->enter(name);
}

CostSection::~CostSection() {
  if (meter_) meter_->leave();
}

void record_forward(at::ScalarType dtype, int64_t rows, int64_t len) {
  if (t_meter) t_meter->record_forward(dtype, rows, len);
}

void record_conversion() {
  if (t_meter) t_meter->record_conversion();
}

}  // namespace grassaudit
