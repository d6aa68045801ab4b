// The exporter registry: which function turns an object of a given type into a MemoryView.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <typeindex>
#include <unordered_map>

#include "ferry/abi/export.h"
#include "ferry/core/result.hpp"
#include "ferry/memview/memory_view.hpp"

namespace ferry::memview {

/// How one type exports memory views. `get` fills a view of `object` honouring `flags` (or fails
/// naming what it cannot do); `release` (optional) undoes what `get` allocated; `available`
/// (optional) says cheaply whether `get` could succeed.
struct FERRY_EXPORT Exporter {
  std::function<Status(const void* object, int32_t flags, MemoryView* out)> get;
  std::function<void(MemoryView* view)> release;
  std::function<bool(const void* object)> available;
};

/// A thread-safe map from C++ types (and, for the C surface, string tags) to exporters. Lookups
/// follow declared base types. The registry counts the views handed out per object; releasing a
/// view is idempotent and may happen on any thread. Views keep no lock.
class FERRY_EXPORT ExporterRegistry {
 public:
  /// The process-wide registry.
  static ExporterRegistry& Global();

  /// Register (or replace) the exporter of C++ type `type`.
  void Register(std::type_index type, Exporter exporter);
  /// Register (or replace) the exporter of a C type tag.
  void RegisterTag(const std::string& tag, Exporter exporter);
  /// Declare that `derived` objects are also `base` objects, for lookups.
  void DeclareBase(std::type_index derived, std::type_index base);

  /// Export `object` of `type`, following base types when `type` has no exporter of its own.
  Result<MemoryView> Get(std::type_index type, const void* object, int32_t flags);
  /// Export through a tag's exporter.
  Result<MemoryView> GetByTag(const std::string& tag, const void* object, int32_t flags);
  /// Whether an exporter exists for `type` (or a base) and says it can export `object`.
  bool Available(std::type_index type, const void* object);
  /// Whether an exporter is registered for `tag` and says it can export `object`.
  bool AvailableByTag(const std::string& tag, const void* object);
  /// Release a view handed out by this registry. A second release is a no-op; a view the
  /// registry did not hand out is an error.
  Status Release(MemoryView* view);
  /// Views of `object` handed out and not yet released.
  int64_t ExportCount(const void* object) const;

  template <typename T>
  void Register(Exporter exporter) {
    Register(std::type_index(typeid(T)), std::move(exporter));
  }
  template <typename T>
  Result<MemoryView> Get(const T& object, int32_t flags) {
    return Get(std::type_index(typeid(T)), &object, flags);
  }
  template <typename Derived, typename Base>
  void DeclareBase() {
    DeclareBase(std::type_index(typeid(Derived)), std::type_index(typeid(Base)));
  }

 private:
  struct Token;
  const Exporter* Find(std::type_index type) const;  // caller holds mu_
  Result<MemoryView> Export(const Exporter& exporter, const void* object, int32_t flags);

  mutable std::mutex mu_;
  std::unordered_map<std::type_index, Exporter> by_type_;
  std::unordered_map<std::string, Exporter> by_tag_;
  std::unordered_map<std::type_index, std::type_index> bases_;
  std::unordered_map<const void*, int64_t> counts_;
};

}  // namespace ferry::memview
