#include "../prelude.hpp"

TEST_CASE("data_length recurses through nested batches (Determined's does not)") {
  auto t = torch::zeros({4, 3});
  CHECK(dtl::data_length(t) == 4);
  CHECK(dtl::data_length(std::tuple{t, torch::zeros({4})}) == 4);
  std::map<std::string, std::vector<torch::Tensor>> nested{{"x", {torch::zeros({5, 2})}}};
  CHECK(dtl::data_length(nested) == 5);
  CHECK(dtl::data_length(std::pair{nested, t}) == 5);
  CHECK(dtl::data_length(std::vector<double>{1, 2, 3}) == 3);
  CHECK_THROWS_AS(static_cast<void>(dtl::data_length(torch::tensor(1.0))), dtl::DataError);
  CHECK_THROWS_AS(static_cast<void>(dtl::data_length(std::vector<torch::Tensor>{})), dtl::DataError);
}

TEST_CASE("to_device keeps structure, moves tensors, passes other values through") {
  std::tuple<torch::Tensor, std::map<std::string, torch::Tensor>, std::vector<torch::Tensor>, std::string> b{
      torch::ones({2}), {{"a", torch::zeros({2})}}, {torch::ones({1})}, "label"};
  auto moved = dtl::to_device(b, torch::Device(torch::kCPU));
  CHECK(std::get<0>(moved).equal(torch::ones({2})));
  CHECK(std::get<1>(moved).at("a").equal(torch::zeros({2})));
  CHECK(std::get<3>(moved) == "label");
  // Already on the device: the same tensor, no copy.
  auto t = torch::ones({3});
  CHECK(dtl::to_device(t, torch::kCPU).data_ptr() == t.data_ptr());
}

TEST_CASE("default collate stacks every structure like torch's default_collate") {
  using Example = std::tuple<torch::Tensor, std::int64_t, std::map<std::string, double>>;
  std::vector<Example> ex = {{torch::ones({2}), 1, {{"w", 0.5}}}, {torch::zeros({2}), 2, {{"w", 1.5}}}};
  auto b = dtl::DefaultCollate{}(std::span<Example>(ex));
  CHECK(std::get<0>(b).sizes() == torch::IntArrayRef{2, 2});
  CHECK(std::get<1>(b).dtype() == torch::kLong);
  CHECK(std::get<1>(b)[1].item<std::int64_t>() == 2);
  CHECK(std::get<2>(b).at("w")[1].item<double>() == doctest::Approx(1.5));
  std::vector<std::vector<torch::Tensor>> lists = {{torch::ones({1})}, {torch::ones({1}), torch::ones({1})}};
  CHECK_THROWS_AS(dtl::DefaultCollate{}(std::span(lists)), dtl::DataError);
}

TEST_CASE("TensorDataset: examples are rows; batches are gathered in one index_select") {
  auto x = torch::arange(10).reshape({5, 2});
  auto y = torch::arange(5);
  dtl::TensorDataset ds(x, y);
  CHECK(ds.size() == 5);
  auto [xi, yi] = ds.get(3);
  CHECK(xi.equal(torch::tensor({6, 7})));
  CHECK(yi.item<std::int64_t>() == 3);
  std::vector<std::int64_t> idx = {4, 0};
  auto [xb, yb] = ds.get_batch(idx);
  CHECK(yb.equal(torch::tensor({4, 0})));
  CHECK(xb[0].equal(torch::tensor({8, 9})));
  CHECK_THROWS_AS(dtl::TensorDataset(torch::zeros({3}), torch::zeros({4})), dtl::DataError);
}
