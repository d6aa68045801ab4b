/* The limit of the small-batches benchmark (bench/dipc/small_batches.py): the same bytes as a
 * batch, moved between two processes of one host with no Arrow at all. A forked producer reads
 * its clock, copies each message into a slot of a shared ring (64 slots), writes that clock into
 * the slot's first 8 bytes and publishes it; the consumer takes it, notes its one-way latency
 * (the copy included, as ferry's includes its server's copy) and hands the slot back. Either side
 * that finds nothing to do spins up to SPIN times, then sleeps on a futex, and the other wakes it
 * only when it has announced that it sleeps: one wake-up per queue that goes from empty to
 * non-empty, not one per message.
 *
 *   ferry_ring_limit BYTES MESSAGES RATE WARMUP SPIN [kept [TOUCH]]
 *
 * RATE > 0 paces the producer (message i at start + i / RATE, an absolute sleep). Prints one
 * JSON line: messages a second from the first to the last, and p50, p99 and p99.9 of the
 * latency after WARMUP messages. Every wait is bounded (a futex wait by 1 s, the run by 60 s of
 * no progress).
 *
 * `kept` is the limit of a kept dataset lent in place: the producer first writes every message
 * into a memfd of MESSAGES messages, then publishes only each one's index through the ring; the
 * consumer, which maps the memfd itself (its page tables start empty, as a client's do), reads
 * each message's first and last 8 bytes, as default validation reads a string column's first and
 * last offsets. Nothing is stamped, so there is no latency; RATE must be 0.
 *
 * `kept TOUCH` is the limit of a kept dataset validated fully: the consumer reads, 8 bytes at a
 * time, the last TOUCH bytes of each message as well, where a batch's string offsets and
 * characters lie (BYTES less its fixed-width columns). Full validation must read each of those
 * bytes at least once (the offsets' order, the characters' UTF-8), and nothing else of a batch
 * whose other columns are int64 and float64 with no nulls.
 */
#define _GNU_SOURCE
#include <linux/futex.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { kSlots = 64 };

struct Ring {
  _Alignas(64) atomic_uint head; /* messages published (the consumer's futex word) */
  atomic_uint consumer_sleeps;
  _Alignas(64) atomic_uint tail; /* messages handed back (the producer's futex word) */
  atomic_uint producer_sleeps;
};

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void futex_wait(atomic_uint* word, unsigned seen) {
  struct timespec one_second = {1, 0};
  syscall(SYS_futex, word, FUTEX_WAIT, seen, &one_second, NULL, 0);
}

static void futex_wake(atomic_uint* word) {
  syscall(SYS_futex, word, FUTEX_WAKE, 1, NULL, NULL, 0);
}

static void relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

/* Wait until `ready()` holds: spin, then announce the sleep and sleep on `word` while it is
 * unchanged. Fails the run after 60 s without progress. */
static unsigned wait_for(atomic_uint* word, atomic_uint* sleeps, unsigned (*get)(struct Ring*),
                         struct Ring* r, int (*ready)(struct Ring*, unsigned), long spin) {
  int64_t give_up = 0;
  for (long i = 0;; ++i) {
    unsigned v = get(r);
    if (ready(r, v)) return v;
    if (i < spin) {
      relax();
      continue;
    }
    atomic_store(sleeps, 1);
    v = get(r); /* seq_cst: the other side either sees the flag or we see its update */
    if (!ready(r, v)) futex_wait(word, v);
    atomic_store(sleeps, 0);
    if (give_up == 0) give_up = now_ns() + 60 * (int64_t)1000000000;
    if (now_ns() > give_up) {
      fprintf(stderr, "ferry_ring_limit: no progress for 60 s\n");
      exit(2);
    }
  }
}

static unsigned get_head(struct Ring* r) { return atomic_load(&r->head); }
static unsigned get_tail(struct Ring* r) { return atomic_load(&r->tail); }
static unsigned consumer_tail;
static unsigned producer_head;
static int has_message(struct Ring* r, unsigned head) {
  (void)r;
  return head != consumer_tail;
}
static int has_room(struct Ring* r, unsigned tail) {
  (void)r;
  return producer_head - tail < kSlots;
}

static int compare(const void* a, const void* b) {
  int64_t x = *(const int64_t*)a, y = *(const int64_t*)b;
  return (x > y) - (x < y);
}

static int64_t percentile(const int64_t* sorted, long n, double q) {
  if (n == 0) return 0;
  long i = (long)(q * (double)(n - 1) + 0.5);
  return sorted[i < n ? i : n - 1];
}

int main(int argc, char** argv) {
  if (argc != 6 && !((argc == 7 || argc == 8) && strcmp(argv[6], "kept") == 0)) {
    fprintf(stderr, "usage: ferry_ring_limit BYTES MESSAGES RATE WARMUP SPIN [kept [TOUCH]]\n");
    return 2;
  }
  const int kept = argc >= 7;
  const long touch = argc == 8 ? atol(argv[7]) : 0;
  const long bytes = atol(argv[1]), messages = atol(argv[2]), warmup = atol(argv[4]);
  const double rate = atof(argv[3]);
  const long spin = atol(argv[5]);
  if (bytes < 8 || messages < 1 || warmup < 0 || warmup >= messages || spin < 0 ||
      (kept && rate > 0) || touch < 0 || touch > bytes) {
    fprintf(stderr,
            "ferry_ring_limit: BYTES >= 8, MESSAGES >= 1, 0 <= WARMUP < MESSAGES, no RATE "
            "with kept, 0 <= TOUCH <= BYTES\n");
    return 2;
  }
  const size_t slot = ((size_t)bytes + 63) / 64 * 64;
  const size_t size = sizeof(struct Ring) + kSlots * slot;
  void* mem = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) {
    perror("ferry_ring_limit: mmap");
    return 2;
  }
  memset(mem, 0, size);
  struct Ring* ring = mem;
  uint8_t* slots = (uint8_t*)mem + sizeof(struct Ring);
  /* kept: every message, in a memfd that each side maps for itself. */
  const size_t kept_size = kept ? slot * (size_t)messages : 0;
  const int kept_fd = kept ? memfd_create("ferry-ring-kept", 0) : -1;
  if (kept && (kept_fd < 0 || ftruncate(kept_fd, (off_t)kept_size) != 0)) {
    perror("ferry_ring_limit: memfd");
    return 2;
  }

  const pid_t producer = fork();
  if (producer < 0) {
    perror("ferry_ring_limit: fork");
    return 2;
  }
  if (producer == 0) {
    uint8_t* source = malloc((size_t)bytes);
    if (source == NULL) _exit(2);
    for (long i = 0; i < bytes; ++i) source[i] = (uint8_t)i;
    uint8_t* all = NULL;
    if (kept) {
      all = mmap(NULL, kept_size, PROT_READ | PROT_WRITE, MAP_SHARED, kept_fd, 0);
      if (all == MAP_FAILED) _exit(2);
      /* Huge pages where shmem_enabled allows them on request, as ferry's segments ask. */
      (void)madvise(all, kept_size, MADV_HUGEPAGE);
      for (long m = 0; m < messages; ++m) memcpy(all + (size_t)m * slot, source, (size_t)bytes);
    }
    const int64_t start = now_ns();
    for (long m = 0; m < messages; ++m) {
      wait_for(&ring->tail, &ring->producer_sleeps, get_tail, ring, has_room, spin);
      if (rate > 0) {
        const int64_t when = start + (int64_t)((double)m * 1e9 / rate);
        struct timespec ts = {when / 1000000000, when % 1000000000};
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) != 0) {
        }
      }
      uint8_t* s = slots + (size_t)(producer_head % kSlots) * slot;
      if (kept) {
        const int64_t index = m;
        memcpy(s, &index, sizeof index);
      } else {
        /* Stamped before the copy, as ferry's live producer stamps a batch before its server
         * copies it into the shared region: the copy is the ring's cost, as it is ferry's. */
        const int64_t stamp = now_ns();
        memcpy(s, source, (size_t)bytes);
        memcpy(s, &stamp, sizeof stamp);
      }
      atomic_store(&ring->head, ++producer_head);
      if (atomic_load(&ring->consumer_sleeps)) futex_wake(&ring->head);
    }
    _exit(0);
  }

  int64_t* latency = malloc(sizeof(int64_t) * (size_t)messages);
  if (latency == NULL) return 2;
  const uint8_t* lent = NULL;
  if (kept) {
    lent = mmap(NULL, kept_size, PROT_READ, MAP_SHARED, kept_fd, 0);
    if (lent == MAP_FAILED) {
      perror("ferry_ring_limit: mmap of the kept messages");
      return 2;
    }
    (void)madvise((void*)lent, kept_size, MADV_HUGEPAGE);
  }
  uint64_t read_sum = 0; /* what the kept reads saw, printed so that they are made */
  int64_t first = 0;
  for (long m = 0; m < messages; ++m) {
    wait_for(&ring->head, &ring->consumer_sleeps, get_head, ring, has_message, spin);
    const int64_t now = now_ns();
    if (m == 0) first = now;
    int64_t stamp;
    memcpy(&stamp, slots + (size_t)(consumer_tail % kSlots) * slot, sizeof stamp);
    if (kept) {
      const uint8_t* message = lent + (size_t)stamp * slot;
      uint64_t head, tail;
      memcpy(&head, message, sizeof head);
      memcpy(&tail, message + (size_t)bytes - 8, sizeof tail);
      read_sum += head ^ tail;
      for (long at = (bytes - touch) / 8 * 8; at + 8 <= bytes; at += 8) {
        uint64_t word;
        memcpy(&word, message + at, sizeof word);
        read_sum += word;
      }
      latency[m] = 0;
    } else {
      latency[m] = now - stamp;
    }
    atomic_store(&ring->tail, ++consumer_tail);
    if (atomic_load(&ring->producer_sleeps)) futex_wake(&ring->tail);
  }
  const double seconds = (double)(now_ns() - first) / 1e9;
  int status = 0;
  waitpid(producer, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    fprintf(stderr, "ferry_ring_limit: the producer failed (wait status %d)\n", status);
    return 2;
  }
  const long n = messages - warmup;
  if (kept) {
    printf(
        "{\"batches\": %ld, \"batch_bytes\": %ld, \"seconds\": %.9f, \"batches_per_s\": %.1f, "
        "\"latency_ns\": null, \"read_sum\": %llu}\n",
        messages, bytes, seconds, seconds > 0 ? (double)(messages - 1) / seconds : 0.0,
        (unsigned long long)read_sum);
    free(latency);
    return 0;
  }
  qsort(latency + warmup, (size_t)n, sizeof(int64_t), compare);
  printf(
      "{\"batches\": %ld, \"batch_bytes\": %ld, \"seconds\": %.9f, \"batches_per_s\": %.1f, "
      "\"latency_ns\": {\"p50\": %lld, \"p99\": %lld, \"p999\": %lld}}\n",
      messages, bytes, seconds, seconds > 0 ? (double)(messages - 1) / seconds : 0.0,
      (long long)percentile(latency + warmup, n, 0.5),
      (long long)percentile(latency + warmup, n, 0.99),
      (long long)percentile(latency + warmup, n, 0.999));
  free(latency);
  return 0;
}
