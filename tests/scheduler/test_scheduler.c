/*
 * test_scheduler.c -- the scheduler's pure logic (src/scheduler/filter.c)
 * and its cache of nodes and usage (src/scheduler/cache.c): quantities,
 * taints and tolerations, node affinity, the resource fit, scores, the
 * failure message, assumptions under parallel workers, and the cost of a
 * decision at 200 nodes; the lifecycle's error paths. No server:
 * test_scheduler_api.c has that.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/client.h"
#include "lib/clock.h"
#include "lib/err.h"
#include "lib/nodematch.h"
#include "lib/quantity.h"
#include "scheduler/sched_int.h"
#include "scheduler/scheduler.h"

/* JSON from text written with single quotes (tests only). */
static json_t *J(const char *fmt, ...)
{
    char text[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    for (char *p = text; *p; p++)
        if (*p == '\'') *p = '"';
    json_error_t e;
    json_t *v = json_loads(text, 0, &e);
    if (!v) fprintf(stderr, "bad test JSON (%s): %s\n", e.text, text);
    assert_non_null(v);
    return v;
}

static int64_t q(const char *s, int milli)
{
    int64_t v = -1;
    assert_int_equal(kp_quantity_parse(s, milli, &v), 0);
    return v;
}

/* ---- quantities ---- */

static void test_quantity_cpu(void **state)
{
    (void)state;
    assert_int_equal(q("100m", 1), 100);
    assert_int_equal(q("0.5", 1), 500);
    assert_int_equal(q("2", 1), 2000);
    assert_int_equal(q("1.25", 1), 1250);
    assert_int_equal(q(".1", 1), 100);
    assert_int_equal(q("1n", 1), 1);    /* rounded up, as MilliValue */
    assert_int_equal(q("1500u", 1), 2); /* 1.5m up to 2m */
    assert_int_equal(q("0.0001", 1), 1);
    assert_int_equal(q("0", 1), 0);
    assert_int_equal(q("+3", 1), 3000);
    assert_int_equal(q("1k", 1), 1000000);
    assert_int_equal(q("2e-3", 1), 2);
}

static void test_quantity_memory(void **state)
{
    (void)state;
    assert_int_equal(q("128974848", 0), 128974848);
    assert_int_equal(q("129e6", 0), 129000000);
    assert_int_equal(q("129E6", 0), 129000000);
    assert_int_equal(q("129M", 0), 129000000);
    assert_int_equal(q("123Mi", 0), 128974848);
    assert_int_equal(q("1Ki", 0), 1024);
    assert_int_equal(q("1k", 0), 1000);
    assert_int_equal(q("1K", 0), 1000);
    assert_int_equal(q("1G", 0), 1000000000);
    assert_int_equal(q("1Gi", 0), 1073741824);
    assert_int_equal(q("1.5Gi", 0), 1610612736);
    assert_int_equal(q("1Ti", 0), 1099511627776LL);
    assert_int_equal(q("1E", 0), 1000000000000000000LL); /* "E" alone is exa */
    assert_int_equal(q("7Ei", 0), 7LL << 60);
    assert_int_equal(q("500m", 0), 1); /* half a byte rounds up */
    assert_int_equal(q("0.1Ki", 0), 103);

    int64_t v;
    const char *bad[] = {"",    "m",   "abc", "1Qi",   "1e",     "--1", "1.2.3", "1 Mi",
                         "Mi1", "1mi", "-1",  "-100m", "1e1000", ".",   "1.",    NULL};
    for (int i = 0; bad[i]; i++) {
        int rc = kp_quantity_parse(bad[i], 0, &v);
        if (!strcmp(bad[i], "1.")) {
            assert_int_equal(rc, 0); /* "1." is 1, as Go's parser reads it */
            continue;
        }
        if (rc != KP_EINVAL) fprintf(stderr, "accepted %s\n", bad[i]);
        assert_int_equal(rc, KP_EINVAL);
    }
    assert_int_equal(kp_quantity_parse("-0", 0, &v), 0);
    assert_int_equal(v, 0);
    assert_int_equal(kp_quantity_parse("16Ei", 0, &v), KP_ETOOLARGE);
    assert_int_equal(kp_quantity_parse("9223372036854775808", 0, &v), KP_ETOOLARGE);
    assert_int_equal(kp_quantity_parse("10E", 1, &v), KP_ETOOLARGE);

    json_t *n = json_integer(3);
    assert_int_equal(kp_quantity_json(n, 1, &v), 0);
    assert_int_equal(v, 3000);
    json_decref(n);
    n = json_real(0.25);
    assert_int_equal(kp_quantity_json(n, 1, &v), 0);
    assert_int_equal(v, 250);
    json_decref(n);
    n = json_string("64Mi");
    assert_int_equal(kp_quantity_json(n, 0, &v), 0);
    assert_int_equal(v, 64 << 20);
    json_decref(n);
    assert_int_equal(kp_quantity_json(json_true(), 0, &v), KP_EINVAL);
}

/* ---- pods and nodes ---- */

static void test_pod_requests(void **state)
{
    (void)state;
    json_t *pod = J(
        "{'metadata':{'name':'p','namespace':'d','ownerReferences':["
        "{'uid':'u-other'},{'uid':'u-rs','controller':true}]},"
        "'spec':{'containers':["
        "{'name':'a','resources':{'requests':{'cpu':'100m','memory':'64Mi'}},"
        " 'ports':[{'containerPort':80,'hostPort':8080},{'containerPort':81}]},"
        "{'name':'b','resources':{'limits':{'cpu':'1','memory':'1Gi','ephemeral-storage':'1Gi'}}},"
        "{'name':'c'}],"
        "'initContainers':["
        "{'name':'i1','resources':{'requests':{'cpu':'2'}}},"
        "{'name':'side','restartPolicy':'Always','resources':{'requests':{'cpu':'200m',"
        "'memory':'10Mi'}}},"
        "{'name':'i2','resources':{'requests':{'memory':'2Gi'}},"
        " 'ports':[{'containerPort':53,'hostPort':53,'protocol':'UDP','hostIP':'10.0.0.1'}]}],"
        "'overhead':{'cpu':'10m'}}}");
    sched_pod_t p;
    assert_int_equal(sched_pod_parse(pod, &p), 0);
    /* cpu: containers 1100m + sidecar 200m = 1300m, but init i1 needs 2000m
     * alone; + 10m overhead. memory: 64Mi + 1Gi + 10Mi vs i2's 2Gi + 10Mi. */
    assert_int_equal(p.req.cpu, 2010);
    assert_int_equal(p.req.mem, (2048LL + 10) << 20);
    assert_int_equal(p.req.eph, 1LL << 30);
    assert_int_equal(p.req.pods, 1);
    /* Scoring counts container c (no requests) as 100m / 200Mi: containers
     * 1200m + sidecar 200m; init i1 (2000m) + nothing before it; i2 counts
     * 100m (no cpu request) + sidecar 200m. */
    assert_int_equal(p.nz_cpu, 2010);
    assert_int_equal(p.nz_mem, ((64LL + 1024 + 200 + 10) << 20) > ((2048LL + 10) << 20)
                                   ? (64LL + 1024 + 200 + 10) << 20
                                   : (2048LL + 10) << 20);
    assert_int_equal(p.nports, 2);
    assert_int_equal(p.ports[0].port, 53);
    assert_string_equal(p.ports[0].proto, "UDP");
    assert_string_equal(p.ports[0].ip, "10.0.0.1");
    assert_int_equal(p.ports[1].port, 8080);
    assert_string_equal(p.ports[1].proto, "TCP");
    assert_string_equal(p.ports[1].ip, "0.0.0.0");
    assert_string_equal(p.owner, "u-rs");
    sched_pod_clear(&p);
    json_decref(pod);

    /* Request-less: zero for the fit, the defaults for scoring. */
    pod = J("{'spec':{'containers':[{'name':'a'},{'name':'b'}]}}");
    assert_int_equal(sched_pod_parse(pod, &p), 0);
    assert_int_equal(p.req.cpu, 0);
    assert_int_equal(p.req.mem, 0);
    assert_int_equal(p.nz_cpu, 2 * SCHED_DEFAULT_MILLI_CPU);
    assert_int_equal(p.nz_mem, 2 * SCHED_DEFAULT_MEMORY);
    assert_null(p.owner);
    sched_pod_clear(&p);
    json_decref(pod);

    /* A malformed quantity counts as 0 and is reported. */
    pod = J("{'spec':{'containers':[{'name':'a','resources':{'requests':{'cpu':'lots',"
            "'memory':'1Mi'}}}]}}");
    assert_int_equal(sched_pod_parse(pod, &p), KP_EINVAL);
    assert_int_equal(p.req.cpu, 0);
    assert_int_equal(p.req.mem, 1 << 20);
    sched_pod_clear(&p);
    json_decref(pod);
}

static json_t *node_json(const char *name, const char *cpu, const char *mem, const char *pods,
                         const char *ready, const char *extra_spec, const char *labels)
{
    return J("{'metadata':{'name':'%s','labels':{%s}},'spec':{%s},"
             "'status':{'allocatable':{'cpu':'%s','memory':'%s','pods':'%s'},"
             "'capacity':{'ephemeral-storage':'10Gi','cpu':'64'},"
             "'conditions':[{'type':'MemoryPressure','status':'False'},"
             "{'type':'Ready','status':'%s'}]}}",
             name, labels ? labels : "", extra_spec ? extra_spec : "", cpu, mem, pods, ready);
}

static void test_node_parse(void **state)
{
    (void)state;
    json_t *n = node_json("n1", "4", "8Gi", "110", "True",
                          "'unschedulable':true,'taints':["
                          "{'key':'a','value':'1','effect':'NoSchedule'},"
                          "{'key':'b','effect':'PreferNoSchedule'},"
                          "{'key':'c','effect':'NoExecute'}]",
                          NULL);
    sched_node_info_t ni, ni2;
    assert_int_equal(sched_node_parse(n, &ni), 0);
    assert_int_equal(ni.ready, 1);
    assert_int_equal(ni.unschedulable, 1);
    assert_int_equal(ni.alloc.cpu, 4000);
    assert_int_equal(ni.alloc.mem, 8LL << 30);
    assert_int_equal(ni.alloc.pods, 110);
    assert_int_equal(ni.alloc.eph, 10LL << 30); /* from capacity: not in allocatable */
    assert_int_equal(ni.ntaints, 2);            /* PreferNoSchedule is for scoring only */
    assert_string_equal(ni.taints[0].key, "a");
    assert_string_equal(ni.taints[0].value, "1");
    assert_string_equal(ni.taints[1].key, "c");
    assert_string_equal(ni.taints[1].value, "");
    assert_string_equal(ni.taints[1].effect, "NoExecute");
    assert_int_equal(sched_node_parse(n, &ni2), 0);
    assert_true(sched_node_info_same(&ni, &ni2));
    ni2.alloc.cpu--;
    assert_false(sched_node_info_same(&ni, &ni2));
    sched_node_info_clear(&ni2);
    json_decref(n);

    n = J("{'metadata':{'name':'x'},'status':{'conditions':[{'type':'Ready','status':'False'}]}}");
    assert_int_equal(sched_node_parse(n, &ni2), 0);
    assert_int_equal(ni2.ready, 0);
    assert_false(sched_node_info_same(&ni, &ni2));
    sched_node_info_clear(&ni2);
    json_decref(n);
    n = J("{'metadata':{'name':'x'}}");
    assert_int_equal(sched_node_parse(n, &ni2), 0);
    assert_int_equal(ni2.ready, -1);
    assert_int_equal(ni2.alloc.pods, 0);
    sched_node_info_clear(&ni2);
    sched_node_info_clear(&ni);
    json_decref(n);
}

/* ---- taints and tolerations ---- */

static void test_tolerations(void **state)
{
    (void)state;
    json_t *t = J("[{'key':'k','operator':'Equal','value':'v','effect':'NoSchedule'}]");
    assert_true(kp_tolerates(t, "k", "v", "NoSchedule"));
    assert_false(kp_tolerates(t, "k", "w", "NoSchedule"));
    assert_false(kp_tolerates(t, "k", "v", "NoExecute"));
    assert_false(kp_tolerates(t, "j", "v", "NoSchedule"));
    json_decref(t);
    t = J("[{'key':'k','value':'v'}]"); /* operator defaults to Equal, any effect */
    assert_true(kp_tolerates(t, "k", "v", "NoExecute"));
    assert_false(kp_tolerates(t, "k", "", "NoExecute"));
    json_decref(t);
    t = J("[{'key':'k','operator':'Exists','effect':'NoExecute'}]");
    assert_true(kp_tolerates(t, "k", "anything", "NoExecute"));
    assert_false(kp_tolerates(t, "k", "anything", "NoSchedule"));
    json_decref(t);
    t = J("[{'operator':'Exists'}]"); /* tolerates everything */
    assert_true(kp_tolerates(t, "x", "y", "NoSchedule"));
    assert_true(kp_tolerates(t, "node.kubernetes.io/unreachable", "", "NoExecute"));
    json_decref(t);
    t = J("[{'operator':'Exists','effect':'NoSchedule'}]");
    assert_true(kp_tolerates(t, "x", "y", "NoSchedule"));
    assert_false(kp_tolerates(t, "x", "y", "NoExecute"));
    json_decref(t);
    t = J("[{'key':'k','operator':'Bogus'}]");
    assert_false(kp_tolerates(t, "k", "", "NoSchedule"));
    json_decref(t);
    assert_false(kp_tolerates(NULL, "k", "", "NoSchedule"));
}

/* Filter pod (JSON) against node (JSON) with usage u (NULL: none). */
static unsigned filter(const char *pod_text, json_t *node, sched_usage_t *u, char *taint, size_t tn)
{
    json_t *pod = J("%s", pod_text);
    sched_pod_t p;
    sched_node_info_t ni;
    sched_usage_t none = {0};
    assert_true(sched_pod_parse(pod, &p) >= 0);
    assert_int_equal(sched_node_parse(node, &ni), 0);
    const char *tk = NULL, *tv = NULL;
    unsigned bits = sched_filter(&p, &ni, u ? u : &none, &tk, &tv);
    if (taint) snprintf(taint, tn, "%s=%s", tk ? tk : "", tv ? tv : "");
    sched_node_info_clear(&ni);
    sched_pod_clear(&p);
    json_decref(pod);
    return bits;
}

static void test_filter_taints(void **state)
{
    (void)state;
    char taint[256];
    json_t *n =
        node_json("n", "4", "8Gi", "110", "True",
                  "'taints':[{'key':'dedicated','value':'gpu','effect':'NoSchedule'}]", NULL);
    assert_int_equal(filter("{'spec':{}}", n, NULL, taint, sizeof taint), SCHED_R_TAINT);
    assert_string_equal(taint, "dedicated=gpu");
    assert_int_equal(filter("{'spec':{'tolerations':[{'key':'dedicated','operator':'Equal',"
                            "'value':'gpu','effect':'NoSchedule'}]}}",
                            n, NULL, NULL, 0),
                     0);
    assert_int_equal(filter("{'spec':{'tolerations':[{'key':'dedicated','operator':'Exists'}]}}", n,
                            NULL, NULL, 0),
                     0);
    json_decref(n);

    /* Not Ready: the implicit NoSchedule taint of the node lifecycle controller. */
    n = node_json("n", "4", "8Gi", "110", "Unknown", NULL, NULL);
    assert_int_equal(filter("{'spec':{}}", n, NULL, taint, sizeof taint), SCHED_R_TAINT);
    assert_string_equal(taint, "node.kubernetes.io/unreachable=");
    /* The default NoExecute toleration does not cover NoSchedule ... */
    assert_int_equal(filter("{'spec':{'tolerations':[{'key':'node.kubernetes.io/unreachable',"
                            "'operator':'Exists','effect':'NoExecute'}]}}",
                            n, NULL, NULL, 0),
                     SCHED_R_TAINT);
    /* ... a DaemonSet's tolerations do. */
    assert_int_equal(filter("{'spec':{'tolerations':[{'key':'node.kubernetes.io/unreachable',"
                            "'operator':'Exists'}]}}",
                            n, NULL, NULL, 0),
                     0);
    json_decref(n);
    n = node_json("n", "4", "8Gi", "110", "False", NULL, NULL);
    assert_int_equal(filter("{'spec':{}}", n, NULL, taint, sizeof taint), SCHED_R_TAINT);
    assert_string_equal(taint, "node.kubernetes.io/not-ready=");
    json_decref(n);

    /* Cordoned: unschedulable, unless the pod tolerates it. */
    n = node_json("n", "4", "8Gi", "110", "True", "'unschedulable':true", NULL);
    assert_int_equal(filter("{'spec':{}}", n, NULL, NULL, 0), SCHED_R_UNSCHEDULABLE);
    assert_int_equal(filter("{'spec':{'tolerations':[{'key':'node.kubernetes.io/unschedulable',"
                            "'operator':'Exists','effect':'NoSchedule'}]}}",
                            n, NULL, NULL, 0),
                     0);
    json_decref(n);
}

/* ---- node affinity ---- */

static int affinity(const char *pod_text, const json_t *node)
{
    json_t *pod = J("%s", pod_text);
    int ok = kp_pod_spec_selects_node(json_object_get(pod, "spec"), node);
    json_decref(pod);
    return ok;
}

#define REQ(terms)                                                                                 \
    "{'spec':{'affinity':{'nodeAffinity':{'requiredDuringSchedulingIgnoredDuringExecution':"       \
    "{'nodeSelectorTerms':[" terms "]}}}}}"

static void test_affinity(void **state)
{
    (void)state;
    json_t *n =
        node_json("n7", "4", "8Gi", "110", "True", NULL, "'zone':'a','disk':'ssd','cores':'16'");
    assert_true(affinity("{'spec':{}}", n));
    assert_true(affinity("{'spec':{'nodeSelector':{'zone':'a','disk':'ssd'}}}", n));
    assert_false(affinity("{'spec':{'nodeSelector':{'zone':'a','disk':'hdd'}}}", n));
    assert_false(affinity("{'spec':{'nodeSelector':{'gpu':'yes'}}}", n));

    assert_true(affinity(REQ("{'matchExpressions':[{'key':'zone','operator':'In',"
                             "'values':['b','a']}]}"),
                         n));
    assert_false(affinity(REQ("{'matchExpressions':[{'key':'zone','operator':'In',"
                              "'values':['b']}]}"),
                          n));
    assert_true(affinity(REQ("{'matchExpressions':[{'key':'zone','operator':'NotIn',"
                             "'values':['b']}]}"),
                         n));
    assert_true(affinity(REQ("{'matchExpressions':[{'key':'gpu','operator':'NotIn',"
                             "'values':['x']}]}"),
                         n)); /* a missing key is not in */
    assert_true(affinity(REQ("{'matchExpressions':[{'key':'disk','operator':'Exists'}]}"), n));
    assert_false(affinity(REQ("{'matchExpressions':[{'key':'gpu','operator':'Exists'}]}"), n));
    assert_true(affinity(REQ("{'matchExpressions':[{'key':'gpu','operator':'DoesNotExist'}]}"), n));
    assert_true(affinity(REQ("{'matchExpressions':[{'key':'cores','operator':'Gt',"
                             "'values':['8']}]}"),
                         n));
    assert_false(affinity(REQ("{'matchExpressions':[{'key':'cores','operator':'Gt',"
                              "'values':['16']}]}"),
                          n));
    assert_true(affinity(REQ("{'matchExpressions':[{'key':'cores','operator':'Lt',"
                             "'values':['17']}]}"),
                         n));
    assert_false(affinity(REQ("{'matchExpressions':[{'key':'zone','operator':'Lt',"
                              "'values':['17']}]}"),
                          n)); /* not a number */
    assert_false(affinity(REQ("{'matchExpressions':[{'key':'cores','operator':'Gt',"
                              "'values':['1','2']}]}"),
                          n));
    /* Expressions in a term are ANDed ... */
    assert_false(affinity(REQ("{'matchExpressions':[{'key':'zone','operator':'In','values':"
                              "['a']},{'key':'disk','operator':'In','values':['hdd']}]}"),
                          n));
    /* ... terms are ORed. */
    assert_true(affinity(REQ("{'matchExpressions':[{'key':'zone','operator':'In','values':"
                             "['b']}]},{'matchExpressions':[{'key':'disk','operator':'In',"
                             "'values':['ssd']}]}"),
                         n));
    /* An empty term, or no terms, matches nothing. */
    assert_false(affinity(REQ("{}"), n));
    assert_false(affinity(REQ(""), n));
    /* matchFields: metadata.name only. */
    assert_true(affinity(REQ("{'matchFields':[{'key':'metadata.name','operator':'In',"
                             "'values':['n7']}]}"),
                         n));
    assert_false(affinity(REQ("{'matchFields':[{'key':'metadata.name','operator':'NotIn',"
                              "'values':['n7']}]}"),
                          n));
    /* nodeSelector and affinity must both match. */
    assert_false(affinity("{'spec':{'nodeSelector':{'zone':'b'},'affinity':{'nodeAffinity':{"
                          "'requiredDuringSchedulingIgnoredDuringExecution':{'nodeSelectorTerms':"
                          "[{'matchExpressions':[{'key':'zone','operator':'Exists'}]}]}}}}}",
                          n));
    assert_int_equal(filter("{'spec':{'nodeSelector':{'zone':'b'}}}", n, NULL, NULL, 0),
                     SCHED_R_AFFINITY);
    json_decref(n);
}

/* ---- resources and ports ---- */

static void use(sched_usage_t *u, const char *pod_text)
{
    json_t *pod = J("%s", pod_text);
    sched_pod_t p;
    assert_true(sched_pod_parse(pod, &p) >= 0);
    assert_int_equal(sched_usage_add(u, &p.req, p.nz_cpu, p.nz_mem, p.ports, p.nports), 0);
    sched_pod_clear(&p);
    json_decref(pod);
}

#define POD(cpu, mem)                                                                              \
    "{'spec':{'containers':[{'name':'c','resources':{'requests':{'cpu':'" cpu "','memory':'" mem   \
    "'}}}]}}"

static void test_resource_fit(void **state)
{
    (void)state;
    json_t *n = node_json("n", "2", "4Gi", "3", "True", NULL, NULL);
    sched_usage_t u = {0};
    assert_int_equal(filter(POD("2", "4Gi"), n, &u, NULL, 0), 0); /* exactly full fits */
    assert_int_equal(filter(POD("2001m", "1Mi"), n, &u, NULL, 0), SCHED_R_CPU);
    use(&u, POD("1500m", "1Gi"));
    assert_int_equal(filter(POD("500m", "3Gi"), n, &u, NULL, 0), 0);
    assert_int_equal(filter(POD("501m", "3Gi"), n, &u, NULL, 0), SCHED_R_CPU);
    assert_int_equal(filter(POD("600m", "4Gi"), n, &u, NULL, 0), SCHED_R_CPU | SCHED_R_MEM);
    assert_int_equal(filter("{'spec':{'containers':[{'name':'c','resources':{'requests':"
                            "{'ephemeral-storage':'11Gi'}}}]}}",
                            n, &u, NULL, 0),
                     SCHED_R_EPH);
    use(&u, POD("0", "0"));
    use(&u, POD("1", "1"));
    /* Three pods on a node for three: full, and cpu over-committed. A pod
     * without requests is not refused for cpu (as Kubernetes). */
    assert_int_equal(filter("{'spec':{'containers':[{'name':'c'}]}}", n, &u, NULL, 0),
                     SCHED_R_PODS);
    assert_int_equal(filter(POD("100m", "1"), n, &u, NULL, 0), SCHED_R_PODS | SCHED_R_CPU);
    sched_usage_clear(&u);

    /* Host ports: same port and protocol clash on a shared or wildcard IP. */
    use(&u, "{'spec':{'containers':[{'name':'c','ports':[{'containerPort':80,'hostPort':80,"
            "'hostIP':'10.0.0.1'}]}]}}");
    const char *p80 = "{'spec':{'containers':[{'name':'c','ports':[{'containerPort':80,"
                      "'hostPort':80}]}]}}";
    assert_int_equal(filter(p80, n, &u, NULL, 0), SCHED_R_PORTS);
    assert_int_equal(filter("{'spec':{'containers':[{'name':'c','ports':[{'containerPort':80,"
                            "'hostPort':80,'hostIP':'10.0.0.2'}]}]}}",
                            n, &u, NULL, 0),
                     0);
    assert_int_equal(filter("{'spec':{'containers':[{'name':'c','ports':[{'containerPort':80,"
                            "'hostPort':80,'protocol':'UDP'}]}]}}",
                            n, &u, NULL, 0),
                     0);
    assert_int_equal(filter("{'spec':{'hostNetwork':true,'containers':[{'name':'c','ports':"
                            "[{'containerPort':80}]}]}}",
                            n, &u, NULL, 0),
                     SCHED_R_PORTS);
    /* Removing the pod frees the port. */
    json_t *pod = J("{'spec':{'containers':[{'name':'c','ports':[{'containerPort':80,"
                    "'hostPort':80,'hostIP':'10.0.0.1'}]}]}}");
    sched_pod_t p;
    assert_int_equal(sched_pod_parse(pod, &p), 0);
    sched_usage_sub(&u, &p.req, p.nz_cpu, p.nz_mem, p.ports, p.nports);
    assert_int_equal(u.nports, 0);
    assert_int_equal(u.req.pods, 0);
    assert_int_equal(filter(p80, n, &u, NULL, 0), 0);
    sched_pod_clear(&p);
    json_decref(pod);
    sched_usage_clear(&u);
    json_decref(n);
}

/* ---- scores ---- */

static int least(const char *pod_text, json_t *node, sched_usage_t *u)
{
    json_t *pod = J("%s", pod_text);
    sched_pod_t p;
    sched_node_info_t ni;
    assert_true(sched_pod_parse(pod, &p) >= 0);
    assert_int_equal(sched_node_parse(node, &ni), 0);
    int s = sched_score_least(&p, &ni, u);
    sched_node_info_clear(&ni);
    sched_pod_clear(&p);
    json_decref(pod);
    return s;
}

static void test_scores(void **state)
{
    (void)state;
    json_t *n = node_json("n", "4", "10Gi", "110", "True", NULL, NULL);
    sched_usage_t u = {0};
    /* cpu (4000-1000)*100/4000 = 75, memory (10-5)*100/10 = 50: 62. */
    assert_int_equal(least(POD("1", "5Gi"), n, &u), 62);
    use(&u, POD("1", "1Gi"));
    /* cpu 2000 of 4000: 50; memory 6 of 10: 40: 45. */
    assert_int_equal(least(POD("1", "5Gi"), n, &u), 45);
    /* Request-less: 100m and 200Mi for scoring. cpu (4000-1100)*100/4000 =
     * 72; memory (10240-1024-200)*100/10240 = 88 (integer): 80. */
    assert_int_equal(least("{'spec':{'containers':[{'name':'c'}]}}", n, &u), 80);
    /* Over capacity scores 0 for that resource. */
    assert_int_equal(least(POD("4", "1Gi"), n, &u), (0 + 80) / 2);
    sched_usage_clear(&u);
    json_decref(n);
    n = node_json("n", "0", "0", "110", "True", NULL, NULL);
    assert_int_equal(least(POD("1", "1Gi"), n, &u), 0);
    json_decref(n);

    assert_int_equal(sched_score_spread(0, 0), 100);
    assert_int_equal(sched_score_spread(0, 4), 100);
    assert_int_equal(sched_score_spread(1, 4), 75);
    assert_int_equal(sched_score_spread(4, 4), 0);
}

/* ---- the failure message ---- */

static void test_message(void **state)
{
    (void)state;
    sched_hist_t h = {0};
    char *msg;
    assert_int_equal(sched_hist_add_bits(&h, SCHED_R_CPU, NULL, NULL), 0);
    assert_int_equal(sched_hist_add_bits(&h, SCHED_R_TAINT, "node.kubernetes.io/unreachable", ""),
                     0);
    assert_int_equal(sched_hist_add_bits(&h, SCHED_R_CPU, NULL, NULL), 0);
    assert_int_equal(sched_hist_message(&h, 3, &msg), 0);
    assert_string_equal(msg, "0/3 nodes are available: 1 node(s) had untolerated taint "
                             "{node.kubernetes.io/unreachable: }, 2 Insufficient cpu.");
    free(msg);
    sched_hist_free(&h);

    /* Every reason of a node counts; the "<n> <reason>" strings sort bytewise,
     * so 10 comes before 2. */
    for (int i = 0; i < 10; i++)
        assert_int_equal(sched_hist_add_bits(&h, SCHED_R_PODS | SCHED_R_MEM, NULL, NULL), 0);
    for (int i = 0; i < 2; i++)
        assert_int_equal(sched_hist_add_bits(&h, SCHED_R_CPU, 0, 0), 0);
    assert_int_equal(sched_hist_add_bits(&h, SCHED_R_AFFINITY, NULL, NULL), 0);
    assert_int_equal(sched_hist_add_bits(&h, SCHED_R_TAINT, "dedicated", "gpu"), 0);
    assert_int_equal(sched_hist_add_bits(&h, SCHED_R_UNSCHEDULABLE, NULL, NULL), 0);
    assert_int_equal(sched_hist_add_bits(&h, SCHED_R_PORTS, NULL, NULL), 0);
    assert_int_equal(sched_hist_message(&h, 16, &msg), 0);
    assert_string_equal(msg, "0/16 nodes are available: 1 node(s) didn't have free ports for the "
                             "requested pod ports, 1 node(s) didn't match Pod's node "
                             "affinity/selector, 1 node(s) had untolerated taint {dedicated: "
                             "gpu}, 1 node(s) were unschedulable, 10 Insufficient memory, 10 Too "
                             "many pods, 2 Insufficient cpu.");
    free(msg);
    sched_hist_free(&h);
    assert_int_equal(sched_hist_message(&h, 0, &msg), 0);
    assert_string_equal(msg, "no nodes available to schedule pods");
    free(msg);
}

/* ---- the cache ---- */

static json_t *pod_json(const char *name, const char *cpu, const char *owner)
{
    char ref[200] = "";
    if (owner)
        snprintf(ref, sizeof ref, ",'ownerReferences':[{'uid':'%s','controller':true}]", owner);
    return J("{'metadata':{'name':'%s','namespace':'d'%s},'spec':{'containers':[{'name':'c',"
             "'resources':{'requests':{'cpu':'%s','memory':'100Mi'}}}]}}",
             name, ref, cpu);
}

/* Schedule pending pod `name`: 0 and the node, or the error. */
static int sched(sched_cache_t *c, sched_scratch_t *w, const char *name, const char *cpu,
                 const char *owner, char *node, char **msg)
{
    char key[64];
    snprintf(key, sizeof key, "d/%s", name);
    json_t *pod = pod_json(name, cpu, owner);
    sched_pod_t p;
    assert_int_equal(sched_pod_parse(pod, &p), 0);
    int r = sched_cache_pod_pending(c, key, 0);
    assert_true(r >= 0);
    sched_decision_t d;
    int rc = sched_cache_schedule(c, key, &p, w, &d);
    if (node) snprintf(node, 256, "%s", d.node);
    if (msg)
        *msg = d.message;
    else
        free(d.message);
    sched_pod_clear(&p);
    json_decref(pod);
    return rc;
}

static void add_node(sched_cache_t *c, const char *name, const char *cpu, const char *pods)
{
    json_t *n = node_json(name, cpu, "100Gi", pods, "True", NULL, NULL);
    assert_true(sched_cache_node_set(c, n) >= 0);
    json_decref(n);
}

static void test_cache_assume(void **state)
{
    (void)state;
    sched_cache_t *c;
    sched_scratch_t w = {.seed = 1};
    assert_int_equal(sched_cache_new(&c), 0);
    char node[256], *msg;
    assert_int_equal(sched(c, &w, "p0", "100m", NULL, node, &msg), KP_ENOTFOUND);
    assert_string_equal(msg, "no nodes available to schedule pods");
    free(msg);
    add_node(c, "n1", "1", "110");
    /* The first pod is assumed on n1 at once: the second cannot have its room. */
    assert_int_equal(sched(c, &w, "p1", "600m", NULL, node, NULL), 0);
    assert_string_equal(node, "n1");
    assert_int_equal(sched(c, &w, "p2", "600m", NULL, node, &msg), KP_ENOTFOUND);
    assert_string_equal(msg, "0/1 nodes are available: 1 Insufficient cpu.");
    free(msg);
    /* Not pending any more: nothing to do. */
    assert_int_equal(sched(c, &w, "p1", "600m", NULL, node, NULL), KP_EEXIST);
    sched_cache_stats_t st;
    sched_cache_stats(c, &st);
    assert_int_equal(st.pending, 2); /* p0, p2 */
    assert_int_equal(st.assumed, 1);

    /* The informer confirms p1 on n1: counted once. */
    json_t *pj = pod_json("p1", "600m", NULL);
    sched_pod_t p;
    assert_int_equal(sched_pod_parse(pj, &p), 0);
    assert_int_equal(sched_cache_pod_bound(c, "d/p1", "n1", &p), 0);
    sched_res_t r;
    assert_int_equal(sched_cache_node_usage(c, "n1", &r), 0);
    assert_int_equal(r.cpu, 600);
    assert_int_equal(r.pods, 1);
    /* A failed bind of a pod the informer already reported changes nothing. */
    sched_cache_forget(c, "d/p1", "n1");
    assert_int_equal(sched_cache_node_usage(c, "n1", &r), 0);
    assert_int_equal(r.cpu, 600);

    /* p2 failed at some generation; filing it works, and taking the
     * unschedulable set hands it back once. */
    assert_int_equal(sched(c, &w, "p2", "600m", NULL, node, &msg), KP_ENOTFOUND);
    free(msg);
    sched_decision_t d;
    json_t *p2j = pod_json("p2", "600m", NULL);
    sched_pod_t p2;
    assert_int_equal(sched_pod_parse(p2j, &p2), 0);
    assert_int_equal(sched_cache_schedule(c, "d/p2", &p2, &w, &d), KP_ENOTFOUND);
    free(d.message);
    assert_int_equal(sched_cache_unschedulable(c, "d/p2", d.gen), 0);
    sched_cache_stats(c, &st);
    assert_int_equal(st.unschedulable, 1);
    /* A status-only update does not queue it again; a spec change would. */
    assert_int_equal(sched_cache_pod_pending(c, "d/p2", 0), 0);
    char **keys;
    size_t n;
    assert_int_equal(sched_cache_take_unschedulable(c, &keys, &n), 0);
    assert_int_equal(n, 1);
    assert_string_equal(keys[0], "d/p2");
    free(keys[0]);
    free(keys);
    assert_int_equal(sched_cache_take_unschedulable(c, &keys, &n), 0);
    assert_int_equal(n, 0);

    /* A change between the decision and the filing: retry at once. */
    assert_int_equal(sched_cache_schedule(c, "d/p2", &p2, &w, &d), KP_ENOTFOUND);
    free(d.message);
    add_node(c, "n2", "1", "110");
    assert_int_equal(sched_cache_unschedulable(c, "d/p2", d.gen), 1);
    /* A node update that changes nothing that matters is not a change
     * (also without labels at all). */
    json_t *n2 = J("{'metadata':{'name':'n2'},'status':{'allocatable':{'cpu':'1',"
                   "'memory':'100Gi','pods':'110'},'conditions':[{'type':'Ready',"
                   "'status':'True'}]}}");
    assert_int_equal(sched_cache_node_set(c, n2), 1); /* labels {} to none */
    json_decref(n2);
    n2 = J("{'metadata':{'name':'n2','resourceVersion':'8'},'status':{'allocatable':{'cpu':'1',"
           "'memory':'100Gi','pods':'110'},'conditions':[{'type':'Ready','status':'True',"
           "'lastHeartbeatTime':'x'}]}}");
    assert_int_equal(sched_cache_node_set(c, n2), 0);
    json_decref(n2);
    n2 = node_json("n2", "1", "100Gi", "110", "True", NULL, NULL);
    assert_int_equal(sched_cache_node_set(c, n2), 1); /* labels none to {} */
    json_decref(n2);
    n2 = node_json("n2", "1", "100Gi", "110", "True", NULL, NULL);
    json_object_set_new(json_object_get(n2, "metadata"), "resourceVersion", json_string("9"));
    assert_int_equal(sched_cache_node_set(c, n2), 0);
    json_decref(n2); /* the cache holds it now: read-only */
    n2 = node_json("n2", "1", "100Gi", "110", "True", NULL, "'a':'b'");
    assert_int_equal(sched_cache_node_set(c, n2), 1);
    json_decref(n2);
    assert_int_equal(sched_cache_schedule(c, "d/p2", &p2, &w, &d), 0);
    assert_string_equal(d.node, "n2");
    /* Deleting p1 frees n1 (and says so); a pod deleted while assumed too. */
    assert_int_equal(sched_cache_pod_remove(c, "d/p1"), 1);
    assert_int_equal(sched_cache_node_usage(c, "n1", &r), 0);
    assert_int_equal(r.cpu, 0);
    assert_int_equal(r.pods, 0);
    assert_int_equal(sched_cache_pod_remove(c, "d/p2"), 1);
    sched_cache_forget(c, "d/p2", "n2"); /* its bind then fails: a no-op */
    assert_int_equal(sched_cache_node_usage(c, "n2", &r), 0);
    assert_int_equal(r.cpu, 0);
    assert_int_equal(sched_cache_pod_remove(c, "d/p0"), 0);
    sched_cache_stats(c, &st);
    assert_int_equal(st.pending, 0);
    assert_int_equal(st.assumed, 0);
    assert_int_equal(st.bound, 0);
    assert_int_equal(st.nodes, 2);

    /* A pod bound elsewhere than assumed (another scheduler won) moves. */
    assert_int_equal(sched(c, &w, "p3", "600m", NULL, node, NULL), 0);
    const char *other = !strcmp(node, "n1") ? "n2" : "n1";
    json_t *p3j = pod_json("p3", "600m", NULL);
    sched_pod_t p3;
    assert_int_equal(sched_pod_parse(p3j, &p3), 0);
    assert_int_equal(sched_cache_pod_bound(c, "d/p3", other, &p3), 0);
    assert_int_equal(sched_cache_node_usage(c, node, &r), 0);
    assert_int_equal(r.cpu, 0);
    assert_int_equal(sched_cache_node_usage(c, other, &r), 0);
    assert_int_equal(r.cpu, 600);
    /* A deleted node is no candidate; its slot keeps its pods' usage. */
    sched_cache_node_delete(c, other);
    assert_int_equal(sched(c, &w, "p4", "600m", NULL, node, NULL), 0);
    assert_string_equal(node, !strcmp(other, "n1") ? "n2" : "n1");
    assert_int_equal(sched(c, &w, "p5", "600m", NULL, node, &msg), KP_ENOTFOUND);
    assert_string_equal(msg, "0/1 nodes are available: 1 Insufficient cpu.");
    free(msg);

    sched_pod_clear(&p3);
    json_decref(p3j);
    sched_pod_clear(&p2);
    json_decref(p2j);
    sched_pod_clear(&p);
    json_decref(pj);
    sched_scratch_free(&w);
    sched_cache_free(c);
}

static void test_cache_spread(void **state)
{
    (void)state;
    sched_cache_t *c;
    sched_scratch_t w = {.seed = 7};
    assert_int_equal(sched_cache_new(&c), 0);
    add_node(c, "a", "10", "110");
    add_node(c, "b", "10", "110");
    add_node(c, "c", "10", "110");
    /* Nine pods of one owner land three to a node. */
    int per[3] = {0};
    char node[256], name[32];
    for (int i = 0; i < 9; i++) {
        snprintf(name, sizeof name, "rs-%d", i);
        assert_int_equal(sched(c, &w, name, "100m", "uid-1", node, NULL), 0);
        per[node[0] - 'a']++;
    }
    for (int i = 0; i < 3; i++)
        assert_int_equal(per[i], 3);
    sched_scratch_free(&w);
    sched_cache_free(c);
}

/* Parallel workers never put more on a node than it has. */
typedef struct par {
    sched_cache_t *c;
    int id, placed;
} par_t;

static void *par_main(void *arg)
{
    par_t *a = arg;
    sched_scratch_t w = {.seed = (unsigned)a->id + 1};
    char name[32];
    for (int i = 0; i < 200; i++) {
        snprintf(name, sizeof name, "w%d-%d", a->id, i);
        int rc = sched(a->c, &w, name, "300m", NULL, NULL, NULL);
        assert_true(rc == 0 || rc == KP_ENOTFOUND);
        if (rc == 0) a->placed++;
    }
    sched_scratch_free(&w);
    return NULL;
}

static void test_cache_parallel(void **state)
{
    (void)state;
    sched_cache_t *c;
    assert_int_equal(sched_cache_new(&c), 0);
    char name[32];
    for (int i = 0; i < 10; i++) {
        snprintf(name, sizeof name, "n%d", i);
        add_node(c, name, "1", "110"); /* three 300m pods each */
    }
    par_t a[8];
    pthread_t t[8];
    for (int i = 0; i < 8; i++) {
        a[i] = (par_t){c, i, 0};
        assert_int_equal(pthread_create(&t[i], NULL, par_main, &a[i]), 0);
    }
    int placed = 0;
    for (int i = 0; i < 8; i++) {
        pthread_join(t[i], NULL);
        placed += a[i].placed;
    }
    assert_int_equal(placed, 30);
    for (int i = 0; i < 10; i++) {
        snprintf(name, sizeof name, "n%d", i);
        sched_res_t r;
        assert_int_equal(sched_cache_node_usage(c, name, &r), 0);
        assert_int_equal(r.cpu, 900);
        assert_int_equal(r.pods, 3);
    }
    sched_cache_free(c);
}

/* 10,000 pods onto 200 nodes: the decisions alone (filter and score over
 * every node, assume) must take a small part of the budget. */
static void test_cache_scale(void **state)
{
    (void)state;
    sched_cache_t *c;
    sched_scratch_t w = {.seed = 3};
    assert_int_equal(sched_cache_new(&c), 0);
    char name[32];
    for (int i = 0; i < 200; i++) {
        snprintf(name, sizeof name, "node-%03d", i);
        json_t *n = node_json(name, "32", "128Gi", "110", "True",
                              "'taints':[{'key':'k','value':'v','effect':'PreferNoSchedule'}]",
                              "'zone':'z1','kubernetes.io/hostname':'h'");
        assert_true(sched_cache_node_set(c, n) >= 0);
        json_decref(n);
    }
    json_t *pod = J("{'metadata':{'name':'x','namespace':'d','ownerReferences':[{'uid':'rs',"
                    "'controller':true}]},'spec':{'nodeSelector':{'zone':'z1'},"
                    "'tolerations':[{'operator':'Exists'}],'containers':[{'name':'c',"
                    "'resources':{'requests':{'cpu':'100m','memory':'128Mi'}}}]}}");
    sched_pod_t p;
    assert_int_equal(sched_pod_parse(pod, &p), 0);
    int64_t t0 = clock_mono_ns();
    char key[32];
    for (int i = 0; i < 10000; i++) {
        snprintf(key, sizeof key, "d/p%05d", i);
        assert_int_equal(sched_cache_pod_pending(c, key, 0), 1);
        sched_decision_t d;
        assert_int_equal(sched_cache_schedule(c, key, &p, &w, &d), 0);
    }
    double sec = (double)(clock_mono_ns() - t0) / 1e9;
    fprintf(stderr, "10000 decisions over 200 nodes: %.3f s (%.1f us each)\n", sec,
            sec * 1e6 / 10000);
    assert_true(sec < 5.0); /* generous for sanitizer builds; ~0.3 s optimised */
    for (int i = 0; i < 200; i++) {
        snprintf(name, sizeof name, "node-%03d", i);
        sched_res_t r;
        assert_int_equal(sched_cache_node_usage(c, name, &r), 0);
        assert_int_equal(r.pods, 50); /* least allocated + spreading: even */
    }
    sched_pod_clear(&p);
    json_decref(pod);
    sched_scratch_free(&w);
    sched_cache_free(c);
}

/* Config checks, and a start that cannot sync (no server) leaving nothing
 * running; metrics work in every state. */
static void test_lifecycle(void **state)
{
    (void)state;
    kc_config_t kc = {.server = "https://127.0.0.1:1", .timeout_ms = 200};
    kc_client_t *c;
    assert_int_equal(kc_client_new(&kc, &c), 0);
    sched_t *s;
    sched_config_t bad = {.workers = -1};
    assert_int_equal(sched_new(c, &bad, &s), KP_EINVAL);
    bad = (sched_config_t){.backoff_initial_ms = 5000, .backoff_max_ms = 1000};
    assert_int_equal(sched_new(c, &bad, &s), KP_EINVAL);
    assert_int_equal(sched_new(NULL, NULL, &s), KP_EINVAL);

    sched_config_t cfg = {.name = "mine", .workers = 2, .sync_timeout_ms = 300};
    assert_int_equal(sched_new(c, &cfg, &s), 0);
    char *text;
    assert_int_equal(sched_metrics(s, &text), 0);
    assert_non_null(strstr(text, "\nkplane_scheduler_pending_pods 0\n"));
    assert_non_null(
        strstr(text, "kplane_scheduler_schedule_duration_seconds_bucket{le=\"+Inf\"} 0\n"));
    free(text);
    sched_stop(s); /* not running: a no-op */
    assert_int_equal(sched_start(s), KP_ETIMEDOUT);
    assert_int_equal(sched_start(s), KP_ETIMEDOUT); /* may be tried again */
    sched_stop(s);
    assert_int_equal(sched_metrics(s, &text), 0);
    free(text);
    sched_free(s);
    sched_free(NULL);
    kc_client_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_quantity_cpu),   cmocka_unit_test(test_quantity_memory),
        cmocka_unit_test(test_pod_requests),   cmocka_unit_test(test_node_parse),
        cmocka_unit_test(test_tolerations),    cmocka_unit_test(test_filter_taints),
        cmocka_unit_test(test_affinity),       cmocka_unit_test(test_resource_fit),
        cmocka_unit_test(test_scores),         cmocka_unit_test(test_message),
        cmocka_unit_test(test_cache_assume),   cmocka_unit_test(test_cache_spread),
        cmocka_unit_test(test_cache_parallel), cmocka_unit_test(test_cache_scale),
        cmocka_unit_test(test_lifecycle),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
