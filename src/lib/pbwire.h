/*
 * pbwire.h -- a protobuf wire-format writer over a buf_t: varints, tags,
 * length-delimited fields (written in place: the length is put in front of
 * the body when the field closes). Shared by the object encoder
 * (apiserver/protobuf_enc.c) and the OpenAPI v2 encoder (openapi_pb.c).
 *
 * The first error sticks in w->rc (the buffer's: KP_ENOMEM, or KP_ETOOLARGE
 * at its cap); later writes do nothing. Not thread-safe per writer; the
 * writer borrows its buffer.
 */
#ifndef KP_PBWIRE_H
#define KP_PBWIRE_H

#include <stddef.h>
#include <stdint.h>

#include "lib/buf.h"

enum { PBW_VARINT = 0, PBW_I64 = 1, PBW_LEN = 2 };

typedef struct pbw {
    buf_t *b;
    int rc;    /* 0, or the first error */
    int depth; /* nesting, for the caller's bound */
} pbw_t;

/* v as a varint into out (at most 10 bytes); returns the length. */
size_t pbw_varint_enc(uint64_t v, uint8_t out[10]);
void pbw_raw(pbw_t *w, const void *p, size_t n);
void pbw_varint(pbw_t *w, uint64_t v);
void pbw_tag(pbw_t *w, uint32_t field, unsigned wire_type);
/* A length-delimited field of n bytes at p. */
void pbw_bytes(pbw_t *w, uint32_t field, const void *p, size_t n);
/* Open a length-delimited field; returns where its body starts, for
 * pbw_end(), which puts the body's length in front of it. */
size_t pbw_begin(pbw_t *w, uint32_t field);
void pbw_end(pbw_t *w, size_t start);

#endif
