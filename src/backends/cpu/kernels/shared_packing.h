// Packings of constant weights shared by every product that reads the same
// constant. An unrolled recurrence has one product per time step on the
// same weights, and a decoder's prompt and step programs (and the shapes a
// session compiles besides) read the same weights: a copy for each made
// each read its weights from memory again, or held the weights once per
// program. A packing is found by its constant's address and the product's
// dimensions: a packing in use keeps its executable, and so its constant,
// alive, so no other constant can be at that address meanwhile.
#ifndef XONNX_BACKENDS_CPU_KERNELS_SHARED_PACKING_H_
#define XONNX_BACKENDS_CPU_KERNELS_SHARED_PACKING_H_

#include <algorithm>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace xonnx::cpu {

// The live packing made for `key` (compared with ==) of which same(packing)
// holds, or make()'s, kept for the next caller while anything holds it.
// `same` checks what the key cannot name: values of other constants that
// a program may have copied to an address of its own. make() may return
// null (no packing applies); null is not kept.
template <typename T, typename Key, typename Make, typename Same>
std::shared_ptr<T> SharedPacking(const Key& key, Make make, Same same) {
  struct Entry {
    Key key;
    std::weak_ptr<T> packed;
  };
  static std::mutex mu;
  static auto* entries = new std::vector<Entry>;  // never destroyed: used until exit
  std::lock_guard<std::mutex> l(mu);
  for (const Entry& e : *entries)
    if (e.key == key)
      if (std::shared_ptr<T> p = e.packed.lock(); p && same(*p)) return p;
  std::erase_if(*entries, [](const Entry& e) { return e.packed.expired(); });
  std::shared_ptr<T> p = make();
  if (p) entries->push_back({key, p});
  return p;
}

template <typename T, typename Key, typename Make>
std::shared_ptr<T> SharedPacking(const Key& key, Make make) {
  return SharedPacking<T>(key, make, [](const T&) { return true; });
}

}  // namespace xonnx::cpu

#endif  // XONNX_BACKENDS_CPU_KERNELS_SHARED_PACKING_H_
