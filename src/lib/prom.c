/*
 * prom.c -- Prometheus text exposition helpers (prom.h).
 */
#include "lib/prom.h"

size_t prom_label_escape(const char *in, size_t max_in, char *out, size_t cap)
{
    if (!cap) return 0;
    /* The bytes taken: max_in, moved back to the start of a UTF-8 sequence
     * it would cut. */
    size_t n = 0;
    while (in[n] && n < max_in)
        n++;
    if (in[n] && n > 0) {
        size_t k = n;
        while (k > 0 && ((unsigned char)in[k] & 0xC0) == 0x80)
            k--;
        n = k;
    }
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        char c = in[i];
        const char *esc = c == '\\' ? "\\\\" : c == '"' ? "\\\"" : c == '\n' ? "\\n" : NULL;
        size_t need = esc ? 2 : 1;
        if (o + need >= cap) break;
        if (esc) {
            out[o++] = esc[0];
            out[o++] = esc[1];
        } else {
            out[o++] = c;
        }
    }
    out[o] = '\0';
    return o;
}
