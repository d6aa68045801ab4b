/* dipc_peer serve: the server side of the Dissociated IPC protocol (see dipc_peer.c).
 * Over 600 lines: the whole server role of the protocol in one file (the peer is kept to three C
 * files, sharing only dipc_peer.c/.h).
 * One UCP worker per connection, as in the reference implementation, because a tagged message
 * does not say which endpoint sent it: the worker identifies the client. One thread drives all
 * workers, sleeping on their event fds. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "dipc_peer.h"

enum { ROLE_BOTH = 0, ROLE_META = 1, ROLE_DATA = 2 };
enum { ST_WANT, ST_SENDING, ST_WAIT_FREE, ST_WAIT_CLOSE, ST_CLOSING, ST_DONE };
static const char* role_name[] = {"metadata+data", "metadata", "data"};

/* Faults a test can inject to check that a client fails cleanly (see --help). */
enum {
  F_NONE,
  F_TAG_RESERVED,
  F_BODY_LENGTH,
  F_LIST_LENGTH,
  F_AM_HEADER,
  F_DUP_SEQ,
  F_BAD_FLATBUFFER,
  F_NO_EOS,
  F_EOS_LENGTH,
  F_SCHEMA_LATE,
  F_GAP,
  F_CLOSE_EARLY,
  F_EXTRA_BODY,
  F_WRONG_CONNECTION,
  F_COUNT
};
static const char* fault_names[F_COUNT] = {
    "none",    "tag-reserved",   "body-length", "list-length",     "am-header",
    "dup-seq", "bad-flatbuffer", "no-eos",      "eos-length",      "schema-late",
    "gap",     "close-early",    "extra-body",  "wrong-connection"};

/* Above this a want_data body is not a ticket: the connection is refused. */
#define MAX_TICKET (1u << 20)
/* How long free_data may still come after the client's disconnect is seen. */
#define FAIL_GRACE_MS 200

/* Above this a free_data message is refused as malformed. */
#define MAX_FREE (64u << 20)
#define MAX_PENDING_CONN 64

typedef struct conn {
  struct conn* next;
  int id;
  ucp_worker_h w;
  int efd;
  ucp_ep_h ep;
  int state, role, role_known, accepted;
  int failed, fail_grace; /* fail_grace: the disconnect seen while frees were awaited */
  ucs_status_t fail_status;
  unsigned long activity, seen_activity;
  int64_t deadline;
  size_t ops; /* sends in flight */
  ucs_status_t op_status;
  int recv_busy, recv_done;
  ucs_status_t recv_status;
  uint8_t* rbuf;
  size_t rlen;
  uint8_t* freed; /* per arena slot, type 1 only */
  size_t nfreed;
  int closed, close_forced;
} conn;

typedef struct {
  conn* c;
  void* buf;
} send_op;

static struct {
  const char *listen, *data_listen, *file, *ticket, *report;
  int body, split, once, close_after_send, timeout_ms, shuffle;
  uint32_t am_flags;
  int fault;
  unsigned long seed;
  uint64_t want_one, want_meta, want_data, free_tag;

  ucp_context_h ctx;
  ucp_worker_h lw;
  int lefd;
  ucp_listener_h listeners[2];
  ucp_conn_request_h pending[MAX_PENDING_CONN];
  int npending;
  stream_msg* msgs;
  size_t nmsgs;
  size_t* order;
  uint8_t* arena;
  size_t arena_len;
  ucp_mem_h memh;
  uint64_t* slot_addr; /* sorted: the arena is filled in order */
  size_t nslots;
  size_t* first_slot; /* per message */
  conn* conns;
  int next_id;

  unsigned long clients, meta_streams, data_streams, refused, addresses_sent, addresses_freed,
      duplicate_frees, unknown_frees, malformed_frees, free_messages, addresses_unfreed,
      send_errors, bodies_sent, metadata_sent, sessions_done[3], sessions_roleless;
} S;

static volatile sig_atomic_t g_stop;
static void on_signal(int sig) {
  (void)sig;
  g_stop = 1;
}

/* ---- callbacks (run inside ucp_worker_progress) ---- */

static void err_cb(void* arg, ucp_ep_h ep, ucs_status_t status) {
  (void)ep;
  conn* c = arg;
  c->failed = 1;
  c->fail_status = status;
  c->activity++;
}

static void send_cb(void* req, ucs_status_t status, void* user) {
  send_op* op = user;
  op->c->ops--;
  op->c->activity++;
  if (status != UCS_OK && op->c->op_status == UCS_OK) op->c->op_status = status;
  free(op->buf);
  free(op);
  ucp_request_free(req);
}

static void recv_cb(void* req, ucs_status_t status, const ucp_tag_recv_info_t* info, void* user) {
  conn* c = user;
  c->recv_done = 1;
  c->recv_status = status;
  if (status == UCS_OK) c->rlen = info->length;
  c->activity++;
  ucp_request_free(req);
}

static void close_cb(void* req, ucs_status_t status, void* user) {
  (void)status;
  conn* c = user;
  c->closed = 1;
  c->activity++;
  ucp_request_free(req);
}

static void conn_cb(ucp_conn_request_h req, void* arg) {
  if (S.npending == MAX_PENDING_CONN) {
    ucp_listener_reject(S.listeners[(intptr_t)arg], req);
    return;
  }
  S.pending[S.npending++] = req;
}

/* ---- operations ---- */

static void track_send(conn* c, send_op* op, ucs_status_ptr_t sp, const char* what) {
  if (UCS_PTR_IS_ERR(sp)) {
    note("connection %d: %s: %s", c->id, what, ucs_status_string(UCS_PTR_STATUS(sp)));
    if (c->op_status == UCS_OK) c->op_status = UCS_PTR_STATUS(sp);
    free(op->buf);
    free(op);
  } else if (sp == NULL) {
    free(op->buf);
    free(op);
  } else {
    c->ops++;
  }
}

static ucp_request_param_t send_param(send_op* op, uint32_t flags) {
  ucp_request_param_t p;
  memset(&p, 0, sizeof p);
  p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
                   UCP_OP_ATTR_FLAG_NO_IMM_CMPL | UCP_OP_ATTR_FIELD_FLAGS;
  p.flags = flags;
  p.cb.send = send_cb;
  p.user_data = op;
  return p;
}

static void send_metadata(conn* c, size_t seq) {
  const stream_msg* m = &S.msgs[seq];
  if (S.fault == F_GAP && seq == 1) return;
  send_op* op = xmalloc(sizeof *op);
  op->c = c;
  uint8_t* buf = op->buf = xmalloc(5 + m->meta_len);
  buf[0] = META_FLATBUFFER;
  uint32_t wire_seq = (uint32_t)seq;
  if (S.fault == F_SCHEMA_LATE && seq <= 1) wire_seq = 1 - (uint32_t)seq;
  st32(buf + 1, wire_seq);
  memcpy(buf + 5, m->meta, m->meta_len);
  if (S.fault == F_BAD_FLATBUFFER && seq == 1) st32(buf + 5, 0xFFFFFF00u);
  static const char header[4] = "HDR";
  int with_header = S.fault == F_AM_HEADER;
  ucp_request_param_t p = send_param(op, S.am_flags);
  track_send(c, op,
             ucp_am_send_nbx(c->ep, 0, with_header ? header : NULL, with_header ? 4 : 0, buf,
                             5 + m->meta_len, &p),
             "ucp_am_send_nbx (metadata)");
  S.metadata_sent++;
  if (S.fault == F_DUP_SEQ && seq == 1) {
    S.fault = F_NONE; /* once */
    send_metadata(c, seq);
    S.fault = F_DUP_SEQ;
  }
}

static void send_eos(conn* c) {
  if (S.fault == F_NO_EOS) return;
  size_t len = S.fault == F_EOS_LENGTH ? 6 : 5;
  send_op* op = xmalloc(sizeof *op);
  op->c = c;
  uint8_t* buf = op->buf = xcalloc(len, 1);
  buf[0] = META_EOS;
  st32(buf + 1, (uint32_t)S.nmsgs);
  ucp_request_param_t p = send_param(op, S.am_flags);
  track_send(c, op, ucp_am_send_nbx(c->ep, 0, NULL, 0, buf, len, &p), "ucp_am_send_nbx (end)");
}

static void send_body(conn* c, size_t seq) {
  const stream_msg* m = &S.msgs[seq];
  send_op* op = xmalloc(sizeof *op);
  op->c = c;
  op->buf = NULL;
  ucp_request_param_t p = send_param(op, 0);
  p.op_attr_mask &= ~(uint32_t)UCP_OP_ATTR_FIELD_FLAGS;
  ucs_status_ptr_t sp;
  ucp_tag_t extra = S.fault == F_TAG_RESERVED ? (ucp_tag_t)1 << 40 : 0;
  int lie = seq == 1 && (S.fault == F_BODY_LENGTH || S.fault == F_LIST_LENGTH);
  if (S.body == 0 && lie) {
    /* the body is 8 bytes longer than the metadata's bodyLength */
    op->buf = xcalloc((size_t)m->fm.body_length + 8, 1);
    memcpy(op->buf, m->body, (size_t)m->fm.body_length);
    sp =
        ucp_tag_send_nbx(c->ep, op->buf, (size_t)m->fm.body_length + 8, (ucp_tag_t)seq | extra, &p);
  } else if (S.body == 0) {
    sp = ucp_tag_send_nbx(c->ep, m->body, (size_t)m->fm.body_length, (ucp_tag_t)seq | extra, &p);
  } else {
    uint32_t nb = m->fm.nbuffers;
    uint8_t* list = op->buf = xmalloc(16 + 16 * (size_t)nb);
    uint64_t total = 0;
    for (uint32_t j = 0; j < nb; j++) {
      int64_t off, len;
      fb_buffer(&m->fm, j, &off, &len);
      st64(list + 16 + 16 * (size_t)j, S.slot_addr[S.first_slot[seq] + j]);
      st64(list + 24 + 16 * (size_t)j, (uint64_t)len);
      total += (uint64_t)len;
    }
    st64(list, total + (lie && S.fault == F_BODY_LENGTH));
    st64(list + 8, nb);
    if (lie && S.fault == F_LIST_LENGTH && nb) st64(list + 24, ld64(list + 24) + 1);
    S.addresses_sent += nb;
    sp =
        ucp_tag_send_nbx(c->ep, list, 16 + 16 * (size_t)nb, ((ucp_tag_t)1 << 56) | seq | extra, &p);
  }
  track_send(c, op, sp, "ucp_tag_send_nbx (body)");
  S.bodies_sent++;
}

static void close_ep(conn* c, int force) {
  ucp_request_param_t p;
  memset(&p, 0, sizeof p);
  p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  if (force) {
    p.op_attr_mask |= UCP_OP_ATTR_FIELD_FLAGS;
    p.flags = UCP_EP_CLOSE_FLAG_FORCE;
  }
  p.cb.send = close_cb;
  p.user_data = c;
  c->close_forced = force;
  c->state = ST_CLOSING;
  ucs_status_ptr_t sp = ucp_ep_close_nbx(c->ep, &p);
  if (sp == NULL || UCS_PTR_IS_ERR(sp)) c->closed = 1;
}

static void start_streams(conn* c) {
  int meta = c->role != ROLE_DATA, data = c->role != ROLE_META;
  if (meta) S.meta_streams++;
  if (data) S.data_streams++;
  if (c->role != ROLE_META) S.clients++;
  if (data && S.body == 1) {
    c->freed = xcalloc(S.nslots ? S.nslots : 1, 1);
    c->nfreed = 0;
  }
  if (data && S.fault == F_EXTRA_BODY) {
    send_op* op = xmalloc(sizeof *op);
    op->c = c;
    op->buf = NULL;
    ucp_request_param_t p = send_param(op, 0);
    track_send(c, op, ucp_tag_send_nbx(c->ep, "", 0, 0, &p), "ucp_tag_send_nbx (extra)");
  }
  size_t n = S.fault == F_CLOSE_EARLY ? S.nmsgs / 2 : S.nmsgs;
  for (size_t k = 0; k < n; k++) {
    if (meta) send_metadata(c, S.order[k]);
    if (data && S.msgs[k].fm.header_type != HDR_SCHEMA) send_body(c, k);
  }
  if (meta && S.fault != F_CLOSE_EARLY) send_eos(c);
  if (!meta && S.fault == F_WRONG_CONNECTION) send_eos(c); /* metadata on the data connection */
  c->state = ST_SENDING;
}

static size_t unfreed(const conn* c) { return c->freed ? S.nslots - c->nfreed : 0; }

static void process_free(conn* c) {
  S.free_messages++;
  if (c->rlen == 0 || c->rlen % 8 != 0) {
    note("connection %d: malformed free_data of %zu bytes (want a non-empty list of LE uint64)",
         c->id, c->rlen);
    S.malformed_frees++;
    return;
  }
  for (size_t i = 0; i < c->rlen / 8; i++) {
    uint64_t a = ld64(c->rbuf + 8 * i);
    size_t lo = 0, hi = S.nslots;
    while (lo < hi) {
      size_t mid = (lo + hi) / 2;
      if (S.slot_addr[mid] < a)
        lo = mid + 1;
      else
        hi = mid;
    }
    if (lo == S.nslots || S.slot_addr[lo] != a || !c->freed) {
      note("connection %d: free_data names unknown address 0x%" PRIx64, c->id, a);
      S.unknown_frees++;
    } else if (c->freed[lo]) {
      note("connection %d: free_data frees address 0x%" PRIx64 " twice", c->id, a);
      S.duplicate_frees++;
    } else {
      c->freed[lo] = 1;
      c->nfreed++;
      S.addresses_freed++;
    }
  }
}

/* Posts the receive of a probed message into c->rbuf. */
static void recv_probed(conn* c, ucp_tag_message_h msg, size_t len) {
  c->rbuf = xmalloc(len);
  c->recv_busy = 1;
  c->recv_done = 0;
  c->rlen = len;
  ucp_request_param_t p;
  memset(&p, 0, sizeof p);
  p.op_attr_mask =
      UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
  p.cb.recv = recv_cb;
  p.user_data = c;
  ucs_status_ptr_t sp = ucp_tag_msg_recv_nbx(c->w, c->rbuf, len, msg, &p);
  if (UCS_PTR_IS_ERR(sp)) {
    c->recv_done = 1;
    c->recv_status = UCS_PTR_STATUS(sp);
  }
}

static void finish_recv(conn* c) {
  free(c->rbuf);
  c->rbuf = NULL;
  c->recv_busy = c->recv_done = 0;
}

static void count_unfreed_and_close(conn* c, const char* why) {
  size_t left = unfreed(c);
  if (left) note("connection %d: %s; %zu addresses never freed (freed now)", c->id, why, left);
  S.addresses_unfreed += left;
  close_ep(c, 1);
}

/* Advances one connection; returns 1 when something changed. */
static int step(conn* c) {
  int64_t now = now_ms();
  int timed_out = now > c->deadline;
  int start_state = c->state;
  ucp_tag_recv_info_t info;
  switch (c->state) {
    case ST_WANT:
      if (!c->recv_busy) {
        uint64_t tags[2] = {S.split ? S.want_meta : S.want_one, S.want_data};
        int roles[2] = {S.split ? ROLE_META : ROLE_BOTH, ROLE_DATA};
        for (int i = 0; i < (S.split ? 2 : 1); i++) {
          ucp_tag_message_h msg = ucp_tag_probe_nb(c->w, tags[i], UINT64_MAX, 1, &info);
          if (!msg) continue;
          c->role = roles[i];
          c->role_known = 1;
          if (info.length > MAX_TICKET) {
            note("connection %d: want_data body of %zu bytes is not a ticket; refused", c->id,
                 info.length);
            S.refused++;
            close_ep(c, 0);
            return 1;
          }
          recv_probed(c, msg, info.length);
          return 1;
        }
        if (c->failed) {
          note("connection %d: closed before want_data (%s)", c->id,
               ucs_status_string(c->fail_status));
          close_ep(c, 1);
        } else if (timed_out) {
          note("connection %d: no want_data within %d s", c->id, S.timeout_ms / 1000);
          close_ep(c, 1);
        }
      } else if (c->recv_done) {
        if (c->recv_status != UCS_OK) {
          note("connection %d: receiving want_data failed: %s", c->id,
               ucs_status_string(c->recv_status));
          finish_recv(c);
          close_ep(c, 1);
        } else if (c->rlen != strlen(S.ticket) || memcmp(c->rbuf, S.ticket, c->rlen) != 0) {
          note("connection %d: unknown ticket '%.*s' on the %s want_data; closing the endpoint",
               c->id, (int)(c->rlen > 200 ? 200 : c->rlen), (const char*)c->rbuf,
               role_name[c->role]);
          S.refused++;
          finish_recv(c);
          close_ep(c, 0);
        } else {
          finish_recv(c);
          c->accepted = 1;
          start_streams(c);
        }
      }
      break;
    case ST_SENDING:
      if (c->ops == 0) {
        if (c->op_status != UCS_OK || c->failed) {
          S.send_errors++;
          note("connection %d: sending failed: %s", c->id,
               ucs_status_string(c->op_status != UCS_OK ? c->op_status : c->fail_status));
          count_unfreed_and_close(c, "sending failed");
        } else if (S.fault == F_CLOSE_EARLY) {
          note("connection %d: closing mid-stream (--fault close-early)", c->id);
          S.addresses_unfreed += unfreed(c);
          close_ep(c, 0);
        } else if (c->freed) {
          c->state = ST_WAIT_FREE;
        } else if (S.close_after_send) {
          close_ep(c, 0);
        } else {
          c->state = ST_WAIT_CLOSE;
        }
      } else if (timed_out) {
        note("connection %d: sends made no progress for %d s", c->id, S.timeout_ms / 1000);
        count_unfreed_and_close(c, "timed out while sending");
      }
      break;
    case ST_WAIT_FREE:
      for (;;) {
        if (c->recv_busy) {
          if (!c->recv_done) break;
          if (c->recv_status == UCS_OK)
            process_free(c);
          else
            note("connection %d: receiving free_data failed: %s", c->id,
                 ucs_status_string(c->recv_status));
          finish_recv(c);
          continue;
        }
        ucp_tag_message_h msg = ucp_tag_probe_nb(c->w, S.free_tag, UINT64_MAX, 1, &info);
        if (!msg) break;
        if (info.length > MAX_FREE) {
          note("connection %d: free_data of %zu bytes refused", c->id, info.length);
          S.malformed_frees++;
          count_unfreed_and_close(c, "malformed free_data");
          return 1;
        }
        recv_probed(c, msg, info.length);
      }
      if (c->recv_busy) break;
      if (c->nfreed == S.nslots) {
        close_ep(c, 0);
      } else if (c->failed) {
        /* UCX can report a client's disconnect before it has delivered the free_data the
           client sent just before closing (they may travel on different lanes): look for it
           a little longer before counting what is left unfreed. */
        if (!c->fail_grace) {
          c->fail_grace = 1;
          c->deadline = now + FAIL_GRACE_MS;
        } else if (timed_out) {
          count_unfreed_and_close(c, "the client disconnected");
        }
      } else if (timed_out) {
        count_unfreed_and_close(c, "no free_data within the timeout");
      }
      break;
    case ST_WAIT_CLOSE:
      if (c->failed)
        close_ep(c, 1);
      else if (timed_out)
        close_ep(c, 0);
      break;
    case ST_CLOSING:
      if (c->closed && c->ops == 0 && !c->recv_busy)
        c->state = ST_DONE;
      else if (timed_out && !c->close_forced)
        close_ep(c, 1);
      break;
    default:
      break;
  }
  return c->state != start_state;
}

static void accept_pending(void) {
  for (int i = 0; i < S.npending; i++) {
    conn* c = xcalloc(1, sizeof *c);
    c->id = ++S.next_id;
    c->w = make_worker(S.ctx, &c->efd);
    ucp_ep_params_t ep;
    memset(&ep, 0, sizeof ep);
    ep.field_mask = UCP_EP_PARAM_FIELD_CONN_REQUEST | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                    UCP_EP_PARAM_FIELD_ERR_HANDLER;
    ep.conn_request = S.pending[i];
    ep.err_mode = UCP_ERR_HANDLING_MODE_PEER;
    ep.err_handler.cb = err_cb;
    ep.err_handler.arg = c;
    ucs_status_t st = ucp_ep_create(c->w, &ep, &c->ep);
    if (st != UCS_OK) {
      note("connection %d: ucp_ep_create: %s", c->id, ucs_status_string(st));
      ucp_worker_destroy(c->w);
      free(c);
      continue;
    }
    c->state = ST_WANT;
    c->deadline = now_ms() + S.timeout_ms;
    c->next = S.conns;
    S.conns = c;
  }
  S.npending = 0;
}

static void reap(void) {
  for (conn** pc = &S.conns; *pc;) {
    conn* c = *pc;
    if (c->state != ST_DONE) {
      pc = &c->next;
      continue;
    }
    *pc = c->next;
    if (c->role_known)
      S.sessions_done[c->role]++;
    else
      S.sessions_roleless++;
    ucp_worker_destroy(c->w);
    free(c->freed);
    free(c);
  }
}

static int once_done(void) {
  if (!S.once) return 0;
  if (S.split) {
    /* A client refused on one stream may close its other before that one's want_data: a
     * connection that ended without saying its role is then that client's other stream. */
    unsigned long meta = S.sessions_done[ROLE_META], data = S.sessions_done[ROLE_DATA];
    return (meta >= 1 && data >= 1) || (meta + data >= 1 && meta + data + S.sessions_roleless >= 2);
  }
  return S.sessions_done[ROLE_BOTH] >= 1;
}

/* ---- setup ---- */

static void build_arena(void) {
  S.first_slot = xcalloc(S.nmsgs, sizeof(size_t));
  size_t nslots = 0, len = 0;
  for (size_t k = 0; k < S.nmsgs; k++) {
    S.first_slot[k] = nslots;
    for (uint32_t j = 0; j < S.msgs[k].fm.nbuffers; j++) {
      int64_t off, blen;
      fb_buffer(&S.msgs[k].fm, j, &off, &blen);
      /* every buffer gets its own address, empty ones included, so frees can be counted */
      len += ((size_t)blen + 64) & ~(size_t)63;
      nslots++;
    }
  }
  S.arena_len = len ? len : 64;
  void* arena = NULL;
  if (posix_memalign(&arena, 4096, S.arena_len) != 0) die("out of memory for the arena");
  S.arena = arena;
  memset(S.arena, 0, S.arena_len);
  S.slot_addr = xmalloc((nslots + 1) * sizeof(uint64_t));
  S.nslots = nslots;
  size_t pos = 0, s = 0;
  for (size_t k = 0; k < S.nmsgs; k++) {
    for (uint32_t j = 0; j < S.msgs[k].fm.nbuffers; j++) {
      int64_t off, blen;
      fb_buffer(&S.msgs[k].fm, j, &off, &blen);
      memcpy(S.arena + pos, S.msgs[k].body + off, (size_t)blen);
      S.slot_addr[s++] = (uint64_t)(uintptr_t)(S.arena + pos);
      pos += ((size_t)blen + 64) & ~(size_t)63;
    }
  }
  ucp_mem_map_params_t mp;
  memset(&mp, 0, sizeof mp);
  mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
  mp.address = S.arena;
  mp.length = S.arena_len;
  ucs_status_t st = ucp_mem_map(S.ctx, &mp, &S.memh);
  if (st != UCS_OK) die("ucp_mem_map of %zu bytes: %s", S.arena_len, ucs_status_string(st));
}

static char* remote_handle(void) {
  void* rkey;
  size_t rlen;
  ucs_status_t st = ucp_rkey_pack(S.ctx, S.memh, &rkey, &rlen);
  if (st != UCS_OK) die("ucp_rkey_pack: %s", ucs_status_string(st));
  char* b64 = b64_encode(rkey, rlen);
  ucp_rkey_buffer_release(rkey);
  char* pct = pct_encode(b64);
  free(b64);
  return pct;
}

static int start_listener(int idx, const char* hostport, char* host, size_t hostlen) {
  struct sockaddr_storage ss;
  int port;
  socklen_t alen = resolve_hostport(hostport, &ss, host, hostlen, &port);
  ucp_listener_params_t lp;
  memset(&lp, 0, sizeof lp);
  lp.field_mask = UCP_LISTENER_PARAM_FIELD_SOCK_ADDR | UCP_LISTENER_PARAM_FIELD_CONN_HANDLER;
  lp.sockaddr.addr = (const struct sockaddr*)&ss;
  lp.sockaddr.addrlen = alen;
  lp.conn_handler.cb = conn_cb;
  lp.conn_handler.arg = (void*)(intptr_t)idx;
  ucs_status_t st = ucp_listener_create(S.lw, &lp, &S.listeners[idx]);
  if (st != UCS_OK) die("cannot listen on %s: %s", hostport, ucs_status_string(st));
  ucp_listener_attr_t la;
  memset(&la, 0, sizeof la);
  la.field_mask = UCP_LISTENER_ATTR_FIELD_SOCKADDR;
  st = ucp_listener_query(S.listeners[idx], &la);
  if (st != UCS_OK) die("ucp_listener_query: %s", ucs_status_string(st));
  const struct sockaddr* sa = (const struct sockaddr*)&la.sockaddr;
  return sa->sa_family == AF_INET6 ? ntohs(((const struct sockaddr_in6*)sa)->sin6_port)
                                   : ntohs(((const struct sockaddr_in*)sa)->sin_port);
}

static void print_uri(const char* label, const char* host, int port, uint64_t want, int data,
                      const char* rh) {
  int v6 = strchr(host, ':') != NULL;
  printf("%s ucx://%s%s%s:%d?want_data=%" PRIu64, label, v6 ? "[" : "", host, v6 ? "]" : "", port,
         want);
  if (data && S.body == 1) printf("&free_data=%" PRIu64 "&remote_handle=%s", S.free_tag, rh);
  printf("\n");
}

static void write_report(void) {
  if (!S.report) return;
  FILE* fp = fopen(S.report, "w");
  if (!fp) die("cannot write %s: %s", S.report, strerror(errno));
  fprintf(fp,
          "{\"clients\":%lu,\"metadata_streams\":%lu,\"data_streams\":%lu,\"tickets_refused\":%lu,"
          "\"metadata_sent\":%lu,\"bodies_sent\":%lu,\"body_type\":%d,\"addresses_sent\":%lu,"
          "\"addresses_freed\":%lu,\"unknown_frees\":%lu,\"duplicate_frees\":%lu,"
          "\"malformed_frees\":%lu,\"free_messages\":%lu,\"addresses_unfreed\":%lu,"
          "\"send_errors\":%lu}\n",
          S.clients, S.meta_streams, S.data_streams, S.refused, S.metadata_sent, S.bodies_sent,
          S.body, S.addresses_sent, S.addresses_freed, S.unknown_frees, S.duplicate_frees,
          S.malformed_frees, S.free_messages, S.addresses_unfreed, S.send_errors);
  fclose(fp);
}

static uint64_t opt_u64(const char* name, const char* v) {
  uint64_t x;
  if (!v || parse_u64(v, &x) < 0) die("%s wants an unsigned 64-bit decimal", name);
  return x;
}

int serve_main(int argc, char** argv) {
  S.body = -1;
  S.timeout_ms = 30000;
  S.want_one = S.want_data = TAG_WANT_DATA;
  S.want_meta = TAG_WANT_META;
  S.free_tag = TAG_FREE_DATA;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    int takes = 1;
    if (!strcmp(a, "--listen"))
      S.listen = v;
    else if (!strcmp(a, "--data-listen"))
      S.data_listen = v, S.split = 1;
    else if (!strcmp(a, "--file"))
      S.file = v;
    else if (!strcmp(a, "--ticket"))
      S.ticket = v;
    else if (!strcmp(a, "--report"))
      S.report = v;
    else if (!strcmp(a, "--body"))
      S.body = v && !strcmp(v, "0") ? 0 : v && !strcmp(v, "1") ? 1 : -2;
    else if (!strcmp(a, "--timeout"))
      S.timeout_ms = (int)opt_seconds(a, v) * 1000;
    else if (!strcmp(a, "--shuffle"))
      S.shuffle = 1, S.seed = (unsigned long)opt_u64(a, v);
    else if (!strcmp(a, "--want-data"))
      S.want_one = S.want_data = opt_u64(a, v);
    else if (!strcmp(a, "--meta-want-data"))
      S.want_meta = opt_u64(a, v);
    else if (!strcmp(a, "--free-data"))
      S.free_tag = opt_u64(a, v);
    else if (!strcmp(a, "--fault")) {
      S.fault = -1;
      for (int f = 0; f < F_COUNT; f++)
        if (v && !strcmp(v, fault_names[f])) S.fault = f;
      if (S.fault < 0) die("unknown --fault '%s' (see dipc_peer --help)", v ? v : "");
    } else if (!strcmp(a, "--am")) {
      if (!v) die("--am wants eager, rndv or auto");
      S.am_flags = !strcmp(v, "eager")  ? UCP_AM_SEND_FLAG_EAGER
                   : !strcmp(v, "rndv") ? UCP_AM_SEND_FLAG_RNDV
                   : !strcmp(v, "auto") ? 0
                                        : (die("--am wants eager, rndv or auto"), 0);
    } else {
      takes = 0;
      if (!strcmp(a, "--split"))
        S.split = 1;
      else if (!strcmp(a, "--once"))
        S.once = 1;
      else if (!strcmp(a, "--close-after-send"))
        S.close_after_send = 1;
      else
        die("unknown argument '%s' (see dipc_peer --help)", a);
    }
    if (takes && !v) die("%s wants a value", a);
    i += takes;
  }
  if (!S.listen || !S.file || !S.ticket) die("--listen, --file and --ticket are required");
  if (S.body < 0) die("--body wants 0 (packed body) or 1 (address list)");
  if (S.timeout_ms <= 0) die("--timeout wants a positive number of seconds");
  if (S.split && S.want_meta == S.want_data)
    die("the metadata and data want_data tags must differ");

  size_t flen;
  uint8_t* file = read_file(S.file, &flen);
  S.msgs = parse_stream(file, flen, &S.nmsgs, S.file);
  S.order = xmalloc(S.nmsgs * sizeof(size_t));
  for (size_t k = 0; k < S.nmsgs; k++) S.order[k] = k;
  if (S.shuffle) {
    uint64_t x = S.seed * 6364136223846793005ull + 1442695040888963407ull;
    for (size_t k = S.nmsgs; k > 1; k--) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      size_t j = (size_t)((x >> 33) % k), t = S.order[k - 1];
      S.order[k - 1] = S.order[j];
      S.order[j] = t;
    }
  }

  /* before the URI is printed: whoever reads it may stop the server at once */
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);

  S.ctx = make_context();
  S.lw = make_worker(S.ctx, &S.lefd);
  char* rh = NULL;
  if (S.body == 1) {
    build_arena();
    rh = remote_handle();
  }
  char host[256], dhost[256];
  int port = start_listener(0, S.listen, host, sizeof host);
  int dport = port;
  strcpy(dhost, host);
  if (S.data_listen) dport = start_listener(1, S.data_listen, dhost, sizeof dhost);
  if (S.split) {
    print_uri("METADATA_URI", host, port, S.want_meta, 0, rh);
    print_uri("DATA_URI", dhost, dport, S.want_data, 1, rh);
  } else {
    print_uri("URI", host, port, S.want_one, 1, rh);
  }
  fflush(stdout);

  ucp_worker_h ws[64];
  int efds[64];
  while (!g_stop && !once_done()) {
    int changed;
    do {
      changed = 0;
      while (ucp_worker_progress(S.lw)) changed = 1;
      if (S.npending) {
        accept_pending();
        changed = 1;
      }
      for (conn* c = S.conns; c; c = c->next) {
        while (ucp_worker_progress(c->w)) changed = 1;
        if (c->activity != c->seen_activity) {
          c->seen_activity = c->activity;
          c->deadline = now_ms() + S.timeout_ms;
        }
        while (step(c)) changed = 1;
      }
      reap();
    } while (changed && !once_done());
    if (once_done()) break;
    int n = 0;
    int64_t wait = 1000, now = now_ms();
    ws[n] = S.lw;
    efds[n++] = S.lefd;
    for (conn* c = S.conns; c && n < 64; c = c->next) {
      ws[n] = c->w;
      efds[n++] = c->efd;
      if (c->deadline - now < wait) wait = c->deadline - now + 1;
    }
    wait_workers(ws, efds, n, (int)wait);
  }

  /* shutdown: close what is left, bounded */
  for (conn* c = S.conns; c; c = c->next)
    if (c->state != ST_CLOSING && c->state != ST_DONE) count_unfreed_and_close(c, "shutting down");
  int64_t end = now_ms() + 2000;
  while (S.conns && now_ms() < end) {
    int n = 0;
    for (conn* c = S.conns; c && n < 64; c = c->next, n++) {
      ws[n] = c->w;
      efds[n] = c->efd;
    }
    wait_workers(ws, efds, n, 50);
    for (conn* c = S.conns; c; c = c->next) {
      while (ucp_worker_progress(c->w)) {
      }
      step(c);
      if (c->state == ST_CLOSING && c->closed) c->state = ST_DONE;
    }
    reap();
  }
  write_report();
  for (int i = 0; i < 2; i++)
    if (S.listeners[i]) ucp_listener_destroy(S.listeners[i]);
  if (S.memh) ucp_mem_unmap(S.ctx, S.memh);
  ucp_worker_destroy(S.lw);
  ucp_cleanup(S.ctx);
  free(rh);
  free(S.msgs);
  free(file);
  return 0;
}
