/* dipc_peer get: the client side of the Dissociated IPC protocol (see dipc_peer.c).
 * Over 600 lines: the whole client role of the protocol in one file (the peer is kept to three C
 * files, sharing only dipc_peer.c/.h).
 * One worker per connection, so that in the split shape metadata arriving on the data connection
 * (or a body on the metadata connection) is seen and refused. Metadata is kept by sequence number,
 * bodies are probed by sequence number (mask 0xFFFFFFFF), and messages are written to OUT in
 * sequence order as they complete. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "dipc_peer.h"

/* Largest metadata message accepted (the reference refuses above INT32_MAX). */
#define MAX_META (256u << 20)
/* How far ahead of the next message to write a sequence number may be. */
#define MAX_AHEAD (1u << 24)

enum { SL_EMPTY, SL_WAIT_BODY, SL_RECV, SL_GETS, SL_DONE, SL_WRITTEN };

typedef struct {
  int state, body_type;
  uint8_t* meta; /* the AM payload: 5-byte prefix + flatbuffer */
  size_t meta_len;
  fb_message fm;
  uint8_t *body, *list;
  size_t list_len, gets;
  ucs_status_t status;
} slot;

typedef struct {
  const char* text;
  char host[256];
  int port;
  struct sockaddr_storage ss;
  socklen_t slen;
  uint64_t want, free_tag;
  int has_free;
  uint8_t* rkey;
  size_t rkey_len;
} uri_t;

typedef struct {
  const char* label;
  uri_t* uri;
  ucp_worker_h w;
  int efd;
  ucp_ep_h ep;
  int failed, want_done, got_any, closed;
  ucs_status_t fail_status, want_status;
} conn_t;

typedef struct {
  uint8_t* data;
  size_t len;
  void* desc; /* rendezvous descriptor, data == NULL */
} arrival;

static struct {
  const char *ticket, *out_path, *report;
  int timeout_ms, linger_ms;
  size_t free_batch;
  uri_t meta_uri, data_uri;
  conn_t conns[2];
  int nconns;
  conn_t *meta, *data;
  ucp_context_h ctx;
  ucp_worker_h ws[2];
  int efds[2];
  ucp_rkey_h rkey;
  slot* slots;
  size_t nslots;
  uint32_t next_write, eos_seq, max_seen;
  int have_eos, any_meta;
  uint32_t* awaiting;
  size_t nawaiting, cap_awaiting;
  arrival* arrivals;
  size_t narrivals, cap_arrivals;
  uint8_t** free_bufs;
  size_t nfree_bufs, cap_free_bufs;
  uint32_t* done_q;
  size_t ndone, cap_done;
  size_t ops;
  unsigned long activity;
  char err[512];
  u64set addrs;
  FILE* out;
  unsigned long metadata_received, bodies_received, body_types[2], am_eager, am_rndv, out_of_order,
      address_pairs, addresses_freed, free_messages;
  uint64_t bytes_fetched;
  int free_skipped, server_closed_first;
  int fault;
} G;

/* Faults a test can inject to check that a server copes with a misbehaving client. */
enum { F_NONE, F_FREE_UNKNOWN, F_FREE_NONE, F_FREE_MALFORMED, F_FREE_TWICE, F_COUNT };
static const char* fault_names[F_COUNT] = {"none", "free-unknown", "free-none", "free-malformed",
                                           "free-twice"};

static void set_err(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
static void set_err(const char* fmt, ...) {
  if (G.err[0]) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(G.err, sizeof G.err, fmt, ap);
  va_end(ap);
}

#define PUSH(arr, n, cap, v)                          \
  do {                                                \
    if ((n) == (cap)) {                               \
      (cap) = (cap) ? 2 * (cap) : 64;                 \
      (arr) = xrealloc((arr), (cap) * sizeof *(arr)); \
    }                                                 \
    (arr)[(n)++] = (v);                               \
  } while (0)

/* ---- callbacks ---- */

static void err_cb(void* arg, ucp_ep_h ep, ucs_status_t status) {
  (void)ep;
  conn_t* c = arg;
  c->failed = 1;
  c->fail_status = status;
  G.activity++;
}

static void want_cb(void* req, ucs_status_t status, void* user) {
  conn_t* c = user;
  c->want_done = 1;
  c->want_status = status;
  G.ops--;
  G.activity++;
  ucp_request_free(req);
}

static ucs_status_t am_cb(void* arg, const void* header, size_t header_length, void* data,
                          size_t length, const ucp_am_recv_param_t* param) {
  (void)header;
  G.activity++;
  if (arg != G.meta) {
    set_err(
        "an Active Message (%zu bytes) arrived on the data connection %s; metadata belongs "
        "on the metadata connection",
        length, G.data_uri.text);
    return UCS_OK;
  }
  G.any_meta = 1;
  G.meta->got_any = 1;
  if (header_length != 0) {
    set_err("a metadata Active Message carries a %zu-byte AM header (the protocol has none)",
            header_length);
    return UCS_OK;
  }
  arrival a = {NULL, length, NULL};
  if (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) {
    G.am_rndv++;
    a.desc = data;
    PUSH(G.arrivals, G.narrivals, G.cap_arrivals, a);
    return UCS_INPROGRESS;
  }
  G.am_eager++;
  a.data = xmalloc(length);
  memcpy(a.data, data, length);
  PUSH(G.arrivals, G.narrivals, G.cap_arrivals, a);
  return UCS_OK;
}

typedef struct {
  uint8_t* buf;
  size_t len;
} rndv_rec;

static void am_data_cb(void* req, ucs_status_t status, size_t length, void* user) {
  rndv_rec* r = user;
  G.ops--;
  G.activity++;
  if (status != UCS_OK) {
    set_err("receiving a rendezvous metadata message failed: %s", ucs_status_string(status));
    free(r->buf);
  } else {
    arrival a = {r->buf, length, NULL};
    PUSH(G.arrivals, G.narrivals, G.cap_arrivals, a);
  }
  free(r);
  if (req) ucp_request_free(req);
}

static void body_cb(void* req, ucs_status_t status, const ucp_tag_recv_info_t* info, void* user) {
  (void)info;
  uint32_t seq = (uint32_t)(uintptr_t)user;
  G.ops--;
  G.activity++;
  G.slots[seq].status = status;
  PUSH(G.done_q, G.ndone, G.cap_done, seq);
  ucp_request_free(req);
}

static void get_cb(void* req, ucs_status_t status, void* user) {
  uint32_t seq = (uint32_t)(uintptr_t)user;
  G.ops--;
  G.activity++;
  slot* s = &G.slots[seq];
  if (status != UCS_OK && s->status == UCS_OK) s->status = status;
  if (--s->gets == 0) PUSH(G.done_q, G.ndone, G.cap_done, seq);
  ucp_request_free(req);
}

static void free_cb(void* req, ucs_status_t status, void* user) {
  size_t n = (size_t)(uintptr_t)user;
  G.ops--;
  G.activity++;
  if (status == UCS_OK)
    G.addresses_freed += n;
  else
    set_err("sending free_data failed: %s", ucs_status_string(status));
  ucp_request_free(req);
}

static void close_cb(void* req, ucs_status_t status, void* user) {
  (void)status;
  ((conn_t*)user)->closed = 1;
  ucp_request_free(req);
}

/* ---- URI ---- */

static void parse_uri(const char* text, uri_t* u) {
  memset(u, 0, sizeof *u);
  u->text = text;
  if (strncasecmp(text, "ucx://", 6) != 0) die("URI '%s' does not start with ucx://", text);
  char *s = strdup(text + 6), *q = strchr(s, '?'), *hash = strchr(s, '#');
  if (hash) *hash = 0;
  if (q) *q++ = 0;
  size_t alen = strlen(s);
  if (alen && s[alen - 1] == '/') s[--alen] = 0;
  if (strchr(s, '/')) die("URI '%s' has a path; want ucx://HOST:PORT?want_data=N", text);
  u->slen = resolve_hostport(s, &u->ss, u->host, sizeof u->host, &u->port);
  int have_want = 0, have_rh = 0;
  for (char* kv = q ? strtok(q, "&") : NULL; kv; kv = strtok(NULL, "&")) {
    char* eq = strchr(kv, '=');
    char* val = eq ? eq + 1 : (char*)"";
    if (eq) *eq = 0;
    if (pct_decode(kv) < 0 || pct_decode(val) < 0) die("URI '%s': bad percent-escape", text);
    if (!strcmp(kv, "want_data") || !strcmp(kv, "free_data")) {
      int want = kv[0] == 'w';
      if (want ? have_want : u->has_free) die("URI '%s': %s appears twice", text, kv);
      if (parse_u64(val, want ? &u->want : &u->free_tag) < 0)
        die("URI '%s': %s='%s' is not an unsigned 64-bit decimal", text, kv, val);
      *(want ? &have_want : &u->has_free) = 1;
    } else if (!strcmp(kv, "remote_handle")) {
      if (have_rh) die("URI '%s': remote_handle appears twice", text);
      have_rh = 1;
      u->rkey = b64_decode(val, &u->rkey_len);
      if (!u->rkey || !u->rkey_len) die("URI '%s': remote_handle is not base64", text);
    } /* other parameters are some implementation's extensions: ignored */
  }
  if (!have_want) die("URI '%s' has no want_data", text);
  free(s);
}

/* ---- metadata and bodies ---- */

static slot* slot_at(uint32_t seq) {
  if (seq >= G.nslots) {
    size_t n = G.nslots ? G.nslots : 64;
    while (n <= seq) n *= 2;
    G.slots = xrealloc(G.slots, n * sizeof *G.slots);
    memset(G.slots + G.nslots, 0, (n - G.nslots) * sizeof *G.slots);
    G.nslots = n;
  }
  return &G.slots[seq];
}

static void take_metadata(uint8_t* p, size_t n) {
  if (n < 5) die("a metadata message of %zu bytes is shorter than its 5-byte prefix", n);
  uint32_t seq = ld32(p + 1);
  if (p[0] == META_EOS) {
    if (n != 5)
      die("the end-of-stream message (seq %u) is %zu bytes; it must be exactly 5", seq, n);
    if (G.have_eos) die("a second end-of-stream message (seq %u after %u)", seq, G.eos_seq);
    if (seq == 0) die("end of stream at seq 0: the stream has no Schema");
    if (seq < G.next_write || (G.metadata_received && seq <= G.max_seen))
      die("end of stream at seq %u, but metadata with seq %u was already received", seq,
          G.max_seen);
    G.have_eos = 1;
    G.eos_seq = seq;
    free(p);
    return;
  }
  if (p[0] != META_FLATBUFFER) die("metadata message seq %u has unknown type %u", seq, p[0]);
  if (G.have_eos && seq >= G.eos_seq)
    die("metadata seq %u arrived at or past the end of stream (seq %u)", seq, G.eos_seq);
  if (seq < G.next_write || (seq < G.nslots && G.slots[seq].state != SL_EMPTY))
    die("metadata seq %u arrived twice", seq);
  if (seq - G.next_write > MAX_AHEAD)
    die("metadata seq %u is too far ahead of the next expected seq %u", seq, G.next_write);
  slot* s = slot_at(seq);
  char err[256];
  if (fb_parse_message(p + 5, n - 5, &s->fm, err, sizeof err) < 0)
    die("metadata seq %u: %s", seq, err);
  if (seq == 0 && s->fm.header_type != HDR_SCHEMA)
    die("metadata seq 0 is a %s; it must be the Schema", fb_header_name(s->fm.header_type));
  if (seq != 0 && s->fm.header_type == HDR_SCHEMA)
    die("metadata seq %u is a Schema; only seq 0 may be", seq);
  if (s->fm.header_type == HDR_SCHEMA && s->fm.body_length != 0)
    die("metadata seq 0: the Schema has bodyLength %lld", (long long)s->fm.body_length);
  if (G.metadata_received && seq < G.max_seen) G.out_of_order++;
  if (!G.metadata_received || seq > G.max_seen) G.max_seen = seq;
  G.metadata_received++;
  s->meta = p;
  s->meta_len = n;
  if (s->fm.header_type == HDR_SCHEMA) {
    s->state = SL_DONE;
  } else {
    s->state = SL_WAIT_BODY;
    PUSH(G.awaiting, G.nawaiting, G.cap_awaiting, seq);
  }
}

static void start_rndv(void* desc, size_t len) {
  if (len > MAX_META) die("a rendezvous metadata message of %zu bytes is too large", len);
  rndv_rec* r = xmalloc(sizeof *r);
  r->buf = xmalloc(len);
  r->len = len;
  ucp_request_param_t p;
  memset(&p, 0, sizeof p);
  p.op_attr_mask =
      UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
  p.cb.recv_am = am_data_cb;
  p.user_data = r;
  G.ops++;
  ucs_status_ptr_t sp = ucp_am_recv_data_nbx(G.meta->w, desc, r->buf, len, &p);
  if (UCS_PTR_IS_ERR(sp))
    die("ucp_am_recv_data_nbx (rendezvous metadata): %s", ucs_status_string(UCS_PTR_STATUS(sp)));
  if (sp == NULL) am_data_cb(NULL, UCS_OK, len, r);
}

/* Probes for the bodies of the metadata received so far; returns 1 when one was found. */
static int probe_bodies(void) {
  int found = 0;
  for (size_t i = 0; i < G.nawaiting;) {
    uint32_t seq = G.awaiting[i];
    ucp_tag_recv_info_t info;
    ucp_tag_message_h msg = ucp_tag_probe_nb(G.data->w, seq, SEQ_MASK, 1, &info);
    if (!msg) {
      i++;
      continue;
    }
    found = 1;
    G.data->got_any = 1;
    G.awaiting[i] = G.awaiting[--G.nawaiting];
    slot* s = &G.slots[seq];
    uint64_t tag = info.sender_tag;
    if ((tag >> 32) & 0xFFFFFF)
      die("the body of seq %u has tag 0x%016" PRIx64 ": reserved bits 32-55 are not 0", seq, tag);
    s->body_type = (int)(tag >> 56);
    void* dst;
    if (s->body_type == 0) {
      if (info.length != (uint64_t)s->fm.body_length)
        die("the type-0 body of seq %u (%s) is %zu bytes; its metadata says bodyLength %lld", seq,
            fb_header_name(s->fm.header_type), info.length, (long long)s->fm.body_length);
      dst = s->body = xmalloc((size_t)s->fm.body_length);
    } else if (s->body_type == 1) {
      size_t want = 16 + 16 * (size_t)s->fm.nbuffers;
      if (info.length != want)
        die("the type-1 body of seq %u is %zu bytes; a list of %u buffers is %zu bytes", seq,
            info.length, s->fm.nbuffers, want);
      dst = s->list = xmalloc(want);
      s->list_len = want;
    } else {
      die("the body of seq %u has unknown body type %d (tag 0x%016" PRIx64 ")", seq, s->body_type,
          tag);
    }
    s->state = SL_RECV;
    ucp_request_param_t p;
    memset(&p, 0, sizeof p);
    p.op_attr_mask =
        UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
    p.cb.recv = body_cb;
    p.user_data = (void*)(uintptr_t)seq;
    G.ops++;
    ucs_status_ptr_t sp = ucp_tag_msg_recv_nbx(G.data->w, dst, info.length, msg, &p);
    if (UCS_PTR_IS_ERR(sp))
      die("receiving the body of seq %u: %s", seq, ucs_status_string(UCS_PTR_STATUS(sp)));
  }
  return found;
}

static void start_gets(uint32_t seq) {
  slot* s = &G.slots[seq];
  const uint8_t* l = s->list;
  uint64_t total = ld64(l), count = ld64(l + 8), sum = 0;
  if (count != s->fm.nbuffers)
    die("the type-1 body of seq %u lists %" PRIu64 " buffers; its metadata has %u", seq, count,
        s->fm.nbuffers);
  if (!G.rkey) {
    if (!G.data_uri.rkey)
      die("seq %u has a type-1 body but %s has no remote_handle", seq, G.data_uri.text);
    ucs_status_t st = ucp_ep_rkey_unpack(G.data->ep, G.data_uri.rkey, &G.rkey);
    if (st != UCS_OK)
      die("cannot unpack the remote_handle of %s: %s", G.data_uri.text, ucs_status_string(st));
  }
  s->body = xcalloc((size_t)s->fm.body_length + 1, 1);
  s->gets = 1; /* held until every get is posted */
  s->status = UCS_OK;
  s->state = SL_GETS;
  for (uint32_t j = 0; j < s->fm.nbuffers; j++) {
    uint64_t addr = ld64(l + 16 + 16 * (size_t)j), len = ld64(l + 24 + 16 * (size_t)j);
    int64_t off, mlen;
    fb_buffer(&s->fm, j, &off, &mlen);
    if (len != (uint64_t)mlen)
      die("the type-1 body of seq %u: buffer %u has length %" PRIu64 "; the metadata says %lld",
          seq, j, len, (long long)mlen);
    if (addr + len < addr)
      die("the type-1 body of seq %u: buffer %u (address 0x%" PRIx64 ", length %" PRIu64
          ") wraps around",
          seq, j, addr, len);
    sum += len;
    G.address_pairs++;
    u64set_add(&G.addrs, addr);
    if (len == 0) continue;
    ucp_request_param_t p;
    memset(&p, 0, sizeof p);
    p.op_attr_mask =
        UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
    p.cb.send = get_cb;
    p.user_data = (void*)(uintptr_t)seq;
    s->gets++;
    G.ops++;
    G.bytes_fetched += len;
    ucs_status_ptr_t sp = ucp_get_nbx(G.data->ep, s->body + off, (size_t)len, addr, G.rkey, &p);
    if (UCS_PTR_IS_ERR(sp))
      die("ucp_get of seq %u buffer %u (address 0x%" PRIx64 ", %" PRIu64 " bytes): %s", seq, j,
          addr, len, ucs_status_string(UCS_PTR_STATUS(sp)));
  }
  if (total != sum)
    die("the type-1 body of seq %u gives a total size of %" PRIu64
        " but its buffer lengths add up to %" PRIu64,
        seq, total, sum);
  if (--s->gets == 0) PUSH(G.done_q, G.ndone, G.cap_done, seq);
}

static void complete(uint32_t seq) {
  slot* s = &G.slots[seq];
  if (s->status != UCS_OK)
    die("%s of seq %u failed: %s",
        s->state == SL_RECV ? "receiving the body" : "reading a type-1 buffer with ucp_get", seq,
        ucs_status_string(s->status));
  if (s->state == SL_RECV) {
    G.bodies_received++;
    G.body_types[s->body_type]++;
    if (s->body_type == 1) {
      start_gets(seq);
      return;
    }
  }
  free(s->list);
  s->list = NULL;
  s->state = SL_DONE;
}

static void write_all(const void* p, size_t n) {
  if (n && fwrite(p, 1, n, G.out) != n) die("cannot write %s: %s", G.out_path, strerror(errno));
}

static void write_ready(void) {
  static const uint8_t zeros[8];
  while (G.next_write < G.nslots && G.slots[G.next_write].state == SL_DONE) {
    slot* s = &G.slots[G.next_write];
    size_t fb = s->meta_len - 5, padded = (fb + 7) & ~(size_t)7;
    uint8_t prefix[8];
    st32(prefix, 0xFFFFFFFFu);
    st32(prefix + 4, (uint32_t)padded);
    write_all(prefix, 8);
    write_all(s->meta + 5, fb);
    write_all(zeros, padded - fb);
    write_all(s->body, (size_t)s->fm.body_length);
    free(s->meta);
    free(s->body);
    s->meta = s->body = NULL;
    s->state = SL_WRITTEN;
    G.next_write++;
  }
}

static int finished(void) { return G.have_eos && G.next_write == G.eos_seq; }

/* Says what the stream still waits for, for error messages. */
static const char* missing(void) {
  static char buf[256];
  if (!G.any_meta) return "no metadata received";
  if (G.nawaiting)
    snprintf(buf, sizeof buf, "waiting for the body of seq %u (%zu bodies missing)", G.awaiting[0],
             G.nawaiting);
  else if (!G.have_eos)
    snprintf(buf, sizeof buf, "no end of stream (seq 0..%u written, highest seen %u)",
             G.next_write ? G.next_write - 1 : 0, G.max_seen);
  else if (G.next_write >= G.nslots || G.slots[G.next_write].state == SL_EMPTY)
    snprintf(buf, sizeof buf, "gap: no metadata for seq %u (end of stream at %u)", G.next_write,
             G.eos_seq);
  else
    snprintf(buf, sizeof buf, "seq %u is still being received (end of stream at %u)", G.next_write,
             G.eos_seq);
  return buf;
}

/* ---- driving ---- */

/* Whether the stream still needs something from connection c. */
static int needs(const conn_t* c) {
  if (c == G.data && (G.nawaiting || G.ops)) return 1;
  if (c != G.meta) return 0;
  if (!G.have_eos) return 1;
  for (uint32_t s = G.next_write; s < G.eos_seq; s++)
    if (s >= G.nslots || G.slots[s].state == SL_EMPTY) return 1;
  return 0;
}

static int progress(void) {
  int any = 0;
  for (int i = 0; i < G.nconns; i++)
    while (ucp_worker_progress(G.conns[i].w)) any = 1;
  if (G.err[0]) die("%s", G.err);
  for (size_t i = 0; i < G.narrivals; i++) {
    any = 1;
    if (G.arrivals[i].data)
      take_metadata(G.arrivals[i].data, G.arrivals[i].len);
    else
      start_rndv(G.arrivals[i].desc, G.arrivals[i].len);
  }
  G.narrivals = 0;
  if (probe_bodies()) any = 1;
  for (size_t i = 0; i < G.ndone; i++) {
    any = 1;
    complete(G.done_q[i]);
  }
  G.ndone = 0;
  write_ready();
  return any;
}

/* Drives the worker until done() or failure; the idle limit restarts on every event. */
static void drive(int (*done)(void), const char* what) {
  int64_t deadline = now_ms() + G.timeout_ms;
  unsigned long seen = G.activity;
  for (;;) {
    int any = progress();
    if (G.activity != seen) {
      seen = G.activity;
      deadline = now_ms() + G.timeout_ms;
      any = 1;
    }
    if (done()) return;
    for (int i = 0; i < G.nconns; i++) {
      conn_t* c = &G.conns[i];
      if (c->want_done && c->want_status != UCS_OK)
        die("cannot reach %s: sending want_data failed: %s", c->uri->text,
            ucs_status_string(c->want_status));
    }
    if (!any && G.ops == 0) {
      for (int i = 0; i < G.nconns; i++) {
        conn_t* c = &G.conns[i];
        if (!c->failed || (c->want_done && !needs(c))) continue;
        if (!c->want_done)
          die("cannot reach %s: %s", c->uri->text, ucs_status_string(c->fail_status));
        if (!c->got_any)
          die("%s: the server closed the connection after want_data (unknown or expired "
              "ticket?)",
              c->uri->text);
        die("the server closed the %s connection (%s) before the stream was complete: %s", c->label,
            ucs_status_string(c->fail_status), missing());
      }
    }
    if (any) continue;
    int64_t left = deadline - now_ms();
    if (left <= 0) die("timed out after %d s %s: %s", G.timeout_ms / 1000, what, missing());
    wait_workers(G.ws, G.efds, G.nconns, (int)left);
  }
}

static int ops_done(void) { return G.ops == 0; }

static void connect_conn(conn_t* c) {
  ucp_ep_params_t ep;
  memset(&ep, 0, sizeof ep);
  ep.field_mask = UCP_EP_PARAM_FIELD_FLAGS | UCP_EP_PARAM_FIELD_SOCK_ADDR |
                  UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER;
  ep.flags = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER;
  ep.sockaddr.addr = (const struct sockaddr*)&c->uri->ss;
  ep.sockaddr.addrlen = c->uri->slen;
  ep.err_mode = UCP_ERR_HANDLING_MODE_PEER;
  ep.err_handler.cb = err_cb;
  ep.err_handler.arg = c;
  c->w = make_worker(G.ctx, &c->efd);
  G.ws[c - G.conns] = c->w;
  G.efds[c - G.conns] = c->efd;
  ucp_am_handler_param_t hp;
  memset(&hp, 0, sizeof hp);
  hp.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB |
                  UCP_AM_HANDLER_PARAM_FIELD_ARG | UCP_AM_HANDLER_PARAM_FIELD_FLAGS;
  hp.id = 0;
  hp.cb = am_cb;
  hp.arg = c;
  hp.flags = UCP_AM_FLAG_WHOLE_MSG;
  ucs_status_t st = ucp_worker_set_am_recv_handler(c->w, &hp);
  if (st != UCS_OK) die("ucp_worker_set_am_recv_handler: %s", ucs_status_string(st));
  st = ucp_ep_create(c->w, &ep, &c->ep);
  if (st != UCS_OK) die("cannot connect to %s: %s", c->uri->text, ucs_status_string(st));
  ucp_request_param_t p;
  memset(&p, 0, sizeof p);
  p.op_attr_mask =
      UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
  p.cb.send = want_cb;
  p.user_data = c;
  G.ops++;
  ucs_status_ptr_t sp = ucp_tag_send_nbx(c->ep, G.ticket, strlen(G.ticket), c->uri->want, &p);
  if (UCS_PTR_IS_ERR(sp))
    die("sending want_data to %s: %s", c->uri->text, ucs_status_string(UCS_PTR_STATUS(sp)));
}

static void send_free_msg(uint8_t* msg, size_t bytes, size_t naddr) {
  ucp_request_param_t p;
  memset(&p, 0, sizeof p);
  p.op_attr_mask =
      UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
  p.cb.send = free_cb;
  p.user_data = (void*)(uintptr_t)naddr;
  G.ops++;
  G.free_messages++;
  ucs_status_ptr_t sp = ucp_tag_send_nbx(G.data->ep, msg, bytes, G.data_uri.free_tag, &p);
  if (UCS_PTR_IS_ERR(sp)) die("sending free_data: %s", ucs_status_string(UCS_PTR_STATUS(sp)));
  /* the buffer must live until the send completes: kept to the end */
  PUSH(G.free_bufs, G.nfree_bufs, G.cap_free_bufs, msg);
}

static void send_frees(void) {
  uint64_t* all = u64set_list(&G.addrs);
  size_t n = G.addrs.count + (G.addrs.has_zero ? 1 : 0);
  if (G.fault == F_FREE_MALFORMED) send_free_msg(xcalloc(7, 1), 7, 0);
  if (G.fault == F_FREE_UNKNOWN) {
    uint8_t* msg = xmalloc(8);
    st64(msg, UINT64_C(0xDEADBEEF00000008));
    send_free_msg(msg, 8, 0);
  }
  if (G.fault == F_FREE_TWICE && n) {
    /* the first address now, and again in the full list below */
    uint8_t* msg = xmalloc(8);
    st64(msg, all[0]);
    send_free_msg(msg, 8, 0);
  }
  for (size_t i = 0; i < n; i += G.free_batch) {
    size_t k = n - i < G.free_batch ? n - i : G.free_batch;
    uint8_t* msg = xmalloc(8 * k);
    for (size_t j = 0; j < k; j++) st64(msg + 8 * j, all[i + j]);
    send_free_msg(msg, 8 * k, k);
  }
  free(all);
}

static void write_report(void) {
  if (!G.report) return;
  FILE* fp = fopen(G.report, "w");
  if (!fp) die("cannot write %s: %s", G.report, strerror(errno));
  fprintf(fp,
          "{\"metadata_received\":%lu,\"eos_seq\":%u,\"bodies_received\":%lu,"
          "\"body_types\":{\"0\":%lu,\"1\":%lu},\"am_eager\":%lu,\"am_rndv\":%lu,"
          "\"out_of_order\":%lu,\"address_pairs\":%lu,\"addresses_received\":%zu,"
          "\"addresses_freed\":%lu,\"free_messages\":%lu,\"bytes_fetched\":%" PRIu64
          ","
          "\"free_skipped\":%s,\"server_closed_first\":%s}\n",
          G.metadata_received, G.eos_seq, G.bodies_received, G.body_types[0], G.body_types[1],
          G.am_eager, G.am_rndv, G.out_of_order, G.address_pairs,
          G.addrs.count + (G.addrs.has_zero ? 1 : 0), G.addresses_freed, G.free_messages,
          G.bytes_fetched, G.free_skipped ? "true" : "false",
          G.server_closed_first ? "true" : "false");
  fclose(fp);
}

static uint64_t opt_num(const char* name, const char* v) {
  uint64_t x;
  if (!v || parse_u64(v, &x) < 0) die("%s wants a non-negative integer", name);
  return x;
}

int get_main(int argc, char** argv) {
  const char *uri = NULL, *data_uri = NULL;
  G.timeout_ms = 30000;
  G.linger_ms = 0;
  G.free_batch = 1024;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (a[0] != '-') {
      if (uri) die("more than one URI ('%s' and '%s'); use --data for the data URI", uri, a);
      uri = a;
      continue;
    }
    if (!v) die("%s wants a value (see dipc_peer --help)", a);
    if (!strcmp(a, "--data"))
      data_uri = v;
    else if (!strcmp(a, "--ticket"))
      G.ticket = v;
    else if (!strcmp(a, "--out"))
      G.out_path = v;
    else if (!strcmp(a, "--report"))
      G.report = v;
    else if (!strcmp(a, "--timeout"))
      G.timeout_ms = (int)opt_seconds(a, v) * 1000;
    else if (!strcmp(a, "--linger"))
      G.linger_ms = (int)opt_seconds(a, v) * 1000;
    else if (!strcmp(a, "--free-batch"))
      G.free_batch = (size_t)opt_num(a, v);
    else if (!strcmp(a, "--fault")) {
      G.fault = -1;
      for (int f = 0; f < F_COUNT; f++)
        if (!strcmp(v, fault_names[f])) G.fault = f;
      if (G.fault < 0) die("unknown --fault '%s' (see dipc_peer --help)", v);
    } else
      die("unknown argument '%s' (see dipc_peer --help)", a);
    i++;
  }
  if (!uri || !G.ticket || !G.out_path) die("a URI, --ticket and --out are required");
  if (G.timeout_ms <= 0) die("--timeout wants a positive number of seconds");
  if (G.free_batch == 0) die("--free-batch wants at least 1");
  parse_uri(uri, &G.meta_uri);
  if (data_uri)
    parse_uri(data_uri, &G.data_uri);
  else
    G.data_uri = G.meta_uri;
  G.out = fopen(G.out_path, "wb");
  if (!G.out) die("cannot create %s: %s", G.out_path, strerror(errno));
  g_unlink_on_error = G.out_path;
  u64set_init(&G.addrs);

  G.ctx = make_context();

  G.conns[0].label = data_uri ? "metadata" : "metadata+data";
  G.conns[0].uri = &G.meta_uri;
  G.nconns = 1;
  G.meta = G.data = &G.conns[0];
  if (data_uri) {
    G.conns[1].label = "data";
    G.conns[1].uri = &G.data_uri;
    G.nconns = 2;
    G.data = &G.conns[1];
  }
  for (int i = 0; i < G.nconns; i++) connect_conn(&G.conns[i]);

  drive(finished, "reading the stream");
  static const uint8_t eos[8] = {0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0};
  write_all(eos, 8);
  if (fclose(G.out) != 0) die("cannot write %s: %s", G.out_path, strerror(errno));
  drive(ops_done, "finishing");
  for (int i = 0; i < G.nconns; i++) {
    ucp_tag_recv_info_t info;
    if (ucp_tag_probe_nb(G.conns[i].w, 0, 0, 0, &info))
      die("an extra tagged message (tag 0x%016" PRIx64
          ", %zu bytes) arrived on the %s "
          "connection; no metadata message asked for it",
          info.sender_tag, info.length, G.conns[i].label);
  }

  size_t naddr = G.addrs.count + (G.addrs.has_zero ? 1 : 0);
  if (naddr) {
    if (!G.data_uri.has_free) {
      note("%zu type-1 addresses received but %s has no free_data: nothing freed", naddr,
           G.data_uri.text);
      G.free_skipped = 1;
    } else if (G.fault == F_FREE_NONE) {
      note("not freeing %zu addresses (--fault free-none)", naddr);
      G.free_skipped = 1;
    } else if (G.data->failed) {
      note("the server closed the data connection before free_data: %zu addresses not freed",
           naddr);
      G.free_skipped = 1;
    } else {
      send_frees();
      drive(ops_done, "sending free_data");
      /* optionally let the server close first (it closes once everything is freed) */
      int64_t end = now_ms() + G.linger_ms;
      while (!G.data->failed && now_ms() < end) {
        progress();
        if (!G.data->failed) wait_workers(G.ws, G.efds, G.nconns, (int)(end - now_ms()));
      }
    }
  }
  for (int i = 0; i < G.nconns; i++)
    if (G.conns[i].failed) G.server_closed_first = 1;

  for (int i = 0; i < G.nconns; i++) {
    conn_t* c = &G.conns[i];
    ucp_request_param_t p;
    memset(&p, 0, sizeof p);
    p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    if (c->failed) {
      p.op_attr_mask |= UCP_OP_ATTR_FIELD_FLAGS;
      p.flags = UCP_EP_CLOSE_FLAG_FORCE;
    }
    p.cb.send = close_cb;
    p.user_data = c;
    ucs_status_ptr_t sp = ucp_ep_close_nbx(c->ep, &p);
    if (sp == NULL || UCS_PTR_IS_ERR(sp)) c->closed = 1;
  }
  int64_t end = now_ms() + G.timeout_ms;
  for (;;) {
    for (int i = 0; i < G.nconns; i++)
      while (ucp_worker_progress(G.conns[i].w)) {
      }
    int open = 0;
    for (int i = 0; i < G.nconns; i++) open |= !G.conns[i].closed;
    if (!open || now_ms() >= end) break;
    wait_workers(G.ws, G.efds, G.nconns, (int)(end - now_ms()));
  }
  if (G.rkey) ucp_rkey_destroy(G.rkey);
  write_report();
  for (size_t i = 0; i < G.nfree_bufs; i++) free(G.free_bufs[i]);
  for (int i = 0; i < G.nconns; i++) ucp_worker_destroy(G.conns[i].w);
  ucp_cleanup(G.ctx);
  return 0;
}
