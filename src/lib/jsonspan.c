/*
 * jsonspan.c -- member spans in JSON text (jsonspan.h).
 */
#include "lib/jsonspan.h"

#include <string.h>

const char *jspan_ws(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
        p++;
    return p;
}

/* Past the JSON string at p (its opening quote), or NULL. */
static const char *skip_string(const char *p, const char *end)
{
    for (p++; p < end; p++) {
        if (*p == '\\')
            p++;
        else if (*p == '"')
            return p + 1;
    }
    return NULL;
}

/* Past the JSON value at p, or NULL: strings whole, arrays and objects by
 * their brackets (strings inside skipped whole), scalars to the next
 * delimiter. Enough for text that is known to be valid JSON. */
const char *jspan_value(const char *p, const char *end)
{
    if (p >= end) return NULL;
    if (*p == '"') return skip_string(p, end);
    if (*p != '{' && *p != '[') {
        while (p < end && !strchr(",}] \t\n\r", *p))
            p++;
        return p;
    }
    int depth = 0;
    for (; p < end; p++) {
        if (*p == '"') {
            if (!(p = skip_string(p, end))) return NULL;
            p--;
        } else if (*p == '{' || *p == '[') {
            depth++;
        } else if ((*p == '}' || *p == ']') && --depth == 0) {
            return p + 1;
        }
    }
    return NULL;
}

/* In the JSON object whose text starts at p, the member `name` (a key
 * needing no escapes): its key's opening quote in *kb (may be NULL) and its
 * value's span [*vb, *ve). 0, or -1 when it is absent or p is not an
 * object. Only the object's own members are looked at, never nested ones. */
int jspan_member(const char *p, const char *end, const char *name, const char **kb, const char **vb,
                 const char **ve)
{
    size_t nlen = strlen(name);
    p = jspan_ws(p, end);
    if (p >= end || *p++ != '{') return -1;
    if ((p = jspan_ws(p, end)) < end && *p == '}') return -1;
    for (;;) {
        p = jspan_ws(p, end);
        if (p >= end || *p != '"') return -1;
        const char *k = p;
        if (!(p = skip_string(p, end))) return -1;
        int hit = (size_t)(p - k) == nlen + 2 && !memcmp(k + 1, name, nlen);
        p = jspan_ws(p, end);
        if (p >= end || *p++ != ':') return -1;
        const char *v = jspan_ws(p, end);
        if (!(p = jspan_value(v, end))) return -1;
        if (hit) {
            if (kb) *kb = k;
            *vb = v;
            *ve = p;
            return 0;
        }
        p = jspan_ws(p, end);
        if (p >= end || *p++ != ',') return -1;
    }
}
