// dtl — torch_compat.hpp's part for c10d: what differs between LibTorch versions in process
// groups. Included by the -inl.hpp files of distributed/ alone: a trial's translation unit does not
// parse c10d (distributed_context.hpp names its types by forward declaration).
#ifndef DTL_DETAIL_TORCH_COMPAT_C10D_HPP
#define DTL_DETAIL_TORCH_COMPAT_C10D_HPP

#include <dtl/detail/abi.hpp>
#include <dtl/detail/torch_compat.hpp>

#include <torch/torch.h>

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>

namespace dtl {
inline namespace DTL_ABI {
namespace detail {
namespace compat {

/// What runs collectives. In 2.x a process group dispatches to per-device backends and
/// ProcessGroupGloo/ProcessGroupNCCL are such backends (c10d::Backend); in 1.13 they are process
/// groups themselves. Both have the same allreduce/broadcast/allgather/barrier calls.
#if DTL_TORCH_2
using CollectiveGroup = c10d::Backend;
#else
using CollectiveGroup = c10d::ProcessGroup;
#endif

/// A c10d::ProcessGroup that runs collectives on CPU tensors on `cpu` (Gloo) and on CUDA tensors
/// on `cuda` (NCCL) when given, for users who want one. In 1.13 a process group is one backend:
/// `cpu` itself.
inline c10::intrusive_ptr<c10d::ProcessGroup> as_process_group(const c10::intrusive_ptr<CollectiveGroup>& cpu,
                                                                const c10::intrusive_ptr<CollectiveGroup>& cuda,
                                                                const c10::intrusive_ptr<c10d::Store>& store) {
#if DTL_TORCH_2
  using Type = c10d::ProcessGroup::BackendType;
  auto pg = c10::make_intrusive<c10d::ProcessGroup>(store, cpu->getRank(), cpu->getSize());
  pg->setBackend(c10::kCPU, Type::GLOO, cpu);
  if (cuda) pg->setBackend(c10::kCUDA, Type::NCCL, cuda);
  pg->setDefaultBackend(cuda ? Type::NCCL : Type::GLOO);
  return pg;
#else
  (void)cuda, (void)store;
  return cpu;
#endif
}

}  // namespace compat
}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_DETAIL_TORCH_COMPAT_C10D_HPP
