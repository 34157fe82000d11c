#include "../prelude.hpp"

// torch.save's file format from C++: round trips, error reporting, and interop with Python's
// torch 1.13 in both directions (skipped, visibly, when /usr/bin/python3 lacks torch).
#include <dtl/checkpoint/state_dict.hpp>
#include <dtl/checkpoint/torch_save.hpp>

#include "../support/errors.hpp"
#include "../support/external.hpp"

#include <nlohmann/json.hpp>

#include <unistd.h>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace dtl_torch_save_test {

namespace fs = std::filesystem;
using c10::IValue;
using dtl::detail::load_pickle_archive;
using dtl::detail::save_pickle_archive;
using test_support::contains;
using test_support::error_of;

// A fresh scratch directory, removed at scope exit.
struct Scratch {
  fs::path dir;
  Scratch() {
    static std::atomic<int> counter{0};
    dir =
        fs::temp_directory_path() / ("dtl-torch-save-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  fs::path operator/(const std::string& name) const { return dir / name; }
};

bool python_has_torch() { return !test_support::python_torch_missing(); }

// Runs `script` with arguments; returns its exit status and leaves its output in `output`.
int run_python(const Scratch& s, const std::string& script, const std::string& args, std::string& output) {
  const auto py = s / "script.py";
  const auto out = s / "python-output.txt";
  std::ofstream(py) << script;
  // -I: ignore PYTHONPATH and user site-packages; cd to the scratch dir so that no torch/
  // directory near the working directory shadows the installed package.
  const std::string cmd = "cd '" + s.dir.string() + "' && " + test_support::python() + " -I '" + py.string() + "' " +
                          args + " > '" + out.string() + "' 2>&1";
  const int rc = std::system(cmd.c_str());
  std::ifstream in(out);
  std::stringstream ss;
  ss << in.rdbuf();
  output = ss.str();
  return rc;
}

c10::impl::GenericDict str_dict() { return c10::impl::GenericDict(c10::StringType::get(), c10::AnyType::get()); }
c10::impl::GenericDict int_dict() { return c10::impl::GenericDict(c10::IntType::get(), c10::AnyType::get()); }
c10::impl::GenericList any_list() { return c10::impl::GenericList(c10::AnyType::get()); }

// Same dtype, geometry, values and requires_grad.
bool same_tensor(const at::Tensor& a, const at::Tensor& b) {
  return a.scalar_type() == b.scalar_type() && a.sizes() == b.sizes() && a.strides() == b.strides() &&
         a.storage_offset() == b.storage_offset() && a.requires_grad() == b.requires_grad() &&
         torch::equal(a.detach(), b.detach());
}

const void* storage_of(const IValue& v) { return v.toTensor().storage().unsafeGetStorageImpl(); }

// A tensor of `dtype` with distinct, exactly representable values.
at::Tensor ramp(at::ScalarType dtype, std::vector<std::int64_t> shape) {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  auto t = torch::arange(n, torch::kDouble).sub(n / 2).reshape(shape);
  if (dtype == at::kBool) return t.gt(0);
  if (dtype == at::kByte) return t.abs().to(dtype);
  return t.to(dtype);
}

// Writes a file by hand: data.pkl from `pkl`, plus the given records.
void write_archive(const fs::path& file, const std::string& pkl,
                   const std::vector<std::pair<std::string, std::string>>& records) {
  caffe2::serialize::PyTorchStreamWriter w(file.string());
  w.writeRecord("data.pkl", pkl.data(), pkl.size());
  for (const auto& [name, bytes] : records) w.writeRecord(name, bytes.data(), bytes.size());
  w.writeEndOfFile();
}

// The test cases live in the namespace too: in the unity build, helpers of other files with
// the same names (Scratch, ramp, ...) must not collide with these.

TEST_CASE("torch_save: C++ round trip of nested values, every dtype, shared storages and views") {
  Scratch s;
  auto tensors = str_dict();
  for (const auto dtype : {at::kFloat, at::kDouble, at::kHalf, at::kBFloat16, at::kLong, at::kInt, at::kShort,
                           at::kChar, at::kByte, at::kBool, at::kComplexFloat, at::kComplexDouble})
    tensors.insert(c10::toString(dtype), ramp(dtype, {2, 3}));
  const auto base = ramp(at::kFloat, {3, 4});
  const auto big = torch::arange(100, torch::kLong);
  auto views = str_dict();
  views.insert("base", base);
  views.insert("t", base.t());
  views.insert("row", base[1]);
  views.insert("stepped", base.slice(1, 0, 4, 2));
  views.insert("window", big.slice(0, 10, 12));  // the whole storage is written, as torch.save does
  views.insert("scalar", torch::tensor(2.5, torch::kDouble));
  views.insert("empty", torch::zeros({0, 3}));
  views.insert("grad", torch::ones({2}).requires_grad_());
  auto state = int_dict();
  auto slot = str_dict();
  slot.insert("momentum_buffer", torch::full({2}, 0.25));
  state.insert(0, slot);
  auto list = any_list();
  list.push_back(1);
  list.push_back(c10::ivalue::Tuple::create({IValue(2.5), IValue("x"), IValue()}));
  list.push_back(any_list());
  auto root = str_dict();
  root.insert("tensors", tensors);
  root.insert("views", views);
  root.insert("state", state);
  root.insert("list", list);
  root.insert("flag", true);
  root.insert("none", IValue());
  root.insert("big", std::int64_t{1} << 40);
  root.insert("float", -0.125);
  root.insert("text", "h\xc3\xa9llo");

  const auto file = s / "state_dict.pth";
  save_pickle_archive(root, file, /*sync=*/true);
  const IValue back = load_pickle_archive(file);
  const auto d = back.toGenericDict();

  const auto bt = d.at("tensors").toGenericDict();
  CHECK(bt.size() == tensors.size());
  for (const auto& kv : tensors) {
    CAPTURE(kv.key().toStringRef());
    CHECK(same_tensor(bt.at(kv.key()).toTensor(), kv.value().toTensor()));
  }
  const auto bv = d.at("views").toGenericDict();
  for (const auto& kv : views) {
    CAPTURE(kv.key().toStringRef());
    CHECK(same_tensor(bv.at(kv.key()).toTensor(), kv.value().toTensor()));
  }
  // Views still share one storage, and a window keeps the storage it came from.
  CHECK(storage_of(bv.at("base")) == storage_of(bv.at("t")));
  CHECK(storage_of(bv.at("base")) == storage_of(bv.at("row")));
  CHECK(storage_of(bv.at("base")) == storage_of(bv.at("stepped")));
  CHECK(storage_of(bv.at("base")) != storage_of(bv.at("scalar")));
  CHECK(bv.at("window").toTensor().storage().nbytes() == 100 * sizeof(std::int64_t));
  CHECK(bv.at("window").toTensor().storage_offset() == 10);
  // Int-keyed dicts stay int-keyed (optimizer state), the rest comes back as written.
  const auto bs = d.at("state").toGenericDict();
  CHECK(bs.keyType()->kind() == c10::TypeKind::IntType);
  CHECK(same_tensor(bs.at(0).toGenericDict().at("momentum_buffer").toTensor(), torch::full({2}, 0.25)));
  const auto bl = d.at("list").toListRef();
  REQUIRE(bl.size() == 3);
  CHECK(bl[0].toInt() == 1);
  const auto tup = bl[1].toTupleRef().elements();
  CHECK(tup[0].toDouble() == 2.5);
  CHECK(tup[1].toStringRef() == "x");
  CHECK(tup[2].isNone());
  CHECK(bl[2].toListRef().empty());
  CHECK(d.at("flag").toBool());
  CHECK(d.at("none").isNone());
  CHECK(d.at("big").toInt() == (std::int64_t{1} << 40));
  CHECK(d.at("float").toDouble() == -0.125);
  CHECK(d.at("text").toStringRef() == "h\xc3\xa9llo");

  // The container holds what torch.save 1.13 writes: data.pkl, one record per storage, version.
  caffe2::serialize::PyTorchStreamReader reader(file.string());
  const auto records = reader.getAllRecords();
  CHECK(reader.hasRecord("data.pkl"));
  CHECK(reader.hasRecord("version"));
  std::size_t storage_records = 0;
  for (const auto& r : records) storage_records += r.rfind("data/", 0) == 0 ? 1 : 0;
  CHECK(storage_records == 12 + 6);  // 12 dtypes; base, big, scalar, empty, grad, the momentum buffer
  // Besides: data.pkl, version, and what LibTorch 2.x's writer adds as torch.save 2.x does
  // (byteorder, .data/serialization_id).
  std::vector<std::string> others;
  for (const auto& r : records)
    if (r.rfind("data/", 0) != 0) others.push_back(r);
  std::sort(others.begin(), others.end());
  const std::vector<std::string> expected = DTL_TORCH_2
                                                ? std::vector<std::string>{".data/serialization_id", "byteorder",
                                                                           "data.pkl", "version"}
                                                : std::vector<std::string>{"data.pkl", "version"};
  CHECK(others == expected);
}

TEST_CASE("torch_save: reads what LibTorch's torch::pickle_save wrote (dtl's earlier checkpoints)") {
  Scratch s;
  auto sd = str_dict();
  sd.insert("w", torch::arange(4, torch::kFloat));
  auto models = any_list();
  models.push_back(sd);
  auto root = str_dict();
  root.insert("models_state_dict", models);
  root.insert("ints", c10::List<std::int64_t>({1, 2}));
  root.insert("lr", 0.5);
  const auto bytes = torch::pickle_save(root);
  std::ofstream(s / "old.pth", std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  const auto back = load_pickle_archive(s / "old.pth").toGenericDict();
  CHECK(torch::equal(back.at("models_state_dict").toListRef()[0].toGenericDict().at("w").toTensor(),
                     torch::arange(4, torch::kFloat)));
  CHECK(back.at("ints").toListRef()[1].toInt() == 2);
  CHECK(back.at("lr").toDouble() == 0.5);
}

TEST_CASE("torch_save: errors name the file and the problem") {
  namespace pk = dtl::detail::pickle;
  Scratch s;
  std::string e = error_of<dtl::CheckpointError>([&] { (void)load_pickle_archive(s / "missing.pth"); });
  CHECK(contains(e, "missing.pth"));
  CHECK(contains(e, "does not exist"));
  std::ofstream(s / "empty.pth").close();
  CHECK(contains(error_of<dtl::CheckpointError>([&] { (void)load_pickle_archive(s / "empty.pth"); }),
                 "is not a torch.save file"));
  std::ofstream(s / "text.pth") << "hello world, not a zip";
  CHECK(contains(error_of<dtl::CheckpointError>([&] { (void)load_pickle_archive(s / "text.pth"); }),
                 "is not a torch.save file"));
  std::ofstream(s / "legacy.pth", std::ios::binary) << "\x80\x02\x8a\x0a";
  e = error_of<dtl::CheckpointError>([&] { (void)load_pickle_archive(s / "legacy.pth"); });
  CHECK(contains(e, "legacy"));
  CHECK(contains(e, "_use_new_zipfile_serialization=True"));

  // A truncated archive (the zip directory is at the end).
  auto root = str_dict();
  root.insert("w", torch::ones({1000}));
  save_pickle_archive(root, s / "good.pth");
  {
    std::ifstream in(s / "good.pth", std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::ofstream(s / "truncated.pth", std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  }
  e = error_of<dtl::CheckpointError>([&] { (void)load_pickle_archive(s / "truncated.pth"); });
  CHECK(contains(e, "truncated.pth"));
  CHECK(contains(e, "cannot be read as a torch zip archive"));

  // Storages: missing, short.
  pk::TensorRef t;
  t.storage_key = "0";
  t.storage_type = "FloatStorage";
  t.storage_numel = 10;
  t.sizes = {10};
  t.strides = {1};
  const std::string pkl = pk::dump(pk::Value::dict({{"w", t}}));
  write_archive(s / "no_storage.pth", pkl, {});
  e = error_of<dtl::CheckpointError>([&] { (void)load_pickle_archive(s / "no_storage.pth"); });
  CHECK(contains(e, "no_storage.pth"));
  CHECK(contains(e, "data/0 that a tensor needs is missing"));
  write_archive(s / "short.pth", pkl, {{"data/0", std::string(16, '\0')}});
  e = error_of<dtl::CheckpointError>([&] { (void)load_pickle_archive(s / "short.pth"); });
  CHECK(contains(e, "holds 16 bytes but its FloatStorage of 10 elements needs 40"));
  write_archive(s / "no_pkl.pth", "", {});
  {
    caffe2::serialize::PyTorchStreamWriter w((s / "other.pth").string());
    w.writeRecord("other.txt", "x", 1);
    w.writeEndOfFile();
  }
  CHECK(contains(error_of<dtl::CheckpointError>([&] { (void)load_pickle_archive(s / "other.pth"); }),
                 "has no data.pkl record"));
  // A malicious pickle inside a well-formed archive.
  write_archive(s / "evil.pth", "cos\nsystem\n(S'touch pwned'\ntR.", {});
  e = error_of<dtl::CheckpointError>([&] { (void)load_pickle_archive(s / "evil.pth"); });
  CHECK(contains(e, "evil.pth: data.pkl: dtl: pickle: byte 0 (GLOBAL): refusing the global 'os.system'"));
  // Dict keys c10 cannot type.
  write_archive(s / "mixed.pth", pk::dump(pk::Value::dict({{1, 1}, {"a", 2}})), {});
  CHECK(
      contains(error_of<dtl::CheckpointError>([&] { (void)load_pickle_archive(s / "mixed.pth"); }), "mixes key types"));

  // Saving: a missing directory, values with no torch.save form, a storage viewed as two dtypes.
  e = error_of<dtl::CheckpointError>([&] { save_pickle_archive(root, s / "no" / "such" / "dir.pth"); });
  CHECK(contains(e, "cannot create"));
  CHECK(contains(e, "dir.pth"));
  CHECK(contains(error_of<dtl::CheckpointError>([&] { save_pickle_archive(IValue(c10::Device("cpu")), s / "x.pth"); }),
                 "has no torch.save form"));
  CHECK_FALSE(fs::exists(s / "x.pth"));
  auto two = str_dict();
  const auto f = torch::zeros({4});
  two.insert("f", f);
  two.insert("i", f.view(torch::kInt));
  CHECK(contains(error_of<dtl::CheckpointError>([&] { save_pickle_archive(two, s / "x.pth"); }), "different dtypes"));
  CHECK(contains(error_of<dtl::CheckpointError>([&] { save_pickle_archive(IValue(at::Tensor()), s / "x.pth"); }),
                 "undefined tensor"));
  c10::impl::GenericDict bool_keys(c10::BoolType::get(), c10::AnyType::get());
  bool_keys.insert(true, 1);
  CHECK(contains(error_of<dtl::CheckpointError>([&] { save_pickle_archive(bool_keys, s / "x.pth"); }),
                 "need all str or all int keys"));
}

TEST_CASE("torch_save: Python's torch.load(weights_only=True) reads dtl's files") {
  if (!python_has_torch()) {
    MESSAGE("SKIPPED: python3-torch absent (" << *test_support::python_torch_missing() << ")");
    return;
  }
  Scratch s;
  auto model = str_dict();
  model.insert("weight", torch::arange(6, torch::kFloat).reshape({2, 3}));
  model.insert("bias", torch::tensor({0.5f, -1.5f}));
  auto state = int_dict();
  for (int i = 0; i < 2; ++i) {
    auto slot = str_dict();
    slot.insert("momentum_buffer",
                torch::full(i == 0 ? std::vector<std::int64_t>{2, 3} : std::vector<std::int64_t>{2}, 0.25 * (i + 1)));
    state.insert(i, slot);
  }
  auto params = any_list();
  params.push_back(0);
  params.push_back(1);
  auto misc = str_dict();
  auto inner = any_list();
  inner.push_back(2);
  inner.push_back(3);
  auto l = any_list();
  l.push_back(1);
  l.push_back(inner);
  l.push_back("x");
  misc.insert("list", l);
  misc.insert("tuple", c10::ivalue::Tuple::create({IValue(1), IValue("a"), IValue()}));
  misc.insert("flag", true);
  misc.insert("none", IValue());
  misc.insert("big", std::int64_t{1} << 40);
  misc.insert("neg", -7);
  misc.insert("str", "h\xc3\xa9llo \xe2\x9c\x93");
  auto tensors = str_dict();
  tensors.insert("i64", torch::tensor({1, -2, 3}, torch::kLong));
  tensors.insert("bool", torch::tensor({1, 0, 1}).to(torch::kBool));
  tensors.insert("f16", torch::tensor({1.5, -2.0}).to(torch::kHalf));
  tensors.insert("bf16", torch::tensor({1.5, -2.0}).to(torch::kBFloat16));
  tensors.insert("i8", torch::tensor({-3, 4}).to(torch::kChar));
  tensors.insert("u8", torch::tensor({250, 4}).to(torch::kByte));
  tensors.insert("f64", torch::tensor({0.1, 1e300}, torch::kDouble));
  tensors.insert("i32", torch::tensor({7}).to(torch::kInt));
  const auto base = torch::arange(12, torch::kFloat).reshape({3, 4});
  auto views = str_dict();
  views.insert("base", base);
  views.insert("t", base.t());
  views.insert("row", base[1]);
  views.insert("stepped", base.slice(1, 0, 4, 2));
  views.insert("scalar", torch::tensor(2.5, torch::kDouble));
  views.insert("grad", torch::ones({2}).requires_grad_());

  // Torch 1.13's weights_only unpickler has no BINFLOAT, so floats outside tensors make it
  // refuse a file (Python's own torch.save output included); the float-free file must load
  // as is, the full one is checked opcode by opcode against what torch >= 2.0 accepts.
  auto no_floats = str_dict();
  no_floats.insert("model", model);
  auto state_only = str_dict();
  state_only.insert("state", state);
  auto group0 = str_dict();
  group0.insert("params", params);
  group0.insert("nesterov", false);
  group0.insert("foreach", IValue());
  auto groups0 = any_list();
  groups0.push_back(group0);
  state_only.insert("param_groups", groups0);
  no_floats.insert("optimizer", state_only);
  no_floats.insert("misc", misc);
  no_floats.insert("tensors", tensors);
  no_floats.insert("views", views);
  save_pickle_archive(no_floats, s / "no_floats.pth");

  auto optimizer = str_dict();
  optimizer.insert("state", state);
  auto group = str_dict();
  group.insert("lr", 0.1);
  group.insert("momentum", 0.9);
  group.insert("dampening", 0.0);
  group.insert("weight_decay", 0.0);
  group.insert("nesterov", false);
  group.insert("maximize", false);
  group.insert("foreach", IValue());
  group.insert("differentiable", false);
  group.insert("params", params);
  auto groups = any_list();
  groups.push_back(group);
  optimizer.insert("param_groups", groups);
  auto full = str_dict();
  full.insert("model", model);
  full.insert("optimizer", optimizer);
  auto floats = any_list();
  floats.push_back(0.1);
  floats.push_back(-2.5e-300);
  floats.push_back(std::numeric_limits<double>::infinity());
  full.insert("floats", floats);
  save_pickle_archive(full, s / "full.pth", /*sync=*/true);

  const std::string script = R"py(
import math, pickletools, sys, zipfile
import torch
import torch._weights_only_unpickler as wou

def load_weights_only(path):
    try:
        return torch.load(path, weights_only=True), "weights_only=True"
    except Exception as e:
        if "Unsupported operand 71" not in str(e):
            raise
    # torch < 2.0 lacks BINFLOAT (71): check every opcode and global against its allow-lists
    # plus BINFLOAT (what torch >= 2.0 accepts), then load unrestricted.
    z = zipfile.ZipFile(path)
    pkl = z.read([n for n in z.namelist() if n.endswith("/data.pkl")][0])
    ops = {name for name in dir(wou) if name.isupper()} | {"BINFLOAT"}
    for opcode, arg, _ in pickletools.genops(pkl):
        assert opcode.name in ops, f"opcode {opcode.name} not accepted by weights_only"
        if opcode.name == "GLOBAL":
            assert arg.replace(" ", ".") in wou._get_allowed_globals(), f"global {arg}"
    return torch.load(path, weights_only=False), "weights_only opcodes/globals (torch 1.13 lacks BINFLOAT)"

a = torch.load(sys.argv[1], weights_only=True)
w = torch.arange(6.).reshape(2, 3)
assert torch.equal(a["model"]["weight"], w)
assert torch.equal(a["model"]["bias"], torch.tensor([0.5, -1.5]))
m = torch.nn.Linear(3, 2)
m.load_state_dict(a["model"])
assert torch.equal(m.weight.detach(), w)
st = a["optimizer"]["state"]
assert sorted(st.keys()) == [0, 1], st.keys()
assert torch.equal(st[0]["momentum_buffer"], torch.full((2, 3), 0.25))
assert a["optimizer"]["param_groups"] == [{"params": [0, 1], "nesterov": False, "foreach": None}]
misc = a["misc"]
assert misc["list"] == [1, [2, 3], "x"], misc["list"]
assert misc["tuple"] == (1, "a", None) and type(misc["tuple"]) is tuple
assert misc["flag"] is True and misc["none"] is None
assert misc["big"] == 2**40 and misc["neg"] == -7
assert misc["str"] == "h\u00e9llo \u2713"
t = a["tensors"]
expect = {"i64": (torch.tensor([1, -2, 3]), torch.int64), "bool": (torch.tensor([True, False, True]), torch.bool),
          "f16": (torch.tensor([1.5, -2.0], dtype=torch.float16), torch.float16),
          "bf16": (torch.tensor([1.5, -2.0], dtype=torch.bfloat16), torch.bfloat16),
          "i8": (torch.tensor([-3, 4], dtype=torch.int8), torch.int8),
          "u8": (torch.tensor([250, 4], dtype=torch.uint8), torch.uint8),
          "f64": (torch.tensor([0.1, 1e300], dtype=torch.float64), torch.float64),
          "i32": (torch.tensor([7], dtype=torch.int32), torch.int32)}
for k, (val, dt) in expect.items():
    assert t[k].dtype == dt and torch.equal(t[k], val), (k, t[k])
v = a["views"]
base = torch.arange(12.).reshape(3, 4)
assert torch.equal(v["base"], base) and torch.equal(v["t"], base.t()) and torch.equal(v["row"], base[1])
assert torch.equal(v["stepped"], base[:, ::2]) and v["stepped"].stride() == (4, 2)
assert v["t"].stride() == (1, 4) and v["row"].storage_offset() == 4
ptr = v["base"].storage().data_ptr()
assert v["t"].storage().data_ptr() == ptr and v["row"].storage().data_ptr() == ptr
assert v["scalar"].dim() == 0 and v["scalar"].item() == 2.5 and v["scalar"].dtype == torch.float64
assert v["grad"].requires_grad and not v["base"].requires_grad

b, how = load_weights_only(sys.argv[2])
m2 = torch.nn.Linear(3, 2)
m2.load_state_dict(b["model"])
opt = torch.optim.SGD(m2.parameters(), lr=1.0, momentum=0.5)
opt.load_state_dict(b["optimizer"])
assert opt.param_groups[0]["lr"] == 0.1 and opt.param_groups[0]["momentum"] == 0.9
assert torch.equal(opt.state[m2.weight]["momentum_buffer"], torch.full((2, 3), 0.25))
assert torch.equal(opt.state[m2.bias]["momentum_buffer"], torch.full((2,), 0.5))
f = b["floats"]
assert f[0] == 0.1 and f[1] == -2.5e-300 and math.isinf(f[2])
print("OK", how)
)py";
  std::string out;
  const int rc =
      run_python(s, script, "'" + (s / "no_floats.pth").string() + "' '" + (s / "full.pth").string() + "'", out);
  INFO("python said:\n" << out);
  CHECK(rc == 0);
  CHECK(contains(out, "OK"));
  MESSAGE("Python read dtl's files: " << out);
}

TEST_CASE("torch_save: dtl reads what Python's torch.save writes, and refuses malicious files") {
  if (!python_has_torch()) {
    MESSAGE("SKIPPED: python3-torch absent (" << *test_support::python_torch_missing() << ")");
    return;
  }
  Scratch s;
  const std::string script = R"py(
import collections, json, os, sys
import torch

out = sys.argv[1]
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3))
model.train()
model(torch.randn(8, 4))  # running statistics and num_batches_tracked move
model.eval()
x = torch.arange(8.).reshape(2, 4) / 10
torch.save(model.state_dict(), f"{out}/model.pth")

def describe(t):
    return {"dtype": str(t.dtype), "shape": list(t.shape), "stride": list(t.stride()), "offset": t.storage_offset(),
            "values": t.detach().double().flatten().tolist(), "requires_grad": t.requires_grad}
expected = {"model": {k: describe(v) for k, v in model.state_dict().items()},
            "y": model(x).detach().double().flatten().tolist()}

opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
model.train()
model(torch.randn(8, 4)).sum().backward()
opt.step()
model.eval()
base = torch.arange(12.).reshape(3, 4)
mixed = {
    "one_list": [7], "one_dict": {"k": 1}, "tuple": (1, "two", 3.5), "bytes": b"\x00\xffab", "empty_bytes": b"",
    "nested": {"a": [1, [2, [3]]]}, "none": None, "flag": True, "big": 2**40, "neg": -5, "f": 0.1, "s": "h\u00e9llo",
    "base": base, "t": base.t(), "row": base[1], "stepped": base[:, ::2],
    "i64": torch.tensor([1, -2, 3]), "bool": torch.tensor([True, False]), "f16": torch.tensor([1.5, -2.25], dtype=torch.float16),
    "bf16": torch.tensor([1.5, -2.25], dtype=torch.bfloat16), "i8": torch.tensor([-3, 4], dtype=torch.int8),
    "u8": torch.tensor([250, 4], dtype=torch.uint8), "f64": torch.tensor([0.1, 1e300], dtype=torch.float64),
    "scalar": torch.tensor(3.25), "empty": torch.zeros(0, 3), "param": torch.nn.Parameter(torch.ones(2)),
    "optimizer": opt.state_dict(), "od": collections.OrderedDict([("z", 1), ("a", 2)]),
}
torch.save(mixed, f"{out}/mixed.pth")
expected["mixed"] = {k: describe(v) for k, v in mixed.items() if isinstance(v, torch.Tensor)}
expected["momentum"] = {str(i): describe(s["momentum_buffer"]) for i, s in opt.state_dict()["state"].items()}
expected["params"] = opt.state_dict()["param_groups"][0]["params"]
with open(f"{out}/expected.json", "w") as f:
    json.dump(expected, f)

class Evil:
    def __init__(self, call, arg):
        self.call, self.arg = call, arg
    def __reduce__(self):
        return (self.call, (self.arg,))
torch.save({"w": torch.ones(1), "x": Evil(os.system, f"touch {out}/pwned")}, f"{out}/evil_system.pth")
torch.save(Evil(eval, f"open('{out}/pwned', 'w')"), f"{out}/evil_eval.pth")
print("written")
)py";
  std::string out;
  const int rc = run_python(s, script, "'" + s.dir.string() + "'", out);
  INFO("python said:\n" << out);
  REQUIRE(rc == 0);
  nlohmann::json expected;
  std::ifstream(s / "expected.json") >> expected;

  const std::map<std::string, at::ScalarType> dtypes{
      {"torch.float32", at::kFloat},     {"torch.float64", at::kDouble}, {"torch.float16", at::kHalf},
      {"torch.bfloat16", at::kBFloat16}, {"torch.int64", at::kLong},     {"torch.int32", at::kInt},
      {"torch.int8", at::kChar},         {"torch.uint8", at::kByte},     {"torch.bool", at::kBool}};
  const auto check_tensor = [&](const std::string& name, const at::Tensor& t, const nlohmann::json& e) {
    CAPTURE(name);
    CHECK((t.scalar_type() == dtypes.at(e["dtype"].get<std::string>())));
    CHECK(t.sizes().vec() == e["shape"].get<std::vector<std::int64_t>>());
    CHECK(t.strides().vec() == e["stride"].get<std::vector<std::int64_t>>());
    CHECK(t.storage_offset() == e["offset"].get<std::int64_t>());
    CHECK(t.requires_grad() == e["requires_grad"].get<bool>());
    const auto values = e["values"].get<std::vector<double>>();
    const auto flat = t.detach().to(torch::kDouble).flatten().contiguous();
    REQUIRE(static_cast<std::size_t>(flat.numel()) == values.size());
    bool same = true;
    for (std::size_t i = 0; i < values.size(); ++i) same = same && flat.data_ptr<double>()[i] == values[i];
    CHECK(same);
  };

  // A Module.state_dict(): OrderedDict with _metadata, float and int64 tensors.
  const auto sd = load_pickle_archive(s / "model.pth").toGenericDict();
  CHECK(sd.size() == expected["model"].size());
  for (const auto& [name, e] : expected["model"].items()) check_tensor(name, sd.at(name).toTensor(), e);
  // It drives the same C++ module to Python's output.
  torch::nn::Sequential seq(torch::nn::Linear(4, 3), torch::nn::BatchNorm1d(3));
  {
    torch::NoGradGuard no_grad;
    for (auto& p : seq->named_parameters()) p.value().copy_(sd.at(p.key()).toTensor());
    for (auto& b : seq->named_buffers()) b.value().copy_(sd.at(b.key()).toTensor());
  }
  seq->eval();
  const auto y = seq->forward(torch::arange(8, torch::kFloat).reshape({2, 4}) / 10).to(torch::kDouble).flatten();
  const auto ey = expected["y"].get<std::vector<double>>();
  REQUIRE(static_cast<std::size_t>(y.numel()) == ey.size());
  for (std::size_t i = 0; i < ey.size(); ++i)
    CHECK(y[static_cast<std::int64_t>(i)].item<double>() == doctest::Approx(ey[i]).epsilon(1e-6));

  const auto m = load_pickle_archive(s / "mixed.pth").toGenericDict();
  for (const auto& [name, e] : expected["mixed"].items()) check_tensor(name, m.at(name).toTensor(), e);
  CHECK(storage_of(m.at("base")) == storage_of(m.at("t")));
  CHECK(storage_of(m.at("base")) == storage_of(m.at("row")));
  CHECK(storage_of(m.at("base")) == storage_of(m.at("stepped")));
  CHECK(m.at("one_list").toListRef().size() == 1);
  CHECK(m.at("one_list").toListRef()[0].toInt() == 7);
  CHECK(m.at("one_dict").toGenericDict().at("k").toInt() == 1);
  const auto tup = m.at("tuple").toTupleRef().elements();
  REQUIRE(tup.size() == 3);
  CHECK(tup[0].toInt() == 1);
  CHECK(tup[1].toStringRef() == "two");
  CHECK(tup[2].toDouble() == 3.5);
  CHECK(m.at("bytes").toStringRef() == std::string("\x00\xff"
                                                   "ab",
                                                   4));
  CHECK(m.at("empty_bytes").toStringRef().empty());
  const auto nested = m.at("nested").toGenericDict().at("a").toListRef();
  CHECK(nested[1].toListRef()[1].toListRef()[0].toInt() == 3);
  CHECK(m.at("none").isNone());
  CHECK(m.at("flag").toBool());
  CHECK(m.at("big").toInt() == (std::int64_t{1} << 40));
  CHECK(m.at("neg").toInt() == -5);
  CHECK(m.at("f").toDouble() == 0.1);
  CHECK(m.at("s").toStringRef() == "h\xc3\xa9llo");
  const auto od = m.at("od").toGenericDict();
  CHECK(od.begin()->key().toStringRef() == "z");  // insertion order kept
  // Python's optimizer state: int keys, momentum buffers, param ids.
  const auto opt = m.at("optimizer").toGenericDict();
  const auto state = opt.at("state").toGenericDict();
  CHECK(state.keyType()->kind() == c10::TypeKind::IntType);
  for (const auto& [idx, e] : expected["momentum"].items())
    check_tensor("momentum " + idx,
                 state.at(static_cast<std::int64_t>(std::stoll(idx))).toGenericDict().at("momentum_buffer").toTensor(),
                 e);
  const auto group = opt.at("param_groups").toListRef()[0].toGenericDict();
  CHECK(group.at("lr").toDouble() == 0.1);
  CHECK(group.at("momentum").toDouble() == 0.9);
  CHECK(group.at("params").toListRef().size() == expected["params"].size());

  // Files that would run code are refused before anything runs.
  for (const char* name : {"evil_system.pth", "evil_eval.pth"}) {
    const std::string e = error_of<dtl::CheckpointError>([&] { (void)load_pickle_archive(s / name); });
    CAPTURE(e);
    CHECK(contains(e, name));
    CHECK((contains(e, "refusing the global 'posix.system'") || contains(e, "refusing the global 'builtins.eval'")));
    CHECK(contains(e, "without ever executing code"));
  }
  CHECK_FALSE(fs::exists(s / "pwned"));
}

}  // namespace dtl_torch_save_test

TEST_CASE("torch_save: a flipped bit in a tensor's bytes is refused by the record's CRC-32, naming it") {
  dtl_torch_save_test::Scratch s;
  const auto file = s / "t.pth";
  c10::impl::GenericDict d(c10::StringType::get(), c10::AnyType::get());
  d.insert("w", torch::full({256}, 3.25f));
  dtl::detail::save_pickle_archive(d, file);
  CHECK(torch::equal(dtl::detail::load_pickle_archive(file).toGenericDict().at("w").toTensor(), torch::full({256}, 3.25f)));
  auto bytes = dtl::detail::read_file(file);
  const float v = 3.25f;
  const auto at = bytes.find(std::string(reinterpret_cast<const char*>(&v), sizeof v));
  REQUIRE(at != std::string::npos);
  bytes[at + 1] = static_cast<char>(bytes[at + 1] ^ 0x01);  // still a float, a slightly different one
  std::ofstream(file, std::ios::binary | std::ios::trunc) << bytes;
  CHECK_THROWS_WITH_AS(dtl::detail::load_pickle_archive(file), doctest::Contains("the record data/0 is corrupt: its CRC-32 is"),
                       dtl::CheckpointError);
}

TEST_CASE("a state dict saved from a DDP-wrapped model (keys prefixed module.) loads, as Determined loads it") {
  torch::nn::Linear saved(3, 2), loaded(3, 2);
  c10::impl::GenericDict ddp(c10::StringType::get(), c10::AnyType::get());
  for (const auto& p : saved->named_parameters()) ddp.insert("module." + p.key(), p.value().detach().clone());
  dtl::load_state_dict(*loaded, ddp, /*strict=*/true, "ddp state dict");
  CHECK(torch::equal(loaded->weight, saved->weight));
  CHECK(torch::equal(loaded->bias, saved->bias));
  // Only a fully prefixed dict is taken for DDP's: a mix is a mismatch, named.
  c10::impl::GenericDict mixed(c10::StringType::get(), c10::AnyType::get());
  mixed.insert("module.weight", saved->weight.detach().clone());
  mixed.insert("bias", saved->bias.detach().clone());
  CHECK_THROWS_WITH_AS(dtl::load_state_dict(*loaded, mixed, true, "mixed"),
                       doctest::Contains("missing: weight; unexpected: module.weight"), dtl::CheckpointError);
}

TEST_CASE("dtl::load_state_dict(*model, \"weights.pt\") compiles and loads, as docs/porting.md writes it") {
  dtl_torch_save_test::Scratch s;
  const std::string file = (s / "weights.pt").string();
  torch::nn::Linear saved(3, 2), loaded(3, 2);
  dtl::save_state_dict(*saved, file);
  dtl::load_state_dict(*loaded, file.c_str());  // a string literal's type: was ambiguous (path vs IValue)
  CHECK(torch::equal(loaded->weight, saved->weight));
  torch::nn::Linear again(3, 2);
  dtl::load_state_dict(*again, file);  // a std::string
  CHECK(torch::equal(again->bias, saved->bias));
}
