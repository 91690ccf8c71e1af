/*
 * svc_bootstrap.c -- what Services need from the server at start: the
 * allocators (alloc.h), the repair pass before the first request, the
 * periodic repair, and the `kubernetes` Service in `default` that Kubernetes'
 * control plane keeps (pkg/controlplane/controller/kubernetesservice): type
 * ClusterIP at the first address of the range, port 443 "https" to this
 * server's port, and its Endpoints (labelled skip-mirror) and EndpointSlice
 * (labelled with the service name, as the EndpointsAdapter writes it) naming
 * the address the server listens on. Reconciled at every start: a changed
 * port or address is written over what is stored.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apiserver/kinds/alloc.h"
#include "apiserver/http/http.h"
#include "apiserver/kinds/kinds.h"
#include "lib/err.h"
#include "lib/log.h"
#include "store/store.h"

int apiserver_check_service_ranges(const char *cidr, const char *ports, char *err, size_t errlen)
{
    uint32_t net;
    int bits, base, size;
    char why[128];
    if (api_alloc_parse_cidr(cidr ? cidr : API_ALLOC_DEFAULT_CIDR, &net, &bits, why, sizeof why)) {
        snprintf(err, errlen, "--service-cluster-ip-range %s: %s", cidr, why);
        return KP_EINVAL;
    }
    if (api_alloc_parse_ports(ports ? ports : API_ALLOC_DEFAULT_PORTS, &base, &size, why,
                              sizeof why)) {
        snprintf(err, errlen, "--service-node-port-range %s: %s", ports, why);
        return KP_EINVAL;
    }
    return 0;
}

/* Create key with obj, or replace what is there when its `keep` members
 * differ (metadata, uid and creationTimestamp stay). */
static int ensure(store_t *st, const char *key, json_t *obj, const char *const *keep)
{
    store_kv_t *kv = NULL;
    int rc = store_get(st, key, 0, &kv);
    if (rc == KP_ENOTFOUND) {
        char uid[37], now[32];
        if (api_new_uid(uid)) return KP_EIO;
        api_now_rfc3339(now);
        json_t *meta = json_object_get(obj, "metadata");
        json_object_set_new(meta, "uid", json_string(uid));
        json_object_set_new(meta, "creationTimestamp", json_string(now));
        char *text = json_dumps(obj, JSON_COMPACT);
        rc = text ? store_create(st, key, text, strlen(text), NULL) : KP_ENOMEM;
        free(text);
        return rc == KP_EEXIST ? 0 : rc;
    }
    if (rc) return rc;
    json_t *cur = json_loadb(kv->value, kv->value_len, 0, NULL);
    int64_t rev = kv->mod_rev;
    free(kv);
    if (!cur) return KP_ECORRUPT;
    int differ = 0;
    for (const char *const *k = keep; *k; k++) {
        if (!api_json_same(json_object_get(cur, *k), json_object_get(obj, *k))) {
            json_object_set(cur, *k, json_object_get(obj, *k));
            differ = 1;
        }
    }
    /* The labels Kubernetes sets stay set. */
    json_t *labels = json_object_get(json_object_get(obj, "metadata"), "labels");
    json_t *clabels = api_json_child(api_json_child(cur, "metadata"), "labels");
    const char *lk;
    json_t *lv;
    json_object_foreach(labels, lk, lv) {
        if (!api_json_same(json_object_get(clabels, lk), lv)) {
            json_object_set(clabels, lk, lv);
            differ = 1;
        }
    }
    if (differ) {
        char *text = json_dumps(cur, JSON_COMPACT);
        rc = text ? store_update(st, key, text, strlen(text), rev, NULL) : KP_ENOMEM;
        free(text);
    }
    json_decref(cur);
    return rc;
}

/* The address the Endpoints name: the listen address, loopback for an
 * unspecified one (as the kubeconfig kplane writes). */
static void endpoint_ip(const apiserver_t *s, char out[16])
{
    struct sockaddr_in sa;
    snprintf(out, 16, "127.0.0.1");
    if (apiserver_listen_addr(s->cfg.listen ? s->cfg.listen : "127.0.0.1:6443", &sa)) return;
    if (sa.sin_addr.s_addr != htonl(INADDR_ANY)) api_alloc_ip_text(ntohl(sa.sin_addr.s_addr), out);
}

static int ensure_kubernetes_service(apiserver_t *s)
{
    store_t *st = s->cfg.store;
    char ip[16], addr[16];
    api_alloc_ip_text(api_alloc_first_ip(s->alloc), ip);
    endpoint_ip(s, addr);
    /* A ClusterIP once given stays (it is immutable), also when the range
     * changed: Kubernetes' controller reconciles only the ports and type. */
    store_kv_t *kv = NULL;
    if (!store_get(st, "/registry/core/services/default/kubernetes", 0, &kv)) {
        json_t *cur = json_loadb(kv->value, kv->value_len, 0, NULL);
        const char *have = api_json_str(json_object_get(cur, "spec"), "clusterIP");
        if (*have && strlen(have) < sizeof ip) snprintf(ip, sizeof ip, "%s", have);
        json_decref(cur);
        free(kv);
    }
    /* The Service through the allocator's record, as any Service's. */
    static const char *const svc_keep[] = {"spec", NULL};
    json_t *svc = json_pack(
        "{s:s, s:s, s:{s:s, s:s, s:{s:s, s:s}}, s:{s:[{s:s, s:s, s:i, s:i}], s:s, s:[s], s:s, "
        "s:s, s:[s], s:s, s:s}, s:{s:{}}}",
        "kind", "Service", "apiVersion", "v1", "metadata", "name", "kubernetes", "namespace",
        "default", "labels", "component", "apiserver", "provider", "kubernetes", "spec", "ports",
        "name", "https", "protocol", "TCP", "port", 443, "targetPort", s->port, "clusterIP", ip,
        "clusterIPs", ip, "type", "ClusterIP", "sessionAffinity", "None", "ipFamilies", "IPv4",
        "ipFamilyPolicy", "SingleStack", "internalTrafficPolicy", "Cluster", "status",
        "loadBalancer");
    uint32_t want = 0;
    int rc = svc ? api_alloc_ip_parse(ip, &want) : KP_ENOMEM;
    if (!rc) {
        api_alloc_txn_t *t = NULL;
        uint32_t got;
        rc = api_alloc_txn_begin(s->alloc, 0, "default", "kubernetes", &t);
        /* Out of the range (it changed): kept, and logged by the repair. */
        int ipc = rc                                   ? rc
                  : !api_alloc_ip_in_range(s->alloc, want) ? KP_EEXIST
                                                       : api_alloc_txn_ip(t, want, &got);
        rc = rc ? rc : ensure(st, "/registry/core/services/default/kubernetes", svc, svc_keep);
        /* Taken already (a restart): its record stands; keep it either way. */
        api_alloc_txn_end(t, !rc || ipc == KP_EEXIST);
    }
    json_decref(svc);
    if (rc) return rc;
    static const char *const ep_keep[] = {"subsets", NULL};
    json_t *ep = json_pack("{s:s, s:s, s:{s:s, s:s, s:{s:s}}, s:[{s:[{s:s}], s:[{s:s, s:i, s:s}]}]}",
                           "kind", "Endpoints", "apiVersion", "v1", "metadata", "name",
                           "kubernetes", "namespace", "default", "labels",
                           "endpointslice.kubernetes.io/skip-mirror", "true", "subsets",
                           "addresses", "ip", addr, "ports", "name", "https", "port", s->port,
                           "protocol", "TCP");
    rc = ep ? ensure(st, "/registry/core/endpoints/default/kubernetes", ep, ep_keep) : KP_ENOMEM;
    json_decref(ep);
    if (rc) return rc;
    static const char *const es_keep[] = {"addressType", "endpoints", "ports", NULL};
    json_t *es = json_pack(
        "{s:s, s:s, s:{s:s, s:s, s:{s:s}}, s:s, s:[{s:[s], s:{s:b}}], s:[{s:s, s:s, s:i}]}",
        "kind", "EndpointSlice", "apiVersion", "discovery.k8s.io/v1", "metadata", "name",
        "kubernetes", "namespace", "default", "labels", "kubernetes.io/service-name",
        "kubernetes", "addressType", "IPv4", "endpoints", "addresses", addr, "conditions",
        "ready", 1, "ports", "name", "https", "protocol", "TCP", "port", s->port);
    rc = es ? ensure(st, "/registry/discovery.k8s.io/endpointslices/default/kubernetes", es,
                     es_keep)
            : KP_ENOMEM;
    json_decref(es);
    return rc;
}

int api_services_start(apiserver_t *s)
{
    int rc = api_alloc_open(s->cfg.store, s->cfg.service_cluster_ip_range,
                            s->cfg.service_node_port_range, &s->alloc);
    if (rc) return rc;
    api_alloc_repair_stats_t st;
    if ((rc = api_alloc_repair(s->alloc, 1, &st))) {
        log_error("apiserver", "repairing Service addresses: %s", err_str(rc));
        return rc;
    }
    if ((rc = ensure_kubernetes_service(s))) {
        log_error("apiserver", "the kubernetes Service: %s", err_str(rc));
        return rc;
    }
    return api_alloc_start(s->alloc, s->cfg.service_repair_interval_s);
}

void api_services_stop(apiserver_t *s)
{
    api_alloc_close(s->alloc);
    s->alloc = NULL;
}
