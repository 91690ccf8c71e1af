/*
 * strategy_service.c -- core/v1 Service: Kubernetes' defaults
 * (SetDefaults_Service), what create and update keep (svcStrategy:
 * PrepareForCreate, PrepareForUpdate with patchAllocatedValues,
 * NormalizeClusterIPs and dropTypeDependentFields), validation
 * (ValidateService, ValidateServiceUpdate), and the addresses a Service
 * takes: its ClusterIP and NodePorts, allocated in write_begin (the REST
 * storage's beginCreate/beginUpdate: IP families, then IPs, then ports) and
 * released in write_end or deleted (afterDelete). alloc.h has the record
 * and its crash safety. IPv4 single-stack: dual-stack requests are refused
 * as on a single-stack cluster.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apiserver/kinds/alloc.h"
#include "apiserver/http/http.h"
#include "lib/err.h"
#include "apiserver/schema/strategy.h"
#include "apiserver/kinds/strategy_int.h"

static const char *str(const json_t *o, const char *k) { return api_json_str(o, k); }

static const char *type_of(const json_t *spec)
{
    const char *t = str(spec, "type");
    return *t ? t : "ClusterIP";
}

static int is_type(const json_t *spec, const char *t) { return !strcmp(type_of(spec), t); }
static int needs_cluster_ip(const json_t *spec) { return !is_type(spec, "ExternalName"); }
static int needs_node_port(const json_t *spec)
{
    return is_type(spec, "NodePort") || is_type(spec, "LoadBalancer");
}
static int needs_hc_port(const json_t *spec)
{
    return is_type(spec, "LoadBalancer") && !strcmp(str(spec, "externalTrafficPolicy"), "Local");
}
static int headless(const json_t *spec) { return !strcmp(str(spec, "clusterIP"), "None"); }

static void set_default(json_t *obj, const char *key, json_t *value)
{
    if (!json_object_get(obj, key)) json_object_set_new(obj, key, value);
    else json_decref(value);
}

static int same(const json_t *a, const json_t *b, const char *key)
{
    return api_json_same(json_object_get(a, key), json_object_get(b, key));
}

/* NormalizeClusterIPs: clusterIPs follows clusterIP where the client set
 * only the singular field (old clients), or changed only it. */
static void normalize_cluster_ips(json_t *spec, const json_t *ospec)
{
    const char *ip = str(spec, "clusterIP");
    json_t *ips = json_object_get(spec, "clusterIPs");
    if (!ospec) {
        if (*ip && !json_array_size(ips))
            json_object_set_new(spec, "clusterIPs", json_pack("[s]", ip));
        return;
    }
    const json_t *oips = json_object_get(ospec, "clusterIPs");
    if (json_array_size(oips) && !json_array_size(ips) && !strcmp(str(ospec, "clusterIP"), ip))
        json_object_set(spec, "clusterIPs", (json_t *)oips);
    if (strcmp(str(ospec, "clusterIP"), ip) && same(spec, ospec, "clusterIPs")) {
        if (*str(ospec, "clusterIP") && !*ip) json_object_del(spec, "clusterIPs");
        else json_object_set_new(spec, "clusterIPs", json_pack("[s]", ip));
    }
}

static void service_prepare_create(json_t *svc)
{
    json_object_set_new(svc, "status", json_pack("{s:{}}", "loadBalancer"));
    json_t *spec = json_object_get(svc, "spec");
    if (json_is_object(spec)) normalize_cluster_ips(spec, NULL);
}

static json_int_t node_port(const json_t *p)
{
    return json_integer_value(json_object_get(p, "nodePort"));
}

/* patchAllocatedValues: what the server allocated stays when a client
 * resubmits the object without it (kubectl replace of its own YAML). */
static void patch_allocated(json_t *spec, const json_t *ospec)
{
    if (needs_cluster_ip(ospec) && needs_cluster_ip(spec)) {
        if (!*str(spec, "clusterIP") && *str(ospec, "clusterIP"))
            json_object_set(spec, "clusterIP", json_object_get(ospec, "clusterIP"));
        if (!json_array_size(json_object_get(spec, "clusterIPs")) &&
            json_array_size(json_object_get(ospec, "clusterIPs")))
            json_object_set(spec, "clusterIPs", json_object_get(ospec, "clusterIPs"));
    }
    if (needs_node_port(ospec) && needs_node_port(spec)) {
        const json_t *oports = json_object_get(ospec, "ports"), *ports = json_object_get(spec, "ports");
        size_t i, j;
        json_t *p, *op;
        json_array_foreach(ports, i, p) {
            if (!json_is_object(p) || node_port(p)) continue;
            json_array_foreach(oports, j, op) {
                json_int_t old = node_port(op);
                if (!old || strcmp(str(op, "name"), str(p, "name"))) continue;
                /* not if another port of the new object uses it */
                int used = 0;
                size_t k;
                json_t *q;
                json_array_foreach(ports, k, q) if (node_port(q) == old) used = 1;
                if (!used) json_object_set_new(p, "nodePort", json_integer(old));
                break;
            }
        }
    }
    if (needs_hc_port(ospec) && needs_hc_port(spec) &&
        !json_integer_value(json_object_get(spec, "healthCheckNodePort")) &&
        json_object_get(ospec, "healthCheckNodePort"))
        json_object_set(spec, "healthCheckNodePort", json_object_get(ospec, "healthCheckNodePort"));
}

static int same_node_ports(const json_t *a, const json_t *b)
{
    const json_t *pa = json_object_get(a, "ports"), *pb = json_object_get(b, "ports");
    if (json_array_size(pa) != json_array_size(pb)) return 0;
    for (size_t i = 0; i < json_array_size(pa); i++)
        if (node_port(json_array_get(pa, i)) != node_port(json_array_get(pb, i))) return 0;
    return 1;
}

/* dropTypeDependentFields: a type change drops what the old type needed and
 * the client left as it was (a value it changed is for validation). */
static void drop_type_dependent(json_t *spec, const json_t *ospec)
{
    if (needs_cluster_ip(ospec) && !needs_cluster_ip(spec)) {
        if (same(spec, ospec, "clusterIP") && same(spec, ospec, "clusterIPs")) {
            json_object_del(spec, "clusterIP");
            json_object_del(spec, "clusterIPs");
        }
        if (same(spec, ospec, "ipFamilies")) json_object_del(spec, "ipFamilies");
        if (same(spec, ospec, "ipFamilyPolicy")) json_object_del(spec, "ipFamilyPolicy");
    }
    if (needs_node_port(ospec) && !needs_node_port(spec) && same_node_ports(spec, ospec)) {
        size_t i;
        json_t *p;
        json_array_foreach(json_object_get(spec, "ports"), i, p) json_object_del(p, "nodePort");
    }
    if (needs_hc_port(ospec) && !needs_hc_port(spec) && same(spec, ospec, "healthCheckNodePort"))
        json_object_del(spec, "healthCheckNodePort");
    if (is_type(ospec, "LoadBalancer") && !is_type(spec, "LoadBalancer") &&
        same(spec, ospec, "allocateLoadBalancerNodePorts"))
        json_object_del(spec, "allocateLoadBalancerNodePorts");
    if (needs_node_port(ospec) && !needs_node_port(spec) &&
        same(spec, ospec, "externalTrafficPolicy"))
        json_object_del(spec, "externalTrafficPolicy");
    if (is_type(spec, "ExternalName") && same(spec, ospec, "internalTrafficPolicy"))
        json_object_del(spec, "internalTrafficPolicy");
}

static void service_prepare_update(json_t *svc, const json_t *old)
{
    json_t *spec = json_object_get(svc, "spec");
    const json_t *ospec = json_object_get(old, "spec");
    if (!json_is_object(spec) || !json_is_object(ospec)) return;
    patch_allocated(spec, ospec);
    normalize_cluster_ips(spec, ospec);
    drop_type_dependent(spec, ospec);
}

static void service_defaults(json_t *svc)
{
    json_t *spec = api_json_child(svc, "spec");
    if (!spec) return;
    set_default(spec, "sessionAffinity", json_string("None"));
    const char *aff = str(spec, "sessionAffinity");
    if (!strcmp(aff, "None")) json_object_del(spec, "sessionAffinityConfig");
    if (!strcmp(aff, "ClientIP")) {
        json_t *cip = json_object_get(json_object_get(spec, "sessionAffinityConfig"), "clientIP");
        if (!json_object_get(cip, "timeoutSeconds"))
            json_object_set_new(spec, "sessionAffinityConfig",
                                json_pack("{s:{s:i}}", "clientIP", "timeoutSeconds", 10800));
    }
    set_default(spec, "type", json_string("ClusterIP"));
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(spec, "ports"), i, p) {
        if (!json_is_object(p)) continue;
        set_default(p, "protocol", json_string("TCP"));
        json_t *port = json_object_get(p, "port"), *tp = json_object_get(p, "targetPort");
        int unset = !tp || (json_is_integer(tp) && !json_integer_value(tp)) ||
                    (json_is_string(tp) && !*json_string_value(tp));
        if (port && unset) json_object_set(p, "targetPort", port);
    }
    int ext_access = needs_node_port(spec) || json_array_size(json_object_get(spec, "externalIPs"));
    if (ext_access && !*str(spec, "externalTrafficPolicy"))
        json_object_set_new(spec, "externalTrafficPolicy", json_string("Cluster"));
    if (!is_type(spec, "ExternalName"))
        set_default(spec, "internalTrafficPolicy", json_string("Cluster"));
    if (is_type(spec, "LoadBalancer")) set_default(spec, "allocateLoadBalancerNodePorts", json_true());
}

/* ---- validation ---- */

/* Go's %#v of a []string, as field errors print it. */
static void go_strings(const json_t *list, char *out, size_t n)
{
    if (!json_array_size(list)) {
        snprintf(out, n, "[]string(nil)");
        return;
    }
    size_t used = (size_t)snprintf(out, n, "[]string{");
    size_t i;
    json_t *v;
    json_array_foreach(list, i, v) {
        if (used >= n) break;
        used += (size_t)snprintf(out + used, n - used, "%s\"%s\"", i ? ", " : "",
                                 json_is_string(v) ? json_string_value(v) : "");
    }
    if (used < n) snprintf(out + used, n - used, "}");
}

static void not_supported(json_t *causes, const char *field, const char *value,
                          const char *supported)
{
    api_cause(causes, "FieldValueNotSupported", field,
              "Unsupported value: \"%s\": supported values: %s", value, supported);
}

/* validation.IsValidPortName (an IANA_SVC_NAME). */
static const char *port_name_invalid(const char *s)
{
    size_t n = strlen(s);
    int letter = 0;
    if (n > 15) return "must be no more than 15 characters";
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c >= 'a' && c <= 'z') letter = 1;
        else if (!(c >= '0' && c <= '9') && c != '-')
            return "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)";
        if (c == '-' && (i == 0 || i == n - 1)) return "must not begin or end with a hyphen";
        if (c == '-' && s[i + 1] == '-') return "must not contain consecutive hyphens";
    }
    return letter ? NULL : "must contain at least one letter (a-z)";
}

static void check_port_num(json_t *causes, const char *field, const json_t *v)
{
    json_int_t n = json_integer_value(v);
    if (!json_is_integer(v) || n < 1 || n > 65535)
        api_cause(causes, "FieldValueInvalid", field,
                  "Invalid value: %lld: must be between 1 and 65535, inclusive", (long long)n);
}

static int valid_ip(const char *s)
{
    uint32_t ip;
    return (s && strchr(s, ':') && strlen(s) >= 2) || !api_alloc_ip_parse(s, &ip);
}

static void validate_ports(const json_t *spec, json_t *causes)
{
    const json_t *ports = json_object_get(spec, "ports");
    size_t n = json_array_size(ports), i;
    const json_t *p;
    json_array_foreach(ports, i, p) {
        char f[80];
        const char *name = str(p, "name");
        snprintf(f, sizeof f, "spec.ports[%zu].name", i);
        if (n > 1 && !*name) api_cause(causes, "FieldValueRequired", f, "Required value");
        else if (*name) {
            const char *bad = api_name_invalid(name, 1);
            if (bad) api_cause(causes, "FieldValueInvalid", f, "Invalid value: \"%s\": %s", name, bad);
            for (size_t j = 0; j < i; j++)
                if (!strcmp(str(json_array_get(ports, j), "name"), name)) {
                    api_cause(causes, "FieldValueDuplicate", f, "Duplicate value: \"%s\"", name);
                    break;
                }
        }
        snprintf(f, sizeof f, "spec.ports[%zu].port", i);
        check_port_num(causes, f, json_object_get(p, "port"));
        const char *proto = str(p, "protocol");
        snprintf(f, sizeof f, "spec.ports[%zu].protocol", i);
        if (!*proto) api_cause(causes, "FieldValueRequired", f, "Required value");
        else if (strcmp(proto, "TCP") && strcmp(proto, "UDP") && strcmp(proto, "SCTP"))
            not_supported(causes, f, proto, "\"SCTP\", \"TCP\", \"UDP\"");
        const json_t *tp = json_object_get(p, "targetPort");
        snprintf(f, sizeof f, "spec.ports[%zu].targetPort", i);
        if (json_is_string(tp)) {
            const char *bad = port_name_invalid(json_string_value(tp));
            if (bad)
                api_cause(causes, "FieldValueInvalid", f, "Invalid value: \"%s\": %s",
                          json_string_value(tp), bad);
        } else if (tp) check_port_num(causes, f, tp);
        json_int_t np = node_port(p);
        snprintf(f, sizeof f, "spec.ports[%zu].nodePort", i);
        if (np && is_type(spec, "ClusterIP"))
            api_cause(causes, "FieldValueForbidden", f,
                      "Forbidden: may not be used when `type` is 'ClusterIP'");
        for (size_t j = 0; np && j < i; j++) {
            const json_t *q = json_array_get(ports, j);
            if (node_port(q) == np && !strcmp(str(q, "protocol"), proto)) {
                api_cause(causes, "FieldValueDuplicate", f, "Duplicate value: %lld", (long long)np);
                break;
            }
        }
        json_int_t port = json_integer_value(json_object_get(p, "port"));
        for (size_t j = 0; j < i; j++) {
            const json_t *q = json_array_get(ports, j);
            if (json_integer_value(json_object_get(q, "port")) == port &&
                !strcmp(str(q, "protocol"), proto)) {
                snprintf(f, sizeof f, "spec.ports[%zu]", i);
                api_cause(causes, "FieldValueDuplicate", f,
                          "Duplicate value: core.ServicePort{Name:\"\", Protocol:\"%s\", "
                          "AppProtocol:(*string)(nil), Port:%lld, "
                          "TargetPort:intstr.IntOrString{Type:0, IntVal:0, StrVal:\"\"}, "
                          "NodePort:0}",
                          proto, (long long)port);
                break;
            }
        }
    }
}

/* ValidateServiceClusterIPsRelatedFields (not for ExternalName). */
static void validate_cluster_ips(const json_t *spec, json_t *causes)
{
    const char *ip = str(spec, "clusterIP");
    const json_t *ips = json_object_get(spec, "clusterIPs");
    char list[512];
    go_strings(ips, list, sizeof list);
    if (*ip && !json_array_size(ips))
        api_cause(causes, "FieldValueRequired", "spec.clusterIPs", "Required value");
    else if (*ip && strcmp(json_string_value(json_array_get(ips, 0)) ?: "", ip))
        api_cause(causes, "FieldValueInvalid", "spec.clusterIPs",
                  "Invalid value: %s: first value must match `clusterIP`", list);
    else if (!*ip && json_array_size(ips))
        api_cause(causes, "FieldValueInvalid", "spec.clusterIPs",
                  "Invalid value: %s: must be empty when `clusterIP` is not specified", list);
    size_t i;
    const json_t *v;
    json_array_foreach(json_object_get(spec, "ipFamilies"), i, v) {
        const char *fam = json_string_value(v) ?: "";
        char f[64];
        snprintf(f, sizeof f, "spec.ipFamilies[%zu]", i);
        if (strcmp(fam, "IPv4") && strcmp(fam, "IPv6")) not_supported(causes, f, fam, "\"IPv4\", \"IPv6\"");
    }
    const char *policy = str(spec, "ipFamilyPolicy");
    if (json_object_get(spec, "ipFamilyPolicy") && strcmp(policy, "SingleStack") &&
        strcmp(policy, "PreferDualStack") && strcmp(policy, "RequireDualStack"))
        not_supported(causes, "spec.ipFamilyPolicy", policy,
                      "\"PreferDualStack\", \"RequireDualStack\", \"SingleStack\"");
    json_array_foreach(ips, i, v) {
        const char *s = json_string_value(v) ?: "";
        char f[64];
        snprintf(f, sizeof f, "spec.clusterIPs[%zu]", i);
        if (i == 0 && !strcmp(s, "None")) {
            if (json_array_size(ips) > 1)
                api_cause(causes, "FieldValueInvalid", "spec.clusterIPs",
                          "Invalid value: %s: 'None' must be the first and only value", list);
            continue;
        }
        if (!valid_ip(s))
            api_cause(causes, "FieldValueInvalid", f,
                      "Invalid value: \"%s\": must be a valid IP address, (e.g. 10.9.8.7 or "
                      "2001:db8::ffff)",
                      s);
    }
    if (json_array_size(ips) > 2)
        api_cause(causes, "FieldValueInvalid", "spec.clusterIPs",
                  "Invalid value: %s: may only hold up to 2 values", list);
}

static void service_validate(const json_t *svc, const json_t *old, json_t *causes)
{
    const json_t *spec = json_object_get(svc, "spec");
    const char *type = str(spec, "type");
    if (!*type) api_cause(causes, "FieldValueRequired", "spec.type", "Required value");
    else if (strcmp(type, "ClusterIP") && strcmp(type, "NodePort") && strcmp(type, "LoadBalancer") &&
             strcmp(type, "ExternalName"))
        not_supported(causes, "spec.type", type,
                      "\"ClusterIP\", \"ExternalName\", \"LoadBalancer\", \"NodePort\"");
    if (!json_array_size(json_object_get(spec, "ports")) && !headless(spec) &&
        !is_type(spec, "ExternalName"))
        api_cause(causes, "FieldValueRequired", "spec.ports", "Required value");
    if (needs_node_port(spec) && headless(spec))
        api_cause(causes, "FieldValueInvalid", "spec.clusterIPs[0]",
                  "Invalid value: \"None\": may not be set to 'None' for %s services", type);
    if (is_type(spec, "ExternalName")) {
        static const char *const forbidden[] = {"clusterIPs", "ipFamilies", "ipFamilyPolicy"};
        for (int k = 0; k < 3; k++) {
            const json_t *v = json_object_get(spec, forbidden[k]);
            char f[32];
            snprintf(f, sizeof f, "spec.%s", forbidden[k]);
            if ((json_is_array(v) && json_array_size(v)) || json_is_string(v) ||
                (k == 0 && *str(spec, "clusterIP")))
                api_cause(causes, "FieldValueForbidden", f,
                          "Forbidden: may not be set for ExternalName services");
        }
        char cname[256];
        snprintf(cname, sizeof cname, "%s", str(spec, "externalName"));
        size_t n = strlen(cname);
        if (n && cname[n - 1] == '.') cname[n - 1] = '\0';
        const char *bad = *cname ? api_name_invalid(cname, 0) : NULL;
        if (!*cname) api_cause(causes, "FieldValueRequired", "spec.externalName", "Required value");
        else if (bad)
            api_cause(causes, "FieldValueInvalid", "spec.externalName",
                      "Invalid value: \"%s\": %s", cname, bad);
    } else {
        validate_cluster_ips(spec, causes);
    }
    validate_ports(spec, causes);
    const char *aff = str(spec, "sessionAffinity");
    if (!*aff) api_cause(causes, "FieldValueRequired", "spec.sessionAffinity", "Required value");
    else if (strcmp(aff, "None") && strcmp(aff, "ClientIP"))
        not_supported(causes, "spec.sessionAffinity", aff, "\"ClientIP\", \"None\"");
    const char *itp = str(spec, "internalTrafficPolicy");
    if (*itp && strcmp(itp, "Cluster") && strcmp(itp, "Local"))
        not_supported(causes, "spec.internalTrafficPolicy", itp, "\"Cluster\", \"Local\"");
    const char *etp = str(spec, "externalTrafficPolicy");
    if (*etp && strcmp(etp, "Cluster") && strcmp(etp, "Local"))
        not_supported(causes, "spec.externalTrafficPolicy", etp, "\"Cluster\", \"Local\"");
    /* validateUpgradeDowngradeClusterIPs: the primary ClusterIP stays. */
    const json_t *ospec = old ? json_object_get(old, "spec") : NULL;
    if (ospec && needs_cluster_ip(spec) && needs_cluster_ip(ospec) &&
        !(headless(spec) && headless(ospec))) {
        const json_t *ips = json_object_get(spec, "clusterIPs"),
                     *oips = json_object_get(ospec, "clusterIPs");
        char list[512];
        go_strings(ips, list, sizeof list);
        if (json_array_size(oips) && !json_array_size(ips))
            api_cause(causes, "FieldValueInvalid", "spec.clusterIPs[0]",
                      "Invalid value: %s: primary clusterIP can not be unset", list);
        else if (json_array_size(oips) &&
                 !api_json_same(json_array_get(oips, 0), json_array_get(ips, 0)))
            api_cause(causes, "FieldValueInvalid", "spec.clusterIPs[0]",
                      "Invalid value: %s: may not change once set", list);
    }
}

/* ---- addresses (the REST storage's beginCreate/beginUpdate/afterDelete) ---- */

/* initIPFamilyFields on a single-stack IPv4 cluster: ipFamilyPolicy and
 * ipFamilies filled in, dual-stack demands refused. Returns -1 after adding
 * causes. */
static int init_families(json_t *spec, const json_t *ospec, json_t *causes)
{
    size_t before = json_array_size(causes);
    if (!json_object_get(spec, "ipFamilyPolicy")) {
        const json_t *sel = json_object_get(spec, "selector");
        const char *policy = "SingleStack";
        if (ospec && *str(ospec, "ipFamilyPolicy")) policy = str(ospec, "ipFamilyPolicy");
        else if (headless(spec) && !json_object_size(sel)) policy = "RequireDualStack";
        json_object_set_new(spec, "ipFamilyPolicy", json_string(policy));
    }
    const char *policy = str(spec, "ipFamilyPolicy");
    json_t *fams = json_object_get(spec, "ipFamilies");
    const json_t *ips = json_object_get(spec, "clusterIPs");
    char list[512];
    go_strings(ips, list, sizeof list);
    if (!strcmp(policy, "SingleStack") && json_array_size(ips) == 2)
        api_cause(causes, "FieldValueInvalid", "spec.ipFamilyPolicy",
                  "Invalid value: \"SingleStack\": must be 'RequireDualStack' or 'PreferDualStack' "
                  "when multiple cluster IPs are specified");
    if (!strcmp(policy, "SingleStack") && json_array_size(fams) == 2)
        api_cause(causes, "FieldValueInvalid", "spec.ipFamilyPolicy",
                  "Invalid value: \"SingleStack\": must be 'RequireDualStack' or 'PreferDualStack' "
                  "when multiple IP families are specified");
    if (!json_is_array(fams)) json_object_set_new(spec, "ipFamilies", fams = json_array());
    size_t i;
    const json_t *v;
    json_array_foreach(ips, i, v) {
        const char *ip = json_string_value(v) ?: "";
        if (!strcmp(ip, "None")) break;
        if (i < json_array_size(fams)) continue;
        char f[64];
        snprintf(f, sizeof f, "spec.clusterIPs[%zu]", i);
        if (strchr(ip, ':'))
            api_cause(causes, "FieldValueInvalid", f,
                      "Invalid value: %s: IPv6 is not configured on this cluster", list);
        else json_array_append_new(fams, json_string("IPv4"));
    }
    if (json_array_size(causes) > before) return -1;
    if (headless(spec) && !json_object_size(json_object_get(spec, "selector"))) {
        if (!json_array_size(fams)) json_array_append_new(fams, json_string("IPv4"));
        if (json_array_size(fams) < 2 && strcmp(policy, "SingleStack"))
            json_array_append_new(fams, json_string(strcmp(json_string_value(json_array_get(fams, 0)) ?: "", "IPv4")
                                                        ? "IPv4" : "IPv6"));
        return 0;
    }
    if (!strcmp(policy, "RequireDualStack"))
        api_cause(causes, "FieldValueInvalid", "spec.ipFamilyPolicy",
                  "Invalid value: \"RequireDualStack\": this cluster is not configured for "
                  "dual-stack services");
    json_array_foreach(fams, i, v) {
        char f[64];
        snprintf(f, sizeof f, "spec.ipFamilies[%zu]", i);
        if (strcmp(json_string_value(v) ?: "", "IPv4"))
            api_cause(causes, "FieldValueInvalid", f,
                      "Invalid value: \"%s\": not configured on this cluster", json_string_value(v) ?: "");
    }
    if (json_array_size(causes) > before) return -1;
    if (!json_array_size(fams)) json_array_append_new(fams, json_string("IPv4"));
    return 0;
}

/* A failure Kubernetes answers as InternalError (500): the message as the
 * only cause, for the caller's Status. */
static int internal(json_t *causes, const char *msg)
{
    json_array_append_new(causes, json_pack("{s:s}", "message", msg));
    return KP_EIO;
}

static int alloc_ip(api_alloc_txn_t *t, api_alloc_t *a, json_t *spec, json_t *causes)
{
    const char *want = str(spec, "clusterIP");
    uint32_t ip = 0, got;
    if (*want && api_alloc_ip_parse(want, &ip)) return 0; /* validated: not reached */
    int rc = api_alloc_txn_ip(t, ip, &got);
    if (rc == KP_ENOSPC) return internal(causes, "failed to allocate a serviceIP: range is full");
    if (rc == KP_EINVAL || rc == KP_EEXIST) {
        char list[512];
        go_strings(json_object_get(spec, "clusterIPs"), list, sizeof list);
        if (rc == KP_EINVAL)
            api_cause(causes, "FieldValueInvalid", "spec.clusterIPs",
                      "Invalid value: %s: failed to allocate IP %s: provided IP is not in the "
                      "valid range. The range of valid IPs is %s",
                      list, want, api_alloc_cidr(a));
        else
            api_cause(causes, "FieldValueInvalid", "spec.clusterIPs",
                      "Invalid value: %s: failed to allocate IP %s: provided IP is already "
                      "allocated",
                      list, want);
        return 0;
    }
    if (rc) return rc;
    char text[16];
    api_alloc_ip_text(got, text);
    json_object_set_new(spec, "clusterIP", json_string(text));
    json_object_set_new(spec, "clusterIPs", json_pack("[s]", text));
    return 0;
}

static int take_port(api_alloc_txn_t *t, api_alloc_t *a, int want, size_t index, int *out,
                     json_t *causes)
{
    int rc = api_alloc_txn_port(t, want, out);
    if (!rc) return 0;
    if (rc == KP_ENOSPC) return internal(causes, "failed to allocate a nodePort: range is full");
    if (rc == KP_ETOOLARGE) return internal(causes, "failed to allocate a nodePort: too many ports");
    if (rc != KP_EINVAL && rc != KP_EEXIST) return rc;
    char f[64];
    snprintf(f, sizeof f, "spec.ports[%zu].nodePort", index);
    if (rc == KP_EINVAL)
        api_cause(causes, "FieldValueInvalid", f,
                  "Invalid value: %d: provided port is not in the valid range. The range of "
                  "valid ports is %s",
                  want, api_alloc_ports(a));
    else
        api_cause(causes, "FieldValueInvalid", f,
                  "Invalid value: %d: provided port is already allocated", want);
    return 0;
}

static int should_alloc_ports(const json_t *spec)
{
    return is_type(spec, "NodePort") ||
           (is_type(spec, "LoadBalancer") &&
            !json_is_false(json_object_get(spec, "allocateLoadBalancerNodePorts")));
}

static int has_port(const json_t *spec, json_int_t np)
{
    size_t i;
    const json_t *p;
    json_array_foreach(json_object_get(spec, "ports"), i, p) if (node_port(p) == np) return 1;
    return np && json_integer_value(json_object_get(spec, "healthCheckNodePort")) == np;
}

/* initNodePorts / updateNodePorts: ports sharing a port number share a
 * NodePort; requested ones are taken, missing ones allocated; on update the
 * old ports kept need nothing and the ones dropped are given back. */
static int alloc_ports(api_alloc_txn_t *t, api_alloc_t *a, json_t *spec, const json_t *ospec,
                       json_t *causes)
{
    size_t before = json_array_size(causes);
    json_t *ports = json_object_get(spec, "ports");
    if (ospec && needs_node_port(ospec) && !needs_node_port(spec)) {
        size_t i;
        const json_t *p;
        json_array_foreach(json_object_get(ospec, "ports"), i, p)
            if (node_port(p)) api_alloc_txn_give_port(t, (int)node_port(p));
    }
    if (needs_node_port(spec)) {
        size_t i;
        json_t *p;
        json_array_foreach(ports, i, p) {
            json_int_t np = node_port(p);
            if (!np && !should_alloc_ports(spec)) continue;
            json_int_t shared = 0;
            for (size_t j = 0; j < i && !ospec; j++) {
                const json_t *q = json_array_get(ports, j);
                if (json_integer_value(json_object_get(q, "port")) ==
                    json_integer_value(json_object_get(p, "port")))
                    shared = node_port(q);
            }
            if (!np && !ospec) /* findRequestedNodePort: a later port may name one */
                for (size_t j = i + 1; j < json_array_size(ports) && !shared; j++) {
                    const json_t *q = json_array_get(ports, j);
                    if (json_integer_value(json_object_get(q, "port")) ==
                        json_integer_value(json_object_get(p, "port")))
                        np = node_port(q);
                }
            if (shared && (!np || np == shared)) {
                json_object_set_new(p, "nodePort", json_integer(shared));
                continue;
            }
            if (np && ospec && has_port(ospec, np)) continue;
            int got = 0;
            int rc = take_port(t, a, (int)np, i, &got, causes);
            if (rc) return rc;
            if (json_array_size(causes) > before) return 0;
            json_object_set_new(p, "nodePort", json_integer(got));
        }
        if (ospec) {
            json_array_foreach(json_object_get(ospec, "ports"), i, p) {
                json_int_t np = node_port(p);
                if (np && !has_port(spec, np)) api_alloc_txn_give_port(t, (int)np);
            }
        }
    }
    /* healthCheckNodePort: LoadBalancer with externalTrafficPolicy Local. */
    int need = needs_hc_port(spec), had = ospec && needs_hc_port(ospec);
    json_int_t hc = json_integer_value(json_object_get(spec, "healthCheckNodePort"));
    json_int_t ohc = ospec ? json_integer_value(json_object_get(ospec, "healthCheckNodePort")) : 0;
    if (need && (!had || hc != ohc)) {
        int got = 0, rc = api_alloc_txn_port(t, (int)hc, &got);
        if (rc == KP_ENOSPC || rc == KP_EEXIST || rc == KP_EINVAL) {
            char msg[256];
            snprintf(msg, sizeof msg, "failed to allocate %sHealthCheck NodePort %lld: %s",
                     hc ? "requested " : "a ", (long long)hc,
                     rc == KP_ENOSPC ? "range is full" : rc == KP_EEXIST
                         ? "provided port is already allocated"
                         : "provided port is not in the valid range");
            return internal(causes, msg);
        }
        if (rc) return rc;
        json_object_set_new(spec, "healthCheckNodePort", json_integer(got));
    }
    if (had && ohc && (!need || hc != ohc)) api_alloc_txn_give_port(t, (int)ohc);
    return 0;
}

static int service_write_begin(const api_ctx_t *c, json_t *obj, const json_t *old, void **txn,
                               json_t *causes)
{
    *txn = NULL;
    api_alloc_t *a = c->srv ? c->srv->alloc : NULL;
    json_t *spec = json_object_get(obj, "spec");
    const json_t *ospec = old ? json_object_get(old, "spec") : NULL;
    if (!a || !json_is_object(spec)) return 0;
    size_t before = json_array_size(causes);
    if (needs_cluster_ip(spec) && init_families(spec, ospec, causes)) return 0;
    const json_t *meta = json_object_get(obj, "metadata");
    api_alloc_txn_t *t;
    int rc = api_alloc_txn_begin(a, c->dry_run, str(meta, "namespace"), str(meta, "name"), &t);
    if (rc) return rc;
    /* ClusterIP: a new Service, or ExternalName becoming another type
     * allocates; the other way gives it back; headless has none. */
    if (needs_cluster_ip(spec) && !headless(spec) && (!ospec || !needs_cluster_ip(ospec)))
        rc = alloc_ip(t, a, spec, causes);
    uint32_t oip;
    if (!rc && ospec && needs_cluster_ip(ospec) && !needs_cluster_ip(spec) &&
        !api_alloc_ip_parse(str(ospec, "clusterIP"), &oip))
        api_alloc_txn_give_ip(t, oip);
    if (!rc && json_array_size(causes) == before) rc = alloc_ports(t, a, spec, ospec, causes);
    if (rc || json_array_size(causes) > before) {
        api_alloc_txn_end(t, 0);
        return rc;
    }
    *txn = t;
    return 0;
}

static void service_write_end(const api_ctx_t *c, void *txn, int committed)
{
    (void)c;
    api_alloc_txn_end(txn, committed);
}

static void service_deleted(const api_ctx_t *c, const json_t *obj)
{
    api_alloc_t *a = c->srv ? c->srv->alloc : NULL;
    const json_t *spec = json_object_get(obj, "spec"), *meta = json_object_get(obj, "metadata");
    if (!a || c->dry_run) return;
    uint32_t ip = 0;
    if (needs_cluster_ip(spec) && api_alloc_ip_parse(str(spec, "clusterIP"), &ip)) ip = 0;
    int ports[API_ALLOC_MAX_PORTS];
    size_t n = 0, i;
    const json_t *p;
    json_array_foreach(json_object_get(spec, "ports"), i, p)
        if (node_port(p) && n < API_ALLOC_MAX_PORTS) ports[n++] = (int)node_port(p);
    json_int_t hc = json_integer_value(json_object_get(spec, "healthCheckNodePort"));
    if (hc && n < API_ALLOC_MAX_PORTS) ports[n++] = (int)hc;
    api_alloc_release(a, str(meta, "namespace"), str(meta, "name"), ip, ports, n);
}

const api_strategy_t api_strategy_service = {
    .name_rule = API_NAME_LABEL_1035,
    .delete_returns_object = 1, /* ReturnDeletedObject */
    .prepare_create = service_prepare_create,
    .prepare_update = service_prepare_update,
    .defaults = service_defaults,
    .validate = service_validate,
    .write_begin = service_write_begin,
    .write_end = service_write_end,
    .deleted = service_deleted,
};
