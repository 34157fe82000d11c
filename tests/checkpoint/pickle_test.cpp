// The restricted pickle codec (torch-free): byte-exact agreement with Python's pickler and
// torch.save, refusal of every global outside the allow-list, and robustness against garbage.
#include <dtl/checkpoint/pickle.hpp>

#include <doctest/doctest.h>

#include "../support/errors.hpp"

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace {

using namespace std::literals;
namespace pk = dtl::detail::pickle;
using pk::Value;
using test_support::contains;
using test_support::error_of;

std::string unhex(std::string_view h) {
  std::string out;
  const auto nib = [](char c) { return c <= '9' ? c - '0' : c - 'a' + 10; };
  for (std::size_t i = 0; i + 1 < h.size(); i += 2) out += static_cast<char>(nib(h[i]) * 16 + nib(h[i + 1]));
  return out;
}

std::string hex(std::string_view b) {
  std::string out;
  constexpr char d[] = "0123456789abcdef";
  for (const char ch : b) {
    const auto c = static_cast<unsigned char>(ch);
    out += d[c >> 4];
    out += d[c & 15];
  }
  return out;
}

pk::TensorRef tensor(std::string key, std::string type, std::int64_t numel, std::int64_t offset,
                     std::vector<std::int64_t> sizes, std::vector<std::int64_t> strides, bool requires_grad = false) {
  pk::TensorRef t;
  t.storage_key = std::move(key);
  t.storage_type = std::move(type);
  t.storage_numel = numel;
  t.storage_offset = offset;
  t.sizes = std::move(sizes);
  t.strides = std::move(strides);
  t.requires_grad = requires_grad;
  return t;
}

// pickle.dumps(obj, protocol=2) with /usr/bin/python3 (3.11), obj =
//   {"ints": [0, 255, 256, 65535, 65536, -1, 2**31 - 1, -2**31, 2**31, -2**31 - 1, 2**40, -2**63, 2**63 - 1],
//    "floats": (0.5, -1e300, float("inf")),
//    "flags": [True, False, None],
//    "nested": {"one": [7], "d1": {"k": "v"}, "t4": (1, 2, 3, 4), "empty": [], "et": (), "ed": {}},
//    "text": "h\u00e9llo \u2713",
//    "bytes": b"\x00\xffab", "b2": b"\x80"}
constexpr std::string_view kPlainHex =
    "80027d7100285804000000696e747371015d7102284b004bff4d00014dffff4a000001004affffffff4affffff7f4a000000808a05000000"
    "80008a05ffffff7fff8a060000000000018a0800000000000000808a08ffffffffffffff7f655806000000666c6f6174737103473fe00000"
    "0000000047fe37e43c8800759c477ff00000000000008771045805000000666c61677371055d71062888894e6558060000006e6573746564"
    "71077d71082858030000006f6e6571095d710a4b076158020000006431710b7d710c58010000006b710d580100000076710e735802000000"
    "7434710f284b014b024b034b047471105805000000656d70747971115d7112580200000065747113295802000000656471147d7115755804"
    "000000746578747116580a00000068c3a96c6c6f20e29c937117580500000062797465737118635f636f646563730a656e636f64650a7119"
    "580500000000c3bf6162711a58060000006c6174696e31711b86711c52711d58020000006232711e68195802000000c280711f681b867120"
    "527121752e";

Value plain_value() {
  return Value::dict({
      {"ints", Value::list({0, 255, 256, 65535, 65536, -1, std::int64_t{2147483647}, std::int64_t{-2147483648LL},
                            std::int64_t{2147483648LL}, std::int64_t{-2147483649LL}, std::int64_t{1} << 40,
                            std::numeric_limits<std::int64_t>::min(), std::numeric_limits<std::int64_t>::max()})},
      {"floats", Value::tuple({0.5, -1e300, std::numeric_limits<double>::infinity()})},
      {"flags", Value::list({true, false, pk::None{}})},
      {"nested", Value::dict({{"one", Value::list({7})},
                              {"d1", Value::dict({{"k", "v"}})},
                              {"t4", Value::tuple({1, 2, 3, 4})},
                              {"empty", Value::list()},
                              {"et", Value::tuple()},
                              {"ed", Value::dict()}})},
      {"text", "h\xc3\xa9llo \xe2\x9c\x93"},
      {"bytes", pk::Bytes{std::string("\x00\xff"
                                      "ab",
                                      4)}},
      {"b2", pk::Bytes{"\x80"}},
  });
}

// data.pkl of torch.save(root) with torch 1.13 (/usr/bin/python3), where
//   a = torch.arange(6, dtype=torch.float32).reshape(2, 3)
//   sd = collections.OrderedDict()
//   sd["a"] = a; sd["at"] = a.t(); sd["row"] = a[1]
//   sd["g"] = torch.ones(2, requires_grad=True)
//   sd["l"] = torch.tensor([1, -2], dtype=torch.int64)
//   sd["scalar"] = torch.tensor(2.5, dtype=torch.float64)
//   sd["b4"] = torch.zeros(1, 1, 1, 2, dtype=torch.bool)
//   sd["h"] = torch.tensor([1.5], dtype=torch.float16)
//   sd["bf"] = torch.tensor([1.5], dtype=torch.bfloat16)
//   root = {"model": sd, "step": 3}
constexpr std::string_view kTorchHex =
    "80027d71002858050000006d6f64656c710163636f6c6c656374696f6e730a4f726465726564446963740a71022952710328580100000061"
    "710463746f7263682e5f7574696c730a5f72656275696c645f74656e736f725f76320a71052828580700000073746f72616765710663746f"
    "7263680a466c6f617453746f726167650a7107580100000030710858030000006370757109"
    "4b0674710a514b004b024b0386710b4b034b01"
    "86710c8968022952710d74710e52710f5802000000617471106805282868066807680868094b06747111514b004b034b028671124b014b03"
    "867113896802295271147471155271165803000000726f7771176805282868066807680868094b06747118514b034b038571194b0185711a"
    "8968022952711b74711c52711d580100000067711e6805282868066807580100000031711f68094b02747120514b004b028571214b018571"
    "228868022952712374712452712558010000006c712668052828680663746f7263680a4c6f6e6753746f726167650a712758010000003271"
    "2868094b02747129514b004b0285712a4b0185712b8968022952712c74712d52712e58060000007363616c6172712f68052828680663746f"
    "7263680a446f75626c6553746f726167650a7130580100000033713168094b01747132514b0029298968022952713374713452713558020000"
    "006234713668052828680663746f7263680a426f6f6c53746f726167650a7137580100000034713868094b02747139514b00284b014b014b"
    "014b0274713a284b024b024b024b0174713b8968022952713c74713d52713e580100000068713f68052828680663746f7263680a48616c6653"
    "746f726167650a7140580100000035714168094b01747142514b004b018571434b018571448968022952714574714652714758020000006266"
    "714868052828680663746f7263680a42466c6f6174313653746f726167650a7149580100000036714a68094b0174714b514b004b0185714c4b"
    "0185714d8968022952714e74714f5271507558040000007374657071514b03752e";

Value torch_value() {
  return Value::dict({
      {"model", Value::ordered_dict({
                    {"a", tensor("0", "FloatStorage", 6, 0, {2, 3}, {3, 1})},
                    {"at", tensor("0", "FloatStorage", 6, 0, {3, 2}, {1, 3})},
                    {"row", tensor("0", "FloatStorage", 6, 3, {3}, {1})},
                    {"g", tensor("1", "FloatStorage", 2, 0, {2}, {1}, true)},
                    {"l", tensor("2", "LongStorage", 2, 0, {2}, {1})},
                    {"scalar", tensor("3", "DoubleStorage", 1, 0, {}, {})},
                    {"b4", tensor("4", "BoolStorage", 2, 0, {1, 1, 1, 2}, {2, 2, 2, 1})},
                    {"h", tensor("5", "HalfStorage", 1, 0, {1}, {1})},
                    {"bf", tensor("6", "BFloat16Storage", 1, 0, {1}, {1})},
                })},
      {"step", 3},
  });
}

// data.pkl of torch.save(torch.nn.Linear(1, 1).state_dict()) (torch 1.13): an OrderedDict
// whose _metadata attribute torch.save stores with BUILD.
constexpr std::string_view kStateDictHex =
    "800263636f6c6c656374696f6e730a4f726465726564446963740a710029527101285806000000776569676874710263746f7263682e5f75"
    "74696c730a5f72656275696c645f74656e736f725f76320a71032828580700000073746f72616765710463746f7263680a466c6f61745374"
    "6f726167650a71055801000000307106580300000063707571074b01747108514b004b014b018671094b014b0186710a8968002952710b74"
    "710c52710d580400000062696173710e6803282868046805580100000031710f68074b01747110514b004b018571114b0185711289680029"
    "527113747114527115757d711658090000005f6d657461646174617117680029527118580000000071197d711a580700000076657273696f"
    "6e711b4b01737373622e";

// data.pkl of torch.save({"p": torch.nn.Parameter(torch.ones(2))}) (torch 1.13).
constexpr std::string_view kParameterHex =
    "80027d7100580100000070710163746f7263682e5f7574696c730a5f72656275696c645f706172616d657465720a710263746f7263682e5f"
    "7574696c730a5f72656275696c645f74656e736f725f76320a71032828580700000073746f72616765710463746f7263680a466c6f617453"
    "746f726167650a71055801000000307106580300000063707571074b02747108514b004b028571094b0185710a8963636f6c6c656374696f"
    "6e730a4f726465726564446963740a710b2952710c74710d52710e88680b2952710f877110527111732e";

// pickle.dumps({"a": [1, 2.5, None, True, "x", b"yz", (1, 2)], "o": collections.OrderedDict(k=1)},
//              protocol=4) with Python 3.11: FRAME, SHORT_BINUNICODE, MEMOIZE, STACK_GLOBAL, ...
constexpr std::string_view kProtocol4Hex =
    "80049555000000000000007d94288c0161945d94284b014740040000000000004e888c0178944302797a944b014b028694658c016f948c0b"
    "636f6c6c656374696f6e73948c0b4f726465726564446963749493942952948c016b944b0173752e";

// data.pkl of LibTorch's torch::pickle_save(d) (how dtl wrote checkpoints before), with d a
// GenericDict {"models": [{"w": torch::ones({2})}], "x": 1.5, "ints": c10::List<int64_t>{1, 2},
// "doubles": c10::List<double>{0.5}, "tensors": c10::List<at::Tensor>{torch::zeros({1}, kLong)}}:
// TorchScript type tags through torch.jit._pickle's identity functions.
constexpr std::string_view kLibTorchHex =
    "800263746f7263682e6a69742e5f7069636b6c650a726573746f72655f747970655f7461670a71007d2858060000006d6f64656c73710168"
    "005d2868007d28580100000077710263746f7263682e5f7574696c730a5f72656275696c645f74656e736f725f76320a7103282858070000"
    "0073746f72616765710463746f7263680a466c6f617453746f726167650a71055801000000307106580300000063707571074b0274517108"
    "4b00284b0274284b01748963636f6c6c656374696f6e730a4f726465726564446963740a71092952745275580e000000446963745b737472"
    "2c20416e795d710a8652710b6558090000004c6973745b416e795d710c8652710d580100000078710e473ff8000000000000580400000069"
    "6e7473710f63746f7263682e6a69742e5f7069636b6c650a6275696c645f696e746c6973740a7110285d284b014b02657452580700000064"
    "6f75626c6573711163746f7263682e6a69742e5f7069636b6c650a6275696c645f646f75626c656c6973740a7112285d28473fe000000000"
    "0000657452580700000074656e736f7273711363746f7263682e6a69742e5f7069636b6c650a6275696c645f74656e736f726c6973740a71"
    "14285d2868032828680463746f7263680a4c6f6e6753746f726167650a7115580100000031711668074b01745171174b00284b0174284b01"
    "7489680929527452711865745275680a865271192e";

}  // namespace

TEST_CASE("pickle: dump matches Python's pickle.dumps(protocol=2) byte for byte") {
  const std::string expected = unhex(kPlainHex);
  CHECK(hex(pk::dump(plain_value())) == hex(expected));
  CHECK(pk::load(expected) == plain_value());
}

TEST_CASE("pickle: dump matches torch.save's data.pkl for tensors, shared storages and views") {
  const std::string expected = unhex(kTorchHex);
  CHECK(hex(pk::dump(torch_value())) == hex(expected));
  const Value loaded = pk::load(expected);
  CHECK(loaded == torch_value());
  CHECK(pk::dump(loaded) == expected);
}

TEST_CASE("pickle: reads a Module.state_dict() with its _metadata and a Parameter") {
  const Value sd = pk::load(unhex(kStateDictHex));
  REQUIRE(sd.is(pk::Kind::dict));
  const pk::Dict& d = sd.as_dict();
  CHECK(d.ordered);
  REQUIRE(d.items.size() == 2);
  CHECK(d.items[0].first.as_str() == "weight");
  CHECK(d.items[0].second.as_tensor() == tensor("0", "FloatStorage", 1, 0, {1, 1}, {1, 1}));
  CHECK(d.items[1].second.as_tensor() == tensor("1", "FloatStorage", 1, 0, {1}, {1}));
  REQUIRE(d.attributes.size() == 1);
  CHECK(d.attributes[0].first.as_str() == "_metadata");
  const pk::Dict& meta = d.attributes[0].second.as_dict();
  CHECK(meta.ordered);
  CHECK(meta.find("")->as_dict().find("version")->as_int() == 1);
  // Written back, it reads the same (the memo shares 'version' differently, so bytes differ).
  CHECK(pk::load(pk::dump(sd)) == sd);

  const Value p = pk::load(unhex(kParameterHex));
  CHECK(p.as_dict().find("p")->as_tensor() == tensor("0", "FloatStorage", 2, 0, {2}, {1}, true));
}

TEST_CASE("pickle: reads protocol 4 (frames, MEMOIZE, STACK_GLOBAL, SHORT_BINBYTES)") {
  const Value v = pk::load(unhex(kProtocol4Hex));
  const Value expected = Value::dict({
      {"a", Value::list({1, 2.5, pk::None{}, true, "x", pk::Bytes{"yz"}, Value::tuple({1, 2})})},
      {"o", Value::ordered_dict({{"k", 1}})},
  });
  CHECK(v == expected);
}

TEST_CASE("pickle: reads collections.Counter as its dict (MultiStepLR's milestones in a Python checkpoint)") {
  // pickle.dumps({"milestones": collections.Counter({30: 1, 80: 2})}, protocol=2), Python 3.11
  const Value v = pk::load(
      "\x80\x02}q\x00X\n\x00\x00\x00milestonesq\x01" "ccollections\nCounter\nq\x02}q\x03(K\x1eK\x01KPK\x02u"
      "\x85q\x04Rq\x05s."sv);
  CHECK(v == Value::dict({{"milestones", Value::dict({{30, 1}, {80, 2}})}}));
  // Counter() (no milestones) and a Counter of anything but a dict.
  CHECK(pk::load("\x80\x02" "ccollections\nCounter\n)R."sv) == Value::dict());
  const auto e =
      error_of<dtl::CheckpointError>([] { (void)pk::load("\x80\x02" "ccollections\nCounter\n]\x85R."sv); });
  CHECK(contains(e, "collections.Counter is only accepted with no arguments or one dict"));
}

TEST_CASE("pickle: reads a numpy array as its raw bytes (Determined's rng_state.np_rng_state)") {
  // pickle.dumps(("MT19937", np.array([1, 2, 3], dtype=np.uint32), 624), protocol=2), numpy 2.4
  const Value v = pk::load(unhex(
      "800258070000004d5431393933377100636e756d70792e5f636f72652e6d756c746961727261790a5f7265636f6e7374727563740a7101"
      "636e756d70790a6e6461727261790a71024b00857103635f636f646563730a656e636f64650a7104580100000062710558060000006c61"
      "74696e31710686710752710887710952710a284b014b0385710b636e756d70790a64747970650a710c58020000007534710d898887710e"
      "52710f284b0358010000003c71104e4e4e4affffffff4affffffff4b0074711162896804580c0000000100000002000000030000007112"
      "6806867113527114747115624d70028771162e"));
  CHECK(v == Value::tuple({"MT19937", pk::Bytes{std::string("\x01\0\0\0\x02\0\0\0\x03\0\0\0", 12)}, 624}));
  // Nothing is called: numpy's globals only in the shapes pickle gives an array.
  auto e = error_of<dtl::CheckpointError>([] { (void)pk::load("\x80\x02" "cnumpy\nndarray\n)R."sv); });
  CHECK(contains(e, "calling numpy.ndarray is not supported"));
  e = error_of<dtl::CheckpointError>(
      [] { (void)pk::load("\x80\x02" "cnumpy.core.multiarray\n_reconstruct\n}K\x00\x85" "C\x01" "b\x87R."sv); });
  CHECK(contains(e, "only accepted as _reconstruct(numpy.ndarray, shape, bytes)"));
  e = error_of<dtl::CheckpointError>([] { (void)pk::load("\x80\x02" "cnumpy\ndtype\nK\x01\x85R."sv); });
  CHECK(contains(e, "numpy.dtype is only accepted as dtype(str, bool, bool)"));
  // An array whose state is not (version, shape, dtype, is_fortran, bytes).
  e = error_of<dtl::CheckpointError>([] {
    (void)pk::load("\x80\x02" "cnumpy.core.multiarray\n_reconstruct\ncnumpy\nndarray\nK\x00\x85" "C\x01" "b\x87R"
                   "K\x01\x85" "b."sv);
  });
  CHECK(contains(e, "a numpy array's state must be (version, shape, dtype, is_fortran, bytes)"));
}

TEST_CASE("pickle: reads what LibTorch's torch::pickle_save writes") {
  const Value v = pk::load(unhex(kLibTorchHex));
  const Value expected = Value::dict({
      {"models", Value::list({Value::dict({{"w", tensor("0", "FloatStorage", 2, 0, {2}, {1})}})})},
      {"x", 1.5},
      {"ints", Value::list({1, 2})},
      {"doubles", Value::list({0.5})},
      {"tensors", Value::list({tensor("1", "LongStorage", 1, 0, {1}, {1})})},
  });
  CHECK(v == expected);
  CHECK(contains(error_of<dtl::CheckpointError>([] {
                   (void)pk::load(
                       "\x80\x02"
                       "ctorch.jit._pickle\nbuild_intlist\nK\x01\x85R."sv);
                 }),
                 "only accepted with one list"));
}

TEST_CASE("pickle: round trips every kind of value") {
  std::vector<Value> many;
  for (int i = 0; i < 2500; ++i) many.emplace_back(i);  // > 1000: several APPENDS batches, LONG_BINPUT
  std::vector<std::pair<Value, Value>> pairs, odd;
  for (int i = 0; i < 1000; ++i) pairs.emplace_back("k" + std::to_string(i), i);  // exactly one full batch
  for (int i = 0; i < 1001; ++i) odd.emplace_back(i, "v" + std::to_string(i));    // int keys, batch of one
  const Value shared = Value::list({1, 2});
  Value attrs = Value::ordered_dict({{"x", 1}});
  attrs.as_dict().attributes.emplace_back("_metadata", Value::ordered_dict({{"", Value::dict({{"version", 2}})}}));
  const Value v = Value::dict({
      {"many", Value::list(many)},
      {"pairs", Value::dict(pairs)},
      {"odd", Value::ordered_dict(odd)},
      {"ordered_pairs", Value::ordered_dict(pairs)},
      {"nan", std::numeric_limits<double>::quiet_NaN()},
      {"neg", -0.0},
      {"empty_bytes", pk::Bytes{}},
      {"bin", pk::Bytes{std::string("\x00\x01\xfe\xff", 4)}},
      {"long_str", std::string(70000, 'x')},
      {"shared", Value::tuple({shared, shared})},
      {"attrs", attrs},
      {pk::None{}, true},
      {Value::tuple({1, "t"}), 2.0},
      {std::int64_t{-7}, false},
  });
  const std::string bytes = pk::dump(v);
  const Value back = pk::load(bytes);
  CHECK(back == v);
  CHECK(pk::dump(back) == bytes);
  // Sharing survives: the tuple's two items are one list, as in Python.
  const auto& t = back.as_dict().find("shared")->as_tuple();
  CHECK(t.items[0].identity() == t.items[1].identity());
}

TEST_CASE("pickle: batching follows CPython's C pickler") {
  // pickle.dumps([i % 256 for i in range(1001)], protocol=2): the last batch of one is still
  // MARK ... APPENDS for a list.
  std::vector<Value> items;
  std::string expected = "\x80\x02]q\x00("s;
  for (int i = 0; i < 1001; ++i) {
    items.emplace_back(i % 256);
    if (i == 1000) expected += "e(";
    expected += 'K';
    expected += static_cast<char>(i % 256);
  }
  expected += "e.";
  CHECK(hex(pk::dump(Value::list(items))) == hex(expected));
  // pickle.dumps({str(i): i for i in range(1000)}, protocol=2) ends with an empty batch
  // "u(u." (SETITEMS, MARK, SETITEMS, STOP).
  std::vector<std::pair<Value, Value>> pairs;
  for (int i = 0; i < 1000; ++i) pairs.emplace_back(std::to_string(i), i);
  const std::string d = pk::dump(Value::dict(pairs));
  CHECK(d.size() == 14879);
  CHECK(hex(d.substr(d.size() - 12)) == "72e80300004de7037528752e");
}

TEST_CASE("pickle: refuses globals outside the allow-list without executing anything") {
  // The classic: cos\nsystem\n(S'echo pwned'\ntR.
  std::string e = error_of<dtl::CheckpointError>([] { (void)pk::load("cos\nsystem\n(S'echo pwned'\ntR."sv); });
  CHECK(contains(e, "refusing the global 'os.system'"));
  CHECK(contains(e, "without ever executing code"));
  CHECK(contains(e, "byte 0 (GLOBAL)"));
  e = error_of<dtl::CheckpointError>([] {
    (void)pk::load(
        "\x80\x02"
        "cbuiltins\neval\nX\x04\x00\x00\x00"
        "1+1\x85R."sv);
  });
  CHECK(contains(e, "'builtins.eval'"));
  e = error_of<dtl::CheckpointError>([] {
    (void)pk::load(
        "\x80\x02"
        "c__builtin__\neval\n)R."sv);
  });
  CHECK(contains(e, "'builtins.eval'"));
  // STACK_GLOBAL (protocol 4) resolves through the same allow-list.
  e = error_of<dtl::CheckpointError>([] {
    (void)pk::load(
        "\x80\x04\x8c\x08"
        "builtins\x8c\x04"
        "eval\x93)R."sv);
  });
  CHECK(contains(e, "'builtins.eval'"));
  e = error_of<dtl::CheckpointError>([] { (void)pk::load("\x80\x04\x8c\x05posix\x8c\x06system\x93."sv); });
  CHECK(contains(e, "'posix.system'"));
  // torch names outside the list are refused too.
  e = error_of<dtl::CheckpointError>([] {
    (void)pk::load(
        "\x80\x02"
        "ctorch\nload\n."sv);
  });
  CHECK(contains(e, "'torch.load'"));
  e = error_of<dtl::CheckpointError>([] {
    (void)pk::load(
        "\x80\x02"
        "ctorch\nEvilStorage\n."sv);
  });
  CHECK(contains(e, "'torch.EvilStorage'"));
  // REDUCE/NEWOBJ/BUILD only on what they are allowed for.
  e = error_of<dtl::CheckpointError>([] {
    (void)pk::load(
        "\x80\x02"
        "ctorch\nFloatStorage\n)R."sv);
  });
  CHECK(contains(e, "calling torch.FloatStorage is not supported"));
  e = error_of<dtl::CheckpointError>([] { (void)pk::load("\x80\x02])R."sv); });
  CHECK(contains(e, "REDUCE calls a list, which is not an allowed callable"));
  e = error_of<dtl::CheckpointError>([] {
    (void)pk::load(
        "\x80\x02"
        "ccollections\nOrderedDict\nK\x01\x85R."sv);
  });
  CHECK(contains(e, "only accepted with no arguments"));
  e = error_of<dtl::CheckpointError>([] {
    (void)pk::load(
        "\x80\x02"
        "ctorch._utils\n_rebuild_tensor_v2\n)\x81."sv);
  });
  CHECK(contains(e, "NEWOBJ may only create a collections.OrderedDict"));
  e = error_of<dtl::CheckpointError>([] { (void)pk::load("\x80\x02]}b."sv); });
  CHECK(contains(e, "BUILD may only set an OrderedDict's attributes"));
  e = error_of<dtl::CheckpointError>([] {
    (void)pk::load(
        "\x80\x02"
        "c_codecs\nencode\nX\x01\x00\x00\x00xX\x05\x00\x00\x00utf-8\x86R."sv);
  });
  CHECK(contains(e, "encode(str, 'latin1')"));
  e = error_of<dtl::CheckpointError>([] { (void)pk::load("\x80\x02(ios\nsystem\n."sv); });
  CHECK(contains(e, "refusing to create an object"));
  // A global never becomes data.
  e = error_of<dtl::CheckpointError>([] {
    (void)pk::load(
        "\x80\x02"
        "ccollections\nOrderedDict\n."sv);
  });
  CHECK(contains(e, "the global collections.OrderedDict cannot be used as data"));
  // Only storage persistent ids.
  e = error_of<dtl::CheckpointError>([] {
    (void)pk::load(
        "\x80\x02X\x04\x00\x00\x00"
        "evil\x85Q."sv);
  });
  CHECK(contains(e, "persistent ids are supported"));
}

TEST_CASE("pickle: malformed input throws CheckpointError naming the offset") {
  struct Case {
    std::string bytes;
    std::string_view message;
  };
  const std::vector<Case> cases = {
      {"", "ends before its STOP"},
      {"\x80\x02"s, "ends before its STOP"},
      {"\x80\x02X\xff\xff\xff\xff"s, "needs 4294967295 more bytes but only 0 remain"},
      {std::string("\x80\x02\x8e\xff\xff\xff\xff\xff\xff\xff\x7f", 11), "more bytes but only 0 remain"},
      {"\x80\x02\x95\xff\xff\xff\xff\xff\xff\xff\xff"s, "frame is longer"},
      {"\x80\x02\xff"s, "unknown opcode 0xff"},
      {"\x80\x09N."s, "pickle protocol 9"},
      {"\x80\x02N"
       "a."s,
       "stack is empty"},
      {"\x80\x02h\x05."s, "memo entry 5 was never stored"},
      {"\x80\x02}(K\x01u."s, "odd number"},
      {"\x80\x02N(."s, "stack is empty"},  // STOP right after a MARK: nothing above it
      {"\x80\x02"
       "e."s,
       "no MARK"},
      {"\x80\x02]q\x00h\x00"
       "a."s,
       "contains itself"},
      {"\x80\x02}]N\x86"
       "K\x01s."s,
       "unhashable"},
      {std::string("\x80\x02\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x00\x01.", 14), "64 bits"},
      {"\x80\x02X\x02\x00\x00\x00\xc3\x28."s, "not valid UTF-8"},
      {"\x80\x02I1\n."s, "text (protocol 0)"},
      {"\x80\x02\x8f."s, "sets"},
      {"\x80\x02"
       "cos"s,
       "no terminating newline"},
      {"\x80\x02(X\x07\x00\x00\x00storagectorch\nFloatStorage\nX\x01\x00\x00\x00"
       "0X\x03\x00\x00\x00"
       "cpuK\x02tQ."s,
       "a bare storage cannot be used as data"},
      // A 2x3 view of a storage of 2 elements.
      {"\x80\x02"
       "ctorch._utils\n_rebuild_tensor_v2\n((X\x07\x00\x00\x00storagectorch\nFloatStorage\nX\x01\x00\x00\x00"
       "0X\x03\x00\x00\x00"
       "cpuK\x02tQK\x00K\x02K\x03\x86K\x03K\x01\x86\x89}tR."s,
       "needs 6 elements but its storage '0' holds 2"},
      {"\x80\x02"
       "ctorch._utils\n_rebuild_tensor_v2\n((X\x07\x00\x00\x00storagectorch\nFloatStorage\nX\x01\x00\x00\x00"
       "0X\x03\x00\x00\x00"
       "cpuK\x02tQK\x00K\x02\x85K\x01K\x01\x86\x89}tR."s,
       "1 sizes but 2 strides"},
      {"\x80\x02]((X\x07\x00\x00\x00storagectorch\nFloatStorage\nX\x01\x00\x00\x00"
       "0X\x03\x00\x00\x00"
       "cpuK\x02tQ"
       "(X\x07\x00\x00\x00storagectorch\nLongStorage\nX\x01\x00\x00\x00"
       "0X\x03\x00\x00\x00"
       "cpuK\x02tQ."s,
       "declared twice"},
  };
  for (const auto& c : cases) {
    CAPTURE(hex(c.bytes));
    const std::string e = error_of<dtl::CheckpointError>([&] { (void)pk::load(c.bytes); });
    CHECK(contains(e, c.message));
    CHECK(contains(e, "dtl: pickle: byte "));
  }
  // Nesting: 1000 levels load, 1001 do not (and the 1001-deep garbage is freed without recursing).
  const auto nested = [](int depth) {
    return "\x80\x02" + std::string(static_cast<std::size_t>(depth), ']') +
           std::string(static_cast<std::size_t>(depth - 1), 'a') + ".";
  };
  CHECK_NOTHROW((void)pk::load(nested(1000)));
  CHECK(contains(error_of<dtl::CheckpointError>([&] { (void)pk::load(nested(1001)); }), "deeper than 1000"));
  CHECK(contains(error_of<dtl::CheckpointError>([&] { (void)pk::load(nested(200000)); }), "deeper than 1000"));
  CHECK(contains(error_of<dtl::CheckpointError>([&] { (void)pk::load(nested(200000).substr(0, 300000)); }),
                 "ends before its STOP"));
  // Garbage the result does not reach (deep, cyclic) is freed too, without recursing or leaking.
  const std::string deep_garbage = nested(200000);
  CHECK(pk::load(deep_garbage.substr(0, deep_garbage.size() - 1) + "N.") == Value());
  CHECK(pk::load("\x80\x02]q\x00h\x00"
                 "a0N."sv) == Value());
  CHECK_NOTHROW((void)pk::load(nested(50), {.max_depth = 50}));
  CHECK_THROWS_AS((void)pk::load(nested(51), {.max_depth = 50}), dtl::CheckpointError);
  // Memo bombs: 2^40 references to one list stay shared (cheap); copies of a large string are
  // bounded by a budget rather than allowed to exhaust memory.
  std::string bomb = "\x80\x02]q\x00"s;
  for (int i = 0; i < 40; ++i) bomb += "h\x00h\x00\x86q\x00"s;
  bomb += ".";
  CHECK_NOTHROW((void)pk::load(bomb));
  std::string strings = "\x80\x02X\x00\x00\x10\x00"s + std::string(1 << 20, 'x') + "q\x00("s;
  for (int i = 0; i < 200; ++i) strings += "h\x00"s;
  strings += "l.";
  CHECK(contains(error_of<dtl::CheckpointError>([&] { (void)pk::load(strings); }), "size limit"));
  // dump refuses what Python could not read back.
  CHECK(
      contains(error_of<dtl::CheckpointError>([] { (void)pk::dump(Value(std::string("\xff"))); }), "not valid UTF-8"));
  CHECK(contains(
      error_of<dtl::CheckpointError>([] { (void)pk::dump(Value(tensor("0", "QuatStorage", 1, 0, {1}, {1}))); }),
      "unknown storage type"));
  CHECK(contains(
      error_of<dtl::CheckpointError>([] { (void)pk::dump(Value(tensor("0", "FloatStorage", 1, 0, {2}, {1}))); }),
      "does not fit its storage"));
}

TEST_CASE("pickle: fuzzing valid pickles only ever yields values or CheckpointError") {
  const std::vector<std::string> seeds = {
      unhex(kPlainHex),     unhex(kTorchHex),    unhex(kStateDictHex),           unhex(kParameterHex),
      unhex(kProtocol4Hex), unhex(kLibTorchHex), pk::dump(Value::list({1, 2.5}))};
  std::mt19937_64 rng(20240613);  // fixed: every run mutates the same way
  const auto below = [&](std::size_t n) { return n == 0 ? std::size_t{0} : static_cast<std::size_t>(rng() % n); };
  int loaded = 0, refused = 0;
  for (int iter = 0; iter < 30000; ++iter) {
    std::string s = seeds[static_cast<std::size_t>(iter) % seeds.size()];
    const int mutations = 1 + static_cast<int>(below(4));
    for (int m = 0; m < mutations; ++m) {
      switch (below(6)) {
        case 0:  // flip a bit
          if (!s.empty()) s[below(s.size())] ^= static_cast<char>(1 << below(8));
          break;
        case 1:  // overwrite a byte
          if (!s.empty()) s[below(s.size())] = static_cast<char>(rng());
          break;
        case 2:  // truncate
          s.resize(below(s.size() + 1));
          break;
        case 3: {  // insert random bytes
          std::string ins(1 + below(8), '\0');
          for (auto& c : ins) c = static_cast<char>(rng());
          s.insert(below(s.size() + 1), ins);
          break;
        }
        case 4: {  // duplicate a slice
          const std::size_t from = below(s.size() + 1), len = below(std::min<std::size_t>(64, s.size() - from) + 1);
          s.insert(below(s.size() + 1), s.substr(from, len));
          break;
        }
        default: {  // delete a slice
          const std::size_t from = below(s.size() + 1);
          s.erase(from, below(16));
          break;
        }
      }
    }
    try {
      const Value v = pk::load(s);
      ++loaded;
      // Whatever loads must write back, and what is written must read back the same.
      const std::string again = pk::dump(v);
      REQUIRE(pk::dump(pk::load(again)) == again);
    } catch (const dtl::CheckpointError&) {
      ++refused;
    } catch (const std::exception& e) {
      FAIL("input " << hex(s) << " threw a non-CheckpointError: " << e.what());
    }
  }
  MESSAGE("fuzz: " << loaded << " mutants loaded, " << refused << " refused");
  CHECK(loaded > 0);
  CHECK(refused > 0);
}
