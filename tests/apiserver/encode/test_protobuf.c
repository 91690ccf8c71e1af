/*
 * test_protobuf.c -- src/apiserver/protobuf.c, protobuf_enc.c and the
 * generated tables (protobuf_gen.c): Kubernetes protobuf bodies to JSON and
 * back.
 *
 * pb/<name>.bin are real bodies kubectl 1.32 sent (see pb/README.md);
 * pb/<name>.json is what `kubectl create ... --dry-run=client -o json` prints
 * for the same command, and the decoded body must equal it as a JSON value.
 * Hand-built bodies cover what kubectl's create commands never send (probes,
 * volumes, packed ints, times, maps of bytes and quantities, merges) and
 * malformed input, which must fail with KP_EINVAL and a message, never crash
 * (this binary runs under ASan and UBSan).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apiserver/encode/protobuf.h"
#include "apiserver/encode/protobuf_schema.h"
#include "lib/err.h"

#ifndef PB_FIXTURES
#error "PB_FIXTURES must name the directory of the pb/ fixtures"
#endif

/* ---- helpers ---- */

static json_t *js(const char *text)
{
    json_error_t e;
    json_t *j = json_loads(text, 0, &e);
    if (!j) fail_msg("bad test JSON %s: %s (column %d)", text, e.text, e.column);
    return j;
}

static void *read_fixture(const char *name, size_t *len)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", PB_FIXTURES, name);
    FILE *f = fopen(path, "rb");
    if (!f) fail_msg("cannot open fixture %s", path);
    size_t cap = 1 << 16, n = 0;
    unsigned char *b = malloc(cap);
    assert_non_null(b);
    size_t got;
    while ((got = fread(b + n, 1, cap - n, f)) > 0)
        n += got;
    fclose(f);
    assert_true(n < cap);
    *len = n;
    return b;
}

static void assert_json_eq(json_t *got, json_t *want)
{
    if (json_equal(got, want)) return;
    char *g = json_dumps(got, JSON_SORT_KEYS | JSON_INDENT(1));
    char *w = json_dumps(want, JSON_SORT_KEYS | JSON_INDENT(1));
    print_error("got:\n%s\nwant:\n%s\n", g, w);
    free(g);
    free(w);
    fail_msg("decoded JSON differs");
}

static json_t *decode_ok(const void *body, size_t len)
{
    char err[512] = "";
    json_t *out = (json_t *)1;
    int rc = api_pb_decode(body, len, &out, err, sizeof err);
    if (rc) fail_msg("decode failed (%d): %s", rc, err);
    assert_non_null(out);
    assert_true(json_is_object(out));
    return out;
}

/* Decode must fail with KP_EINVAL and a message containing `want`. */
static void decode_err(const void *body, size_t len, const char *want)
{
    char err[512] = "";
    json_t *out = (json_t *)1;
    int rc = api_pb_decode(body, len, &out, err, sizeof err);
    if (rc != KP_EINVAL) fail_msg("want KP_EINVAL (\"%s\"), got %d (%s)", want, rc, err);
    assert_null(out);
    if (!strstr(err, want)) fail_msg("error \"%s\" lacks \"%s\"", err, want);
}

/* ---- a protobuf writer for hand-built bodies ---- */

typedef struct pbw {
    uint8_t b[8192];
    size_t n;
} pbw_t;

static void w_raw(pbw_t *w, const void *p, size_t n)
{
    assert_true(w->n + n <= sizeof w->b);
    memcpy(w->b + w->n, p, n);
    w->n += n;
}

static void w_varint(pbw_t *w, uint64_t v)
{
    uint8_t t[10];
    size_t n = 0;
    do {
        t[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
    w_raw(w, t, n);
}

static void w_key(pbw_t *w, uint32_t num, int wt)
{
    w_varint(w, (uint64_t)num << 3 | (uint64_t)wt);
}

/* varint field */
static void w_u(pbw_t *w, uint32_t num, uint64_t v)
{
    w_key(w, num, 0);
    w_varint(w, v);
}

/* length-delimited field */
static void w_b(pbw_t *w, uint32_t num, const void *p, size_t n)
{
    w_key(w, num, 2);
    w_varint(w, n);
    w_raw(w, p, n);
}

static void w_s(pbw_t *w, uint32_t num, const char *s)
{
    w_b(w, num, s, strlen(s));
}

static void w_m(pbw_t *w, uint32_t num, const pbw_t *sub)
{
    w_b(w, num, sub->b, sub->n);
}

/* map<string, string> entry */
static void w_kv(pbw_t *w, uint32_t num, const char *k, const char *v)
{
    pbw_t e = {0};
    w_s(&e, 1, k);
    w_s(&e, 2, v);
    w_m(w, num, &e);
}

/* The whole body: magic, then runtime.Unknown {typeMeta, raw}. */
static void w_body(pbw_t *out, const char *api_version, const char *kind, const pbw_t *raw)
{
    pbw_t tm = {0};
    w_raw(out, "k8s\0", 4);
    w_s(&tm, 1, api_version);
    w_s(&tm, 2, kind);
    w_m(out, 1, &tm);
    if (raw) w_m(out, 2, raw);
}

/* A metadata message with just a name. */
static void w_meta(pbw_t *w, uint32_t num, const char *name)
{
    pbw_t m = {0};
    w_s(&m, 1, name);
    w_m(w, num, &m);
}

/* Decode `body` and compare with the JSON text `want`. */
static void expect(const pbw_t *body, const char *want)
{
    json_t *got = decode_ok(body->b, body->n);
    json_t *w = js(want);
    assert_json_eq(got, w);
    json_decref(got);
    json_decref(w);
}

/* ---- real kubectl bodies ---- */

/* Drop what `--dry-run=client -o json` prints but the wire cannot carry:
 * creationTimestamp: null (a zero metav1.Time, which the decoder leaves
 * out rather than printing null; both mean "unset" to an API server). */
static void drop_null_timestamps(json_t *j)
{
    if (json_is_array(j)) {
        size_t i;
        json_t *v;
        json_array_foreach(j, i, v) drop_null_timestamps(v);
        return;
    }
    if (!json_is_object(j)) return;
    json_t *ts = json_object_get(j, "creationTimestamp");
    if (ts && json_is_null(ts)) json_object_del(j, "creationTimestamp");
    const char *k;
    json_t *v;
    json_object_foreach(j, k, v) drop_null_timestamps(v);
}

static const char *const fixtures[] = {
    "namespace",
    "configmap",
    "secret",
    "deployment",
    "job",
    "serviceaccount",
    "service",
    "cronjob",
    "quota",
    "service-nodeport",
    "service-externalname",
    "secret-docker",
    "deployment-replicas0",
};
#define NFIXTURES (sizeof fixtures / sizeof fixtures[0])

static void test_kubectl_fixtures(void **state)
{
    (void)state;
    for (size_t i = 0; i < NFIXTURES; i++) {
        char name[128];
        size_t len, jlen;
        snprintf(name, sizeof name, "%s.bin", fixtures[i]);
        void *body = read_fixture(name, &len);
        snprintf(name, sizeof name, "%s.json", fixtures[i]);
        char *text = read_fixture(name, &jlen);
        json_error_t e;
        json_t *want = json_loadb(text, jlen, 0, &e);
        if (!want) fail_msg("%s: %s", name, e.text);
        drop_null_timestamps(want);
        json_t *got = decode_ok(body, len);
        print_message("%s\n", fixtures[i]);
        assert_json_eq(got, want);
        json_decref(got);
        json_decref(want);
        free(body);
        free(text);
    }
}

/* The exact output for one fixture, spelled out: gogo-protobuf writes every
 * non-pointer field, so the wire has name, generateName, namespace, ... all
 * present, most of them "" or 0; only what Go's JSON would print survives. */
static void test_namespace_exact(void **state)
{
    (void)state;
    size_t len;
    void *body = read_fixture("namespace.bin", &len);
    json_t *got = decode_ok(body, len);
    char *text = json_dumps(got, JSON_COMPACT);
    assert_string_equal(text, "{\"kind\":\"Namespace\",\"apiVersion\":\"v1\",\"metadata\":"
                              "{\"name\":\"t1\"},\"spec\":{},\"status\":{}}");
    free(text);
    json_decref(got);
    free(body);
}

/* Every kind in the table decodes an empty object, and a body without raw. */
static void test_roots_empty(void **state)
{
    (void)state;
    const api_pb_root_t *r;
    for (size_t i = 0; (r = api__pb_root_at(i)) != NULL; i++) {
        pbw_t body = {0}, raw = {0};
        char want[256];
        snprintf(want, sizeof want, "{\"kind\":\"%s\",\"apiVersion\":\"%s\"}", r->kind,
                 r->api_version);
        w_body(&body, r->api_version, r->kind, &raw);
        expect(&body, want);
        pbw_t none = {0};
        w_body(&none, r->api_version, r->kind, NULL);
        expect(&none, want);
        assert_ptr_equal(api__pb_root_find(r->api_version, r->kind), r);
    }
    assert_null(api__pb_root_find("v1", "Widget"));
    assert_null(api__pb_root_find("apps/v1", "Namespace"));
}

/* ---- hand-built bodies: what kubectl create never sends ---- */

/* A pod template with probes, env sources, resources, volumes and security
 * settings, inside a Deployment. */
static void test_pod_template(void **state)
{
    (void)state;
    pbw_t c = {0}, t = {0}, x = {0}, y = {0}, z = {0};

    /* container */
    w_s(&c, 1, "app");
    w_s(&c, 2, "nginx");
    w_s(&c, 3, "sh");
    w_s(&c, 3, "-c");
    w_s(&c, 4, "");     /* an empty element stays */
    w_s(&x, 1, "http"); /* ContainerPort.name */
    w_u(&x, 2, 0);      /* hostPort 0: omitempty */
    w_u(&x, 3, 8080);   /* containerPort */
    w_s(&x, 4, "TCP");
    w_m(&c, 6, &x);
    memset(&x, 0, sizeof x);
    /* env: valueFrom.configMapKeyRef {localObjectReference (inline) {name}, key} */
    {
        pbw_t ev = {0}, src = {0}, sel = {0}, lor = {0};
        w_s(&lor, 1, "cfg");
        w_m(&sel, 1, &lor);
        w_s(&sel, 2, "k");
        w_u(&sel, 3, 0); /* optional=false is a *bool: kept */
        w_m(&src, 3, &sel);
        w_s(&ev, 1, "A");
        w_s(&ev, 2, "");
        w_m(&ev, 3, &src);
        w_m(&c, 7, &ev);
        pbw_t ev2 = {0}, src2 = {0}, fr = {0};
        w_s(&fr, 2, "metadata.name");
        w_m(&src2, 1, &fr);
        w_s(&ev2, 1, "POD");
        w_m(&ev2, 3, &src2);
        w_m(&c, 7, &ev2);
    }
    /* envFrom: secretRef {localObjectReference {name}} */
    {
        pbw_t ef = {0}, sr = {0}, lor = {0};
        w_s(&lor, 1, "sec");
        w_m(&sr, 1, &lor);
        w_s(&ef, 1, "P_");
        w_m(&ef, 3, &sr);
        w_m(&c, 19, &ef);
    }
    /* resources: limits {cpu: 500m}, requests {memory: 64Mi} */
    {
        pbw_t res = {0}, e = {0}, q = {0};
        w_s(&q, 1, "500m");
        w_s(&e, 1, "cpu");
        w_m(&e, 2, &q);
        w_m(&res, 1, &e);
        memset(&e, 0, sizeof e);
        memset(&q, 0, sizeof q);
        w_s(&q, 1, "64Mi");
        w_s(&e, 1, "memory");
        w_m(&e, 2, &q);
        w_m(&res, 2, &e);
        w_m(&c, 8, &res);
    }
    /* volumeMounts */
    w_s(&x, 1, "data");
    w_u(&x, 2, 1);
    w_s(&x, 3, "/data");
    w_s(&x, 4, "");
    w_m(&c, 9, &x);
    memset(&x, 0, sizeof x);
    /* livenessProbe: handler (inline) {httpGet {path, port: "http"}}, period */
    {
        pbw_t pr = {0}, h = {0}, hg = {0}, port = {0};
        w_u(&port, 1, 1);
        w_s(&port, 3, "http");
        w_s(&hg, 1, "/healthz");
        w_m(&hg, 2, &port);
        w_m(&h, 2, &hg);
        w_m(&pr, 1, &h);
        w_u(&pr, 2, 0); /* initialDelaySeconds 0: omitempty */
        w_u(&pr, 4, 10);
        w_m(&c, 10, &pr);
    }
    /* readinessProbe: tcpSocket port 8080; startupProbe: exec */
    {
        pbw_t pr = {0}, h = {0}, ts = {0}, port = {0};
        w_u(&port, 2, 8080);
        w_m(&ts, 1, &port);
        w_m(&h, 3, &ts);
        w_m(&pr, 1, &h);
        w_m(&c, 11, &pr);
        pbw_t sp = {0}, sh = {0}, ex = {0};
        w_s(&ex, 1, "true");
        w_m(&sh, 1, &ex);
        w_m(&sp, 1, &sh);
        w_u(&sp, 7, 0); /* terminationGracePeriodSeconds *int64 0: kept */
        w_m(&c, 22, &sp);
    }
    /* securityContext: runAsUser 0 and allowPrivilegeEscalation false are
     * pointers (kept); capabilities.drop */
    {
        pbw_t sc = {0}, cap = {0};
        w_s(&cap, 2, "ALL");
        w_m(&sc, 1, &cap);
        w_u(&sc, 4, 0);
        w_u(&sc, 7, 0);
        w_m(&c, 15, &sc);
    }
    w_u(&c, 16, 0); /* stdin false: omitempty */

    /* pod spec */
    w_m(&y, 2, &c);
    /* volumes: name + volumeSource (inline) {configMap {lor {name}, defaultMode}} */
    {
        pbw_t v = {0}, vs = {0}, cm = {0}, lor = {0}, kp = {0};
        w_s(&lor, 1, "cfg");
        w_m(&cm, 1, &lor);
        w_s(&kp, 1, "a");
        w_s(&kp, 2, "a.txt");
        w_m(&cm, 2, &kp);
        w_u(&cm, 3, 420);
        w_m(&vs, 19, &cm);
        w_s(&v, 1, "cfgvol");
        w_m(&v, 2, &vs);
        w_m(&y, 1, &v);
        pbw_t v2 = {0}, vs2 = {0}, ed = {0};
        w_m(&vs2, 2, &ed); /* emptyDir {} */
        w_s(&v2, 1, "data");
        w_m(&v2, 2, &vs2);
        w_m(&y, 1, &v2);
        pbw_t v3 = {0}, vs3 = {0}, hp = {0};
        w_s(&hp, 1, "/var/log");
        w_s(&hp, 2, "Directory");
        w_m(&vs3, 1, &hp);
        w_s(&v3, 1, "logs");
        w_m(&v3, 2, &vs3);
        w_m(&y, 1, &v3);
    }
    w_s(&y, 3, "Always");
    w_kv(&y, 7, "disk", "ssd");
    w_u(&y, 21, 0); /* automountServiceAccountToken false: kept */
    w_u(&y, 11, 0); /* hostNetwork false: omitempty */
    /* securityContext: supplementalGroups packed [1000, 2000] then one
     * unpacked 3000; fsGroup 2000 */
    {
        pbw_t psc = {0}, packed = {0};
        w_varint(&packed, 1000);
        w_varint(&packed, 2000);
        w_m(&psc, 4, &packed);
        w_u(&psc, 4, 3000);
        w_u(&psc, 5, 2000);
        w_m(&y, 14, &psc);
    }
    /* tolerations */
    {
        pbw_t tol = {0};
        w_s(&tol, 1, "k");
        w_s(&tol, 2, "Exists");
        w_s(&tol, 3, "");
        w_s(&tol, 4, "NoExecute");
        w_u(&tol, 5, 60);
        w_m(&y, 22, &tol);
    }
    w_meta(&t, 1, "");
    w_m(&t, 2, &y);

    /* deployment spec: replicas 0 (a pointer: kept), strategy rollingUpdate */
    pbw_t spec = {0}, strat = {0}, ru = {0}, mu = {0}, ms = {0};
    w_u(&spec, 1, 0);
    w_m(&spec, 3, &t);
    w_u(&mu, 1, 0);
    w_u(&mu, 2, 0);
    w_u(&ms, 1, 1);
    w_s(&ms, 3, "25%");
    w_m(&ru, 1, &mu);
    w_m(&ru, 2, &ms);
    w_s(&strat, 1, "RollingUpdate");
    w_m(&strat, 2, &ru);
    w_m(&spec, 4, &strat);
    pbw_t raw = {0}, body = {0};
    w_meta(&raw, 1, "web");
    w_m(&raw, 2, &spec);
    w_body(&body, "apps/v1", "Deployment", &raw);
    (void)z;

    expect(&body,
           "{\"kind\":\"Deployment\",\"apiVersion\":\"apps/v1\",\"metadata\":{\"name\":\"web\"},"
           "\"spec\":{\"replicas\":0,"
           " \"strategy\":{\"type\":\"RollingUpdate\",\"rollingUpdate\":"
           "  {\"maxUnavailable\":0,\"maxSurge\":\"25%\"}},"
           " \"template\":{\"metadata\":{},\"spec\":{"
           "  \"volumes\":["
           "   {\"name\":\"cfgvol\",\"configMap\":{\"name\":\"cfg\",\"items\":[{\"key\":\"a\","
           "     \"path\":\"a.txt\"}],\"defaultMode\":420}},"
           "   {\"name\":\"data\",\"emptyDir\":{}},"
           "   {\"name\":\"logs\",\"hostPath\":{\"path\":\"/var/log\",\"type\":\"Directory\"}}],"
           "  \"restartPolicy\":\"Always\",\"nodeSelector\":{\"disk\":\"ssd\"},"
           "  \"automountServiceAccountToken\":false,"
           "  \"securityContext\":{\"supplementalGroups\":[1000,2000,3000],\"fsGroup\":2000},"
           "  \"tolerations\":[{\"key\":\"k\",\"operator\":\"Exists\",\"effect\":\"NoExecute\","
           "    \"tolerationSeconds\":60}],"
           "  \"containers\":[{\"name\":\"app\",\"image\":\"nginx\",\"command\":[\"sh\",\"-c\"],"
           "   \"args\":[\"\"],"
           "   \"ports\":[{\"name\":\"http\",\"containerPort\":8080,\"protocol\":\"TCP\"}],"
           "   \"env\":[{\"name\":\"A\",\"valueFrom\":{\"configMapKeyRef\":{\"name\":\"cfg\","
           "     \"key\":\"k\",\"optional\":false}}},"
           "    {\"name\":\"POD\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"metadata.name\"}}}],"
           "   \"envFrom\":[{\"prefix\":\"P_\",\"secretRef\":{\"name\":\"sec\"}}],"
           "   \"resources\":{\"limits\":{\"cpu\":\"500m\"},\"requests\":{\"memory\":\"64Mi\"}},"
           "   \"volumeMounts\":[{\"name\":\"data\",\"readOnly\":true,\"mountPath\":\"/data\"}],"
           "   \"livenessProbe\":{\"httpGet\":{\"path\":\"/healthz\",\"port\":\"http\"},"
           "     \"periodSeconds\":10},"
           "   \"readinessProbe\":{\"tcpSocket\":{\"port\":8080}},"
           "   \"startupProbe\":{\"exec\":{\"command\":[\"true\"]},"
           "     \"terminationGracePeriodSeconds\":0},"
           "   \"securityContext\":{\"capabilities\":{\"drop\":[\"ALL\"]},\"runAsUser\":0,"
           "     \"allowPrivilegeEscalation\":false}}]}}}}");
}

/* JobSpec's pointer fields keep explicit zeros; a pod failure policy with a
 * packed list of exit codes; a CronJob around it. */
static void test_job_fields(void **state)
{
    (void)state;
    pbw_t spec = {0}, tmpl = {0}, ps = {0}, c = {0}, pfp = {0}, rule = {0}, oec = {0}, vals = {0};
    w_s(&c, 1, "main");
    w_s(&c, 2, "busybox");
    w_m(&ps, 2, &c);
    w_s(&ps, 3, "Never");
    w_m(&tmpl, 2, &ps);
    w_u(&spec, 1, 0);   /* parallelism */
    w_u(&spec, 2, 3);   /* completions */
    w_u(&spec, 3, 600); /* activeDeadlineSeconds */
    w_u(&spec, 7, 0);   /* backoffLimit */
    w_u(&spec, 8, 0);   /* ttlSecondsAfterFinished */
    w_s(&spec, 9, "Indexed");
    w_u(&spec, 10, 0); /* suspend false */
    w_m(&spec, 6, &tmpl);
    w_s(&oec, 1, "main");
    w_s(&oec, 2, "In");
    w_varint(&vals, 1);
    w_varint(&vals, 42);
    w_m(&oec, 3, &vals);
    w_s(&rule, 1, "FailJob");
    w_m(&rule, 2, &oec);
    w_m(&pfp, 1, &rule);
    w_m(&spec, 11, &pfp);
    pbw_t raw = {0}, body = {0};
    w_meta(&raw, 1, "j");
    w_m(&raw, 2, &spec);
    w_body(&body, "batch/v1", "Job", &raw);
    const char *spec_json =
        "{\"parallelism\":0,\"completions\":3,\"activeDeadlineSeconds\":600,"
        "\"backoffLimit\":0,\"ttlSecondsAfterFinished\":0,\"completionMode\":\"Indexed\","
        "\"suspend\":false,\"template\":{\"spec\":{\"containers\":[{\"name\":\"main\","
        "\"image\":\"busybox\"}],\"restartPolicy\":\"Never\"}},"
        "\"podFailurePolicy\":{\"rules\":[{\"action\":\"FailJob\",\"onExitCodes\":"
        "{\"containerName\":\"main\",\"operator\":\"In\",\"values\":[1,42]}}]}}";
    char want[2048];
    snprintf(want, sizeof want,
             "{\"kind\":\"Job\",\"apiVersion\":\"batch/v1\",\"metadata\":{\"name\":\"j\"},"
             "\"spec\":%s}",
             spec_json);
    expect(&body, want);

    pbw_t cspec = {0}, jt = {0}, craw = {0}, cbody = {0};
    w_m(&jt, 2, &spec);
    w_s(&cspec, 1, "@hourly");
    w_s(&cspec, 8, "Etc/UTC");
    w_u(&cspec, 2, 0); /* startingDeadlineSeconds *int64 */
    w_s(&cspec, 3, "");
    w_m(&cspec, 5, &jt);
    w_meta(&craw, 1, "cj");
    w_m(&craw, 2, &cspec);
    w_body(&cbody, "batch/v1", "CronJob", &craw);
    snprintf(want, sizeof want,
             "{\"kind\":\"CronJob\",\"apiVersion\":\"batch/v1\",\"metadata\":{\"name\":\"cj\"},"
             "\"spec\":{\"schedule\":\"@hourly\",\"timeZone\":\"Etc/UTC\","
             "\"startingDeadlineSeconds\":0,\"jobTemplate\":{\"spec\":%s}}}",
             spec_json);
    expect(&cbody, want);
}

/* Varint edge cases, last-wins scalars, merged messages, and a zero that
 * erases an earlier value. */
static void test_scalars_and_merges(void **state)
{
    (void)state;
    pbw_t raw = {0}, m1 = {0}, m2 = {0}, spec = {0}, c = {0}, port = {0}, ps = {0}, t = {0};
    w_s(&m1, 1, "first");
    w_s(&m1, 2, "gen-");
    w_u(&m1, 7, UINT64_MAX); /* generation -1, a 10-byte varint */
    w_m(&raw, 1, &m1);
    w_s(&m2, 1, "second");   /* last wins */
    w_s(&m2, 2, "");         /* a zero erases generateName */
    w_kv(&m2, 11, "a", "1"); /* merges into the same metadata */
    w_kv(&m2, 11, "a", "2"); /* a repeated key: the last wins */
    w_kv(&m2, 11, "b", "");
    w_m(&raw, 1, &m2);
    w_s(&c, 1, "c");
    w_u(&port, 3, (uint64_t)(int64_t)-5); /* int32 -5 as protobuf writes it */
    w_m(&c, 6, &port);
    w_u(&c, 16, 7); /* any non-zero varint is true */
    w_m(&ps, 2, &c);
    w_m(&t, 2, &ps);
    w_u(&spec, 1, 0x1ffffffffULL); /* int32 keeps the low 32 bits: -1 */
    w_m(&spec, 3, &t);
    w_u(&spec, 5, 3);
    w_m(&raw, 2, &spec);
    pbw_t spec2 = {0};
    w_u(&spec2, 5, 0); /* a second spec: minReadySeconds 0 erases 3 */
    w_u(&spec2, 7, 1); /* and adds paused */
    w_m(&raw, 2, &spec2);
    pbw_t body = {0};
    w_body(&body, "apps/v1", "Deployment", &raw);
    expect(&body,
           "{\"kind\":\"Deployment\",\"apiVersion\":\"apps/v1\",\"metadata\":{\"name\":\"second\","
           "\"generation\":-1,\"labels\":{\"a\":\"2\",\"b\":\"\"}},\"spec\":{\"replicas\":-1,"
           "\"template\":{\"spec\":{\"containers\":[{\"name\":\"c\",\"ports\":[{\"containerPort\":-"
           "5}],"
           "\"stdin\":true}]}},\"paused\":true}}");
}

/* metav1.Time: RFC 3339 in UTC, seconds only; zero times are left out. */
static void test_times(void **state)
{
    (void)state;
    pbw_t raw = {0}, meta = {0}, ct = {0}, dt = {0}, status = {0}, st = {0}, cond = {0}, lt = {0};
    w_s(&meta, 1, "t");
    w_u(&ct, 1, 1700000000);
    w_u(&ct, 2, 999999999); /* the fraction is dropped */
    w_m(&meta, 8, &ct);
    w_u(&dt, 1, 1700000000);
    w_u(&dt, 2, 1500000000); /* nanos carry a whole second */
    w_m(&meta, 9, &dt);
    w_m(&raw, 1, &meta);
    w_u(&st, 1, (uint64_t)(int64_t)-62135596800LL); /* Go's zero time: left out */
    w_m(&status, 2, &st);
    w_u(&lt, 1, 0); /* the Unix epoch is a real time */
    w_s(&cond, 1, "Complete");
    w_s(&cond, 2, "True");
    w_m(&cond, 4, &lt);
    pbw_t empty = {0};
    w_m(&cond, 3, &empty); /* no bytes: the zero time, left out */
    w_m(&status, 1, &cond);
    w_m(&raw, 3, &status);
    pbw_t body = {0};
    w_body(&body, "batch/v1", "Job", &raw);
    expect(&body, "{\"kind\":\"Job\",\"apiVersion\":\"batch/v1\",\"metadata\":{\"name\":\"t\","
                  "\"creationTimestamp\":\"2023-11-14T22:13:20Z\","
                  "\"deletionTimestamp\":\"2023-11-14T22:13:21Z\"},\"status\":{\"conditions\":"
                  "[{\"type\":\"Complete\",\"status\":\"True\","
                  "\"lastTransitionTime\":\"1970-01-01T00:00:00Z\"}]}}");

    pbw_t raw2 = {0}, meta2 = {0}, big = {0}, body2 = {0};
    w_u(&big, 1, 253402300800ULL); /* year 10000 */
    w_m(&meta2, 8, &big);
    w_m(&raw2, 1, &meta2);
    w_body(&body2, "v1", "Namespace", &raw2);
    decode_err(body2.b, body2.n,
               "Namespace.metadata.creationTimestamp: time 253402300800 is "
               "outside the years 0000-9999");

    /* the extremes of int64, with nanos that would push them further */
    for (int sign = 0; sign < 2; sign++) {
        pbw_t r3 = {0}, m3 = {0}, t3 = {0}, b3 = {0};
        w_u(&t3, 1, sign ? (uint64_t)INT64_MIN : (uint64_t)INT64_MAX);
        w_u(&t3, 2, sign ? (uint64_t)(int64_t)-999999999 : 999999999);
        w_m(&m3, 8, &t3);
        w_m(&r3, 1, &m3);
        w_body(&b3, "v1", "Namespace", &r3);
        decode_err(b3.b, b3.n, "is outside the years 0000-9999");
    }
}

/* bytes in maps are base64; missing map values are the value type's zero. */
static void test_maps(void **state)
{
    (void)state;
    pbw_t raw = {0}, e = {0}, body = {0};
    static const uint8_t bin[] = {0x00, 0xff, 0x10};
    w_meta(&raw, 1, "s");
    w_s(&e, 1, "bin");
    w_b(&e, 2, bin, sizeof bin);
    w_m(&raw, 2, &e);
    memset(&e, 0, sizeof e);
    w_s(&e, 1, "empty");
    w_b(&e, 2, "", 0);
    w_m(&raw, 2, &e);
    memset(&e, 0, sizeof e);
    w_s(&e, 1, "novalue");
    w_m(&raw, 2, &e);
    memset(&e, 0, sizeof e);
    w_b(&e, 2, "v", 1); /* no key: the empty key */
    w_m(&raw, 2, &e);
    w_kv(&raw, 4, "plain", "text");
    w_s(&raw, 3, "Opaque");
    w_u(&raw, 5, 1);
    w_body(&body, "v1", "Secret", &raw);
    expect(&body, "{\"kind\":\"Secret\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"s\"},"
                  "\"data\":{\"bin\":\"AP8Q\",\"empty\":\"\",\"novalue\":\"\",\"\":\"dg==\"},"
                  "\"stringData\":{\"plain\":\"text\"},\"type\":\"Opaque\",\"immutable\":true}");

    pbw_t qraw = {0}, spec = {0}, qe = {0}, qbody = {0}, q = {0}, cm = {0}, cmbody = {0};
    w_s(&qe, 1, "pods");
    w_m(&spec, 1, &qe); /* a quantity entry without a value: "0" */
    memset(&qe, 0, sizeof qe);
    w_s(&q, 1, "10Gi");
    w_s(&qe, 1, "requests.storage");
    w_m(&qe, 2, &q);
    w_m(&spec, 1, &qe);
    memset(&qe, 0, sizeof qe);
    pbw_t emptyq = {0};
    w_s(&qe, 1, "cpu");
    w_m(&qe, 2, &emptyq); /* a Quantity message without its string: Go's zero, "0" */
    w_m(&spec, 1, &qe);
    w_m(&qraw, 2, &spec);
    w_body(&qbody, "v1", "ResourceQuota", &qraw);
    expect(&qbody, "{\"kind\":\"ResourceQuota\",\"apiVersion\":\"v1\",\"spec\":{\"hard\":"
                   "{\"pods\":\"0\",\"requests.storage\":\"10Gi\",\"cpu\":\"0\"}}}");

    pbw_t be = {0};
    w_s(&be, 1, "blob");
    w_b(&be, 2, bin, 1);
    w_m(&cm, 3, &be);
    w_u(&cm, 4, 0); /* immutable false: a *bool, kept */
    w_body(&cmbody, "v1", "ConfigMap", &cm);
    expect(&cmbody,
           "{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",\"binaryData\":{\"blob\":\"AA==\"},"
           "\"immutable\":false}");
}

/* managedFields: FieldsV1 carries raw JSON; ownerReferences keep their
 * non-omitempty strings. */
static void test_meta_extras(void **state)
{
    (void)state;
    static const char fields[] = "{\"f:metadata\":{\"f:labels\":{}}}";
    pbw_t raw = {0}, meta = {0}, mf = {0}, fv = {0}, tm = {0}, own = {0}, body = {0};
    w_s(&fv, 1, fields);
    w_u(&tm, 1, 86400);
    w_s(&mf, 1, "kubectl");
    w_s(&mf, 2, "Update");
    w_s(&mf, 3, "v1");
    w_m(&mf, 4, &tm);
    w_s(&mf, 6, "FieldsV1");
    w_m(&mf, 7, &fv);
    w_s(&own, 5, "apps/v1");
    w_s(&own, 1, "ReplicaSet");
    w_s(&own, 3, "rs");
    w_s(&own, 4, "");
    w_u(&own, 6, 1);
    w_s(&meta, 1, "cm");
    w_m(&meta, 13, &own);
    w_s(&meta, 14, "example.com/f");
    w_m(&meta, 17, &mf);
    w_u(&meta, 10, 0); /* deletionGracePeriodSeconds *int64 */
    w_m(&raw, 1, &meta);
    w_body(&body, "v1", "ConfigMap", &raw);
    expect(&body,
           "{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"cm\","
           "\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\","
           "\"name\":\"rs\",\"uid\":\"\",\"controller\":true}],"
           "\"finalizers\":[\"example.com/f\"],\"deletionGracePeriodSeconds\":0,"
           "\"managedFields\":[{\"manager\":\"kubectl\",\"operation\":\"Update\","
           "\"apiVersion\":\"v1\",\"time\":\"1970-01-02T00:00:00Z\","
           "\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{\"f:metadata\":{\"f:labels\":{}}}}]}}");

    pbw_t bad = {0}, bm = {0}, bmf = {0}, bfv = {0}, bbody = {0};
    w_s(&bfv, 1, "{not json");
    w_m(&bmf, 7, &bfv);
    w_m(&bm, 17, &bmf);
    w_m(&bad, 1, &bm);
    w_body(&bbody, "v1", "ConfigMap", &bad);
    decode_err(bbody.b, bbody.n,
               "ConfigMap.metadata.managedFields[0].fieldsV1: Raw is not valid JSON");
}

/* A Service as `kubectl expose` would never send it: named targetPort,
 * session affinity, pointer fields. */
static void test_service_fields(void **state)
{
    (void)state;
    pbw_t raw = {0}, spec = {0}, port = {0}, tp = {0}, sac = {0}, cip = {0}, status = {0}, lb = {0},
          ing = {0}, body = {0};
    w_s(&port, 1, "web");
    w_s(&port, 2, "TCP");
    w_s(&port, 6, "http");
    w_u(&port, 3, 443);
    w_u(&tp, 1, 1);
    w_s(&tp, 3, "https");
    w_m(&port, 4, &tp);
    w_u(&port, 5, 0);
    w_m(&spec, 1, &port);
    w_s(&spec, 3, "None");
    w_s(&spec, 18, "None");
    w_s(&spec, 7, "ClientIP");
    w_u(&cip, 1, 10800);
    w_m(&sac, 1, &cip);
    w_m(&spec, 14, &sac);
    w_s(&spec, 17, "SingleStack");
    w_s(&spec, 19, "IPv4");
    w_u(&spec, 13, 1);
    w_s(&spec, 23, "PreferClose");
    w_s(&ing, 1, "10.0.0.1");
    w_m(&lb, 1, &ing);
    w_m(&status, 1, &lb);
    w_meta(&raw, 1, "svc");
    w_m(&raw, 2, &spec);
    w_m(&raw, 3, &status);
    w_body(&body, "v1", "Service", &raw);
    expect(&body, "{\"kind\":\"Service\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"svc\"},"
                  "\"spec\":{\"ports\":[{\"name\":\"web\",\"protocol\":\"TCP\",\"appProtocol\":"
                  "\"http\",\"port\":443,\"targetPort\":\"https\"}],\"clusterIP\":\"None\","
                  "\"clusterIPs\":[\"None\"],\"sessionAffinity\":\"ClientIP\","
                  "\"sessionAffinityConfig\":{\"clientIP\":{\"timeoutSeconds\":10800}},"
                  "\"ipFamilyPolicy\":\"SingleStack\",\"ipFamilies\":[\"IPv4\"],"
                  "\"publishNotReadyAddresses\":true,\"trafficDistribution\":\"PreferClose\"},"
                  "\"status\":{\"loadBalancer\":{\"ingress\":[{\"ip\":\"10.0.0.1\"}]}}}");
}

/* pods/binding and pods/eviction bodies, as client-go's typed clients (a
 * scheduler, kubectl drain) send them. */
static void test_binding_and_eviction(void **state)
{
    (void)state;
    pbw_t raw = {0}, target = {0}, body = {0};
    w_meta(&raw, 1, "p1");
    w_s(&target, 1, "Node");
    w_s(&target, 3, "n1");
    w_s(&target, 5, "");
    w_m(&raw, 2, &target);
    w_body(&body, "v1", "Binding", &raw);
    expect(&body, "{\"kind\":\"Binding\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"p1\"},"
                  "\"target\":{\"kind\":\"Node\",\"name\":\"n1\"}}");

    pbw_t ev = {0}, opts = {0}, pre = {0}, ebody = {0};
    w_s(&pre, 1, "uid-1");
    w_u(&opts, 1, 0); /* gracePeriodSeconds 0: a pointer, kept */
    w_m(&opts, 2, &pre);
    w_s(&opts, 4, "Foreground");
    w_s(&opts, 5, "All");
    w_meta(&ev, 1, "p1");
    w_m(&ev, 2, &opts);
    const char *want = "{\"kind\":\"Eviction\",\"apiVersion\":\"%s\",\"metadata\":{\"name\":"
                       "\"p1\"},\"deleteOptions\":{\"gracePeriodSeconds\":0,\"preconditions\":"
                       "{\"uid\":\"uid-1\"},\"propagationPolicy\":\"Foreground\",\"dryRun\":"
                       "[\"All\"]}}";
    char buf[512];
    w_body(&ebody, "policy/v1", "Eviction", &ev);
    snprintf(buf, sizeof buf, want, "policy/v1");
    expect(&ebody, buf);
    memset(&ebody, 0, sizeof ebody);
    w_body(&ebody, "policy/v1beta1", "Eviction", &ev);
    snprintf(buf, sizeof buf, want, "policy/v1beta1");
    expect(&ebody, buf);
}

/* ---- malformed input ---- */

static void raw_err(const char *api_version, const char *kind, const pbw_t *raw, const char *want)
{
    pbw_t body = {0};
    w_body(&body, api_version, kind, raw);
    decode_err(body.b, body.n, want);
}

static void test_malformed_wire(void **state)
{
    (void)state;
    decode_err("", 0, "protobuf body: not a Kubernetes protobuf message (no \"k8s\\x00\" prefix)");
    decode_err("k8s", 3, "no \"k8s\\x00\" prefix");
    decode_err("k8x\0\x0a\x00", 6, "no \"k8s\\x00\" prefix");
    decode_err("{\"kind\":\"Namespace\"}", 20, "no \"k8s\\x00\" prefix");
    decode_err("k8s\0", 4, "no kind in the object's TypeMeta");
    decode_err("k8s\0\x0a", 5, "runtime.Unknown: truncated varint");
    decode_err("k8s\0\x0a\x80", 6, "runtime.Unknown: truncated varint");
    decode_err("k8s\0\x0a\x05\x0a", 7, "runtime.Unknown: length past the end of the message");
    decode_err("k8s\0\x0a\xff\xff\xff\xff\xff\xff\xff\xff\xff\x7f", 15,
               "runtime.Unknown: varint longer than 64 bits");
    decode_err("k8s\0\x0a\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 15,
               "length past the end of the message");
    decode_err("k8s\0\x02\x00", 6, "field number out of range");
    decode_err("k8s\0\x0b", 5, "groups (wire types 3 and 4) are not supported");
    decode_err("k8s\0\x0f", 5, "invalid wire type");
    decode_err("k8s\0\x09\x01\x02\x03", 8, "truncated fixed-size value");
    decode_err("k8s\0\x2a\x00", 6, "unknown field 5 (wire type 2) in runtime.Unknown");
    decode_err("k8s\0\x08\x01", 6, "runtime.Unknown: field 1: wire type 0, expected 2");
    decode_err("k8s\0\x0a\x03\x1a\x01x", 9, "unknown field 3 (wire type 2) in TypeMeta");
    decode_err("k8s\0\x0a\x02\x12\x05", 8, "runtime.Unknown.typeMeta: length past the end");

    pbw_t none = {0}, body = {0};
    w_body(&body, "v1", "Widget", &none);
    decode_err(
        body.b, body.n,
        "kind \"Widget\" of apiVersion \"v1\" cannot be decoded from protobuf; send it as JSON");
    memset(&body, 0, sizeof body);
    w_body(&body, "apps/v1", "Namespace", &none);
    decode_err(body.b, body.n, "kind \"Namespace\" of apiVersion \"apps/v1\" cannot be decoded");
    memset(&body, 0, sizeof body);
    w_body(&body, "v1", "Namespace", &none);
    w_s(&body, 3, "gzip");
    decode_err(body.b, body.n, "contentEncoding \"gzip\" is not supported");
    memset(&body, 0, sizeof body);
    w_body(&body, "v1", "Namespace", &none);
    w_s(&body, 4, "application/json");
    decode_err(body.b, body.n, "contentType \"application/json\" is not");
    memset(&body, 0, sizeof body);
    w_body(&body, "v1", "Namespace", &none);
    w_s(&body, 4, API_PB_MEDIA_TYPE); /* the media type itself is fine */
    json_t *ok = decode_ok(body.b, body.n);
    json_decref(ok);
}

static void test_malformed_objects(void **state)
{
    (void)state;
    pbw_t raw = {0}, x = {0}, y = {0}, z = {0};

    /* an unknown field deep inside: the message names the place */
    w_s(&x, 1, "c");
    w_s(&x, 99, "?");
    w_m(&y, 2, &x);
    w_m(&z, 2, &y);
    memset(&x, 0, sizeof x);
    w_m(&x, 3, &z);
    w_m(&raw, 2, &x);
    raw_err("apps/v1", "Deployment", &raw,
            "Deployment.spec.template.spec.containers[0]: unknown field 99 (wire type 2) in "
            "Container");

    /* a second container: the index counts */
    memset(&raw, 0, sizeof raw);
    memset(&x, 0, sizeof x);
    memset(&y, 0, sizeof y);
    memset(&z, 0, sizeof z);
    pbw_t good = {0};
    w_s(&good, 1, "a");
    w_m(&y, 2, &good);
    w_u(&x, 200, 1);
    w_m(&y, 2, &x);
    w_m(&z, 2, &y);
    memset(&x, 0, sizeof x);
    w_m(&x, 3, &z);
    w_m(&raw, 2, &x);
    raw_err("apps/v1", "Deployment", &raw,
            "Deployment.spec.template.spec.containers[1]: unknown field 200 (wire type 0)");

    /* an in-tree volume plugin decodes (the generated tables cover them);
     * a field number VolumeSource lacks does not */
    memset(&raw, 0, sizeof raw);
    memset(&x, 0, sizeof x);
    memset(&y, 0, sizeof y);
    memset(&z, 0, sizeof z);
    pbw_t gce = {0}, vs = {0}, vol = {0};
    w_s(&gce, 1, "disk");
    w_m(&vs, 99, &gce);
    w_s(&vol, 1, "v");
    w_m(&vol, 2, &vs);
    w_m(&y, 1, &vol);
    w_m(&z, 2, &y);
    w_m(&x, 3, &z);
    w_m(&raw, 2, &x);
    raw_err("apps/v1", "Deployment", &raw,
            "Deployment.spec.template.spec.volumes[0]: unknown field 99 (wire type 2) in "
            "VolumeSource");

    /* wrong wire types both ways */
    memset(&raw, 0, sizeof raw);
    memset(&x, 0, sizeof x);
    w_u(&x, 1, 5);
    w_m(&raw, 1, &x);
    raw_err("v1", "Namespace", &raw,
            "Namespace.metadata: field 1 (name): wire type 0 (varint), expected 2 "
            "(length-delimited)");
    memset(&raw, 0, sizeof raw);
    memset(&x, 0, sizeof x);
    w_s(&x, 1, "2");
    w_m(&raw, 2, &x);
    raw_err("apps/v1", "Deployment", &raw,
            "Deployment.spec: field 1 (replicas): wire type 2 (length-delimited), expected 0 "
            "(varint)");
    memset(&raw, 0, sizeof raw);
    memset(&x, 0, sizeof x);
    w_key(&x, 7, 1);
    w_raw(&x, "\0\0\0\0\0\0\0\0", 8);
    w_m(&raw, 1, &x);
    raw_err("v1", "Namespace", &raw, "field 7 (generation): wire type 1 (64-bit), expected 0");
    /* a packed run that ends mid-varint */
    memset(&raw, 0, sizeof raw);
    memset(&x, 0, sizeof x);
    memset(&y, 0, sizeof y);
    w_raw(&y, "\x05\x80", 2);
    w_m(&x, 3, &y);
    pbw_t pfp = {0}, rule = {0}, spec = {0};
    w_m(&rule, 2, &x);
    w_m(&pfp, 1, &rule);
    w_m(&spec, 11, &pfp);
    w_m(&raw, 2, &spec);
    raw_err("batch/v1", "Job", &raw,
            "Job.spec.podFailurePolicy.rules[0].onExitCodes: field 3 (values): packed: truncated "
            "varint");

    /* a length past the end of an inner message */
    memset(&raw, 0, sizeof raw);
    memset(&x, 0, sizeof x);
    w_raw(&x, "\x1a\x05\x0a", 3);
    w_m(&raw, 2, &x);
    raw_err("apps/v1", "Deployment", &raw,
            "Deployment.spec: field 3 (wire type 2): length past the end of the message");

    /* bad UTF-8, in a string and in a map key */
    memset(&raw, 0, sizeof raw);
    memset(&x, 0, sizeof x);
    w_b(&x, 1, "\xc3\x28", 2);
    w_m(&raw, 1, &x);
    raw_err("v1", "Namespace", &raw, "Namespace.metadata: field 1 (name) is not valid UTF-8");
    memset(&raw, 0, sizeof raw);
    memset(&x, 0, sizeof x);
    w_b(&x, 1, "\xed\xa0\x80", 3); /* a UTF-16 surrogate */
    w_s(&x, 2, "v");
    w_m(&raw, 2, &x);
    raw_err("v1", "ConfigMap", &raw, "ConfigMap.data: field 1 (key) is not valid UTF-8");

    /* impossible IntOrString, empty Quantity, unknown field in Time */
    memset(&raw, 0, sizeof raw);
    memset(&x, 0, sizeof x);
    memset(&y, 0, sizeof y);
    pbw_t ios = {0}, ru = {0};
    w_u(&ios, 1, 2);
    w_m(&ru, 1, &ios);
    w_m(&y, 2, &ru);
    w_m(&x, 4, &y);
    w_m(&raw, 2, &x);
    raw_err("apps/v1", "Deployment", &raw,
            "Deployment.spec.strategy.rollingUpdate.maxUnavailable: IntOrString type 2 is "
            "neither 0 (int) nor 1 (string)");
    memset(&raw, 0, sizeof raw);
    memset(&x, 0, sizeof x);
    memset(&y, 0, sizeof y);
    pbw_t q = {0};
    w_s(&q, 1, "");
    w_s(&y, 1, "cpu");
    w_m(&y, 2, &q);
    w_m(&x, 1, &y);
    w_m(&raw, 2, &x);
    raw_err("v1", "ResourceQuota", &raw, "ResourceQuota.spec.hard.value: empty quantity");
    memset(&raw, 0, sizeof raw);
    memset(&x, 0, sizeof x);
    memset(&y, 0, sizeof y);
    w_u(&y, 1, 1);
    w_u(&y, 3, 1);
    w_m(&x, 8, &y);
    w_m(&raw, 1, &x);
    raw_err("v1", "Namespace", &raw,
            "Namespace.metadata.creationTimestamp: unknown field 3 (wire type 0) in Time");
}

/* Every prefix and many bit flips of the real bodies: KP_EINVAL with a
 * message or a clean decode, never a crash, a leak or a read out of range. */
static void test_truncations_and_flips(void **state)
{
    (void)state;
    unsigned long seed = 12345;
    for (size_t i = 0; i < NFIXTURES; i++) {
        char name[128];
        size_t len;
        snprintf(name, sizeof name, "%s.bin", fixtures[i]);
        unsigned char *body = read_fixture(name, &len);
        unsigned char *copy = malloc(len);
        assert_non_null(copy);
        for (size_t n = 0; n < len; n++) {
            char err[256] = "";
            json_t *out = NULL;
            memcpy(copy, body, n); /* exactly n bytes: ASan sees any overread */
            int rc = api_pb_decode(copy, n, &out, err, sizeof err);
            if (rc == 0) {
                assert_non_null(out);
                json_decref(out);
            } else {
                assert_int_equal(rc, KP_EINVAL);
                assert_null(out);
                assert_true(err[0] != '\0');
            }
        }
        for (size_t n = 0; n < len * 8; n++) {
            char err[256] = "";
            json_t *out = NULL;
            memcpy(copy, body, len);
            seed = seed * 6364136223846793005UL + 1442695040888963407UL;
            copy[n / 8] ^= (unsigned char)(1u << (n % 8));
            copy[(seed >> 33) % len] ^= (unsigned char)(seed >> 13);
            int rc = api_pb_decode(copy, len, &out, err, sizeof err);
            if (rc == 0) {
                json_decref(out);
            } else {
                assert_int_equal(rc, KP_EINVAL);
                assert_true(err[0] != '\0');
            }
        }
        free(copy);
        free(body);
    }
}

/* err may be NULL with errlen 0; a short buffer gets a cut, terminated text. */
static void test_err_buffer(void **state)
{
    (void)state;
    json_t *out = NULL;
    assert_int_equal(api_pb_decode("nope", 4, &out, NULL, 0), KP_EINVAL);
    assert_null(out);
    char small[8];
    memset(small, 'x', sizeof small);
    assert_int_equal(api_pb_decode("nope", 4, &out, small, sizeof small), KP_EINVAL);
    assert_string_equal(small, "protobu");
    char one[1] = {'x'};
    assert_int_equal(api_pb_decode("nope", 4, &out, one, sizeof one), KP_EINVAL);
    assert_int_equal(one[0], '\0');
}

/* ---- the table itself ---- */

typedef struct seen {
    const api_pb_msg_t *m[512];
    size_t n;
} seen_t;

/* Check message m and everything it reaches; returns the nesting depth. */
static int check_msg(seen_t *s, const api_pb_msg_t *m, int depth)
{
    assert_true(depth < 100);
    for (size_t i = 0; i < s->n; i++)
        if (s->m[i] == m) return depth;
    assert_true(s->n < 512);
    s->m[s->n++] = m;
    assert_non_null(m->name);
    assert_true(m->nfields > 0);
    int max = depth;
    for (size_t i = 0; i < m->nfields; i++) {
        const api_pb_field_t *f = &m->fields[i];
        assert_true(f->num > 0);
        assert_non_null(f->json);
        for (size_t j = 0; j < i; j++) {
            if (f->num == m->fields[j].num) fail_msg("%s: field %u twice", m->name, f->num);
            if (!strcmp(f->json, m->fields[j].json))
                fail_msg("%s: JSON name %s twice", m->name, f->json);
        }
        int has_msg = f->kind == API_PB_MESSAGE || f->kind == API_PB_MAP;
        assert_int_equal(has_msg, f->msg != NULL);
        assert_true(f->kind >= API_PB_STRING && f->kind <= API_PB_STRLIST);
        if (f->flags & API_PB_KEEP)
            assert_true(f->kind <= API_PB_INT64); /* only scalars have zero values to keep */
        if (f->flags & API_PB_INLINE) {
            assert_int_equal(f->kind, API_PB_MESSAGE);
            assert_false(f->flags & API_PB_REP);
            /* the inline members must not clash with the parent's */
            for (size_t k = 0; k < f->msg->nfields; k++)
                for (size_t j = 0; j < m->nfields; j++)
                    if (!strcmp(f->msg->fields[k].json, m->fields[j].json))
                        fail_msg("%s: inline %s clashes on %s", m->name, f->json,
                                 m->fields[j].json);
        }
        if (f->kind == API_PB_MAP) {
            assert_false(f->flags & API_PB_REP);
            assert_int_equal(f->msg->nfields, 2);
            assert_int_equal(f->msg->fields[0].num, 1);
            assert_int_equal(f->msg->fields[0].kind, API_PB_STRING);
            assert_int_equal(f->msg->fields[1].num, 2);
        }
        if (has_msg) {
            int d = check_msg(s, f->msg, depth + 1);
            if (d > max) max = d;
        }
    }
    return max;
}

static void test_table_shape(void **state)
{
    (void)state;
    seen_t *s = calloc(1, sizeof *s);
    assert_non_null(s);
    const api_pb_root_t *r;
    int depth = 0;
    size_t fields = 0;
    for (size_t i = 0; (r = api__pb_root_at(i)) != NULL; i++) {
        int d = check_msg(s, r->msg, 1);
        if (d > depth) depth = d;
    }
    for (size_t i = 0; i < s->n; i++)
        fields += s->m[i]->nfields;
    print_message("%zu messages, %zu fields, nesting %d\n", s->n, fields, depth);
    assert_true(s->n > 100);
    free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kubectl_fixtures),
        cmocka_unit_test(test_namespace_exact),
        cmocka_unit_test(test_roots_empty),
        cmocka_unit_test(test_pod_template),
        cmocka_unit_test(test_job_fields),
        cmocka_unit_test(test_scalars_and_merges),
        cmocka_unit_test(test_times),
        cmocka_unit_test(test_maps),
        cmocka_unit_test(test_meta_extras),
        cmocka_unit_test(test_service_fields),
        cmocka_unit_test(test_binding_and_eviction),
        cmocka_unit_test(test_malformed_wire),
        cmocka_unit_test(test_malformed_objects),
        cmocka_unit_test(test_truncations_and_flips),
        cmocka_unit_test(test_err_buffer),
        cmocka_unit_test(test_table_shape),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
