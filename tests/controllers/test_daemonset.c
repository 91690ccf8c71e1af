/*
 * test_daemonset.c -- the pure logic of the DaemonSet controller
 * (src/controllers/daemonset.c through daemonset_int.h): the daemon
 * tolerations and labels of the pod template, node eligibility (nodeSelector,
 * required node affinity, taints, readiness), pinning a pod to its node,
 * maxUnavailable rounding, which pods manage() creates and deletes, a
 * RollingUpdate simulated to the end under its bound, status counts, and
 * the failed-pod backoff.
 *
 * Nothing here talks to an API server: the simulation plays the scheduler's
 * and the nodes' part by changing pods between steps.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "controllers/daemonset_int.h"
#include "lib/nodematch.h"
#include "lib/err.h"

#define NOW 1700000000 /* 2023-11-14T22:13:20Z */

/* ---- helpers ---- */

/* JSON with single quotes for double quotes (readable test data). */
static json_t *J(const char *text)
{
    char *t = strdup(text);
    for (char *p = t; *p; p++)
        if (*p == '\'') *p = '"';
    json_error_t e;
    json_t *v = json_loads(t, JSON_DECODE_ANY, &e);
    if (!v) fail_msg("bad test JSON: %s: %s", e.text, t);
    free(t);
    return v;
}

/* A DaemonSet whose template spec is `spec` (JSON text, single quotes). */
static json_t *daemonset(const char *spec, const char *max_unavailable)
{
    char text[4096];
    snprintf(text, sizeof text,
             "{'metadata':{'name':'ds','namespace':'default','uid':'u1','generation':2,"
             "'annotations':{'deprecated.daemonset.template.generation':'2'}},"
             "'spec':{'selector':{'matchLabels':{'app':'d'}},"
             "'updateStrategy':{'type':'RollingUpdate','rollingUpdate':{'maxUnavailable':%s}},"
             "'template':{'metadata':{'labels':{'app':'d'}},'spec':%s}}}",
             max_unavailable ? max_unavailable : "1", spec ? spec : "{'containers':[]}");
    return J(text);
}

/* A Ready node with labels and taints (JSON text or NULL). */
static json_t *node(const char *name, const char *labels, const char *taints)
{
    char text[2048];
    snprintf(text, sizeof text,
             "{'metadata':{'name':'%s','labels':%s},'spec':{'taints':%s},"
             "'status':{'conditions':[{'type':'Ready','status':'True'}]}}",
             name, labels ? labels : "{}", taints ? taints : "[]");
    return J(text);
}

static void set_ready(json_t *n, const char *status)
{
    json_t *c = json_array_get(json_object_get(json_object_get(n, "status"), "conditions"), 0);
    json_object_set_new(c, "status", json_string(status));
}

typedef enum { P_PENDING, P_RUNNING, P_READY, P_FAILED } pstate_t;

/* A daemon pod for node `nd` (bound when `bound`), of revision hash `hash`,
 * created at NOW - age seconds. */
static json_t *pod(const char *name, const char *nd, int bound, const char *hash, pstate_t st,
                   int age)
{
    char ts[32], text[2048];
    time_t t = NOW - age;
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%SZ", &tm);
    snprintf(text, sizeof text,
             "{'metadata':{'name':'%s','namespace':'default','uid':'uid-%s',"
             "'creationTimestamp':'%s','labels':{'app':'d','controller-revision-hash':'%s'}},"
             "'spec':{'nodeName':'%s','affinity':{'nodeAffinity':{"
             "'requiredDuringSchedulingIgnoredDuringExecution':{'nodeSelectorTerms':[{"
             "'matchFields':[{'key':'metadata.name','operator':'In','values':['%s']}]}]}}}},"
             "'status':{'phase':'%s','conditions':[{'type':'Ready','status':'%s',"
             "'lastTransitionTime':'%s'}]}}",
             name, name, ts, hash, bound ? nd : "", nd,
             st == P_PENDING  ? "Pending"
             : st == P_FAILED ? "Failed"
                              : "Running",
             st == P_READY ? "True" : "False", ts);
    return J(text);
}

static void mark_deleting(json_t *p)
{
    json_object_set_new(json_object_get(p, "metadata"), "deletionTimestamp",
                        json_string("2023-11-14T22:13:20Z"));
}

static int run(const json_t *ds, const json_t *n, int *cont)
{
    json_t *tmpl = ds__pod_template(ds, "h1", "2");
    assert_non_null(tmpl);
    int r = ds__should_run(tmpl, n, cont);
    json_decref(tmpl);
    return r;
}

static int has_toleration(const json_t *spec, const char *key, const char *effect)
{
    size_t i;
    json_t *t;
    int n = 0;
    json_array_foreach(json_object_get(spec, "tolerations"), i, t) {
        const char *k = json_string_value(json_object_get(t, "key"));
        const char *e = json_string_value(json_object_get(t, "effect"));
        const char *op = json_string_value(json_object_get(t, "operator"));
        if (k && e && op && !strcmp(k, key) && !strcmp(e, effect) && !strcmp(op, "Exists")) n++;
    }
    return n;
}

/* ---- templates ---- */

static void test_template(void **state)
{
    (void)state;
    json_t *ds = daemonset("{'containers':[],'tolerations':[{'key':"
                           "'node.kubernetes.io/unschedulable','operator':'Exists',"
                           "'effect':'NoSchedule'}]}",
                           NULL);
    json_t *t = ds__pod_template(ds, "abc", "2");
    const json_t *labels = json_object_get(json_object_get(t, "metadata"), "labels");
    assert_string_equal(json_string_value(json_object_get(labels, "app")), "d");
    assert_string_equal(json_string_value(json_object_get(labels, DS_HASH_LABEL)), "abc");
    assert_string_equal(json_string_value(json_object_get(labels, DS_GEN_LABEL)), "2");
    const json_t *spec = json_object_get(t, "spec");
    assert_int_equal(has_toleration(spec, "node.kubernetes.io/not-ready", "NoExecute"), 1);
    assert_int_equal(has_toleration(spec, "node.kubernetes.io/unreachable", "NoExecute"), 1);
    assert_int_equal(has_toleration(spec, "node.kubernetes.io/disk-pressure", "NoSchedule"), 1);
    assert_int_equal(has_toleration(spec, "node.kubernetes.io/memory-pressure", "NoSchedule"), 1);
    assert_int_equal(has_toleration(spec, "node.kubernetes.io/pid-pressure", "NoSchedule"), 1);
    /* The template's own copy is replaced, not doubled. */
    assert_int_equal(has_toleration(spec, "node.kubernetes.io/unschedulable", "NoSchedule"), 1);
    assert_int_equal(json_array_size(json_object_get(spec, "tolerations")), 6);
    assert_int_equal(has_toleration(spec, "node.kubernetes.io/network-unavailable", "NoSchedule"),
                     0);
    /* The DaemonSet itself is untouched. */
    const json_t *dspec =
        json_object_get(json_object_get(json_object_get(ds, "spec"), "template"), "spec");
    assert_int_equal(json_array_size(json_object_get(dspec, "tolerations")), 1);
    json_decref(t);
    json_decref(ds);

    ds = daemonset("{'containers':[],'hostNetwork':true}", NULL);
    t = ds__pod_template(ds, "", NULL);
    spec = json_object_get(t, "spec");
    assert_int_equal(has_toleration(spec, "node.kubernetes.io/network-unavailable", "NoSchedule"),
                     1);
    labels = json_object_get(json_object_get(t, "metadata"), "labels");
    assert_null(json_object_get(labels, DS_HASH_LABEL));
    assert_null(json_object_get(labels, DS_GEN_LABEL));
    json_decref(t);
    json_decref(ds);

    /* Generation: the annotation, else metadata.generation. */
    char buf[32];
    ds = J("{'metadata':{'generation':5}}");
    assert_string_equal(ds__generation(ds, buf, sizeof buf), "5");
    json_decref(ds);
    ds = J("{'metadata':{'generation':5,'annotations':"
           "{'deprecated.daemonset.template.generation':'3'}}}");
    assert_string_equal(ds__generation(ds, buf, sizeof buf), "3");
    json_decref(ds);
    ds = J("{'metadata':{}}");
    assert_null(ds__generation(ds, buf, sizeof buf));
    json_decref(ds);
}

static void test_pin(void **state)
{
    (void)state;
    json_t *spec = J("{'affinity':{'nodeAffinity':{"
                     "'requiredDuringSchedulingIgnoredDuringExecution':{'nodeSelectorTerms':[{"
                     "'matchExpressions':[{'key':'zone','operator':'In','values':['a']}]}]},"
                     "'preferredDuringSchedulingIgnoredDuringExecution':[{'weight':1,"
                     "'preference':{'matchExpressions':[{'key':'x','operator':'Exists'}]}}]}}}");
    assert_int_equal(ds__pin(spec, "n7"), 0);
    json_t *want = J("{'nodeSelectorTerms':[{'matchFields':[{'key':'metadata.name',"
                     "'operator':'In','values':['n7']}]}]}");
    const json_t *na = json_object_get(json_object_get(spec, "affinity"), "nodeAffinity");
    assert_true(
        json_equal(json_object_get(na, "requiredDuringSchedulingIgnoredDuringExecution"), want));
    assert_int_equal(
        json_array_size(json_object_get(na, "preferredDuringSchedulingIgnoredDuringExecution")), 1);
    json_t *p = J("{'spec':{}}");
    json_object_set(p, "spec", spec);
    assert_string_equal(ds__pod_node(p), "n7"); /* unbound: the pinned node */
    json_object_set_new(spec, "nodeName", json_string("n8"));
    assert_string_equal(ds__pod_node(p), "n8"); /* bound: its node */
    json_decref(p);
    p = J("{'spec':{'containers':[]}}");
    assert_null(ds__pod_node(p));
    json_decref(p);
    json_decref(want);
    json_decref(spec);

    /* A new spec: affinity made from nothing. */
    spec = J("{}");
    assert_int_equal(ds__pin(spec, "a"), 0);
    p = json_pack("{s:O}", "spec", spec);
    assert_string_equal(ds__pod_node(p), "a");
    json_decref(p);
    json_decref(spec);
}

/* ---- eligibility ---- */

static void test_node_selector_affinity(void **state)
{
    (void)state;
    int cont;
    json_t *ssd = node("n1", "{'disk':'ssd','zone':'a','cores':'8'}", NULL);
    json_t *hdd = node("n2", "{'disk':'hdd'}", NULL);

    json_t *ds = daemonset("{'containers':[],'nodeSelector':{'disk':'ssd'}}", NULL);
    assert_int_equal(run(ds, ssd, &cont), 1);
    assert_int_equal(cont, 1);
    assert_int_equal(run(ds, hdd, &cont), 0);
    assert_int_equal(cont, 0); /* a pod there must go */
    json_decref(ds);

    ds = daemonset("{'containers':[],'affinity':{'nodeAffinity':{"
                   "'requiredDuringSchedulingIgnoredDuringExecution':{'nodeSelectorTerms':["
                   "{'matchExpressions':[{'key':'zone','operator':'In','values':['b']}]},"
                   "{'matchExpressions':[{'key':'cores','operator':'Gt','values':['4']},"
                   "{'key':'disk','operator':'NotIn','values':['hdd']}]}]}}}}",
                   NULL);
    assert_int_equal(run(ds, ssd, &cont), 1); /* second term */
    assert_int_equal(run(ds, hdd, &cont), 0);
    json_decref(ds);

    /* matchFields metadata.name; nodeSelector AND affinity. */
    ds = daemonset("{'containers':[],'nodeSelector':{'disk':'hdd'},'affinity':{'nodeAffinity':{"
                   "'requiredDuringSchedulingIgnoredDuringExecution':{'nodeSelectorTerms':["
                   "{'matchFields':[{'key':'metadata.name','operator':'In','values':['n1','n2']}]}"
                   "]}}}}",
                   NULL);
    assert_int_equal(run(ds, ssd, &cont), 0);
    assert_int_equal(run(ds, hdd, &cont), 1);
    json_decref(ds);

    /* An empty term matches nothing; spec.nodeName names one node. */
    ds = daemonset("{'containers':[],'affinity':{'nodeAffinity':{"
                   "'requiredDuringSchedulingIgnoredDuringExecution':{'nodeSelectorTerms':[{}]}}}}",
                   NULL);
    assert_int_equal(run(ds, ssd, &cont), 0);
    json_decref(ds);
    ds = daemonset("{'containers':[],'nodeName':'n2'}", NULL);
    assert_int_equal(run(ds, ssd, &cont), 0);
    assert_int_equal(cont, 0);
    assert_int_equal(run(ds, hdd, &cont), 1);
    json_decref(ds);
    json_decref(ssd);
    json_decref(hdd);
}

static void test_taints(void **state)
{
    (void)state;
    int cont;
    json_t *ds = daemonset(NULL, NULL);
    json_t *tol = daemonset("{'containers':[],'tolerations':[{'key':'gpu','operator':'Equal',"
                            "'value':'yes','effect':'NoSchedule'},{'key':'evict',"
                            "'operator':'Exists'}]}",
                            NULL);

    json_t *n = node("n", NULL, "[{'key':'gpu','value':'yes','effect':'NoSchedule'}]");
    assert_int_equal(run(ds, n, &cont), 0);
    assert_int_equal(cont, 1); /* NoSchedule: a pod there may stay */
    assert_int_equal(run(tol, n, &cont), 1);
    json_decref(n);

    n = node("n", NULL, "[{'key':'gpu','value':'no','effect':'NoSchedule'}]");
    assert_int_equal(run(tol, n, &cont), 0); /* Equal: value must match */
    json_decref(n);

    n = node("n", NULL, "[{'key':'evict','value':'x','effect':'NoExecute'}]");
    assert_int_equal(run(ds, n, &cont), 0);
    assert_int_equal(cont, 0); /* NoExecute: a pod there must go */
    assert_int_equal(run(tol, n, &cont), 1);
    assert_int_equal(cont, 1);
    json_decref(n);

    /* PreferNoSchedule does not count. */
    n = node("n", NULL, "[{'key':'soft','effect':'PreferNoSchedule'}]");
    assert_int_equal(run(ds, n, &cont), 1);
    json_decref(n);

    /* The daemon tolerations: cordoned, pressure, not-ready NoExecute. */
    n = node("n", NULL,
             "[{'key':'node.kubernetes.io/unschedulable','effect':'NoSchedule'},"
             "{'key':'node.kubernetes.io/memory-pressure','effect':'NoSchedule'},"
             "{'key':'node.kubernetes.io/disk-pressure','effect':'NoSchedule'},"
             "{'key':'node.kubernetes.io/pid-pressure','effect':'NoSchedule'},"
             "{'key':'node.kubernetes.io/unreachable','effect':'NoExecute'}]");
    json_object_set_new(json_object_get(n, "spec"), "unschedulable", json_true());
    assert_int_equal(run(ds, n, &cont), 1);
    json_decref(n);
    n = node("n", NULL, "[{'key':'node.kubernetes.io/network-unavailable','effect':'NoSchedule'}]");
    assert_int_equal(run(ds, n, &cont), 0);
    json_t *hn = daemonset("{'containers':[],'hostNetwork':true}", NULL);
    assert_int_equal(run(hn, n, &cont), 1);
    json_decref(hn);
    json_decref(n);

    /* Not Ready without taints: as if tainted not-ready:NoSchedule. */
    n = node("n", NULL, NULL);
    set_ready(n, "False");
    assert_int_equal(run(ds, n, &cont), 0);
    assert_int_equal(cont, 1);
    set_ready(n, "Unknown");
    assert_int_equal(run(ds, n, &cont), 0);
    assert_int_equal(cont, 1);
    json_decref(n);
    /* With the lifecycle controller's taints: the same verdict (the
     * NoExecute one is tolerated, NoSchedule is not). */
    n = node("n", NULL,
             "[{'key':'node.kubernetes.io/not-ready','effect':'NoExecute'},"
             "{'key':'node.kubernetes.io/not-ready','effect':'NoSchedule'}]");
    set_ready(n, "False");
    assert_int_equal(run(ds, n, &cont), 0);
    assert_int_equal(cont, 1);
    set_ready(n, "True"); /* taints not yet removed: they decide */
    assert_int_equal(run(ds, n, &cont), 0);
    assert_int_equal(cont, 1);
    json_decref(n);
    /* A template that tolerates not-ready NoSchedule runs on it. */
    json_t *nr = daemonset("{'containers':[],'tolerations':[{'key':"
                           "'node.kubernetes.io/not-ready','operator':'Exists'}]}",
                           NULL);
    n = node("n", NULL, NULL);
    set_ready(n, "False");
    assert_int_equal(run(nr, n, &cont), 1);
    json_decref(n);
    json_decref(nr);

    /* kp_tolerates_taint (lib/nodematch.h) as Kubernetes' ToleratesTaint. */
    json_t *all = J("[{'operator':'Exists'}]");
    json_t *taint = J("{'key':'k','value':'v','effect':'NoExecute'}");
    assert_true(kp_tolerates_taint(all, taint));
    json_t *other = J("[{'key':'k','operator':'Exists','effect':'NoSchedule'}]");
    assert_false(kp_tolerates_taint(other, taint));
    assert_false(kp_tolerates_taint(NULL, taint));
    json_decref(other);
    json_decref(all);
    json_decref(taint);
    json_decref(tol);
    json_decref(ds);
}

static void test_max_unavailable(void **state)
{
    (void)state;
    static const struct {
        const char *v;
        int32_t desired, want;
        int rc;
    } cases[] = {
        {"1", 3, 1, 0},
        {"2", 3, 2, 0},
        {"'34%'", 3, 2, 0}, /* 1.02 up */
        {"'33%'", 3, 1, 0},
        {"'50%'", 3, 2, 0},
        {"'100%'", 3, 3, 0},
        {"'10%'", 25, 3, 0},
        {"'0%'", 3, 1, 0},
        {"0", 3, 1, 0}, /* 0/0 -> 1 */
        {"0", 0, 0, 0},
        {"'50%'", 0, 0, 0},
        {"null", 3, 1, 0},
        {"'5'", 3, 0, KP_EINVAL},
        {"'x%'", 3, 0, KP_EINVAL},
        {"-1", 3, 0, KP_EINVAL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *ds = daemonset(NULL, cases[i].v);
        int32_t got = -7;
        int rc = ds__max_unavailable(ds, cases[i].desired, &got);
        if (rc != cases[i].rc || (!rc && got != cases[i].want))
            fail_msg("maxUnavailable %s of %d: rc %d got %d, want rc %d got %d", cases[i].v,
                     cases[i].desired, rc, got, cases[i].rc, cases[i].want);
        json_decref(ds);
    }
    json_t *ds = J("{'spec':{}}"); /* absent: Kubernetes' default 1 */
    int32_t got;
    assert_int_equal(ds__max_unavailable(ds, 5, &got), 0);
    assert_int_equal(got, 1);
    json_decref(ds);
}

/* ---- manage ---- */

typedef struct world {
    json_t *ds, *tmpl;
    json_t *nodes[8];
    size_t nnodes;
    json_t *pods[32];
    size_t npods;
    const char *hash;
} world_t;

static void world_in(world_t *w, ds_in_t *in)
{
    json_decref(w->tmpl);
    w->tmpl = ds__pod_template(w->ds, w->hash, "2");
    *in = (ds_in_t){.tmpl = w->tmpl,
                    .nodes = w->nodes,
                    .nnodes = w->nnodes,
                    .pods = w->pods,
                    .npods = w->npods,
                    .hash = w->hash,
                    .gen = NULL,
                    .now = NOW};
}

static void world_free(world_t *w)
{
    json_decref(w->ds);
    json_decref(w->tmpl);
    for (size_t i = 0; i < w->nnodes; i++)
        json_decref(w->nodes[i]);
    for (size_t i = 0; i < w->npods; i++)
        json_decref(w->pods[i]);
}

static int contains_pod(const json_t *const *v, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(json_string_value(json_object_get(json_object_get(v[i], "metadata"), "name")),
                    name))
            return 1;
    return 0;
}

static void test_manage(void **state)
{
    (void)state;
    world_t w = {.ds = daemonset("{'containers':[],'nodeSelector':{'run':'yes'}}", NULL),
                 .hash = "h1"};
    w.nodes[w.nnodes++] = node("n0", "{'run':'yes'}", NULL);
    w.nodes[w.nnodes++] = node("n1", "{'run':'yes'}", NULL);
    w.nodes[w.nnodes++] = node("n2", "{'run':'yes'}", NULL);
    w.nodes[w.nnodes++] = node("n3", "{'run':'no'}", NULL);  /* stopped matching */
    w.nodes[w.nnodes++] = node("n4", "{'run':'yes'}", NULL); /* a failed pod */
    w.nodes[w.nnodes++] = node("n5", "{'run':'yes'}", NULL); /* only a terminating pod */
    w.nodes[w.nnodes++] = node("n6", "{'run':'yes'}", NULL); /* a pod not yet bound */
    w.pods[w.npods++] = pod("p0", "n0", 1, "h1", P_READY, 100);
    w.pods[w.npods++] = pod("p1-old", "n1", 1, "h1", P_READY, 100); /* kept: the oldest */
    w.pods[w.npods++] = pod("p1-new", "n1", 1, "h1", P_READY, 10);
    w.pods[w.npods++] = pod("p3", "n3", 1, "h1", P_READY, 100);
    w.pods[w.npods++] = pod("p4", "n4", 1, "h1", P_FAILED, 100);
    w.pods[w.npods++] = pod("p5", "n5", 1, "h1", P_READY, 100);
    mark_deleting(w.pods[w.npods - 1]);
    w.pods[w.npods++] = pod("p6", "n6", 0, "h1", P_PENDING, 1);
    w.pods[w.npods++] = pod("p9", "gone", 1, "h1", P_READY, 100); /* its node was deleted */
    ds_in_t in;
    world_in(&w, &in);
    ds_view_t v;
    assert_int_equal(ds__view(&in, &v), 0);
    assert_int_equal(v.n, 8); /* 7 nodes and "gone" */
    ds_plan_t p;
    assert_int_equal(ds__manage(&in, &v, &p), 0);
    assert_int_equal(p.ncreate, 1);
    assert_string_equal(p.create[0], "n2");
    assert_int_equal(p.ndel, 2);
    assert_true(contains_pod(p.del, p.ndel, "p1-new"));
    assert_true(contains_pod(p.del, p.ndel, "p3"));
    assert_int_equal(p.nfailed, 1);
    assert_true(contains_pod(p.failed, 1, "p4"));
    assert_string_equal(p.failed_node[0], "n4");
    assert_int_equal(p.norphans, 1);
    assert_true(contains_pod(p.orphans, 1, "p9"));

    /* Status: n0..n2, n4..n6 should run (6); n3 has a pod it should not. */
    ds_counts_t k;
    ds__counts(&in, &v, &k);
    assert_int_equal(k.desired, 6);
    assert_int_equal(k.current, 5); /* all but n2 */
    assert_int_equal(k.misscheduled, 1);
    assert_int_equal(k.ready, 3); /* n0, n1 (oldest), n5 (terminating still counts) */
    assert_int_equal(k.available, 3);
    assert_int_equal(k.unavailable, 3);
    assert_int_equal(k.updated, 5);
    ds__plan_free(&p);
    ds__view_free(&v);

    /* The same world again, after the pods were created and seen: nothing
     * new to do for n2 (one observation, one pod per node). */
    w.pods[w.npods++] = pod("p2", "n2", 0, "h1", P_PENDING, 0);
    world_in(&w, &in);
    assert_int_equal(ds__view(&in, &v), 0);
    assert_int_equal(ds__manage(&in, &v, &p), 0);
    assert_int_equal(p.ncreate, 0);
    ds__plan_free(&p);
    ds__view_free(&v);

    /* A node that becomes tainted NoExecute loses its pod. */
    json_object_set_new(json_object_get(w.nodes[0], "spec"), "taints",
                        J("[{'key':'k','effect':'NoExecute'}]"));
    world_in(&w, &in);
    assert_int_equal(ds__view(&in, &v), 0);
    assert_int_equal(ds__manage(&in, &v, &p), 0);
    assert_true(contains_pod(p.del, p.ndel, "p0"));
    ds__plan_free(&p);
    ds__view_free(&v);
    world_free(&w);
}

/* ---- rolling update ---- */

/* The nodes (of n) without an available, non-terminating pod. */
static int unavailable_nodes(world_t *w)
{
    int un = 0;
    for (size_t i = 0; i < w->nnodes; i++) {
        const char *nn =
            json_string_value(json_object_get(json_object_get(w->nodes[i], "metadata"), "name"));
        int ok = 0;
        for (size_t k = 0; k < w->npods; k++) {
            json_t *p = w->pods[k];
            if (!p || json_object_get(json_object_get(p, "metadata"), "deletionTimestamp"))
                continue;
            const json_t *c =
                json_array_get(json_object_get(json_object_get(p, "status"), "conditions"), 0);
            if (!strcmp(ds__pod_node(p), nn) &&
                !strcmp(json_string_value(json_object_get(c, "status")), "True"))
                ok = 1;
        }
        un += !ok;
    }
    return un;
}

static void remove_pod(world_t *w, size_t i)
{
    json_decref(w->pods[i]);
    w->pods[i] = w->pods[--w->npods];
}

/* Roll 5 nodes from h1 to h2 with maxUnavailable `mu`, playing the
 * controller (manage, then rolling when manage did nothing), the API and
 * the nodes (a deleted pod is gone the next step; a new pod is ready the
 * step after it was created). */
static void roll(const char *mu, int32_t want_max, int *steps_out)
{
    world_t w = {.ds = daemonset(NULL, mu), .hash = "h1"};
    char name[32];
    for (int i = 0; i < 5; i++) {
        snprintf(name, sizeof name, "n%d", i);
        w.nodes[w.nnodes++] = node(name, NULL, NULL);
        char pname[32];
        snprintf(pname, sizeof pname, "old%d", i);
        w.pods[w.npods++] = pod(pname, name, 1, "h1", P_READY, 100);
    }
    w.hash = "h2";
    int steps = 0, created = 0, peak = 0;
    for (; steps < 50; steps++) {
        /* The nodes: terminating pods finish, pending pods become ready. */
        for (size_t i = 0; i < w.npods;) {
            json_t *p = w.pods[i];
            if (json_object_get(json_object_get(p, "metadata"), "deletionTimestamp")) {
                remove_pod(&w, i);
                continue;
            }
            json_t *c =
                json_array_get(json_object_get(json_object_get(p, "status"), "conditions"), 0);
            json_object_set_new(c, "status", json_string("True"));
            i++;
        }
        ds_in_t in;
        world_in(&w, &in);
        ds_view_t v;
        assert_int_equal(ds__view(&in, &v), 0);
        ds_plan_t p;
        assert_int_equal(ds__manage(&in, &v, &p), 0);
        assert_int_equal(p.ndel + p.nfailed + p.norphans, 0);
        int acted = p.ncreate > 0;
        for (size_t i = 0; i < p.ncreate; i++) {
            snprintf(name, sizeof name, "new%d", created++);
            w.pods[w.npods++] = pod(name, p.create[i], 1, "h2", P_RUNNING, 0);
        }
        ds__plan_free(&p);
        if (!acted) {
            ds_counts_t k;
            ds__counts(&in, &v, &k);
            if (k.updated == 5 && k.available == 5) {
                ds__view_free(&v);
                break;
            }
            int32_t maxu;
            assert_int_equal(ds__max_unavailable(w.ds, k.desired, &maxu), 0);
            assert_int_equal(maxu, want_max);
            const json_t **del;
            size_t ndel;
            assert_int_equal(ds__rolling(&in, &v, maxu, &del, &ndel), 0);
            for (size_t i = 0; i < ndel; i++)
                mark_deleting((json_t *)del[i]);
            free(del);
        }
        ds__view_free(&v);
        int un = unavailable_nodes(&w);
        if (un > peak) peak = un;
        if (un > want_max) fail_msg("step %d: %d nodes unavailable, max %d", steps, un, want_max);
    }
    assert_int_equal(created, 5);
    assert_int_equal(peak, want_max);
    for (size_t i = 0; i < w.npods; i++)
        assert_true(ds__pod_updated(w.pods[i], "h2", NULL));
    *steps_out = steps;
    world_free(&w);
}

static void test_rolling(void **state)
{
    (void)state;
    int s1, s2;
    roll("1", 1, &s1);
    roll("'40%'", 2, &s2); /* 40% of 5 = 2 */
    assert_true(s2 < s1);

    /* An old pod that is not available is replaced at once, beyond the
     * budget; a node with a new pod not ready yet uses the budget. */
    world_t w = {.ds = daemonset(NULL, "1"), .hash = "h2"};
    w.nodes[w.nnodes++] = node("n0", NULL, NULL);
    w.nodes[w.nnodes++] = node("n1", NULL, NULL);
    w.nodes[w.nnodes++] = node("n2", NULL, NULL);
    w.pods[w.npods++] = pod("a", "n0", 1, "h2", P_RUNNING, 5); /* new, not ready */
    w.pods[w.npods++] = pod("b", "n1", 1, "h1", P_RUNNING, 5); /* old, not ready */
    w.pods[w.npods++] = pod("c", "n2", 1, "h1", P_READY, 5);   /* old, ready */
    ds_in_t in;
    world_in(&w, &in);
    ds_view_t v;
    assert_int_equal(ds__view(&in, &v), 0);
    const json_t **del;
    size_t ndel;
    assert_int_equal(ds__rolling(&in, &v, 1, &del, &ndel), 0);
    assert_int_equal(ndel, 1);
    assert_true(contains_pod(del, ndel, "b"));
    free(del);
    /* With a budget of 2 the ready one goes too. */
    assert_int_equal(ds__rolling(&in, &v, 2, &del, &ndel), 0);
    assert_int_equal(ndel, 2);
    assert_true(contains_pod(del, ndel, "c"));
    free(del);
    /* The template generation label counts as the hash does. */
    assert_true(ds__pod_updated(w.pods[0], "h2", NULL));
    assert_false(ds__pod_updated(w.pods[1], "h2", NULL));
    json_object_set_new(json_object_get(json_object_get(w.pods[1], "metadata"), "labels"),
                        DS_GEN_LABEL, json_string("2"));
    assert_true(ds__pod_updated(w.pods[1], "h2", "2"));
    assert_false(ds__pod_updated(w.pods[1], "h2", "3"));
    ds__view_free(&v);
    world_free(&w);
}

static void test_min_ready(void **state)
{
    (void)state;
    world_t w = {.ds = daemonset(NULL, NULL), .hash = "h1"};
    w.nodes[w.nnodes++] = node("n0", NULL, NULL);
    w.pods[w.npods++] = pod("a", "n0", 1, "h1", P_READY, 3);
    ds_in_t in;
    world_in(&w, &in);
    in.min_ready_s = 10;
    ds_view_t v;
    assert_int_equal(ds__view(&in, &v), 0);
    ds_counts_t k;
    ds__counts(&in, &v, &k);
    assert_int_equal(k.ready, 1);
    assert_int_equal(k.available, 0);
    assert_int_equal(k.unavailable, 1);
    assert_int_equal(k.wait_s, 7);
    ds__view_free(&v);
    world_free(&w);
}

static void test_backoff(void **state)
{
    (void)state;
    json_t *m = json_object();
    int64_t wait;
    const int64_t s = 1000000000LL;
    assert_int_equal(ds__backoff(m, "k", 0, &wait), 0); /* first failure: go, 1 s from now */
    assert_int_equal(ds__backoff(m, "k", s / 2, &wait), 1);
    assert_int_equal(wait, 500);
    assert_int_equal(ds__backoff(m, "k", s, &wait), 0); /* 1 s passed: go, 2 s now */
    assert_int_equal(ds__backoff(m, "k", 2 * s, &wait), 1);
    assert_int_equal(ds__backoff(m, "k", 3 * s, &wait), 0);
    assert_int_equal(ds__backoff(m, "other", 3 * s, &wait), 0); /* per key */
    /* Doubling stops at 15 minutes. */
    int64_t t = 3 * s;
    for (int i = 0; i < 20; i++) {
        t += DS_BACKOFF_MAX_MS * 1000000;
        assert_int_equal(ds__backoff(m, "k", t, &wait), 0);
    }
    assert_int_equal(ds__backoff(m, "k", t + 1, &wait), 1);
    assert_int_equal(wait, DS_BACKOFF_MAX_MS);
    /* Quiet for over 30 minutes: forgotten, 1 s again. */
    t += 31LL * 60 * s;
    assert_int_equal(ds__backoff(m, "k", t, &wait), 0);
    assert_int_equal(ds__backoff(m, "k", t + s / 2, &wait), 1);
    assert_int_equal(wait, 500);
    assert_null(json_object_get(m, "other"));
    json_decref(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_template),
        cmocka_unit_test(test_pin),
        cmocka_unit_test(test_node_selector_affinity),
        cmocka_unit_test(test_taints),
        cmocka_unit_test(test_max_unavailable),
        cmocka_unit_test(test_manage),
        cmocka_unit_test(test_rolling),
        cmocka_unit_test(test_min_ready),
        cmocka_unit_test(test_backoff),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
