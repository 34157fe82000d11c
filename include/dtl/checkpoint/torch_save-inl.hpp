// dtl — the non-template definitions of <dtl/checkpoint/torch_save.hpp>; see detail/compiled_lib.hpp.
#ifndef DTL_CHECKPOINT_TORCH_SAVE_INL_HPP
#define DTL_CHECKPOINT_TORCH_SAVE_INL_HPP

#include <dtl/detail/abi.hpp>

#include <torch/torch.h>

#include <dtl/checkpoint/pickle.hpp>
#include <dtl/checkpoint/torch_save.hpp>
#include <dtl/checkpoint/zip_crc.hpp>
#include <dtl/detail/diagnostics.hpp>
#include <dtl/errors.hpp>

#include <ATen/core/Dict.h>
#include <ATen/core/List.h>
#include <caffe2/serialize/inline_container.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cerrno>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

namespace dtl {
inline namespace DTL_ABI {
namespace detail {

static_assert(std::endian::native == std::endian::little, DTL_DIAG_BIG_ENDIAN_HOST);

/// Python's storage class for a dtype ("FloatStorage"), or nullptr when torch.save has none
/// that dtl supports (quantized and complex-half types).
[[nodiscard]] inline const char* storage_type_name(at::ScalarType t) noexcept {
  switch (t) {
    case at::kFloat:
      return "FloatStorage";
    case at::kDouble:
      return "DoubleStorage";
    case at::kHalf:
      return "HalfStorage";
    case at::kBFloat16:
      return "BFloat16Storage";
    case at::kLong:
      return "LongStorage";
    case at::kInt:
      return "IntStorage";
    case at::kShort:
      return "ShortStorage";
    case at::kChar:
      return "CharStorage";
    case at::kByte:
      return "ByteStorage";
    case at::kBool:
      return "BoolStorage";
    case at::kComplexFloat:
      return "ComplexFloatStorage";
    case at::kComplexDouble:
      return "ComplexDoubleStorage";
    default:
      return nullptr;
  }
}

/// The dtype of a Python storage class name (the inverse of storage_type_name).
[[nodiscard]] inline at::ScalarType storage_scalar_type(std::string_view name) {
  for (const auto t : {at::kFloat, at::kDouble, at::kHalf, at::kBFloat16, at::kLong, at::kInt, at::kShort, at::kChar,
                       at::kByte, at::kBool, at::kComplexFloat, at::kComplexDouble})
    if (name == storage_type_name(t)) return t;
  throw CheckpointError("dtl: checkpoint: unknown storage type '" + pickle::impl::printable(name) + "'");
}

/// One storage that a pickled value's tensors refer to: the record data/<key>, CPU bytes.
struct SavedStorage {
  std::string key;
  c10::Storage storage;    ///< CPU; keeps the bytes alive until they are written
  std::size_t nbytes = 0;  ///< storage_numel * element size
};

/// A value in pickle form plus the storages its tensors use, each once.
struct PickledIValue {
  pickle::Value value;
  std::vector<SavedStorage> storages;  ///< in key order "0", "1", ... (first use)
};

namespace impl {

inline constexpr std::size_t kMaxIValueDepth = 1000;

/// Turns IValues into pickle values the way torch.save sees Python objects: each distinct
/// storage gets the next key, views keep their offset and strides, and the whole storage is
/// written (never only the viewed part), on the CPU.
class IValueToPickle {
 public:
  PickledIValue run(const c10::IValue& root) {
    PickledIValue out;
    out.value = convert(root, 0);
    out.storages = std::move(storages_);
    return out;
  }

 private:
  struct Known {
    std::size_t index;
    at::ScalarType dtype;
  };
  std::unordered_map<const c10::StorageImpl*, Known> known_;
  std::vector<SavedStorage> storages_;
  std::unordered_map<const void*, pickle::Value> shared_;  // lists and dicts by identity

  [[noreturn]] static void fail(const std::string& msg) {
    throw CheckpointError("dtl: checkpoint: cannot save: " + msg);
  }

  pickle::TensorRef tensor(const at::Tensor& t) {
    if (!t.defined()) fail("an undefined tensor (save None instead)");
    if (t.layout() != at::kStrided || t.is_quantized() || t.is_mkldnn())
      fail("only dense strided tensors can be saved, got layout " + c10::toString(t.layout()));
    const char* type = storage_type_name(t.scalar_type());
    if (!type) fail(std::string("tensors of dtype ") + c10::toString(t.scalar_type()) + " are not supported");
    const c10::Storage& st = t.storage();
    const auto elem = static_cast<std::size_t>(t.element_size());
    if (st.nbytes() % elem != 0) fail("a tensor views a storage whose size is not a whole number of its elements");
    const auto numel = static_cast<std::int64_t>(st.nbytes() / elem);
    auto [it, fresh] = known_.try_emplace(st.unsafeGetStorageImpl(), Known{storages_.size(), t.scalar_type()});
    if (!fresh && it->second.dtype != t.scalar_type())
      fail("two tensors view the same storage as different dtypes (torch.save refuses this too); clone one");
    if (fresh) {
      SavedStorage s{std::to_string(storages_.size()), st, st.nbytes()};
      if (!t.device().is_cpu()) {
        // Copy the whole storage once, so that every view of it stays a view after loading.
        const auto whole = at::empty({0}, t.options()).set_(st, 0, {numel}, {1});
        s.storage = whole.cpu().storage();
      }
      storages_.push_back(std::move(s));
    }
    pickle::TensorRef r;
    r.storage_key = storages_[it->second.index].key;
    r.storage_type = type;
    r.location = "cpu";  // moved there: the file loads on machines without the original device
    r.storage_numel = numel;
    r.storage_offset = t.storage_offset();
    r.sizes = t.sizes().vec();
    r.strides = t.strides().vec();
    r.requires_grad = t.requires_grad();
    return r;
  }

  pickle::Value convert(const c10::IValue& v, std::size_t depth) {
    if (depth > kMaxIValueDepth) fail("the value nests deeper than " + std::to_string(kMaxIValueDepth) + " levels");
    if (v.isNone()) return pickle::None{};
    if (v.isBool()) return v.toBool();
    if (v.isInt()) return v.toInt();
    if (v.isDouble()) return v.toDouble();
    if (v.isString()) return v.toStringRef();
    if (v.isTensor()) return tensor(v.toTensor());
    if (v.isTuple()) {
      std::vector<pickle::Value> items;
      for (const auto& x : v.toTupleRef().elements()) items.push_back(convert(x, depth + 1));
      return pickle::Value::tuple(std::move(items));
    }
    if (v.isList() || v.isGenericDict()) {
      // c10 lists and dicts are shared by reference, as Python's: keep them shared.
      const void* id = v.internalToPointer();
      if (const auto it = shared_.find(id); it != shared_.end()) return it->second;
      if (v.isList()) {
        pickle::Value l = pickle::Value::list();
        shared_.emplace(id, l);
        for (const auto& x : v.toListRef()) l.as_list().items.push_back(convert(x, depth + 1));
        return l;
      }
      pickle::Value d = pickle::Value::dict();
      shared_.emplace(id, d);
      // Only what load_pickle_archive can rebuild into a c10 dict: all str or all int keys.
      const auto dict = v.toGenericDict();
      const bool str_keys = !dict.empty() && dict.begin()->key().isString();
      for (const auto& kv : dict) {
        if (!(str_keys ? kv.key().isString() : kv.key().isInt()))
          fail(std::string("a dict has a key of kind ") + kv.key().tagKind() +
               "; dicts need all str or all int keys to load back");
        d.as_dict().items.emplace_back(convert(kv.key(), depth + 1), convert(kv.value(), depth + 1));
      }
      return d;
    }
    fail(std::string("an IValue of kind ") + v.tagKind() +
         " has no torch.save form dtl writes (use None, bool, int, float, str, tensors, lists, tuples and dicts)");
  }
};

/// Turns pickle values back into IValues, tensors over storages `storage_for` provides.
class PickleToIValue {
 public:
  explicit PickleToIValue(std::function<c10::Storage(const pickle::TensorRef&)> storage_for)
      : storage_for_(std::move(storage_for)) {}

  c10::IValue run(const pickle::Value& v) { return convert(v, 0); }

 private:
  std::function<c10::Storage(const pickle::TensorRef&)> storage_for_;
  std::unordered_map<const void*, c10::IValue> shared_;

  [[noreturn]] static void fail(const std::string& msg) { throw CheckpointError("dtl: checkpoint: " + msg); }

  at::Tensor tensor(const pickle::TensorRef& r) {
    const auto dtype = storage_scalar_type(r.storage_type);
    const auto need = pickle::required_storage_numel(r);
    if (need < 0 || need > r.storage_numel)
      fail("a tensor view does not fit its storage '" + pickle::impl::printable(r.storage_key) +
           "'");  // load checks too
    c10::Storage storage = storage_for_(r);
    at::Tensor t = at::empty({0}, at::TensorOptions().dtype(dtype)).set_(storage, r.storage_offset, r.sizes, r.strides);
    if (r.requires_grad) {
      if (!at::isFloatingType(dtype) && !at::isComplexType(dtype))
        fail(std::string("a ") + r.storage_type + " tensor cannot require grad");
      t.set_requires_grad(true);
    }
    return t;
  }

  c10::IValue dict(const pickle::Dict& d, std::size_t depth) {
    // c10 dicts need one key type: optimizer state is keyed by int, everything else by str.
    bool all_str = true, all_int = true;
    for (const auto& [k, _] : d.items) {
      all_str = all_str && k.is(pickle::Kind::string);
      all_int = all_int && k.is(pickle::Kind::integer);
    }
    if (!all_str && !all_int)
      fail("a dict mixes key types or has keys other than str or int; c10::Dict needs one key type");
    c10::TypePtr key_type = c10::StringType::get();
    if (!all_str) key_type = c10::IntType::get();
    c10::impl::GenericDict out(key_type, c10::AnyType::get());
    for (const auto& [k, x] : d.items) out.insert_or_assign(convert(k, depth + 1), convert(x, depth + 1));
    return out;
  }

  c10::IValue convert(const pickle::Value& v, std::size_t depth) {
    if (depth > kMaxIValueDepth) fail("the value nests deeper than " + std::to_string(kMaxIValueDepth) + " levels");
    switch (v.kind()) {
      case pickle::Kind::none:
        return {};
      case pickle::Kind::boolean:
        return v.as_bool();
      case pickle::Kind::integer:
        return v.as_int();
      case pickle::Kind::floating:
        return v.as_float();
      case pickle::Kind::string:
        return v.as_str();
      case pickle::Kind::bytes:
        return v.as_bytes().data;  // IValue has no bytes; a std::string holds them
      case pickle::Kind::tensor:
        return tensor(v.as_tensor());
      case pickle::Kind::tuple: {
        std::vector<c10::IValue> items;
        for (const auto& x : v.as_tuple().items) items.push_back(convert(x, depth + 1));
        return c10::ivalue::Tuple::create(std::move(items));
      }
      case pickle::Kind::list:
      case pickle::Kind::dict: {
        if (const auto it = shared_.find(v.identity()); it != shared_.end()) return it->second;
        c10::IValue out;
        if (v.is(pickle::Kind::list)) {
          c10::impl::GenericList l(c10::AnyType::get());
          l.reserve(v.as_list().items.size());
          for (const auto& x : v.as_list().items) l.push_back(convert(x, depth + 1));
          out = l;
        } else {
          out = dict(v.as_dict(), depth);
        }
        shared_.emplace(v.identity(), out);
        return out;
      }
    }
    fail("unknown value kind");
  }
};

/// The file behind PyTorchStreamWriter's writer function. The writer computes each record's
/// CRC-32 before handing the record over, so the bytes go to the kernel on a second thread
/// while the next record's CRC is computed: saving costs max(CRC, write) instead of their sum.
/// Records in `stable` memory (storages, data.pkl: alive until finish) are written from where
/// they are; anything else (zip headers, miniz's own buffers, which it reuses) is copied first.
/// Small pieces are coalesced. After a failure further output is swallowed, so that the
/// writer's destructor (which finalizes the archive) cannot throw.
class FdSink {
 public:
  /// With `writeback`, each large piece is handed to the disk as soon as it is written
  /// (sync_file_range), so that a final fsync finds little left to flush.
  FdSink(const std::filesystem::path& file, bool writeback) : file_(file), writeback_(writeback) {
    fd_ = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd_ < 0) throw CheckpointError("dtl: checkpoint: cannot create " + file.string() + ": " + std::strerror(errno));
    try {
      io_ = std::thread([this] { drain(); });
    } catch (...) {
      ::close(fd_);
      throw;
    }
  }
  FdSink(const FdSink&) = delete;
  FdSink& operator=(const FdSink&) = delete;
  ~FdSink() {
    stop();
    if (fd_ >= 0) ::close(fd_);
  }

  /// Declares [data, data + n) alive and unchanged until finish(): written without a copy.
  void add_stable(const void* data, std::size_t n) { stable_[data] = std::max(stable_[data], n); }

  std::size_t write(const void* data, std::size_t n) {
    if (error_.load() != 0) return n;
    const auto* p = static_cast<const char*>(data);
    const auto it = n >= kDirect ? stable_.find(data) : stable_.end();
    if (it != stable_.end() && it->second >= n) {
      push_buffer();
      push(Chunk{p, n, {}});
    } else if (n >= kDirect) {
      push_buffer();
      push(Chunk{nullptr, 0, std::string(p, n)});
    } else {
      if (buf_.size() + n > kBuffer) push_buffer();
      buf_.append(p, n);
    }
    return n;
  }

  /// Waits for every byte to reach the kernel, optionally fsyncs, closes; throws on any error.
  void finish(bool sync) {
    push_buffer();
    stop();
    if (error_.load() == 0 && sync && ::fsync(fd_) != 0) error_ = errno;
    const int rc = ::close(fd_);
    fd_ = -1;
    if (error_.load() == 0 && rc != 0) error_ = errno;
    check();
  }

  /// Throws if a write failed so far.
  void check() const {
    if (const int e = error_.load(); e != 0)
      throw CheckpointError("dtl: checkpoint: cannot write " + file_.string() + ": " + std::strerror(e) +
                            " (disk full or read-only?)");
  }

  /// Makes every further write a no-op (used once the file is abandoned).
  void abandon() {
    int expected = 0;
    error_.compare_exchange_strong(expected, ECANCELED);
  }

 private:
  struct Chunk {
    const char* data;  // borrowed, or null when `owned` holds the bytes
    std::size_t size;
    std::string owned;
  };
  static constexpr std::size_t kBuffer = std::size_t{1} << 20;
  static constexpr std::size_t kDirect = std::size_t{64} << 10;
  std::filesystem::path file_;
  bool writeback_;
  int fd_ = -1;
  std::uint64_t written_ = 0;  // by the I/O thread
  std::atomic<int> error_{0};
  std::string buf_;
  std::unordered_map<const void*, std::size_t> stable_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Chunk> queue_;
  bool closing_ = false;
  std::thread io_;

  void push(Chunk c) {
    {
      std::lock_guard lock(mutex_);
      queue_.push_back(std::move(c));
    }
    cv_.notify_one();
  }
  void push_buffer() {
    if (buf_.empty()) return;
    push(Chunk{nullptr, 0, std::move(buf_)});
    buf_ = std::string();
  }
  void stop() {
    if (!io_.joinable()) return;
    {
      std::lock_guard lock(mutex_);
      closing_ = true;
    }
    cv_.notify_one();
    io_.join();
  }
  void drain() {
    for (;;) {
      Chunk c;
      {
        std::unique_lock lock(mutex_);
        cv_.wait(lock, [&] { return closing_ || !queue_.empty(); });
        if (queue_.empty()) return;
        c = std::move(queue_.front());
        queue_.pop_front();
      }
      const char* p = c.data ? c.data : c.owned.data();
      std::size_t n = c.data ? c.size : c.owned.size();
      const std::uint64_t start = written_, total = n;
      while (n > 0 && error_.load() == 0) {
        const ssize_t w = ::write(fd_, p, n);
        if (w < 0) {
          if (errno == EINTR) continue;
          abandon_with(errno);
          break;
        }
        p += w;
        n -= static_cast<std::size_t>(w);
        written_ += static_cast<std::uint64_t>(w);
      }
      // Start the disk write now; not waiting for it. Unsupported file systems just decline.
      if (writeback_ && total >= kDirect)
        (void)::sync_file_range(fd_, static_cast<off_t>(start), static_cast<off_t>(total), SYNC_FILE_RANGE_WRITE);
    }
  }
  void abandon_with(int e) {
    int expected = 0;
    error_.compare_exchange_strong(expected, e);
  }
};

[[nodiscard]] inline std::string without_backtrace(const c10::Error& e) { return e.what_without_backtrace(); }

}  // namespace impl

/// `v` in pickle form, with the storages its tensors use (each distinct storage once, keyed
/// "0", "1", ... in order of first use; non-CPU storages copied to the CPU whole). Accepts
/// None, bool, int, float, str, dense tensors of the dtypes storage_type_name knows, tuples,
/// lists and dicts with all-str or all-int keys (written as plain Python dicts). Throws
/// CheckpointError otherwise.
[[nodiscard]] inline PickledIValue to_pickle_value(const c10::IValue& v) { return impl::IValueToPickle().run(v); }

/// The IValue a pickle value describes: dicts become GenericDict with str keys (or int keys
/// when every key is an int, as in optimizer state), lists GenericList, tuples Tuple, bytes
/// std::string, and each tensor a view of the storage `storage_for` returns for its key
/// (called once per tensor; cache per key to keep views sharing memory). An OrderedDict's
/// attributes (a state_dict's `_metadata`) are dropped. Shared containers stay shared.
[[nodiscard]] inline c10::IValue from_pickle_value(const pickle::Value& v,
                                                   std::function<c10::Storage(const pickle::TensorRef&)> storage_for) {
  return impl::PickleToIValue(std::move(storage_for)).run(v);
}

// Declared and documented in torch_save.hpp.
DTL_INLINE void save_pickle_archive(const c10::IValue& v, const std::filesystem::path& file, bool sync) {
  const PickledIValue p = to_pickle_value(v);
  const std::string pkl = pickle::dump(p.value);
  // Python writes storage records in sorted key order ("0", "1", "10", "2", ...).
  std::vector<const SavedStorage*> order;
  for (const auto& s : p.storages) order.push_back(&s);
  std::sort(order.begin(), order.end(), [](const auto* a, const auto* b) { return a->key < b->key; });

  impl::FdSink sink(file, /*writeback=*/sync);
  sink.add_stable(pkl.data(), pkl.size());
  for (const auto& st : p.storages)
    if (st.nbytes > 0) sink.add_stable(st.storage.data(), st.nbytes);
  try {
    caffe2::serialize::PyTorchStreamWriter writer(
        [&sink](const void* data, std::size_t n) { return sink.write(data, n); });
    try {
      writer.writeRecord("data.pkl", pkl.data(), pkl.size());
      sink.check();
      static const char empty = 0;
      for (const auto* s : order) {
        const void* data = s->nbytes == 0 ? &empty : s->storage.data();
        writer.writeRecord("data/" + s->key, data, s->nbytes);
        sink.check();
      }
      writer.writeEndOfFile();
      sink.check();
    } catch (...) {
      sink.abandon();  // the writer's destructor finalizes into the void, and cannot throw
      throw;
    }
    sink.finish(sync);
  } catch (const c10::Error& e) {
    std::error_code ec;
    std::filesystem::remove(file, ec);
    throw CheckpointError("dtl: checkpoint: cannot write " + file.string() + ": " + impl::without_backtrace(e));
  } catch (...) {
    std::error_code ec;
    std::filesystem::remove(file, ec);
    throw;
  }
}

// Declared and documented in torch_save.hpp.
DTL_INLINE c10::IValue load_pickle_archive(const std::filesystem::path& file) {
  const std::string where = "dtl: checkpoint " + file.string() + ": ";
  {
    std::ifstream in(file, std::ios::binary);
    if (!in) {
      std::error_code ec;
      throw CheckpointError(where + (std::filesystem::exists(file, ec) ? "cannot be opened" : "does not exist"));
    }
    char magic[4] = {};
    in.read(magic, 4);
    if (in.gcount() >= 2 && static_cast<unsigned char>(magic[0]) == 0x80 && static_cast<unsigned char>(magic[1]) <= 5)
      throw CheckpointError(where +
                            "is in torch's legacy (pre-1.6) format, which dtl does not read; re-save it in Python "
                            "with torch.save(torch.load(path), path, _use_new_zipfile_serialization=True)");
    if (in.gcount() < 4 || std::memcmp(magic, "PK\x03\x04", 4) != 0)
      throw CheckpointError(where + "is not a torch.save file (no zip header; empty, truncated or another format)");
  }
  try {
    caffe2::serialize::PyTorchStreamReader reader(file.string());
    if (!reader.hasRecord("data.pkl"))
      throw CheckpointError(where + "has no data.pkl record (not written by torch.save?)");
    const auto crcs = zip_record_crcs(file, where);  // every record read is checked against its CRC-32
    // The small records beside the data (version, byteorder, .data/version, serialization_id):
    // the reader has already parsed the version, but a flipped bit there must be named too.
    for (const auto& name : reader.getAllRecords()) {
      if (name == "data.pkl" || name.starts_with("data/")) continue;
      auto [ptr, size] = reader.getRecord(name);
      verify_record_crc(crcs, name, ptr.get(), size, where);
    }
    auto [pkl_ptr, pkl_size] = reader.getRecord("data.pkl");
    verify_record_crc(crcs, "data.pkl", pkl_ptr.get(), pkl_size, where);
    pickle::Value value;
    try {
      value = pickle::load(std::string_view(static_cast<const char*>(pkl_ptr.get()), pkl_size));
    } catch (const CheckpointError& e) {
      throw CheckpointError(where + "data.pkl: " + e.what());
    }
    std::unordered_map<std::string, c10::Storage> storages;
    const auto storage_for = [&](const pickle::TensorRef& r) -> c10::Storage {
      if (const auto it = storages.find(r.storage_key); it != storages.end()) return it->second;
      const std::string name = "data/" + r.storage_key;
      const std::string shown = pickle::impl::printable(name);
      if (!reader.hasRecord(name))
        throw CheckpointError(where + "the record " + shown + " that a tensor needs is missing (truncated file?)");
      const auto elem = static_cast<std::uint64_t>(pickle::storage_element_size(r.storage_type));
      std::uint64_t need = 0;
      if (__builtin_mul_overflow(static_cast<std::uint64_t>(r.storage_numel), elem, &need))
        throw CheckpointError(where + shown + " declares an impossible size");
      auto [ptr, size] = reader.getRecord(name);
      verify_record_crc(crcs, name, ptr.get(), size, where);
      if (size < need)
        throw CheckpointError(where + "the record " + shown + " holds " + std::to_string(size) + " bytes but its " +
                              r.storage_type + " of " + std::to_string(r.storage_numel) + " elements needs " +
                              std::to_string(need) + " (truncated or corrupt file)");
      // The record's buffer becomes the storage: no copy.
      c10::Storage s(c10::Storage::use_byte_size_t(), static_cast<std::size_t>(need), std::move(ptr), nullptr, false);
      storages.emplace(r.storage_key, s);
      return s;
    };
    return from_pickle_value(value, storage_for);
  } catch (const c10::Error& e) {
    throw CheckpointError(where + "cannot be read as a torch zip archive: " + impl::without_backtrace(e));
  }
}

}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_CHECKPOINT_TORCH_SAVE_INL_HPP
