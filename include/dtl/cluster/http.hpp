// dtl — HTTP for the cluster client: one request at a time over libcurl (Debian's libcurl4, the
// OpenSSL flavour), with the master's TLS rules. Built only with DTL_WITH_CLUSTER (meson finds
// libcurl); without it every request is an error that says how to get cluster support.
#ifndef DTL_CLUSTER_HTTP_HPP
#define DTL_CLUSTER_HTTP_HPP

#include <dtl/detail/compiled_lib.hpp>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace dtl {
inline namespace DTL_ABI {
namespace detail {

/// Whether this dtl was built with the cluster client (libcurl).
#ifdef DTL_WITH_CLUSTER
inline constexpr bool built_with_cluster = true;
#else
inline constexpr bool built_with_cluster = false;
#endif

struct HttpResponse {
  long status = 0;    ///< the HTTP status; 0 when no answer came
  std::string body;
  std::string error;  ///< why no answer came (refused, timed out, TLS), empty otherwise
  bool permanent = false;  ///< an error no retry mends: the master's certificate failed verification
  [[nodiscard]] bool ok() const noexcept { return error.empty() && status >= 200 && status < 300; }
  /// Worth sending again: no answer (but a certificate that does not verify), or the master busy
  /// or restarting (5xx, 429).
  [[nodiscard]] bool transient() const noexcept {
    return (!error.empty() && !permanent) || status >= 500 || status == 429;
  }
  [[nodiscard]] std::string describe() const {
    if (!error.empty()) return error;
    return "HTTP " + std::to_string(status) + (body.empty() ? "" : ": " + body.substr(0, 300));
  }
};

struct HttpOptions {
  std::string base_url;              ///< scheme://host:port, no trailing slash
  std::vector<std::string> headers;  ///< "Name: value" on every request
  std::string cert_file;             ///< a CA/certificate file to trust, or "noverify"
  std::string cert_name;             ///< the name the master's certificate is checked against
};

/// One connection's worth of state (a libcurl easy handle, reused between requests); one per
/// thread.
class HttpClient {
 public:
  DTL_INLINE explicit HttpClient(HttpOptions options);
  DTL_INLINE ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;
  /// `method` base_url+`path` with `body` (JSON) when not null; gives up after `timeout`, or as
  /// soon as `*cancel` turns true.
  DTL_INLINE HttpResponse request(std::string_view method, const std::string& path, const std::string* body,
                                  std::chrono::milliseconds timeout, const std::atomic<bool>* cancel = nullptr);

 private:
  HttpOptions opts_;
  void* curl_ = nullptr;
  void* header_list_ = nullptr;
  std::string url_base_;     // base_url with its host replaced by cert_name
  std::string connect_to_;   // cert_name:port:host:port, when cert_name is set
};

}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

#ifndef DTL_COMPILED_LIB
#include <dtl/cluster/http-inl.hpp>
#endif

#endif  // DTL_CLUSTER_HTTP_HPP
