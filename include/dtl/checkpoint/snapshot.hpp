// dtl — a snapshot of a state dict: the same tree of dicts, lists and tuples, its tensors copied
// into memory of their own, so that a checkpoint can be written in the background while training
// goes on and updates the live tensors in place.
#ifndef DTL_CHECKPOINT_SNAPSHOT_HPP
#define DTL_CHECKPOINT_SNAPSHOT_HPP

#include <dtl/detail/abi.hpp>

#include <torch/torch.h>

#include <ATen/core/Dict.h>
#include <ATen/core/List.h>

#include <unordered_map>
#include <vector>

namespace dtl {
inline namespace DTL_ABI {
namespace detail {

namespace impl {

class TensorSnapshot {
 public:
  c10::IValue run(const c10::IValue& v) {
    if (v.isTensor()) return copy(v.toTensor());
    if (v.isGenericDict()) {
      const auto d = v.toGenericDict();
      c10::impl::GenericDict out(d.keyType(), d.valueType());
      out.reserve(d.size());
      for (const auto& e : d) out.insert(e.key(), run(e.value()));
      return out;
    }
    if (v.isList()) {
      const auto l = v.toList();
      c10::impl::GenericList out(l.elementType());
      out.reserve(l.size());
      for (const c10::IValue& e : l) out.push_back(run(e));
      return out;
    }
    if (v.isTuple()) {
      const auto& elements = v.toTupleRef().elements();
      std::vector<c10::IValue> out;
      out.reserve(elements.size());
      for (const auto& e : elements) out.push_back(run(e));
      return c10::ivalue::Tuple::create(std::move(out));
    }
    return v;  // None, numbers, strings: immutable
  }

 private:
  at::Tensor copy(const at::Tensor& t) {
    if (!t.defined()) return t;
    if (!t.has_storage()) return t.detach().clone();  // sparse and other storage-less layouts
    const c10::Storage& s = t.storage();
    auto it = storages_.find(s.unsafeGetStorageImpl());
    if (it == storages_.end()) {
      // The whole storage, once: tensors that shared it (tied weights, views) share the copy,
      // so the file written from the snapshot is the file the live state would have given.
      const auto nbytes = static_cast<std::int64_t>(s.nbytes());
      auto bytes = at::empty({0}, at::TensorOptions().dtype(at::kByte).device(s.device()));
      bytes.set_(s, 0, {nbytes}, {1});
      it = storages_.emplace(s.unsafeGetStorageImpl(), bytes.clone().storage()).first;
    }
    return at::empty({0}, t.options()).set_(it->second, t.storage_offset(), t.sizes(), t.strides());
  }

  std::unordered_map<const c10::StorageImpl*, c10::Storage> storages_;
};

}  // namespace impl

/// `v` with every tensor copied (detached, in memory of its own); containers are rebuilt with the
/// same key and element types, storage sharing between tensors is kept.
[[nodiscard]] inline c10::IValue snapshot_tensors(const c10::IValue& v) { return impl::TensorSnapshot().run(v); }

}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

#endif
