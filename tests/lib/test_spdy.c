/*
 * test_spdy.c -- lib/spdy.c: SPDY/3.1 framing. The dictionary against its
 * published checksum; frames laid out byte for byte as the protocol has
 * them (heads built by hand, header blocks deflated here with zlib itself),
 * each fed whole, a byte at a time and in random splits; round trips of
 * every frame type through the encoder; one compression context across a
 * session's blocks; every protocol error; the bounds checked before the
 * payload is kept, and a decompression bomb stopped at max_headers.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "lib/buf.h"
#include "lib/err.h"
#include "lib/spdy.h"

/* ---- a sink: what a decoder delivered, as text lines ---- */

typedef struct sink {
    buf_t log;   /* one line per control frame; data pieces joined per stream */
    buf_t data;  /* every data byte, in order */
    int frames;  /* control frames and last data pieces */
    int pieces;  /* data pieces */
    int stop_at; /* return 99 at this frame (1-based); 0: never */
} sink_t;

static int collect(void *arg, const spdy_frame_t *f)
{
    sink_t *s = arg;
    char line[256];
    if (f->type == SPDY_DATA) {
        assert_non_null(f->data);
        s->pieces++;
        assert_int_equal(buf_append(&s->data, f->data, f->len), 0);
        if (!f->last) {
            assert_int_equal(f->flags, 0);
            return 0;
        }
        snprintf(line, sizeof line, "data %u flags %u\n", f->stream_id, f->flags);
    } else {
        snprintf(line, sizeof line, "type %d flags %u id %u assoc %u pri %u status %u value %u",
                 f->type, f->flags, f->stream_id, f->assoc_id, f->priority, f->status, f->value);
        assert_int_equal(buf_append(&s->log, line, strlen(line)), 0);
        for (size_t i = 0; i < f->n_headers; i++) {
            snprintf(line, sizeof line, " %.*s=%.*s", (int)f->headers[i].name_len,
                     f->headers[i].name, (int)f->headers[i].value_len, f->headers[i].value);
            assert_int_equal(buf_append(&s->log, line, strlen(line)), 0);
        }
        for (size_t i = 0; i < f->n_settings; i++) {
            snprintf(line, sizeof line, " set%u:%u=%u", f->settings[i].flags, f->settings[i].id,
                     f->settings[i].value);
            assert_int_equal(buf_append(&s->log, line, strlen(line)), 0);
        }
        snprintf(line, sizeof line, "\n");
    }
    assert_int_equal(buf_append(&s->log, line, strlen(line)), 0);
    return ++s->frames == s->stop_at ? 99 : 0;
}

static void sink_init(sink_t *s)
{
    memset(s, 0, sizeof *s);
    buf_init(&s->log, 1 << 20);
    buf_init(&s->data, 1 << 24);
}

static void sink_free(sink_t *s)
{
    buf_free(&s->log);
    buf_free(&s->data);
}

/* Decode `p` whole, byte by byte and in random splits with fresh decoders:
 * every way must give the same log, data and result. Returns the result;
 * `out` (may be NULL) gets the whole run's sink. */
static int decode_all_ways(const void *p, size_t n, size_t max_control, size_t max_headers,
                           sink_t *out)
{
    sink_t ref;
    sink_init(&ref);
    spdy_decoder_t d;
    spdy_decoder_init(&d, max_control, max_headers);
    int want = spdy_decode(&d, p, n, collect, &ref);
    spdy_decoder_free(&d);
    for (int way = 0; way < 4; way++) {
        sink_t s;
        sink_init(&s);
        spdy_decoder_init(&d, max_control, max_headers);
        unsigned seed = 12345u + (unsigned)way;
        int rc = 0;
        for (size_t i = 0; i < n && !rc;) {
            seed = seed * 1103515245u + 12345u;
            size_t k = way == 0 ? 1 : 1 + (seed >> 8) % (way * 7);
            if (k > n - i) k = n - i;
            rc = spdy_decode(&d, (const char *)p + i, k, collect, &s);
            i += k;
        }
        assert_int_equal(rc, want);
        assert_int_equal(s.log.len, ref.log.len);
        if (s.log.len) assert_memory_equal(s.log.p, ref.log.p, s.log.len);
        assert_int_equal(s.data.len, ref.data.len);
        if (s.data.len) assert_memory_equal(s.data.p, ref.data.p, s.data.len);
        spdy_decoder_free(&d);
        sink_free(&s);
    }
    if (out)
        *out = ref;
    else
        sink_free(&ref);
    return want;
}

static void assert_log(const sink_t *s, const char *want)
{
    const char *got = s->log.p ? s->log.p : "";
    if (strcmp(got, want)) fail_msg("log:\n%s\nwant:\n%s", got, want);
}

/* ---- building frames by hand ---- */

static void put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

static void add_control_head(buf_t *b, int version, int type, uint8_t flags, uint32_t len)
{
    uint8_t h[8] = {(uint8_t)(0x80 | version >> 8), (uint8_t)version, (uint8_t)(type >> 8),
                    (uint8_t)type};
    put32(h + 4, len);
    h[4] = flags;
    assert_int_equal(buf_append(b, h, 8), 0);
}

static void add32(buf_t *b, uint32_t v)
{
    uint8_t x[4];
    put32(x, v);
    assert_int_equal(buf_append(b, x, 4), 0);
}

/* A zlib context of one direction, primed with `dict` (NULL: the
 * protocol's), independent of the encoder under test. */
typedef struct zctx {
    z_stream z;
} zctx_t;

static void zctx_init(zctx_t *c, const void *dict, size_t dict_len)
{
    memset(c, 0, sizeof *c);
    assert_int_equal(deflateInit(&c->z, 9), Z_OK);
    if (!dict) {
        dict = spdy_dictionary;
        dict_len = spdy_dictionary_len;
    }
    assert_int_equal(deflateSetDictionary(&c->z, dict, (uInt)dict_len), Z_OK);
}

/* Deflate `plain` (sync flush) onto b. */
static void zctx_block(zctx_t *c, buf_t *b, const void *plain, size_t n)
{
    unsigned char out[1 << 16];
    c->z.next_in = (Bytef *)plain;
    c->z.avail_in = (uInt)n;
    do {
        c->z.next_out = out;
        c->z.avail_out = sizeof out;
        int zr = deflate(&c->z, Z_SYNC_FLUSH);
        assert_true(zr == Z_OK || zr == Z_BUF_ERROR);
        assert_int_equal(buf_append(b, out, sizeof out - c->z.avail_out), 0);
    } while (c->z.avail_out == 0);
}

/* The uncompressed block of NULL-terminated name, value, ... pairs. */
static void plain_pairs(buf_t *b, const char *const *kv)
{
    int n = 0;
    while (kv[2 * n])
        n++;
    add32(b, (uint32_t)n);
    for (int i = 0; i < n; i++) {
        add32(b, (uint32_t)strlen(kv[2 * i]));
        assert_int_equal(buf_append(b, kv[2 * i], strlen(kv[2 * i])), 0);
        add32(b, (uint32_t)strlen(kv[2 * i + 1]));
        assert_int_equal(buf_append(b, kv[2 * i + 1], strlen(kv[2 * i + 1])), 0);
    }
}

/* A frame with a header block: head, `fixed`, the block deflated by c. */
static void add_block_frame(buf_t *b, zctx_t *c, int type, uint8_t flags, const uint8_t *fixed,
                            size_t fixed_len, const void *plain, size_t plain_len)
{
    buf_t z;
    buf_init(&z, 1 << 24);
    zctx_block(c, &z, plain, plain_len);
    add_control_head(b, 3, type, flags, (uint32_t)(fixed_len + z.len));
    assert_int_equal(buf_append(b, fixed, fixed_len), 0);
    assert_int_equal(buf_append(b, z.p, z.len), 0);
    buf_free(&z);
}

static void add_syn_stream(buf_t *b, zctx_t *c, uint32_t id, uint8_t flags, const char *const *kv)
{
    buf_t plain;
    buf_init(&plain, 1 << 20);
    plain_pairs(&plain, kv);
    uint8_t fixed[10] = {0};
    put32(fixed, id);
    fixed[8] = 2 << 5;
    add_block_frame(b, c, SPDY_SYN_STREAM, flags, fixed, 10, plain.p, plain.len);
    buf_free(&plain);
}

/* ---- tests ---- */

static void test_dictionary(void **state)
{
    (void)state;
    assert_int_equal(spdy_dictionary_len, 1423);
    /* the checksum a zlib stream primed with it carries (FDICT) */
    uLong a = adler32(adler32(0L, Z_NULL, 0), spdy_dictionary, (uInt)spdy_dictionary_len);
    assert_int_equal(a, 0xe3c6a7c2u);
    assert_memory_equal(spdy_dictionary, "\0\0\0\007options", 11);
    assert_memory_equal(spdy_dictionary + spdy_dictionary_len - 6, "enq=0.", 6);
}

/* What kubectl's exec sends first: SYN_STREAMs whose blocks share one
 * compression context, then data; built by hand, decoded every way. */
static void test_hand_built_session(void **state)
{
    (void)state;
    buf_t b;
    buf_init(&b, 1 << 20);
    zctx_t c;
    zctx_init(&c, NULL, 0);
    add_syn_stream(&b, &c, 1, 0, (const char *const[]){"streamtype", "error", NULL});
    add_syn_stream(&b, &c, 3, 0, (const char *const[]){"streamtype", "stdout", NULL});
    add_syn_stream(&b, &c, 5, SPDY_FLAG_UNIDIRECTIONAL,
                   (const char *const[]){"streamtype", "stdin", "x-extra", "a", NULL});
    /* data: stream 5, FIN, "hello" */
    uint8_t h[8];
    put32(h, 5);
    put32(h + 4, 5);
    h[4] = SPDY_FLAG_FIN;
    buf_append(&b, h, 8);
    buf_append(&b, "hello", 5);
    /* an empty data frame on stream 3 */
    put32(h, 3);
    put32(h + 4, 0);
    buf_append(&b, h, 8);
    /* PING 7, RST_STREAM 3 CANCEL, WINDOW_UPDATE 0 +65536, GOAWAY 5 OK */
    add_control_head(&b, 3, SPDY_PING, 0, 4);
    add32(&b, 7);
    add_control_head(&b, 3, SPDY_RST_STREAM, 0, 8);
    add32(&b, 3);
    add32(&b, SPDY_RST_CANCEL);
    add_control_head(&b, 3, SPDY_WINDOW_UPDATE, 0, 8);
    add32(&b, 0);
    add32(&b, 65536);
    add_control_head(&b, 3, SPDY_SETTINGS, 0, 4 + 16);
    add32(&b, 2);
    add32(&b, 0x01000004); /* flags 1, id 4 (max concurrent streams) */
    add32(&b, 100);
    add32(&b, 7); /* id 7 (initial window) */
    add32(&b, 1 << 16);
    add_control_head(&b, 3, SPDY_GOAWAY, 0, 8);
    add32(&b, 5);
    add32(&b, SPDY_GOAWAY_OK);

    sink_t s;
    assert_int_equal(decode_all_ways(b.p, b.len, 0, 0, &s), 0);
    assert_log(&s, "type 1 flags 0 id 1 assoc 0 pri 2 status 0 value 0 streamtype=error\n"
                   "type 1 flags 0 id 3 assoc 0 pri 2 status 0 value 0 streamtype=stdout\n"
                   "type 1 flags 2 id 5 assoc 0 pri 2 status 0 value 0 streamtype=stdin x-extra=a\n"
                   "data 5 flags 1\n"
                   "data 3 flags 0\n"
                   "type 6 flags 0 id 0 assoc 0 pri 0 status 0 value 7\n"
                   "type 3 flags 0 id 3 assoc 0 pri 0 status 5 value 0\n"
                   "type 9 flags 0 id 0 assoc 0 pri 0 status 0 value 65536\n"
                   "type 4 flags 0 id 0 assoc 0 pri 0 status 0 value 0 set1:4=100 set0:7=65536\n"
                   "type 7 flags 0 id 5 assoc 0 pri 0 status 0 value 0\n");
    assert_int_equal(s.data.len, 5);
    assert_memory_equal(s.data.p, "hello", 5);
    sink_free(&s);
    deflateEnd(&c.z);
    buf_free(&b);
}

typedef struct keep_headers {
    char value[64];
    size_t n;
} keep_headers_t;

static int keep_value(void *arg, const spdy_frame_t *f)
{
    keep_headers_t *k = arg;
    size_t len;
    const char *v = spdy_header_get(f->headers, f->n_headers, "x-stream-protocol-version", &len);
    k->n = f->n_headers;
    if (v) snprintf(k->value, sizeof k->value, "%.*s", (int)len, v);
    return 0;
}

/* The encoder's frames, read back by zlib and by hand. */
static void test_encoder_layout(void **state)
{
    (void)state;
    spdy_encoder_t e;
    spdy_encoder_init(&e);
    buf_t b;
    buf_init(&b, 1 << 20);
    spdy_header_t hv[] = {{"streamtype", 10, "stdout", 6}, {"port", 4, "8080", 4}};
    assert_int_equal(spdy_encode_syn_reply(&e, &b, 3, SPDY_FLAG_FIN, hv, 2), 0);
    const uint8_t *p = (const uint8_t *)b.p;
    assert_int_equal(p[0], 0x80);
    assert_int_equal(p[1], 3);
    assert_int_equal(p[2] << 8 | p[3], SPDY_SYN_REPLY);
    assert_int_equal(p[4], SPDY_FLAG_FIN);
    size_t len = (size_t)p[5] << 16 | (size_t)p[6] << 8 | p[7];
    assert_int_equal(len, b.len - 8);
    assert_int_equal(p[8] << 24 | p[9] << 16 | p[10] << 8 | p[11], 3);
    /* inflate with zlib and the dictionary */
    z_stream z = {0};
    unsigned char plain[256];
    assert_int_equal(inflateInit(&z), Z_OK);
    z.next_in = (Bytef *)p + 12;
    z.avail_in = (uInt)(len - 4);
    z.next_out = plain;
    z.avail_out = sizeof plain;
    assert_int_equal(inflate(&z, Z_SYNC_FLUSH), Z_NEED_DICT);
    assert_int_equal(inflateSetDictionary(&z, spdy_dictionary, (uInt)spdy_dictionary_len), Z_OK);
    int zr = inflate(&z, Z_SYNC_FLUSH);
    assert_true(zr == Z_OK || zr == Z_BUF_ERROR);
    assert_int_equal(z.avail_in, 0);
    size_t n = sizeof plain - z.avail_out;
    static const uint8_t want[] = "\0\0\0\002"
                                  "\0\0\0\012streamtype\0\0\0\006stdout"
                                  "\0\0\0\004port\0\0\0\0048080";
    assert_int_equal(n, sizeof want - 1);
    assert_memory_equal(plain, want, n);
    inflateEnd(&z);

    /* data, rst, ping, goaway, window update, settings: exact bytes */
    buf_reset(&b);
    assert_int_equal(spdy_encode_data(&b, 0x7fffffff, SPDY_FLAG_FIN, "ab", 2), 0);
    assert_memory_equal(b.p,
                        "\x7f\xff\xff\xff\x01\x00\x00\x02"
                        "ab",
                        10);
    buf_reset(&b);
    assert_int_equal(spdy_encode_rst_stream(&b, 9, SPDY_RST_REFUSED_STREAM), 0);
    assert_memory_equal(b.p, "\x80\x03\x00\x03\x00\x00\x00\x08\0\0\0\x09\0\0\0\x03", 16);
    buf_reset(&b);
    assert_int_equal(spdy_encode_ping(&b, 0xdeadbeef), 0);
    assert_memory_equal(b.p, "\x80\x03\x00\x06\x00\x00\x00\x04\xde\xad\xbe\xef", 12);
    buf_reset(&b);
    assert_int_equal(spdy_encode_goaway(&b, 11, SPDY_GOAWAY_PROTOCOL_ERROR), 0);
    assert_memory_equal(b.p, "\x80\x03\x00\x07\x00\x00\x00\x08\0\0\0\x0b\0\0\0\x01", 16);
    buf_reset(&b);
    assert_int_equal(spdy_encode_window_update(&b, 0, 1000), 0);
    assert_memory_equal(b.p, "\x80\x03\x00\x09\x00\x00\x00\x08\0\0\0\0\0\0\x03\xe8", 16);
    buf_reset(&b);
    spdy_setting_t st = {.flags = 1, .id = 4, .value = 100};
    assert_int_equal(spdy_encode_settings(&b, SPDY_FLAG_CLEAR_SETTINGS, &st, 1), 0);
    assert_memory_equal(b.p, "\x80\x03\x00\x04\x01\x00\x00\x0c\0\0\0\x01\x01\0\0\x04\0\0\0\x64",
                        20);

    /* spdy_header_get */
    buf_reset(&b);
    spdy_header_t h2[] = {{"x-stream-protocol-version", 25, "v4.channel.k8s.io", 17}};
    assert_int_equal(spdy_encode_syn_reply(&e, &b, 5, 0, h2, 1), 0);
    /* a decoder that missed the first block cannot read the second */
    spdy_decoder_t d;
    spdy_decoder_init(&d, 0, 0);
    keep_headers_t k = {{0}, 0};
    assert_int_equal(spdy_decode(&d, b.p, b.len, keep_value, &k), KP_ECORRUPT);
    spdy_decoder_free(&d);
    buf_free(&b);
    spdy_encoder_free(&e);

    /* a fresh pair: the value comes back */
    spdy_encoder_init(&e);
    buf_init(&b, 1 << 20);
    assert_int_equal(spdy_encode_syn_reply(&e, &b, 5, 0, h2, 1), 0);
    spdy_decoder_init(&d, 0, 0);
    assert_int_equal(spdy_decode(&d, b.p, b.len, keep_value, &k), 0);
    assert_string_equal(k.value, "v4.channel.k8s.io");
    assert_int_equal(k.n, 1);
    spdy_decoder_free(&d);
    buf_free(&b);
    spdy_encoder_free(&e);
}

/* Many frames of every type through one encoder and one decoder. */
static void test_round_trip(void **state)
{
    (void)state;
    spdy_encoder_t e;
    spdy_encoder_init(&e);
    buf_t b, want;
    buf_init(&b, 1 << 24);
    buf_init(&want, 1 << 24);
    char big[70000];
    for (size_t i = 0; i < sizeof big; i++)
        big[i] = (char)('a' + i % 26);
    for (uint32_t i = 1; i < 200; i += 2) {
        char v[32];
        snprintf(v, sizeof v, "stream-%u", i);
        spdy_header_t h[] = {{"streamtype", 10, v, strlen(v)}, {"z", 1, "", 0}};
        assert_int_equal(spdy_encode_syn_stream(&e, &b, i, 0, (int)(i % 8), 0, h, 2), 0);
        char line[160];
        snprintf(line, sizeof line,
                 "type 1 flags 0 id %u assoc 0 pri %u status 0 value 0 streamtype=%s z=\n", i,
                 i % 8, v);
        buf_append(&want, line, strlen(line));
        size_t n = i * 331 % sizeof big;
        assert_int_equal(spdy_encode_data(&b, i, i % 3 ? 0 : SPDY_FLAG_FIN, big, n), 0);
        snprintf(line, sizeof line, "data %u flags %u\n", i, i % 3 ? 0 : 1);
        buf_append(&want, line, strlen(line));
        assert_int_equal(spdy_encode_headers(&e, &b, i, SPDY_FLAG_FIN, h, 1), 0);
        snprintf(line, sizeof line,
                 "type 8 flags 1 id %u assoc 0 pri 0 status 0 value 0 streamtype=%s\n", i, v);
        buf_append(&want, line, strlen(line));
    }
    sink_t s;
    assert_int_equal(decode_all_ways(b.p, b.len, 0, 0, &s), 0);
    assert_log(&s, want.p);
    sink_free(&s);
    buf_free(&b);
    buf_free(&want);
    spdy_encoder_free(&e);
}

/* Each bad input: the error, and nothing after it is taken. */
static void expect_error(const buf_t *b, int want)
{
    assert_int_equal(decode_all_ways(b->p, b->len, 0, 0, NULL), want);
    spdy_decoder_t d;
    spdy_decoder_init(&d, 0, 0);
    sink_t s;
    sink_init(&s);
    assert_int_equal(spdy_decode(&d, b->p, b->len, collect, &s), want);
    assert_int_equal(spdy_decode(&d, "\x80\x03\x00\x06\0\0\0\x04\0\0\0\x01", 12, collect, &s),
                     want); /* sticky */
    spdy_decoder_free(&d);
    sink_free(&s);
}

static void test_protocol_errors(void **state)
{
    (void)state;
    buf_t b;
    buf_init(&b, 1 << 20);
    zctx_t c;

    add_control_head(&b, 2, SPDY_PING, 0, 4); /* SPDY/2 */
    add32(&b, 1);
    expect_error(&b, KP_ECORRUPT);

    buf_reset(&b);
    add_control_head(&b, 3, SPDY_RST_STREAM, 0, 4); /* short */
    add32(&b, 1);
    expect_error(&b, KP_ECORRUPT);

    buf_reset(&b);
    add_control_head(&b, 3, SPDY_PING, 0, 8); /* long */
    add32(&b, 1);
    add32(&b, 1);
    expect_error(&b, KP_ECORRUPT);

    buf_reset(&b);
    buf_append(&b, "\0\0\0\0\0\0\0\x01x", 9); /* data on stream 0 */
    expect_error(&b, KP_ECORRUPT);

    buf_reset(&b);
    add_control_head(&b, 3, SPDY_RST_STREAM, 0, 8); /* status 0 */
    add32(&b, 1);
    add32(&b, 0);
    expect_error(&b, KP_ECORRUPT);

    buf_reset(&b);
    add_control_head(&b, 3, SPDY_RST_STREAM, 0, 8); /* stream 0 */
    add32(&b, 0);
    add32(&b, 1);
    expect_error(&b, KP_ECORRUPT);

    buf_reset(&b);
    add_control_head(&b, 3, SPDY_WINDOW_UPDATE, 0, 8); /* delta 0 */
    add32(&b, 1);
    add32(&b, 0);
    expect_error(&b, KP_ECORRUPT);

    buf_reset(&b);
    add_control_head(&b, 3, SPDY_SETTINGS, 0, 12); /* says 2 entries, holds 1 */
    add32(&b, 2);
    add32(&b, 4);
    add32(&b, 1);
    expect_error(&b, KP_ECORRUPT);

    buf_reset(&b);
    add_control_head(&b, 3, SPDY_SYN_REPLY, 0, 8); /* not zlib */
    add32(&b, 1);
    add32(&b, 0x12345678);
    expect_error(&b, KP_ECORRUPT);

    /* a block primed with another dictionary */
    buf_reset(&b);
    zctx_init(&c, "another dictionary", 18);
    add_syn_stream(&b, &c, 1, 0, (const char *const[]){"a", "b", NULL});
    deflateEnd(&c.z);
    expect_error(&b, KP_ECORRUPT);

    /* names: uppercase, empty, repeated; a count its bytes cannot hold;
     * bytes after the last pair */
    static const char *const bad[][5] = {
        {"Streamtype", "x", NULL}, {"", "x", NULL}, {"a", "1", "a", "2", NULL}};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        buf_reset(&b);
        zctx_init(&c, NULL, 0);
        add_syn_stream(&b, &c, 1, 0, bad[i]);
        deflateEnd(&c.z);
        expect_error(&b, KP_ECORRUPT);
    }
    uint8_t fixed[4] = {0, 0, 0, 1};
    static const uint8_t count_lies[] = "\0\0\0\x05\0\0\0\x01"
                                        "a\0\0\0\x01"
                                        "b";
    static const uint8_t trailing[] = "\0\0\0\x01\0\0\0\x01"
                                      "a\0\0\0\x01"
                                      "b!";
    static const uint8_t short_value[] = "\0\0\0\x01\0\0\0\x01"
                                         "a\0\0\0\x09"
                                         "b";
    const uint8_t *blocks[] = {count_lies, trailing, short_value};
    size_t lens[] = {sizeof count_lies - 1, sizeof trailing - 1, sizeof short_value - 1};
    for (int i = 0; i < 3; i++) {
        buf_reset(&b);
        zctx_init(&c, NULL, 0);
        add_block_frame(&b, &c, SPDY_HEADERS, 0, fixed, 4, blocks[i], lens[i]);
        deflateEnd(&c.z);
        expect_error(&b, KP_ECORRUPT);
    }
    /* SYN_STREAM on stream 0 */
    buf_reset(&b);
    zctx_init(&c, NULL, 0);
    add_syn_stream(&b, &c, 0, 0, (const char *const[]){"a", "b", NULL});
    deflateEnd(&c.z);
    expect_error(&b, KP_ECORRUPT);
    buf_free(&b);
}

/* Unknown control types are skipped whole, then decoding goes on; the
 * callback's stop is returned and sticks. */
static void test_skip_and_stop(void **state)
{
    (void)state;
    buf_t b;
    buf_init(&b, 1 << 20);
    add_control_head(&b, 3, 5, 0, 0); /* NOOP (SPDY/2), empty */
    add_control_head(&b, 3, 0x7ff, 0, 3);
    buf_append(&b, "abc", 3);
    add_control_head(&b, 3, 10, 0, 70000); /* CREDENTIAL, over max_control: skipped */
    for (int i = 0; i < 70000 / 10; i++)
        buf_append(&b, "0123456789", 10);
    add_control_head(&b, 3, SPDY_PING, 0, 4);
    add32(&b, 42);
    add_control_head(&b, 3, SPDY_PING, 0, 4);
    add32(&b, 43);
    sink_t s;
    assert_int_equal(decode_all_ways(b.p, b.len, 0, 0, &s), 0);
    assert_log(&s, "type 6 flags 0 id 0 assoc 0 pri 0 status 0 value 42\n"
                   "type 6 flags 0 id 0 assoc 0 pri 0 status 0 value 43\n");
    sink_free(&s);

    spdy_decoder_t d;
    spdy_decoder_init(&d, 0, 0);
    sink_init(&s);
    s.stop_at = 1;
    assert_int_equal(spdy_decode(&d, b.p, b.len, collect, &s), 99);
    assert_int_equal(s.frames, 1);
    assert_int_equal(spdy_decode(&d, b.p, b.len, collect, &s), 99);
    assert_int_equal(s.frames, 1);
    sink_free(&s);
    spdy_decoder_free(&d);
    buf_free(&b);
}

/* A control frame over max_control fails at its head, before its payload;
 * a header block inflating past max_headers fails there. */
static void test_bounds(void **state)
{
    (void)state;
    buf_t b;
    buf_init(&b, 1 << 20);
    add_control_head(&b, 3, SPDY_SYN_STREAM, 0, 4097);
    spdy_decoder_t d;
    spdy_decoder_init(&d, 4096, 0);
    sink_t s;
    sink_init(&s);
    assert_int_equal(spdy_decode(&d, b.p, b.len, collect, &s), KP_ETOOLARGE);
    spdy_decoder_free(&d);

    /* a bomb: one header of 4 MiB of 'a', deflated to about 4 KiB */
    buf_reset(&b);
    buf_t plain;
    buf_init(&plain, 1 << 23);
    add32(&plain, 1);
    add32(&plain, 1);
    buf_append(&plain, "x", 1);
    add32(&plain, 4 << 20);
    for (int i = 0; i < 4096; i++) {
        char k[1024];
        memset(k, 'a', sizeof k);
        buf_append(&plain, k, sizeof k);
    }
    zctx_t c;
    zctx_init(&c, NULL, 0);
    uint8_t fixed[4] = {0, 0, 0, 1};
    add_block_frame(&b, &c, SPDY_HEADERS, 0, fixed, 4, plain.p, plain.len);
    deflateEnd(&c.z);
    assert_true(b.len < 64 * 1024);
    spdy_decoder_init(&d, 0, 64 * 1024);
    assert_int_equal(spdy_decode(&d, b.p, b.len, collect, &s), KP_ETOOLARGE);
    assert_true(d.plain.cap <= 64 * 1024 + 2);
    spdy_decoder_free(&d);
    /* the same block under a bound that holds it decodes */
    spdy_decoder_init(&d, 0, 5 << 20);
    assert_int_equal(spdy_decode(&d, b.p, b.len, collect, &s), 0);
    spdy_decoder_free(&d);
    sink_free(&s);
    buf_free(&plain);
    buf_free(&b);
}

static void test_encoder_refusals(void **state)
{
    (void)state;
    spdy_encoder_t e;
    spdy_encoder_init(&e);
    buf_t b;
    buf_init(&b, 1 << 20);
    spdy_header_t ok = {"a", 1, "b", 1}, upper = {"A", 1, "b", 1}, empty = {"", 0, "b", 1};
    assert_int_equal(spdy_encode_syn_stream(&e, &b, 0, 0, 0, 0, &ok, 1), KP_EINVAL);
    assert_int_equal(spdy_encode_syn_stream(&e, &b, 0x80000000u, 0, 0, 0, &ok, 1), KP_EINVAL);
    assert_int_equal(spdy_encode_syn_stream(&e, &b, 1, 0, 8, 0, &ok, 1), KP_EINVAL);
    assert_int_equal(spdy_encode_syn_reply(&e, &b, 1, 0, &upper, 1), KP_EINVAL);
    assert_int_equal(spdy_encode_headers(&e, &b, 1, 0, &empty, 1), KP_EINVAL);
    assert_int_equal(spdy_encode_data(&b, 0, 0, "x", 1), KP_EINVAL);
    assert_int_equal(spdy_encode_rst_stream(&b, 1, 0), KP_EINVAL);
    assert_int_equal(spdy_encode_window_update(&b, 1, 0), KP_EINVAL);
    assert_int_equal(b.len, 0);
    /* refusals cost the context nothing: the next block still decodes */
    assert_int_equal(spdy_encode_syn_reply(&e, &b, 1, 0, &ok, 1), 0);
    sink_t s;
    assert_int_equal(decode_all_ways(b.p, b.len, 0, 0, &s), 0);
    assert_log(&s, "type 2 flags 0 id 1 assoc 0 pri 0 status 0 value 0 a=b\n");
    sink_free(&s);
    buf_free(&b);
    spdy_encoder_free(&e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dictionary),      cmocka_unit_test(test_hand_built_session),
        cmocka_unit_test(test_encoder_layout),  cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_protocol_errors), cmocka_unit_test(test_skip_and_stop),
        cmocka_unit_test(test_bounds),          cmocka_unit_test(test_encoder_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
