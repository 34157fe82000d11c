// Tests for include/dtl/config/experiment_config.hpp.
#include <dtl/config/experiment_config.hpp>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include <doctest/doctest.h>

#include "../support/errors.hpp"

namespace {

using nlohmann::json;
using Unit = dtl::LengthSpec::Unit;
using test_support::contains;
using test_support::error_of;

std::string parse_error(const std::string& yaml) {
  return error_of<dtl::ConfigError>([&] { (void)dtl::parse_experiment_config(yaml, "experiment.yaml"); });
}

json yaml(const std::string& text) { return dtl::detail::parse_yaml_text(text, "test.yaml"); }

// A scratch directory removed at the end of the test.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    std::random_device rd;
    path = std::filesystem::temp_directory_path() / ("dtl_config_test_" + std::to_string(rd()) + std::to_string(rd()));
    std::filesystem::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::filesystem::path write(const std::string& name, const std::string& text) const {
    const auto file = path / name;
    std::ofstream(file, std::ios::binary) << text;
    return file;
  }
};

// examples/tutorials/mnist_pytorch/const.yaml, in Determined's own layout.
constexpr const char* mnist_const_yaml = R"yaml(
name: mnist_pytorch_const
data:
  url: https://s3-us-west-2.amazonaws.com/determined-ai-test-data/pytorch_mnist.tar.gz
hyperparameters:
  learning_rate: 1.0
  global_batch_size: 64
  n_filters1: 32
  n_filters2: 64
  dropout1: 0.25
  dropout2: 0.5
searcher:
  name: single
  metric: validation_loss
  max_length:
    batches: 937 # 60,000 training images with batch size 64
  smaller_is_better: true
entrypoint: model_def:MNistTrial
)yaml";

// Most of the rest of the format: search spaces, storage, periods, resources, profiling.
constexpr const char* full_yaml = R"yaml(
name: mnist_pytorch_adaptive_search
description: "adaptive search over the MNIST CNN"
workspace: research
project: mnist
labels: [cnn, "mnist"]
hyperparameters:
  global_batch_size: 64
  learning_rate:
    type: log
    base: 10
    minval: -4.0
    maxval: -2.0
  n_filters1:
    type: int
    minval: 8
    maxval: 64
  dropout1:
    type: double
    minval: .2
    maxval: .8
  optimizer:
    type: categorical
    vals: [adadelta, sgd]
  arch:
    type: const
    val: cnn
  schedule:
    warmup: {type: const, val: 100}
    decay: 0.7
searcher:
  name: adaptive_asha
  metric: validation_accuracy
  smaller_is_better: false
  max_trials: 16
  max_length:
    epochs: 3
  mode: aggressive
min_validation_period:
  batches: 500
min_checkpoint_period:
  epochs: 1
records_per_epoch: 60000
scheduling_unit: 100
checkpoint_policy: best
checkpoint_storage:
  type: shared_fs
  host_path: /tmp
  storage_path: determined-checkpoint
  save_experiment_best: 0
  save_trial_best: 1
  save_trial_latest: 1
max_restarts: 5
reproducibility:
  experiment_seed: 1234
resources:
  slots_per_trial: 2
  resource_pool: gpu-pool
environment:
  image: determinedai/environments:cuda-11.3-pytorch-1.12-gpu-0.21.2
  environment_variables:
    - NCCL_DEBUG=INFO
bind_mounts:
  - host_path: /data
    container_path: /data
    read_only: true
profiling:
  enabled: true
  begin_on_batch: 10
  end_after_batch: 20
optimizations:
  aggregation_frequency: 4
  average_aggregated_gradients: true
perform_initial_validation: false
entrypoint: python3 -m determined.launch.torch_distributed python3 train.py
)yaml";

}  // namespace

TEST_SUITE("config/experiment_config") {
  TEST_CASE("YAML scalars become typed JSON") {
    const json v = yaml(R"yaml(
int: 42
neg: -7
plus: +3
hex: 0x1F
oct: 0o17
float: 0.5
exp: 1e-3
dot: .5
trailing: 5.
big_exp: 1E+3
inf: .inf
ninf: -.Inf
nan: .nan
t: true
f: False
yes_is_text: yes
n1: null
n2: ~
n3:
quoted_int: "42"
single_quoted: 'true'
quoted_null: "null"
text: hello world
version: 1.2.3
time: 12:30
huge: 18446744073709551615
huger: 123456789012345678901234567890
block: |
  line one
  line two
tagged_str: !!str 12
tagged_float: !!float 3
list: [1, two, 3.0]
nested: {a: {b: [true, ~]}}
)yaml");
    CHECK(v["int"] == 42);
    CHECK(v["int"].is_number_integer());
    CHECK(v["neg"] == -7);
    CHECK(v["plus"] == 3);
    CHECK(v["hex"] == 31);
    CHECK(v["oct"] == 15);
    CHECK(v["float"].is_number_float());
    CHECK(v["float"] == 0.5);
    CHECK(v["exp"].is_number_float());  // a float under YAML 1.2 (PyYAML would say string)
    CHECK(v["exp"] == 1e-3);
    CHECK(v["dot"] == 0.5);
    CHECK(v["trailing"] == 5.0);
    CHECK(v["trailing"].is_number_float());
    CHECK(v["big_exp"] == 1000.0);
    CHECK(std::isinf(v["inf"].get<double>()));
    CHECK(v["ninf"].get<double>() < 0);
    CHECK(std::isnan(v["nan"].get<double>()));
    CHECK(v["t"] == true);
    CHECK(v["f"] == false);
    CHECK(v["yes_is_text"] == "yes");
    CHECK(v["n1"].is_null());
    CHECK(v["n2"].is_null());
    CHECK(v["n3"].is_null());
    CHECK(v["quoted_int"] == "42");
    CHECK(v["single_quoted"] == "true");
    CHECK(v["quoted_null"] == "null");
    CHECK(v["text"] == "hello world");
    CHECK(v["version"] == "1.2.3");
    CHECK(v["time"] == "12:30");
    CHECK(v["huge"].is_number_unsigned());
    CHECK(v["huge"] == 18446744073709551615ull);
    CHECK(v["huger"].is_number_float());
    CHECK(v["block"] == "line one\nline two\n");
    CHECK(v["tagged_str"] == "12");
    CHECK(v["tagged_float"].is_number_float());
    CHECK(v["list"] == json{1, "two", 3.0});
    CHECK(v["nested"] == json{{"a", {{"b", {true, nullptr}}}}});
  }

  TEST_CASE("JSON text is YAML") {
    const json v = yaml(R"({"lr": 0.1, "layers": [64, 32], "name": "x", "on": true, "none": null})");
    CHECK(v == json{{"lr", 0.1}, {"layers", {64, 32}}, {"name", "x"}, {"on", true}, {"none", nullptr}});
  }

  TEST_CASE("YAML syntax errors carry file:line:col") {
    const std::string e = parse_error("name: x\nsearcher:\n  metric: [unclosed\n");
    CHECK(contains(e, "experiment.yaml:"));
    CHECK(contains(e, "fix the YAML syntax"));
    const std::string tabs = parse_error("searcher:\n  metric: a\n bad: b\n");
    CHECK(contains(tabs, "experiment.yaml:3:"));
    const std::string dup = parse_error("name: a\nname: b\n");
    CHECK(contains(dup, "experiment.yaml:2:1: duplicate key 'name'"));
    CHECK(contains(error_of<dtl::ConfigError>([] { (void)yaml("!!int abc"); }), "is tagged"));
  }

  TEST_CASE("hostile YAML is refused in bounded time and memory: alias bombs, deep nesting") {
    // "Billion laughs": nine levels of nine aliases each would expand to 9^9 values.
    std::string bomb = "a0: &a0 [x, x, x, x, x, x, x, x, x]\n";
    for (int i = 1; i <= 9; ++i) {
      bomb += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
      for (int j = 0; j < 9; ++j) bomb += std::string(j ? ", " : "") + "*a" + std::to_string(i - 1);
      bomb += "]\n";
    }
    const auto t0 = std::chrono::steady_clock::now();
    const std::string e = parse_error(bomb);
    CHECK(contains(e, "expands to more than 1000000 values"));
    CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(20));
    // Thousands of nested flow sequences: yaml-cpp's own depth guard, or ours, refuses it.
    const std::string deep = std::string(5000, '[') + std::string(5000, ']');
    const std::string d = parse_error("x: " + deep + "\n");
    CHECK((contains(d, "nest") || contains(d, "depth") || contains(d, "recursion")));
  }

  TEST_CASE("Determined's mnist_pytorch const.yaml") {
    const auto cfg = dtl::parse_experiment_config(mnist_const_yaml, "const.yaml");
    CHECK(cfg.source == "const.yaml");
    CHECK(cfg.raw["name"] == "mnist_pytorch_const");
    CHECK(cfg.raw["entrypoint"] == "model_def:MNistTrial");
    const json hp = cfg.hyperparameters();
    CHECK(hp == json{{"learning_rate", 1.0},
                     {"global_batch_size", 64},
                     {"n_filters1", 32},
                     {"n_filters2", 64},
                     {"dropout1", 0.25},
                     {"dropout2", 0.5}});
    CHECK(hp["global_batch_size"].is_number_integer());
    CHECK(hp["learning_rate"].is_number_float());
    CHECK(cfg.max_length() == dtl::LengthSpec{Unit::batches, 937});
    CHECK(cfg.searcher_metric() == "validation_loss");
    CHECK(cfg.smaller_is_better());
    CHECK_FALSE(cfg.min_validation_period());
    CHECK_FALSE(cfg.min_checkpoint_period());
    CHECK_FALSE(cfg.records_per_epoch());
    CHECK_FALSE(cfg.checkpoint_policy());
    CHECK_FALSE(cfg.experiment_seed());
    CHECK(cfg.aggregation_frequency() == 1);
    CHECK(cfg.slots_per_trial() == 1);
  }

  TEST_CASE("a full adaptive-search config") {
    const auto cfg = dtl::parse_experiment_config(full_yaml, "adaptive.yaml");
    const json hp = cfg.hyperparameters();
    CHECK(hp["global_batch_size"] == 64);
    CHECK(hp["learning_rate"].get<double>() == doctest::Approx(1e-3));
    CHECK(hp["n_filters1"] == 36);
    CHECK(hp["dropout1"].get<double>() == doctest::Approx(0.5));
    CHECK(hp["optimizer"] == "adadelta");
    CHECK(hp["arch"] == "cnn");
    CHECK(hp["schedule"] == json{{"warmup", 100}, {"decay", 0.7}});
    CHECK(cfg.max_length() == dtl::LengthSpec{Unit::epochs, 3});
    CHECK(cfg.min_validation_period() == dtl::LengthSpec{Unit::batches, 500});
    CHECK(cfg.min_checkpoint_period() == dtl::LengthSpec{Unit::epochs, 1});
    CHECK(cfg.records_per_epoch() == 60000);
    CHECK(cfg.searcher_metric() == "validation_accuracy");
    CHECK_FALSE(cfg.smaller_is_better());
    CHECK(cfg.checkpoint_policy() == "best");
    CHECK(cfg.experiment_seed() == 1234u);
    CHECK(cfg.aggregation_frequency() == 4);
    CHECK(cfg.slots_per_trial() == 2);
    CHECK(cfg.raw["searcher"]["mode"] == "aggressive");  // searcher extras pass through
    CHECK(cfg.raw["bind_mounts"][0]["read_only"] == true);
  }

  TEST_CASE("the same config as JSON") {
    const auto cfg = dtl::parse_experiment_config(
        R"({"searcher": {"metric": "loss", "max_length": {"records": 6400}},
            "hyperparameters": {"lr": {"type": "const", "val": 0.1}}})",
        "exp.json");
    CHECK(cfg.max_length() == dtl::LengthSpec{Unit::records, 6400});
    CHECK(contains(
        error_of<dtl::ConfigError>([] { (void)dtl::parse_experiment_config("{\"searcher\": {,}}", "exp.json"); }),
        "exp.json:1:15: syntax error"));
    CHECK(cfg.hyperparameters() == json{{"lr", 0.1}});
  }

  TEST_CASE("max_length forms") {
    CHECK(dtl::parse_experiment_config("searcher: {max_length: 100}", "x").max_length() ==
          dtl::LengthSpec{Unit::batches, 100});
    CHECK(dtl::parse_experiment_config("searcher: {max_length: {batches: 1e3}}", "x").max_length() ==
          dtl::LengthSpec{Unit::batches, 1000});
    CHECK_FALSE(dtl::parse_experiment_config("searcher:\n", "x").max_length());
    CHECK_FALSE(dtl::parse_experiment_config("searcher: {max_length: ~}", "x").max_length());
    CHECK(dtl::parse_experiment_config("min_validation_period: {batches: 0}", "x").min_validation_period() ==
          dtl::LengthSpec{Unit::batches, 0});
  }

  TEST_CASE("malformed lengths name the file and key path") {
    CHECK(parse_error("searcher:\n  max_length: ten\n") ==
          "experiment.yaml: searcher.max_length: expected {batches: N} or {epochs: N} or {records: N} or a number "
          "of batches, got a string (\"ten\")");
    const std::string two = parse_error("searcher: {max_length: {batches: 1, epochs: 2}}");
    CHECK(contains(two, "experiment.yaml: searcher.max_length: give exactly one unit, got 'batches', 'epochs'"));
    const std::string neg = parse_error("searcher: {max_length: {epochs: -1}}");
    CHECK(
        contains(neg, "experiment.yaml: searcher.max_length.epochs: expected a positive integer, got an integer (-1)"));
    CHECK(contains(parse_error("searcher: {max_length: 0}"),
                   "searcher.max_length: expected a positive integer of batches"));
    CHECK(contains(parse_error("searcher: {max_length: {epoch: 1}}"), "unknown unit 'epoch' (did you mean 'epochs'?)"));
    CHECK(contains(parse_error("searcher: {max_length: {}}"), "got an empty mapping"));
    CHECK(contains(parse_error("searcher: {max_length: {epochs: 1.5}}"),
                   "searcher.max_length.epochs: expected a positive integer"));
    CHECK(contains(parse_error("min_validation_period: 100"),
                   "experiment.yaml: min_validation_period: expected {batches: N} or {epochs: N} or {records: N}, got "
                   "an integer (100)"));
    CHECK(contains(parse_error("min_checkpoint_period: {epochs: -2}"),
                   "min_checkpoint_period.epochs: expected a non-negative integer"));
  }

  TEST_CASE("unknown top-level keys are errors with a suggestion") {
    CHECK(parse_error("seracher: {metric: x}") ==
          "experiment.yaml: unknown top-level key 'seracher' (did you mean 'searcher'?); fix its spelling or remove "
          "it (see Determined's experiment-config reference)");
    CHECK(contains(parse_error("hyperparameter: {lr: 1}"), "did you mean 'hyperparameters'?"));
    CHECK(contains(parse_error("totally_new: 1"), "unknown top-level key 'totally_new';"));
    // Keys only Determined's cluster reads are accepted as they are.
    CHECK_NOTHROW((void)dtl::parse_experiment_config("debug: false\nlog_policies: []\nmax_restarts: 0", "x"));
    // Open sections take any keys.
    CHECK_NOTHROW((void)dtl::parse_experiment_config(
        "data: {anything: [1, 2]}\nresources: {resource_pool: a, shm_size: 1}\nenvironment: {pod_spec: {}}\n"
        "searcher: {name: grid, max_concurrent_trials: 4, source_trial_id: 3}\n"
        "optimizations: {mixed_precision: O0}\nprofiling: {sync_timings: true}",
        "x"));
  }

  TEST_CASE("wrong value types name the key path") {
    CHECK(contains(parse_error("searcher: 3"), "experiment.yaml: searcher: expected a mapping, got an integer (3)"));
    CHECK(contains(parse_error("searcher: {metric: 3}"),
                   "experiment.yaml: searcher.metric: expected a string, got an integer (3)"));
    CHECK(contains(parse_error("searcher: {smaller_is_better: yes}"),
                   "searcher.smaller_is_better: expected true or false, got a string (\"yes\")"));
    CHECK(contains(parse_error("searcher: {max_trials: 0}"), "searcher.max_trials: expected a positive integer"));
    CHECK(contains(parse_error("name: [a]"), "experiment.yaml: name: expected a string, got a list"));
    CHECK(contains(parse_error("records_per_epoch: 0"),
                   "records_per_epoch: expected a positive integer, got an integer (0)"));
    CHECK(contains(parse_error("scheduling_unit: a"), "scheduling_unit: expected a positive integer"));
    CHECK(contains(parse_error("max_restarts: -1"), "max_restarts: expected a non-negative integer"));
    CHECK(contains(parse_error("checkpoint_policy: bset"),
                   "checkpoint_policy: expected \"best\", \"all\" or \"none\", got 'bset' (did you mean 'best'?)"));
    CHECK(contains(parse_error("checkpoint_policy: 1"), "checkpoint_policy: expected a string"));
    CHECK(contains(parse_error("checkpoint_storage: {type: shared_fs, host_path: 3}"),
                   "checkpoint_storage.host_path: expected a string"));
    CHECK(contains(parse_error("checkpoint_storage: {save_trial_best: -1}"),
                   "checkpoint_storage.save_trial_best: expected a non-negative integer"));
    CHECK(contains(parse_error("reproducibility: {experiment_seed: -5}"),
                   "reproducibility.experiment_seed: expected a non-negative integer"));
    CHECK(contains(parse_error("reproducibility: {experiment_seed: abc}"), "reproducibility.experiment_seed"));
    // Every seed numpy's RandomState takes (as --seed), and a clear word beyond it.
    CHECK(dtl::parse_experiment_config("reproducibility: {experiment_seed: 4294967295}", "e.yaml")
              .experiment_seed() == 4294967295u);
    for (const char* big : {"4294967296", "18446744073709551615", "18446744073709551616"})
      CHECK(contains(parse_error(std::string("reproducibility: {experiment_seed: ") + big + "}"),
                     "reproducibility.experiment_seed: expected a seed from 0 to 4294967295 (2^32-1, numpy's "
                     "RandomState range, which the samplers use), got a larger integer"));
    CHECK(contains(parse_error("resources: {slots_per_trial: 0}"),
                   "resources.slots_per_trial: expected a positive integer"));
    CHECK(contains(parse_error("resources: [1]"), "resources: expected a mapping"));
    CHECK(contains(parse_error("optimizations: {aggregation_frequency: 0}"),
                   "optimizations.aggregation_frequency: expected a positive integer"));
    CHECK(contains(parse_error("optimizations: {average_aggregated_gradients: 1}"),
                   "optimizations.average_aggregated_gradients: expected true or false"));
    CHECK(contains(parse_error("profiling: {enabled: on}"), "profiling.enabled: expected true or false"));
    CHECK(contains(parse_error("profiling: {begin_on_batch: -1}"), "profiling.begin_on_batch"));
    CHECK(contains(parse_error("perform_initial_validation: 1"), "perform_initial_validation: expected true or false"));
    CHECK(contains(parse_error("entrypoint: {a: 1}"), "entrypoint: expected a command string or a list of strings"));
    CHECK_NOTHROW((void)dtl::parse_experiment_config("entrypoint: [python3, train.py]", "x"));
    CHECK(contains(parse_error("labels: a"), "labels: expected a list of strings"));
    CHECK(contains(parse_error("labels: [a, 1]"), "labels[1]: expected a string"));
    CHECK(contains(parse_error("bind_mounts: {a: 1}"), "bind_mounts: expected a list"));
    CHECK(contains(parse_error("hyperparameters: [1]"), "experiment.yaml: hyperparameters: expected a mapping"));
    CHECK(contains(parse_error("hyperparameters: {lr: {type: int, minval: 1}}"),
                   "experiment.yaml: hyperparameters.lr: missing 'maxval'"));
  }

  TEST_CASE("the document must be a mapping") {
    CHECK(contains(parse_error(""), "experiment.yaml: the document is empty"));
    CHECK(contains(parse_error("# only a comment\n"), "the document is empty"));
    CHECK(contains(parse_error("- a\n- b\n"), "experiment.yaml: expected a mapping at the top level"));
    CHECK(contains(parse_error("just text"), "got a string"));
  }

  TEST_CASE("accessors check a raw value edited after parsing") {
    auto cfg = dtl::parse_experiment_config("searcher: {metric: loss}", "exp.yaml");
    cfg.raw["searcher"]["max_length"] = "long";
    CHECK(contains(error_of<dtl::ConfigError>([&] { (void)cfg.max_length(); }), "exp.yaml: searcher.max_length"));
    dtl::ExperimentConfig empty;
    CHECK(empty.hyperparameters() == json::object());
    CHECK(empty.searcher_metric().empty());
    CHECK(empty.smaller_is_better());
  }

  TEST_CASE("load_experiment_config reads files and names bad paths") {
    TempDir dir;
    const auto file = dir.write("const.yaml", mnist_const_yaml);
    const auto cfg = dtl::load_experiment_config(file);
    CHECK(cfg.source == file.string());
    CHECK(cfg.max_length() == dtl::LengthSpec{Unit::batches, 937});

    const auto missing = dir.path / "nope.yaml";
    const std::string e = error_of<dtl::ConfigError>([&] { (void)dtl::load_experiment_config(missing); });
    CHECK(contains(e, "cannot read experiment config '" + missing.string() + "': no such file"));
    CHECK(contains(e, "--config"));
    CHECK(contains(error_of<dtl::ConfigError>([&] { (void)dtl::load_experiment_config(dir.path); }), "is a directory"));

    const auto bad = dir.write("bad.yaml", "searcher:\n  max_length: {epochs: 1, batches: 2}\n");
    CHECK(contains(error_of<dtl::ConfigError>([&] { (void)dtl::load_experiment_config(bad); }),
                   bad.string() + ": searcher.max_length"));
    const auto broken = dir.write("broken.yaml", "a: [1,\n");
    CHECK(contains(error_of<dtl::ConfigError>([&] { (void)dtl::load_experiment_config(broken); }),
                   broken.string() + ":"));
  }

  TEST_CASE("load_hparams_file reads JSON or YAML mappings") {
    TempDir dir;
    const auto as_json =
        dir.write("hp.json", "{\n\t\"lr\": 0.1,\n\t\"layers\": [64, 32],\n\t\"opt\": {\"type\": \"sgd\"}\n}\n");
    CHECK(dtl::load_hparams_file(as_json) == json{{"lr", 0.1}, {"layers", {64, 32}}, {"opt", {{"type", "sgd"}}}});
    const auto as_yaml = dir.write("hp.yaml", "lr: 1e-2\nname: resnet\nnested:\n  depth: 3\n");
    CHECK(dtl::load_hparams_file(as_yaml) == json{{"lr", 0.01}, {"name", "resnet"}, {"nested", {{"depth", 3}}}});

    CHECK(contains(error_of<dtl::ConfigError>([&] { (void)dtl::load_hparams_file(dir.write("list.json", "[1, 2]")); }),
                   "list.json: expected a mapping at the top level"));
    CHECK(contains(error_of<dtl::ConfigError>([&] { (void)dtl::load_hparams_file(dir.write("list.yaml", "- 1\n")); }),
                   "list.yaml: expected a mapping at the top level"));
    CHECK(contains(error_of<dtl::ConfigError>([&] { (void)dtl::load_hparams_file(dir.write("empty.yaml", "")); }),
                   "the document is empty"));
    const auto missing = dir.path / "missing.json";
    const std::string e = error_of<dtl::ConfigError>([&] { (void)dtl::load_hparams_file(missing); });
    CHECK(contains(e, "cannot read hyperparameters file '" + missing.string() + "'"));
    CHECK(contains(e, "--hparams"));
    // YAML would read this as {lr: null}; a .json file is held to JSON.
    const std::string bad =
        error_of<dtl::ConfigError>([&] { (void)dtl::load_hparams_file(dir.write("bad.json", "{\n  \"lr\": }")); });
    CHECK(contains(bad, "bad.json:2:9: syntax error"));
    CHECK(contains(bad, "fix the JSON syntax"));
    CHECK(contains(error_of<dtl::ConfigError>([&] { (void)dtl::load_hparams_file(dir.write("empty.json", "")); }),
                   "empty.json:1:1:"));
    // JSON in a YAML-named file still parses (as YAML).
    CHECK(dtl::load_hparams_file(dir.write("j.yaml", "{\"lr\": 0.5, \"n\": [1]}")) == json{{"lr", 0.5}, {"n", {1}}});
  }
}
