// The exporter registry.
#include "ferry/memview/registry.hpp"

#include <atomic>

namespace ferry::memview {

// What the registry attaches to each view it hands out.
struct ExporterRegistry::Token {
  const void* object = nullptr;
  std::function<void(MemoryView*)> release;
  std::atomic<bool> released{false};
};

ExporterRegistry& ExporterRegistry::Global() {
  static ExporterRegistry registry;
  return registry;
}

void ExporterRegistry::Register(std::type_index type, Exporter exporter) {
  std::lock_guard<std::mutex> lock(mu_);
  by_type_.insert_or_assign(type, std::move(exporter));
}

void ExporterRegistry::RegisterTag(const std::string& tag, Exporter exporter) {
  std::lock_guard<std::mutex> lock(mu_);
  by_tag_.insert_or_assign(tag, std::move(exporter));
}

void ExporterRegistry::DeclareBase(std::type_index derived, std::type_index base) {
  std::lock_guard<std::mutex> lock(mu_);
  bases_.insert_or_assign(derived, base);
}

const Exporter* ExporterRegistry::Find(std::type_index type) const {
  // Walk up declared bases; the bound stops a cycle someone declared by mistake.
  for (int hops = 0; hops < 64; ++hops) {
    auto it = by_type_.find(type);
    if (it != by_type_.end()) return &it->second;
    auto base = bases_.find(type);
    if (base == bases_.end()) return nullptr;
    type = base->second;
  }
  return nullptr;
}

Result<MemoryView> ExporterRegistry::Export(const Exporter& exporter, const void* object,
                                            int32_t flags) {
  if (!exporter.get) return Status::Invalid("memory view exporter has no get function");
  MemoryView view;
  FERRY_RETURN_NOT_OK(exporter.get(object, flags, &view));
  Status conformed = ConformToRequest(&view, flags);
  if (!conformed.ok()) {
    if (exporter.release) exporter.release(&view);
    return conformed;
  }
  auto token = std::make_shared<Token>();
  token->object = object;
  token->release = exporter.release;
  view.export_token = token;
  std::lock_guard<std::mutex> lock(mu_);
  ++counts_[object];
  return view;
}

Result<MemoryView> ExporterRegistry::Get(std::type_index type, const void* object, int32_t flags) {
  Exporter exporter;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const Exporter* found = Find(type);
    if (found == nullptr) {
      return Status::NotSupported(std::string("no memory view exporter is registered for ") +
                                  type.name());
    }
    exporter = *found;
  }
  return Export(exporter, object, flags);
}

Result<MemoryView> ExporterRegistry::GetByTag(const std::string& tag, const void* object,
                                              int32_t flags) {
  Exporter exporter;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = by_tag_.find(tag);
    if (it == by_tag_.end()) {
      return Status::NotSupported("no memory view exporter is registered for tag \"" + tag + "\"");
    }
    exporter = it->second;
  }
  return Export(exporter, object, flags);
}

bool ExporterRegistry::Available(std::type_index type, const void* object) {
  Exporter exporter;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const Exporter* found = Find(type);
    if (found == nullptr) return false;
    exporter = *found;
  }
  return !exporter.available || exporter.available(object);
}

bool ExporterRegistry::AvailableByTag(const std::string& tag, const void* object) {
  Exporter exporter;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = by_tag_.find(tag);
    if (it == by_tag_.end()) return false;
    exporter = it->second;
  }
  return !exporter.available || exporter.available(object);
}

Status ExporterRegistry::Release(MemoryView* view) {
  if (view == nullptr) return Status::Invalid("memory view is NULL");
  auto token = std::static_pointer_cast<Token>(view->export_token);
  if (token == nullptr) {
    return Status::Invalid("memory view was not handed out by this registry (or was moved from)");
  }
  if (token->released.exchange(true)) return Status::OK();  // released before: nothing to do
  if (token->release) token->release(view);
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = counts_.find(token->object);
    if (it != counts_.end() && --it->second == 0) counts_.erase(it);
  }
  view->owner.reset();
  view->private_data.reset();
  return Status::OK();
}

int64_t ExporterRegistry::ExportCount(const void* object) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = counts_.find(object);
  return it == counts_.end() ? 0 : it->second;
}

}  // namespace ferry::memview
