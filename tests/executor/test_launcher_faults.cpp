// Faults end a run with a RunError naming the cause and the rank, within the timeout: no mpirun, a
// rank that dies, a rank that hangs (its peers wait in a collective), a rank that throws.
#include <cstdlib>

#include "distributed_support.h"
#include "unity/core/strategies/data_parallel.h"
#include "unity/core/zoo/model_zoo.h"

using namespace unity;
using namespace unity::executor;
using namespace unity::executor::testing;

namespace {

class Faults : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!have_mpirun()) GTEST_SKIP() << "mpirun is not installed";
    const Graph pcg = make_data_parallel(zoo::build("mnist-mlp", 32), 2);
    plan = write_plan(dir, "dp", pcg, 2);
  }

  // The message of the RunError the run ends with. A failure the launcher noticed says which rank
  // and how; one it missed would end at the timeout, with a message saying so.
  std::string fail(const std::string& fault, double timeout = 60) {
    LaunchOptions o = launch_options(plan, 2);
    o.inject_fault = fault;
    o.timeout_seconds = timeout;
    std::string message;
    try {
      launch_run(o);
      ADD_FAILURE() << "the run with fault " << fault << " succeeded";
    } catch (const RunError& e) {
      message = e.what();
    }
    return message;
  }

  TempDir dir;
  std::filesystem::path plan;
};

}  // namespace

TEST(LauncherFaults, NoMpirunIsABadInputNamingWhatWasLookedFor) {
  EXPECT_THROW(find_mpirun("/nonexistent/bin/mpirun"), RunError);
  const char* saved = std::getenv("PATH");
  const std::string path = saved ? saved : "";
  setenv("PATH", "/nonexistent", 1);
  unsetenv("UNITY_MPIRUN");
  std::string message;
  try {
    find_mpirun("");
  } catch (const RunError& e) {
    message = e.what();
  }
  setenv("PATH", path.c_str(), 1);
  EXPECT_NE(message.find("mpirun not found on PATH"), std::string::npos) << message;
  EXPECT_NE(message.find("--ranks 1"), std::string::npos) << message;
}

TEST_F(Faults, ARankThatDiesIsNamed) {
  const auto message = fail("die@1:2");
  EXPECT_NE(message.find("rank 1 died"), std::string::npos) << message;
  EXPECT_NE(message.find("signal 9"), std::string::npos) << message;
  EXPECT_NE(message.find("iteration 3"), std::string::npos) << message;
}

TEST_F(Faults, AHungRankIsNamedAndItsWaitingPeerToo) {
  const auto message = fail("hang@1:1", 2);
  EXPECT_NE(message.find("rank 1 hung"), std::string::npos) << message;
  EXPECT_NE(message.find("rank 0 was waiting for it"), std::string::npos) << message;
}

TEST_F(Faults, AnErrorOnOneRankIsReportedWithTheRank) {
  const auto message = fail("error@1:0");
  EXPECT_NE(message.find("rank 1 failed during iteration 1: injected error at iteration 1"),
            std::string::npos)
      << message;
}

TEST(LauncherFaults, FailureMessagesFromMpirunOutput) {
  // What Open MPI prints when a process exits with a signal or an error code.
  EXPECT_EQ(describe_failure({},
                             {"mpirun noticed that process rank 3 with PID 4242 on node n1 exited "
                              "on signal 11 (Segmentation fault)."},
                             256, 4),
            "rank 3 died during iteration 6 (killed by signal 11, Segmentation fault, on node n1)");
  EXPECT_EQ(describe_failure({}, {"  Process name: [[5678,1],2]", "  Exit code:    7"}, 256, -1),
            "rank 2 exited with code 7 during iteration 1");
  // Two watchdogs: everyone waited in a collective.
  const std::vector<nlohmann::json> events = {
      {{"event", "timeout"},
       {"rank", 0},
       {"seconds", 5.0},
       {"iteration", 2},
       {"phase", "backward"},
       {"waiting", "all-reduce of 10 values with ranks [0,1]"},
       {"where", "node 4 'fc1' (Linear)"}},
      {{"event", "timeout"},
       {"rank", 1},
       {"seconds", 5.0},
       {"iteration", 2},
       {"phase", "backward"},
       {"waiting", "all-reduce of 10 values with ranks [0,1]"},
       {"where", "node 4 'fc1' (Linear)"}}};
  EXPECT_EQ(describe_failure(events, {}, 256, 1),
            "hung collective: the all-reduce of 10 values with ranks [0,1] did not complete within "
            "5 s (iteration 3, "
            "backward of node 4 'fc1' (Linear)); ranks waiting: 0, 1");
}
