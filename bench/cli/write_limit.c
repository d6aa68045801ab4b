/* The limit of `ferry get --to FILE` in bench/cli/get_small_batches.py: the bytes of an IPC
 * stream file written into a new file with write(2), one message's worth at a time, with no Arrow
 * at all. The source is mapped and every page of it touched before the clock starts, as a kept
 * dataset's pages are already in memory, so what is timed is the output's own cost: the copy
 * into its pages and the file system's work per page.
 *
 *   ferry_write_limit SOURCE TARGET CHUNK
 *
 * Prints one JSON line: the seconds the writes took and the bytes written. TARGET is created or
 * truncated first (outside the clock), and closed after it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double Now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int Fail(const char* what, const char* path) {
  fprintf(stderr, "ferry_write_limit: %s %s: %s\n", what, path, strerror(errno));
  return 1;
}

int main(int argc, char** argv) {
  if (argc != 4 || atoll(argv[3]) <= 0) {
    fprintf(stderr, "usage: ferry_write_limit SOURCE TARGET CHUNK\n");
    return 2;
  }
  const size_t chunk = (size_t)atoll(argv[3]);
  const int in = open(argv[1], O_RDONLY | O_CLOEXEC);
  if (in < 0) return Fail("cannot open", argv[1]);
  struct stat st;
  if (fstat(in, &st) != 0) return Fail("cannot stat", argv[1]);
  const size_t size = (size_t)st.st_size;
  const unsigned char* source = size > 0 ? mmap(NULL, size, PROT_READ, MAP_SHARED, in, 0) : NULL;
  if (source == MAP_FAILED) return Fail("cannot map", argv[1]);
  /* Every page in memory and mapped before the clock starts. */
  uint64_t sum = 0;
  for (size_t i = 0; i < size; i += 4096) sum += source[i];
  const int out = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (out < 0) return Fail("cannot create", argv[2]);
  const double start = Now();
  for (size_t at = 0; at < size;) {
    const size_t want = size - at < chunk ? size - at : chunk;
    const ssize_t n = write(out, source + at, want);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Fail("cannot write", argv[2]);
    at += (size_t)n;
  }
  const double seconds = Now() - start;
  if (close(out) != 0) return Fail("cannot close", argv[2]);
  printf("{\"seconds\": %.9f, \"bytes\": %zu, \"touched\": %llu}\n", seconds, size,
         (unsigned long long)(sum & 1));
  return 0;
}
