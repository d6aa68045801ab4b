/* The limit of ferry's parallel read between hosts over UCX (bench/cluster/cluster_bench.py): the
 * same bytes in the same 8 MiB tagged messages, moved with libucp alone and no Arrow, as a reader
 * that keeps what it reads must move them. Each sender sends every message from its own place in
 * memory of the stream's whole size, and the receiver receives each into its own place in memory
 * of that size (written once before the runs and reused by each, as the plain TCP ceiling's
 * reader keeps its bytes), where `ucx_perftest -t tag_bw` sends from and receives into one buffer
 * that stays in cache. Both ends sleep on their workers' events when there is nothing to do, as
 * ferry's threads do where two streams share two cores.
 *
 *   ferry_ucx_limit send IP PORT BYTES [OPTION...]
 *       listens on IP:PORT; each time its peer asks, sends BYTES in 8 MiB messages, WINDOW of
 *       them in flight
 *   ferry_ucx_limit recv IP:PORT[,IP:PORT...] BYTES RUNS [OPTION...]
 *       connects to every sender, a thread and a worker each; each run asks every sender at once
 *       and receives its BYTES, WINDOW receives posted ahead. After one run to warm up, prints a
 *       line for each of RUNS runs: its rate as every stream's bytes over the run's time, in
 *       MiB/s, then the whole machine's CPU seconds and context switches a GiB over the run
 *       (/proc/stat: every end shares this machine's cores here). Connecting is not timed, as
 *       the parallel read's kept connections are not.
 *
 * Options: `window=N` puts N messages in flight each way (WINDOW, 16 by default); `one` sends
 * every message from (or receives every message into) one 8 MiB place, as tag_bw does; `paced`
 * (recv) prints "ready" after the warm-up run and starts each timed run only when a line comes on
 * its standard input, so that a driver can put other readers' runs between its own (it stops at
 * the end of its input, or after RUNS runs). On the
 * 2-core VM, two streams into host c (medians of 6 alternating rounds against the plain TCP
 * ceiling): one in flight 0.74x, four 0.88-0.95x, sixteen 0.94-0.96x; four on one side and one
 * on the other 0.77-0.78x, so both ends need them.
 *
 * Every wait is bounded: a run that moves nothing for 30 s fails. Exit status 1 on any error, with
 * a message that names the call.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <ucp/api/ucp.h>
#include <unistd.h>

enum { kChunk = 8 << 20, kGoTag = 1, kDataTag = 2, kStallSeconds = 30 };

/* Messages in flight each way (window=N). */
static size_t window = 16;

static void die(const char* what, ucs_status_t status) {
  fprintf(stderr, "ferry_ucx_limit: %s: %s\n", what, ucs_status_string(status));
  exit(1);
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* One end: its worker, its endpoint, and how many of its requests have completed. */
struct end {
  ucp_worker_h worker;
  ucp_ep_h ep;
  int efd;
  volatile long completed;
  volatile ucs_status_t failed;
};

static void on_done(void* request, ucs_status_t status, void* user_data) {
  struct end* e = user_data;
  if (status != UCS_OK) e->failed = status;
  e->completed++;
  ucp_request_free(request);
}

static void on_recv(void* request, ucs_status_t status, const ucp_tag_recv_info_t* info,
                    void* user_data) {
  (void)info;
  on_done(request, status, user_data);
}

/* Progresses `e` until `completed` reaches `target`, sleeping on the worker's event descriptor
 * whenever a progress call finds nothing to do; fails after `stall_seconds` with no completion. */
static void wait_for(struct end* e, long target, const char* what, double stall_seconds) {
  double last = now();
  long seen = e->completed;
  while (e->completed < target) {
    if (e->failed != UCS_OK) die(what, e->failed);
    if (ucp_worker_progress(e->worker)) continue;
    ucs_status_t s = ucp_worker_arm(e->worker);
    if (s == UCS_ERR_BUSY) continue;
    if (s != UCS_OK) die("ucp_worker_arm", s);
    struct pollfd p = {.fd = e->efd, .events = POLLIN};
    (void)poll(&p, 1, 1000);
    if (e->completed != seen) {
      seen = e->completed;
      last = now();
    } else if (now() - last > stall_seconds) {
      die(what, UCS_ERR_TIMED_OUT);
    }
  }
}

/* Counts a request that completed at once (or failed at once) as its callback would have. */
static void count(struct end* e, ucs_status_ptr_t r, const char* what) {
  if (UCS_PTR_IS_ERR(r)) die(what, UCS_PTR_STATUS(r));
  if (r == NULL) e->completed++;
}

static ucp_context_h make_context(void) {
  ucp_params_t params = {.field_mask = UCP_PARAM_FIELD_FEATURES,
                         .features = UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP};
  ucp_config_t* config;
  ucs_status_t s = ucp_config_read(NULL, NULL, &config);
  if (s != UCS_OK) die("ucp_config_read", s);
  ucp_context_h context;
  s = ucp_init(&params, config, &context);
  ucp_config_release(config);
  if (s != UCS_OK) die("ucp_init", s);
  return context;
}

static void make_worker(ucp_context_h context, struct end* e) {
  ucp_worker_params_t params = {.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
                                .thread_mode = UCS_THREAD_MODE_SINGLE};
  ucs_status_t s = ucp_worker_create(context, &params, &e->worker);
  if (s != UCS_OK) die("ucp_worker_create", s);
  s = ucp_worker_get_efd(e->worker, &e->efd);
  if (s != UCS_OK) die("ucp_worker_get_efd", s);
}

static char* touched(size_t bytes) {
  char* p = malloc(bytes);
  if (p == NULL) die("malloc", UCS_ERR_NO_MEMORY);
  memset(p, 1, bytes);
  return p;
}

static struct sockaddr_in address(const char* ip, int port) {
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  if (inet_pton(AF_INET, ip, &a.sin_addr) != 1) {
    fprintf(stderr, "ferry_ucx_limit: not an IPv4 address: %s\n", ip);
    exit(1);
  }
  return a;
}

static void on_connection(ucp_conn_request_h request, void* arg) {
  struct end* e = arg;
  if (e->ep != NULL) {
    ucp_listener_reject(NULL, request);
    return;
  }
  ucp_ep_params_t params = {.field_mask = UCP_EP_PARAM_FIELD_CONN_REQUEST, .conn_request = request};
  ucs_status_t s = ucp_ep_create(e->worker, &params, &e->ep);
  if (s != UCS_OK) die("ucp_ep_create (accepting)", s);
}

/* The sender: one peer, served until it goes away (the benchmark kills the sender). */
static int send_main(const char* ip, int port, size_t bytes, int one) {
  char* data = touched(one ? (size_t)kChunk : bytes);
  struct end e = {0};
  make_worker(make_context(), &e);
  struct sockaddr_in a = address(ip, port);
  ucp_listener_params_t lp = {
      .field_mask = UCP_LISTENER_PARAM_FIELD_SOCK_ADDR | UCP_LISTENER_PARAM_FIELD_CONN_HANDLER,
      .sockaddr = {.addr = (const struct sockaddr*)&a, .addrlen = sizeof(a)},
      .conn_handler = {.cb = on_connection, .arg = &e}};
  ucp_listener_h listener;
  ucs_status_t s = ucp_listener_create(e.worker, &lp, &listener);
  if (s != UCS_OK) die("ucp_listener_create", s);
  uint64_t go;
  ucp_request_param_t rp = {
      .op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA,
      .cb.recv = on_recv,
      .user_data = &e};
  ucp_request_param_t sp = {
      .op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA,
      .cb.send = on_done,
      .user_data = &e};
  for (;;) {
    long target = e.completed + 1;
    count(&e, ucp_tag_recv_nbx(e.worker, &go, sizeof(go), kGoTag, ~(uint64_t)0, &rp),
          "ucp_tag_recv_nbx (go)");
    /* Between runs the peer may be quiet for long: an hour is no stall. */
    wait_for(&e, target, "waiting for an ask", 3600);
    size_t messages = (bytes + kChunk - 1) / kChunk;
    long base = e.completed;
    for (size_t i = 0; i < messages; i++) {
      if (i >= window) wait_for(&e, base + (long)(i - window + 1), "sending", kStallSeconds);
      size_t at = i * (size_t)kChunk;
      size_t n = bytes - at < (size_t)kChunk ? bytes - at : (size_t)kChunk;
      count(&e, ucp_tag_send_nbx(e.ep, data + (one ? 0 : at), n, kDataTag, &sp),
            "ucp_tag_send_nbx");
    }
    wait_for(&e, base + (long)messages, "sending", kStallSeconds);
  }
  return 0;
}

/* One stream of the receiver: its end, its sender's address and its kept bytes. */
struct stream {
  struct end e;
  struct sockaddr_in peer;
  char* kept;
  size_t bytes;
  int one;
};

static void* receive_run(void* arg) {
  struct stream* st = arg;
  struct end* e = &st->e;
  ucp_request_param_t rp = {
      .op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA,
      .cb.recv = on_recv,
      .user_data = e};
  ucp_request_param_t sp = {
      .op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA,
      .cb.send = on_done,
      .user_data = e};
  size_t messages = (st->bytes + kChunk - 1) / kChunk;
  long base = e->completed;
  size_t posted = 0;
  for (; posted < messages && posted < window; posted++) {
    size_t at = posted * (size_t)kChunk;
    size_t n = st->bytes - at < (size_t)kChunk ? st->bytes - at : (size_t)kChunk;
    count(
        e,
        ucp_tag_recv_nbx(e->worker, st->kept + (st->one ? 0 : at), n, kDataTag, ~(uint64_t)0, &rp),
        "ucp_tag_recv_nbx");
  }
  static const uint64_t go = 1;
  count(e, ucp_tag_send_nbx(e->ep, &go, sizeof(go), kGoTag, &sp), "ucp_tag_send_nbx (go)");
  long extra = 1; /* the ask's own completion */
  for (; posted < messages; posted++) {
    wait_for(e, base + extra + (long)(posted - window + 1), "receiving", kStallSeconds);
    size_t at = posted * (size_t)kChunk;
    size_t n = st->bytes - at < (size_t)kChunk ? st->bytes - at : (size_t)kChunk;
    count(
        e,
        ucp_tag_recv_nbx(e->worker, st->kept + (st->one ? 0 : at), n, kDataTag, ~(uint64_t)0, &rp),
        "ucp_tag_recv_nbx");
  }
  wait_for(e, base + extra + (long)messages, "receiving", kStallSeconds);
  return NULL;
}

/* The whole machine's busy CPU seconds and context switches so far (/proc/stat). */
static void machine(double* cpu_s, double* switches) {
  FILE* f = fopen("/proc/stat", "r");
  if (f == NULL) die("/proc/stat", UCS_ERR_IO_ERROR);
  char line[512];
  unsigned long long t[8] = {0};
  *switches = 0;
  while (fgets(line, sizeof line, f) != NULL) {
    if (strncmp(line, "cpu ", 4) == 0) {
      /* user nice system idle iowait irq softirq steal: all but idle and iowait are busy */
      (void)sscanf(line + 4, "%llu %llu %llu %llu %llu %llu %llu %llu", &t[0], &t[1], &t[2], &t[3],
                   &t[4], &t[5], &t[6], &t[7]);
    } else if (strncmp(line, "ctxt ", 5) == 0) {
      *switches = strtod(line + 5, NULL);
    }
  }
  fclose(f);
  *cpu_s = (double)(t[0] + t[1] + t[2] + t[5] + t[6] + t[7]) / (double)sysconf(_SC_CLK_TCK);
}

static int recv_main(char* peers, size_t bytes, int runs, int one, int paced) {
  struct stream streams[8];
  int n = 0;
  ucp_context_h context = make_context();
  for (char* p = strtok(peers, ","); p != NULL && n < 8; p = strtok(NULL, ",")) {
    char* colon = strrchr(p, ':');
    if (colon == NULL) {
      fprintf(stderr, "ferry_ucx_limit: expected IP:PORT, got %s\n", p);
      return 1;
    }
    *colon = '\0';
    struct stream* st = &streams[n++];
    memset(st, 0, sizeof(*st));
    st->peer = address(p, atoi(colon + 1));
    st->bytes = bytes;
    st->one = one;
    st->kept = touched(one ? (size_t)kChunk : bytes);
    make_worker(context, &st->e);
    ucp_ep_params_t params = {
        .field_mask = UCP_EP_PARAM_FIELD_FLAGS | UCP_EP_PARAM_FIELD_SOCK_ADDR,
        .flags = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER,
        .sockaddr = {.addr = (const struct sockaddr*)&st->peer, .addrlen = sizeof(st->peer)}};
    ucs_status_t s = ucp_ep_create(st->e.worker, &params, &st->e.ep);
    if (s != UCS_OK) die("ucp_ep_create (connecting)", s);
  }
  for (int run = 0; run <= runs; run++) {
    if (paced && run == 1) printf("ready\n");
    fflush(stdout);
    char line[64];
    if (paced && run > 0 && fgets(line, sizeof(line), stdin) == NULL) break;
    pthread_t threads[8];
    double cpu0, switches0, cpu1, switches1;
    machine(&cpu0, &switches0);
    double start = now();
    for (int i = 0; i < n; i++) pthread_create(&threads[i], NULL, receive_run, &streams[i]);
    for (int i = 0; i < n; i++) pthread_join(threads[i], NULL);
    double took = now() - start;
    machine(&cpu1, &switches1);
    const double gib = (double)bytes * n / (1 << 30);
    if (run > 0)
      printf("%.1f %.3f %.0f\n", gib * 1024 / took, (cpu1 - cpu0) / gib,
             (switches1 - switches0) / gib);
    fflush(stdout);
  }
  return 0;
}

int main(int argc, char** argv) {
  const int sending = argc >= 5 && strcmp(argv[1], "send") == 0;
  const int receiving = argc >= 5 && strcmp(argv[1], "recv") == 0;
  int one = 0;
  int paced = 0;
  for (int i = 5; (sending || receiving) && i < argc; i++) {
    if (strcmp(argv[i], "one") == 0) {
      one = 1;
    } else if (receiving && strcmp(argv[i], "paced") == 0) {
      paced = 1;
    } else if (strncmp(argv[i], "window=", 7) == 0 && atoi(argv[i] + 7) > 0) {
      window = (size_t)atoi(argv[i] + 7);
    } else {
      fprintf(stderr, "ferry_ucx_limit: unknown option %s (one, window=N, paced)\n", argv[i]);
      return 2;
    }
  }
  if (sending) return send_main(argv[2], atoi(argv[3]), strtoull(argv[4], NULL, 10), one);
  if (receiving) return recv_main(argv[2], strtoull(argv[3], NULL, 10), atoi(argv[4]), one, paced);
  fprintf(stderr,
          "usage: ferry_ucx_limit send IP PORT BYTES [one] [window=N]\n"
          "       ferry_ucx_limit recv IP:PORT[,IP:PORT...] BYTES RUNS [one] [window=N] [paced]\n");
  return 2;
}
