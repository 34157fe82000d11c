// dtl — a restricted pickle codec for checkpoints. It writes protocol 2 byte for byte as
// Python's torch.save does, and reads what torch.save writes, refusing every global outside a
// short allow-list: loading a checkpoint never runs code from the file. Torch-free, so it can be
// tested and fuzzed without LibTorch; dtl/checkpoint/torch_save.hpp maps it to tensors.
#ifndef DTL_CHECKPOINT_PICKLE_HPP
#define DTL_CHECKPOINT_PICKLE_HPP

#include <dtl/detail/abi.hpp>

#include <dtl/errors.hpp>

#include <algorithm>
#include <array>
#include <bit>
#include <concepts>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

namespace dtl {
inline namespace DTL_ABI {
namespace detail {
namespace pickle {

/// Python's None.
struct None {
  bool operator==(const None&) const = default;
};

/// Python's bytes (str holds text and must be UTF-8; bytes holds anything).
struct Bytes {
  std::string data;
  bool operator==(const Bytes&) const = default;
};

/// A tensor as torch.save describes it: a view (offset, sizes, strides in elements) into a
/// storage that the zip container holds as the record `data/<storage_key>`. Tensors sharing a
/// storage carry the same key; the storage itself is written once.
struct TensorRef {
  std::string storage_key;            ///< "0", "1", ... (the record name below data/)
  std::string storage_type;           ///< Python's storage class: "FloatStorage", "LongStorage", ...
  std::string location = "cpu";       ///< torch's location tag; dtl loads everything onto the CPU
  std::int64_t storage_numel = 0;     ///< elements in the whole storage
  std::int64_t storage_offset = 0;    ///< first element of the view
  std::vector<std::int64_t> sizes;    ///< torch.Size
  std::vector<std::int64_t> strides;  ///< in elements, one per size
  bool requires_grad = false;
  bool operator==(const TensorRef&) const = default;
};

/// The storage classes torch.save names, with their element sizes in bytes. A global
/// `torch <Name>` outside this table is refused.
inline constexpr std::array<std::pair<std::string_view, int>, 12> kStorageTypes{{
    {"FloatStorage", 4},
    {"DoubleStorage", 8},
    {"HalfStorage", 2},
    {"BFloat16Storage", 2},
    {"LongStorage", 8},
    {"IntStorage", 4},
    {"ShortStorage", 2},
    {"CharStorage", 1},
    {"ByteStorage", 1},
    {"BoolStorage", 1},
    {"ComplexFloatStorage", 8},
    {"ComplexDoubleStorage", 16},
}};

/// Bytes per element of a storage class, or 0 when the class is not one dtl knows.
[[nodiscard]] inline int storage_element_size(std::string_view storage_type) noexcept {
  for (const auto& [name, size] : kStorageTypes)
    if (name == storage_type) return size;
  return 0;
}

/// Elements a view needs from the start of its storage (offset + furthest element + 1; just the
/// offset when the view is empty), or -1 when a size, stride or offset is negative or the sum
/// overflows. Bounds checks against storage_numel use this.
[[nodiscard]] inline std::int64_t required_storage_numel(const TensorRef& t) noexcept {
  if (t.storage_offset < 0 || t.sizes.size() != t.strides.size()) return -1;
  std::int64_t last = 0;  // index of the furthest element relative to the offset
  for (std::size_t i = 0; i < t.sizes.size(); ++i) {
    if (t.sizes[i] < 0 || t.strides[i] < 0) return -1;
    if (t.sizes[i] == 0) {
      for (std::size_t j = i; j < t.sizes.size(); ++j)
        if (t.sizes[j] < 0 || t.strides[j] < 0) return -1;
      return t.storage_offset;
    }
    std::int64_t step = 0;
    if (__builtin_mul_overflow(t.sizes[i] - 1, t.strides[i], &step) || __builtin_add_overflow(last, step, &last))
      return -1;
  }
  std::int64_t total = 0;
  if (__builtin_add_overflow(t.storage_offset, last, &total) || __builtin_add_overflow(total, 1, &total)) return -1;
  return total;
}

struct Value;

template <class I>
concept NonBoolIntegral = std::integral<I> && !std::same_as<I, bool>;

/// Python's list. Containers have reference semantics, as in Python: copying a Value shares
/// the container, which is what a pickle's memo references (BINGET) mean.
struct List {
  std::vector<Value> items;
};

/// Python's tuple.
struct Tuple {
  std::vector<Value> items;
};

/// Python's dict, or collections.OrderedDict when `ordered`; items keep insertion order. A key
/// repeated in a file appears repeated here (Python would keep the last value at the first
/// position; the torch layer does that). `attributes` is an OrderedDict's instance __dict__,
/// e.g. `_metadata` on a Module.state_dict(), which torch.save stores with BUILD.
struct Dict {
  std::vector<std::pair<Value, Value>> items;
  bool ordered = false;
  std::vector<std::pair<Value, Value>> attributes;

  /// The value of the last item whose key is the str `key`, or nullptr.
  [[nodiscard]] const Value* find(std::string_view key) const;
};

/// Which alternative a Value holds (the order of Value::Variant).
enum class Kind { none, boolean, integer, floating, string, bytes, list, tuple, dict, tensor };

/// Python's name for a kind, for error messages.
[[nodiscard]] inline const char* kind_name(Kind k) noexcept {
  constexpr const char* names[] = {"None", "bool", "int", "float", "str", "bytes", "list", "tuple", "dict", "tensor"};
  return names[static_cast<int>(k)];
}

/// One node of the value tree a pickle describes: a scalar, a string, a container or a tensor.
/// Scalars and strings are held by value, containers through shared pointers (see List).
struct Value {
  using Variant = std::variant<None, bool, std::int64_t, double, std::string, Bytes, std::shared_ptr<List>,
                               std::shared_ptr<Tuple>, std::shared_ptr<Dict>, TensorRef>;
  Variant v;

  Value() noexcept = default;
  Value(None) noexcept {}
  Value(bool b) noexcept : v(b) {}
  template <NonBoolIntegral I>
  Value(I i) noexcept : v(static_cast<std::int64_t>(i)) {}
  template <std::floating_point F>
  Value(F d) noexcept : v(static_cast<double>(d)) {}
  Value(std::string s) noexcept : v(std::move(s)) {}
  Value(std::string_view s) : v(std::string(s)) {}
  Value(const char* s) : v(std::string(s)) {}
  Value(Bytes b) noexcept : v(std::move(b)) {}
  Value(TensorRef t) noexcept : v(std::move(t)) {}
  Value(std::shared_ptr<List> l) noexcept : v(std::move(l)) {}
  Value(std::shared_ptr<Tuple> t) noexcept : v(std::move(t)) {}
  Value(std::shared_ptr<Dict> d) noexcept : v(std::move(d)) {}

  /// A new list.
  static Value list(std::vector<Value> items = {}) { return std::make_shared<List>(List{std::move(items)}); }
  /// A new tuple.
  static Value tuple(std::vector<Value> items = {}) { return std::make_shared<Tuple>(Tuple{std::move(items)}); }
  /// A new plain dict.
  static Value dict(std::vector<std::pair<Value, Value>> items = {}) {
    return std::make_shared<Dict>(Dict{std::move(items), false, {}});
  }
  /// A new collections.OrderedDict (what Module.state_dict() returns).
  static Value ordered_dict(std::vector<std::pair<Value, Value>> items = {}) {
    return std::make_shared<Dict>(Dict{std::move(items), true, {}});
  }

  [[nodiscard]] Kind kind() const noexcept { return static_cast<Kind>(v.index()); }
  [[nodiscard]] bool is(Kind k) const noexcept { return kind() == k; }
  [[nodiscard]] bool is_container() const noexcept { return is(Kind::list) || is(Kind::tuple) || is(Kind::dict); }

  [[nodiscard]] bool as_bool() const { return get<bool>(Kind::boolean); }
  [[nodiscard]] std::int64_t as_int() const { return get<std::int64_t>(Kind::integer); }
  [[nodiscard]] double as_float() const { return get<double>(Kind::floating); }
  [[nodiscard]] const std::string& as_str() const { return get<std::string>(Kind::string); }
  [[nodiscard]] const Bytes& as_bytes() const { return get<Bytes>(Kind::bytes); }
  [[nodiscard]] const TensorRef& as_tensor() const { return get<TensorRef>(Kind::tensor); }
  /// The container itself; constness is shallow, as with shared_ptr.
  [[nodiscard]] List& as_list() const { return *get<std::shared_ptr<List>>(Kind::list); }
  [[nodiscard]] Tuple& as_tuple() const { return *get<std::shared_ptr<Tuple>>(Kind::tuple); }
  [[nodiscard]] Dict& as_dict() const { return *get<std::shared_ptr<Dict>>(Kind::dict); }

  /// The container's address (what Python's memo keys on), or nullptr for scalars.
  [[nodiscard]] const void* identity() const noexcept {
    switch (kind()) {
      case Kind::list:
        return std::get<std::shared_ptr<List>>(v).get();
      case Kind::tuple:
        return std::get<std::shared_ptr<Tuple>>(v).get();
      case Kind::dict:
        return std::get<std::shared_ptr<Dict>>(v).get();
      default:
        return nullptr;
    }
  }

 private:
  template <class T>
  const T& get(Kind want) const {
    if (const T* p = std::get_if<T>(&v)) return *p;
    throw CheckpointError(std::string("dtl: pickle: expected a ") + kind_name(want) + ", got a " + kind_name(kind()));
  }
};

inline const Value* Dict::find(std::string_view key) const {
  for (auto it = items.rbegin(); it != items.rend(); ++it)
    if (it->first.is(Kind::string) && it->first.as_str() == key) return &it->second;
  return nullptr;
}

/// Deep structural equality (not identity); a dict equals an OrderedDict with the same items
/// only when `ordered` matches too. Not for cyclic values.
[[nodiscard]] inline bool operator==(const Value& a, const Value& b) {
  if (a.kind() != b.kind()) return false;
  const auto same_items = [](const std::vector<Value>& x, const std::vector<Value>& y) {
    return x.size() == y.size() && std::equal(x.begin(), x.end(), y.begin());
  };
  const auto same_pairs = [](const std::vector<std::pair<Value, Value>>& x,
                             const std::vector<std::pair<Value, Value>>& y) {
    if (x.size() != y.size()) return false;
    for (std::size_t i = 0; i < x.size(); ++i)
      if (!(x[i].first == y[i].first) || !(x[i].second == y[i].second)) return false;
    return true;
  };
  switch (a.kind()) {
    case Kind::list:
      return a.identity() == b.identity() || same_items(a.as_list().items, b.as_list().items);
    case Kind::tuple:
      return a.identity() == b.identity() || same_items(a.as_tuple().items, b.as_tuple().items);
    case Kind::dict: {
      if (a.identity() == b.identity()) return true;
      const Dict& x = a.as_dict();
      const Dict& y = b.as_dict();
      return x.ordered == y.ordered && same_pairs(x.items, y.items) && same_pairs(x.attributes, y.attributes);
    }
    case Kind::floating: {  // bitwise, so that NaN round trips compare equal
      return std::bit_cast<std::uint64_t>(a.as_float()) == std::bit_cast<std::uint64_t>(b.as_float());
    }
    default:
      return a.v == b.v;
  }
}

namespace impl {

inline constexpr std::size_t kDumpMaxDepth = 1000;

/// Python's pickle opcodes that dtl reads or names in errors.
namespace op {
inline constexpr std::uint8_t MARK = '(', STOP = '.', POP = '0', POP_MARK = '1', DUP = '2', FLOAT = 'F', INT = 'I',
                              BININT = 'J', BININT1 = 'K', LONG = 'L', BININT2 = 'M', NONE = 'N', PERSID = 'P',
                              BINPERSID = 'Q', REDUCE = 'R', STRING = 'S', BINSTRING = 'T', SHORT_BINSTRING = 'U',
                              UNICODE = 'V', BINUNICODE = 'X', APPEND = 'a', BUILD = 'b', GLOBAL = 'c', DICT = 'd',
                              EMPTY_DICT = '}', APPENDS = 'e', GET = 'g', BINGET = 'h', INST = 'i', LONG_BINGET = 'j',
                              LIST = 'l', EMPTY_LIST = ']', OBJ = 'o', PUT = 'p', BINPUT = 'q', LONG_BINPUT = 'r',
                              SETITEM = 's', TUPLE = 't', EMPTY_TUPLE = ')', SETITEMS = 'u', BINFLOAT = 'G',
                              PROTO = 0x80, NEWOBJ = 0x81, EXT1 = 0x82, EXT2 = 0x83, EXT4 = 0x84, TUPLE1 = 0x85,
                              TUPLE2 = 0x86, TUPLE3 = 0x87, NEWTRUE = 0x88, NEWFALSE = 0x89, LONG1 = 0x8a, LONG4 = 0x8b,
                              BINBYTES = 'B', SHORT_BINBYTES = 'C', SHORT_BINUNICODE = 0x8c, BINUNICODE8 = 0x8d,
                              BINBYTES8 = 0x8e, EMPTY_SET = 0x8f, ADDITEMS = 0x90, FROZENSET = 0x91, NEWOBJ_EX = 0x92,
                              STACK_GLOBAL = 0x93, MEMOIZE = 0x94, FRAME = 0x95, BYTEARRAY8 = 0x96, NEXT_BUFFER = 0x97,
                              READONLY_BUFFER = 0x98;
}  // namespace op

/// Each opcode's name as Python's pickletools spells it, for errors.
inline constexpr std::pair<std::uint8_t, const char*> kOpcodeNames[] = {
    {op::MARK, "MARK"},
    {op::STOP, "STOP"},
    {op::POP, "POP"},
    {op::POP_MARK, "POP_MARK"},
    {op::DUP, "DUP"},
    {op::FLOAT, "FLOAT"},
    {op::INT, "INT"},
    {op::BININT, "BININT"},
    {op::BININT1, "BININT1"},
    {op::LONG, "LONG"},
    {op::BININT2, "BININT2"},
    {op::NONE, "NONE"},
    {op::PERSID, "PERSID"},
    {op::BINPERSID, "BINPERSID"},
    {op::REDUCE, "REDUCE"},
    {op::STRING, "STRING"},
    {op::BINSTRING, "BINSTRING"},
    {op::SHORT_BINSTRING, "SHORT_BINSTRING"},
    {op::UNICODE, "UNICODE"},
    {op::BINUNICODE, "BINUNICODE"},
    {op::APPEND, "APPEND"},
    {op::BUILD, "BUILD"},
    {op::GLOBAL, "GLOBAL"},
    {op::DICT, "DICT"},
    {op::EMPTY_DICT, "EMPTY_DICT"},
    {op::APPENDS, "APPENDS"},
    {op::GET, "GET"},
    {op::BINGET, "BINGET"},
    {op::INST, "INST"},
    {op::LONG_BINGET, "LONG_BINGET"},
    {op::LIST, "LIST"},
    {op::EMPTY_LIST, "EMPTY_LIST"},
    {op::OBJ, "OBJ"},
    {op::PUT, "PUT"},
    {op::BINPUT, "BINPUT"},
    {op::LONG_BINPUT, "LONG_BINPUT"},
    {op::SETITEM, "SETITEM"},
    {op::TUPLE, "TUPLE"},
    {op::EMPTY_TUPLE, "EMPTY_TUPLE"},
    {op::SETITEMS, "SETITEMS"},
    {op::BINFLOAT, "BINFLOAT"},
    {op::PROTO, "PROTO"},
    {op::NEWOBJ, "NEWOBJ"},
    {op::EXT1, "EXT1"},
    {op::EXT2, "EXT2"},
    {op::EXT4, "EXT4"},
    {op::TUPLE1, "TUPLE1"},
    {op::TUPLE2, "TUPLE2"},
    {op::TUPLE3, "TUPLE3"},
    {op::NEWTRUE, "NEWTRUE"},
    {op::NEWFALSE, "NEWFALSE"},
    {op::LONG1, "LONG1"},
    {op::LONG4, "LONG4"},
    {op::BINBYTES, "BINBYTES"},
    {op::SHORT_BINBYTES, "SHORT_BINBYTES"},
    {op::SHORT_BINUNICODE, "SHORT_BINUNICODE"},
    {op::BINUNICODE8, "BINUNICODE8"},
    {op::BINBYTES8, "BINBYTES8"},
    {op::EMPTY_SET, "EMPTY_SET"},
    {op::ADDITEMS, "ADDITEMS"},
    {op::FROZENSET, "FROZENSET"},
    {op::NEWOBJ_EX, "NEWOBJ_EX"},
    {op::STACK_GLOBAL, "STACK_GLOBAL"},
    {op::MEMOIZE, "MEMOIZE"},
    {op::FRAME, "FRAME"},
    {op::BYTEARRAY8, "BYTEARRAY8"},
    {op::NEXT_BUFFER, "NEXT_BUFFER"},
    {op::READONLY_BUFFER, "READONLY_BUFFER"},
};

/// The name of the opcode `c`, or nullptr for a byte that is no opcode.
[[nodiscard]] inline const char* opcode_name(std::uint8_t c) noexcept {
  static constexpr auto by_byte = [] {
    std::array<const char*, 256> names{};
    for (const auto& [code, name] : kOpcodeNames) names[code] = name;
    return names;
  }();
  return by_byte[c];
}

/// Whether `s` is UTF-8 as Python's "surrogatepass" decoder takes it (the pickler encodes str
/// that way, so lone surrogates may appear as 3-byte sequences).
[[nodiscard]] inline bool valid_utf8(std::string_view s) noexcept {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const auto* end = p + s.size();
  while (p < end) {
    const unsigned c = *p;
    if (c < 0x80) {
      ++p;
      continue;
    }
    int n = 0;
    unsigned lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) {
      n = 1;
    } else if (c >= 0xE0 && c <= 0xEF) {
      n = 2;
      if (c == 0xE0) lo = 0xA0;  // no overlong forms; 0xED (surrogates) passes, as surrogatepass
    } else if (c >= 0xF0 && c <= 0xF4) {
      n = 3;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;
    } else {
      return false;
    }
    if (end - p <= n) return false;
    if (p[1] < lo || p[1] > hi) return false;
    for (int i = 2; i <= n; ++i)
      if ((p[i] & 0xC0) != 0x80) return false;
    p += n + 1;
  }
  return true;
}

/// Printable form of file-controlled text for error messages: escaped and cut at 80 bytes.
[[nodiscard]] inline std::string printable(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size() && i < 80; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += static_cast<char>(c);
    } else {
      constexpr char hex[] = "0123456789abcdef";
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  if (s.size() > 80) out += "...";
  return out;
}

/// Emits protocol 2 as CPython's pickler does for the same objects, with torch.save's
/// persistent ids for tensors: same opcodes, same memo indices, same batching.
class Pickler {
 public:
  std::string run(const Value& root) {
    out_ += static_cast<char>(op::PROTO);
    out_ += '\x02';
    save(root, 0);
    out_ += static_cast<char>(op::STOP);
    return std::move(out_);
  }

 private:
  std::string out_;
  std::uint32_t next_memo_ = 0;
  std::unordered_map<const void*, std::uint32_t> memo_;          // containers, by identity
  std::unordered_map<std::string, std::uint32_t> globals_;       // "module\nname"
  std::unordered_map<std::string, std::uint32_t> constants_;     // "storage", "latin1": one object in Python
  std::unordered_map<std::string, std::uint32_t> locations_;     // location tags, one object per tag
  std::unordered_map<std::string, std::uint32_t> storage_keys_;  // one str object per storage in torch.save

  [[noreturn]] static void fail(const std::string& msg) { throw CheckpointError("dtl: pickle: cannot write: " + msg); }

  void u8(std::uint8_t b) { out_ += static_cast<char>(b); }
  void le(std::uint64_t x, int n) {
    for (int i = 0; i < n; ++i) u8(static_cast<std::uint8_t>(x >> (8 * i)));
  }

  std::uint32_t put() {
    const std::uint32_t idx = next_memo_++;
    if (idx < 256) {
      u8(op::BINPUT);
      u8(static_cast<std::uint8_t>(idx));
    } else {
      u8(op::LONG_BINPUT);
      le(idx, 4);
    }
    return idx;
  }
  void get(std::uint32_t idx) {
    if (idx < 256) {
      u8(op::BINGET);
      u8(static_cast<std::uint8_t>(idx));
    } else {
      u8(op::LONG_BINGET);
      le(idx, 4);
    }
  }

  void save_int(std::int64_t x) {
    if (x >= 0 && x <= 0xff) {
      u8(op::BININT1);
      u8(static_cast<std::uint8_t>(x));
    } else if (x >= 0 && x <= 0xffff) {
      u8(op::BININT2);
      le(static_cast<std::uint64_t>(x), 2);
    } else if (x >= std::numeric_limits<std::int32_t>::min() && x <= std::numeric_limits<std::int32_t>::max()) {
      u8(op::BININT);
      le(static_cast<std::uint64_t>(x), 4);
    } else {
      // LONG1: the shortest little-endian two's complement, as Python's encode_long.
      const auto bits = static_cast<std::uint64_t>(x);
      int n = 8;
      while (n > 1) {
        const auto top = static_cast<std::uint8_t>(bits >> (8 * (n - 1)));
        const auto next = static_cast<std::uint8_t>(bits >> (8 * (n - 2)));
        if ((top == 0x00 && !(next & 0x80)) || (top == 0xff && (next & 0x80)))
          --n;
        else
          break;
      }
      u8(op::LONG1);
      u8(static_cast<std::uint8_t>(n));
      le(bits, n);
    }
  }

  void save_str_raw(std::string_view s) {
    if (!valid_utf8(s)) fail("str \"" + printable(s) + "\" is not valid UTF-8 (use Bytes for binary data)");
    if (s.size() > 0xffffffffULL) fail("a str longer than 4 GiB needs pickle protocol 4");
    u8(op::BINUNICODE);
    le(s.size(), 4);
    out_.append(s);
  }
  void save_str(std::string_view s) {
    save_str_raw(s);
    put();
  }
  // A str that Python holds as one object wherever it recurs (BINGET after the first time).
  void save_shared_str(std::unordered_map<std::string, std::uint32_t>& table, const std::string& s) {
    if (const auto it = table.find(s); it != table.end()) return get(it->second);
    save_str_raw(s);
    table.emplace(s, put());
  }

  void save_global(std::string_view module, std::string_view name) {
    std::string key;
    key.append(module).append("\n").append(name);
    if (const auto it = globals_.find(key); it != globals_.end()) return get(it->second);
    u8(op::GLOBAL);
    out_.append(key).append("\n");
    globals_.emplace(std::move(key), put());
  }

  void save_bytes(const Bytes& b) {
    // Protocol 2 has no bytes opcode: Python writes _codecs.encode(<latin-1 str>, 'latin1'),
    // which torch >= 2's weights_only loader accepts. Python writes empty bytes as
    // builtins.bytes(), which it refuses, so dtl encodes those through _codecs too.
    save_global("_codecs", "encode");
    std::string latin1;
    latin1.reserve(b.data.size() * 2);
    for (const char ch : b.data) {
      const auto c = static_cast<unsigned char>(ch);
      if (c < 0x80) {
        latin1 += static_cast<char>(c);
      } else {
        latin1 += static_cast<char>(0xC0 | (c >> 6));
        latin1 += static_cast<char>(0x80 | (c & 0x3F));
      }
    }
    save_str(latin1);
    save_shared_str(constants_, "latin1");
    u8(op::TUPLE2);
    put();
    u8(op::REDUCE);
    put();
  }

  // A fresh tuple of ints (torch.Size, strides): Python builds a new one per tensor.
  void save_int_tuple(const std::vector<std::int64_t>& xs) {
    if (xs.empty()) return u8(op::EMPTY_TUPLE);
    if (xs.size() > 3) u8(op::MARK);
    for (const auto x : xs) save_int(x);
    u8(xs.size() == 1 ? op::TUPLE1 : xs.size() == 2 ? op::TUPLE2 : xs.size() == 3 ? op::TUPLE3 : op::TUPLE);
    put();
  }

  void save_tensor(const TensorRef& t) {
    if (storage_element_size(t.storage_type) == 0) fail("unknown storage type '" + printable(t.storage_type) + "'");
    if (t.storage_key.empty()) fail("a tensor has an empty storage key");
    const auto need = required_storage_numel(t);
    if (need < 0 || need > t.storage_numel)
      fail("a tensor view (offset " + std::to_string(t.storage_offset) + ") does not fit its storage '" +
           printable(t.storage_key) + "' of " + std::to_string(t.storage_numel) + " elements");
    // _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, OrderedDict()),
    // the storage as persistent id ('storage', <class>, key, location, numel): torch 1.13's
    // Tensor.__reduce_ex__ and torch.serialization._save.persistent_id.
    save_global("torch._utils", "_rebuild_tensor_v2");
    u8(op::MARK);
    u8(op::MARK);
    save_shared_str(constants_, "storage");
    save_global("torch", t.storage_type);
    save_shared_str(storage_keys_, t.storage_key);
    save_shared_str(locations_, t.location);
    save_int(t.storage_numel);
    u8(op::TUPLE);
    put();
    u8(op::BINPERSID);
    save_int(t.storage_offset);
    save_int_tuple(t.sizes);
    save_int_tuple(t.strides);
    u8(t.requires_grad ? op::NEWTRUE : op::NEWFALSE);
    save_global("collections", "OrderedDict");
    u8(op::EMPTY_TUPLE);
    u8(op::REDUCE);
    put();
    u8(op::TUPLE);
    put();
    u8(op::REDUCE);
    put();
  }

  // Batching follows CPython's C pickler (what torch.save runs), which differs from pickle.py:
  // a list or dict of one item gets APPEND/SETITEM, any other size batches of up to 1000 in
  // MARK ... APPENDS/SETITEMS; a dict whose size is a multiple of 1000 ends with an empty
  // batch. An OrderedDict goes through the generic path instead: batches of 1000, a batch of
  // one written as SETITEM.
  static constexpr std::size_t kBatch = 1000;

  void save_items(const std::vector<Value>& items, std::size_t depth) {
    if (items.empty()) return;
    if (items.size() == 1) {
      save(items[0], depth);
      return u8(op::APPEND);
    }
    for (std::size_t start = 0; start < items.size(); start += kBatch) {
      u8(op::MARK);
      for (std::size_t i = start; i < std::min(items.size(), start + kBatch); ++i) save(items[i], depth);
      u8(op::APPENDS);
    }
  }
  void save_pair(const std::pair<Value, Value>& kv, std::size_t depth) {
    save(kv.first, depth);
    save(kv.second, depth);
  }
  void save_dict_items(const std::vector<std::pair<Value, Value>>& items, std::size_t depth) {
    if (items.empty()) return;
    if (items.size() == 1) {
      save_pair(items[0], depth);
      return u8(op::SETITEM);
    }
    std::size_t start = 0;
    do {
      u8(op::MARK);
      for (std::size_t i = start; i < std::min(items.size(), start + kBatch); ++i) save_pair(items[i], depth);
      u8(op::SETITEMS);
      start += kBatch;
    } while (start <= items.size());
  }
  void save_ordered_items(const std::vector<std::pair<Value, Value>>& items, std::size_t depth) {
    for (std::size_t start = 0; start < items.size(); start += kBatch) {
      const std::size_t n = std::min(kBatch, items.size() - start);
      if (n == 1) {
        save_pair(items[start], depth);
        u8(op::SETITEM);
        break;
      }
      u8(op::MARK);
      for (std::size_t i = start; i < start + n; ++i) save_pair(items[i], depth);
      u8(op::SETITEMS);
    }
  }

  void save(const Value& v, std::size_t depth) {
    if (depth > kDumpMaxDepth) fail("the value nests deeper than " + std::to_string(kDumpMaxDepth) + " containers");
    if (const void* id = v.identity()) {
      if (const auto it = memo_.find(id); it != memo_.end()) return get(it->second);
    }
    switch (v.kind()) {
      case Kind::none:
        return u8(op::NONE);
      case Kind::boolean:
        return u8(v.as_bool() ? op::NEWTRUE : op::NEWFALSE);
      case Kind::integer:
        return save_int(v.as_int());
      case Kind::floating: {
        u8(op::BINFLOAT);
        const auto bits = std::bit_cast<std::uint64_t>(v.as_float());
        for (int i = 7; i >= 0; --i) u8(static_cast<std::uint8_t>(bits >> (8 * i)));  // big-endian
        return;
      }
      case Kind::string:
        return save_str(v.as_str());
      case Kind::bytes:
        return save_bytes(v.as_bytes());
      case Kind::tensor:
        return save_tensor(v.as_tensor());
      case Kind::list: {
        u8(op::EMPTY_LIST);
        memo_.emplace(v.identity(), put());
        return save_items(v.as_list().items, depth + 1);
      }
      case Kind::tuple: {
        const auto& items = v.as_tuple().items;
        if (items.empty()) return u8(op::EMPTY_TUPLE);
        const bool small = items.size() <= 3;
        if (!small) u8(op::MARK);
        for (const auto& x : items) save(x, depth + 1);
        // A tuple reached again while saving its items (through a list inside it) is already
        // built by then: drop the items and fetch it, as CPython does.
        if (const auto it = memo_.find(v.identity()); it != memo_.end()) {
          if (small)
            for (std::size_t i = 0; i < items.size(); ++i) u8(op::POP);
          else
            u8(op::POP_MARK);
          return get(it->second);
        }
        u8(items.size() == 1   ? op::TUPLE1
           : items.size() == 2 ? op::TUPLE2
           : items.size() == 3 ? op::TUPLE3
                               : op::TUPLE);
        memo_.emplace(v.identity(), put());
        return;
      }
      case Kind::dict: {
        const Dict& d = v.as_dict();
        if (d.ordered) {
          // OrderedDict.__reduce__: OrderedDict(), then the items, then BUILD with __dict__.
          save_global("collections", "OrderedDict");
          u8(op::EMPTY_TUPLE);
          u8(op::REDUCE);
        } else {
          u8(op::EMPTY_DICT);
        }
        memo_.emplace(v.identity(), put());
        if (d.ordered)
          save_ordered_items(d.items, depth + 1);
        else
          save_dict_items(d.items, depth + 1);
        if (d.ordered && !d.attributes.empty()) {
          u8(op::EMPTY_DICT);
          put();
          save_dict_items(d.attributes, depth + 1);
          u8(op::BUILD);
        } else if (!d.ordered && !d.attributes.empty()) {
          fail("a plain dict cannot carry attributes (only an OrderedDict can)");
        }
        return;
      }
    }
  }
};

// ---- Loading --------------------------------------------------------------------------------

/// An allow-listed global on the unpickler's stack: what it may be called as.
struct GlobalRef {
  enum Id {
    ordered_dict,
    rebuild_tensor_v2,
    rebuild_tensor,
    rebuild_parameter,
    storage_class,
    codecs_encode,
    bytes_type,
    counter,    // collections.Counter(dict): MultiStepLR's milestones; read as the dict
    type_tag,   // torch.jit._pickle.restore_type_tag(value, "Dict[str, Any]"): the value
    typed_list,  // torch.jit._pickle.build_intlist(list) and friends: the list
    // numpy arrays as pickle writes them — _reconstruct(ndarray, (0,), b'b') then BUILD with
    // (version, shape, dtype, is_fortran, raw bytes) — read as their raw bytes, nothing called:
    // Determined's rng_state.np_rng_state holds np.random.get_state()'s array.
    numpy_reconstruct,  // numpy(._)core.multiarray._reconstruct
    numpy_ndarray,      // numpy.ndarray: only _reconstruct's first argument
    numpy_dtype,        // numpy.dtype(str, False, True): a dtype, BUILD sets its byte order
    numpy_array_shell,  // what _reconstruct returned, before its BUILD
    numpy_dtype_value   // what numpy.dtype(...) returned
  };
  Id id;
  std::string storage_type;  // for storage_class
  std::string name;          // "module.name", for messages
};

/// A storage as BINPERSID yields it: only meaningful as a tensor rebuild argument.
struct StorageRef {
  std::string type, key, location;
  std::int64_t numel = 0;
};

struct Slot;
/// A tuple holding a global or a storage (persistent ids, tensor rebuild arguments). It can
/// never become data; `depth` bounds their nesting, which nothing legitimate needs beyond 2.
struct RawTuple {
  std::vector<Slot> items;
  std::size_t depth = 1;
};

/// One unpickler stack or memo entry: data, or one of the machinery values above.
struct Slot {
  std::variant<Value, GlobalRef, StorageRef, std::shared_ptr<const RawTuple>> v;
};

/// The restricted stack machine. Iterative; every allocation is bounded by the bytes consumed,
/// except memo copies of strings, which a budget bounds. All containers it makes are kept in
/// a registry so that, on any failure, they can be emptied one by one: destroying deep or
/// cyclic garbage then never recurses.
class Unpickler {
 public:
  Unpickler(std::string_view data, std::size_t max_depth)
      : data_(data), max_depth_(max_depth), copy_budget_((std::size_t{64} << 20) + data.size() * 16) {}

  Unpickler(const Unpickler&) = delete;
  Unpickler& operator=(const Unpickler&) = delete;

  ~Unpickler() {
    // Empty every container the result does not own (all of them after a failure): garbage
    // left on the stack or in the memo may be cyclic or nested deeper than max_depth.
    for (auto& c : registry_) {
      if (ok_ && reached_.contains(c.identity())) continue;
      if (auto* l = std::get_if<std::shared_ptr<List>>(&c.v)) (*l)->items.clear();
      if (auto* t = std::get_if<std::shared_ptr<Tuple>>(&c.v)) (*t)->items.clear();
      if (auto* d = std::get_if<std::shared_ptr<Dict>>(&c.v)) {
        (*d)->items.clear();
        (*d)->attributes.clear();
      }
    }
  }

  Value run() {
    for (;;) {
      op_at_ = pos_;
      if (pos_ >= data_.size()) fail_at("the pickle ends before its STOP opcode (truncated file?)");
      opcode_ = u8();
      if (step()) break;
    }
    check_tree(result_);
    ok_ = true;
    return std::move(result_);
  }

 private:
  std::string_view data_;
  std::size_t pos_ = 0, op_at_ = 0;
  std::uint8_t opcode_ = 0;
  std::size_t max_depth_;
  std::size_t copy_budget_;
  std::vector<Slot> stack_;
  std::vector<std::size_t> marks_;
  std::unordered_map<std::uint32_t, Slot> memo_;
  std::vector<Value> registry_;
  std::unordered_map<std::string, std::pair<std::string, std::int64_t>> storages_;  // key -> type, numel
  std::unordered_map<const void*, std::size_t> reached_;  // containers of the result -> nesting height
  Value result_;
  bool ok_ = false;

  [[noreturn]] void fail_at(const std::string& msg) const {
    std::string where = "dtl: pickle: byte " + std::to_string(op_at_);
    if (const char* name = opcode_name(opcode_); name && op_at_ < pos_) where += std::string(" (") + name + ")";
    throw CheckpointError(where + ": " + msg);
  }

  // -- input --
  void need(std::uint64_t n) {
    if (n > data_.size() - pos_)
      fail_at("needs " + std::to_string(n) + " more bytes but only " + std::to_string(data_.size() - pos_) +
              " remain (truncated or corrupt file)");
  }
  std::uint8_t u8() {
    need(1);
    return static_cast<std::uint8_t>(data_[pos_++]);
  }
  std::uint64_t le(int n) {
    need(static_cast<std::uint64_t>(n));
    std::uint64_t x = 0;
    for (int i = 0; i < n; ++i) x |= static_cast<std::uint64_t>(static_cast<std::uint8_t>(data_[pos_ + i])) << (8 * i);
    pos_ += static_cast<std::size_t>(n);
    return x;
  }
  std::string_view take(std::uint64_t n) {
    need(n);
    const auto s = data_.substr(pos_, static_cast<std::size_t>(n));
    pos_ += static_cast<std::size_t>(n);
    return s;
  }
  std::string_view line() {
    const auto nl = data_.find('\n', pos_);
    if (nl == std::string_view::npos) fail_at("a text argument has no terminating newline (truncated file?)");
    const auto s = data_.substr(pos_, nl - pos_);
    pos_ = nl + 1;
    return s;
  }

  // -- stack --
  std::size_t base() const { return marks_.empty() ? 0 : marks_.back(); }
  void push(Slot s) { stack_.push_back(std::move(s)); }
  void push(Value v) { stack_.push_back(Slot{std::move(v)}); }
  Slot pop() {
    if (stack_.size() <= base()) fail_at("the stack is empty here (corrupt pickle)");
    Slot s = std::move(stack_.back());
    stack_.pop_back();
    return s;
  }
  Slot& top() {
    if (stack_.size() <= base()) fail_at("the stack is empty here (corrupt pickle)");
    return stack_.back();
  }
  std::vector<Slot> pop_mark() {
    if (marks_.empty()) fail_at("no MARK to pop to (corrupt pickle)");
    const std::size_t b = marks_.back();
    marks_.pop_back();
    std::vector<Slot> items(std::make_move_iterator(stack_.begin() + static_cast<std::ptrdiff_t>(b)),
                            std::make_move_iterator(stack_.end()));
    stack_.resize(b);
    return items;
  }

  // -- values --
  static std::string describe(const Slot& s) {
    if (const auto* v = std::get_if<Value>(&s.v)) return std::string("a ") + kind_name(v->kind());
    if (const auto* g = std::get_if<GlobalRef>(&s.v)) return "the global " + g->name;
    if (std::holds_alternative<StorageRef>(s.v)) return "a bare storage";
    return "a tuple holding a global or storage";
  }
  Value data(Slot&& s, const char* where) {
    if (auto* v = std::get_if<Value>(&s.v)) return std::move(*v);
    fail_at(describe(s) + " cannot be used as data (" + where + ")");
  }
  Value& value_at_top(Kind want, const char* what) {
    Slot& s = top();
    auto* v = std::get_if<Value>(&s.v);
    if (!v || !v->is(want))
      fail_at(std::string(what) + " needs a " + kind_name(want) + " below it, got " + describe(s));
    return *v;
  }
  Value make(Value v) {
    registry_.push_back(v);
    return v;
  }
  Value new_list() { return make(Value::list()); }
  Value new_dict(bool ordered) { return make(ordered ? Value::ordered_dict() : Value::dict()); }
  Value new_tuple(std::vector<Value> items) { return make(Value::tuple(std::move(items))); }

  // A tuple from stack slots: data when every item is data, else a RawTuple for BINPERSID/REDUCE.
  Slot make_tuple(std::vector<Slot> items) {
    const bool all_data =
        std::all_of(items.begin(), items.end(), [](const Slot& s) { return std::holds_alternative<Value>(s.v); });
    if (all_data) {
      std::vector<Value> values;
      values.reserve(items.size());
      for (auto& s : items) values.push_back(std::move(std::get<Value>(s.v)));
      return Slot{new_tuple(std::move(values))};
    }
    auto raw = std::make_shared<RawTuple>();
    for (const auto& s : items)
      if (const auto* inner = std::get_if<std::shared_ptr<const RawTuple>>(&s.v))
        raw->depth = std::max(raw->depth, (*inner)->depth + 1);
    if (raw->depth > 8) fail_at("tuples of globals or storages nest too deeply (corrupt or crafted pickle)");
    raw->items = std::move(items);
    return Slot{std::shared_ptr<const RawTuple>(std::move(raw))};
  }

  // Memo copies duplicate strings; a budget keeps a small file from expanding to gigabytes.
  void charge(const Slot& s) {
    std::size_t cost = 0;
    if (const auto* v = std::get_if<Value>(&s.v)) {
      if (v->is(Kind::string)) cost += v->as_str().size();
      if (v->is(Kind::bytes)) cost += v->as_bytes().data.size();
      if (v->is(Kind::tensor)) {
        const auto& t = v->as_tensor();
        cost +=
            (t.sizes.size() + t.strides.size()) * 8 + t.storage_key.size() + t.storage_type.size() + t.location.size();
      }
    } else if (const auto* st = std::get_if<StorageRef>(&s.v)) {
      cost += st->key.size() + st->type.size() + st->location.size();
    } else if (const auto* g = std::get_if<GlobalRef>(&s.v)) {
      cost += g->name.size() + g->storage_type.size();
    }
    if (cost > copy_budget_) fail_at("memo references expand beyond the size limit (crafted pickle?)");
    copy_budget_ -= cost;
  }

  void check_key(const Value& k, std::size_t depth) {
    if (depth > max_depth_) fail_at("a dict key nests too deeply");
    switch (k.kind()) {
      case Kind::list:
      case Kind::dict:
        fail_at(std::string("a ") + kind_name(k.kind()) + " cannot be a dict key (unhashable)");
      case Kind::tensor:
        fail_at("a tensor as a dict key is not supported");
      case Kind::tuple:
        for (const auto& x : k.as_tuple().items) check_key(x, depth + 1);
        return;
      default:
        return;
    }
  }

  void set_items(std::vector<Slot>& kv) {
    if (kv.size() % 2 != 0) fail_at("SETITEMS needs key/value pairs but got an odd number of items");
    Dict& d = value_at_top(Kind::dict, opcode_name(opcode_)).as_dict();
    for (std::size_t i = 0; i < kv.size(); i += 2) {
      Value k = data(std::move(kv[i]), "dict key");
      check_key(k, 0);
      d.items.emplace_back(std::move(k), data(std::move(kv[i + 1]), "dict value"));
    }
  }

  std::int64_t decode_long(std::string_view b) {
    if (b.empty()) return 0;
    const std::size_t n = b.size();
    const auto byte = [&](std::size_t i) { return static_cast<std::uint8_t>(b[i]); };
    if (n > 8) {
      const std::uint8_t fill = (byte(7) & 0x80) ? 0xff : 0x00;
      for (std::size_t i = 8; i < n; ++i)
        if (byte(i) != fill) fail_at("an integer does not fit in 64 bits");
    }
    std::uint64_t x = 0;
    const std::size_t used = std::min<std::size_t>(n, 8);
    for (std::size_t i = 0; i < used; ++i) x |= static_cast<std::uint64_t>(byte(i)) << (8 * i);
    if (used < 8 && (byte(used - 1) & 0x80)) x |= ~std::uint64_t{0} << (8 * used);  // sign-extend
    return static_cast<std::int64_t>(x);
  }

  std::string text(std::string_view s) {
    if (!valid_utf8(s)) fail_at("a str is not valid UTF-8 (corrupt file?)");
    return std::string(s);
  }

  Slot resolve_global(std::string module, std::string name) {
    // Protocol 2 writes Python 2 module names (fix_imports).
    if (module == "__builtin__") module = "builtins";
    const std::string full = module + "." + name;
    if (module == "collections" && name == "OrderedDict") return Slot{GlobalRef{GlobalRef::ordered_dict, {}, full}};
    if (module == "collections" && name == "Counter") return Slot{GlobalRef{GlobalRef::counter, {}, full}};
    if (module == "torch._utils" && name == "_rebuild_tensor_v2")
      return Slot{GlobalRef{GlobalRef::rebuild_tensor_v2, {}, full}};
    if (module == "torch._utils" && name == "_rebuild_tensor")
      return Slot{GlobalRef{GlobalRef::rebuild_tensor, {}, full}};
    if (module == "torch._utils" && name == "_rebuild_parameter")
      return Slot{GlobalRef{GlobalRef::rebuild_parameter, {}, full}};
    if (module == "torch" && storage_element_size(name) != 0)
      return Slot{GlobalRef{GlobalRef::storage_class, name, full}};
    if (module == "_codecs" && name == "encode") return Slot{GlobalRef{GlobalRef::codecs_encode, {}, full}};
    if (module == "builtins" && name == "bytes") return Slot{GlobalRef{GlobalRef::bytes_type, {}, full}};
    // LibTorch's torch::pickle_save (dtl's checkpoints before this format) tags containers
    // with TorchScript types through these identity functions.
    if (module == "torch.jit._pickle" && name == "restore_type_tag")
      return Slot{GlobalRef{GlobalRef::type_tag, {}, full}};
    if ((module == "numpy.core.multiarray" || module == "numpy._core.multiarray") && name == "_reconstruct")
      return Slot{GlobalRef{GlobalRef::numpy_reconstruct, {}, full}};
    if (module == "numpy" && name == "ndarray") return Slot{GlobalRef{GlobalRef::numpy_ndarray, {}, full}};
    if (module == "numpy" && name == "dtype") return Slot{GlobalRef{GlobalRef::numpy_dtype, {}, full}};
    if (module == "torch.jit._pickle" && (name == "build_intlist" || name == "build_doublelist" ||
                                          name == "build_boollist" || name == "build_tensorlist"))
      return Slot{GlobalRef{GlobalRef::typed_list, {}, full}};
    fail_at("refusing the global '" + printable(full) +
            "': dtl loads checkpoints without ever executing code from the file, so it accepts only "
            "collections.OrderedDict/Counter, torch._utils._rebuild_tensor_v2/_rebuild_tensor/_rebuild_parameter, "
            "torch.<Type>Storage, _codecs.encode (bytes), torch.jit._pickle's type tags and numpy arrays (read as "
            "their bytes). Save tensors and plain "
            "containers (e.g. "
            "model.state_dict()) rather than objects of other classes");
  }

  std::vector<Slot> arguments(Slot&& s, const std::string& callee) {
    if (auto* raw = std::get_if<std::shared_ptr<const RawTuple>>(&s.v)) return (*raw)->items;
    if (auto* v = std::get_if<Value>(&s.v); v && v->is(Kind::tuple)) {
      std::vector<Slot> out;
      for (const auto& x : v->as_tuple().items) out.push_back(Slot{x});
      return out;
    }
    fail_at(callee + " needs an argument tuple, got " + describe(s));
  }

  std::int64_t int_arg(const Slot& s, const char* what) {
    const auto* v = std::get_if<Value>(&s.v);
    if (!v || !v->is(Kind::integer)) fail_at(std::string(what) + " must be an int, got " + describe(s));
    return v->as_int();
  }
  std::vector<std::int64_t> ints_arg(const Slot& s, const char* what) {
    const auto* v = std::get_if<Value>(&s.v);
    if (!v || !v->is(Kind::tuple)) fail_at(std::string(what) + " must be a tuple of ints, got " + describe(s));
    std::vector<std::int64_t> out;
    for (const auto& x : v->as_tuple().items) {
      if (!x.is(Kind::integer)) fail_at(std::string(what) + " must be a tuple of ints, holds a " + kind_name(x.kind()));
      out.push_back(x.as_int());
    }
    return out;
  }
  bool bool_arg(const Slot& s, const char* what) {
    const auto* v = std::get_if<Value>(&s.v);
    if (!v || !v->is(Kind::boolean)) fail_at(std::string(what) + " must be a bool, got " + describe(s));
    return v->as_bool();
  }

  Value rebuild_tensor(std::vector<Slot>& a, bool v2) {
    const char* fn = v2 ? "_rebuild_tensor_v2" : "_rebuild_tensor";
    // (storage, storage_offset, size, stride[, requires_grad, backward_hooks[, metadata]])
    if (v2 ? (a.size() != 6 && a.size() != 7) : a.size() != 4)
      fail_at(std::string(fn) + " got " + std::to_string(a.size()) + " arguments");
    const auto* st = std::get_if<StorageRef>(&a[0].v);
    if (!st) fail_at(std::string(fn) + " needs a storage first, got " + describe(a[0]));
    TensorRef t;
    t.storage_key = st->key;
    t.storage_type = st->type;
    t.location = st->location;
    t.storage_numel = st->numel;
    t.storage_offset = int_arg(a[1], "a tensor's storage offset");
    t.sizes = ints_arg(a[2], "a tensor's size");
    t.strides = ints_arg(a[3], "a tensor's stride");
    if (t.sizes.size() != t.strides.size())
      fail_at("a tensor has " + std::to_string(t.sizes.size()) + " sizes but " + std::to_string(t.strides.size()) +
              " strides");
    if (v2) {
      t.requires_grad = bool_arg(a[4], "requires_grad");
      for (std::size_t i = 5; i < a.size(); ++i) data(std::move(a[i]), "backward hooks / metadata");  // ignored
    }
    const auto need = required_storage_numel(t);
    if (need < 0) fail_at("a tensor has a negative or overflowing size, stride or offset");
    if (need > t.storage_numel)
      fail_at("a tensor view needs " + std::to_string(need) + " elements but its storage '" + printable(t.storage_key) +
              "' holds " + std::to_string(t.storage_numel));
    return Value(std::move(t));
  }

  Slot call(const GlobalRef& g, Slot&& args_slot) {
    auto a = arguments(std::move(args_slot), g.name);
    switch (g.id) {
      case GlobalRef::ordered_dict:
        if (!a.empty()) fail_at("collections.OrderedDict is only accepted with no arguments");
        return Slot{new_dict(true)};
      case GlobalRef::rebuild_tensor_v2:
        return Slot{rebuild_tensor(a, true)};
      case GlobalRef::rebuild_tensor:
        return Slot{rebuild_tensor(a, false)};
      case GlobalRef::rebuild_parameter: {
        // (data, requires_grad, backward_hooks[, state])
        if (a.size() < 3 || a.size() > 4) fail_at("_rebuild_parameter got " + std::to_string(a.size()) + " arguments");
        const auto* v = std::get_if<Value>(&a[0].v);
        if (!v || !v->is(Kind::tensor)) fail_at("_rebuild_parameter needs a tensor, got " + describe(a[0]));
        TensorRef t = v->as_tensor();
        t.requires_grad = bool_arg(a[1], "requires_grad");
        return Slot{Value(std::move(t))};
      }
      case GlobalRef::codecs_encode: {
        // How protocol 2 spells bytes: _codecs.encode(<str of code points < 256>, 'latin1').
        const auto* s = a.size() == 2 ? std::get_if<Value>(&a[0].v) : nullptr;
        const auto* enc = a.size() == 2 ? std::get_if<Value>(&a[1].v) : nullptr;
        if (!s || !enc || !s->is(Kind::string) || !enc->is(Kind::string) ||
            (enc->as_str() != "latin1" && enc->as_str() != "latin-1"))
          fail_at("_codecs.encode is only accepted as encode(str, 'latin1'), the way pickle writes bytes");
        Bytes out;
        const std::string& u = s->as_str();
        for (std::size_t i = 0; i < u.size(); ++i) {
          const auto c = static_cast<unsigned char>(u[i]);
          if (c < 0x80) {
            out.data += static_cast<char>(c);
          } else if ((c == 0xC2 || c == 0xC3) && i + 1 < u.size()) {
            out.data += static_cast<char>(((c & 0x03) << 6) | (static_cast<unsigned char>(u[++i]) & 0x3F));
          } else {
            fail_at("_codecs.encode(..., 'latin1') got a character outside latin-1");
          }
        }
        return Slot{Value(std::move(out))};
      }
      case GlobalRef::counter: {
        // Counter.__reduce__ is (Counter, (dict(self),)); torch's weights_only loader accepts it.
        if (a.empty()) return Slot{new_dict(false)};
        const auto* d = a.size() == 1 ? std::get_if<Value>(&a[0].v) : nullptr;
        if (!d || !d->is(Kind::dict)) fail_at("collections.Counter is only accepted with no arguments or one dict");
        return Slot{*d};
      }
      case GlobalRef::bytes_type:
        if (!a.empty()) fail_at("builtins.bytes is only accepted with no arguments (empty bytes)");
        return Slot{Value(Bytes{})};
      case GlobalRef::type_tag: {
        const auto* tag = a.size() == 2 ? std::get_if<Value>(&a[1].v) : nullptr;
        if (!tag || !tag->is(Kind::string)) fail_at("restore_type_tag is only accepted as (value, type str)");
        return Slot{data(std::move(a[0]), "restore_type_tag's value")};
      }
      case GlobalRef::typed_list: {
        const auto* l = a.size() == 1 ? std::get_if<Value>(&a[0].v) : nullptr;
        if (!l || !l->is(Kind::list)) fail_at(g.name + " is only accepted with one list");
        return Slot{*l};
      }
      case GlobalRef::numpy_reconstruct: {
        // _reconstruct(numpy.ndarray, (0,), b'b'): an empty array that BUILD then fills.
        const auto* cls = a.size() == 3 ? std::get_if<GlobalRef>(&a[0].v) : nullptr;
        if (!cls || cls->id != GlobalRef::numpy_ndarray)
          fail_at("numpy's _reconstruct is only accepted as _reconstruct(numpy.ndarray, shape, bytes)");
        return Slot{GlobalRef{GlobalRef::numpy_array_shell, {}, "a numpy array"}};
      }
      case GlobalRef::numpy_dtype: {
        const auto* code = a.size() == 3 ? std::get_if<Value>(&a[0].v) : nullptr;
        if (!code || !code->is(Kind::string)) fail_at("numpy.dtype is only accepted as dtype(str, bool, bool)");
        return Slot{GlobalRef{GlobalRef::numpy_dtype_value, code->as_str(), "a numpy dtype"}};
      }
      case GlobalRef::storage_class:
      case GlobalRef::numpy_ndarray:
      case GlobalRef::numpy_array_shell:
      case GlobalRef::numpy_dtype_value:
        break;
    }
    fail_at("calling " + g.name + " is not supported (storages come from persistent ids)");
  }

  Slot persistent(Slot&& pid_slot) {
    auto a = arguments(std::move(pid_slot), "a persistent id");
    const auto str_at = [&](std::size_t i) -> const std::string* {
      const auto* v = std::get_if<Value>(&a[i].v);
      if (v && v->is(Kind::string)) return &v->as_str();
      if (v && v->is(Kind::bytes)) return &v->as_bytes().data;  // Python 2 era files
      return nullptr;
    };
    // ('storage', <storage class>, key, location, numel), torch.serialization's persistent_id.
    if (a.size() != 5 || !str_at(0) || *str_at(0) != "storage")
      fail_at("only ('storage', type, key, location, numel) persistent ids are supported");
    const auto* g = std::get_if<GlobalRef>(&a[1].v);
    if (!g || g->id != GlobalRef::storage_class) fail_at("a storage's type must be a torch.<Type>Storage class");
    if (!str_at(2) || !str_at(3)) fail_at("a storage's key and location must be strings");
    StorageRef s{g->storage_type, *str_at(2), *str_at(3), int_arg(a[4], "a storage's size")};
    if (s.numel < 0) fail_at("a storage has a negative size");
    if (s.key.empty()) fail_at("a storage has an empty key");
    const auto [it, fresh] = storages_.try_emplace(s.key, s.type, s.numel);
    if (!fresh && (it->second.first != s.type || it->second.second != s.numel))
      fail_at("storage '" + printable(s.key) + "' is declared twice with different types or sizes");
    return Slot{std::move(s)};
  }

  void memo_put(std::uint64_t idx) {
    Slot& s = top();
    charge(s);
    memo_.insert_or_assign(static_cast<std::uint32_t>(idx), s);
  }
  void memo_get(std::uint64_t idx) {
    const auto it = memo_.find(static_cast<std::uint32_t>(idx));
    if (it == memo_.end()) fail_at("memo entry " + std::to_string(idx) + " was never stored (corrupt pickle)");
    charge(it->second);
    push(Slot(it->second));
  }

  /// Executes one opcode; true at STOP.
  /// One opcode, dispatched by family; true at STOP. Each family answers whether it knew the
  /// opcode; what none knows is refused with the reason.
  bool step() {
    if (opcode_ == op::STOP) {
      result_ = data(pop(), "the pickled object");
      return true;
    }
    if (!(stack_op() || scalar_op() || text_op() || container_op() || memo_op() || object_op())) refuse_op();
    return false;
  }

  /// The stack and the stream: PROTO, FRAME, MARK, POP, POP_MARK, DUP.
  bool stack_op() {
    switch (opcode_) {
      case op::PROTO: {
        const auto p = u8();
        if (p > 5) fail_at("pickle protocol " + std::to_string(p) + " is newer than any Python writes (corrupt file?)");
        return true;
      }
      case op::FRAME: {
        const auto n = le(8);
        if (n > data_.size() - pos_) fail_at("a frame is longer than the rest of the file (truncated file?)");
        return true;
      }
      case op::MARK:
        marks_.push_back(stack_.size());
        return true;
      case op::POP:
        if (stack_.size() > base())
          stack_.pop_back();
        else
          pop_mark();
        return true;
      case op::POP_MARK:
        pop_mark();
        return true;
      case op::DUP: {
        Slot copy = top();
        charge(copy);
        push(std::move(copy));
        return true;
      }
      default:
        return false;
    }
  }

  /// None, booleans, integers and floats.
  bool scalar_op() {
    switch (opcode_) {
      case op::NONE:
        push(Value());
        return true;
      case op::NEWTRUE:
        push(Value(true));
        return true;
      case op::NEWFALSE:
        push(Value(false));
        return true;
      case op::BININT:
        push(Value(static_cast<std::int32_t>(static_cast<std::uint32_t>(le(4)))));
        return true;
      case op::BININT1:
        push(Value(static_cast<std::int64_t>(u8())));
        return true;
      case op::BININT2:
        push(Value(static_cast<std::int64_t>(le(2))));
        return true;
      case op::LONG1: {
        const auto n = u8();
        push(Value(decode_long(take(n))));
        return true;
      }
      case op::LONG4: {
        const auto n = static_cast<std::int32_t>(static_cast<std::uint32_t>(le(4)));
        if (n < 0) fail_at("a negative length");
        push(Value(decode_long(take(static_cast<std::uint64_t>(n)))));
        return true;
      }
      case op::BINFLOAT: {
        std::uint64_t bits = 0;
        for (const char c : take(8)) bits = (bits << 8) | static_cast<std::uint8_t>(c);  // big-endian
        push(Value(std::bit_cast<double>(bits)));
        return true;
      }
      default:
        return false;
    }
  }

  /// str and bytes.
  bool text_op() {
    switch (opcode_) {
      case op::SHORT_BINUNICODE:
        push(Value(text(take(u8()))));
        return true;
      case op::BINUNICODE:
        push(Value(text(take(le(4)))));
        return true;
      case op::BINUNICODE8:
        push(Value(text(take(le(8)))));
        return true;
      case op::SHORT_BINSTRING:
        push(Value(text(take(u8()))));
        return true;  // Python 2 str, read as UTF-8
      case op::BINSTRING: {
        const auto n = static_cast<std::int32_t>(static_cast<std::uint32_t>(le(4)));
        if (n < 0) fail_at("a negative length");
        push(Value(text(take(static_cast<std::uint64_t>(n)))));
        return true;
      }
      case op::SHORT_BINBYTES:
        push(Value(Bytes{std::string(take(u8()))}));
        return true;
      case op::BINBYTES:
        push(Value(Bytes{std::string(take(le(4)))}));
        return true;
      case op::BINBYTES8:
        push(Value(Bytes{std::string(take(le(8)))}));
        return true;
      default:
        return false;
    }
  }

  /// Lists, dicts and tuples: made empty or from a MARK, appended to, set.
  bool container_op() {
    switch (opcode_) {
      case op::EMPTY_LIST:
        push(new_list());
        return true;
      case op::EMPTY_DICT:
        push(new_dict(false));
        return true;
      case op::EMPTY_TUPLE:
        push(new_tuple({}));
        return true;
      case op::LIST: {
        auto items = pop_mark();
        Value l = new_list();
        for (auto& s : items) l.as_list().items.push_back(data(std::move(s), "list item"));
        push(std::move(l));
        return true;
      }
      case op::DICT: {
        auto items = pop_mark();
        push(new_dict(false));
        set_items(items);
        return true;
      }
      case op::TUPLE:
        push(make_tuple(pop_mark()));
        return true;
      case op::TUPLE1:
      case op::TUPLE2:
      case op::TUPLE3: {
        const std::size_t n = opcode_ - op::TUPLE1 + 1u;
        if (stack_.size() < base() + n) fail_at("the stack holds fewer items than the tuple needs (corrupt pickle)");
        std::vector<Slot> items(std::make_move_iterator(stack_.end() - static_cast<std::ptrdiff_t>(n)),
                                std::make_move_iterator(stack_.end()));
        stack_.resize(stack_.size() - n);
        push(make_tuple(std::move(items)));
        return true;
      }
      case op::APPEND: {
        Value item = data(pop(), "list item");
        value_at_top(Kind::list, "APPEND").as_list().items.push_back(std::move(item));
        return true;
      }
      case op::APPENDS: {
        auto items = pop_mark();
        List& l = value_at_top(Kind::list, "APPENDS").as_list();
        for (auto& s : items) l.items.push_back(data(std::move(s), "list item"));
        return true;
      }
      case op::SETITEM: {
        std::vector<Slot> kv(2);
        kv[1] = pop();
        kv[0] = pop();
        set_items(kv);
        return true;
      }
      case op::SETITEMS: {
        auto items = pop_mark();
        set_items(items);
        return true;
      }
      default:
        return false;
    }
  }

  /// The memo: GET and PUT.
  bool memo_op() {
    switch (opcode_) {
      case op::BINGET:
        memo_get(u8());
        return true;
      case op::LONG_BINGET:
        memo_get(le(4));
        return true;
      case op::BINPUT:
        memo_put(u8());
        return true;
      case op::LONG_BINPUT:
        memo_put(le(4));
        return true;
      case op::MEMOIZE: {
        if (memo_.size() >= std::numeric_limits<std::uint32_t>::max()) fail_at("too many memo entries");
        memo_put(memo_.size());
        return true;
      }
      default:
        return false;
    }
  }

  /// Globals and calls: only the allow-listed callables (resolve_global), torch's persistent storages, and an OrderedDict's attributes.
  bool object_op() {
    switch (opcode_) {
      case op::GLOBAL: {
        std::string module(line());
        std::string name(line());
        push(resolve_global(std::move(module), std::move(name)));
        return true;
      }
      case op::STACK_GLOBAL: {
        Value name = data(pop(), "STACK_GLOBAL name");
        Value module = data(pop(), "STACK_GLOBAL module");
        if (!name.is(Kind::string) || !module.is(Kind::string)) fail_at("STACK_GLOBAL needs two strs");
        push(resolve_global(module.as_str(), name.as_str()));
        return true;
      }
      case op::REDUCE: {
        Slot args = pop();
        Slot& fn = top();
        const auto* g = std::get_if<GlobalRef>(&fn.v);
        if (!g) fail_at("REDUCE calls " + describe(fn) + ", which is not an allowed callable");
        Slot result = call(*g, std::move(args));
        stack_.back() = std::move(result);
        return true;
      }
      case op::NEWOBJ: {
        Slot args = pop();
        Slot cls = pop();
        const auto* g = std::get_if<GlobalRef>(&cls.v);
        if (!g || g->id != GlobalRef::ordered_dict)
          fail_at("NEWOBJ may only create a collections.OrderedDict, got " + describe(cls));
        push(call(*g, std::move(args)));
        return true;
      }
      case op::BUILD: {
        Slot state_slot = pop();
        if (auto* g = std::get_if<GlobalRef>(&top().v)) {
          if (g->id == GlobalRef::numpy_dtype_value) return true;  // its byte order etc.: kept as the code
          if (g->id == GlobalRef::numpy_array_shell) {
            // (version, shape, dtype, is_fortran, raw data): the array as its raw bytes.
            std::vector<Slot> st = arguments(std::move(state_slot), "a numpy array's state");
            const auto* dtype = st.size() == 5 ? std::get_if<GlobalRef>(&st[2].v) : nullptr;
            const auto* raw = st.size() == 5 ? std::get_if<Value>(&st[4].v) : nullptr;
            if (!dtype || dtype->id != GlobalRef::numpy_dtype_value || !raw || !raw->is(Kind::bytes))
              fail_at("a numpy array's state must be (version, shape, dtype, is_fortran, bytes)");
            top() = Slot{*raw};
            return true;
          }
        }
        Value state = data(std::move(state_slot), "BUILD state");
        Slot& inst = top();
        const auto* v = std::get_if<Value>(&inst.v);
        if (!v || !v->is(Kind::dict) || !v->as_dict().ordered)
          fail_at("BUILD may only set an OrderedDict's attributes, got " + describe(inst));
        if (!state.is(Kind::dict) || state.as_dict().ordered)
          fail_at("BUILD needs a dict of attributes, got a " + std::string(kind_name(state.kind())));
        for (const auto& [k, x] : state.as_dict().items) {
          if (!k.is(Kind::string)) fail_at("an attribute name must be a str");
          v->as_dict().attributes.emplace_back(k, x);
        }
        return true;
      }
      case op::BINPERSID:
        push(persistent(pop()));
        return true;
      default:
        return false;
    }
  }

  /// The opcodes dtl refuses (they create objects, or are not what torch.save writes), and
  /// unknown ones.
  [[noreturn]] void refuse_op() {
    switch (opcode_) {
      case op::INST:
      case op::OBJ:
      case op::NEWOBJ_EX:
      case op::EXT1:
      case op::EXT2:
      case op::EXT4:
        fail_at(
            "refusing to create an object: dtl loads checkpoints without executing code from the file; "
            "save tensors and plain containers instead");
      case op::EMPTY_SET:
      case op::ADDITEMS:
      case op::FROZENSET:
      case op::BYTEARRAY8:
      case op::NEXT_BUFFER:
      case op::READONLY_BUFFER:
        fail_at("sets, bytearrays and out-of-band buffers are not supported in checkpoints");
      case op::INT:
      case op::LONG:
      case op::FLOAT:
      case op::STRING:
      case op::UNICODE:
      case op::GET:
      case op::PUT:
      case op::PERSID:
        fail_at("text (protocol 0) opcodes are not supported; torch.save writes binary protocol 2");
      default: {
        char hex[8];
        std::snprintf(hex, sizeof hex, "0x%02x", opcode_);
        fail_at(std::string("unknown opcode ") + hex + " (not a pickle, or a corrupt one)");
      }
    }
  }

  // Rejects cycles (which no consumer could walk) and nesting deeper than max_depth, walking
  // each shared container once.
  void check_tree(const Value& root) {
    if (!root.is_container()) return;
    struct Frame {
      const Value* v;
      std::size_t next = 0;
      std::size_t height = 0;
    };
    constexpr std::size_t kActive = std::numeric_limits<std::size_t>::max();
    auto& height = reached_;  // kActive while on the path
    const auto count = [](const Value& v) -> std::size_t {
      switch (v.kind()) {
        case Kind::list:
          return v.as_list().items.size();
        case Kind::tuple:
          return v.as_tuple().items.size();
        case Kind::dict:
          return 2 * (v.as_dict().items.size() + v.as_dict().attributes.size());
        default:
          return 0;
      }
    };
    const auto child = [](const Value& v, std::size_t i) -> const Value& {
      if (v.is(Kind::list)) return v.as_list().items[i];
      if (v.is(Kind::tuple)) return v.as_tuple().items[i];
      const Dict& d = v.as_dict();
      const auto& pairs = i / 2 < d.items.size() ? d.items : d.attributes;
      const auto& p = pairs[i / 2 < d.items.size() ? i / 2 : i / 2 - d.items.size()];
      return i % 2 ? p.second : p.first;
    };
    std::vector<Frame> path{{&root}};
    height[root.identity()] = kActive;
    while (!path.empty()) {
      Frame& f = path.back();
      if (f.next < count(*f.v)) {
        const Value& c = child(*f.v, f.next++);
        if (!c.is_container()) continue;
        const auto [it, fresh] = height.try_emplace(c.identity(), kActive);
        if (!fresh) {
          if (it->second == kActive)
            fail_at("the object contains itself (a cyclic structure); checkpoints must be trees");
          f.height = std::max(f.height, it->second);
          continue;
        }
        path.push_back({&c});
        continue;
      }
      const std::size_t h = f.height + 1;
      if (h > max_depth_)
        fail_at("containers nest deeper than " + std::to_string(max_depth_) + " levels (crafted file?)");
      height[f.v->identity()] = h;
      path.pop_back();
      if (!path.empty()) path.back().height = std::max(path.back().height, h);
    }
  }
};

}  // namespace impl

/// Limits for `load`.
struct LoadOptions {
  /// Deepest nesting of containers accepted (Python's own recursion limit is about 1000).
  std::size_t max_depth = 1000;
};

/// Protocol 2 pickle bytes for `v`, byte for byte what Python's torch.save writes into
/// data.pkl for the same structure (tensors as persistent ids naming their storage records).
/// Two deviations, both so that torch's weights_only loader accepts the file: empty bytes are
/// written as _codecs.encode('', 'latin1'), and equal strs are never shared (Python shares
/// only identical objects, which C++ values cannot express). Throws CheckpointError for a str
/// that is not UTF-8, an unknown storage type, a view outside its storage, or nesting deeper
/// than 1000.
[[nodiscard]] inline std::string dump(const Value& v) { return impl::Pickler().run(v); }

/// Reads a pickle (protocols 2 to 5 as torch.save and pickle.dumps write for state dicts),
/// refusing every global outside the allow-list — collections.OrderedDict and Counter (as a dict),
/// torch._utils._rebuild_tensor_v2 / _rebuild_tensor / _rebuild_parameter, torch.<Type>Storage,
/// _codecs.encode and builtins.bytes (how protocol 2 spells bytes), and the identity functions
/// torch.jit._pickle.restore_type_tag / build_intlist / build_doublelist / build_boollist /
/// build_tensorlist that LibTorch's torch::pickle_save writes — without executing anything.
/// Any malformed input (truncated, unknown opcode, stack underflow, bad memo index, wrong
/// argument types, lengths past the end, cycles, nesting deeper than max_depth) throws
/// CheckpointError naming the byte offset; it never crashes or allocates more than a bounded
/// multiple of the input.
[[nodiscard]] inline Value load(std::string_view bytes, const LoadOptions& options = {}) {
  return impl::Unpickler(bytes, options.max_depth).run();
}

}  // namespace pickle
}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_CHECKPOINT_PICKLE_HPP
