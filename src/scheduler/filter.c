/*
 * filter.c -- the scheduler's pure decisions: what a pod asks for, what a
 * node offers, whether the one fits the other, how well, and how to say why
 * not.
 *
 * Invariant: every function here is a pure function of its arguments (no
 * locks, no API, no clock), reads the JSON it is given without modifying
 * it, and answers as Kubernetes' default scheduler plugins do for the same
 * objects (NodeUnschedulable, TaintToleration, NodeAffinity, NodePorts,
 * NodeResourcesFit with LeastAllocated scoring, FitError's message). Where
 * kplane differs it says so: a node whose Ready condition is not True is
 * treated as carrying the NoSchedule taint the node lifecycle controller
 * would give it, so the verdict does not depend on whether that controller
 * has run yet.
 *
 * Owns: the arrays it allocates into sched_pod_t, sched_node_info_t,
 * sched_usage_t and sched_hist_t (freed by their _clear/_free).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/err.h"
#include "lib/nodematch.h"
#include "lib/quantity.h"
#include "scheduler/sched_int.h"

/* ---- pods ---- */

static const char *str_or(const json_t *o, const char *k, const char *dflt)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : dflt;
}

enum { RES_CPU, RES_MEM, RES_EPH, NRES };
static const char *const res_names[NRES] = {"cpu", "memory", "ephemeral-storage"};

/* One container's requests, and its requests for scoring (nz: request-less
 * cpu and memory at the defaults). A resource with a limit but no request
 * requests its limit, as the API server's defaulting has it. */
static int container_req(const json_t *c, int64_t v[NRES], int64_t nz[2])
{
    const json_t *res = json_object_get(c, "resources");
    const json_t *req = json_object_get(res, "requests");
    const json_t *lim = json_object_get(res, "limits");
    int rc = 0;
    for (int i = 0; i < NRES; i++) {
        const json_t *q = json_object_get(req, res_names[i]);
        if (!q) q = json_object_get(lim, res_names[i]);
        v[i] = 0;
        if (q && kp_quantity_json(q, i == RES_CPU, &v[i]) < 0) {
            v[i] = 0;
            rc = KP_EINVAL;
        }
        if (i < 2) nz[i] = q ? v[i] : i == RES_CPU ? SCHED_DEFAULT_MILLI_CPU : SCHED_DEFAULT_MEMORY;
    }
    return rc;
}

static int64_t max64(int64_t a, int64_t b)
{
    return a > b ? a : b;
}

static int add_ports(sched_pod_t *p, const json_t *containers, int host_network)
{
    size_t i, j;
    const json_t *c, *port;
    json_array_foreach(containers, i, c) {
        json_array_foreach(json_object_get(c, "ports"), j, port) {
            json_int_t hp = json_integer_value(json_object_get(port, "hostPort"));
            if (hp <= 0 && host_network)
                hp = json_integer_value(json_object_get(port, "containerPort"));
            if (hp <= 0 || hp > 65535) continue;
            sched_port_t *n = realloc(p->ports, (p->nports + 1) * sizeof *n);
            if (!n) return KP_ENOMEM;
            p->ports = n;
            sched_port_t *sp = &p->ports[p->nports++];
            memset(sp, 0, sizeof *sp);
            sp->port = (int)hp;
            snprintf(sp->proto, sizeof sp->proto, "%s", str_or(port, "protocol", "TCP"));
            const char *ip = str_or(port, "hostIP", "");
            snprintf(sp->ip, sizeof sp->ip, "%s", *ip ? ip : "0.0.0.0");
        }
    }
    return 0;
}

int sched_pod_parse(const json_t *pod, sched_pod_t *out)
{
    memset(out, 0, sizeof *out);
    out->obj = pod;
    const json_t *spec = json_object_get(pod, "spec");
    int bad = 0;
    int64_t sum[NRES] = {0}, nzsum[2] = {0};
    size_t i;
    const json_t *c;
    json_array_foreach(json_object_get(spec, "containers"), i, c) {
        int64_t v[NRES], nz[2];
        if (container_req(c, v, nz) < 0) bad = 1;
        for (int r = 0; r < NRES; r++)
            sum[r] += v[r];
        for (int r = 0; r < 2; r++)
            nzsum[r] += nz[r];
    }
    /* Init containers run one at a time before the others, next to the
     * sidecars (restartPolicy Always) started before them; sidecars keep
     * running with the containers. */
    int64_t side[NRES] = {0}, nzside[2] = {0}, init[NRES] = {0}, nzinit[2] = {0};
    json_array_foreach(json_object_get(spec, "initContainers"), i, c) {
        int64_t v[NRES], nz[2];
        if (container_req(c, v, nz) < 0) bad = 1;
        int sidecar = !strcmp(str_or(c, "restartPolicy", ""), "Always");
        for (int r = 0; r < NRES; r++) {
            if (sidecar)
                side[r] += v[r];
            else
                init[r] = max64(init[r], v[r] + side[r]);
        }
        for (int r = 0; r < 2; r++) {
            if (sidecar)
                nzside[r] += nz[r];
            else
                nzinit[r] = max64(nzinit[r], nz[r] + nzside[r]);
        }
    }
    int64_t req[NRES], nzreq[2];
    for (int r = 0; r < NRES; r++)
        req[r] = max64(sum[r] + side[r], init[r]);
    for (int r = 0; r < 2; r++)
        nzreq[r] = max64(nzsum[r] + nzside[r], nzinit[r]);
    const json_t *overhead = json_object_get(spec, "overhead");
    for (int r = 0; r < NRES; r++) {
        const json_t *q = json_object_get(overhead, res_names[r]);
        int64_t v = 0;
        if (q && kp_quantity_json(q, r == RES_CPU, &v) < 0) bad = 1;
        req[r] += v;
        if (r < 2) nzreq[r] += v;
    }
    out->req.cpu = req[RES_CPU];
    out->req.mem = req[RES_MEM];
    out->req.eph = req[RES_EPH];
    out->req.pods = 1;
    out->nz_cpu = nzreq[0];
    out->nz_mem = nzreq[1];

    int hn = json_is_true(json_object_get(spec, "hostNetwork"));
    if (add_ports(out, json_object_get(spec, "initContainers"), hn) < 0 ||
        add_ports(out, json_object_get(spec, "containers"), hn) < 0) {
        sched_pod_clear(out);
        return KP_ENOMEM;
    }
    out->tolerations = json_object_get(spec, "tolerations");
    out->node_selector = json_object_get(spec, "nodeSelector");
    out->required =
        json_object_get(json_object_get(json_object_get(spec, "affinity"), "nodeAffinity"),
                        "requiredDuringSchedulingIgnoredDuringExecution");
    if (!json_is_object(out->required)) out->required = NULL;
    if (!json_object_size(out->node_selector)) out->node_selector = NULL;
    const json_t *ref;
    json_array_foreach(json_object_get(json_object_get(pod, "metadata"), "ownerReferences"), i,
                       ref) {
        if (json_is_true(json_object_get(ref, "controller"))) {
            out->owner = json_string_value(json_object_get(ref, "uid"));
            break;
        }
    }
    return bad ? KP_EINVAL : 0;
}

void sched_pod_clear(sched_pod_t *p)
{
    free(p->ports);
    p->ports = NULL;
    p->nports = 0;
}

/* ---- nodes ---- */

static int64_t node_res(const json_t *status, const char *name, int milli)
{
    const json_t *q = json_object_get(json_object_get(status, "allocatable"), name);
    if (!q) q = json_object_get(json_object_get(status, "capacity"), name);
    int64_t v = 0;
    if (q && kp_quantity_json(q, milli, &v) < 0) v = 0;
    return v;
}

int sched_node_parse(const json_t *node, sched_node_info_t *out)
{
    memset(out, 0, sizeof *out);
    const json_t *spec = json_object_get(node, "spec");
    const json_t *status = json_object_get(node, "status");
    out->ready = -1;
    out->labels = json_object_get(json_object_get(node, "metadata"), "labels");
    out->name = str_or(json_object_get(node, "metadata"), "name", "");
    size_t i;
    const json_t *c;
    json_array_foreach(json_object_get(status, "conditions"), i, c) {
        if (strcmp(str_or(c, "type", ""), "Ready")) continue;
        const char *st = str_or(c, "status", "");
        out->ready = !strcmp(st, "True") ? 1 : !strcmp(st, "False") ? 0 : -1;
    }
    out->unschedulable = json_is_true(json_object_get(spec, "unschedulable"));
    out->alloc.cpu = node_res(status, "cpu", 1);
    out->alloc.mem = node_res(status, "memory", 0);
    out->alloc.eph = node_res(status, "ephemeral-storage", 0);
    out->alloc.pods = node_res(status, "pods", 0);
    const json_t *taints = json_object_get(spec, "taints");
    size_t n = json_array_size(taints);
    if (n) {
        out->taints = calloc(n, sizeof *out->taints);
        if (!out->taints) return KP_ENOMEM;
    }
    const json_t *t;
    json_array_foreach(taints, i, t) {
        const char *eff = str_or(t, "effect", "");
        if (strcmp(eff, "NoSchedule") && strcmp(eff, "NoExecute")) continue;
        sched_taint_t *st = &out->taints[out->ntaints++];
        st->key = strdup(str_or(t, "key", ""));
        st->value = strdup(str_or(t, "value", ""));
        st->effect = strdup(eff);
        if (!st->key || !st->value || !st->effect) {
            sched_node_info_clear(out);
            return KP_ENOMEM;
        }
    }
    return 0;
}

void sched_node_info_clear(sched_node_info_t *ni)
{
    for (size_t i = 0; i < ni->ntaints; i++) {
        free(ni->taints[i].key);
        free(ni->taints[i].value);
        free(ni->taints[i].effect);
    }
    free(ni->taints);
    ni->taints = NULL;
    ni->ntaints = 0;
}

int sched_node_info_same(const sched_node_info_t *a, const sched_node_info_t *b)
{
    if (a->ready != b->ready || a->unschedulable != b->unschedulable ||
        memcmp(&a->alloc, &b->alloc, sizeof a->alloc) || a->ntaints != b->ntaints)
        return 0;
    for (size_t i = 0; i < a->ntaints; i++) {
        if (strcmp(a->taints[i].key, b->taints[i].key) ||
            strcmp(a->taints[i].value, b->taints[i].value) ||
            strcmp(a->taints[i].effect, b->taints[i].effect))
            return 0;
    }
    return 1;
}

/* ---- usage ---- */

int sched_usage_add(sched_usage_t *u, const sched_res_t *req, int64_t nz_cpu, int64_t nz_mem,
                    const sched_port_t *ports, size_t nports)
{
    if (u->nports + nports > u->cap) {
        size_t cap = u->cap ? u->cap * 2 : 4;
        while (cap < u->nports + nports)
            cap *= 2;
        sched_port_t *n = realloc(u->ports, cap * sizeof *n);
        if (!n) return KP_ENOMEM;
        u->ports = n;
        u->cap = cap;
    }
    if (nports) memcpy(u->ports + u->nports, ports, nports * sizeof *ports);
    u->nports += nports;
    u->req.cpu += req->cpu;
    u->req.mem += req->mem;
    u->req.eph += req->eph;
    u->req.pods += req->pods;
    u->nz_cpu += nz_cpu;
    u->nz_mem += nz_mem;
    return 0;
}

void sched_usage_sub(sched_usage_t *u, const sched_res_t *req, int64_t nz_cpu, int64_t nz_mem,
                     const sched_port_t *ports, size_t nports)
{
    for (size_t i = 0; i < nports; i++) {
        for (size_t j = 0; j < u->nports; j++) {
            if (!memcmp(&u->ports[j], &ports[i], sizeof ports[i])) {
                u->ports[j] = u->ports[--u->nports];
                break;
            }
        }
    }
    u->req.cpu -= req->cpu;
    u->req.mem -= req->mem;
    u->req.eph -= req->eph;
    u->req.pods -= req->pods;
    u->nz_cpu -= nz_cpu;
    u->nz_mem -= nz_mem;
}

void sched_usage_clear(sched_usage_t *u)
{
    free(u->ports);
    memset(u, 0, sizeof *u);
}

/* ---- filters ---- */

int sched_ports_conflict(const sched_port_t *used, size_t nused, const sched_port_t *want,
                         size_t nwant)
{
    for (size_t i = 0; i < nwant; i++) {
        for (size_t j = 0; j < nused; j++) {
            if (used[j].port != want[i].port || strcmp(used[j].proto, want[i].proto)) continue;
            if (!strcmp(used[j].ip, want[i].ip) || !strcmp(used[j].ip, "0.0.0.0") ||
                !strcmp(want[i].ip, "0.0.0.0"))
                return 1;
        }
    }
    return 0;
}

#define TAINT_UNSCHEDULABLE "node.kubernetes.io/unschedulable"
#define TAINT_NOT_READY     "node.kubernetes.io/not-ready"
#define TAINT_UNREACHABLE   "node.kubernetes.io/unreachable"

unsigned sched_filter(const sched_pod_t *pod, const sched_node_info_t *ni, const sched_usage_t *u,
                      const char **tkey, const char **tval)
{
    const json_t *tol = pod->tolerations;
    if (ni->unschedulable && !kp_tolerates(tol, TAINT_UNSCHEDULABLE, "", "NoSchedule"))
        return SCHED_R_UNSCHEDULABLE;
    for (size_t i = 0; i < ni->ntaints; i++) {
        const sched_taint_t *t = &ni->taints[i];
        if (!kp_tolerates(tol, t->key, t->value, t->effect)) {
            *tkey = t->key;
            *tval = t->value;
            return SCHED_R_TAINT;
        }
    }
    if (ni->ready != 1) {
        const char *key = ni->ready == 0 ? TAINT_NOT_READY : TAINT_UNREACHABLE;
        if (!kp_tolerates(tol, key, "", "NoSchedule")) {
            *tkey = key;
            *tval = "";
            return SCHED_R_TAINT;
        }
    }
    if ((pod->node_selector || pod->required) &&
        !kp_node_selects(pod->node_selector, pod->required, ni->labels, ni->name))
        return SCHED_R_AFFINITY;
    if (pod->nports && sched_ports_conflict(u->ports, u->nports, pod->ports, pod->nports))
        return SCHED_R_PORTS;
    unsigned bits = 0;
    const sched_res_t *a = &ni->alloc, *r = &pod->req;
    if (u->req.pods + 1 > a->pods) bits |= SCHED_R_PODS;
    if (r->cpu > 0 && r->cpu > a->cpu - u->req.cpu) bits |= SCHED_R_CPU;
    if (r->mem > 0 && r->mem > a->mem - u->req.mem) bits |= SCHED_R_MEM;
    if (r->eph > 0 && r->eph > a->eph - u->req.eph) bits |= SCHED_R_EPH;
    return bits;
}

/* ---- scores ---- */

static int64_t least_one(int64_t requested, int64_t cap)
{
    if (cap <= 0 || requested > cap) return 0;
    int64_t free_ = cap - requested;
    if (free_ > INT64_MAX / 100) {
        free_ /= 1000;
        cap /= 1000;
    }
    return free_ * 100 / cap;
}

int sched_score_least(const sched_pod_t *pod, const sched_node_info_t *ni, const sched_usage_t *u)
{
    int64_t cpu = least_one(u->nz_cpu + pod->nz_cpu, ni->alloc.cpu);
    int64_t mem = least_one(u->nz_mem + pod->nz_mem, ni->alloc.mem);
    return (int)((cpu + mem) / 2);
}

int sched_score_spread(int64_t count, int64_t max)
{
    if (max <= 0) return 100;
    if (count > max) count = max;
    return (int)(100 * (max - count) / max);
}

/* ---- the failure message ---- */

int sched_hist_add(sched_hist_t *h, const char *reason)
{
    for (size_t i = 0; i < h->n; i++) {
        if (!strcmp(h->v[i].reason, reason)) {
            h->v[i].count++;
            return 0;
        }
    }
    if (h->n == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 8;
        struct sched_hist_entry *n = realloc(h->v, cap * sizeof *n);
        if (!n) return KP_ENOMEM;
        h->v = n;
        h->cap = cap;
    }
    char *r = strdup(reason);
    if (!r) return KP_ENOMEM;
    h->v[h->n].reason = r;
    h->v[h->n].count = 1;
    h->n++;
    return 0;
}

int sched_hist_add_bits(sched_hist_t *h, unsigned bits, const char *tkey, const char *tval)
{
    static const struct {
        unsigned bit;
        const char *reason;
    } plain[] = {
        {SCHED_R_UNSCHEDULABLE, "node(s) were unschedulable"},
        {SCHED_R_AFFINITY, "node(s) didn't match Pod's node affinity/selector"},
        {SCHED_R_PORTS, "node(s) didn't have free ports for the requested pod ports"},
        {SCHED_R_PODS, "Too many pods"},
        {SCHED_R_CPU, "Insufficient cpu"},
        {SCHED_R_MEM, "Insufficient memory"},
        {SCHED_R_EPH, "Insufficient ephemeral-storage"},
    };
    int rc;
    if (bits & SCHED_R_TAINT) {
        char buf[1024];
        snprintf(buf, sizeof buf, "node(s) had untolerated taint {%s: %s}", tkey ? tkey : "",
                 tval ? tval : "");
        if ((rc = sched_hist_add(h, buf)) < 0) return rc;
    }
    for (size_t i = 0; i < sizeof plain / sizeof plain[0]; i++) {
        if ((bits & plain[i].bit) && (rc = sched_hist_add(h, plain[i].reason)) < 0) return rc;
    }
    return 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int sched_hist_message(const sched_hist_t *h, size_t nnodes, char **out)
{
    *out = NULL;
    if (nnodes == 0) {
        *out = strdup("no nodes available to schedule pods");
        return *out ? 0 : KP_ENOMEM;
    }
    int rc = KP_ENOMEM;
    char **parts = calloc(h->n ? h->n : 1, sizeof *parts);
    char *msg = NULL;
    if (!parts) goto fail;
    size_t len = 64;
    for (size_t i = 0; i < h->n; i++) {
        if (asprintf(&parts[i], "%lld %s", (long long)h->v[i].count, h->v[i].reason) < 0) {
            parts[i] = NULL;
            goto fail;
        }
        len += strlen(parts[i]) + 2;
    }
    qsort(parts, h->n, sizeof *parts, cmp_str);
    msg = malloc(len);
    if (!msg) goto fail;
    size_t off = (size_t)snprintf(msg, len, "0/%zu nodes are available:", nnodes);
    for (size_t i = 0; i < h->n; i++)
        off += (size_t)snprintf(msg + off, len - off, "%s%s", i ? ", " : " ", parts[i]);
    snprintf(msg + off, len - off, ".");
    *out = msg;
    msg = NULL;
    rc = 0;
fail:
    for (size_t i = 0; parts && i < h->n; i++)
        free(parts[i]);
    free(parts);
    free(msg);
    return rc;
}

void sched_hist_free(sched_hist_t *h)
{
    for (size_t i = 0; i < h->n; i++)
        free(h->v[i].reason);
    free(h->v);
    memset(h, 0, sizeof *h);
}
