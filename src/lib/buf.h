/*
 * buf.h -- a growable byte buffer with a hard cap (curl's dynbuf).
 *
 * The buffer owns `p`; it may move on every append, so never keep a pointer
 * into it across an append: keep offsets. Hitting the cap is a normal error.
 */
#ifndef KP_BUF_H
#define KP_BUF_H

#include <stddef.h>

typedef struct buf {
    char *p;    /* owned; NULL until the first append; NUL-terminated when non-NULL */
    size_t len; /* bytes used, without the terminating NUL */
    size_t cap; /* bytes allocated */
    size_t max; /* the cap on len */
} buf_t;

/* Start empty with a cap of `max` bytes. Allocates nothing. */
void buf_init(buf_t *b, size_t max);

/* Append n bytes. Errors: KP_ETOOLARGE (len would pass max), KP_ENOMEM;
 * on error the buffer is unchanged. */
int buf_append(buf_t *b, const void *data, size_t n);

/* Append printf-formatted text (a line of at most 1023 bytes; longer text is
 * cut there). Errors: as buf_append, KP_EINVAL for a bad format. */
int buf_printf(buf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Append the whole file at path (up to the cap); on success b->p is
 * non-NULL even for an empty file. Errors: KP_ENOTFOUND (no such file),
 * KP_EIO (errno tells why), KP_ETOOLARGE, KP_ENOMEM; on error the buffer
 * may hold part of the file. */
int buf_append_file(buf_t *b, const char *path);

/* Make room for n more bytes (and the NUL) in one allocation, so that the
 * appends that follow do not move the buffer. Errors: KP_ETOOLARGE, KP_ENOMEM. */
int buf_reserve(buf_t *b, size_t n);

/* Hand the contents to the caller, who frees them with free(); *len gets the
 * length. The buffer is left empty. NULL if nothing was ever appended. */
char *buf_detach(buf_t *b, size_t *len);

/* Forget the contents but keep the memory. */
void buf_reset(buf_t *b);

/* Release the memory; the buffer is empty and usable again. */
void buf_free(buf_t *b);

#endif
