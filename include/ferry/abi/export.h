/* FERRY_EXPORT marks what libferry.so exports. The library is compiled with hidden visibility,
 * so only the C surface (Ferry*) and the public C++ API that carries this macro become dynamic
 * symbols; everything else (internals, flatbuffers, UCX glue) stays inside. Plain C. */
#ifndef FERRY_ABI_EXPORT_H
#define FERRY_ABI_EXPORT_H

#if defined(__GNUC__) || defined(__clang__)
#define FERRY_EXPORT __attribute__((visibility("default")))
/* For the private parts of an exported class (its pimpl), which would otherwise be exported. */
#define FERRY_HIDDEN __attribute__((visibility("hidden")))
#else
#define FERRY_EXPORT
#define FERRY_HIDDEN
#endif

#endif /* FERRY_ABI_EXPORT_H */
