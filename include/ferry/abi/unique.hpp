// Move-only RAII owners for the Arrow C structs.
#pragma once

#include <cstring>
#include <utility>

#include "ferry/abi/arrow_c_abi.h"
#include "ferry/abi/device_abi.h"

namespace ferry {

/// Per-struct hooks used by Unique<T>: how to test, release and mark a struct released.
template <typename T>
struct CStructTraits;

template <>
struct CStructTraits<ArrowSchema> {
  static bool is_released(const ArrowSchema& s) noexcept { return s.release == nullptr; }
  static void mark_released(ArrowSchema& s) noexcept { s.release = nullptr; }
};

template <>
struct CStructTraits<ArrowArray> {
  static bool is_released(const ArrowArray& s) noexcept { return s.release == nullptr; }
  static void mark_released(ArrowArray& s) noexcept { s.release = nullptr; }
};

template <>
struct CStructTraits<ArrowArrayStream> {
  static bool is_released(const ArrowArrayStream& s) noexcept { return s.release == nullptr; }
  static void mark_released(ArrowArrayStream& s) noexcept { s.release = nullptr; }
};

template <>
struct CStructTraits<ArrowDeviceArray> {
  static bool is_released(const ArrowDeviceArray& s) noexcept { return s.array.release == nullptr; }
  static void mark_released(ArrowDeviceArray& s) noexcept { s.array.release = nullptr; }
};

template <>
struct CStructTraits<ArrowDeviceArrayStream> {
  static bool is_released(const ArrowDeviceArrayStream& s) noexcept { return s.release == nullptr; }
  static void mark_released(ArrowDeviceArrayStream& s) noexcept { s.release = nullptr; }
};

template <>
struct CStructTraits<FerryDevice> {
  static bool is_released(const FerryDevice& s) noexcept { return s.release == nullptr; }
  static void mark_released(FerryDevice& s) noexcept { s.release = nullptr; }
};

template <>
struct CStructTraits<FerryBuffer> {
  static bool is_released(const FerryBuffer& s) noexcept { return s.release == nullptr; }
  static void mark_released(FerryBuffer& s) noexcept { s.release = nullptr; }
};

namespace detail {
inline void release_struct(FerryDevice& s) noexcept { s.release(&s); }
inline void release_struct(FerryBuffer& s) noexcept { s.release(&s); }
inline void release_struct(ArrowSchema& s) noexcept { s.release(&s); }
inline void release_struct(ArrowArray& s) noexcept { s.release(&s); }
inline void release_struct(ArrowArrayStream& s) noexcept { s.release(&s); }
inline void release_struct(ArrowDeviceArray& s) noexcept { s.array.release(&s.array); }
inline void release_struct(ArrowDeviceArrayStream& s) noexcept { s.release(&s); }
}  // namespace detail

/// A move-only owner of one Arrow C struct held by value. It releases the struct once when
/// destroyed; moving (in C++ or through move_to) transfers the struct and marks the source
/// released. Costs nothing beyond a struct copy.
template <typename T>
class Unique {
 public:
  Unique() noexcept { std::memset(&value_, 0, sizeof(T)); }
  /// Take ownership of `*source` by moving it; `*source` is marked released.
  explicit Unique(T* source) noexcept {
    std::memcpy(&value_, source, sizeof(T));
    CStructTraits<T>::mark_released(*source);
  }
  Unique(const Unique&) = delete;
  Unique& operator=(const Unique&) = delete;
  // Every byte is copied from `other`: nothing to zero first.
  Unique(Unique&& other) noexcept {
    std::memcpy(&value_, &other.value_, sizeof(T));
    CStructTraits<T>::mark_released(other.value_);
  }
  Unique& operator=(Unique&& other) noexcept {
    if (this != &other) {
      reset();
      std::memcpy(&value_, &other.value_, sizeof(T));
      CStructTraits<T>::mark_released(other.value_);
    }
    return *this;
  }
  // A struct that goes is released, not zeroed (reset zeroes it for its next use).
  ~Unique() {
    if (valid()) detail::release_struct(value_);
  }

  /// The struct, for reading or for a producer to fill (when released).
  T* get() noexcept { return &value_; }
  const T* get() const noexcept { return &value_; }
  T* operator->() noexcept { return &value_; }
  const T* operator->() const noexcept { return &value_; }

  /// Whether a live (not released) struct is held.
  bool valid() const noexcept { return !CStructTraits<T>::is_released(value_); }
  explicit operator bool() const noexcept { return valid(); }

  /// Release the held struct now, if any.
  void reset() noexcept {
    if (valid()) detail::release_struct(value_);
    std::memset(&value_, 0, sizeof(T));
  }
  /// Move the held struct into `*out` (which must be released or uninitialised).
  void move_to(T* out) noexcept {
    std::memcpy(out, &value_, sizeof(T));
    CStructTraits<T>::mark_released(value_);
  }

 private:
  T value_;
};

using UniqueSchema = Unique<ArrowSchema>;
using UniqueArray = Unique<ArrowArray>;
using UniqueArrayStream = Unique<ArrowArrayStream>;
using UniqueDeviceArray = Unique<ArrowDeviceArray>;
using UniqueDeviceArrayStream = Unique<ArrowDeviceArrayStream>;
/// Owner of a caller-initialised FerryDevice (e.g. FerryDeviceInitCpu); releases it once.
using UniqueDevice = Unique<FerryDevice>;
/// Owner of a device buffer; releasing frees the memory through its device.
using UniqueBuffer = Unique<FerryBuffer>;

}  // namespace ferry
