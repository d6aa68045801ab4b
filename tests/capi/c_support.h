/* What the C tests share (one program each): CHECK counts what passed and what failed, and
 * prints each failure with its file and line (main reports g_passed and g_failed and fails on
 * any); MakeSchema and OneColumnSchema make schemas. */
#ifndef FERRY_TESTS_CAPI_C_SUPPORT_H
#define FERRY_TESTS_CAPI_C_SUPPORT_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "ferry/capi/ferry.h"

static int g_passed = 0;
static int g_failed = 0;

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (cond) {                                                                \
      ++g_passed;                                                              \
    } else {                                                                   \
      ++g_failed;                                                              \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
    }                                                                          \
  } while (0)

/* Releases a schema whose strings and children are static, by clearing `release`. */
static inline void ReleaseStaticSchema(struct ArrowSchema* schema) { schema->release = NULL; }

/* A one-node nullable schema "s" of `format`, static. */
static inline struct ArrowSchema MakeSchema(const char* format) {
  struct ArrowSchema schema;
  memset(&schema, 0, sizeof(schema));
  schema.format = format;
  schema.name = "s";
  schema.flags = ARROW_FLAG_NULLABLE;
  schema.release = &ReleaseStaticSchema;
  return schema;
}

/* A batch's schema, a struct of one column `name` of `format` with `flags`, deep-copied into
 * `out` (the caller owns it). */
static inline void OneColumnSchema(const char* format, const char* name, int64_t flags,
                                   struct ArrowSchema* out) {
  struct ArrowSchema column;
  struct ArrowSchema* children[1];
  struct ArrowSchema schema;
  struct FerryError error;
  memset(&column, 0, sizeof(column));
  column.format = format;
  column.name = name;
  column.flags = flags;
  column.release = &ReleaseStaticSchema;
  children[0] = &column;
  memset(&schema, 0, sizeof(schema));
  schema.format = "+s";
  schema.name = "";
  schema.n_children = 1;
  schema.children = children;
  schema.release = &ReleaseStaticSchema;
  CHECK(FerrySchemaDeepCopy(&schema, out, &error) == 0);
}

#endif /* FERRY_TESTS_CAPI_C_SUPPORT_H */
