// DistributedOptions from torchrun's environment (torch-free): what is read, what a single
// process looks like, and the errors for an environment that describes no run.
#include <dtl/distributed/options.hpp>

#include <map>
#include <string>

// After dtl's headers, as in every test: were glog ever pulled in, its CHECK must not win.
#include <doctest/doctest.h>

#include "../support/errors.hpp"

namespace {

using test_support::contains;
using test_support::error_of;

std::optional<dtl::DistributedOptions> from(const std::map<std::string, std::string>& env) {
  return dtl::detail::distributed_options_from([&](const char* name) -> const char* {
    const auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

}  // namespace

TEST_CASE("no WORLD_SIZE, or WORLD_SIZE=1: a single process (no socket)") {
  CHECK_FALSE(from({}).has_value());
  CHECK_FALSE(from({{"WORLD_SIZE", "1"}, {"RANK", "0"}}).has_value());
}

TEST_CASE("torchrun's variables, two nodes of two processes") {
  const auto o = from({{"WORLD_SIZE", "4"},
                       {"RANK", "3"},
                       {"LOCAL_RANK", "1"},
                       {"LOCAL_WORLD_SIZE", "2"},
                       {"GROUP_RANK", "1"},
                       {"GROUP_WORLD_SIZE", "2"},
                       {"MASTER_ADDR", "10.0.0.5"},
                       {"MASTER_PORT", "29600"},
                       {"TORCHELASTIC_USE_AGENT_STORE", "True"},
                       {"TORCHELASTIC_RESTART_COUNT", "2"},
                       {"DTL_DIST_TIMEOUT", "15"}});
  REQUIRE(o.has_value());
  CHECK(o->rank == 3);
  CHECK(o->size == 4);
  CHECK(o->local_rank == 1);
  CHECK(o->local_size == 2);
  CHECK(o->cross_rank == 1);
  CHECK(o->cross_size == 2);
  CHECK(o->master_addr == "10.0.0.5");
  CHECK(o->master_port == 29600);
  CHECK(o->launcher_hosts_store);
  CHECK(o->store_prefix == "/worker/attempt_2");
  CHECK(o->timeout == std::chrono::seconds(15));
}

TEST_CASE("a plain environment: local rank and size default to the global ones, rank 0 hosts the store") {
  const auto o = from({{"WORLD_SIZE", "3"}, {"RANK", "2"}, {"MASTER_PORT", "29501"}});
  REQUIRE(o.has_value());
  CHECK(o->local_rank == 2);
  CHECK(o->local_size == 3);
  CHECK(o->cross_size == 1);
  CHECK(o->master_addr == "127.0.0.1");
  CHECK_FALSE(o->launcher_hosts_store);
  CHECK(o->timeout == std::chrono::seconds(60));  // the default: at most a minute to notice a lost peer
}

TEST_CASE("an environment that describes no run is a ConfigError naming the variable") {
  auto message = [](const std::map<std::string, std::string>& env) {
    return error_of<dtl::ConfigError>([&] { from(env); });
  };
  CHECK(contains(message({{"WORLD_SIZE", "2"}}), "RANK is not"));
  CHECK(contains(message({{"WORLD_SIZE", "2"}, {"RANK", "2"}}), "RANK must be in [0, WORLD_SIZE)"));
  CHECK(contains(message({{"WORLD_SIZE", "two"}, {"RANK", "0"}}), "WORLD_SIZE='two' is not an integer"));
  CHECK(contains(message({{"WORLD_SIZE", "2"}, {"RANK", "0"}, {"MASTER_PORT", "70000"}}), "not a TCP port"));
  CHECK(contains(message({{"WORLD_SIZE", "2"}, {"RANK", "1"}, {"LOCAL_RANK", "3"}, {"LOCAL_WORLD_SIZE", "2"}}),
                 "LOCAL_RANK must be in"));
}
