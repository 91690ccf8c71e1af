/*
 * strategy_util.c -- what the strategy files share: defaulting, causes
 * worded as Kubernetes' field.Error words them (apimachinery
 * pkg/util/validation/field/errors.go), and value rules (quantities, IPs,
 * CIDRs, names). See strategy_int.h.
 */
#include <arpa/inet.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apiserver/http/http.h"
#include "apiserver/rest/rest.h"
#include "apiserver/rest/rest_int.h"
#include "lib/err.h"
#include "lib/quantity.h"
#include "apiserver/schema/selector.h"
#include "apiserver/schema/strategy.h"
#include "apiserver/kinds/strategy_int.h"

void api__set_default(json_t *obj, const char *key, json_t *value)
{
    if (json_is_object(obj) && !json_object_get(obj, key)) json_object_set_new(obj, key, value);
    else json_decref(value);
}

int api__in(const char *s, const char *const *allowed)
{
    for (const char *const *a = allowed; s && *a; a++)
        if (!strcmp(s, *a)) return 1;
    return 0;
}

void api__value_text(const json_t *v, char *out, size_t n)
{
    if (!n) return;
    out[0] = '\0';
    if (!v || json_is_null(v)) {
        snprintf(out, n, "null");
    } else if (json_is_string(v)) {
        snprintf(out, n, "\"%s\"", json_string_value(v));
    } else {
        char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
        snprintf(out, n, "%s", s ? s : "?");
        free(s);
    }
}

void api__required(json_t *causes, const char *field, const char *detail)
{
    if (detail && *detail) api_cause(causes, "FieldValueRequired", field, "Required value: %s", detail);
    else api_cause(causes, "FieldValueRequired", field, "Required value");
}

void api__invalid(json_t *causes, const char *field, const json_t *v, const char *detail)
{
    char text[512];
    api__value_text(v, text, sizeof text);
    api_cause(causes, "FieldValueInvalid", field, "Invalid value: %s: %s", text, detail);
}

void api__invalid_str(json_t *causes, const char *field, const char *s, const char *detail)
{
    api_cause(causes, "FieldValueInvalid", field, "Invalid value: \"%s\": %s", s, detail);
}

void api__not_supported_str(json_t *causes, const char *field, const char *s,
                            const char *const *allowed)
{
    json_t *v = json_string(s);
    api__not_supported(causes, field, v, allowed);
    json_decref(v);
}

void api__forbidden(json_t *causes, const char *field, const char *detail)
{
    api_cause(causes, "FieldValueForbidden", field, "Forbidden: %s", detail);
}

void api__not_supported(json_t *causes, const char *field, const json_t *v,
                        const char *const *allowed)
{
    char text[256], list[512] = "";
    api__value_text(v, text, sizeof text);
    for (const char *const *a = allowed; *a; a++) {
        size_t n = strlen(list);
        snprintf(list + n, sizeof list - n, "%s\"%s\"", n ? ", " : "", *a);
    }
    api_cause(causes, "FieldValueNotSupported", field,
              "Unsupported value: %s: supported values: %s", text, list);
}

const char *api__enum(json_t *causes, const json_t *obj, const char *key, const char *path,
                      const char *const *allowed)
{
    const json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v)) return NULL;
    const char *s = json_string_value(v);
    if (api__in(s, allowed)) return s;
    char field[256];
    snprintf(field, sizeof field, "%s%s%s", path, *path ? "." : "", key);
    api__not_supported(causes, field, v, allowed);
    return NULL;
}

void api__immutable(json_t *causes, const char *field, const json_t *now, const json_t *was)
{
    if (json_is_null(now)) now = NULL;
    if (json_is_null(was)) was = NULL;
    if (!api_json_same(now, was)) api__invalid(causes, field, now, "field is immutable");
}

int api__int_min(json_t *causes, const json_t *obj, const char *key, const char *path,
                 long long min, long long *out)
{
    const json_t *v = json_object_get(obj, key);
    char field[256], detail[96];
    snprintf(field, sizeof field, "%s%s%s", path, *path ? "." : "", key);
    if (!v || json_is_null(v)) return 0;
    if (!json_is_integer(v)) {
        api__invalid(causes, field, v, "must be an integer");
        return 0;
    }
    long long x = (long long)json_integer_value(v);
    if (x < min) {
        snprintf(detail, sizeof detail, "must be greater than or equal to %lld", min);
        api__invalid(causes, field, v, detail);
    }
    if (out) *out = x;
    return 1;
}

int api__quantity(const json_t *v, int milli, int64_t *out)
{
    int64_t q = 0;
    if (json_is_integer(v)) {
        json_int_t x = json_integer_value(v);
        int64_t f = milli ? 1000 : 1;
        *out = x > INT64_MAX / f ? INT64_MAX : x < INT64_MIN / f ? INT64_MIN : (int64_t)x * f;
        return 0;
    }
    if (json_is_real(v)) {
        double d = json_real_value(v) * (milli ? 1000.0 : 1.0);
        *out = d >= 9.2e18 ? INT64_MAX : d <= -9.2e18 ? INT64_MIN : (int64_t)d;
        return 0;
    }
    const char *s = json_string_value(v);
    if (!s || !*s) return KP_EINVAL;
    int neg = *s == '-';
    int rc = kp_quantity_parse(neg ? s + 1 : s, milli, &q);
    if (neg && (s[1] == '+' || s[1] == '-')) return KP_EINVAL;
    if (rc == KP_ETOOLARGE) q = INT64_MAX;
    else if (rc) return KP_EINVAL;
    *out = neg ? -q : q;
    return 0;
}

int api__parse_ip(const char *s, unsigned char addr[16], int *family)
{
    memset(addr, 0, 16);
    if (!s || !*s || strlen(s) > 45) return KP_EINVAL;
    if (inet_pton(AF_INET, s, addr) == 1) {
        *family = 4;
        return 0;
    }
    if (inet_pton(AF_INET6, s, addr) == 1) {
        *family = 6;
        return 0;
    }
    return KP_EINVAL;
}

int api__parse_cidr(const char *s, unsigned char addr[16], int *family, int *prefix)
{
    char ip[64];
    const char *slash = s ? strchr(s, '/') : NULL;
    if (!slash || (size_t)(slash - s) >= sizeof ip) return KP_EINVAL;
    memcpy(ip, s, (size_t)(slash - s));
    ip[slash - s] = '\0';
    if (api__parse_ip(ip, addr, family)) return KP_EINVAL;
    const char *p = slash + 1;
    int bits = 0, digits = 0;
    for (; *p >= '0' && *p <= '9' && digits < 4; p++, digits++)
        bits = bits * 10 + (*p - '0');
    if (!digits || *p || bits > (*family == 4 ? 32 : 128)) return KP_EINVAL;
    *prefix = bits;
    return 0;
}

int api__dns_name(json_t *causes, const char *field, const char *name, int label)
{
    char why[512];
    const char *bad = NULL;
    if (label == 2) {
        api_dns1035_messages(name, 0, why, sizeof why);
        bad = *why ? why : NULL;
    } else {
        bad = api_name_invalid(name, label);
    }
    if (!bad) return 0;
    api__invalid_str(causes, field, name, bad);
    return 1;
}

const char *api__path_segment_invalid(const char *name)
{
    if (!strcmp(name, ".")) return "may not be '.'";
    if (!strcmp(name, "..")) return "may not be '..'";
    if (strchr(name, '/')) return "may not contain '/'";
    if (strchr(name, '%')) return "may not contain '%'";
    return NULL;
}

int api__quantity_check(json_t *causes, const char *field, const json_t *v, int positive,
                        int64_t *out)
{
    int64_t q;
    if (api__quantity(v, 0, &q)) {
        api__invalid(causes, field, v, API_QUANTITY_MSG);
        return -1;
    }
    /* A fraction such as "500m" rounds up to 1 unit: compare in milli. */
    int64_t m = 0;
    api__quantity(v, 1, &m);
    if (positive && m <= 0) api__invalid(causes, field, v, "must be greater than zero");
    else if (!positive && m < 0) api__invalid(causes, field, v, "must be greater than or equal to 0");
    if (out) *out = q;
    return 0;
}

void api__selector_check(json_t *causes, const char *field, const json_t *sel)
{
    if (!sel || json_is_null(sel)) return;
    sel_label_t *s = NULL;
    char err[256];
    if (sel_label_from_json(sel, &s, err, sizeof err)) api__invalid(causes, field, sel, err);
    sel_label_free(s);
}

void api__port_number(json_t *causes, const char *field, const json_t *v)
{
    if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > 65535)
        api__invalid(causes, field, v, "must be between 1 and 65535, inclusive");
}

void api__port_name(json_t *causes, const char *field, const json_t *v)
{
    const char *s = json_string_value(v);
    size_t n = s ? strlen(s) : 0;
    int letter = 0, bad_char = 0, double_hyphen = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c >= 'a' && c <= 'z') letter = 1;
        else if (!(c >= '0' && c <= '9') && c != '-') bad_char = 1;
        if (c == '-' && i + 1 < n && s[i + 1] == '-') double_hyphen = 1;
    }
    if (n > 15) api__invalid(causes, field, v, "must be no more than 15 characters");
    if (bad_char)
        api__invalid(causes, field, v,
                     "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)");
    if (double_hyphen) api__invalid(causes, field, v, "must not contain consecutive hyphens");
    if (!letter) api__invalid(causes, field, v, "must contain at least one letter (a-z)");
    if (n && (s[0] == '-' || s[n - 1] == '-'))
        api__invalid(causes, field, v, "must not begin or end with a hyphen");
}

int api__reply_forbidden(struct api_req *r, const char *name, const char *fmt, ...)
{
    char why[4096], q[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    const api_resource_t *res = r->route.res;
    json_t *d =
        json_pack("{s:s, s:s, s:s}", "name", name, "group", res->group, "kind", res->resource);
    api_reply_status(r, 403, "Forbidden", d, "%s \"%s\" is forbidden: %s",
                     rest_qualified(res, q, sizeof q), name, why);
    json_decref(d);
    return -1;
}
