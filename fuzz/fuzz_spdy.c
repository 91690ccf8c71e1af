/*
 * fuzz_spdy.c -- SPDY/3.1 frames (lib/spdy.c): the bytes a client sends on
 * a connection switched to SPDY/3.1. Input: one byte saying how to cut the
 * rest into chunks (bits 0-5: 0 a byte at a time, else chunks of 0 to 4 * n
 * bytes; bits 6-7: the callback stops at the end of that frame, 0 never), then the
 * stream, fed to a decoder with max_control 4096 and max_headers 16384.
 *
 * Checks, besides the sanitizers:
 *   - the stream cut into chunks decodes exactly as the stream fed whole:
 *     the same frames, data and error;
 *   - every frame delivered, encoded again (header blocks through one
 *     encoder for the whole run, so its compression context carries over
 *     as a session's does), decodes in a fresh decoder to itself.
 */
#include "fuzz.h"
#include "lib/err.h"
#include "lib/spdy.h"

#define MAX_CONTROL 4096
#define MAX_HEADERS 16384

typedef struct run {
    int stop_at; /* frame number whose callback returns 1; 0: none */
    int count;
    buf_t log;          /* what was delivered, normalised (see note) */
    spdy_encoder_t enc; /* the round trip's */
    buf_t again;        /* every frame encoded again */
    uint32_t last_stream;
} run_t;

static void log_bytes(buf_t *b, const void *p, size_t n)
{
    if (buf_append(b, p, n)) abort();
}

static void log32(buf_t *b, uint32_t v)
{
    log_bytes(b, &v, sizeof v);
}

/* The log: a data piece's bytes (with its stream when it changes), its flags
 * when set; a control frame's fields, pairs and settings. Data pieces cut
 * differently log the same. */
static void note(buf_t *b, uint32_t *last_stream, const spdy_frame_t *f)
{
    if (f->type == SPDY_DATA) {
        if (f->stream_id != *last_stream) {
            log_bytes(b, "S", 1);
            log32(b, f->stream_id);
            *last_stream = f->stream_id;
        }
        log_bytes(b, f->data, f->len);
        if (f->flags) {
            log_bytes(b, "F", 1);
            log_bytes(b, &f->flags, 1);
        }
        return;
    }
    *last_stream = 0;
    log_bytes(b, "C", 1);
    log32(b, (uint32_t)f->type);
    /* flags that mean something (PING, RST_STREAM, GOAWAY and WINDOW_UPDATE
     * define none, and their encoders set none) */
    int flagged = f->type == SPDY_SYN_STREAM || f->type == SPDY_SYN_REPLY ||
                  f->type == SPDY_HEADERS || f->type == SPDY_SETTINGS;
    log32(b, flagged ? f->flags : 0);
    log32(b, f->stream_id);
    log32(b, f->assoc_id);
    log32(b, f->priority);
    log32(b, f->status);
    log32(b, f->value);
    log32(b, (uint32_t)f->n_headers);
    for (size_t i = 0; i < f->n_headers; i++) {
        log32(b, (uint32_t)f->headers[i].name_len);
        log_bytes(b, f->headers[i].name, f->headers[i].name_len);
        log32(b, (uint32_t)f->headers[i].value_len);
        log_bytes(b, f->headers[i].value, f->headers[i].value_len);
    }
    log32(b, (uint32_t)f->n_settings);
    for (size_t i = 0; i < f->n_settings; i++) {
        log32(b, f->settings[i].flags);
        log32(b, f->settings[i].id);
        log32(b, f->settings[i].value);
    }
}

static int encode_again(run_t *r, const spdy_frame_t *f)
{
    buf_t *o = &r->again;
    switch (f->type) {
    case SPDY_DATA:
        return spdy_encode_data(o, f->stream_id, f->flags, f->data, f->len);
    case SPDY_SYN_STREAM:
        return spdy_encode_syn_stream(&r->enc, o, f->stream_id, f->assoc_id, f->priority, f->flags,
                                      f->headers, f->n_headers);
    case SPDY_SYN_REPLY:
        return spdy_encode_syn_reply(&r->enc, o, f->stream_id, f->flags, f->headers, f->n_headers);
    case SPDY_HEADERS:
        return spdy_encode_headers(&r->enc, o, f->stream_id, f->flags, f->headers, f->n_headers);
    case SPDY_RST_STREAM:
        return spdy_encode_rst_stream(o, f->stream_id, f->status);
    case SPDY_SETTINGS:
        return spdy_encode_settings(o, f->flags, f->settings, f->n_settings);
    case SPDY_PING:
        return spdy_encode_ping(o, f->value);
    case SPDY_GOAWAY:
        return spdy_encode_goaway(o, f->stream_id, f->status);
    case SPDY_WINDOW_UPDATE:
        return spdy_encode_window_update(o, f->stream_id, f->value);
    }
    return KP_EINVAL;
}

static int record(void *arg, const spdy_frame_t *f)
{
    run_t *r = arg;
    note(&r->log, &r->last_stream, f);
    int rc = encode_again(r, f);
    if (rc) {
        fprintf(stderr, "encoding a delivered frame (type %d) again: %d\n", f->type, rc);
        abort();
    }
    if (f->type == SPDY_DATA && !f->last) return 0; /* pieces vary with the cuts */
    return ++r->count == r->stop_at ? 1 : 0;
}

typedef struct check {
    buf_t log;
    uint32_t last_stream;
} check_t;

static int recheck(void *arg, const spdy_frame_t *f)
{
    check_t *c = arg;
    note(&c->log, &c->last_stream, f);
    return 0;
}

/* One chunk of the stream to the run's decoder (fz_feed). */
typedef struct feeding {
    run_t *r;
    spdy_decoder_t *d;
} feeding_t;

static int feed(void *arg, const uint8_t *p, size_t k)
{
    feeding_t *f = arg;
    return spdy_decode(f->d, p, k, record, f->r);
}

/* Decode the stream whole (cut 0) or in chunks; returns the error or 0. */
static int run(run_t *r, spdy_decoder_t *d, const uint8_t *p, size_t n, unsigned cut)
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
    run_t r[2];
    spdy_decoder_t d[2];
    int rc[2];
    for (int k = 0; k < 2; k++) {
        r[k] = (run_t){.stop_at = (int)stop};
        /* a frame costs at least 8 bytes of the stream; a block may inflate
         * to MAX_HEADERS, logged with 8 bytes more per pair */
        buf_init(&r[k].log, 64 * (size_t)FZ_INPUT_MAX);
        buf_init(&r[k].again, 64 * (size_t)FZ_INPUT_MAX);
        spdy_encoder_init(&r[k].enc);
        spdy_decoder_init(&d[k], MAX_CONTROL, MAX_HEADERS);
        rc[k] = run(&r[k], &d[k], data, size, k ? (cut ? cut : 64) : 0);
    }
    if (rc[0] != rc[1] || r[0].log.len != r[1].log.len ||
        (r[0].log.len && memcmp(r[0].log.p, r[1].log.p, r[0].log.len))) {
        fprintf(stderr, "whole: rc %d, %d frames; in chunks: rc %d, %d frames\n", rc[0], r[0].count,
                rc[1], r[1].count);
        abort();
    }
    /* the round trip: what was encoded again decodes to the same log */
    spdy_decoder_t d2;
    spdy_decoder_init(&d2, 64 * (size_t)FZ_INPUT_MAX, MAX_HEADERS);
    check_t c = {.last_stream = 0};
    buf_init(&c.log, 64 * (size_t)FZ_INPUT_MAX);
    int rc2 = spdy_decode(&d2, r[0].again.p, r[0].again.len, recheck, &c);
    if (rc2 || c.log.len != r[0].log.len || (c.log.len && memcmp(c.log.p, r[0].log.p, c.log.len))) {
        size_t at = 0;
        while (at < c.log.len && at < r[0].log.len && c.log.p[at] == r[0].log.p[at])
            at++;
        fprintf(stderr, "round trip: rc %d, log %zu bytes against %zu, first difference at %zu\n",
                rc2, c.log.len, r[0].log.len, at);
        abort();
    }
    buf_free(&c.log);
    spdy_decoder_free(&d2);
    for (int k = 0; k < 2; k++) {
        spdy_decoder_free(&d[k]);
        spdy_encoder_free(&r[k].enc);
        buf_free(&r[k].log);
        buf_free(&r[k].again);
    }
    return 0;
}
