#include "base64.h"

#include <stdlib.h>
#include <string.h>

#include "err.h"

static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const char url_alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/* Encode n bytes with `abc`, '='-padded when `pad`. */
static char *encode(const char *abc, int pad, const void *data, size_t n)
{
    const unsigned char *p = data;
    char *out = malloc(4 * ((n + 2) / 3) + 1);
    if (!out) return NULL;
    size_t o = 0;
    for (size_t i = 0; i < n; i += 3) {
        unsigned v = (unsigned)p[i] << 16;
        if (i + 1 < n) v |= (unsigned)p[i + 1] << 8;
        if (i + 2 < n) v |= p[i + 2];
        out[o++] = abc[(v >> 18) & 63];
        out[o++] = abc[(v >> 12) & 63];
        if (i + 1 < n)
            out[o++] = abc[(v >> 6) & 63];
        else if (pad)
            out[o++] = '=';
        if (i + 2 < n)
            out[o++] = abc[v & 63];
        else if (pad)
            out[o++] = '=';
    }
    out[o] = '\0';
    return out;
}

char *base64_encode(const void *data, size_t n)
{
    return encode(alphabet, 1, data, n);
}

int base64_decode(const char *text, size_t n, void *out, size_t cap, size_t *outlen)
{
    unsigned char *o = out;
    size_t len = 0;
    if (n % 4) return KP_EINVAL;
    for (size_t i = 0; i < n; i += 4) {
        unsigned v = 0;
        int pad = 0;
        for (int j = 0; j < 4; j++) {
            char c = text[i + j];
            const char *p = c && c != '=' ? strchr(alphabet, c) : NULL;
            if (c == '=' && i + 4 == n && j >= 2)
                pad++;
            else if (!p || pad)
                return KP_EINVAL;
            v = (v << 6) | (p ? (unsigned)(p - alphabet) : 0);
        }
        size_t k = 3 - (size_t)pad;
        if (len + k > cap) return KP_ETOOLARGE;
        o[len++] = (unsigned char)(v >> 16);
        if (k > 1) o[len++] = (unsigned char)(v >> 8);
        if (k > 2) o[len++] = (unsigned char)v;
    }
    *outlen = len;
    return 0;
}

/* ---- base64url without padding (RFC 4648 section 5; JWS, JWK) ---- */

char *base64url_encode(const void *data, size_t n)
{
    return encode(url_alphabet, 0, data, n);
}

int base64url_decode(const char *text, size_t n, void *out, size_t cap, size_t *outlen)
{
    unsigned char *o = out;
    size_t len = 0;
    if (n % 4 == 1) return KP_EINVAL;
    for (size_t i = 0; i < n; i += 4) {
        size_t k = n - i < 4 ? n - i : 4; /* characters in this group */
        unsigned v = 0;
        for (size_t j = 0; j < 4; j++) {
            const char *p = NULL;
            if (j < k) {
                char c = text[i + j];
                if (!c || c == '=' || !(p = strchr(url_alphabet, c))) return KP_EINVAL;
            }
            v = (v << 6) | (p ? (unsigned)(p - url_alphabet) : 0);
        }
        size_t bytes = k - 1;
        if (len + bytes > cap) return KP_ETOOLARGE;
        o[len++] = (unsigned char)(v >> 16);
        if (bytes > 1) o[len++] = (unsigned char)(v >> 8);
        if (bytes > 2) o[len++] = (unsigned char)v;
    }
    *outlen = len;
    return 0;
}
