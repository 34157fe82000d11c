// dtl — specialization_of: whether a type is an instance of a class template
// (`specialization_of<std::shared_ptr<M>, std::shared_ptr>`), one trait for every such question.
#ifndef DTL_DETAIL_SPECIALIZATION_OF_HPP
#define DTL_DETAIL_SPECIALIZATION_OF_HPP

#include <dtl/detail/abi.hpp>

namespace dtl {
inline namespace DTL_ABI {
namespace detail {
template <class T, template <class...> class Template>
inline constexpr bool specialization_of = false;
template <template <class...> class Template, class... Args>
inline constexpr bool specialization_of<Template<Args...>, Template> = true;
}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_DETAIL_SPECIALIZATION_OF_HPP
