/*
 * websocket.c -- RFC 6455 framing (websocket.h): the accept key, the decoder
 * and the encoder.
 *
 * THE DECODER takes each frame in two phases:
 *
 *   HEADER   (left == 0) hdr collects the frame's 2 to 14 header bytes. Its
 *            checks run at three fixed points, so that the first error is
 *            the same however the stream is cut into chunks:
 *              byte 2          header_first(): reserved bits and opcodes,
 *                              the mask bit, a control frame's rules, the
 *                              order of data frames (a message begins here);
 *              the length's end header_length(): minimal encoding, the top
 *                              bit, max_message (before any payload);
 *              the header's end the masking key; on to PAYLOAD.
 *   PAYLOAD  (left > 0) bytes go, unmasked, to ctl (a control frame) or to
 *            msg (a data frame).
 *
 * A frame ends when its last payload byte arrives (at once for an empty
 * one): frame_end() delivers a control frame (a close checked first) or,
 * after a final data frame, the whole message (a text one checked as UTF-8
 * in one piece, so that a character may straddle fragments); then HEADER.
 *
 * Invariants between calls:
 *   1. err != 0: no byte is taken again; ws_decode() returns err.
 *   2. left > 0 only with hdr_len == 0 (the header is consumed).
 *   3. msg_op != 0 exactly while a data message is begun and not ended, and
 *      msg.len <= max_message (checked per frame at its header).
 *   4. ctl_len <= WS_CONTROL_MAX (checked at byte 2).
 */
#include "lib/websocket.h"

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/base64.h"
#include "lib/err.h"

/* After a message, a buffer grown past this is released rather than kept
 * for the connection's life (one large message must not pin its memory). */
#define WS_KEEP_BYTES (64u << 10)

/* ---- UTF-8 (RFC 3629) ---- */

/* 1 if s[0..n) is UTF-8: shortest forms only, no surrogates (U+D800 to
 * U+DFFF), nothing past U+10FFFF, no sequence cut at the end. */
static int utf8_valid(const uint8_t *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        uint8_t c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t k;                     /* continuation bytes */
        uint8_t lo = 0x80, hi = 0xBF; /* the second byte's range */
        if (c >= 0xC2 && c <= 0xDF) {
            k = 1;
        } else if (c >= 0xE0 && c <= 0xEF) {
            k = 2;
            if (c == 0xE0) lo = 0xA0; /* overlong below U+0800 */
            if (c == 0xED) hi = 0x9F; /* surrogates */
        } else if (c >= 0xF0 && c <= 0xF4) {
            k = 3;
            if (c == 0xF0) lo = 0x90; /* overlong below U+10000 */
            if (c == 0xF4) hi = 0x8F; /* past U+10FFFF */
        } else {
            return 0; /* a continuation byte, C0/C1 (overlong), F5 and up */
        }
        if (n - i - 1 < k || s[i + 1] < lo || s[i + 1] > hi) return 0;
        for (size_t j = 2; j <= k; j++)
            if ((s[i + j] & 0xC0) != 0x80) return 0;
        i += k + 1;
    }
    return 1;
}

/* ---- close codes ---- */

/* A code an endpoint may put in a close frame (RFC 6455 7.4, and the IANA
 * registry's 1012 to 1014); 3000 to 4999 are for libraries and applications.
 * Never 1004 (reserved), 1005, 1006 or 1015 (only reported locally). */
static int close_code_ok(int code)
{
    return (code >= 1000 && code <= 1003) || (code >= 1007 && code <= 1014) ||
           (code >= 3000 && code <= 4999);
}

int ws_close_status(const uint8_t *p, size_t len, const char **reason, size_t *reason_len)
{
    if (len < 2) {
        if (reason) *reason = "";
        if (reason_len) *reason_len = 0;
        return WS_CLOSE_NO_STATUS;
    }
    if (reason) *reason = (const char *)p + 2;
    if (reason_len) *reason_len = len - 2;
    return p[0] << 8 | p[1];
}

/* ---- the accept key ---- */

int ws_accept_key(const char *key, char out[WS_ACCEPT_LEN + 1])
{
    static const char guid[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
    enum { KEY_LEN = 24, GUID_LEN = sizeof guid - 1 };
    uint8_t nonce[16];
    size_t n;
    if (!key || strlen(key) != KEY_LEN) return KP_EINVAL;
    if (base64_decode(key, KEY_LEN, nonce, sizeof nonce, &n) || n != sizeof nonce) return KP_EINVAL;
    char text[KEY_LEN + GUID_LEN];
    memcpy(text, key, KEY_LEN);
    memcpy(text + KEY_LEN, guid, GUID_LEN);
    uint8_t digest[20];
    /* SHA-1 of a supported digest fails only for memory. */
    if (gnutls_hash_fast(GNUTLS_DIG_SHA1, text, sizeof text, digest) < 0) return KP_ENOMEM;
    char *b64 = base64_encode(digest, sizeof digest);
    if (!b64) return KP_ENOMEM;
    memcpy(out, b64, WS_ACCEPT_LEN + 1);
    free(b64);
    return 0;
}

/* ---- decoding ---- */

static int is_control(int op)
{
    return op == WS_OP_CLOSE || op == WS_OP_PING || op == WS_OP_PONG;
}

void ws_decoder_init(ws_decoder_t *d, int server, size_t max_message)
{
    memset(d, 0, sizeof *d);
    d->server = server ? 1 : 0;
    d->max_message = max_message;
    buf_init(&d->msg, max_message);
}

void ws_decoder_free(ws_decoder_t *d)
{
    buf_free(&d->msg);
}

int ws_decoder_close_code(const ws_decoder_t *d)
{
    return d->err ? d->close_code : 0;
}

/* The first error sticks, with the close code owed to the peer (0: none). */
static int fail(ws_decoder_t *d, int rc, int close_code)
{
    d->err = rc;
    d->close_code = close_code;
    return rc;
}

static int protocol_error(ws_decoder_t *d)
{
    return fail(d, KP_ECORRUPT, WS_CLOSE_PROTOCOL);
}

/* Bytes of the extended length (0, 2 or 8) and of the masking key (0 or 4),
 * once hdr holds the first two bytes. */
static size_t ext_bytes(const ws_decoder_t *d)
{
    unsigned l = d->hdr[1] & 0x7F;
    return l == 126 ? 2 : l == 127 ? 8 : 0;
}

static size_t key_bytes(const ws_decoder_t *d)
{
    return d->hdr[1] & 0x80 ? 4 : 0;
}

/* The next checkpoint of the header (the hdr_len at which a check runs). */
static size_t header_want(const ws_decoder_t *d)
{
    if (d->hdr_len < 2) return 2;
    size_t ext = ext_bytes(d);
    if (d->hdr_len < 2 + ext) return 2 + ext;
    return 2 + ext + key_bytes(d);
}

/* The payload length, once hdr holds the extended length. */
static uint64_t header_len(const ws_decoder_t *d)
{
    uint64_t len = d->hdr[1] & 0x7F;
    size_t ext = ext_bytes(d);
    if (ext) {
        len = 0;
        for (size_t i = 0; i < ext; i++)
            len = len << 8 | d->hdr[2 + i];
    }
    return len;
}

/* Byte 2: everything the first two bytes decide. */
static int header_first(ws_decoder_t *d)
{
    uint8_t b0 = d->hdr[0], b1 = d->hdr[1];
    d->fin = b0 >> 7;
    d->op = b0 & 0x0F;
    d->masked = b1 >> 7;
    if (b0 & 0x70) return protocol_error(d); /* RSV1-3: no extension was agreed */
    if (d->op != WS_OP_CONT && d->op != WS_OP_TEXT && d->op != WS_OP_BINARY && !is_control(d->op))
        return protocol_error(d);
    if (d->masked != d->server) return protocol_error(d); /* RFC 6455 5.1 */
    if (is_control(d->op)) {
        if (!d->fin || (b1 & 0x7F) > WS_CONTROL_MAX) return protocol_error(d);
    } else if (d->op == WS_OP_CONT) {
        if (!d->msg_op) return protocol_error(d);
    } else {
        if (d->msg_op) return protocol_error(d);
        d->msg_op = d->op;
    }
    return 0;
}

/* The length's end: its encoding, and the budget before any payload. */
static int header_length(ws_decoder_t *d)
{
    uint64_t len = header_len(d);
    size_t ext = ext_bytes(d);
    if (ext == 2 && len < 126) return protocol_error(d);
    if (ext == 8 && (len >> 63 || len <= 0xFFFF)) return protocol_error(d);
    if (!is_control(d->op) && len > d->max_message - d->msg.len)
        return fail(d, KP_ETOOLARGE, WS_CLOSE_TOO_BIG);
    return 0;
}

/* A close frame's payload: empty, or a code that may be sent and UTF-8. */
static int close_check(ws_decoder_t *d)
{
    if (d->ctl_len == 0) return 0;
    if (d->ctl_len == 1) return protocol_error(d);
    if (!close_code_ok(d->ctl[0] << 8 | d->ctl[1])) return protocol_error(d);
    if (!utf8_valid(d->ctl + 2, d->ctl_len - 2)) return fail(d, KP_ECORRUPT, WS_CLOSE_BAD_DATA);
    return 0;
}

static int deliver(ws_decoder_t *d, int op, const uint8_t *p, size_t len, ws_on_message_t cb,
                   void *arg)
{
    static const uint8_t empty[1];
    int rc = cb ? cb(arg, op, p ? p : empty, len) : 0;
    return rc ? fail(d, rc, 0) : 0;
}

/* The frame's payload is complete. */
static int frame_end(ws_decoder_t *d, ws_on_message_t cb, void *arg)
{
    int rc;
    if (is_control(d->op)) {
        rc = d->op == WS_OP_CLOSE ? close_check(d) : 0;
        if (!rc) rc = deliver(d, d->op, d->ctl, d->ctl_len, cb, arg);
        if (!rc && d->op == WS_OP_CLOSE) fail(d, KP_ECLOSED, 0);
        return rc;
    }
    if (!d->fin) return 0;
    if (d->msg_op == WS_OP_TEXT && !utf8_valid((const uint8_t *)d->msg.p, d->msg.len))
        return fail(d, KP_ECORRUPT, WS_CLOSE_BAD_DATA);
    int op = d->msg_op;
    d->msg_op = 0;
    rc = deliver(d, op, (const uint8_t *)d->msg.p, d->msg.len, cb, arg);
    if (d->msg.cap > WS_KEEP_BYTES)
        buf_free(&d->msg);
    else
        buf_reset(&d->msg);
    return rc;
}

/* hdr_len reached header_want(): run the checks due there. */
static int header_step(ws_decoder_t *d, ws_on_message_t cb, void *arg)
{
    int rc = d->hdr_len == 2 ? header_first(d) : 0;
    size_t ext = ext_bytes(d), key = key_bytes(d);
    if (!rc && d->hdr_len == 2 + ext) rc = header_length(d);
    if (rc || d->hdr_len < 2 + ext + key) return rc;
    if (key) memcpy(d->mask, d->hdr + 2 + ext, 4);
    d->left = header_len(d);
    d->done = 0;
    d->ctl_len = 0;
    d->hdr_len = 0;
    return d->left ? 0 : frame_end(d, cb, arg);
}

static void unmask(uint8_t *p, size_t n, const uint8_t mask[4], uint64_t done)
{
    for (size_t i = 0; i < n; i++)
        p[i] ^= mask[(done + i) & 3];
}

int ws_decode(ws_decoder_t *d, const void *p, size_t n, ws_on_message_t on_message, void *arg)
{
    const uint8_t *s = p;
    size_t i = 0;
    if (d->err) return d->err;
    while (i < n) {
        if (d->err) return d->err; /* bytes after a close frame */
        if (!d->left) {
            size_t want = header_want(d), k = want - d->hdr_len;
            if (k > n - i) k = n - i;
            memcpy(d->hdr + d->hdr_len, s + i, k);
            d->hdr_len += k;
            i += k;
            int rc = d->hdr_len == want ? header_step(d, on_message, arg) : 0;
            if (rc) return rc;
            continue;
        }
        size_t k = d->left < n - i ? (size_t)d->left : n - i;
        uint8_t *dst;
        if (is_control(d->op)) {
            dst = d->ctl + d->ctl_len;
            memcpy(dst, s + i, k);
            d->ctl_len += k;
        } else {
            size_t at = d->msg.len;
            int rc = buf_append(&d->msg, s + i, k);
            if (rc) return fail(d, rc, rc == KP_ENOMEM ? WS_CLOSE_INTERNAL : WS_CLOSE_TOO_BIG);
            dst = (uint8_t *)d->msg.p + at;
        }
        if (d->masked) unmask(dst, k, d->mask, d->done);
        d->done += k;
        d->left -= k;
        i += k;
        int rc = d->left ? 0 : frame_end(d, on_message, arg);
        if (rc) return rc;
    }
    return 0;
}

/* ---- encoding ---- */

int ws_encode(buf_t *out, int op, int fin, const void *p, size_t n, const uint8_t *mask)
{
    if (op != WS_OP_CONT && op != WS_OP_TEXT && op != WS_OP_BINARY && !is_control(op))
        return KP_EINVAL;
    if (is_control(op) && (!fin || n > WS_CONTROL_MAX)) return KP_EINVAL;
    uint8_t h[14];
    size_t hl = 2;
    h[0] = (uint8_t)((fin ? 0x80 : 0) | op);
    if (n < 126) {
        h[1] = (uint8_t)n;
    } else if (n <= 0xFFFF) {
        h[1] = 126;
        h[hl++] = (uint8_t)(n >> 8);
        h[hl++] = (uint8_t)n;
    } else {
        h[1] = 127;
        for (int shift = 56; shift >= 0; shift -= 8)
            h[hl++] = (uint8_t)((uint64_t)n >> shift);
    }
    if (mask) {
        h[1] |= 0x80;
        memcpy(h + hl, mask, 4);
        hl += 4;
    }
    size_t start = out->len;
    int rc = buf_append(out, h, hl);
    if (rc) return rc;
    rc = buf_append(out, p, n);
    if (rc) {
        out->len = start; /* the header alone is no frame */
        out->p[start] = '\0';
        return rc;
    }
    if (mask) unmask((uint8_t *)out->p + start + hl, n, mask, 0);
    return 0;
}

int ws_encode_close(buf_t *out, int code, const char *reason, const uint8_t *mask)
{
    if (code == 0) return ws_encode(out, WS_OP_CLOSE, 1, NULL, 0, mask);
    if (!close_code_ok(code)) return KP_EINVAL;
    size_t n = reason ? strlen(reason) : 0;
    if (n > WS_CONTROL_MAX - 2) {
        n = WS_CONTROL_MAX - 2;
        /* reason[n] is the first byte cut: drop the character it belongs to */
        while (n > 0 && ((uint8_t)reason[n] & 0xC0) == 0x80)
            n--;
    }
    if (!utf8_valid((const uint8_t *)reason, n)) return KP_EINVAL;
    uint8_t payload[WS_CONTROL_MAX];
    payload[0] = (uint8_t)(code >> 8);
    payload[1] = (uint8_t)code;
    if (n) memcpy(payload + 2, reason, n);
    return ws_encode(out, WS_OP_CLOSE, 1, payload, 2 + n, mask);
}
