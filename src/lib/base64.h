/*
 * base64.h -- standard base64 (RFC 4648, with padding), and base64url
 * without padding (RFC 4648 section 5, as JWS and JWK write it).
 */
#ifndef KP_BASE64_H
#define KP_BASE64_H

#include <stddef.h>

/* Encode n bytes; the result is NUL-terminated and owned by the caller (free).
 * NULL when out of memory. */
char *base64_encode(const void *data, size_t n);

/* Decode `text` (length n) into `out` (capacity cap); *outlen gets the byte
 * count. Errors: KP_EINVAL (not base64), KP_ETOOLARGE (cap too small). */
int base64_decode(const char *text, size_t n, void *out, size_t cap, size_t *outlen);

/* The same in base64url, unpadded (a trailing '=' is refused on decode). */
char *base64url_encode(const void *data, size_t n);
int base64url_decode(const char *text, size_t n, void *out, size_t cap, size_t *outlen);

#endif
