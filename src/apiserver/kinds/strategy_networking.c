/*
 * strategy_networking.c -- networking.k8s.io/v1 Ingresses, IngressClasses,
 * NetworkPolicies, IPAddresses and ServiceCIDRs: Kubernetes' defaults
 * (networking/v1 defaults.go), status reset and generation where Kubernetes
 * keeps them, and the checks of pkg/apis/networking/validation with their
 * field paths and messages: Ingress paths and pathTypes, backends (a service
 * with a port name or number, or a resource), hosts; NetworkPolicy ports,
 * peers, ipBlocks and policyTypes; the shapes of IPAddress and ServiceCIDR
 * objects (what allocating from them means belongs to the Service
 * strategy).
 *
 * Pure functions of their arguments: safe from any thread.
 */
#include <stdio.h>
#include <string.h>

#include "apiserver/http/http.h"
#include "apiserver/schema/strategy.h"
#include "apiserver/kinds/strategy_int.h"

/* ---- Ingress ---- */

#define WILDCARD_MSG                                                                               \
    "a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS subdomain, "      \
    "which must consist of lower case alphanumeric characters, '-' or '.' and end with an "        \
    "alphanumeric character (e.g. '*.example.com', regex used for validation is "                 \
    "'\\*\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"

static void ingress_prepare_create(json_t *ing)
{
    json_object_set_new(ing, "status", json_pack("{s:{}}", "loadBalancer"));
}

static void check_backend(const json_t *b, const char *path, json_t *causes)
{
    char f[192];
    const json_t *svc = json_object_get(b, "service"), *res = json_object_get(b, "resource");
    int has_svc = svc && !json_is_null(svc), has_res = res && !json_is_null(res);
    json_t *empty = json_string("");
    if (has_svc && has_res) {
        api__invalid(causes, path, empty, "cannot set both resource and service backends");
    } else if (has_res) {
        snprintf(f, sizeof f, "%s.resource.kind", path);
        if (!*api_json_str(res, "kind")) api__required(causes, f, "");
        snprintf(f, sizeof f, "%s.resource.name", path);
        if (!*api_json_str(res, "name")) api__required(causes, f, "");
        const char *group = api_json_str(res, "apiGroup");
        snprintf(f, sizeof f, "%s.resource.apiGroup", path);
        if (*group) api__dns_name(causes, f, group, 0);
    } else if (has_svc) {
        const char *name = api_json_str(svc, "name");
        snprintf(f, sizeof f, "%s.service.name", path);
        if (!*name) api__required(causes, f, "");
        else api__dns_name(causes, f, name, 2);
        const json_t *port = json_object_get(svc, "port");
        const json_t *pname = json_object_get(port, "name"), *pnum = json_object_get(port, "number");
        int has_name = json_string_value(pname) && *json_string_value(pname);
        int has_num = pnum && !json_is_null(pnum) &&
                      !(json_is_integer(pnum) && json_integer_value(pnum) == 0);
        if (has_name && has_num) {
            api__invalid(causes, path, empty, "cannot set both port name & port number");
        } else if (has_name) {
            snprintf(f, sizeof f, "%s.service.port.name", path);
            api__port_name(causes, f, pname);
        } else if (has_num) {
            snprintf(f, sizeof f, "%s.service.port.number", path);
            api__port_number(causes, f, pnum);
        } else {
            api__required(causes, path, "port name or number is required");
        }
    } else {
        api__invalid(causes, path, empty, "resource or service backend is required");
    }
    json_decref(empty);
}

static void check_http_path(const json_t *p, const char *path, json_t *causes)
{
    static const char *const types[] = {"Exact", "ImplementationSpecific", "Prefix", NULL};
    static const char *const bad_seqs[] = {"//", "/./", "/../", "%2f", "%2F", NULL};
    static const char *const bad_suffixes[] = {"/..", "/.", NULL};
    char f[160], detail[64];
    const json_t *pt = json_object_get(p, "pathType");
    const json_t *pathv = json_object_get(p, "path");
    const char *s = api_json_str(p, "path");
    snprintf(f, sizeof f, "%s.pathType", path);
    if (!pt || json_is_null(pt)) {
        api__required(causes, f, "pathType must be specified");
        return;
    }
    const char *type = json_string_value(pt);
    json_t *empty = pathv ? NULL : json_string("");
    if (!pathv) pathv = empty; /* Go prints the zero string */
    snprintf(f, sizeof f, "%s.path", path);
    if (type && (!strcmp(type, "Exact") || !strcmp(type, "Prefix"))) {
        if (*s != '/') api__invalid(causes, f, pathv, "must be an absolute path");
        for (const char *const *q = bad_seqs; *s && *q; q++) {
            if (!strstr(s, *q)) continue;
            snprintf(detail, sizeof detail, "must not contain '%s'", *q);
            api__invalid(causes, f, pathv, detail);
        }
        for (const char *const *q = bad_suffixes; *s && *q; q++) {
            size_t n = strlen(s), m = strlen(*q);
            if (n < m || strcmp(s + n - m, *q)) continue;
            snprintf(detail, sizeof detail, "cannot end with '%s'", *q);
            api__invalid(causes, f, pathv, detail);
        }
    } else if (type && !strcmp(type, "ImplementationSpecific")) {
        if (*s && *s != '/') api__invalid(causes, f, pathv, "must be an absolute path");
    } else {
        snprintf(f, sizeof f, "%s.pathType", path);
        api__not_supported(causes, f, pt, types);
    }
    json_decref(empty);
    snprintf(f, sizeof f, "%s.backend", path);
    check_backend(json_object_get(p, "backend"), f, causes);
}

/* A host: a DNS name ("*." wildcards allowed); a rule's host is never an
 * IP (no_ip). */
static void check_host(const json_t *hv, int no_ip, const char *field, json_t *causes)
{
    const char *host = json_string_value(hv);
    unsigned char addr[16];
    int fam;
    if (!host || !*host) return;
    if (no_ip && !api__parse_ip(host, addr, &fam))
        api__invalid(causes, field, hv, "must be a DNS name, not an IP address");
    if (strchr(host, '*')) {
        if (strncmp(host, "*.", 2) || api_name_invalid(host + 2, 0))
            api__invalid(causes, field, hv, WILDCARD_MSG);
    } else {
        api__dns_name(causes, field, host, 0);
    }
}

static void ingress_validate(const json_t *ing, const json_t *old, json_t *causes)
{
    const json_t *spec = json_object_get(ing, "spec");
    const json_t *rules = json_object_get(spec, "rules");
    const json_t *def = json_object_get(spec, "defaultBackend");
    int has_def = def && !json_is_null(def);
    char f[96];
    if (!json_array_size(rules) && !has_def)
        api_cause(causes, "FieldValueInvalid", "spec",
                  "Invalid value: []networking.IngressRule(nil): either `defaultBackend` or "
                  "`rules` must be specified");
    if (has_def) check_backend(def, "spec.defaultBackend", causes);
    const char *cls = api_json_str(spec, "ingressClassName");
    if (*cls) api__dns_name(causes, "spec.ingressClassName", cls, 0);
    const json_t *ann = json_object_get(json_object_get(ing, "metadata"), "annotations");
    if (!old && json_object_get(spec, "ingressClassName") &&
        *api_json_str(ann, "kubernetes.io/ingress.class"))
        api__invalid(causes, "annotations.kubernetes.io/ingress.class",
                     json_object_get(ann, "kubernetes.io/ingress.class"),
                     "can not be set when the class field is also set");
    size_t i, j;
    json_t *r, *p;
    json_array_foreach(rules, i, r) {
        snprintf(f, sizeof f, "spec.rules[%zu].host", i);
        check_host(json_object_get(r, "host"), 1, f, causes);
        const json_t *http = json_object_get(r, "http");
        if (!http || json_is_null(http)) continue;
        snprintf(f, sizeof f, "spec.rules[%zu].http.paths", i);
        if (!json_array_size(json_object_get(http, "paths"))) api__required(causes, f, "");
        json_array_foreach(json_object_get(http, "paths"), j, p) {
            snprintf(f, sizeof f, "spec.rules[%zu].http.paths[%zu]", i, j);
            check_http_path(p, f, causes);
        }
    }
    json_t *t, *h;
    json_array_foreach(json_object_get(spec, "tls"), i, t) {
        json_array_foreach(json_object_get(t, "hosts"), j, h) {
            snprintf(f, sizeof f, "spec.tls[%zu].hosts[%zu]", i, j);
            check_host(h, 0, f, causes);
        }
    }
}

const api_strategy_t api_strategy_ingress = {
    .generation = 1,
    .prepare_create = ingress_prepare_create,
    .validate = ingress_validate,
};

/* ---- IngressClass ---- */

static void ingressclass_defaults(json_t *ic)
{
    json_t *params = json_object_get(json_object_get(ic, "spec"), "parameters");
    if (json_is_object(params)) api__set_default(params, "scope", json_string("Cluster"));
}

/* IsDomainPrefixedPath: "acme.io/foo". */
static void check_controller(const json_t *v, json_t *causes)
{
    const char *c = json_string_value(v);
    const char *f = "spec.controller";
    if (!c || !*c) {
        api__required(causes, f, "");
        return;
    }
    if (strlen(c) > 250) {
        api_cause(causes, "FieldValueTooLong", f, "Too long: may not be more than 250 bytes");
        return;
    }
    const char *slash = strchr(c, '/');
    if (!slash || slash == c || !slash[1]) {
        api__invalid(causes, f, v, "must be a domain-prefixed path (such as \"acme.io/foo\")");
        return;
    }
    char host[256];
    snprintf(host, sizeof host, "%.*s", (int)(slash - c), c);
    api__dns_name(causes, f, host, 0);
}

static void ingressclass_validate(const json_t *ic, const json_t *old, json_t *causes)
{
    static const char *const scopes[] = {"Cluster", "Namespace", NULL};
    const json_t *spec = json_object_get(ic, "spec");
    check_controller(json_object_get(spec, "controller"), causes);
    const json_t *params = json_object_get(spec, "parameters");
    if (params && !json_is_null(params)) {
        if (!*api_json_str(params, "kind")) api__required(causes, "spec.parameters.kind", "");
        if (!*api_json_str(params, "name")) api__required(causes, "spec.parameters.name", "");
        const char *scope = api__enum(causes, params, "scope", "spec.parameters", scopes);
        const char *ns = api_json_str(params, "namespace");
        if (scope && !strcmp(scope, "Namespace") && !*ns)
            api__required(causes, "spec.parameters.namespace",
                          "`parameters.scope` is set to 'Namespace'");
        if (scope && !strcmp(scope, "Cluster") && *ns)
            api__forbidden(causes, "spec.parameters.namespace",
                           "`parameters.scope` is set to 'Cluster'");
    }
    if (old)
        api__immutable(causes, "spec.controller", json_object_get(spec, "controller"),
                       json_object_get(json_object_get(old, "spec"), "controller"));
}

const api_strategy_t api_strategy_ingressclass = {
    .generation = 1,
    .defaults = ingressclass_defaults,
    .validate = ingressclass_validate,
};

/* ---- NetworkPolicy ---- */

static void default_ports(json_t *rules)
{
    size_t i, j;
    json_t *r, *p;
    json_array_foreach(rules, i, r) {
        json_array_foreach(json_object_get(r, "ports"), j, p) {
            api__set_default(p, "protocol", json_string("TCP"));
        }
    }
}

/* SetDefaults_NetworkPolicy: Ingress always, Egress when egress rules exist. */
static void networkpolicy_defaults(json_t *np)
{
    json_t *spec = api_json_child(np, "spec");
    default_ports(json_object_get(spec, "ingress"));
    default_ports(json_object_get(spec, "egress"));
    if (json_array_size(json_object_get(spec, "policyTypes"))) return;
    json_t *types = json_pack("[s]", "Ingress");
    if (json_array_size(json_object_get(spec, "egress")))
        json_array_append_new(types, json_string("Egress"));
    json_object_set_new(spec, "policyTypes", types);
}

static void check_np_port(const json_t *p, const char *path, json_t *causes)
{
    static const char *const protocols[] = {"TCP", "UDP", "SCTP", NULL};
    char f[192];
    api__enum(causes, p, "protocol", path, protocols);
    const json_t *port = json_object_get(p, "port"), *end = json_object_get(p, "endPort");
    int has_end = end && !json_is_null(end);
    snprintf(f, sizeof f, "%s.endPort", path);
    if (!port || json_is_null(port)) {
        if (has_end)
            api__invalid(causes, f, end, "may not be specified when `port` is not specified");
        return;
    }
    if (json_is_integer(port)) {
        if (has_end && json_is_integer(end) && json_integer_value(end) < json_integer_value(port))
            api__invalid(causes, f, port, "must be greater than or equal to `port`");
        if (has_end) api__port_number(causes, f, end);
        snprintf(f, sizeof f, "%s.port", path);
        api__port_number(causes, f, port);
    } else {
        if (has_end)
            api__invalid(causes, f, end, "may not be specified when `port` is non-numeric");
        snprintf(f, sizeof f, "%s.port", path);
        api__port_name(causes, f, port);
    }
}

static int prefix_contains(const unsigned char *net, int bits, const unsigned char *ip)
{
    for (int i = 0; i < bits; i++) {
        int byte = i / 8, bit = 7 - i % 8;
        if (((net[byte] >> bit) & 1) != ((ip[byte] >> bit) & 1)) return 0;
    }
    return 1;
}

static void check_ipblock(const json_t *b, const char *path, json_t *causes)
{
    char f[256];
    const json_t *cidr = json_object_get(b, "cidr");
    unsigned char net[16], ex[16];
    int fam, bits, efam, ebits;
    snprintf(f, sizeof f, "%s.cidr", path);
    if (!json_string_value(cidr) || !*json_string_value(cidr)) {
        api__required(causes, f, "");
        return;
    }
    int ok = !api__parse_cidr(json_string_value(cidr), net, &fam, &bits);
    if (!ok) api__invalid(causes, f, cidr, API_CIDR_MSG);
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(b, "except"), i, e) {
        snprintf(f, sizeof f, "%s.except[%zu]", path, i);
        if (api__parse_cidr(json_string_value(e), ex, &efam, &ebits)) {
            api__invalid(causes, f, e, API_CIDR_MSG);
            continue;
        }
        if (ok && (efam != fam || bits >= ebits || !prefix_contains(net, bits, ex)))
            api__invalid(causes, f, e, "must be a strict subset of `cidr`");
    }
}

static void check_peer(const json_t *peer, const char *path, json_t *causes)
{
    char f[192];
    int n = 0;
    const json_t *ps = json_object_get(peer, "podSelector");
    const json_t *ns = json_object_get(peer, "namespaceSelector");
    const json_t *ipb = json_object_get(peer, "ipBlock");
    if (ps && !json_is_null(ps)) {
        n++;
        snprintf(f, sizeof f, "%s.podSelector", path);
        api__selector_check(causes, f, ps);
    }
    if (ns && !json_is_null(ns)) {
        n++;
        snprintf(f, sizeof f, "%s.namespaceSelector", path);
        api__selector_check(causes, f, ns);
    }
    int has_ipb = ipb && !json_is_null(ipb);
    if (has_ipb) {
        n++;
        snprintf(f, sizeof f, "%s.ipBlock", path);
        check_ipblock(ipb, f, causes);
    }
    if (!n) api__required(causes, path, "must specify a peer");
    else if (n > 1 && has_ipb) api__forbidden(causes, path, "may not specify both ipBlock and another peer");
}

static void check_np_rules(const json_t *rules, const char *dir, const char *peers,
                           json_t *causes)
{
    size_t i, j;
    json_t *r, *x;
    char f[160];
    json_array_foreach(rules, i, r) {
        json_array_foreach(json_object_get(r, "ports"), j, x) {
            snprintf(f, sizeof f, "spec.%s[%zu].ports[%zu]", dir, i, j);
            check_np_port(x, f, causes);
        }
        json_array_foreach(json_object_get(r, peers), j, x) {
            snprintf(f, sizeof f, "spec.%s[%zu].%s[%zu]", dir, i, peers, j);
            check_peer(x, f, causes);
        }
    }
}

static void networkpolicy_validate(const json_t *np, const json_t *old, json_t *causes)
{
    static const char *const types[] = {"Ingress", "Egress", NULL};
    (void)old;
    const json_t *spec = json_object_get(np, "spec");
    api__selector_check(causes, "spec.podSelector", json_object_get(spec, "podSelector"));
    check_np_rules(json_object_get(spec, "ingress"), "ingress", "from", causes);
    check_np_rules(json_object_get(spec, "egress"), "egress", "to", causes);
    const json_t *pt = json_object_get(spec, "policyTypes");
    if (json_array_size(pt) > 2) {
        api__invalid(causes, "spec.policyTypes", pt, "may not specify more than two policyTypes");
        return;
    }
    size_t i;
    json_t *t;
    json_array_foreach(pt, i, t) {
        char f[64];
        snprintf(f, sizeof f, "spec.policyTypes[%zu]", i);
        if (!api__in(json_string_value(t), types)) api__not_supported(causes, f, t, types);
    }
}

const api_strategy_t api_strategy_networkpolicy = {
    .generation = 1,
    .defaults = networkpolicy_defaults,
    .validate = networkpolicy_validate,
};

/* ---- IPAddress ---- */

static void ipaddress_validate(const json_t *ip, const json_t *old, json_t *causes)
{
    const json_t *meta = json_object_get(ip, "metadata");
    const json_t *name = json_object_get(meta, "name");
    unsigned char addr[16];
    int fam;
    if (json_string_value(name) && api__parse_ip(json_string_value(name), addr, &fam))
        api__invalid(causes, "metadata.name", name, API_IP_MSG);
    const json_t *spec = json_object_get(ip, "spec");
    const json_t *ref = json_object_get(spec, "parentRef");
    if (!ref || json_is_null(ref)) {
        api__required(causes, "spec.parentRef", "");
    } else {
        if (!*api_json_str(ref, "resource")) api__required(causes, "spec.parentRef.resource", "");
        if (!*api_json_str(ref, "name")) api__required(causes, "spec.parentRef.name", "");
        const char *group = api_json_str(ref, "group");
        if (*group) api__dns_name(causes, "spec.parentRef.group", group, 0);
        const char *ns = api_json_str(ref, "namespace");
        if (*ns) api__dns_name(causes, "spec.parentRef.namespace", ns, 1);
    }
    if (old)
        api__immutable(causes, "spec.parentRef", ref,
                       json_object_get(json_object_get(old, "spec"), "parentRef"));
}

const api_strategy_t api_strategy_ipaddress = {
    .validate = ipaddress_validate,
};

/* ---- ServiceCIDR ---- */

static void servicecidr_prepare_create(json_t *sc)
{
    json_object_set_new(sc, "status", json_object());
}

static void servicecidr_validate(const json_t *sc, const json_t *old, json_t *causes)
{
    const json_t *spec = json_object_get(sc, "spec");
    const json_t *cidrs = json_object_get(spec, "cidrs");
    size_t n = json_array_size(cidrs);
    if (!n) {
        api__required(causes, "spec.cidrs", "at least one CIDR required");
    } else if (n > 2) {
        api__invalid(causes, "spec.cidrs", cidrs, "may only hold up to 2 values");
    } else {
        int fams[2] = {0, 0};
        size_t i;
        json_t *c;
        json_array_foreach(cidrs, i, c) {
            unsigned char net[16];
            int bits;
            char f[48];
            snprintf(f, sizeof f, "spec.cidrs[%zu]", i);
            if (api__parse_cidr(json_string_value(c), net, &fams[i], &bits))
                api__invalid(causes, f, c, API_CIDR_MSG);
        }
        if (n == 2 && fams[0] && fams[0] == fams[1])
            api__invalid(causes, "spec.cidrs", cidrs,
                         "may specify no more than one IP for each IP family, i.e "
                         "192.168.0.0/24 and 2001:db8::/64");
    }
    if (old && json_array_size(json_object_get(json_object_get(old, "spec"), "cidrs")))
        api__immutable(causes, "spec.cidrs", cidrs,
                       json_object_get(json_object_get(old, "spec"), "cidrs"));
}

const api_strategy_t api_strategy_servicecidr = {
    .prepare_create = servicecidr_prepare_create,
    .validate = servicecidr_validate,
};
