// Tests for include/dtl/config/hparams.hpp and include/dtl/detail/did_you_mean.hpp.
#include <dtl/config/hparams.hpp>
#include <dtl/detail/did_you_mean.hpp>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "../support/errors.hpp"

namespace {

using dtl::detail::hparam_as;
using nlohmann::json;
using test_support::contains;
using test_support::error_of;

const json sample = {
    {"lr", 0.1},
    {"epochs", 3},
    {"big", 3000000000LL},
    {"whole", 4.0},
    {"name", "resnet"},
    {"quoted_number", "0.5"},
    {"quoted_bool", "true"},
    {"flag", true},
    {"sizes", {64, 32, 16}},
    {"optimizer", {{"lr", 0.01}, {"momentum", {{"beta", 0.9}}}}},
    {"model.depth", 18},
};

}  // namespace

TEST_SUITE("config/hparams") {
  TEST_CASE("edit distance counts a transposition as one edit and ignores case") {
    using dtl::detail::edit_distance;
    CHECK(edit_distance("", "") == 0);
    CHECK(edit_distance("abc", "") == 3);
    CHECK(edit_distance("--max-lenght", "--max-length") == 1);
    CHECK(edit_distance("kitten", "sitting") == 3);
    CHECK(edit_distance("Seed", "seed") == 0);
    const std::vector<std::string> names{"batches", "epochs", "records"};
    CHECK(dtl::detail::closest_match("epoch", names) == "epochs");
    CHECK_FALSE(dtl::detail::closest_match("xyz", names));
    CHECK_FALSE(dtl::detail::closest_match("epochs", names));  // exact is not a suggestion
    CHECK(dtl::detail::did_you_mean("recods", names) == " (did you mean 'records'?)");
    CHECK(dtl::detail::did_you_mean("lr", std::vector<std::string>{"a", "b"}).empty());
  }

  TEST_CASE("typed reads") {
    CHECK(hparam_as<double>(sample, "lr") == 0.1);
    CHECK(hparam_as<float>(sample, "lr") == 0.1f);
    CHECK(hparam_as<int>(sample, "epochs") == 3);
    CHECK(hparam_as<std::int64_t>(sample, "big") == 3000000000LL);
    CHECK(hparam_as<std::uint8_t>(sample, "epochs") == 3);
    CHECK(hparam_as<double>(sample, "epochs") == 3.0);  // an int reads as a double
    CHECK(hparam_as<int>(sample, "whole") == 4);        // an integral double reads as an int
    CHECK(hparam_as<std::string>(sample, "name") == "resnet");
    CHECK(hparam_as<bool>(sample, "flag"));
    CHECK(hparam_as<std::vector<int>>(sample, "sizes") == std::vector<int>{64, 32, 16});
    CHECK(hparam_as<std::vector<double>>(sample, "sizes") == std::vector<double>{64, 32, 16});
    CHECK(hparam_as<json>(sample, "optimizer")["lr"] == 0.01);
    CHECK(hparam_as<std::vector<std::vector<int>>>(json{{"grid", {{1, 2}, {3}}}}, "grid") ==
          std::vector<std::vector<int>>{{1, 2}, {3}});
    CHECK(hparam_as<std::vector<bool>>(json{{"mask", {true, false}}}, "mask") == std::vector<bool>{true, false});
  }

  TEST_CASE("dotted names reach into nested mappings; a literal dotted key wins") {
    CHECK(hparam_as<double>(sample, "optimizer.lr") == 0.01);
    CHECK(hparam_as<double>(sample, "optimizer.momentum.beta") == 0.9);
    CHECK(hparam_as<int>(sample, "model.depth") == 18);
  }

  TEST_CASE("a missing hyperparameter names the fix and the known names") {
    const std::string e = error_of<dtl::ConfigError>([] {
      (void)hparam_as<double>(json{{"a", 1}, {"b", 2}, {"c", 3}}, "lr");
    });
    CHECK(e ==
          "hyperparameter 'lr' is not set; pass --hparam lr=VALUE or add it to hyperparameters in the config "
          "(known: a, b, c)");
    const std::string typo = error_of<dtl::ConfigError>([] { (void)hparam_as<double>(sample, "optimizer.lrr"); });
    CHECK(contains(typo, "did you mean 'optimizer.lr'?"));
    CHECK(contains(typo, "optimizer.momentum.beta"));
    CHECK(contains(error_of<dtl::ConfigError>([] { (void)hparam_as<int>(json::object(), "x"); }),
                   "no hyperparameters are set"));
    CHECK(
        contains(error_of<dtl::ConfigError>([] { (void)hparam_as<int>(json(), "x"); }), "no hyperparameters are set"));
    CHECK(contains(error_of<dtl::ConfigError>([] { (void)hparam_as<int>(sample, "lr.x"); }), "'lr.x' is not set"));
  }

  TEST_CASE("a long list of known names is cut short") {
    json many = json::object();
    for (int i = 0; i < 30; ++i) many["h" + std::to_string(100 + i)] = i;
    const std::string e = error_of<dtl::ConfigError>([&] { (void)hparam_as<int>(many, "zzz"); });
    CHECK(contains(e, "10 more"));
    CHECK_FALSE(contains(e, "h129"));
  }

  TEST_CASE("wrong types name the value and the expected type") {
    CHECK(error_of<dtl::ConfigError>([] {
            (void)hparam_as<double>(json{{"lr", "abc"}}, "lr");
          }) == "hyperparameter 'lr' is a string (\"abc\"), expected a floating-point number");
    CHECK(contains(error_of<dtl::ConfigError>([] { (void)hparam_as<int>(sample, "lr"); }),
                   "is a floating-point number (0.1), expected an integer"));
    CHECK(contains(error_of<dtl::ConfigError>([] { (void)hparam_as<bool>(sample, "epochs"); }),
                   "expected true or false"));
    CHECK(contains(error_of<dtl::ConfigError>([] { (void)hparam_as<std::string>(sample, "epochs"); }),
                   "is an integer (3), expected a string"));
    CHECK(contains(error_of<dtl::ConfigError>([] { (void)hparam_as<std::vector<int>>(sample, "epochs"); }),
                   "expected a list"));
    CHECK(contains(error_of<dtl::ConfigError>([] {
                     (void)hparam_as<std::vector<int>>(json{{"v", {1, "x"}}}, "v");
                   }),
                   "hyperparameter 'v[1]' is a string"));
    CHECK(contains(error_of<dtl::ConfigError>([] { (void)hparam_as<int>(sample, "optimizer"); }), "is a mapping"));
  }

  TEST_CASE("a quoted number or boolean gets an unquoting hint") {
    CHECK(contains(error_of<dtl::ConfigError>([] { (void)hparam_as<double>(sample, "quoted_number"); }),
                   "write it without quotes (--hparam quoted_number=0.5)"));
    CHECK(contains(error_of<dtl::ConfigError>([] { (void)hparam_as<bool>(sample, "quoted_bool"); }), "without quotes"));
    CHECK_FALSE(
        contains(error_of<dtl::ConfigError>([] { (void)hparam_as<double>(sample, "name"); }), "without quotes"));
  }

  TEST_CASE("integers out of range are errors, not wrap-arounds") {
    CHECK(contains(error_of<dtl::ConfigError>([] { (void)hparam_as<std::int32_t>(sample, "big"); }), "out of range"));
    CHECK(contains(error_of<dtl::ConfigError>([] {
                     (void)hparam_as<std::uint8_t>(json{{"n", 300}}, "n");
                   }),
                   "[0, 255]"));
    CHECK(contains(error_of<dtl::ConfigError>([] {
                     (void)hparam_as<unsigned>(json{{"n", -1}}, "n");
                   }),
                   "out of range"));
    CHECK(contains(error_of<dtl::ConfigError>([] { (void)hparam_as<int>(json{{"n", 1e30}}, "n"); }), "out of range"));
    CHECK(hparam_as<std::uint64_t>(json{{"n", 18446744073709551615ull}}, "n") == 18446744073709551615ull);
  }

  TEST_CASE("merge_hparams merges mappings deeply and lets the override win") {
    const json base = {{"lr", 1}, {"opt", {{"lr", 1}, {"m", 0.9}}}, {"keep", "x"}};
    const json over = {{"lr", 2}, {"opt", {{"lr", 3}}}, {"new", true}};
    const json merged = dtl::detail::merge_hparams(base, over);
    CHECK(merged == json{{"lr", 2}, {"opt", {{"lr", 3}, {"m", 0.9}}}, {"keep", "x"}, {"new", true}});
    CHECK(dtl::detail::merge_hparams(base, json()) == base);  // no layer
    CHECK(dtl::detail::merge_hparams(json(), over) == over);
    CHECK(dtl::detail::merge_hparams(base, json{{"opt", 5}})["opt"] == 5);  // a scalar replaces a mapping
    CHECK(dtl::detail::merge_hparams(base, json{{"opt", nullptr}})["opt"].is_null());
  }

  TEST_CASE("apply_overrides sets dotted names, creating mappings") {
    json hp = {{"opt", {{"lr", 1}}}, {"a.b", 1}};
    dtl::detail::apply_overrides(hp,
                                 {{"opt.lr", 0.5}, {"+opt.m", 0.9}, {"+x.y.z", "deep"}, {"a.b", 2}, {"+top", nullptr}});
    CHECK(hp["opt"] == json{{"lr", 0.5}, {"m", 0.9}});
    CHECK(hp["x"]["y"]["z"] == "deep");
    CHECK(hp["a.b"] == 2);  // the literal key, not a nested one
    CHECK_FALSE(hp.contains("a"));
    CHECK(hp["top"].is_null());
    json empty;
    dtl::detail::apply_overrides(empty, {{"+lr", 1}});
    CHECK(empty == json{{"lr", 1}});
  }

  TEST_CASE("apply_overrides: a name nothing defines is an error with a did-you-mean, not an ignored value") {
    json hp = {{"learning_rate", 0.1}, {"optimizer", {{"momentum", 0.9}}}};
    std::string e = error_of<dtl::ConfigError>([&] { dtl::detail::apply_overrides(hp, {{"learnin_rate", 0.5}}); });
    CHECK(contains(e, "--hparam learnin_rate=...: no hyperparameter 'learnin_rate' in the config, the hparams file "
                      "or the code's defaults (did you mean 'learning_rate'?)"));
    CHECK(contains(e, "to add a new one on purpose, write --hparam +learnin_rate=..."));
    e = error_of<dtl::ConfigError>([&] { dtl::detail::apply_overrides(hp, {{"optimizer.momentun", 0.5}}); });
    CHECK(contains(e, "(did you mean 'optimizer.momentum'?)"));
    e = error_of<dtl::ConfigError>([&] { dtl::detail::apply_overrides(hp, {{"optimiser.momentum", 0.5}}); });
    CHECK(contains(e, "no hyperparameter 'optimiser.momentum'"));
    CHECK(contains(e, "(did you mean 'optimizer.momentum'?)"));
    CHECK(contains(error_of<dtl::ConfigError>([&] {
                     dtl::detail::apply_overrides(hp, {{"batch", 8}});
                   }),
                   "no hyperparameter 'batch'"));
    CHECK(hp == json{{"learning_rate", 0.1}, {"optimizer", {{"momentum", 0.9}}}});  // nothing half-applied
    // On purpose: + adds it; an existing name takes the + too.
    dtl::detail::apply_overrides(hp, {{"+learnin_rate", 0.5}, {"+optimizer.nesterov", true}, {"+learning_rate", 0.2}});
    CHECK(hp == json{{"learning_rate", 0.2}, {"learnin_rate", 0.5}, {"optimizer", {{"momentum", 0.9}, {"nesterov", true}}}});
  }

  TEST_CASE("apply_overrides refuses to reach through a value") {
    json hp = {{"lr", 0.1}};
    const std::string e = error_of<dtl::ConfigError>([&] { dtl::detail::apply_overrides(hp, {{"lr.x", 1}}); });
    CHECK(contains(e, "--hparam lr.x"));
    CHECK(contains(e, "'lr' is a floating-point number"));
    CHECK(contains(error_of<dtl::ConfigError>([&] {
                     dtl::detail::apply_overrides(hp, {{"a..b", 1}});
                   }),
                   "between its dots"));
    json list = json::array();
    CHECK(contains(error_of<dtl::ConfigError>([&] {
                     dtl::detail::apply_overrides(list, {{"a", 1}});
                   }),
                   "not a mapping"));
  }

  TEST_CASE("Determined's hyperparameter specs resolve for a local run") {
    const json section = {
        {"plain", 0.5},
        {"list", {1, 2}},
        {"c", {{"type", "const"}, {"val", 64}}},
        {"c_map", {{"type", "const"}, {"val", {{"type", "resnet"}}}}},
        {"i", {{"type", "int"}, {"minval", 1}, {"maxval", 4}}},
        {"i_neg", {{"type", "int"}, {"minval", -3}, {"maxval", 0}}},
        {"d", {{"type", "double"}, {"minval", 0.2}, {"maxval", 0.4}}},
        {"l", {{"type", "log"}, {"base", 10}, {"minval", -4}, {"maxval", -2}}},
        {"cat", {{"type", "categorical"}, {"vals", {"adam", "sgd"}}}},
        {"group", {{"lr", {{"type", "const"}, {"val", 0.01}}}, {"depth", 3}}},
    };
    const json hp = dtl::detail::resolve_hyperparameters(section, "exp.yaml");
    CHECK(hp["plain"] == 0.5);
    CHECK(hp["list"] == json{1, 2});
    CHECK(hp["c"] == 64);
    CHECK(hp["c_map"] == json{{"type", "resnet"}});
    CHECK(hp["i"] == 2);  // (1 + 4) / 2 rounded down
    CHECK(hp["i"].is_number_integer());
    CHECK(hp["i_neg"] == -2);  // floor(-1.5)
    CHECK(hp["d"].get<double>() == doctest::Approx(0.3));
    CHECK(hp["l"].get<double>() == doctest::Approx(1e-3));
    CHECK(hp["cat"] == "adam");
    CHECK(hp["group"] == json{{"lr", 0.01}, {"depth", 3}});
    CHECK(dtl::detail::resolve_hyperparameters(json(), "x") == json::object());
  }

  TEST_CASE("malformed hyperparameter specs name the file and key path") {
    const auto resolve_error = [](const json& section) {
      return error_of<dtl::ConfigError>([&] { (void)dtl::detail::resolve_hyperparameters(section, "exp.yaml"); });
    };
    CHECK(resolve_error(json{{"lr", {{"type", "float"}, {"minval", 0}, {"maxval", 1}}}}) ==
          "exp.yaml: hyperparameters.lr.type: unknown hyperparameter type 'float'; expected const, int, double, log "
          "or categorical (for a mapping value with a 'type' key, write {type: const, val: {...}})");
    CHECK(contains(resolve_error(json{{"lr", {{"type", "lgo"}}}}), "did you mean 'log'?"));
    CHECK(contains(resolve_error(json{{"lr", {{"type", 3}}}}), "hyperparameters.lr.type: expected one of"));
    CHECK(contains(resolve_error(json{{"lr", {{"type", "const"}}}}),
                   "hyperparameters.lr: a const hyperparameter needs 'val'"));
    CHECK(
        contains(resolve_error(json{{"n", {{"type", "int"}, {"maxval", 3}}}}), "hyperparameters.n: missing 'minval'"));
    CHECK(contains(resolve_error(json{{"n", {{"type", "int"}, {"minval", 0.5}, {"maxval", 3}}}}),
                   "hyperparameters.n.minval: expected an integer, got a floating-point number (0.5)"));
    CHECK(contains(resolve_error(json{{"n", {{"type", "int"}, {"minval", 5}, {"maxval", 3}}}}),
                   "minval (5) is greater than maxval (3)"));
    CHECK(contains(resolve_error(json{{"d", {{"type", "double"}, {"minval", "a"}, {"maxval", 1}}}}),
                   "hyperparameters.d.minval: expected a number, got a string (\"a\")"));
    CHECK(contains(resolve_error(json{{"l", {{"type", "log"}, {"minval", 1}, {"maxval", 2}}}}), "missing 'base'"));
    CHECK(contains(resolve_error(json{{"l", {{"type", "log"}, {"base", -2}, {"minval", 1}, {"maxval", 2}}}}),
                   "hyperparameters.l.base: expected a positive number"));
    CHECK(contains(resolve_error(json{{"c", {{"type", "categorical"}, {"vals", json::array()}}}}),
                   "hyperparameters.c.vals: expected a non-empty list, got an empty list"));
    CHECK(contains(resolve_error(json{{"c", {{"type", "categorical"}}}}), "needs 'vals'"));
    CHECK(contains(resolve_error(json{{"g", {{"inner", {{"type", "nope"}}}}}}), "hyperparameters.g.inner.type"));
    CHECK(contains(resolve_error(json{1, 2}), "exp.yaml: hyperparameters: expected a mapping"));
  }
}

TEST_CASE("search spaces outside a cluster: one line each says which value it takes, unless something chose another") {
  const auto section = nlohmann::json::parse(R"({
    "lr": {"type": "double", "minval": 0.0001, "maxval": 1.0},
    "n": {"type": "int", "minval": 1, "maxval": 4},
    "scale": {"type": "log", "base": 10, "minval": -4, "maxval": -2},
    "opt": {"kind": {"type": "categorical", "vals": ["sgd", "adam"]}},
    "fixed": {"type": "const", "val": 3},
    "plain": 2})");
  auto hp = dtl::detail::resolve_hyperparameters(section, "adaptive.yaml");
  auto notes = dtl::detail::search_space_notes(section, hp, "adaptive.yaml");
  REQUIRE(notes.size() == 4);
  CHECK(notes[0] ==
        "hyperparameter 'lr' is a search space in adaptive.yaml (double from 0.0001 to 1.0): with no searcher it "
        "takes 0.50005, the middle of its range; pass --hparam lr=VALUE to choose one");
  CHECK(notes[1] ==
        "hyperparameter 'n' is a search space in adaptive.yaml (int from 1 to 4): with no searcher it takes 2, the "
        "middle of its range, rounded down; pass --hparam n=VALUE to choose one");
  CHECK(notes[2] ==
        "hyperparameter 'opt.kind' is a search space in adaptive.yaml (categorical [\"sgd\",\"adam\"]): with no "
        "searcher it takes \"sgd\", the first of its values; pass --hparam opt.kind=VALUE to choose one");
  CHECK(notes[3].find("hyperparameter 'scale' is a search space in adaptive.yaml (log, base 10, exponents from -4 "
                      "to -2): with no searcher it takes 0.001") == 0);
  // A value chosen elsewhere (--hparam, an hparams file) is not noted.
  hp["lr"] = 0.01;
  hp["opt"]["kind"] = "adam";
  notes = dtl::detail::search_space_notes(section, hp, "adaptive.yaml");
  REQUIRE(notes.size() == 2);
  CHECK(notes[0].find("'n'") != std::string::npos);
  CHECK(notes[1].find("'scale'") != std::string::npos);
}
