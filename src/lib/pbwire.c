/*
 * pbwire.c -- the protobuf wire format (pbwire.h).
 */
#include "lib/pbwire.h"

#include <string.h>

size_t pbw_varint_enc(uint64_t v, uint8_t out[10])
{
    size_t n = 0;
    while (v >= 0x80) {
        out[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    out[n++] = (uint8_t)v;
    return n;
}

void pbw_raw(pbw_t *w, const void *p, size_t n)
{
    if (!w->rc && n) w->rc = buf_append(w->b, p, n);
}

void pbw_varint(pbw_t *w, uint64_t v)
{
    uint8_t t[10];
    pbw_raw(w, t, pbw_varint_enc(v, t));
}

void pbw_tag(pbw_t *w, uint32_t field, unsigned wire_type)
{
    pbw_varint(w, (uint64_t)field << 3 | wire_type);
}

void pbw_bytes(pbw_t *w, uint32_t field, const void *p, size_t n)
{
    pbw_tag(w, field, PBW_LEN);
    pbw_varint(w, n);
    pbw_raw(w, p, n);
}

size_t pbw_begin(pbw_t *w, uint32_t field)
{
    pbw_tag(w, field, PBW_LEN);
    return w->b->len;
}

void pbw_end(pbw_t *w, size_t start)
{
    if (w->rc) return;
    size_t n = w->b->len - start;
    uint8_t t[10];
    size_t k = pbw_varint_enc(n, t);
    pbw_raw(w, t, k); /* grow by k; the bytes are overwritten below */
    if (w->rc) return;
    memmove(w->b->p + start + k, w->b->p + start, n);
    memcpy(w->b->p + start, t, k);
}

/* ---- reading ---- */

/* Read a varint. NULL, or a static reason why the bytes are malformed. */
const char *pbr_varint(pbr_t *r, uint64_t *v)
{
    uint64_t x = 0;
    for (unsigned i = 0; i < 10; i++) {
        if (r->p == r->end) return "truncated varint";
        uint8_t b = *r->p++;
        if (i == 9 && b > 1) return "varint longer than 64 bits";
        x |= (uint64_t)(b & 0x7f) << (7 * i);
        if (!(b & 0x80)) {
            *v = x;
            return NULL;
        }
    }
    return "varint longer than 64 bits"; /* not reached: i == 9 returns above */
}

/* Read the next field (key and value) of a message. NULL, or a static reason;
 * f->num and f->wt are set as soon as the key is read. */
const char *pbr_field(pbr_t *r, pbr_val_t *f)
{
    uint64_t key, n;
    const char *e = pbr_varint(r, &key);
    f->num = 0;
    f->wt = -1;
    if (e) return e;
    if (key >> 3 == 0 || key >> 3 > 0x1fffffff) return "field number out of range";
    f->num = (uint32_t)(key >> 3);
    f->wt = (int)(key & 7);
    switch (f->wt) {
    case PBW_VARINT:
        return pbr_varint(r, &f->u);
    case PBW_I64:
    case PBW_I32: {
        size_t w = f->wt == PBW_I64 ? 8 : 4;
        if ((size_t)(r->end - r->p) < w) return "truncated fixed-size value";
        f->u = 0;
        for (size_t i = 0; i < w; i++)
            f->u |= (uint64_t)r->p[i] << (8 * i);
        r->p += w;
        return NULL;
    }
    case PBW_LEN:
        e = pbr_varint(r, &n);
        if (e) return e;
        if (n > (uint64_t)(r->end - r->p)) return "length past the end of the message";
        f->data = r->p;
        f->len = (size_t)n;
        r->p += n;
        return NULL;
    case PBW_SGROUP:
    case PBW_EGROUP:
        return "groups (wire types 3 and 4) are not supported";
    default:
        return "invalid wire type";
    }
}
