// dtl — before an exception from the trial's code leaves fit: which hook threw, at which batch
// (its message alone rarely says), on stderr of every rank. The exception goes on unchanged.
#ifndef DTL_TRAINER_SAY_WHERE_HPP
#define DTL_TRAINER_SAY_WHERE_HPP

#include <dtl/detail/abi.hpp>

#include <dtl/distributed/distributed_context.hpp>

#include <exception>
#include <iostream>
#include <string>

namespace dtl {
inline namespace DTL_ABI {
namespace detail {

inline void say_where(const DistributedContext& dist, const std::exception& e, const std::string& where) {
  std::string what = e.what();
  what = what.substr(0, what.find('\n'));
  std::cerr << "dtl: " << where << (dist.size > 1 ? " on rank " + std::to_string(dist.rank) : std::string()) << ": "
            << what << std::endl;
}

}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_TRAINER_SAY_WHERE_HPP
