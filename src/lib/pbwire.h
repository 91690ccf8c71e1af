/*
 * pbwire.h -- the protobuf wire format: a writer over a buf_t (varints,
 * tags, length-delimited fields written in place: the length is put in
 * front of the body when the field closes) and a reader of fields. Shared
 * by the object codec (apiserver/encode/protobuf*.c), the OpenAPI v2
 * encoder and the etcd backend's messages.
 *
 * Writer: the first error sticks in w->rc (the buffer's: KP_ENOMEM, or
 * KP_ETOOLARGE at its cap); later writes do nothing. Reader: a cursor over
 * borrowed bytes. Neither is thread-safe per instance.
 */
#ifndef KP_PBWIRE_H
#define KP_PBWIRE_H

#include <stddef.h>
#include <stdint.h>

#include "lib/buf.h"

enum { PBW_VARINT = 0, PBW_I64 = 1, PBW_LEN = 2, PBW_SGROUP = 3, PBW_EGROUP = 4, PBW_I32 = 5 };

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

/* ---- reading ---- */

typedef struct pbr {
    const uint8_t *p;
    const uint8_t *end;
} pbr_t;

/* One field as it sits on the wire. */
typedef struct pbr_val {
    uint32_t num;
    int wt;              /* PBW_* */
    uint64_t u;          /* PBW_VARINT, PBW_I64, PBW_I32 */
    const uint8_t *data; /* PBW_LEN: the payload, inside the reader's range */
    size_t len;
} pbr_val_t;

/* Read a varint. NULL, or a static reason why the bytes are malformed. */
const char *pbr_varint(pbr_t *r, uint64_t *v);
/* Read the next field (key and value) of a message (the caller stops when
 * r->p == r->end). NULL, or a static reason; f->num and f->wt are set as
 * soon as the key is read. Groups (wire types 3, 4) are refused. */
const char *pbr_field(pbr_t *r, pbr_val_t *f);

#endif
