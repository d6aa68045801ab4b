// Whether the including translation unit is built under AddressSanitizer or ThreadSanitizer, for
// code and tests that must step aside under them (a recycled allocation hides a use after free
// from ASan). GCC defines __SANITIZE_ADDRESS__ and __SANITIZE_THREAD__; Clang answers
// __has_feature. FERRY_ASAN and FERRY_TSAN are each 1 or 0.
#pragma once

#if defined(__SANITIZE_ADDRESS__)
#define FERRY_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FERRY_ASAN 1
#endif
#endif
#ifndef FERRY_ASAN
#define FERRY_ASAN 0
#endif

#if defined(__SANITIZE_THREAD__)
#define FERRY_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define FERRY_TSAN 1
#endif
#endif
#ifndef FERRY_TSAN
#define FERRY_TSAN 0
#endif
