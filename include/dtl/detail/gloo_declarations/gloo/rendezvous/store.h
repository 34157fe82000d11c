// dtl: what c10d's ProcessGroupGloo.hpp names of Gloo's gloo/rendezvous/store.h (see
// ../../README.md): the interface its GlooStore adapter overrides. GLOO_STORE_HAS_STORE_V2 stays
// undefined, so the adapter's newer overrides are left out; dtl never constructs a GlooStore.
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace gloo::rendezvous {

class Store {
 public:
  virtual ~Store() = default;
  virtual void set(const std::string& key, const std::vector<char>& data) = 0;
  virtual std::vector<char> get(const std::string& key) = 0;
  virtual void wait(const std::vector<std::string>& keys) = 0;
  virtual void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) = 0;
};

}  // namespace gloo::rendezvous
