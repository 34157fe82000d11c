// dtl — the non-template definitions of <dtl/cluster/http.hpp>; see detail/compiled_lib.hpp.
#ifndef DTL_CLUSTER_HTTP_INL_HPP
#define DTL_CLUSTER_HTTP_INL_HPP

#include <dtl/cluster/http.hpp>

#include <dtl/errors.hpp>

#include <mutex>
#include <utility>

#ifdef DTL_WITH_CLUSTER
#include <curl/curl.h>
#endif

namespace dtl {
inline namespace DTL_ABI {
namespace detail {

#ifdef DTL_WITH_CLUSTER

namespace http_detail {

inline std::size_t append_body(char* data, std::size_t size, std::size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

inline int cancel_check(void* flag, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  const auto* cancel = static_cast<const std::atomic<bool>*>(flag);
  return cancel && cancel->load(std::memory_order_relaxed) ? 1 : 0;
}

/// scheme://host:port split, for DET_MASTER_CERT_NAME.
struct UrlParts {
  std::string scheme, host, port;
};
inline UrlParts split_url(const std::string& url) {
  UrlParts p;
  auto s = url.find("://");
  p.scheme = url.substr(0, s);
  auto rest = url.substr(s + 3);
  rest = rest.substr(0, rest.find('/'));
  if (auto c = rest.rfind(':'); c != std::string::npos && rest.find(']', c) == std::string::npos) {
    p.host = rest.substr(0, c);
    p.port = rest.substr(c + 1);
  } else {
    p.host = rest;
    p.port = p.scheme == "https" ? "443" : "80";
  }
  return p;
}

}  // namespace http_detail

DTL_INLINE HttpClient::HttpClient(HttpOptions options) : opts_(std::move(options)) {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  curl_ = curl_easy_init();
  if (!curl_) throw std::runtime_error("dtl: libcurl could not create a handle (out of memory?)");
  curl_slist* list = nullptr;
  for (const auto& h : opts_.headers) list = curl_slist_append(list, h.c_str());
  header_list_ = list;
  url_base_ = opts_.base_url;
  if (!opts_.cert_name.empty() && opts_.cert_file != "noverify") {
    // Verify the certificate against cert_name while connecting to the real host.
    const auto p = http_detail::split_url(opts_.base_url);
    url_base_ = p.scheme + "://" + opts_.cert_name + ":" + p.port;
    connect_to_ = opts_.cert_name + ":" + p.port + ":" + p.host + ":" + p.port;
  }
}

DTL_INLINE HttpClient::~HttpClient() {
  if (header_list_) curl_slist_free_all(static_cast<curl_slist*>(header_list_));
  if (curl_) curl_easy_cleanup(static_cast<CURL*>(curl_));
}

DTL_INLINE HttpResponse HttpClient::request(std::string_view method, const std::string& path, const std::string* body,
                                            std::chrono::milliseconds timeout, const std::atomic<bool>* cancel) {
  auto* c = static_cast<CURL*>(curl_);
  curl_easy_reset(c);
  HttpResponse r;
  const std::string url = url_base_ + path;
  const std::string verb(method);
  char errbuf[CURL_ERROR_SIZE] = {0};
  curl_slist* connect_to = nullptr;
  if (!connect_to_.empty()) connect_to = curl_slist_append(nullptr, connect_to_.c_str());
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, verb.c_str());
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, static_cast<curl_slist*>(header_list_));
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout.count()));
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(std::min<long>(timeout.count(), 10000)));
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, &http_detail::append_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &r.body);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
  if (verb == "GET") curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
  if (body) {
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body->data());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body->size()));
  } else if (verb == "POST") {
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, "");
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(0));
  }
  if (cancel) {
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, &http_detail::cancel_check);
    curl_easy_setopt(c, CURLOPT_XFERINFODATA, const_cast<std::atomic<bool>*>(cancel));
  }
  if (opts_.cert_file == "noverify") {
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
  } else if (!opts_.cert_file.empty()) {
    curl_easy_setopt(c, CURLOPT_CAINFO, opts_.cert_file.c_str());
  }
  if (connect_to) curl_easy_setopt(c, CURLOPT_CONNECT_TO, connect_to);
  const CURLcode rc = curl_easy_perform(c);
  if (connect_to) curl_slist_free_all(connect_to);
  if (rc != CURLE_OK) {
    r.error = std::string(method) + " " + url + ": " + (errbuf[0] ? errbuf : curl_easy_strerror(rc));
    if (rc == CURLE_PEER_FAILED_VERIFICATION || rc == CURLE_SSL_CACERT_BADFILE || rc == CURLE_SSL_CERTPROBLEM) {
      r.permanent = true;
      r.error += " (the master's TLS certificate: DET_MASTER_CERT_FILE names the certificate to trust, or "
                 "noverify; DET_MASTER_CERT_NAME the name it is issued to)";
    }
    return r;
  }
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
  return r;
}

#else  // !DTL_WITH_CLUSTER

DTL_INLINE HttpClient::HttpClient(HttpOptions options) : opts_(std::move(options)) {
  throw ConfigError(
      "dtl: this program runs in a Determined trial container, but its dtl was built without the "
      "cluster client (libcurl was not found at build time): install libcurl4-openssl-dev and "
      "rebuild (meson -Dcluster=enabled), or unset DET_MASTER and DET_TRIAL_ID to train without "
      "the master");
}
DTL_INLINE HttpClient::~HttpClient() = default;
DTL_INLINE HttpResponse HttpClient::request(std::string_view, const std::string&, const std::string*,
                                            std::chrono::milliseconds, const std::atomic<bool>*) {
  return {.status = 0, .body = {}, .error = "dtl was built without the cluster client"};
}

#endif

}  // namespace detail
}  // namespace DTL_ABI
}  // namespace dtl

#endif  // DTL_CLUSTER_HTTP_INL_HPP
