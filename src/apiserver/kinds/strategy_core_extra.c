/*
 * strategy_core_extra.c -- the core/v1 kinds served since issue 15 that are
 * not volumes: ReplicationControllers, PodTemplates, LimitRanges,
 * ResourceQuotas, Endpoints, and discovery.k8s.io/v1 EndpointSlices.
 * Kubernetes' defaults (core/v1 and discovery/v1 defaults.go: an RC's
 * selector and labels from its template, replicas 1; LimitRange defaults
 * from max and min; port protocols), status reset on create, generation for
 * RCs, and the checks of pkg/apis/core/validation and
 * pkg/apis/discovery/validation with their field paths and messages.
 *
 * Pure functions of their arguments: safe from any thread.
 */
#include <stdio.h>
#include <string.h>

#include "apiserver/http/http.h"
#include "apiserver/schema/selector.h"
#include "apiserver/schema/strategy.h"
#include "apiserver/kinds/strategy_int.h"

static const char *const protocols[] = {"SCTP", "TCP", "UDP", NULL};

/* ---- ReplicationController ---- */

static void rc_prepare_create(json_t *rc)
{
    json_object_set_new(rc, "status", json_pack("{s:i}", "replicas", 0));
}

static void rc_defaults(json_t *rc)
{
    json_t *spec = api_json_child(rc, "spec");
    json_t *tmpl = json_object_get(spec, "template");
    const json_t *labels = json_object_get(json_object_get(tmpl, "metadata"), "labels");
    if (json_is_object(labels)) {
        if (!json_object_size(json_object_get(spec, "selector")))
            json_object_set_new(spec, "selector", json_deep_copy(labels));
        json_t *meta = api_json_child(rc, "metadata");
        if (!json_object_size(json_object_get(meta, "labels")))
            json_object_set_new(meta, "labels", json_deep_copy(labels));
    }
    api__set_default(spec, "replicas", json_integer(1));
    if (json_is_object(tmpl)) api_pod_spec_defaults(api_json_child(tmpl, "spec"));
}

/* An RC's selector is a plain map: every pair must be in the labels. */
static int map_selects(const json_t *sel, const json_t *labels)
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)sel, k, v) {
        if (!json_equal(v, json_object_get(labels, k))) return 0;
    }
    return 1;
}

static void rc_validate(const json_t *rc, const json_t *old, json_t *causes)
{
    static const char *const always[] = {"Always", NULL};
    (void)old;
    const json_t *spec = json_object_get(rc, "spec");
    api__int_min(causes, spec, "replicas", "spec", 0, NULL);
    api__int_min(causes, spec, "minReadySeconds", "spec", 0, NULL);
    const json_t *sel = json_object_get(spec, "selector");
    if (!json_object_size(sel)) api__required(causes, "spec.selector", "");
    const json_t *tmpl = json_object_get(spec, "template");
    if (!json_is_object(tmpl)) {
        api__required(causes, "spec.template", "");
        return;
    }
    const json_t *labels = json_object_get(json_object_get(tmpl, "metadata"), "labels");
    if (json_object_size(sel) && !map_selects(sel, labels))
        api__invalid(causes, "spec.template.metadata.labels", labels,
                     "`selector` does not match template `labels`");
    const json_t *pspec = json_object_get(tmpl, "spec");
    api_pod_spec_validate(pspec, "spec.template.spec", causes);
    const json_t *rp = json_object_get(pspec, "restartPolicy");
    if (json_is_object(pspec) && !api__in(json_string_value(rp), always))
        api__not_supported(causes, "spec.template.spec.restartPolicy", rp, always);
    const json_t *ads = json_object_get(pspec, "activeDeadlineSeconds");
    if (ads && !json_is_null(ads))
        api__forbidden(causes, "spec.template.spec.activeDeadlineSeconds",
                       "activeDeadlineSeconds in ReplicationController is not Supported");
}

const api_strategy_t api_strategy_replicationcontroller = {
    .generation = 1,
    .prepare_create = rc_prepare_create,
    .defaults = rc_defaults,
    .validate = rc_validate,
};

/* ---- PodTemplate ---- */

static void podtemplate_defaults(json_t *pt)
{
    json_t *tmpl = json_object_get(pt, "template");
    if (json_is_object(tmpl)) api_pod_spec_defaults(api_json_child(tmpl, "spec"));
}

static void podtemplate_validate(const json_t *pt, const json_t *old, json_t *causes)
{
    (void)old;
    const json_t *tmpl = json_object_get(pt, "template");
    api_pod_spec_validate(json_object_get(tmpl, "spec"), "template.spec", causes);
}

const api_strategy_t api_strategy_podtemplate = {
    .defaults = podtemplate_defaults,
    .validate = podtemplate_validate,
};

/* ---- LimitRange ---- */

static void copy_missing(json_t *item, const char *from, const char *to)
{
    const json_t *src = json_object_get(item, from);
    if (!json_object_size(src)) return;
    json_t *dst = api_json_child(item, to);
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)src, k, v) api__set_default(dst, k, json_deep_copy(v));
}

/* SetDefaults_LimitRangeItem: a Container's default limit is its max, its
 * default request its default limit, else its min. */
static void limitrange_defaults(json_t *lr)
{
    size_t i;
    json_t *item;
    json_array_foreach(json_object_get(json_object_get(lr, "spec"), "limits"), i, item) {
        if (strcmp(api_json_str(item, "type"), "Container")) continue;
        copy_missing(item, "max", "default");
        copy_missing(item, "default", "defaultRequest");
        copy_missing(item, "min", "defaultRequest");
    }
}

/* "<a> value X is greater than <b> value Y" at <a>[k], in Kubernetes'
 * order of comparisons. */
static void limit_order(const json_t *item, const char *path, const char *k, json_t *causes)
{
    static const struct {
        const char *lo, *hi, *at, *lo_name, *hi_name;
    } rules[] = {
        {"min", "max", "min", "min", "max"},
        {"min", "defaultRequest", "defaultRequest", "min", "default request"},
        {"defaultRequest", "max", "defaultRequest", "default request", "max"},
        {"defaultRequest", "default", "defaultRequest", "default request", "default limit"},
        {"min", "default", "default", "min", "default"},
        {"default", "max", "default", "default", "max"},
    };
    for (size_t r = 0; r < sizeof rules / sizeof rules[0]; r++) {
        const json_t *lo = json_object_get(json_object_get(item, rules[r].lo), k);
        const json_t *hi = json_object_get(json_object_get(item, rules[r].hi), k);
        int64_t a, b;
        if (!lo || !hi || api__quantity(lo, 1, &a) || api__quantity(hi, 1, &b) || a <= b)
            continue;
        char f[192], msg[256], lt[64], ht[64];
        api__value_text(lo, lt, sizeof lt);
        api__value_text(hi, ht, sizeof ht);
        const json_t *at = !strcmp(rules[r].at, rules[r].lo) ? lo : hi;
        snprintf(f, sizeof f, "%s.%s[%s]", path, rules[r].at, k);
        snprintf(msg, sizeof msg, "%s value %s is greater than %s value %s", rules[r].lo_name,
                 json_string_value(lo) ? json_string_value(lo) : lt, rules[r].hi_name,
                 json_string_value(hi) ? json_string_value(hi) : ht);
        api__invalid(causes, f, at, msg);
    }
}

static void limitrange_validate(const json_t *lr, const json_t *old, json_t *causes)
{
    static const char *const types[] = {"Pod", "Container", "PersistentVolumeClaim", NULL};
    static const char *const maps[] = {"max", "min", "default", "defaultRequest",
                                       "maxLimitRequestRatio", NULL};
    (void)old;
    json_t *seen = json_object();
    size_t i;
    json_t *item;
    json_array_foreach(json_object_get(json_object_get(lr, "spec"), "limits"), i, item) {
        char path[64], f[192], err[512];
        snprintf(path, sizeof path, "spec.limits[%zu]", i);
        const json_t *tv = json_object_get(item, "type");
        const char *type = api_json_str(item, "type");
        snprintf(f, sizeof f, "%s.type", path);
        if (sel_label_key_check(type, err, sizeof err)) api__invalid(causes, f, tv, err);
        else if (!strchr(type, '/') && !api__in(type, types))
            api__invalid(causes, f, tv, "must be a standard limit type or fully qualified");
        if (seen && json_object_get(seen, type))
            api_cause(causes, "FieldValueDuplicate", f, "Duplicate value: \"%s\"", type);
        else if (seen) json_object_set_new(seen, type, json_true());
        json_t *keys = json_object();
        for (const char *const *m = maps; *m; m++) {
            const char *k;
            json_t *q;
            json_object_foreach(json_object_get(item, *m), k, q) {
                snprintf(f, sizeof f, "%s.%s[%s]", path, *m, k);
                api__quantity_check(causes, f, q, 0, NULL);
                if (keys) json_object_set_new(keys, k, json_true());
            }
        }
        if (!strcmp(type, "Pod")) {
            snprintf(f, sizeof f, "%s.default", path);
            if (json_object_size(json_object_get(item, "default")))
                api__forbidden(causes, f, "may not be specified when `type` is 'Pod'");
            snprintf(f, sizeof f, "%s.defaultRequest", path);
            if (json_object_size(json_object_get(item, "defaultRequest")))
                api__forbidden(causes, f, "may not be specified when `type` is 'Pod'");
        }
        const char *k;
        json_t *unused;
        json_object_foreach(keys, k, unused) limit_order(item, path, k, causes);
        json_decref(keys);
    }
    json_decref(seen);
}

const api_strategy_t api_strategy_limitrange = {
    .defaults = limitrange_defaults,
    .validate = limitrange_validate,
};

/* ---- ResourceQuota ---- */

static const char *const quota_scopes[] = {"Terminating",   "NotTerminating",
                                           "BestEffort",    "NotBestEffort",
                                           "PriorityClass", "CrossNamespacePodAffinity",
                                           "VolumeAttributesClass", NULL};

static void quota_prepare_create(json_t *q)
{
    json_object_set_new(q, "status", json_object());
}

static void quota_validate(const json_t *q, const json_t *old, json_t *causes)
{
    static const char *const ops[] = {"In", "NotIn", "Exists", "DoesNotExist", NULL};
    (void)old;
    const json_t *spec = json_object_get(q, "spec");
    const char *k;
    json_t *v;
    json_object_foreach(json_object_get(spec, "hard"), k, v) {
        char f[192], err[512];
        snprintf(f, sizeof f, "spec.hard[%s]", k);
        if (sel_label_key_check(k, err, sizeof err)) {
            api__invalid_str(causes, f, k, err);
        }
        api__quantity_check(causes, f, v, 0, NULL);
    }
    const json_t *scopes = json_object_get(spec, "scopes");
    size_t i;
    json_t *s;
    int term = 0, nonterm = 0, be = 0, nonbe = 0;
    json_array_foreach(scopes, i, s) {
        const char *name = json_string_value(s);
        if (!api__in(name, quota_scopes)) {
            api__invalid(causes, "spec.scopes", scopes, "unsupported scope");
            break;
        }
        term |= !strcmp(name, "Terminating");
        nonterm |= !strcmp(name, "NotTerminating");
        be |= !strcmp(name, "BestEffort");
        nonbe |= !strcmp(name, "NotBestEffort");
    }
    if ((term && nonterm) || (be && nonbe))
        api__invalid(causes, "spec.scopes", scopes, "conflicting scopes");
    json_t *e;
    json_array_foreach(json_object_get(json_object_get(spec, "scopeSelector"), "matchExpressions"),
                       i, e) {
        char f[128];
        snprintf(f, sizeof f, "spec.scopeSelector.matchExpressions[%zu].scopeName", i);
        const json_t *sn = json_object_get(e, "scopeName");
        if (!api__in(json_string_value(sn), quota_scopes))
            api__invalid(causes, f, sn, "unsupported scope");
        snprintf(f, sizeof f, "spec.scopeSelector.matchExpressions[%zu]", i);
        api__enum(causes, e, "operator", f, ops);
    }
}

const api_strategy_t api_strategy_resourcequota = {
    .prepare_create = quota_prepare_create,
    .validate = quota_validate,
};

/* ---- Endpoints ---- */

static void default_protocols(json_t *ports)
{
    size_t i;
    json_t *p;
    json_array_foreach(ports, i, p) api__set_default(p, "protocol", json_string("TCP"));
}

static void endpoints_defaults(json_t *ep)
{
    size_t i;
    json_t *s;
    json_array_foreach(json_object_get(ep, "subsets"), i, s) {
        default_protocols(json_object_get(s, "ports"));
    }
}

/* validateNonSpecialIP: an endpoint is a real, reachable unicast address. */
static void check_endpoint_ip(const json_t *v, const char *field, json_t *causes)
{
    unsigned char a[16];
    int fam;
    static const unsigned char zero[16] = {0};
    static const unsigned char loop6[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
    if (api__parse_ip(json_string_value(v), a, &fam)) {
        api__invalid(causes, field, v, API_IP_MSG);
        return;
    }
    if ((fam == 4 && !memcmp(a, zero, 4)) || (fam == 6 && !memcmp(a, zero, 16)))
        api__invalid(causes, field, v, "may not be unspecified (0.0.0.0)");
    else if ((fam == 4 && a[0] == 127) || (fam == 6 && !memcmp(a, loop6, 16)))
        api__invalid(causes, field, v, "may not be in the loopback range (127.0.0.0/8, ::1/128)");
    else if ((fam == 4 && a[0] == 169 && a[1] == 254) ||
             (fam == 6 && a[0] == 0xfe && (a[1] & 0xc0) == 0x80))
        api__invalid(causes, field, v,
                     "may not be in the link-local range (169.254.0.0/16, fe80::/10)");
    else if ((fam == 4 && a[0] == 224 && a[1] == 0 && a[2] == 0) ||
             (fam == 6 && a[0] == 0xff && (a[1] & 0x0f) == 0x02))
        api__invalid(causes, field, v,
                     "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)");
}

/* "<path>[i].<leaf>" into f; a path too long for f is cut (it only names a
 * field in a message). */
static void port_field(char *f, size_t n, const char *path, size_t i, const char *leaf)
{
    if (snprintf(f, n, "%s[%zu].%s", path, i, leaf) >= (int)n) f[n - 1] = '\0';
}

static void check_ports(const json_t *ports, const char *path, int name_label, json_t *causes)
{
    size_t i;
    json_t *p;
    int many = json_array_size(ports) > 1;
    json_array_foreach(ports, i, p) {
        char f[192];
        const char *name = api_json_str(p, "name");
        port_field(f, sizeof f, path, i, "name");
        if (many && !*name && name_label) api__required(causes, f, "");
        else if (*name) api__dns_name(causes, f, name, 1);
        port_field(f, sizeof f, path, i, "port");
        const json_t *port = json_object_get(p, "port");
        if (port || name_label) api__port_number(causes, f, port);
        port_field(f, sizeof f, path, i, "protocol");
        const json_t *proto = json_object_get(p, "protocol");
        if (!json_string_value(proto) || !*json_string_value(proto))
            api__required(causes, f, "");
        else if (!api__in(json_string_value(proto), protocols))
            api__not_supported(causes, f, proto, protocols);
    }
}

static void endpoints_validate(const json_t *ep, const json_t *old, json_t *causes)
{
    static const char *const lists[] = {"addresses", "notReadyAddresses", NULL};
    (void)old;
    size_t i, j;
    json_t *s, *a;
    json_array_foreach(json_object_get(ep, "subsets"), i, s) {
        char f[192];
        for (const char *const *l = lists; *l; l++) {
            json_array_foreach(json_object_get(s, *l), j, a) {
                snprintf(f, sizeof f, "subsets[%zu].%s[%zu].ip", i, *l, j);
                check_endpoint_ip(json_object_get(a, "ip"), f, causes);
                const char *node = api_json_str(a, "nodeName");
                snprintf(f, sizeof f, "subsets[%zu].%s[%zu].nodeName", i, *l, j);
                if (*node) api__dns_name(causes, f, node, 0);
            }
        }
        snprintf(f, sizeof f, "subsets[%zu].ports", i);
        check_ports(json_object_get(s, "ports"), f, 1, causes);
    }
}

const api_strategy_t api_strategy_endpoints = {
    .defaults = endpoints_defaults,
    .validate = endpoints_validate,
};

/* ---- EndpointSlice ---- */

static void endpointslice_defaults(json_t *es)
{
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(es, "ports"), i, p) {
        api__set_default(p, "protocol", json_string("TCP"));
        api__set_default(p, "name", json_string(""));
    }
}

static void endpointslice_validate(const json_t *es, const json_t *old, json_t *causes)
{
    static const char *const types[] = {"FQDN", "IPv4", "IPv6", NULL};
    const json_t *at = json_object_get(es, "addressType");
    const char *type = json_string_value(at);
    if (!type || !*type) api__required(causes, "addressType", "");
    else if (!api__in(type, types)) api__not_supported(causes, "addressType", at, types);
    const json_t *eps = json_object_get(es, "endpoints");
    if (json_array_size(eps) > 1000) {
        api_cause(causes, "FieldValueTooMany", "endpoints",
                  "Too many: %zu: must have at most 1000 items", json_array_size(eps));
    } else {
        size_t i, j;
        json_t *e, *a;
        json_array_foreach(eps, i, e) {
            char f[128];
            const json_t *addrs = json_object_get(e, "addresses");
            snprintf(f, sizeof f, "endpoints[%zu].addresses", i);
            if (!json_array_size(addrs))
                api__required(causes, f, "must contain at least 1 address");
            else if (json_array_size(addrs) > 100)
                api_cause(causes, "FieldValueTooMany", f,
                          "Too many: %zu: must have at most 100 items", json_array_size(addrs));
            json_array_foreach(addrs, j, a) {
                unsigned char ip[16];
                int fam = 0;
                snprintf(f, sizeof f, "endpoints[%zu].addresses[%zu]", i, j);
                int bad_ip = api__parse_ip(json_string_value(a), ip, &fam) != 0;
                if (type && !strcmp(type, "IPv4") && (bad_ip || fam != 4))
                    api__invalid(causes, f, a, "must be a valid IPv4 address");
                else if (type && !strcmp(type, "IPv6") && (bad_ip || fam != 6))
                    api__invalid(causes, f, a, "must be a valid IPv6 address");
                else if (type && !strcmp(type, "FQDN"))
                    api__dns_name(causes, f, json_string_value(a) ? json_string_value(a) : "", 0);
            }
            const char *node = api_json_str(e, "nodeName");
            snprintf(f, sizeof f, "endpoints[%zu].nodeName", i);
            if (*node) api__dns_name(causes, f, node, 0);
            const char *host = api_json_str(e, "hostname");
            snprintf(f, sizeof f, "endpoints[%zu].hostname", i);
            if (*host) api__dns_name(causes, f, host, 1);
        }
    }
    const json_t *ports = json_object_get(es, "ports");
    if (json_array_size(ports) > 20000)
        api_cause(causes, "FieldValueTooMany", "ports",
                  "Too many: %zu: must have at most 20000 items", json_array_size(ports));
    else
        check_ports(ports, "ports", 0, causes);
    if (old) api__immutable(causes, "addressType", at, json_object_get(old, "addressType"));
}

const api_strategy_t api_strategy_endpointslice = {
    .defaults = endpointslice_defaults,
    .validate = endpointslice_validate,
};
