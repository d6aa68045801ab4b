/* dipc_peer: an independent peer for Arrow's Dissociated IPC protocol over UCX, written from the
 * protocol text (apache/arrow docs/source/format/DissociatedIPC.rst) to prove that another
 * implementation speaks it exactly. It shares no code with ferry: its own flatbuffer reading (a
 * bounds-checked reader of the few `Message` fields it needs) and its own libucp calls.
 *
 * What it implements (spec sections in brackets):
 * - [URI Specification] ucx://HOST:PORT?want_data=N[&free_data=M][&remote_handle=B64]; the
 *   remote_handle is the base64 of a packed UCX rkey (ucp_rkey_pack). Printed as standard base64,
 *   percent-encoded; read as standard or URL-safe, padded or not, percent-encoded or not.
 * - [Metadata Stream Sequence] the client's tagged want_data (tag = want_data, body = ticket);
 *   metadata as UCP Active Messages id 0 with no AM header, payload = type byte (1) + LE uint32
 *   sequence number + the `Message` flatbuffer; the schema is sequence 0; end of stream = exactly
 *   5 bytes, type 0 + the next sequence number. Eager and rendezvous arrivals are both read.
 * - [Data Stream Sequence] one tagged body per DictionaryBatch/RecordBatch, tag = (type << 56) |
 *   seq with bits 32-55 zero (the text's bits 56-63; the diagrams' "<< 55" is not followed).
 *   Type 0 = the packed IPC body; type 1 = LE uint64 total size, count N, then N (address,
 *   length) pairs, read by the client with ucp_get_nbx through the URI's rkey.
 * - [free_data] the client returns every distinct type-1 address in tagged free_data messages
 *   (LE uint64 lists, batched); the server counts them, logs unknown ones, and closes when all
 *   are freed.
 * - [Protocol Description] both shapes: one connection carrying both streams, and separate
 *   metadata and data connections, each with its own want_data (free_data and remote_handle on
 *   the data URI), told apart by the want_data tag they send.
 * Where the text is loose, it follows ferry's reading (docs/dipc.md): every
 * DictionaryBatch/RecordBatch gets a body even with bodyLength 0; metadata is reordered by sequence
 * number (a schema anywhere but 0, a duplicate, or a sequence number at or past the end of stream
 * is an error); an AM header is an error; a server that closes after its last send is not an error
 * for the client.
 *
 * What it deliberately does not do: no Flight control plane (the URI and ticket come from the
 * command line); no CUDA or device memory; no sequence-number wrap past UINT32_MAX; no IPC
 * validation beyond the flatbuffer fields above (pyarrow checks the data the tests compare); no
 * body compression handling (bodies are opaque bytes); one rkey per server (all type-1 buffers
 * live in one registered arena, each buffer at its own distinct address). The server copies each
 * type-1 buffer into that arena once; type-0 bodies are sent straight from the file's bytes.
 *
 * For tests of other implementations it can also misbehave on purpose (--fault, see --help):
 * lying lengths, reserved tag bits, AM headers, duplicate or missing sequence numbers, a bad
 * flatbuffer, a bad end of stream, an early close, metadata on the wrong connection; and, as a
 * client, unknown, duplicate, malformed or missing free_data.
 *
 * Both sides use one UCP worker per connection: a tagged message does not name its sender, so
 * the worker is what tells a server its clients apart and a client its two connections apart.
 *
 * Files: dipc_peer.c (this: command line and common code), dipc_peer_serve.c, dipc_peer_get.c. */
#define _GNU_SOURCE
#include "dipc_peer.h"

#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

const char* g_verb = "";
const char* g_unlink_on_error;

void die(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "dipc_peer%s%s: ", *g_verb ? " " : "", g_verb);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  fflush(stdout);
  fflush(stderr);
  if (g_unlink_on_error) unlink(g_unlink_on_error);
  /* a fatal error leaves UCX's objects behind on purpose: _exit skips exit-time leak checks */
  _exit(2);
}

void note(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "dipc_peer%s%s: ", *g_verb ? " " : "", g_verb);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

void* xmalloc(size_t n) {
  void* p = malloc(n ? n : 1);
  if (!p) die("out of memory (%zu bytes)", n);
  return p;
}
void* xcalloc(size_t n, size_t m) {
  void* p = calloc(n ? n : 1, m ? m : 1);
  if (!p) die("out of memory (%zu x %zu bytes)", n, m);
  return p;
}
void* xrealloc(void* p, size_t n) {
  p = realloc(p, n ? n : 1);
  if (!p) die("out of memory (%zu bytes)", n);
  return p;
}

int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- flatbuffers: just enough of Message, RecordBatch and DictionaryBatch ---- */

typedef struct {
  const uint8_t* b;
  size_t n;
} fbuf;

/* Finds field `slot` of the table at `table`; *pos = 0 when absent. -1 when out of bounds. */
static int fb_field(fbuf f, size_t table, unsigned slot, size_t size, size_t* pos) {
  *pos = 0;
  if (table > f.n || f.n - table < 4) return -1;
  int64_t vt = (int64_t)table - (int32_t)ld32(f.b + table);
  if (vt < 0 || (uint64_t)vt > f.n || f.n - (size_t)vt < 4) return -1;
  uint16_t vtsize = ld16(f.b + vt), tsize = ld16(f.b + vt + 2);
  if (vtsize < 4 || (vtsize & 1) || f.n - (size_t)vt < vtsize || f.n - table < tsize) return -1;
  size_t e = 4 + 2 * (size_t)slot;
  if (e + 2 > vtsize) return 0;
  uint16_t fo = ld16(f.b + vt + e);
  if (fo == 0) return 0;
  if ((size_t)fo + size > tsize) return -1;
  *pos = table + fo;
  return 0;
}

/* Follows the uoffset at pos. -1 when the target is out of bounds. */
static int fb_deref(fbuf f, size_t pos, size_t* target) {
  uint64_t t = (uint64_t)pos + ld32(f.b + pos);
  if (t > f.n || f.n - t < 4) return -1;
  *target = (size_t)t;
  return 0;
}

const char* fb_header_name(int t) {
  static const char* names[] = {"NONE",        "Schema", "DictionaryBatch",
                                "RecordBatch", "Tensor", "SparseTensor"};
  return t >= 0 && t <= 5 ? names[t] : "unknown";
}

#define FB_FAIL(...)                    \
  do {                                  \
    snprintf(err, errlen, __VA_ARGS__); \
    return -1;                          \
  } while (0)

int fb_parse_message(const uint8_t* p, size_t n, fb_message* out, char* err, size_t errlen) {
  fbuf f = {p, n};
  memset(out, 0, sizeof *out);
  if (n < 8) FB_FAIL("flatbuffer of %zu bytes is too short for a Message", n);
  size_t root, pos;
  if (fb_deref(f, 0, &root) < 0) FB_FAIL("root offset %u is out of bounds", ld32(p));
  if (fb_field(f, root, 1, 1, &pos) < 0) FB_FAIL("Message table is out of bounds");
  out->header_type = pos ? p[pos] : HDR_NONE;
  if (fb_field(f, root, 3, 8, &pos) < 0) FB_FAIL("Message.bodyLength is out of bounds");
  out->body_length = pos ? (int64_t)ld64(p + pos) : 0;
  if (out->body_length < 0) FB_FAIL("negative bodyLength %lld", (long long)out->body_length);
  if (out->header_type != HDR_SCHEMA && out->header_type != HDR_DICTIONARY &&
      out->header_type != HDR_RECORD_BATCH)
    FB_FAIL("unsupported message header type %d (%s)", out->header_type,
            fb_header_name(out->header_type));
  size_t header;
  if (fb_field(f, root, 2, 4, &pos) < 0 || !pos || fb_deref(f, pos, &header) < 0)
    FB_FAIL("Message.header (%s) is missing or out of bounds", fb_header_name(out->header_type));
  if (out->header_type == HDR_SCHEMA) return 0;
  size_t batch = header;
  if (out->header_type == HDR_DICTIONARY) {
    if (fb_field(f, header, 1, 4, &pos) < 0 || !pos || fb_deref(f, pos, &batch) < 0)
      FB_FAIL("DictionaryBatch.data is missing or out of bounds");
  }
  if (fb_field(f, batch, 2, 4, &pos) < 0) FB_FAIL("RecordBatch table is out of bounds");
  if (pos) {
    size_t vec;
    if (fb_deref(f, pos, &vec) < 0) FB_FAIL("RecordBatch.buffers is out of bounds");
    uint32_t count = ld32(p + vec);
    if ((n - vec - 4) / 16 < count)
      FB_FAIL("RecordBatch.buffers claims %u buffers, past the end of the flatbuffer", count);
    out->nbuffers = count;
    out->buffers = p + vec + 4;
  }
  for (uint32_t i = 0; i < out->nbuffers; i++) {
    int64_t off, len;
    fb_buffer(out, i, &off, &len);
    if (off < 0 || len < 0 || off > out->body_length || len > out->body_length - off)
      FB_FAIL("buffer %u (offset %lld, length %lld) lies outside the body of %lld bytes", i,
              (long long)off, (long long)len, (long long)out->body_length);
  }
  return 0;
}

void fb_buffer(const fb_message* m, uint32_t i, int64_t* offset, int64_t* length) {
  *offset = (int64_t)ld64(m->buffers + 16 * (size_t)i);
  *length = (int64_t)ld64(m->buffers + 16 * (size_t)i + 8);
}

/* ---- files ---- */

uint8_t* read_file(const char* path, size_t* len) {
  FILE* fp = fopen(path, "rb");
  if (!fp) die("cannot open %s: %s", path, strerror(errno));
  if (fseek(fp, 0, SEEK_END) != 0) die("cannot seek %s: %s", path, strerror(errno));
  long sz = ftell(fp);
  if (sz < 0) die("cannot size %s: %s", path, strerror(errno));
  rewind(fp);
  void* buf = NULL;
  if (posix_memalign(&buf, 64, (size_t)sz + 64) != 0) die("out of memory reading %s", path);
  if (sz && fread(buf, 1, (size_t)sz, fp) != (size_t)sz) die("cannot read %s", path);
  fclose(fp);
  *len = (size_t)sz;
  return buf;
}

stream_msg* parse_stream(const uint8_t* b, size_t n, size_t* count, const char* path) {
  size_t pos = 0, k = 0, cap = 64;
  stream_msg* v = xmalloc(cap * sizeof *v);
  char err[256];
  while (pos < n) {
    if (n - pos < 4) die("%s: offset %zu: truncated message prefix", path, pos);
    size_t lenpos = pos;
    if (ld32(b + pos) == 0xFFFFFFFFu) {
      if (n - pos < 8) die("%s: offset %zu: truncated message length", path, pos);
      lenpos = pos + 4;
    }
    int32_t mlen = (int32_t)ld32(b + lenpos);
    if (mlen == 0) break; /* end-of-stream marker */
    size_t mstart = lenpos + 4;
    if (mlen < 0) die("%s: offset %zu: negative metadata length %d", path, lenpos, mlen);
    if ((size_t)mlen > n - mstart)
      die("%s: offset %zu: metadata length %d runs past the end of the file (%zu bytes left)", path,
          lenpos, mlen, n - mstart);
    if (k == cap) v = xrealloc(v, (cap *= 2) * sizeof *v);
    stream_msg* m = &v[k];
    m->meta = b + mstart;
    m->meta_len = (size_t)mlen;
    if (fb_parse_message(m->meta, m->meta_len, &m->fm, err, sizeof err) < 0)
      die("%s: message %zu at offset %zu: %s", path, k, pos, err);
    size_t bstart = mstart + (size_t)mlen;
    if ((uint64_t)m->fm.body_length > n - bstart)
      die("%s: message %zu at offset %zu: bodyLength %lld runs past the end of the file", path, k,
          pos, (long long)m->fm.body_length);
    if ((k == 0) != (m->fm.header_type == HDR_SCHEMA))
      die("%s: message %zu at offset %zu is a %s; the stream must start with its one Schema", path,
          k, pos, fb_header_name(m->fm.header_type));
    if (m->fm.header_type == HDR_SCHEMA && m->fm.body_length != 0)
      die("%s: the Schema message has a body of %lld bytes", path, (long long)m->fm.body_length);
    m->body = b + bstart;
    pos = bstart + (size_t)m->fm.body_length;
    k++;
  }
  if (k == 0) die("%s: no Schema message", path);
  *count = k;
  return v;
}

/* ---- base64, percent-encoding, numbers, addresses ---- */

static const char b64chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char* b64_encode(const uint8_t* p, size_t n) {
  char *out = xmalloc(4 * ((n + 2) / 3) + 1), *o = out;
  for (size_t i = 0; i < n; i += 3) {
    uint32_t v = (uint32_t)p[i] << 16;
    if (i + 1 < n) v |= (uint32_t)p[i + 1] << 8;
    if (i + 2 < n) v |= p[i + 2];
    *o++ = b64chars[(v >> 18) & 63];
    *o++ = b64chars[(v >> 12) & 63];
    *o++ = i + 1 < n ? b64chars[(v >> 6) & 63] : '=';
    *o++ = i + 2 < n ? b64chars[v & 63] : '=';
  }
  *o = 0;
  return out;
}

static int b64_value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+' || c == '-') return 62;
  if (c == '/' || c == '_') return 63;
  return -1;
}

uint8_t* b64_decode(const char* s, size_t* n) {
  size_t len = strlen(s);
  while (len && s[len - 1] == '=') len--;
  if (len % 4 == 1) return NULL;
  uint8_t* out = xmalloc(len * 3 / 4 + 1);
  size_t k = 0;
  uint32_t acc = 0;
  int bits = 0;
  for (size_t i = 0; i < len; i++) {
    int v = b64_value(s[i]);
    if (v < 0) {
      free(out);
      return NULL;
    }
    acc = (acc << 6) | (uint32_t)v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[k++] = (uint8_t)(acc >> bits);
    }
  }
  *n = k;
  return out;
}

char* pct_encode(const char* s) {
  char *out = xmalloc(3 * strlen(s) + 1), *o = out;
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
        c == '.' || c == '_' || c == '~')
      *o++ = (char)c;
    else
      o += sprintf(o, "%%%02X", c);
  }
  *o = 0;
  return out;
}

static int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

int pct_decode(char* s) {
  char* o = s;
  for (; *s; s++) {
    if (*s == '%') {
      int hi = hexval(s[1]), lo = hi < 0 ? -1 : hexval(s[2]);
      if (hi < 0 || lo < 0) return -1;
      *o++ = (char)(hi * 16 + lo);
      s += 2;
    } else {
      *o++ = *s;
    }
  }
  *o = 0;
  return 0;
}

int parse_u64(const char* s, uint64_t* out) {
  if (!*s) return -1;
  uint64_t v = 0;
  for (; *s; s++) {
    if (*s < '0' || *s > '9') return -1;
    unsigned d = (unsigned)(*s - '0');
    if (v > (UINT64_MAX - d) / 10) return -1;
    v = v * 10 + d;
  }
  *out = v;
  return 0;
}

uint64_t opt_seconds(const char* name, const char* v) {
  uint64_t x;
  if (!v || parse_u64(v, &x) < 0 || x > 1000000)
    die("%s wants a whole number of seconds up to 1000000", name);
  return x;
}

socklen_t resolve_hostport(const char* hostport, struct sockaddr_storage* ss, char* host,
                           size_t hostlen, int* port) {
  const char *colon, *hs = hostport, *he;
  if (*hostport == '[') {
    he = strchr(hostport, ']');
    if (!he || he[1] != ':') die("bad address '%s' (want [V6ADDR]:PORT)", hostport);
    hs = hostport + 1;
    colon = he + 1;
  } else {
    colon = strrchr(hostport, ':');
    if (!colon) die("bad address '%s' (want HOST:PORT)", hostport);
    he = colon;
  }
  if ((size_t)(he - hs) + 1 > hostlen || he == hs) die("bad host in '%s'", hostport);
  memcpy(host, hs, (size_t)(he - hs));
  host[he - hs] = 0;
  uint64_t p;
  if (parse_u64(colon + 1, &p) < 0 || p > 65535) die("bad port in '%s'", hostport);
  *port = (int)p;
  struct addrinfo hints, *res;
  memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  int rc = getaddrinfo(host, colon + 1, &hints, &res);
  if (rc != 0) die("cannot resolve '%s': %s", host, gai_strerror(rc));
  socklen_t len = res->ai_addrlen;
  memcpy(ss, res->ai_addr, len);
  freeaddrinfo(res);
  return len;
}

/* ---- u64set ---- */

void u64set_init(u64set* s) { memset(s, 0, sizeof *s); }

static size_t u64hash(uint64_t v, size_t cap) {
  v ^= v >> 33;
  v *= UINT64_C(0xff51afd7ed558ccd);
  v ^= v >> 33;
  return (size_t)v & (cap - 1);
}

int u64set_has(const u64set* s, uint64_t v) {
  if (v == 0) return s->has_zero;
  if (!s->cap) return 0;
  for (size_t i = u64hash(v, s->cap);; i = (i + 1) & (s->cap - 1)) {
    if (s->keys[i] == v) return 1;
    if (s->keys[i] == 0) return 0;
  }
}

int u64set_add(u64set* s, uint64_t v) {
  if (v == 0) {
    int was = s->has_zero;
    s->has_zero = 1;
    return !was;
  }
  if (2 * (s->count + 1) > s->cap) {
    u64set old = *s;
    s->cap = old.cap ? old.cap * 2 : 64;
    s->keys = xcalloc(s->cap, sizeof(uint64_t));
    s->count = 0;
    for (size_t i = 0; i < old.cap; i++)
      if (old.keys[i]) u64set_add(s, old.keys[i]);
    free(old.keys);
  }
  for (size_t i = u64hash(v, s->cap);; i = (i + 1) & (s->cap - 1)) {
    if (s->keys[i] == v) return 0;
    if (s->keys[i] == 0) {
      s->keys[i] = v;
      s->count++;
      return 1;
    }
  }
}

uint64_t* u64set_list(const u64set* s) {
  uint64_t* out = xmalloc((s->count + 1) * sizeof *out);
  size_t k = 0;
  if (s->has_zero) out[k++] = 0;
  for (size_t i = 0; i < s->cap; i++)
    if (s->keys[i]) out[k++] = s->keys[i];
  return out;
}

void u64set_free(u64set* s) {
  free(s->keys);
  u64set_init(s);
}

/* ---- UCX ---- */

ucp_context_h make_context(void) {
  ucp_config_t* cfg;
  ucs_status_t st = ucp_config_read(NULL, NULL, &cfg);
  if (st != UCS_OK) die("ucp_config_read: %s", ucs_status_string(st));
  ucp_params_t params;
  memset(&params, 0, sizeof params);
  params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_NAME;
  params.features = UCP_FEATURE_TAG | UCP_FEATURE_AM | UCP_FEATURE_RMA | UCP_FEATURE_WAKEUP;
  params.name = "dipc_peer";
  ucp_context_h ctx;
  st = ucp_init(&params, cfg, &ctx);
  ucp_config_release(cfg);
  if (st != UCS_OK) die("ucp_init: %s", ucs_status_string(st));
  return ctx;
}

ucp_worker_h make_worker(ucp_context_h ctx, int* efd) {
  ucp_worker_params_t wp;
  memset(&wp, 0, sizeof wp);
  wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  wp.thread_mode = UCS_THREAD_MODE_SINGLE;
  ucp_worker_h w;
  ucs_status_t st = ucp_worker_create(ctx, &wp, &w);
  if (st != UCS_OK) die("ucp_worker_create: %s", ucs_status_string(st));
  st = ucp_worker_get_efd(w, efd);
  if (st != UCS_OK) die("ucp_worker_get_efd: %s", ucs_status_string(st));
  return w;
}

int wait_workers(ucp_worker_h* workers, const int* efds, int n, int timeout_ms) {
  struct pollfd pfd[64];
  if (n > 64) n = 64;
  for (int i = 0; i < n; i++) {
    ucs_status_t st = ucp_worker_arm(workers[i]);
    if (st == UCS_ERR_BUSY) return 1;
    if (st != UCS_OK) die("ucp_worker_arm: %s", ucs_status_string(st));
    pfd[i].fd = efds[i];
    pfd[i].events = POLLIN;
    pfd[i].revents = 0;
  }
  if (timeout_ms < 0) timeout_ms = 0;
  int rc = poll(pfd, (nfds_t)n, timeout_ms);
  if (rc < 0 && errno != EINTR) die("poll: %s", strerror(errno));
  return rc != 0;
}

/* ---- command line ---- */

static const char usage[] =
    "dipc_peer: an independent Arrow Dissociated IPC peer over UCX (test oracle for ferry)\n"
    "\n"
    "  dipc_peer serve --listen HOST:PORT --file IN.arrows --ticket NAME --body 0|1\n"
    "                  [--split] [--data-listen HOST:PORT] [--once] [--report FILE]\n"
    "                  [--timeout SECONDS] [--am eager|rndv|auto] [--shuffle SEED]\n"
    "                  [--close-after-send] [--want-data N] [--meta-want-data N] [--free-data N]\n"
    "                  [--fault NAME]\n"
    "  dipc_peer get URI [--data DATA_URI] --ticket NAME --out OUT.arrows\n"
    "                  [--timeout SECONDS] [--report FILE] [--free-batch N] [--linger SECONDS]\n"
    "                  [--fault NAME]\n"
    "\n"
    "serve: reads the IPC stream file IN, listens (PORT 0 picks one) and prints, flushed, one "
    "line\n"
    "  URI ucx://HOST:PORT?want_data=N[&free_data=M&remote_handle=B64]\n"
    "or with --split two lines (separate metadata and data streams, told apart by want_data)\n"
    "  METADATA_URI ucx://HOST:PORT?want_data=A\n"
    "  DATA_URI ucx://HOST:PORT2?want_data=B[&free_data=M&remote_handle=B64]\n"
    "free_data and remote_handle appear with --body 1 only; remote_handle is the standard base64\n"
    "(percent-encoded) of the rkey of the memory every type-1 address lies in, registered before\n"
    "the URI is printed. Each connection sends want_data (body = ticket); a wrong ticket closes\n"
    "the endpoint. Metadata goes as AM id 0 (no header), bodies as tagged messages with tag\n"
    "(type << 56) | seq, one per DictionaryBatch/RecordBatch. With --body 1 the server waits for\n"
    "free_data until every address is freed, then closes; with --body 0 it waits for the client\n"
    "to close (or closes right after its last send with --close-after-send).\n"
    "  --data-listen   a second listener for the data stream (implies --split)\n"
    "  --once          exit after one client (with --split: one metadata and one data stream,\n"
    "                  or one of them and a connection that closed before naming its stream)\n"
    "  --timeout S     idle limit per connection (default 30)\n"
    "  --am MODE       force eager or rendezvous Active Messages (default auto)\n"
    "  --shuffle SEED  send the metadata messages (not the end of stream) in a shuffled order\n"
    "  --report FILE   JSON: clients, addresses_sent, addresses_freed, unknown_frees, ...\n"
    "  --fault NAME    misbehave on purpose, to test a client's errors: tag-reserved (bit 40\n"
    "                  set in body tags), body-length (seq 1: type-0 body 8 bytes longer than\n"
    "                  bodyLength, or a wrong type-1 total), list-length (seq 1: type-1 buffer\n"
    "                  0 one byte longer), am-header (4-byte AM header), dup-seq (seq 1 twice),\n"
    "                  bad-flatbuffer (seq 1 root offset out of bounds), no-eos, eos-length\n"
    "                  (6-byte end of stream), schema-late (schema and seq 1 swap numbers),\n"
    "                  gap (seq 1 never sent), close-early (close after half the messages),\n"
    "                  extra-body (a tagged message with tag 0 for the schema),\n"
    "                  wrong-connection (--split: an end-of-stream AM on the data connection)\n"
    "  default tags: want_data 15302358252208 (0x00000DEADBA0BAB0); with --split metadata\n"
    "  want_data 18446741783881759408 (0xFFFFFDEADBA0BAB0); free_data 15302358267118\n"
    "  (0x00000DEADBA0F4EE)\n"
    "\n";

static const char usage_get[] =
    "get: connects to URI (and DATA_URI for the split shape), sends want_data with the ticket on\n"
    "each connection, reads the metadata AMs (eager and rendezvous) and the bodies (types 0 and "
    "1,\n"
    "ucp_get through the URI's remote_handle), reorders by sequence number, writes OUT as an IPC\n"
    "stream, then sends free_data with every distinct type-1 address and closes.\n"
    "  --free-batch N  addresses per free_data message (default 1024)\n"
    "  --linger S      after free_data, wait up to S seconds for the server to close first\n"
    "                  (default 0: close right after the last free_data completes)\n"
    "  --timeout S     idle limit (default 30)\n"
    "  --report FILE   JSON: metadata/bodies received, body types, addresses freed, ...\n"
    "  --fault NAME    misbehave on purpose, to test a server: free-unknown (also free an\n"
    "                  address never sent), free-none (close without free_data),\n"
    "                  free-malformed (a 7-byte free_data first), free-twice (free one address\n"
    "                  twice)\n"
    "\n"
    "Errors (bad bytes, lying lengths, dead or refusing peers) print one line naming what was\n"
    "wrong and where, and exit with status 2. A refused ticket reads: the server closed the\n"
    "connection after want_data (unknown or expired ticket?)\n";

int main(int argc, char** argv) {
  if (argc >= 2 && strcmp(argv[1], "serve") == 0) {
    g_verb = "serve";
    return serve_main(argc - 1, argv + 1);
  }
  if (argc >= 2 && strcmp(argv[1], "get") == 0) {
    g_verb = "get";
    return get_main(argc - 1, argv + 1);
  }
  if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
    fputs(usage, stdout);
    fputs(usage_get, stdout);
    return 0;
  }
  fputs(usage, stderr);
  fputs(usage_get, stderr);
  return 2;
}
