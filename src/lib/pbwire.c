/*
 * pbwire.c -- the protobuf wire-format writer (pbwire.h).
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
