// The sessions a checkpoint hands on to its resumed run (train/provenance.h): recorded ones pass
// through unchanged, a checkpoint from before sessions were recorded yields one unrecorded entry.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "train/provenance.h"

namespace grassaudit {
namespace {

using nlohmann::json;

TEST(ProvenanceSessions, ANewRunHasNoEarlierSessions) {
  EXPECT_EQ(earlier_sessions(nullptr, 0), json::array());
}

TEST(ProvenanceSessions, RecordedSessionsPassThrough) {
  const json recorded = json::array({{{"first_step", 0}, {"last_step", 7}, {"git_commit", "unknown"}}});
  const json meta{{"train", json::object()}, {"sessions", recorded}};
  EXPECT_EQ(earlier_sessions(&meta, 7), recorded);
}

TEST(ProvenanceSessions, AnOlderCheckpointYieldsOneUnrecordedSession) {
  const json meta{{"train", json::object()}, {"state", json::object()}};
  const json got = earlier_sessions(&meta, 509);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0]["first_step"], 0);
  EXPECT_EQ(got[0]["last_step"], 509);
  EXPECT_EQ(got[0]["recorded"], false);
}

TEST(ProvenanceSessions, ARecordNamesStepsCodeAndCommand) {
  const json s = session_record(ProvenanceInputs{{}, "cpu", 2, "fp32"}, 3, 11);
  EXPECT_EQ(s["first_step"], 3);
  EXPECT_EQ(s["last_step"], 11);
  EXPECT_EQ(s["world_size"], 2);
  EXPECT_EQ(s["device"], "cpu");
  for (const char* key : {"git_commit", "git_dirty", "grassaudit_version", "threads", "precision", "command_line"})
    EXPECT_TRUE(s.contains(key)) << key;
}

}  // namespace
}  // namespace grassaudit
