/* dipc_peer: an independent Arrow Dissociated IPC peer over UCX (see dipc_peer.c for the full
 * description). This header is shared by the three files of the program only: the common part
 * (dipc_peer.c), the server (dipc_peer_serve.c) and the client (dipc_peer_get.c). */
#ifndef DIPC_PEER_H
#define DIPC_PEER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>
#include <ucp/api/ucp.h>

/* Message header types of the Arrow `Message` flatbuffer union (Message.fbs). */
enum { HDR_NONE = 0, HDR_SCHEMA = 1, HDR_DICTIONARY = 2, HDR_RECORD_BATCH = 3 };

/* Metadata message types of the protocol (the first byte of every Active Message). */
enum { META_EOS = 0, META_FLATBUFFER = 1 };

/* The tag mask that matches a body by its sequence number only. */
#define SEQ_MASK UINT64_C(0x00000000FFFFFFFF)

/* Default tags: the one-connection want_data and the split shape's data want_data (the
 * reference implementation's data tag), the split shape's metadata want_data (the reference's
 * control tag, above 2^63 on purpose: readers must parse a full uint64), and free_data. */
#define TAG_WANT_DATA UINT64_C(0x00000DEADBA0BAB0)
#define TAG_WANT_META UINT64_C(0xFFFFFDEADBA0BAB0)
#define TAG_FREE_DATA UINT64_C(0x00000DEADBA0F4EE)

/* What the peer needs of one `Message` flatbuffer; `buffers` points into the flatbuffer at
 * `nbuffers` 16-byte Buffer structs (LE int64 offset, LE int64 length), already checked to lie
 * inside the body. */
typedef struct {
  int header_type;
  int64_t body_length;
  uint32_t nbuffers;
  const uint8_t* buffers;
} fb_message;

/* One encapsulated message of an IPC stream file: pointers into the file's bytes. */
typedef struct {
  const uint8_t* meta; /* flatbuffer bytes (with the file's padding) */
  size_t meta_len;
  const uint8_t* body;
  fb_message fm;
} stream_msg;

/* A growable set of uint64 (open addressing); 0 is stored out of band. */
typedef struct {
  uint64_t* keys;
  size_t cap, count;
  int has_zero;
} u64set;

/* Fatal error: prints "dipc_peer <verb>: <message>" to stderr and exits with status 2. */
_Noreturn void die(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
/* Diagnostic line to stderr, prefixed like die(). */
void note(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
extern const char* g_verb;
/* A partial output file that die() removes. */
extern const char* g_unlink_on_error;

void* xmalloc(size_t n);
void* xcalloc(size_t n, size_t m);
void* xrealloc(void* p, size_t n);

static inline uint16_t ld16(const uint8_t* p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static inline uint32_t ld32(const uint8_t* p) {
  return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}
static inline uint64_t ld64(const uint8_t* p) { return ld32(p) | ((uint64_t)ld32(p + 4) << 32); }
static inline void st32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static inline void st64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

/* Milliseconds on the monotonic clock. */
int64_t now_ms(void);

/* Parses a `Message` flatbuffer of n bytes with bounds checks. Returns 0, or -1 with a reason in
 * err. Only Schema, DictionaryBatch and RecordBatch headers are accepted. */
int fb_parse_message(const uint8_t* p, size_t n, fb_message* out, char* err, size_t errlen);
/* Buffer i of a parsed message. */
void fb_buffer(const fb_message* m, uint32_t i, int64_t* offset, int64_t* length);
/* Human name of a header type. */
const char* fb_header_name(int t);

/* Reads a whole file into 64-byte aligned memory; dies on failure. */
uint8_t* read_file(const char* path, size_t* len);
/* Splits an IPC stream file into messages (schema first); dies naming the offset on bad bytes. */
stream_msg* parse_stream(const uint8_t* b, size_t n, size_t* count, const char* path);

/* Standard base64, padded. Returns a malloc'd string. */
char* b64_encode(const uint8_t* p, size_t n);
/* Decodes standard or URL-safe base64, padded or not. Returns a malloc'd buffer, or NULL. */
uint8_t* b64_decode(const char* s, size_t* n);
/* Percent-encodes every byte outside [A-Za-z0-9-._~]. Returns a malloc'd string. */
char* pct_encode(const char* s);
/* Percent-decodes in place; returns -1 on a bad escape. */
int pct_decode(char* s);

/* Parses an unsigned 64-bit decimal; -1 when s is not exactly one. */
int parse_u64(const char* s, uint64_t* out);
/* Parses a command-line number of seconds (0..1000000); dies naming the option otherwise. */
uint64_t opt_seconds(const char* name, const char* v);
/* Splits "HOST:PORT" or "[V6]:PORT" and resolves it to a socket address; dies on failure. */
socklen_t resolve_hostport(const char* hostport, struct sockaddr_storage* ss, char* host,
                           size_t hostlen, int* port);

void u64set_init(u64set* s);
/* Inserts v; returns 1 when it was new. */
int u64set_add(u64set* s, uint64_t v);
int u64set_has(const u64set* s, uint64_t v);
void u64set_free(u64set* s);
/* Copies the members in any order into a malloc'd array of count elements. */
uint64_t* u64set_list(const u64set* s);

/* Creates a UCP context with TAG, AM, RMA and WAKEUP; dies on failure. */
ucp_context_h make_context(void);
/* Creates a single-threaded worker and returns its event fd; dies on failure. */
ucp_worker_h make_worker(ucp_context_h ctx, int* efd);
/* Arms the workers and waits on their event fds for at most timeout_ms. Returns 1 when an event
 * (or a busy worker) woke it, 0 on timeout. Never spins. */
int wait_workers(ucp_worker_h* workers, const int* efds, int n, int timeout_ms);

int serve_main(int argc, char** argv);
int get_main(int argc, char** argv);

#endif
