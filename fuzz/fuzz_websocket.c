/*
 * fuzz_websocket.c -- WebSocket frames (lib/websocket.c): the bytes a peer
 * sends on an upgraded connection. Input: one byte saying how to cut the
 * rest into chunks (bits 0-5: 0 a byte at a time, else chunks of 0 to 4 * n
 * bytes; bits 6-7: the callback stops at that message, 0 never), then the
 * stream, fed to a server's decoder and to a client's (each refuses the
 * other's masking, so both paths run) with max_message 4096.
 *
 * Checks, besides the sanitizers:
 *   - the stream cut into chunks decodes exactly as the stream fed whole:
 *     the same messages, the same error and close code;
 *   - every message delivered, encoded again (masked towards a server's
 *     decoder; a data message in three fragments with a ping among them),
 *     decodes in a fresh decoder to itself.
 */
#include "fuzz.h"
#include "lib/err.h"
#include "lib/websocket.h"

#define MAX_MESSAGE 4096

typedef struct run {
    int server;
    int stop_at; /* message number whose callback returns 1; 0: none */
    int count;
    buf_t log; /* op, length, bytes of each message delivered */
} run_t;

typedef struct one {
    int data; /* a data message's round trip: its ping is passed over */
    int count;
    int op;
    buf_t got;
} one_t;

/* The round trip's decoder: keeps the message. */
static int keep(void *arg, int op, const uint8_t *p, size_t len)
{
    one_t *o = arg;
    o->count++;
    if (o->data && op == WS_OP_PING) return 0;
    o->op = op;
    if (buf_append(&o->got, p, len)) abort();
    return 0;
}

static void round_trip(int server, int op, const uint8_t *p, size_t len)
{
    static const uint8_t key[4] = {0x5a, 0x01, 0xff, 0x80};
    const uint8_t *mask = server ? key : NULL;
    buf_t b;
    buf_init(&b, 2 * MAX_MESSAGE + 64);
    int rc, frames = 1;
    if (op == WS_OP_TEXT || op == WS_OP_BINARY) {
        size_t a = len / 3, c = len - len / 2;
        rc = ws_encode(&b, op, 0, p, a, mask);
        if (!rc) rc = ws_encode(&b, WS_OP_PING, 1, "?", 1, mask);
        if (!rc) rc = ws_encode(&b, WS_OP_CONT, 0, p + a, c - a, mask);
        if (!rc) rc = ws_encode(&b, WS_OP_CONT, 1, p + c, len - c, mask);
        frames = 2;
    } else {
        rc = ws_encode(&b, op, 1, p, len, mask);
    }
    if (rc) {
        fprintf(stderr, "encoding a delivered message (op %d, %zu bytes): %d\n", op, len, rc);
        abort();
    }
    ws_decoder_t d;
    ws_decoder_init(&d, server, MAX_MESSAGE);
    one_t o = {.data = frames == 2};
    buf_init(&o.got, MAX_MESSAGE);
    rc = ws_decode(&d, b.p, b.len, keep, &o);
    if (rc || o.count != frames || o.op != op || o.got.len != len ||
        (len && memcmp(o.got.p, p, len))) {
        fprintf(stderr, "round trip of op %d, %zu bytes: rc %d, %d messages, op %d, %zu bytes\n",
                op, len, rc, o.count, o.op, o.got.len);
        abort();
    }
    buf_free(&o.got);
    ws_decoder_free(&d);
    buf_free(&b);
}

static int record(void *arg, int op, const uint8_t *p, size_t len)
{
    run_t *r = arg;
    uint8_t h[1 + sizeof len];
    h[0] = (uint8_t)op;
    memcpy(h + 1, &len, sizeof len);
    if (buf_append(&r->log, h, sizeof h) || buf_append(&r->log, p, len)) abort();
    if (op == WS_OP_CLOSE) {
        const char *reason;
        size_t rlen;
        int code = ws_close_status(p, len, &reason, &rlen);
        if (len ? code < 1000 || rlen != len - 2 || reason != (const char *)p + 2
                : code != WS_CLOSE_NO_STATUS || rlen)
            abort();
    }
    round_trip(r->server, op, p, len);
    return ++r->count == r->stop_at ? 1 : 0;
}

/* One chunk of the stream to the run's decoder (fz_feed). */
typedef struct feeding {
    run_t *r;
    ws_decoder_t *d;
} feeding_t;

static int feed(void *arg, const uint8_t *p, size_t k)
{
    feeding_t *f = arg;
    return ws_decode(f->d, p, k, record, f->r);
}

/* Decode the stream whole (cut 0) or in chunks; returns the error or 0. */
static int run(run_t *r, ws_decoder_t *d, const uint8_t *p, size_t n, unsigned cut)
{
    feeding_t f = {r, d};
    return fz_feed(p, n, cut, feed, &f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > FZ_INPUT_MAX) return 0;
    unsigned cut = data[0] & 0x3F, stop = data[0] >> 6;
    data++;
    size--;
    for (int server = 0; server <= 1; server++) {
        run_t r[2];
        ws_decoder_t d[2];
        int rc[2];
        for (int k = 0; k < 2; k++) {
            r[k] = (run_t){.server = server, .stop_at = (int)stop};
            /* each message costs at least 2 bytes of the stream and logs 9 + its bytes */
            buf_init(&r[k].log, 8 * (size_t)FZ_INPUT_MAX);
            ws_decoder_init(&d[k], server, MAX_MESSAGE);
            rc[k] = run(&r[k], &d[k], data, size, k ? (cut ? cut : 64) : 0);
        }
        if (rc[0] != rc[1] || ws_decoder_close_code(&d[0]) != ws_decoder_close_code(&d[1]) ||
            r[0].log.len != r[1].log.len ||
            (r[0].log.len && memcmp(r[0].log.p, r[1].log.p, r[0].log.len))) {
            fprintf(stderr, "server %d: whole: rc %d, %d messages; in chunks: rc %d, %d messages\n",
                    server, rc[0], r[0].count, rc[1], r[1].count);
            abort();
        }
        for (int k = 0; k < 2; k++) {
            ws_decoder_free(&d[k]);
            buf_free(&r[k].log);
        }
    }
    return 0;
}
