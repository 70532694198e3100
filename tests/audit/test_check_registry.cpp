// The seam the audit's checks plug into (src/audit/checks/check.h): every check has its own name,
// the order respects what each check reads from the ones before it, the suite's expectations are
// data the checks declare, and probe seeds come from names.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "audit/audit_prober.h"
#include "audit/audit_suite.h"
#include "formats/model_file.h"
#include "audit/checks/check.h"
#include "util/error.h"

namespace fs = std::filesystem;
using namespace grassaudit;

namespace {

size_t position(const std::string& name) {
  const auto& checks = registered_checks();
  for (size_t i = 0; i < checks.size(); ++i)
    if (name == checks[i]->name()) return i;
  ADD_FAILURE() << "no check named " << name;
  return checks.size();
}

}  // namespace

TEST(CheckRegistry, NamesAndExpectationKeysAreUnique) {
  std::set<std::string> names, keys;
  for (const auto& c : registered_checks()) {
    EXPECT_TRUE(names.insert(c->name()).second) << "two checks named " << c->name();
    for (const auto& e : c->expectations()) EXPECT_TRUE(keys.insert(e.key).second) << "two checks answer " << e.key;
  }
  EXPECT_GE(names.size(), 8u);
}

TEST(CheckRegistry, OrderFollowsWhatEachCheckReads) {
  // A coupled batch is probed one row per pass from then on: before any table.
  EXPECT_LT(position("batch"), position("future"));
  // The length check's guard is the future horizon; the gradient compares with the tables; the
  // structural pass audits the future again and must know its horizon as given.
  EXPECT_LT(position("future"), position("length"));
  EXPECT_LT(position("future"), position("gradient"));
  EXPECT_LT(position("gradient"), position("structural"));
  // The whole-model checks run after every per-output check.
  bool whole = false;
  for (const auto& c : registered_checks()) {
    if (c->stage() == Check::Stage::kWholeModel) whole = true;
    else EXPECT_FALSE(whole) << c->name() << " is a per-output check listed after a whole-model one";
  }
}

TEST(CheckRegistry, EveryViolationKindButFutureHasAHeadlineName) {
  AuditResult r;
  for (ViolationKind k : {ViolationKind::kLength, ViolationKind::kBatch, ViolationKind::kWindow,
                          ViolationKind::kStructural, ViolationKind::kIncremental}) {
    const Violation v{k, 1, 0, {}};
    int named = 0;
    for (const auto& c : registered_checks()) named += !c->headline(v, r).empty();
    EXPECT_EQ(named, 1) << violation_kind_name(k) << " is named by " << named << " checks";
  }
}

TEST(CheckRegistry, ProbeSeedsDifferByNameLengthAndVariant) {
  // The seeds are every audit's rows: pinned to the function they are (FNV-1a of the name, then
  // splitmix64's finaliser over the seed, L and the variant), computed outside this code, so a
  // change to them, which would change every recorded fact, fails here first.
  EXPECT_EQ(probe_seed(1234, "batch", 32), 0xd57f80c20cc93aaaULL);
  EXPECT_EQ(probe_seed(1234, "future", 16, 1), 0x46770d5ac1b58972ULL);
  std::set<uint64_t> seen;
  for (const char* name : {"batch", "future", "past", "length", "gradient", "vacuity"})
    for (int64_t L : {16, 31, 32})
      for (int64_t v : {0, 1}) EXPECT_TRUE(seen.insert(probe_seed(1234, name, L, v)).second) << name << " " << L;
  EXPECT_NE(probe_seed(1234, "batch", 32), probe_seed(1235, "batch", 32));
}

TEST(CheckRegistry, SuiteRefusesAnExpectationNoCheckAnswers) {
  // The model path is never opened: the case is refused while it is read.
  const fs::path dir = fs::temp_directory_path() / "grassaudit-check-registry";
  fs::create_directories(dir);
  const fs::path suite = dir / "suite.json";
  nlohmann::json s{{"cases",
                    {{{"name", "typo"},
                      {"model", "m.pt"},
                      {"input", "tokens:8"},
                      {"seq_len", 8},
                      {"expect", {{"verdict", "causal"}, {"leak_horizon", 0}, {"batch_couple", false}}}}}}};
  std::ofstream(suite) << s.dump();
  try {
    run_audit_suite(suite.string(), AuditOptions{}, open_model_file);
    FAIL() << "an unknown expectation was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown expectation 'batch_couple'"), std::string::npos) << e.what();
  }
  s["cases"][0]["expect"] = {{"verdict", "causal"}, {"leak_horizon", 0}, {"violations", {"futur"}}};
  std::ofstream(suite) << s.dump();
  EXPECT_THROW(run_audit_suite(suite.string(), AuditOptions{}, open_model_file), InputError);
  fs::remove_all(dir);
}
