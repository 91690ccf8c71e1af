/*
 * object.c -- metadata helpers: uids, timestamps, name rules, causes.
 */
#include <ctype.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "apiserver/schema/object.h"
#include "lib/err.h"

int api_new_uid(char out[37])
{
    unsigned char b[16];
    if (getrandom(b, sizeof b, 0) != (ssize_t)sizeof b) return KP_EIO;
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40); /* version 4 */
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80); /* RFC 4122 variant */
    snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
             b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12],
             b[13], b[14], b[15]);
    return 0;
}

void api_now_rfc3339(char out[32])
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static int alnum_lower(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

/* Kubernetes' path.ValidatePathSegmentName (not as a prefix): the names an
 * object of any kind may have as one segment of a URL and a store key. */
static const char *path_segment_invalid(const char *name)
{
    if (!strcmp(name, ".")) return "may not be '.'";
    if (!strcmp(name, "..")) return "may not be '..'";
    if (strchr(name, '/')) return "may not contain '/'";
    if (strchr(name, '%')) return "may not contain '%'";
    return NULL;
}

/* A DNS-1123 label, or with `rfc1035` a DNS-1035 label (starts with a
 * letter). */
static const char *label_invalid(const char *name, size_t n, int rfc1035)
{
    if (n > 63) return "must be no more than 63 characters";
    for (size_t i = 0; i < n; i++)
        if (!alnum_lower(name[i]) && name[i] != '-') goto bad;
    if (!alnum_lower(name[n - 1])) goto bad;
    if (rfc1035 ? !(name[0] >= 'a' && name[0] <= 'z') : !alnum_lower(name[0])) goto bad;
    return NULL;
bad:
    if (rfc1035)
        return "a DNS-1035 label must consist of lower case alphanumeric characters or '-', "
               "start with an alphabetic character, and end with an alphanumeric character "
               "(e.g. 'my-name',  or 'abc-123', regex used for validation is "
               "'[a-z]([-a-z0-9]*[a-z0-9])?')";
    return "a lowercase RFC 1123 label must consist of lower case alphanumeric characters "
           "or '-', and must start and end with an alphanumeric character (e.g. "
           "'my-name',  or '123-abc', regex used for validation is "
           "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
}

const char *api_name_invalid(const char *name, int rule)
{
    size_t n = strlen(name);
    if (n == 0) return "name or generateName is required";
    if (rule == API_NAME_PATH_SEGMENT) return path_segment_invalid(name);
    if (rule == API_NAME_LABEL || rule == API_NAME_LABEL_1035)
        return label_invalid(name, n, rule == API_NAME_LABEL_1035);
    if (n > 253) return "must be no more than 253 characters";
    /* dot-separated labels, each [a-z0-9]([-a-z0-9]*[a-z0-9])? */
    size_t start = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i < n && name[i] != '.') {
            if (!alnum_lower(name[i]) && name[i] != '-') goto bad_sub;
            continue;
        }
        if (i == start || !alnum_lower(name[start]) || !alnum_lower(name[i - 1])) goto bad_sub;
        start = i + 1;
    }
    return NULL;
bad_sub:
    return "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
           "'-' or '.', and must start and end with an alphanumeric character (e.g. "
           "'example.com', regex used for validation is "
           "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
}

const char *api_json_str(const json_t *obj, const char *key)
{
    const char *s = json_string_value(json_object_get(obj, key));
    return s ? s : "";
}

json_t *api_json_shallow_copy(const json_t *obj)
{
    json_t *o = json_is_object(obj) ? json_object() : NULL, *v;
    const char *k;
    json_object_foreach((json_t *)obj, k, v) {
        if (o && json_object_set(o, k, v)) {
            json_decref(o);
            o = NULL;
        }
    }
    return o;
}

json_t *api_json_child(json_t *obj, const char *key)
{
    json_t *c = json_object_get(obj, key);
    if (!json_is_object(c)) {
        c = json_object();
        if (json_object_set_new(obj, key, c)) return NULL;
    }
    return c;
}

int api_json_same(const json_t *a, const json_t *b)
{
    /* json_equal() says two absent values differ; for "did this change" they
     * are the same. */
    if (!a || !b) return a == b;
    return json_equal(a, b);
}

void api_cause(json_t *causes, const char *reason, const char *field, const char *fmt, ...)
{
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    /* Kubernetes leaves an empty field out of the cause. */
    json_t *c = json_pack("{s:s, s:s}", "reason", reason, "message", msg);
    if (c && field && *field) json_object_set_new(c, "field", json_string(field));
    if (c) json_array_append_new(causes, c);
}

void api_dns1035_messages(const char *s, int fold, char *out, size_t n)
{
    size_t len = strlen(s), w = 0;
    int ok = len > 0;
    for (size_t i = 0; i < len && ok; i++) {
        char c = s[i];
        if (fold && c >= 'A' && c <= 'Z') c = (char)(c - 'A' + 'a');
        int alpha = c >= 'a' && c <= 'z', digit = c >= '0' && c <= '9';
        if (i == 0)
            ok = alpha;
        else if (i == len - 1)
            ok = alpha || digit;
        else
            ok = alpha || digit || c == '-';
    }
    out[0] = '\0';
    if (len > 63) w = (size_t)snprintf(out, n, "must be no more than 63 characters");
    if (!ok && w < n)
        snprintf(out + w, n - w,
                 "%sa DNS-1035 label must consist of lower case alphanumeric characters or '-', "
                 "start with an alphabetic character, and end with an alphanumeric character "
                 "(e.g. 'my-name',  or 'abc-123', regex used for validation is "
                 "'[a-z]([-a-z0-9]*[a-z0-9])?')",
                 w ? "," : "");
}
