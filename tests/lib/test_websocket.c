/*
 * test_websocket.c -- lib/websocket.c: RFC 6455 framing. The RFC's own
 * examples (5.7, and the accept key of 1.3) byte for byte, each fed whole,
 * a byte at a time and in random splits; every protocol error with the
 * close code owed; the budget checked at the header; round trips through
 * the encoder.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/buf.h"
#include "lib/err.h"
#include "lib/websocket.h"

static const uint8_t KEY[4] = {0x37, 0xfa, 0x21, 0x3d}; /* RFC 6455 5.7's masking key */

/* ---- a sink: the messages a decoder delivered, copied ---- */

enum { SINK_MAX = 16 };

typedef struct msg {
    int op;
    size_t len;
    uint8_t *p;
} msg_t;

typedef struct sink {
    msg_t m[SINK_MAX];
    int n;
    int stop_at; /* return stop_rc for message number stop_at (1-based); 0: never */
    int stop_rc;
} sink_t;

static int collect(void *arg, int op, const uint8_t *p, size_t len)
{
    sink_t *s = arg;
    assert_non_null(p); /* never NULL, even when empty */
    assert_true(s->n < SINK_MAX);
    msg_t *m = &s->m[s->n++];
    m->op = op;
    m->len = len;
    m->p = malloc(len ? len : 1);
    assert_non_null(m->p);
    if (len) memcpy(m->p, p, len);
    return s->n == s->stop_at ? s->stop_rc : 0;
}

static void sink_free(sink_t *s)
{
    for (int i = 0; i < s->n; i++)
        free(s->m[i].p);
    s->n = 0;
}

static void assert_msg(const sink_t *s, int i, int op, const void *p, size_t len)
{
    assert_true(i < s->n);
    assert_int_equal(s->m[i].op, op);
    assert_int_equal(s->m[i].len, len);
    if (len) assert_memory_equal(s->m[i].p, p, len);
}

/* ---- feeding ---- */

static unsigned rnd(unsigned *seed)
{
    *seed = *seed * 1103515245u + 12345u;
    return *seed >> 8;
}

enum { BYTES = -2, WHOLE = -1 }; /* split modes; a value >= 0 seeds random splits */

/* Feed n bytes in the split `mode`, stopping at the first error; returns it.
 * Random splits include empty calls and chunks up to 2 * 64 bytes. */
static int feed(ws_decoder_t *d, const uint8_t *p, size_t n, int mode, sink_t *s)
{
    if (mode == WHOLE) return ws_decode(d, p, n, collect, s);
    unsigned seed = (unsigned)mode;
    size_t i = 0;
    while (i < n) {
        size_t k = mode == BYTES ? 1 : rnd(&seed) % 129;
        if (k > n - i) k = n - i;
        int rc = ws_decode(d, p + i, k, collect, s);
        if (rc) return rc;
        i += k;
    }
    return 0;
}

/* A fresh decoder fed the stream; *code gets ws_decoder_close_code(). */
static int decode(int server, size_t max, const uint8_t *p, size_t n, int mode, sink_t *s,
                  int *code)
{
    ws_decoder_t d;
    ws_decoder_init(&d, server, max);
    int rc = feed(&d, p, n, mode, s);
    if (code) *code = ws_decoder_close_code(&d);
    ws_decoder_free(&d);
    return rc;
}

/* The modes every stream is fed in: whole, byte by byte, 50 random splits. */
#define FOR_EACH_MODE(mode) for (int mode = BYTES; mode < 50; mode++)

/* ---- building frames by hand (not with the encoder under test) ---- */

enum { MINIMAL = 0 }; /* a frame's length form: minimal, or 2 or 8 bytes forced */

typedef struct fr {
    uint8_t b0;
    const char *p; /* payload */
    size_t n;
    int form;     /* MINIMAL, 2 or 8 */
    uint64_t len; /* the length declared, when not n (with no payload): ~0 = n */
} fr_t;

#define LEN_N UINT64_MAX

/* Append one frame to out (at least 14 + n bytes); masked with KEY when
 * `masked`. Returns the bytes written. */
static size_t put_frame(uint8_t *out, const fr_t *f, int masked)
{
    uint64_t len = f->len == LEN_N ? f->n : f->len;
    size_t o = 0;
    int form = f->form ? f->form : len < 126 ? 0 : len <= 0xFFFF ? 2 : 8;
    out[o++] = f->b0;
    out[o++] = (uint8_t)((masked ? 0x80 : 0) | (form == 0 ? len : form == 2 ? 126 : 127));
    for (int i = form - 1; i >= 0; i--)
        out[o++] = (uint8_t)(len >> (8 * i));
    if (masked) {
        memcpy(out + o, KEY, 4);
        o += 4;
    }
    for (size_t i = 0; i < f->n; i++)
        out[o + i] = (uint8_t)f->p[i] ^ (masked ? KEY[i & 3] : 0);
    return o + f->n;
}

static size_t put_frames(uint8_t *out, const fr_t *f, int nf, int masked)
{
    size_t o = 0;
    for (int i = 0; i < nf; i++)
        o += put_frame(out + o, &f[i], masked);
    return o;
}

#define F(b0, s)                                                                                   \
    {                                                                                              \
        (b0), (s), sizeof(s) - 1, MINIMAL, LEN_N                                                   \
    }

/* ---- the accept key ---- */

static void test_accept_key(void **state)
{
    (void)state;
    char out[WS_ACCEPT_LEN + 1];
    /* RFC 6455 1.3: SHA-1 0xb3 0x7a 0x4f 0x2c ... 0xc4 0xea, in base64 */
    assert_int_equal(ws_accept_key("dGhlIHNhbXBsZSBub25jZQ==", out), 0);
    assert_string_equal(out, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
    assert_int_equal(ws_accept_key("x3JJHMbDL1EzLkh9GBhXDw==", out), 0);
    assert_string_equal(out, "HSmrc0sMlYUkAGmm5OPpG2HaGWk=");

    /* Not the base64 of 16 bytes. */
    static const char *const bad[] = {
        "",
        "dGhlIHNhbXBsZSBub25jZQ=",   /* 23 characters */
        "dGhlIHNhbXBsZSBub25jZQ==x", /* 25 */
        "dGhlIHNhbXBsZSBub25jZWE=",  /* 17 bytes */
        "dGhlIHNhbXBsZSBub25jZWFh",  /* 18 bytes */
        "dGhlIHNhbXBsZSBub25jZQ!=",  /* not the alphabet */
        "dGhlIHNhbXBsZSBub25j ZQ=",  /* a space */
        "dGhl=HNhbXBsZSBub25jZQ==",  /* padding inside */
        "dGhlIHNhbXBsZSBub25jZQ=\n",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        assert_int_equal(ws_accept_key(bad[i], out), KP_EINVAL);
    assert_int_equal(ws_accept_key(NULL, out), KP_EINVAL);
}

/* ---- RFC 6455 5.7 ---- */

static const uint8_t HELLO_UNMASKED[] = {0x81, 0x05, 0x48, 0x65, 0x6c, 0x6c, 0x6f};
static const uint8_t HELLO_MASKED[] = {0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d,
                                       0x7f, 0x9f, 0x4d, 0x51, 0x58};
static const uint8_t HEL_LO[] = {0x01, 0x03, 0x48, 0x65, 0x6c, 0x80, 0x02, 0x6c, 0x6f};
static const uint8_t PING_HELLO[] = {0x89, 0x05, 0x48, 0x65, 0x6c, 0x6c, 0x6f};
static const uint8_t PONG_HELLO_MASKED[] = {0x8a, 0x85, 0x37, 0xfa, 0x21, 0x3d,
                                            0x7f, 0x9f, 0x4d, 0x51, 0x58};

/* 0x82 0x7E 0x0100 and 256 bytes; 0x82 0x7F 0x0000000000010000 and 64 KiB. */
static uint8_t *binary_example(size_t n, size_t *len, uint8_t **payload)
{
    size_t hl = n == 256 ? 4 : 10;
    uint8_t *b = malloc(hl + n);
    assert_non_null(b);
    if (n == 256) {
        memcpy(b, "\x82\x7e\x01\x00", 4);
    } else {
        memcpy(b, "\x82\x7f\x00\x00\x00\x00\x00\x01\x00\x00", 10);
    }
    for (size_t i = 0; i < n; i++)
        b[hl + i] = (uint8_t)(i * 7 + 3);
    *len = hl + n;
    *payload = b + hl;
    return b;
}

static void test_rfc_examples_decode(void **state)
{
    (void)state;
    FOR_EACH_MODE(mode)
    {
        sink_t s = {0};
        int code = -1;
        assert_int_equal(decode(0, 1 << 20, HELLO_UNMASKED, sizeof HELLO_UNMASKED, mode, &s, &code),
                         0);
        assert_int_equal(code, 0);
        assert_int_equal(s.n, 1);
        assert_msg(&s, 0, WS_OP_TEXT, "Hello", 5);
        sink_free(&s);

        assert_int_equal(decode(1, 1 << 20, HELLO_MASKED, sizeof HELLO_MASKED, mode, &s, NULL), 0);
        assert_int_equal(s.n, 1);
        assert_msg(&s, 0, WS_OP_TEXT, "Hello", 5);
        sink_free(&s);

        assert_int_equal(decode(0, 1 << 20, HEL_LO, sizeof HEL_LO, mode, &s, NULL), 0);
        assert_int_equal(s.n, 1);
        assert_msg(&s, 0, WS_OP_TEXT, "Hello", 5);
        sink_free(&s);

        assert_int_equal(decode(0, 1 << 20, PING_HELLO, sizeof PING_HELLO, mode, &s, NULL), 0);
        assert_int_equal(s.n, 1);
        assert_msg(&s, 0, WS_OP_PING, "Hello", 5);
        sink_free(&s);

        assert_int_equal(
            decode(1, 1 << 20, PONG_HELLO_MASKED, sizeof PONG_HELLO_MASKED, mode, &s, NULL), 0);
        assert_int_equal(s.n, 1);
        assert_msg(&s, 0, WS_OP_PONG, "Hello", 5);
        sink_free(&s);

        size_t sizes[] = {256, 65536};
        for (int k = 0; k < 2; k++) {
            if (sizes[k] == 65536 && mode > 3) continue; /* 64 KiB: fewer random splits */
            size_t len;
            uint8_t *payload, *b = binary_example(sizes[k], &len, &payload);
            assert_int_equal(decode(0, 65536, b, len, mode, &s, NULL), 0);
            assert_int_equal(s.n, 1);
            assert_msg(&s, 0, WS_OP_BINARY, payload, sizes[k]);
            sink_free(&s);
            /* One byte under the budget: refused. */
            assert_int_equal(decode(0, sizes[k] - 1, b, len, mode, &s, NULL), KP_ETOOLARGE);
            assert_int_equal(s.n, 0);
            free(b);
        }
    }
}

/* The encoder writes the RFC's bytes exactly. */
static void test_rfc_examples_encode(void **state)
{
    (void)state;
    buf_t b;
    buf_init(&b, 1 << 20);
    assert_int_equal(ws_encode(&b, WS_OP_TEXT, 1, "Hello", 5, NULL), 0);
    assert_int_equal(b.len, sizeof HELLO_UNMASKED);
    assert_memory_equal(b.p, HELLO_UNMASKED, b.len);
    buf_reset(&b);
    assert_int_equal(ws_encode(&b, WS_OP_TEXT, 1, "Hello", 5, KEY), 0);
    assert_int_equal(b.len, sizeof HELLO_MASKED);
    assert_memory_equal(b.p, HELLO_MASKED, b.len);
    buf_reset(&b);
    assert_int_equal(ws_encode(&b, WS_OP_TEXT, 0, "Hel", 3, NULL), 0);
    assert_int_equal(ws_encode(&b, WS_OP_CONT, 1, "lo", 2, NULL), 0);
    assert_int_equal(b.len, sizeof HEL_LO);
    assert_memory_equal(b.p, HEL_LO, b.len);
    buf_reset(&b);
    assert_int_equal(ws_encode(&b, WS_OP_PING, 1, "Hello", 5, NULL), 0);
    assert_int_equal(b.len, sizeof PING_HELLO);
    assert_memory_equal(b.p, PING_HELLO, b.len);
    buf_reset(&b);
    assert_int_equal(ws_encode(&b, WS_OP_PONG, 1, "Hello", 5, KEY), 0);
    assert_int_equal(b.len, sizeof PONG_HELLO_MASKED);
    assert_memory_equal(b.p, PONG_HELLO_MASKED, b.len);
    size_t sizes[] = {256, 65536};
    for (int k = 0; k < 2; k++) {
        size_t len;
        uint8_t *payload, *ex = binary_example(sizes[k], &len, &payload);
        buf_reset(&b);
        assert_int_equal(ws_encode(&b, WS_OP_BINARY, 1, payload, sizes[k], NULL), 0);
        assert_int_equal(b.len, len);
        assert_memory_equal(b.p, ex, len);
        free(ex);
    }
    buf_free(&b);
}

/* Control frames between the fragments of a message come out as they come,
 * the message after them, whole. */
static void test_control_between_fragments(void **state)
{
    (void)state;
    const fr_t frames[] = {
        F(0x01, "Hel"),                                  /* text, more to come */
        F(0x89, "p1"),                                   /* ping */
        F(0x8A, ""),                                     /* pong */
        F(0x00, ""),                                     /* an empty continuation */
        F(0x00, "l"),        F(0x89, "x"), F(0x80, "o"), /* the last */
        F(0x82, "\x00\x01"),
    };
    uint8_t stream[256];
    for (int masked = 0; masked <= 1; masked++) {
        size_t n = put_frames(stream, frames, 8, masked);
        FOR_EACH_MODE(mode)
        {
            sink_t s = {0};
            assert_int_equal(decode(masked, 100, stream, n, mode, &s, NULL), 0);
            assert_int_equal(s.n, 5);
            assert_msg(&s, 0, WS_OP_PING, "p1", 2);
            assert_msg(&s, 1, WS_OP_PONG, "", 0);
            assert_msg(&s, 2, WS_OP_PING, "x", 1);
            assert_msg(&s, 3, WS_OP_TEXT, "Hello", 5);
            assert_msg(&s, 4, WS_OP_BINARY, "\x00\x01", 2);
            sink_free(&s);
        }
    }
}

/* ---- protocol errors ---- */

typedef struct err_case {
    const char *name;
    fr_t f[3];
    int nf;
    int rc, code;
    int delivered; /* messages before the error */
} err_case_t;

static const char big126[] = "0123456789012345678901234567890123456789012345678901234567890123"
                             "89012345678901234567890123456789012345678901234567890123456789";

static const err_case_t err_cases[] = {
    {"RSV1", {F(0xC1, "a")}, 1, KP_ECORRUPT, 1002, 0},
    {"RSV2", {F(0xA2, "a")}, 1, KP_ECORRUPT, 1002, 0},
    {"RSV3", {F(0x91, "a")}, 1, KP_ECORRUPT, 1002, 0},
    {"RSV on a continuation", {F(0x01, "a"), F(0xC0, "b")}, 2, KP_ECORRUPT, 1002, 0},
    {"reserved data opcode 3", {F(0x83, "a")}, 1, KP_ECORRUPT, 1002, 0},
    {"reserved data opcode 7", {F(0x87, "")}, 1, KP_ECORRUPT, 1002, 0},
    {"reserved control opcode B", {F(0x8B, "")}, 1, KP_ECORRUPT, 1002, 0},
    {"reserved control opcode F", {F(0x8F, "a")}, 1, KP_ECORRUPT, 1002, 0},
    {"continuation without a start", {F(0x80, "lo")}, 1, KP_ECORRUPT, 1002, 0},
    {"continuation after a message ended", {F(0x81, "a"), F(0x80, "b")}, 2, KP_ECORRUPT, 1002, 1},
    {"text during a fragmented message", {F(0x01, "Hel"), F(0x81, "lo")}, 2, KP_ECORRUPT, 1002, 0},
    {"binary during a fragmented message", {F(0x02, "a"), F(0x02, "b")}, 2, KP_ECORRUPT, 1002, 0},
    {"ping of 126 bytes", {F(0x89, big126)}, 1, KP_ECORRUPT, 1002, 0},
    {"pong declaring 2^16 bytes", {{0x8A, "", 0, 8, 65536}}, 1, KP_ECORRUPT, 1002, 0},
    {"close of 126 bytes", {{0x88, big126, 126, MINIMAL, LEN_N}}, 1, KP_ECORRUPT, 1002, 0},
    {"ping, short, in the 16-bit form", {{0x89, "a", 1, 2, LEN_N}}, 1, KP_ECORRUPT, 1002, 0},
    {"fragmented ping", {F(0x09, "a")}, 1, KP_ECORRUPT, 1002, 0},
    {"fragmented close", {F(0x08, "")}, 1, KP_ECORRUPT, 1002, 0},
    {"125 in the 16-bit form", {{0x82, "", 0, 2, 125}}, 1, KP_ECORRUPT, 1002, 0},
    {"0 in the 16-bit form", {{0x82, "", 0, 2, 0}}, 1, KP_ECORRUPT, 1002, 0},
    {"65535 in the 64-bit form", {{0x82, "", 0, 8, 65535}}, 1, KP_ECORRUPT, 1002, 0},
    {"5 in the 64-bit form", {{0x82, "hello", 5, 8, LEN_N}}, 1, KP_ECORRUPT, 1002, 0},
    {"64-bit length, top bit set", {{0x82, "", 0, 8, 1ull << 63}}, 1, KP_ECORRUPT, 1002, 0},
    {"64-bit length, all bits set", {{0x82, "", 0, 8, UINT64_MAX - 1}}, 1, KP_ECORRUPT, 1002, 0},
    {"close of 1 byte", {F(0x88, "\x03")}, 1, KP_ECORRUPT, 1002, 0},
    /* a ping's bytes left behind do not complete a close's payload */
    {"close of 1 byte after a ping",
     {F(0x89, "\x03\xe8"), F(0x88, "\x03")},
     2,
     KP_ECORRUPT,
     1002,
     1},
    {"close 1005", {F(0x88, "\x03\xed")}, 1, KP_ECORRUPT, 1002, 0},
    {"close 1006", {F(0x88, "\x03\xee")}, 1, KP_ECORRUPT, 1002, 0},
    {"close 1015", {F(0x88, "\x03\xf7")}, 1, KP_ECORRUPT, 1002, 0},
    {"close 1004", {F(0x88, "\x03\xec")}, 1, KP_ECORRUPT, 1002, 0},
    {"close 999", {F(0x88, "\x03\xe7")}, 1, KP_ECORRUPT, 1002, 0},
    {"close 0", {F(0x88, "\x00\x00")}, 1, KP_ECORRUPT, 1002, 0},
    {"close 1016", {F(0x88, "\x03\xf8")}, 1, KP_ECORRUPT, 1002, 0},
    {"close 2999", {F(0x88, "\x0b\xb7reason")}, 1, KP_ECORRUPT, 1002, 0},
    {"close 5000", {F(0x88, "\x13\x88")}, 1, KP_ECORRUPT, 1002, 0},
    {"close 65535", {F(0x88, "\xff\xff")}, 1, KP_ECORRUPT, 1002, 0},
    {"close reason overlong", {F(0x88, "\x03\xe8\xc0\xaf")}, 1, KP_ECORRUPT, 1007, 0},
    {"close reason surrogate", {F(0x88, "\x03\xe8\xed\xa0\x80")}, 1, KP_ECORRUPT, 1007, 0},
    {"close reason cut", {F(0x88, "\x03\xe8ok\xe2\x82")}, 1, KP_ECORRUPT, 1007, 0},
    {"close reason cut after a ping",
     {F(0x89, "\x03\xe8ok\xe2\x82\xac"), F(0x88, "\x03\xe8ok\xe2\x82")},
     2,
     KP_ECORRUPT,
     1007,
     1},
    {"text overlong /", {F(0x81, "a\xc0\xaf")}, 1, KP_ECORRUPT, 1007, 0},
    {"text overlong 3 bytes", {F(0x81, "\xe0\x80\xaf")}, 1, KP_ECORRUPT, 1007, 0},
    {"text overlong 4 bytes", {F(0x81, "\xf0\x8f\xbf\xbf")}, 1, KP_ECORRUPT, 1007, 0},
    {"text surrogate", {F(0x81, "\xed\xa0\x80")}, 1, KP_ECORRUPT, 1007, 0},
    {"text past U+10FFFF", {F(0x81, "\xf4\x90\x80\x80")}, 1, KP_ECORRUPT, 1007, 0},
    {"text F5", {F(0x81, "\xf5\x80\x80\x80")}, 1, KP_ECORRUPT, 1007, 0},
    {"text lone continuation", {F(0x81, "\x80")}, 1, KP_ECORRUPT, 1007, 0},
    {"text cut at the end", {F(0x81, "\xe2\x82")}, 1, KP_ECORRUPT, 1007, 0},
    {"text overlong split", {F(0x01, "a\xc0"), F(0x80, "\xaf")}, 2, KP_ECORRUPT, 1007, 0},
    {"text surrogate split",
     {F(0x01, "\xed"), F(0x00, "\xa0"), F(0x80, "\x80")},
     3,
     KP_ECORRUPT,
     1007,
     0},
    {"text bad continuation split", {F(0x01, "\xe2\x82"), F(0x80, "A")}, 2, KP_ECORRUPT, 1007, 0},
    {"text cut at the last fragment",
     {F(0x01, "ok"), F(0x80, "\xf0\x9f\x98")},
     2,
     KP_ECORRUPT,
     1007,
     0},
    {"binary of 101 bytes", {{0x82, "", 0, MINIMAL, 101}}, 1, KP_ETOOLARGE, 1009, 0},
    {"fragments past 100",
     {{0x02, big126, 60, MINIMAL, LEN_N}, {0x80, "", 0, MINIMAL, 41}},
     2,
     KP_ETOOLARGE,
     1009,
     0},
};

/* Every case on both ends (masked for the server, not for the client), in
 * every split: the same error, the same close code, nothing delivered
 * after it. */
static void test_protocol_errors(void **state)
{
    (void)state;
    uint8_t stream[512];
    for (size_t c = 0; c < sizeof err_cases / sizeof *err_cases; c++) {
        const err_case_t *e = &err_cases[c];
        for (int server = 0; server <= 1; server++) {
            size_t n = put_frames(stream, e->f, e->nf, server);
            /* a valid frame after the bad one: never delivered */
            n += put_frame(stream + n, &(fr_t)F(0x81, "after"), server);
            for (int mode = BYTES; mode < 10; mode++) {
                sink_t s = {0};
                int code = 0;
                int rc = decode(server, 100, stream, n, mode, &s, &code);
                if (rc != e->rc || code != e->code || s.n != e->delivered)
                    fail_msg("%s (server %d, mode %d): rc %d code %d delivered %d", e->name, server,
                             mode, rc, code, s.n);
                sink_free(&s);
            }
        }
    }
}

/* A server's frames must be masked, a client's must not (RFC 6455 5.1). */
static void test_masking_direction(void **state)
{
    (void)state;
    FOR_EACH_MODE(mode)
    {
        sink_t s = {0};
        int code = 0;
        assert_int_equal(decode(1, 100, HELLO_UNMASKED, sizeof HELLO_UNMASKED, mode, &s, &code),
                         KP_ECORRUPT);
        assert_int_equal(code, WS_CLOSE_PROTOCOL);
        assert_int_equal(decode(0, 100, HELLO_MASKED, sizeof HELLO_MASKED, mode, &s, &code),
                         KP_ECORRUPT);
        assert_int_equal(code, WS_CLOSE_PROTOCOL);
        /* a control frame too */
        assert_int_equal(decode(1, 100, PING_HELLO, sizeof PING_HELLO, mode, &s, &code),
                         KP_ECORRUPT);
        assert_int_equal(s.n, 0);
    }
}

/* ---- the budget, at the header ---- */

static void test_too_large_at_header(void **state)
{
    (void)state;
    uint8_t h[14];
    /* A header claiming max_message + 1 bytes, in each length form, with
     * none of its payload: refused at once, nothing buffered. */
    static const struct {
        size_t max;
        uint64_t len;
    } cases[] = {{100, 101}, {125, 126}, {1000, 1001}, {65535, 65536}, {4096, 1ull << 62}};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        for (int server = 0; server <= 1; server++) {
            size_t n = put_frame(h, &(fr_t){0x82, "", 0, MINIMAL, cases[c].len}, server);
            ws_decoder_t d;
            ws_decoder_init(&d, server, cases[c].max);
            sink_t s = {0};
            assert_int_equal(feed(&d, h, n, BYTES, &s), KP_ETOOLARGE);
            assert_int_equal(ws_decoder_close_code(&d), WS_CLOSE_TOO_BIG);
            assert_int_equal(d.msg.cap, 0);
            assert_int_equal(s.n, 0);
            ws_decoder_free(&d);
            /* exactly max_message: the header is accepted */
            n = put_frame(h, &(fr_t){0x82, "", 0, MINIMAL, cases[c].max}, server);
            ws_decoder_init(&d, server, cases[c].max);
            assert_int_equal(feed(&d, h, n, BYTES, &s), 0);
            ws_decoder_free(&d);
        }
    }

    /* The budget is the message's: fragments of 60 + 40 fit 100, 60 + 41 do not. */
    ws_decoder_t d;
    ws_decoder_init(&d, 0, 100);
    sink_t s = {0};
    uint8_t stream[256];
    size_t n = put_frame(stream, &(fr_t){0x02, big126, 60, MINIMAL, LEN_N}, 0);
    n += put_frame(stream + n, &(fr_t){0x80, big126 + 60, 40, MINIMAL, LEN_N}, 0);
    n += put_frame(stream + n, &(fr_t){0x02, big126, 60, MINIMAL, LEN_N}, 0);
    assert_int_equal(ws_decode(&d, stream, n, collect, &s), 0);
    assert_int_equal(s.n, 1);
    assert_msg(&s, 0, WS_OP_BINARY, big126, 100);
    /* only the header of the 41-byte fragment */
    assert_int_equal(ws_decode(&d, "\x80\x29", 2, collect, &s), KP_ETOOLARGE);
    assert_int_equal(ws_decoder_close_code(&d), WS_CLOSE_TOO_BIG);
    ws_decoder_free(&d);
    sink_free(&s);

    /* Control frames are not data: 125 bytes pass a budget of 10. */
    n = put_frame(stream, &(fr_t){0x89, big126, 125, MINIMAL, LEN_N}, 1);
    FOR_EACH_MODE(mode)
    {
        assert_int_equal(decode(1, 10, stream, n, mode, &s, NULL), 0);
        assert_int_equal(s.n, 1);
        assert_msg(&s, 0, WS_OP_PING, big126, 125);
        sink_free(&s);
    }
}

/* ---- after an error, after a close ---- */

static void test_sticky_error(void **state)
{
    (void)state;
    ws_decoder_t d;
    ws_decoder_init(&d, 0, 100);
    sink_t s = {0};
    assert_int_equal(ws_decoder_close_code(&d), 0);
    assert_int_equal(ws_decode(&d, HELLO_UNMASKED, sizeof HELLO_UNMASKED, collect, &s), 0);
    assert_int_equal(ws_decode(&d, "\x81\x02\xc0\xaf", 4, collect, &s), KP_ECORRUPT);
    assert_int_equal(ws_decoder_close_code(&d), WS_CLOSE_BAD_DATA);
    /* The same error for every later call, valid bytes or none; nothing delivered. */
    assert_int_equal(ws_decode(&d, HELLO_UNMASKED, sizeof HELLO_UNMASKED, collect, &s),
                     KP_ECORRUPT);
    assert_int_equal(ws_decode(&d, NULL, 0, collect, &s), KP_ECORRUPT);
    assert_int_equal(ws_decoder_close_code(&d), WS_CLOSE_BAD_DATA);
    assert_int_equal(s.n, 1);
    ws_decoder_free(&d);
    sink_free(&s);

    /* A protocol error in the middle of a header, then more. */
    ws_decoder_init(&d, 1, 100);
    assert_int_equal(ws_decode(&d, "\x81", 1, collect, &s), 0);
    assert_int_equal(ws_decoder_close_code(&d), 0);
    assert_int_equal(ws_decode(&d, "\x05Hello", 6, collect, &s), KP_ECORRUPT);
    assert_int_equal(ws_decode(&d, HELLO_MASKED, sizeof HELLO_MASKED, collect, &s), KP_ECORRUPT);
    assert_int_equal(ws_decoder_close_code(&d), WS_CLOSE_PROTOCOL);
    assert_int_equal(s.n, 0);
    ws_decoder_free(&d);
}

static void test_closed_after_close(void **state)
{
    (void)state;
    const char *reason;
    size_t rlen;
    /* A close, then a text frame in the same bytes: the close is delivered,
     * the rest refused. */
    uint8_t stream[64];
    size_t n = put_frame(stream,
                         &(fr_t)F(0x88, "\x03\xe8"
                                        "bye"),
                         0);
    size_t close_len = n;
    n += put_frame(stream + n, &(fr_t)F(0x81, "late"), 0);
    ws_decoder_t d;
    ws_decoder_init(&d, 0, 100);
    sink_t s = {0};
    assert_int_equal(ws_decode(&d, stream, n, collect, &s), KP_ECLOSED);
    assert_int_equal(s.n, 1);
    assert_msg(&s, 0, WS_OP_CLOSE,
               "\x03\xe8"
               "bye",
               5);
    assert_int_equal(ws_close_status(s.m[0].p, s.m[0].len, &reason, &rlen), WS_CLOSE_NORMAL);
    assert_int_equal(rlen, 3);
    assert_memory_equal(reason, "bye", 3);
    assert_int_equal(ws_decoder_close_code(&d), 0); /* the peer is owed no error */
    assert_int_equal(ws_decode(&d, HELLO_UNMASKED, sizeof HELLO_UNMASKED, collect, &s), KP_ECLOSED);
    assert_int_equal(s.n, 1);
    ws_decoder_free(&d);
    sink_free(&s);

    /* The close alone, in any split: taken (0), and then KP_ECLOSED. */
    FOR_EACH_MODE(mode)
    {
        ws_decoder_init(&d, 0, 100);
        assert_int_equal(feed(&d, stream, close_len, mode, &s), 0);
        assert_int_equal(s.n, 1);
        assert_int_equal(ws_decode(&d, "\x81", 1, collect, &s), KP_ECLOSED);
        assert_int_equal(ws_decode(&d, NULL, 0, collect, &s), KP_ECLOSED);
        ws_decoder_free(&d);
        sink_free(&s);
    }

    /* An empty close, and valid codes: 1000-1003, 1007-1014, 3000-4999. */
    static const int ok[] = {1000, 1001, 1002, 1003, 1007, 1008, 1009,
                             1010, 1011, 1012, 1013, 1014, 3000, 4999};
    assert_int_equal(decode(1, 10, (const uint8_t *)"\x88\x80\x01\x02\x03\x04", 6, WHOLE, &s, NULL),
                     0);
    assert_msg(&s, 0, WS_OP_CLOSE, "", 0);
    assert_int_equal(ws_close_status(s.m[0].p, 0, &reason, &rlen), WS_CLOSE_NO_STATUS);
    assert_int_equal(rlen, 0);
    sink_free(&s);
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
        char p[2] = {(char)(ok[i] >> 8), (char)ok[i]};
        n = put_frame(stream, &(fr_t){0x88, p, 2, MINIMAL, LEN_N}, 1);
        assert_int_equal(decode(1, 10, stream, n, WHOLE, &s, NULL), 0);
        assert_int_equal(ws_close_status(s.m[0].p, s.m[0].len, &reason, &rlen), ok[i]);
        assert_int_equal(rlen, 0);
        sink_free(&s);
    }
}

/* A callback's nonzero return stops decoding there, and sticks. */
static void test_callback_stops(void **state)
{
    (void)state;
    uint8_t stream[64];
    size_t n = put_frame(stream, &(fr_t)F(0x81, "one"), 1);
    n += put_frame(stream + n, &(fr_t)F(0x89, "two"), 1);
    n += put_frame(stream + n, &(fr_t)F(0x82, "three"), 1);
    for (int stop = 1; stop <= 3; stop++) {
        FOR_EACH_MODE(mode)
        {
            ws_decoder_t d;
            ws_decoder_init(&d, 1, 100);
            sink_t s = {.stop_at = stop, .stop_rc = 42 + stop};
            assert_int_equal(feed(&d, stream, n, mode, &s), 42 + stop);
            assert_int_equal(s.n, stop);
            assert_int_equal(ws_decoder_close_code(&d), 0);
            assert_int_equal(ws_decode(&d, stream, n, collect, &s), 42 + stop);
            assert_int_equal(s.n, stop);
            ws_decoder_free(&d);
            sink_free(&s);
        }
    }
    /* A negative code (a KP_* of the callback's) as well. */
    sink_t s = {.stop_at = 1, .stop_rc = KP_ENOMEM};
    int code = -1;
    assert_int_equal(decode(1, 100, stream, n, WHOLE, &s, &code), KP_ENOMEM);
    assert_int_equal(code, 0);
    assert_int_equal(s.n, 1);
    sink_free(&s);
}

/* ---- round trips ---- */

static void test_round_trips(void **state)
{
    (void)state;
    static const size_t lens[] = {0, 1, 125, 126, 127, 65535, 65536};
    uint8_t *payload = malloc(65536);
    assert_non_null(payload);
    for (size_t i = 0; i < 65536; i++)
        payload[i] = (uint8_t)('a' + i % 26);
    buf_t b;
    buf_init(&b, 1 << 20);
    for (size_t l = 0; l < sizeof lens / sizeof *lens; l++) {
        size_t n = lens[l];
        size_t hl = n < 126 ? 2 : n <= 0xFFFF ? 4 : 10;
        for (int masked = 0; masked <= 1; masked++) {
            for (int op = WS_OP_TEXT; op <= WS_OP_BINARY; op++) {
                static const uint8_t key[4] = {0xde, 0xad, 0xbe, 0xef};
                buf_reset(&b);
                assert_int_equal(ws_encode(&b, op, 1, payload, n, masked ? key : NULL), 0);
                assert_int_equal(b.len, hl + (masked ? 4 : 0) + n);
                assert_int_equal((uint8_t)b.p[0], 0x80 | op);
                assert_int_equal((uint8_t)b.p[1] >> 7, masked);
                for (int mode = BYTES; mode < 4; mode++) {
                    sink_t s = {0};
                    assert_int_equal(decode(masked, 65536, (uint8_t *)b.p, b.len, mode, &s, NULL),
                                     0);
                    assert_int_equal(s.n, 1);
                    assert_msg(&s, 0, op, payload, n);
                    sink_free(&s);
                }
                /* The same in three fragments, a ping among them. */
                buf_reset(&b);
                const uint8_t *k = masked ? key : NULL;
                assert_int_equal(ws_encode(&b, op, 0, payload, n / 3, k), 0);
                assert_int_equal(ws_encode(&b, WS_OP_PING, 1, "?", 1, k), 0);
                assert_int_equal(ws_encode(&b, WS_OP_CONT, 0, payload + n / 3, n / 3, k), 0);
                assert_int_equal(
                    ws_encode(&b, WS_OP_CONT, 1, payload + 2 * (n / 3), n - 2 * (n / 3), k), 0);
                sink_t s = {0};
                assert_int_equal(decode(masked, 65536, (uint8_t *)b.p, b.len, 7, &s, NULL), 0);
                assert_int_equal(s.n, 2);
                assert_msg(&s, 0, WS_OP_PING, "?", 1);
                assert_msg(&s, 1, op, payload, n);
                sink_free(&s);
            }
        }
    }
    /* Control frames: 0, 1 and 125 bytes. */
    static const size_t ctl[] = {0, 1, 125};
    for (size_t l = 0; l < 3; l++) {
        for (int op = WS_OP_CLOSE; op <= WS_OP_PONG; op++) {
            if (op == WS_OP_CLOSE && ctl[l] == 1) continue; /* not a valid close */
            buf_reset(&b);
            uint8_t p[WS_CONTROL_MAX] = {0x03, 0xe8};
            memset(p + 2, 'r', sizeof p - 2);
            assert_int_equal(ws_encode(&b, op, 1, p, ctl[l], KEY), 0);
            sink_t s = {0};
            assert_int_equal(decode(1, 0, (uint8_t *)b.p, b.len, BYTES, &s, NULL), 0);
            assert_int_equal(s.n, 1);
            assert_msg(&s, 0, op, p, ctl[l]);
            sink_free(&s);
        }
    }
    buf_free(&b);
    free(payload);
}

static void test_encode_errors(void **state)
{
    (void)state;
    uint8_t p[200] = {0};
    buf_t b;
    buf_init(&b, 1000);
    assert_int_equal(ws_encode(&b, WS_OP_PING, 1, p, 126, NULL), KP_EINVAL);
    assert_int_equal(ws_encode(&b, WS_OP_CLOSE, 1, p, 200, KEY), KP_EINVAL);
    assert_int_equal(ws_encode(&b, WS_OP_PONG, 0, p, 1, NULL), KP_EINVAL);
    assert_int_equal(ws_encode(&b, 3, 1, p, 1, NULL), KP_EINVAL);
    assert_int_equal(ws_encode(&b, 0xB, 1, p, 1, NULL), KP_EINVAL);
    assert_int_equal(ws_encode(&b, 16, 1, p, 1, NULL), KP_EINVAL);
    assert_int_equal(ws_encode(&b, -1, 1, p, 1, NULL), KP_EINVAL);
    assert_int_equal(b.len, 0);
    /* Past out's cap: an error, and out as it was. */
    buf_t small;
    buf_init(&small, 10);
    assert_int_equal(ws_encode(&small, WS_OP_BINARY, 1, p, 4, NULL), 0);
    assert_int_equal(small.len, 6);
    assert_int_equal(ws_encode(&small, WS_OP_BINARY, 1, p, 3, NULL), KP_ETOOLARGE);
    assert_int_equal(small.len, 6);
    assert_int_equal(ws_encode(&small, WS_OP_BINARY, 1, p, 2, KEY), KP_ETOOLARGE);
    assert_int_equal(small.len, 6);
    assert_int_equal(ws_encode(&small, WS_OP_BINARY, 1, p, 2, NULL), 0);
    assert_int_equal(small.len, 10);
    buf_free(&small);
    buf_free(&b);
}

/* ws_encode_close: the code, the reason cut to 123 bytes at a character's
 * start, and what may not be sent. */
static void test_encode_close(void **state)
{
    (void)state;
    buf_t b;
    buf_init(&b, 1000);
    assert_int_equal(ws_encode_close(&b, WS_CLOSE_NORMAL, "bye", NULL), 0);
    assert_int_equal(b.len, 7);
    assert_memory_equal(b.p,
                        "\x88\x05\x03\xe8"
                        "bye",
                        7);
    buf_reset(&b);
    assert_int_equal(ws_encode_close(&b, 0, "ignored", NULL), 0);
    assert_int_equal(b.len, 2);
    assert_memory_equal(b.p, "\x88\x00", 2);
    buf_reset(&b);
    assert_int_equal(ws_encode_close(&b, 4000, NULL, KEY), 0);
    assert_int_equal(b.len, 8);
    assert_memory_equal(b.p, "\x88\x82", 2);

    /* A reason of 'a's then one character, of `total` bytes: kept whole, or
     * cut before the character. */
    static const struct {
        const char *tail;
        size_t total, kept;
    } cut[] = {
        {"a", 123, 123},
        {"a", 124, 123},
        {"a", 300, 123},
        {"\xc3\xa9", 123, 123},
        {"\xc3\xa9", 124, 122},
        {"\xe2\x82\xac", 123, 123},
        {"\xe2\x82\xac", 124, 121},
        {"\xe2\x82\xac", 125, 122},
        {"\xf0\x9f\x98\x80", 123, 123},
        {"\xf0\x9f\x98\x80", 124, 120},
        {"\xf0\x9f\x98\x80", 125, 121},
        {"\xf0\x9f\x98\x80", 126, 122},
    };
    char reason[400];
    for (size_t c = 0; c < sizeof cut / sizeof *cut; c++) {
        size_t tl = strlen(cut[c].tail);
        memset(reason, 'a', cut[c].total - tl);
        memcpy(reason + cut[c].total - tl, cut[c].tail, tl + 1);
        for (int masked = 0; masked <= 1; masked++) {
            buf_reset(&b);
            assert_int_equal(ws_encode_close(&b, 1001, reason, masked ? KEY : NULL), 0);
            sink_t s = {0};
            assert_int_equal(decode(masked, 10, (uint8_t *)b.p, b.len, WHOLE, &s, NULL), 0);
            assert_int_equal(s.n, 1);
            assert_int_equal(s.m[0].op, WS_OP_CLOSE);
            const char *r;
            size_t rlen;
            assert_int_equal(ws_close_status(s.m[0].p, s.m[0].len, &r, &rlen), 1001);
            if (rlen != cut[c].kept) fail_msg("case %zu: kept %zu, want %zu", c, rlen, cut[c].kept);
            assert_memory_equal(r, reason, rlen);
            sink_free(&s);
        }
    }

    /* Codes that may not be sent, a reason that is not UTF-8: refused, out unchanged. */
    static const int bad[] = {1004, 1005, 1006, 1015, 1016, 999, 2999, 5000, -1000, 66536};
    buf_reset(&b);
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        assert_int_equal(ws_encode_close(&b, bad[i], "", NULL), KP_EINVAL);
    assert_int_equal(ws_encode_close(&b, 1000, "\xc0\xaf", NULL), KP_EINVAL);
    assert_int_equal(ws_encode_close(&b, 1000, "\xed\xa0\x80", NULL), KP_EINVAL);
    assert_int_equal(b.len, 0);
    buf_free(&b);
}

/* ---- UTF-8 at its edges, and split at every byte ---- */

static void test_utf8(void **state)
{
    (void)state;
    static const char *const valid[] = {
        "",
        "plain",
        "\x7f",
        "\xc2\x80",                                     /* U+0080 */
        "\xdf\xbf",                                     /* U+07FF */
        "\xe0\xa0\x80",                                 /* U+0800 */
        "\xed\x9f\xbf",                                 /* U+D7FF */
        "\xee\x80\x80",                                 /* U+E000 */
        "\xef\xbf\xbf",                                 /* U+FFFF */
        "\xf0\x90\x80\x80",                             /* U+10000 */
        "\xf4\x8f\xbf\xbf",                             /* U+10FFFF */
        "\xce\xba\xe1\xbd\xb9\xcf\x83\xce\xbc\xce\xb5", /* RFC 3629's Greek */
    };
    static const char *const invalid[] = {
        "\xc0\x80",
        "\xc1\xbf",
        "\xe0\x9f\xbf",
        "\xed\xa0\x80",
        "\xed\xbf\xbf",
        "\xf0\x8f\xbf\xbf",
        "\xf4\x90\x80\x80",
        "\xf5\x80\x80\x80",
        "\xf8\x88\x80\x80",
        "\xff",
        "\xfe",
        "\xbf",
        "\xe2\x28\xa1",
        "\xc2",
        "\xe2\x82",
        "\xf0\x9f\x98",
        "a\xc2z",
    };
    uint8_t stream[128];
    for (int v = 0; v <= 1; v++) {
        size_t count = v ? sizeof valid / sizeof *valid : sizeof invalid / sizeof *invalid;
        for (size_t c = 0; c < count; c++) {
            const char *t = v ? valid[c] : invalid[c];
            size_t tl = strlen(t);
            /* Whole, and cut into two fragments at every byte. */
            for (size_t at = 0; at <= tl; at++) {
                fr_t f[2] = {{0x01, t, at, MINIMAL, LEN_N},
                             {0x80, t + at, tl - at, MINIMAL, LEN_N}};
                size_t n = put_frames(stream, f, 2, 1);
                sink_t s = {0};
                int code = 0;
                int rc = decode(1, 100, stream, n, BYTES, &s, &code);
                if (v ? rc != 0 || s.n != 1 : rc != KP_ECORRUPT || code != 1007 || s.n != 0)
                    fail_msg("%s case %zu cut at %zu: rc %d code %d", v ? "valid" : "invalid", c,
                             at, rc, code);
                if (v) assert_msg(&s, 0, WS_OP_TEXT, t, tl);
                sink_free(&s);
            }
            /* Binary is not checked. */
            size_t n = put_frame(stream, &(fr_t){0x82, t, tl, MINIMAL, LEN_N}, 0);
            sink_t s = {0};
            assert_int_equal(decode(0, 100, stream, n, WHOLE, &s, NULL), 0);
            sink_free(&s);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_accept_key),
        cmocka_unit_test(test_rfc_examples_decode),
        cmocka_unit_test(test_rfc_examples_encode),
        cmocka_unit_test(test_control_between_fragments),
        cmocka_unit_test(test_protocol_errors),
        cmocka_unit_test(test_masking_direction),
        cmocka_unit_test(test_too_large_at_header),
        cmocka_unit_test(test_sticky_error),
        cmocka_unit_test(test_closed_after_close),
        cmocka_unit_test(test_callback_stops),
        cmocka_unit_test(test_round_trips),
        cmocka_unit_test(test_encode_errors),
        cmocka_unit_test(test_encode_close),
        cmocka_unit_test(test_utf8),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
