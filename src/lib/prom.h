/*
 * prom.h -- Prometheus text exposition helpers.
 */
#ifndef KP_PROM_H
#define KP_PROM_H

#include <stddef.h>

/* A label value as the text format writes it between its quotes: backslash,
 * double quote and newline escaped (\\, \", \n), at most `max_in` bytes of
 * `in` taken (never cutting a UTF-8 sequence), NUL-terminated in `out`
 * (cap bytes, cut there if smaller than needed; 2 * max_in + 1 always
 * fits). Returns the bytes written, without the NUL. Pure; any thread. */
size_t prom_label_escape(const char *in, size_t max_in, char *out, size_t cap);

#endif
