/*
 * spdy.c -- SPDY/3.1 framing (see spdy.h). Header blocks go through zlib
 * (zlib1g), one context per direction, primed with the dictionary below.
 */
#include "lib/spdy.h"

#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "lib/err.h"

/* The protocol's dictionary: 65 length-prefixed words, then common values. */
/* clang-format off */
const unsigned char spdy_dictionary[] =
    "\0\0\0\007" "options" "\0\0\0\004" "head" "\0\0\0\004" "post" "\0\0\0\003" "put"
    "\0\0\0\006" "delete" "\0\0\0\005" "trace" "\0\0\0\006" "accept"
    "\0\0\0\016" "accept-charset" "\0\0\0\017" "accept-encoding" "\0\0\0\017" "accept-language"
    "\0\0\0\015" "accept-ranges" "\0\0\0\003" "age" "\0\0\0\005" "allow"
    "\0\0\0\015" "authorization" "\0\0\0\015" "cache-control" "\0\0\0\012" "connection"
    "\0\0\0\014" "content-base" "\0\0\0\020" "content-encoding" "\0\0\0\020" "content-language"
    "\0\0\0\016" "content-length" "\0\0\0\020" "content-location" "\0\0\0\013" "content-md5"
    "\0\0\0\015" "content-range" "\0\0\0\014" "content-type" "\0\0\0\004" "date"
    "\0\0\0\004" "etag" "\0\0\0\006" "expect" "\0\0\0\007" "expires" "\0\0\0\004" "from"
    "\0\0\0\004" "host" "\0\0\0\010" "if-match" "\0\0\0\021" "if-modified-since"
    "\0\0\0\015" "if-none-match" "\0\0\0\010" "if-range" "\0\0\0\023" "if-unmodified-since"
    "\0\0\0\015" "last-modified" "\0\0\0\010" "location" "\0\0\0\014" "max-forwards"
    "\0\0\0\006" "pragma" "\0\0\0\022" "proxy-authenticate" "\0\0\0\023" "proxy-authorization"
    "\0\0\0\005" "range" "\0\0\0\007" "referer" "\0\0\0\013" "retry-after" "\0\0\0\006" "server"
    "\0\0\0\002" "te" "\0\0\0\007" "trailer" "\0\0\0\021" "transfer-encoding"
    "\0\0\0\007" "upgrade" "\0\0\0\012" "user-agent" "\0\0\0\004" "vary" "\0\0\0\003" "via"
    "\0\0\0\007" "warning" "\0\0\0\020" "www-authenticate" "\0\0\0\006" "method"
    "\0\0\0\003" "get" "\0\0\0\006" "status" "\0\0\0\006" "200 OK" "\0\0\0\007" "version"
    "\0\0\0\010" "HTTP/1.1" "\0\0\0\003" "url" "\0\0\0\006" "public" "\0\0\0\012" "set-cookie"
    "\0\0\0\012" "keep-alive" "\0\0\0\006" "origin"
    "10010120120220520630030230330430530630740240540640740840941041141241341441541641"
    "7502504505203 Non-Authoritative Information204 No Content301 Moved Permanently40"
    "0 Bad Request401 Unauthorized403 Forbidden404 Not Found500 Internal Server Error"
    "501 Not Implemented503 Service UnavailableJan Feb Mar Apr May Jun Jul Aug Sept O"
    "ct Nov Dec 00:00:00 Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMTchunked,text/html,imag"
    "e/png,image/jpg,image/gif,application/xml,application/xhtml+xml,text/plain,text/"
    "javascript,publicprivatemax-age=gzip,deflate,sdchcharset=utf-8charset=iso-8859-1"
    ",utf-,*,enq=0.";
/* clang-format on */

const size_t spdy_dictionary_len = sizeof spdy_dictionary - 1;

#define DEFAULT_MAX_CONTROL (64u * 1024)
#define DEFAULT_MAX_HEADERS (256u * 1024)
#define INFLATE_STEP        4096

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint32_t be24(const uint8_t *p)
{
    return (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
}

static void put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

const char *spdy_header_get(const spdy_header_t *h, size_t n, const char *name, size_t *len)
{
    size_t nl = strlen(name);
    for (size_t i = 0; i < n; i++) {
        if (h[i].name_len == nl && !memcmp(h[i].name, name, nl)) {
            if (len) *len = h[i].value_len;
            return h[i].value;
        }
    }
    return NULL;
}

/* ---- decoding ---- */

void spdy_decoder_init(spdy_decoder_t *d, size_t max_control, size_t max_headers)
{
    memset(d, 0, sizeof *d);
    d->max_control = max_control ? max_control : DEFAULT_MAX_CONTROL;
    d->max_headers = max_headers ? max_headers : DEFAULT_MAX_HEADERS;
    buf_init(&d->ctl, d->max_control);
    buf_init(&d->plain, d->max_headers + 1);
}

void spdy_decoder_free(spdy_decoder_t *d)
{
    if (d->z) {
        inflateEnd(d->z);
        free(d->z);
    }
    buf_free(&d->ctl);
    buf_free(&d->plain);
    free(d->hv);
    free(d->sv);
    memset(d, 0, sizeof *d);
}

static int fail(spdy_decoder_t *d, int rc)
{
    d->err = rc;
    return rc;
}

/* The least payload of a known control type (`*exact` when it is fixed);
 * -1 for a type this decoder skips. */
static int control_min(int type, int *exact)
{
    *exact = 0;
    switch (type) {
    case SPDY_SYN_STREAM:
        return 10;
    case SPDY_SYN_REPLY:
    case SPDY_HEADERS:
    case SPDY_SETTINGS:
        return 4;
    case SPDY_PING:
        *exact = 1;
        return 4;
    case SPDY_RST_STREAM:
    case SPDY_GOAWAY:
    case SPDY_WINDOW_UPDATE:
        *exact = 1;
        return 8;
    default:
        return -1;
    }
}

/* The head is complete: check it before any payload is kept. */
static int head_done(spdy_decoder_t *d)
{
    const uint8_t *h = d->head;
    d->left = be24(h + 5);
    d->data = !(h[0] & 0x80);
    d->skip = 0;
    if (d->data) return be32(h) & SPDY_STREAM_MAX ? 0 : fail(d, KP_ECORRUPT);
    int version = (h[0] & 0x7f) << 8 | h[1];
    if (version != SPDY_VERSION) return fail(d, KP_ECORRUPT);
    int exact, min = control_min(h[2] << 8 | h[3], &exact);
    if (min < 0) {
        d->skip = 1;
        return 0;
    }
    if (d->left < (uint32_t)min || (exact && d->left != (uint32_t)min)) return fail(d, KP_ECORRUPT);
    if (d->left > d->max_control) return fail(d, KP_ETOOLARGE);
    buf_reset(&d->ctl);
    return buf_reserve(&d->ctl, d->left) ? fail(d, KP_ENOMEM) : 0;
}

/* Inflate a header block into d->plain, at most max_headers bytes. */
static int inflate_block(spdy_decoder_t *d, const uint8_t *p, size_t n)
{
    z_stream *z = d->z;
    if (!z) {
        if (!(z = calloc(1, sizeof *z))) return KP_ENOMEM;
        if (inflateInit(z) != Z_OK) {
            free(z);
            return KP_ENOMEM;
        }
        d->z = z;
    }
    buf_reset(&d->plain);
    z->next_in = (Bytef *)p;
    z->avail_in = (uInt)n;
    for (;;) {
        size_t room = d->max_headers + 1 - d->plain.len;
        size_t step = d->plain.len > INFLATE_STEP ? d->plain.len : INFLATE_STEP; /* doubling */
        if (!room) return KP_ETOOLARGE;
        if (room > step) room = step;
        int rc = buf_reserve(&d->plain, room);
        if (rc) return rc == KP_ETOOLARGE ? KP_ETOOLARGE : KP_ENOMEM;
        z->next_out = (Bytef *)d->plain.p + d->plain.len;
        z->avail_out = (uInt)room;
        int zr = inflate(z, Z_SYNC_FLUSH);
        if (zr == Z_NEED_DICT) {
            if (inflateSetDictionary(z, spdy_dictionary, (uInt)spdy_dictionary_len) != Z_OK)
                return KP_ECORRUPT;
            zr = inflate(z, Z_SYNC_FLUSH);
        }
        d->plain.len += room - z->avail_out;
        if (d->plain.len > d->max_headers) return KP_ETOOLARGE;
        if (zr == Z_MEM_ERROR) return KP_ENOMEM;
        if (zr != Z_OK && zr != Z_BUF_ERROR) return KP_ECORRUPT; /* data error, stream end */
        if (z->avail_in == 0 && z->avail_out > 0) break;         /* all in, all out */
        if (zr == Z_BUF_ERROR && z->avail_out > 0) return KP_ECORRUPT;
    }
    return 0;
}

static int name_cmp(const void *a, const void *b)
{
    const spdy_header_t *x = a, *y = b;
    size_t n = x->name_len < y->name_len ? x->name_len : y->name_len;
    int c = memcmp(x->name, y->name, n);
    return c ? c : (x->name_len > y->name_len) - (x->name_len < y->name_len);
}

/* Split d->plain into pairs (d->hv), sorted by name. */
static int parse_block(spdy_decoder_t *d, size_t *count)
{
    const uint8_t *p = (const uint8_t *)d->plain.p, *end = p + d->plain.len;
    if (end - p < 4) return KP_ECORRUPT;
    uint32_t n = be32(p);
    p += 4;
    if (n > (size_t)(end - p) / 8) return KP_ECORRUPT; /* a pair takes 8 bytes at least */
    if (n > d->hv_cap) {
        spdy_header_t *hv = realloc(d->hv, n * sizeof *hv);
        if (!hv) return KP_ENOMEM;
        d->hv = hv;
        d->hv_cap = n;
    }
    for (uint32_t i = 0; i < n; i++) {
        spdy_header_t *h = &d->hv[i];
        if (end - p < 4) return KP_ECORRUPT;
        h->name_len = be32(p);
        p += 4;
        if (h->name_len == 0 || h->name_len > (size_t)(end - p)) return KP_ECORRUPT;
        h->name = (const char *)p;
        for (size_t k = 0; k < h->name_len; k++)
            if (p[k] >= 'A' && p[k] <= 'Z') return KP_ECORRUPT;
        p += h->name_len;
        if (end - p < 4) return KP_ECORRUPT;
        h->value_len = be32(p);
        p += 4;
        if (h->value_len > (size_t)(end - p)) return KP_ECORRUPT;
        h->value = (const char *)p;
        p += h->value_len;
    }
    if (p != end) return KP_ECORRUPT;
    if (n > 1) qsort(d->hv, n, sizeof *d->hv, name_cmp);
    for (uint32_t i = 1; i < n; i++)
        if (!name_cmp(&d->hv[i - 1], &d->hv[i])) return KP_ECORRUPT;
    *count = n;
    return 0;
}

static int headers_of(spdy_decoder_t *d, spdy_frame_t *f, const uint8_t *p, size_t n)
{
    int rc = inflate_block(d, p, n);
    if (!rc) rc = parse_block(d, &f->n_headers);
    f->headers = d->hv;
    return rc;
}

static int settings_of(spdy_decoder_t *d, spdy_frame_t *f, const uint8_t *p, size_t len)
{
    uint32_t n = be32(p);
    if ((len - 4) / 8 != n || (len - 4) % 8) return KP_ECORRUPT;
    if (n > d->sv_cap) {
        spdy_setting_t *sv = realloc(d->sv, n * sizeof *sv);
        if (!sv) return KP_ENOMEM;
        d->sv = sv;
        d->sv_cap = n;
    }
    for (uint32_t i = 0; i < n; i++) {
        const uint8_t *e = p + 4 + 8 * i;
        d->sv[i] = (spdy_setting_t){.flags = e[0], .id = be24(e + 1), .value = be32(e + 4)};
    }
    f->settings = d->sv;
    f->n_settings = n;
    return 0;
}

/* A whole control frame is in d->ctl: check it and hand it on. */
static int control_done(spdy_decoder_t *d, spdy_on_frame_t cb, void *arg)
{
    const uint8_t *p = (const uint8_t *)d->ctl.p;
    size_t len = d->ctl.len;
    spdy_frame_t f = {.type = d->head[2] << 8 | d->head[3], .flags = d->head[4]};
    int rc = 0, need_id = 1;
    switch (f.type) {
    case SPDY_SYN_STREAM:
        f.stream_id = be32(p) & SPDY_STREAM_MAX;
        f.assoc_id = be32(p + 4) & SPDY_STREAM_MAX;
        f.priority = p[8] >> 5;
        rc = headers_of(d, &f, p + 10, len - 10);
        break;
    case SPDY_SYN_REPLY:
    case SPDY_HEADERS:
        f.stream_id = be32(p) & SPDY_STREAM_MAX;
        rc = headers_of(d, &f, p + 4, len - 4);
        break;
    case SPDY_RST_STREAM:
        f.stream_id = be32(p) & SPDY_STREAM_MAX;
        f.status = be32(p + 4);
        if (!f.status) rc = KP_ECORRUPT;
        break;
    case SPDY_SETTINGS:
        need_id = 0;
        rc = settings_of(d, &f, p, len);
        break;
    case SPDY_PING:
        need_id = 0;
        f.value = be32(p);
        break;
    case SPDY_GOAWAY:
        need_id = 0;
        f.stream_id = be32(p) & SPDY_STREAM_MAX;
        f.status = be32(p + 4);
        break;
    case SPDY_WINDOW_UPDATE:
        need_id = 0; /* 0 is the session's window */
        f.stream_id = be32(p) & SPDY_STREAM_MAX;
        f.value = be32(p + 4) & 0x7fffffffu;
        if (!f.value) rc = KP_ECORRUPT;
        break;
    }
    if (!rc && need_id && !f.stream_id) rc = KP_ECORRUPT;
    if (rc) return fail(d, rc);
    rc = cb(arg, &f);
    return rc ? fail(d, rc) : 0;
}

/* `take` payload bytes at p of the current frame (0 only for an empty frame). */
static int body(spdy_decoder_t *d, const uint8_t *p, size_t take, spdy_on_frame_t cb, void *arg)
{
    static const uint8_t none[1];
    int rc = 0;
    d->left -= (uint32_t)take;
    if (d->data) {
        spdy_frame_t f = {.type = SPDY_DATA,
                          .stream_id = be32(d->head) & SPDY_STREAM_MAX,
                          .flags = d->left ? 0 : d->head[4],
                          .data = take ? p : none,
                          .len = take,
                          .last = d->left == 0};
        if ((rc = cb(arg, &f))) return fail(d, rc);
    } else if (!d->skip) {
        if (buf_append(&d->ctl, p, take)) return fail(d, KP_ENOMEM);
        if (!d->left && (rc = control_done(d, cb, arg))) return rc;
    }
    if (!d->left) d->head_len = 0;
    return 0;
}

int spdy_decode(spdy_decoder_t *d, const void *buf, size_t n, spdy_on_frame_t on_frame, void *arg)
{
    if (d->err) return d->err;
    if (!n) return 0; /* buf may be NULL */
    const uint8_t *p = buf, *end = p + n;
    int rc;
    while (p < end) {
        if (d->head_len < SPDY_HEAD_LEN) {
            size_t take = SPDY_HEAD_LEN - d->head_len;
            if (take > (size_t)(end - p)) take = (size_t)(end - p);
            memcpy(d->head + d->head_len, p, take);
            d->head_len += take;
            p += take;
            if (d->head_len < SPDY_HEAD_LEN) break;
            if ((rc = head_done(d))) return rc;
            if (!d->left) {
                if ((rc = body(d, p, 0, on_frame, arg))) return rc;
                continue;
            }
        }
        size_t take = d->left < (size_t)(end - p) ? d->left : (size_t)(end - p);
        if ((rc = body(d, p, take, on_frame, arg))) return rc;
        p += take;
    }
    return 0;
}

/* ---- encoding ---- */

void spdy_encoder_init(spdy_encoder_t *e)
{
    memset(e, 0, sizeof *e);
    buf_init(&e->plain, SPDY_LENGTH_MAX);
}

void spdy_encoder_free(spdy_encoder_t *e)
{
    if (e->z) {
        deflateEnd(e->z);
        free(e->z);
    }
    buf_free(&e->plain);
    memset(e, 0, sizeof *e);
}

/* Append a frame head; a data frame when type is SPDY_DATA (id: its stream). */
static int put_head(buf_t *out, int type, uint32_t id, uint8_t flags, size_t len)
{
    if (len > SPDY_LENGTH_MAX) return KP_EINVAL;
    uint8_t h[SPDY_HEAD_LEN];
    if (type == SPDY_DATA) {
        put32(h, id);
    } else {
        h[0] = 0x80;
        h[1] = SPDY_VERSION;
        h[2] = (uint8_t)(type >> 8);
        h[3] = (uint8_t)type;
    }
    put32(h + 4, (uint32_t)len);
    h[4] = flags;
    return buf_append(out, h, sizeof h) ? KP_ENOMEM : 0;
}

static int bad_id(uint32_t id)
{
    return id == 0 || id > SPDY_STREAM_MAX;
}

static int put_u32(buf_t *b, uint32_t v)
{
    uint8_t x[4];
    put32(x, v);
    return buf_append(b, x, 4) ? KP_ENOMEM : 0;
}

/* The uncompressed block of h[0..n) in e->plain. */
static int plain_block(spdy_encoder_t *e, const spdy_header_t *h, size_t n)
{
    buf_reset(&e->plain);
    if (n > UINT32_MAX) return KP_EINVAL;
    int rc = put_u32(&e->plain, (uint32_t)n);
    for (size_t i = 0; !rc && i < n; i++) {
        if (!h[i].name_len || h[i].name_len > UINT32_MAX || h[i].value_len > UINT32_MAX)
            return KP_EINVAL;
        for (size_t k = 0; k < h[i].name_len; k++)
            if (h[i].name[k] >= 'A' && h[i].name[k] <= 'Z') return KP_EINVAL;
        if (!(rc = put_u32(&e->plain, (uint32_t)h[i].name_len)) &&
            !(rc = buf_append(&e->plain, h[i].name, h[i].name_len) ? KP_ENOMEM : 0) &&
            !(rc = put_u32(&e->plain, (uint32_t)h[i].value_len)))
            rc = buf_append(&e->plain, h[i].value, h[i].value_len) ? KP_ENOMEM : 0;
    }
    return rc;
}

/* Deflate e->plain onto out (one sync-flushed block). */
static int deflate_block(spdy_encoder_t *e, buf_t *out)
{
    z_stream *z = e->z;
    if (e->err) return e->err;
    if (!z) {
        if (!(z = calloc(1, sizeof *z))) return KP_ENOMEM;
        if (deflateInit(z, Z_DEFAULT_COMPRESSION) != Z_OK) {
            free(z);
            return KP_ENOMEM;
        }
        if (deflateSetDictionary(z, spdy_dictionary, (uInt)spdy_dictionary_len) != Z_OK) {
            deflateEnd(z);
            free(z);
            return KP_ENOMEM;
        }
        e->z = z;
    }
    z->next_in = (Bytef *)e->plain.p;
    z->avail_in = (uInt)e->plain.len;
    do {
        size_t room = deflateBound(z, z->avail_in) + 16;
        if (buf_reserve(out, room)) return e->err = KP_ENOMEM; /* the context is spent */
        z->next_out = (Bytef *)out->p + out->len;
        z->avail_out = (uInt)room;
        int zr = deflate(z, Z_SYNC_FLUSH);
        out->len += room - z->avail_out;
        out->p[out->len] = '\0';
        if (zr != Z_OK && zr != Z_BUF_ERROR) return e->err = KP_ENOMEM;
    } while (z->avail_out == 0);
    return 0;
}

/* A control frame with `fixed` (fixed_len bytes) then a header block. */
static int put_block_frame(spdy_encoder_t *e, buf_t *out, int type, uint8_t flags,
                           const uint8_t *fixed, size_t fixed_len, const spdy_header_t *h, size_t n)
{
    int rc = plain_block(e, h, n);
    if (rc) return rc;
    size_t start = out->len;
    if ((rc = put_head(out, type, 0, flags, 0)) ||
        (rc = buf_append(out, fixed, fixed_len) ? KP_ENOMEM : 0) || (rc = deflate_block(e, out))) {
        out->len = start;
        if (out->p) out->p[start] = '\0';
        return rc;
    }
    size_t len = out->len - start - SPDY_HEAD_LEN;
    if (len > SPDY_LENGTH_MAX) {
        out->len = start;
        out->p[start] = '\0';
        return e->err = KP_EINVAL; /* the context has the block: spent */
    }
    uint8_t *p = (uint8_t *)out->p + start;
    put32(p + 4, (uint32_t)len);
    p[4] = flags;
    return 0;
}

int spdy_encode_syn_stream(spdy_encoder_t *e, buf_t *out, uint32_t stream_id, uint32_t assoc_id,
                           int priority, uint8_t flags, const spdy_header_t *h, size_t n)
{
    if (bad_id(stream_id) || assoc_id > SPDY_STREAM_MAX || priority < 0 || priority > 7)
        return KP_EINVAL;
    uint8_t fixed[10] = {0};
    put32(fixed, stream_id);
    put32(fixed + 4, assoc_id);
    fixed[8] = (uint8_t)(priority << 5);
    return put_block_frame(e, out, SPDY_SYN_STREAM, flags, fixed, sizeof fixed, h, n);
}

/* SYN_REPLY or HEADERS: a stream id, then the block. */
static int put_stream_block(spdy_encoder_t *e, buf_t *out, int type, uint32_t stream_id,
                            uint8_t flags, const spdy_header_t *h, size_t n)
{
    if (bad_id(stream_id)) return KP_EINVAL;
    uint8_t fixed[4];
    put32(fixed, stream_id);
    return put_block_frame(e, out, type, flags, fixed, sizeof fixed, h, n);
}

int spdy_encode_syn_reply(spdy_encoder_t *e, buf_t *out, uint32_t stream_id, uint8_t flags,
                          const spdy_header_t *h, size_t n)
{
    return put_stream_block(e, out, SPDY_SYN_REPLY, stream_id, flags, h, n);
}

int spdy_encode_headers(spdy_encoder_t *e, buf_t *out, uint32_t stream_id, uint8_t flags,
                        const spdy_header_t *h, size_t n)
{
    return put_stream_block(e, out, SPDY_HEADERS, stream_id, flags, h, n);
}

int spdy_encode_data(buf_t *out, uint32_t stream_id, uint8_t flags, const void *p, size_t n)
{
    if (bad_id(stream_id) || n > SPDY_LENGTH_MAX) return KP_EINVAL;
    if (buf_reserve(out, SPDY_HEAD_LEN + n)) return KP_ENOMEM;
    put_head(out, SPDY_DATA, stream_id, flags, n); /* room reserved: cannot fail */
    return n && buf_append(out, p, n) ? KP_ENOMEM : 0;
}

/* A control frame of two 32-bit words. */
static int put_pair(buf_t *out, int type, uint32_t a, uint32_t b)
{
    if (buf_reserve(out, SPDY_HEAD_LEN + 8)) return KP_ENOMEM;
    put_head(out, type, 0, 0, 8);
    put_u32(out, a);
    return put_u32(out, b);
}

int spdy_encode_rst_stream(buf_t *out, uint32_t stream_id, uint32_t status)
{
    if (bad_id(stream_id) || !status) return KP_EINVAL;
    return put_pair(out, SPDY_RST_STREAM, stream_id, status);
}

int spdy_encode_goaway(buf_t *out, uint32_t last_stream_id, uint32_t status)
{
    if (last_stream_id > SPDY_STREAM_MAX) return KP_EINVAL;
    return put_pair(out, SPDY_GOAWAY, last_stream_id, status);
}

int spdy_encode_window_update(buf_t *out, uint32_t stream_id, uint32_t delta)
{
    if (stream_id > SPDY_STREAM_MAX || !delta || delta > 0x7fffffffu) return KP_EINVAL;
    return put_pair(out, SPDY_WINDOW_UPDATE, stream_id, delta);
}

int spdy_encode_ping(buf_t *out, uint32_t id)
{
    if (buf_reserve(out, SPDY_HEAD_LEN + 4)) return KP_ENOMEM;
    put_head(out, SPDY_PING, 0, 0, 4);
    return put_u32(out, id);
}

int spdy_encode_settings(buf_t *out, uint8_t flags, const spdy_setting_t *s, size_t n)
{
    if (n > (SPDY_LENGTH_MAX - 4) / 8) return KP_EINVAL;
    for (size_t i = 0; i < n; i++)
        if (s[i].id > 0xffffffu) return KP_EINVAL;
    if (buf_reserve(out, SPDY_HEAD_LEN + 4 + 8 * n)) return KP_ENOMEM;
    put_head(out, SPDY_SETTINGS, 0, flags, 4 + 8 * n);
    put_u32(out, (uint32_t)n);
    for (size_t i = 0; i < n; i++) {
        put_u32(out, (uint32_t)s[i].flags << 24 | s[i].id);
        put_u32(out, s[i].value);
    }
    return 0;
}
