/*
 * table.c -- server-side printing: meta.k8s.io/v1 Table rows for `kubectl get`.
 *
 * kubectl asks for a Table and prints its cells as they come; the server decides
 * the columns and renders every cell. We reproduce what kube-apiserver 1.32
 * prints (k/k pkg/printers/internalversion/printers.go for built-in kinds, the
 * apiextensions table convertor for custom resources), so that `kubectl get`
 * looks the same against kplane as against a real cluster.
 *
 * RULES (each one observed in the Kubernetes sources, not guessed)
 *
 *  1. The server always prints "wide": every row carries the cells of the
 *     priority-1 columns too, and kubectl hides them unless -o wide.
 *  2. Cells are JSON strings, integers or booleans as Kubernetes' printers
 *     emit them (e.g. pod RESTARTS is a string since 1.27: "3 (5m ago)";
 *     deployment UP-TO-DATE is an integer), and null where a custom resource's
 *     column has no value.
 *  3. Ages are HumanDuration (apimachinery pkg/util/duration) of now minus the
 *     timestamp; a missing timestamp prints "<unknown>".
 *  4. Column definitions carry all five keys (name, type, format, description,
 *     priority); when left out (watch events after the first) the key is null,
 *     as Go encodes the nil slice.
 *  5. A custom resource prints NAME and then its additionalPrinterColumns, and
 *     no AGE unless a column asks for it; with no printer columns it prints
 *     NAME and Age (type date). A column's cell is the FIRST value its
 *     JSONPath finds (the convertor reads results[0][0]), rendered by type.
 *  6. Kinds without a printer print NAME and AGE; CustomResourceDefinitions
 *     print NAME and CREATED AT (kube-apiserver's default convertor).
 *
 * Row builders append exactly one cell per column; a missing cell can only
 * come from a failed allocation, so api_table_add_row() checks the count and
 * reports KP_ENOMEM instead of checking every append.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apiserver/table.h"
#include "lib/buf.h"
#include "lib/err.h"

#define NO_TIME  INT64_MIN  /* Go's zero metav1.Time */
#define CELL_MAX (1u << 20) /* cap on one rendered cell */

/* ---- reading objects ---------------------------------------------------- */

static const json_t *jget(const json_t *o, const char *k)
{
    return json_is_object(o) ? json_object_get(o, k) : NULL;
}

static const char *jstr(const json_t *o, const char *k)
{
    const char *s = json_string_value(jget(o, k));
    return s ? s : "";
}

static json_int_t jint(const json_t *o, const char *k, json_int_t dflt)
{
    const json_t *v = jget(o, k);
    return json_is_integer(v) ? json_integer_value(v) : dflt;
}

static const json_t *jdig2(const json_t *o, const char *a, const char *b)
{
    return jget(jget(o, a), b);
}

/* The status of the first condition of `type` in `conds`, or NULL. */
static const char *cond_status(const json_t *conds, const char *type)
{
    size_t i;
    const json_t *c;
    json_array_foreach(conds, i, c) {
        if (!strcmp(jstr(c, "type"), type)) return jstr(c, "status");
    }
    return NULL;
}

static int cond_true(const json_t *conds, const char *type)
{
    const char *s = cond_status(conds, type);
    return s && !strcmp(s, "True");
}

/* ---- a capped string builder over buf_t --------------------------------- */

typedef struct sb {
    buf_t b;
    int err;
} sb_t;

static void sb_init(sb_t *s)
{
    buf_init(&s->b, CELL_MAX);
    s->err = 0;
}

static void sb_putn(sb_t *s, const char *p, size_t n)
{
    if (!s->err && n && buf_append(&s->b, p, n)) s->err = 1;
}

static void sb_put(sb_t *s, const char *p)
{
    sb_putn(s, p, strlen(p));
}

static void sb_printf(sb_t *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(sb_t *s, const char *fmt, ...)
{
    char tmp[128];
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (w < 0 || (size_t)w >= sizeof tmp)
        s->err = 1; /* only short numeric forms come here */
    else
        sb_putn(s, tmp, (size_t)w);
}

static const char *sb_str(const sb_t *s)
{
    return s->b.p ? s->b.p : "";
}

/* The contents as a JSON string (NULL on error); the builder is released. */
static json_t *sb_take(sb_t *s)
{
    json_t *j = s->err ? NULL : json_stringn(sb_str(s), s->b.len);
    buf_free(&s->b);
    return j;
}

/* ---- cells --------------------------------------------------------------- */

static void cell(json_t *cells, json_t *v)
{
    json_array_append_new(cells, v);
}
static void cell_str(json_t *cells, const char *s)
{
    cell(cells, json_string(s));
}
static void cell_int(json_t *cells, json_int_t v)
{
    cell(cells, json_integer(v));
}
static void cell_sb(json_t *cells, sb_t *s)
{
    cell(cells, sb_take(s));
}

/* s, or `dflt` when s is empty. */
static const char *or_else(const char *s, const char *dflt)
{
    return *s ? s : dflt;
}

/* ---- time ---------------------------------------------------------------- */

static int digits(const char *s, int n, int *out)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return -1;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return 0;
}

/* Days since 1970-01-01 of a proleptic Gregorian date. */
static int64_t days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

/* Parse RFC 3339 ("2024-05-01T10:00:00Z", fraction and offset allowed) into
 * Unix seconds (fractions dropped). Returns 0, or -1 if s is not such a time. */
static int ts_parse(const char *s, int64_t *out)
{
    int y, mo, d, h, mi, se;
    if (!s || strlen(s) < 20 || digits(s, 4, &y) || s[4] != '-' || digits(s + 5, 2, &mo) ||
        s[7] != '-' || digits(s + 8, 2, &d) || (s[10] != 'T' && s[10] != 't') ||
        digits(s + 11, 2, &h) || s[13] != ':' || digits(s + 14, 2, &mi) || s[16] != ':' ||
        digits(s + 17, 2, &se))
        return -1;
    if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || se > 60) return -1;
    const char *p = s + 19;
    if (*p == '.') {
        if (p[1] < '0' || p[1] > '9') return -1;
        for (p++; *p >= '0' && *p <= '9'; p++) {
        }
    }
    int64_t off = 0;
    if ((*p == 'Z' || *p == 'z') && !p[1]) {
        off = 0;
    } else if ((*p == '+' || *p == '-') && strlen(p) == 6 && p[3] == ':') {
        int oh, om;
        if (digits(p + 1, 2, &oh) || digits(p + 4, 2, &om)) return -1;
        off = (*p == '+' ? 1 : -1) * (int64_t)(oh * 3600 + om * 60);
    } else {
        return -1;
    }
    *out = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + se - off;
    return 0;
}

void api_table_age(int64_t s, char *out, size_t n)
{
    if (s < -1) {
        snprintf(out, n, "<invalid>");
        return;
    }
    if (s < 0) s = 0;
    int64_t m = s / 60, h = s / 3600, d = h / 24;
    if (s < 120)
        snprintf(out, n, "%llds", (long long)s);
    else if (m < 10 && s % 60)
        snprintf(out, n, "%lldm%llds", (long long)m, (long long)(s % 60));
    else if (m < 180)
        snprintf(out, n, "%lldm", (long long)m);
    else if (h < 8 && m % 60)
        snprintf(out, n, "%lldh%lldm", (long long)h, (long long)(m % 60));
    else if (h < 48)
        snprintf(out, n, "%lldh", (long long)h);
    else if (h < 24 * 8 && h % 24)
        snprintf(out, n, "%lldd%lldh", (long long)d, (long long)(h % 24));
    else if (h < 24 * 365 * 2)
        snprintf(out, n, "%lldd", (long long)d);
    else if (h < 24 * 365 * 8 && d % 365)
        snprintf(out, n, "%lldy%lldd", (long long)(d / 365), (long long)(d % 365));
    else
        snprintf(out, n, "%lldy", (long long)(d / 365));
}

/* translateTimestampSince: the age of `t` (NO_TIME: "<unknown>"). */
static void cell_since_t(json_t *cells, int64_t t, int64_t now)
{
    char age[32] = "<unknown>";
    if (t != NO_TIME) api_table_age(now - t, age, sizeof age);
    cell_str(cells, age);
}

static int64_t ts_or_none(const char *s)
{
    int64_t t;
    return s && *s && !ts_parse(s, &t) ? t : NO_TIME;
}

static void cell_since(json_t *cells, const char *ts, int64_t now)
{
    cell_since_t(cells, ts_or_none(ts), now);
}

static void cell_age(json_t *cells, const json_t *obj, int64_t now)
{
    cell_since(cells, jstr(jget(obj, "metadata"), "creationTimestamp"), now);
}

/* ---- labels, selectors, containers ---------------------------------------- */

static int cmp_cstr(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The keys of object `o`, sorted (caller frees the array, not the strings;
 * they are borrowed from `o`). NULL with *n 0 when empty; *n (size_t)-1 on
 * an allocation failure. */
static const char **sorted_keys(const json_t *o, size_t *n)
{
    *n = json_is_object(o) ? json_object_size(o) : 0;
    if (!*n) return NULL;
    const char **k = malloc(*n * sizeof *k);
    if (!k) {
        *n = (size_t)-1;
        return NULL;
    }
    size_t i = 0;
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)o, key, v) {
        k[i++] = key;
    }
    qsort(k, *n, sizeof *k, cmp_cstr);
    return k;
}

/* labels.FormatLabels: "a=1,b=2" sorted by key, "<none>" when empty. */
static void cell_labels(json_t *cells, const json_t *labels)
{
    size_t n;
    const char **k = sorted_keys(labels, &n);
    sb_t s;
    sb_init(&s);
    if (n == (size_t)-1)
        s.err = 1;
    else if (!n)
        sb_put(&s, "<none>");
    for (size_t i = 0; n != (size_t)-1 && i < n; i++) {
        if (i) sb_put(&s, ",");
        sb_put(&s, k[i]);
        sb_put(&s, "=");
        sb_put(&s, jstr(labels, k[i]));
    }
    free(k);
    cell_sb(cells, &s);
}

/* One requirement of a label selector, for sorting by key. */
typedef struct req {
    const char *key;
    const char *op;       /* "=", " in ", " notin ", "", "!" */
    const json_t *values; /* array, or a single string for "=" */
} req_t;

/* metav1.LabelSelectorAsSelector(sel).String() into s: requirements sorted by
 * key (stable), values of in/notin sorted. Returns 0, or -1 if the selector is
 * invalid (an unknown operator, or values where none are allowed). A NULL or
 * empty selector writes nothing. Keys and values are not re-validated: the
 * object passed validation when it was stored. */
static int selector_string(const json_t *sel, sb_t *s)
{
    const json_t *ml = jget(sel, "matchLabels"), *me = jget(sel, "matchExpressions");
    size_t nl = json_is_object(ml) ? json_object_size(ml) : 0;
    size_t ne = json_array_size(me), n = 0;
    if (!nl && !ne) return 0;
    req_t *r = calloc(nl + ne, sizeof *r);
    if (!r) {
        s->err = 1;
        return 0;
    }
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)ml, key, v) {
        r[n++] = (req_t){key, "=", v};
    }
    size_t i;
    int rc = 0;
    json_array_foreach(me, i, v) {
        const char *op = jstr(v, "operator");
        const json_t *vals = jget(v, "values");
        size_t nv = json_array_size(vals);
        req_t q = {jstr(v, "key"), NULL, vals};
        if (!strcmp(op, "In"))
            q.op = " in ";
        else if (!strcmp(op, "NotIn"))
            q.op = " notin ";
        else if (!strcmp(op, "Exists"))
            q.op = "";
        else if (!strcmp(op, "DoesNotExist"))
            q.op = "!";
        if (!q.op || (*q.op == ' ' ? nv == 0 : nv != 0)) {
            rc = -1;
            goto done;
        }
        r[n++] = q;
    }
    for (i = 1; i < n; i++) { /* insertion sort: stable, like Go's for short lists */
        req_t t = r[i];
        size_t j = i;
        for (; j > 0 && strcmp(r[j - 1].key, t.key) > 0; j--)
            r[j] = r[j - 1];
        r[j] = t;
    }
    for (i = 0; i < n; i++) {
        if (i) sb_put(s, ",");
        if (!strcmp(r[i].op, "!")) sb_put(s, "!");
        sb_put(s, r[i].key);
        if (!strcmp(r[i].op, "=")) {
            sb_put(s, "=");
            sb_put(s, json_string_value(r[i].values) ? json_string_value(r[i].values) : "");
        } else if (*r[i].op == ' ') {
            size_t nv;
            const char **vs = malloc(json_array_size(r[i].values) * sizeof *vs);
            if (!vs) {
                s->err = 1;
                break;
            }
            nv = 0;
            for (size_t k = 0; k < json_array_size(r[i].values); k++) {
                const char *x = json_string_value(json_array_get(r[i].values, k));
                vs[nv++] = x ? x : "";
            }
            qsort(vs, nv, sizeof *vs, cmp_cstr);
            sb_put(s, r[i].op);
            sb_put(s, "(");
            for (size_t k = 0; k < nv; k++) {
                if (k) sb_put(s, ",");
                sb_put(s, vs[k]);
            }
            sb_put(s, ")");
            free(vs);
        }
    }
done:
    free(r);
    return rc;
}

/* metav1.FormatLabelSelector: "<none>" when empty, "<error>" when invalid. */
static void cell_format_selector(json_t *cells, const json_t *sel)
{
    sb_t s;
    sb_init(&s);
    if (selector_string(sel, &s)) {
        buf_free(&s.b);
        cell_str(cells, "<error>");
        return;
    }
    if (!s.b.len) sb_put(&s, "<none>");
    cell_sb(cells, &s);
}

/* layoutContainerCells: names and images of the template's containers. */
static void cells_containers(json_t *cells, const json_t *pod_spec)
{
    const json_t *cs = jget(pod_spec, "containers");
    sb_t names, images;
    sb_init(&names);
    sb_init(&images);
    for (size_t i = 0; i < json_array_size(cs); i++) {
        const json_t *c = json_array_get(cs, i);
        if (i) {
            sb_put(&names, ",");
            sb_put(&images, ",");
        }
        sb_put(&names, jstr(c, "name"));
        sb_put(&images, jstr(c, "image"));
    }
    cell_sb(cells, &names);
    cell_sb(cells, &images);
}

/* ---- column definitions ----------------------------------------------------- */

typedef struct col {
    const char *name;
    const char *type;
    const char *format;
    const char *desc;
    int priority;
} col_t;

#define C(n, t, d)                                                                                 \
    {                                                                                              \
        n, t, "", d, 0                                                                             \
    }
#define W(n, t, d)                                                                                 \
    {                                                                                              \
        n, t, "", d, 1                                                                             \
    }
#define COL_NAME                                                                                   \
    {                                                                                              \
        "Name", "string", "name", "Name of the object, unique within its namespace.", 0            \
    }
#define COL_AGE        C("Age", "string", "Time since the object was created.")
#define COL_CONTAINERS W("Containers", "string", "Container names of the pod template.")
#define COL_IMAGES     W("Images", "string", "Container images of the pod template.")
#define COL_SELECTOR   W("Selector", "string", "Label selector of the pods this object manages.")

static const col_t namespace_cols[] = {
    COL_NAME, C("Status", "string", "Lifecycle phase of the namespace."), COL_AGE};
static const col_t pod_cols[] = {
    COL_NAME,
    C("Ready", "string", "Ready containers out of all containers of the pod."),
    C("Status", "string", "Summary of the pod's phase and container states."),
    C("Restarts", "string", "Container restarts, and how long ago the latest one was."),
    COL_AGE,
    W("IP", "string", "First IP address of the pod."),
    W("Node", "string", "Node the pod is bound to."),
    W("Nominated Node", "string", "Node the scheduler nominated while preempting for the pod."),
    W("Readiness Gates", "string", "Readiness gates whose condition is True, out of all."),
};
static const col_t node_cols[] = {
    COL_NAME,
    C("Status", "string", "Readiness of the node, and whether it takes new pods."),
    C("Roles", "string", "Roles named by the node's role labels."),
    COL_AGE,
    C("Version", "string", "Version of the node agent."),
    W("Internal-IP", "string", "First internal address of the node."),
    W("External-IP", "string", "First external address of the node."),
    W("OS-Image", "string", "Operating system image the node reports."),
    W("Kernel-Version", "string", "Kernel version the node reports."),
    W("Container-Runtime", "string", "Container runtime and version the node reports."),
};
static const col_t event_cols[] = {
    C("Last Seen", "string", "Time since the event was last observed."),
    C("Type", "string", "Normal or Warning."),
    C("Reason", "string", "Short machine-readable cause of the event."),
    C("Object", "string", "The object the event is about, as kind/name."),
    W("Subobject", "string", "The part of the object the event is about."),
    W("Source", "string", "Component (and host) that reported the event."),
    C("Message", "string", "Human-readable description of the event."),
    W("First Seen", "string", "Time since the event was first observed."),
    W("Count", "string", "How many times the event was observed."),
    {"Name", "string", "name", "Name of the event object.", 1},
};
static const col_t configmap_cols[] = {
    COL_NAME, C("Data", "string", "Number of keys in data and binaryData."), COL_AGE};
static const col_t secret_cols[] = {COL_NAME, C("Type", "string", "Type of the secret."),
                                    C("Data", "string", "Number of keys in data."), COL_AGE};
static const col_t service_cols[] = {
    COL_NAME,
    C("Type", "string", "How the service is exposed."),
    C("Cluster-IP", "string", "Virtual IP address of the service inside the cluster."),
    C("External-IP", "string", "Addresses the service is reachable on from outside."),
    C("Port(s)", "string", "Ports the service exposes, with node ports."),
    COL_AGE,
    W("Selector", "string", "Labels of the pods the service sends traffic to."),
};
static const col_t serviceaccount_cols[] = {
    COL_NAME, C("Secrets", "string", "Number of secrets listed by the account."), COL_AGE};
static const col_t endpoints_cols[] = {
    COL_NAME, C("Endpoints", "string", "Address:port pairs, the first three of them."), COL_AGE};
static const col_t deployment_cols[] = {
    COL_NAME,
    C("Ready", "string", "Ready pods out of the desired replicas."),
    C("Up-to-date", "string", "Pods running the current template."),
    C("Available", "string", "Pods available to serve."),
    COL_AGE,
    COL_CONTAINERS,
    COL_IMAGES,
    COL_SELECTOR,
};
static const col_t replicaset_cols[] = {
    COL_NAME,
    C("Desired", "integer", "Replicas asked for."),
    C("Current", "integer", "Replicas that exist."),
    C("Ready", "integer", "Replicas that are ready."),
    COL_AGE,
    COL_CONTAINERS,
    COL_IMAGES,
    COL_SELECTOR,
};
static const col_t statefulset_cols[] = {
    COL_NAME, C("Ready", "string", "Ready pods out of the desired replicas."), COL_AGE,
    COL_CONTAINERS, COL_IMAGES};
static const col_t daemonset_cols[] = {
    COL_NAME,
    C("Desired", "integer", "Nodes that should run the daemon pod."),
    C("Current", "integer", "Nodes running at least one daemon pod."),
    C("Ready", "integer", "Nodes whose daemon pod is ready."),
    C("Up-to-date", "integer", "Nodes running the current template."),
    C("Available", "integer", "Nodes whose daemon pod is available."),
    C("Node Selector", "string", "Node labels the daemon pods are restricted to."),
    COL_AGE,
    COL_CONTAINERS,
    COL_IMAGES,
    COL_SELECTOR,
};
static const col_t controllerrevision_cols[] = {
    COL_NAME, C("Controller", "string", "The object controlling this revision, as kind/name."),
    C("Revision", "string", "Revision number."), COL_AGE};
static const col_t job_cols[] = {
    COL_NAME,
    C("Status", "string", "Complete, Failed, Suspended, Running, ..."),
    C("Completions", "string", "Succeeded pods out of the completions asked for."),
    C("Duration", "string", "Time the job ran, or has been running."),
    COL_AGE,
    COL_CONTAINERS,
    COL_IMAGES,
    COL_SELECTOR,
};
static const col_t lease_cols[] = {
    COL_NAME, C("Holder", "string", "Identity of the current holder of the lease."), COL_AGE};
static const col_t crd_cols[] = {COL_NAME, C("Created At", "date", "Creation time of the object.")};
static const col_t generic_cols[] = {COL_NAME, COL_AGE};
static const col_t custom_generic_cols[] = {COL_NAME,
                                            C("Age", "date", "Time since the object was created.")};

/* ---- printers of built-in kinds -------------------------------------------- */

typedef void (*row_fn)(json_t *row, json_t *cells, const json_t *obj, int64_t now);

static void cell_name(json_t *cells, const json_t *obj)
{
    cell_str(cells, jstr(jget(obj, "metadata"), "name"));
}

static void row_namespace(json_t *row, json_t *cells, const json_t *o, int64_t now)
{
    (void)row;
    cell_name(cells, o);
    cell_str(cells, jstr(jget(o, "status"), "phase"));
    cell_age(cells, o, now);
}

/* printPod's STATUS, READY and RESTARTS, kept together while walking. */
typedef struct podsum {
    json_t *reason; /* owned; NULL after an allocation failure */
    int ready, total;
    json_int_t restarts, side_restarts;
    int64_t last, side_last; /* latest lastState.terminated.finishedAt */
} podsum_t;

static void set_reason(podsum_t *p, json_t *r)
{
    json_decref(p->reason);
    p->reason = r;
}

static int64_t finished_at(const json_t *cs)
{
    const json_t *t = jdig2(cs, "lastState", "terminated");
    return json_is_object(t) ? ts_or_none(jstr(t, "finishedAt")) : NO_TIME;
}

/* Is init container `name` of `spec` a sidecar (restartPolicy Always)? */
static int restartable_init(const json_t *spec, const char *name)
{
    size_t i;
    const json_t *c;
    json_array_foreach(jget(spec, "initContainers"), i, c) {
        if (!strcmp(jstr(c, "name"), name)) return !strcmp(jstr(c, "restartPolicy"), "Always");
    }
    return 0;
}

/* A terminated state's reason, or Signal:N / ExitCode:N, after `prefix`. */
static json_t *terminated_reason(const json_t *term, const char *prefix)
{
    if (*jstr(term, "reason")) return json_sprintf("%s%s", prefix, jstr(term, "reason"));
    json_int_t sig = jint(term, "signal", 0);
    if (sig) return json_sprintf("%sSignal:%" JSON_INTEGER_FORMAT, prefix, sig);
    return json_sprintf("%sExitCode:%" JSON_INTEGER_FORMAT, prefix, jint(term, "exitCode", 0));
}

/* The init containers: returns 1 while the pod is still initializing. */
static int pod_init_walk(podsum_t *p, const json_t *spec, const json_t *status)
{
    const json_t *list = jget(status, "initContainerStatuses");
    size_t ninit = json_array_size(jget(spec, "initContainers"));
    for (size_t i = 0; i < json_array_size(list); i++) {
        const json_t *cs = json_array_get(list, i), *st = jget(cs, "state");
        const json_t *term = jget(st, "terminated"), *wait = jget(st, "waiting");
        json_int_t rc = jint(cs, "restartCount", 0);
        int64_t fin = finished_at(cs);
        int side = restartable_init(spec, jstr(cs, "name"));
        p->restarts += rc;
        if (fin > p->last) p->last = fin;
        if (side) {
            p->side_restarts += rc;
            if (fin > p->side_last) p->side_last = fin;
        }
        if (json_is_object(term) && jint(term, "exitCode", 0) == 0) continue;
        if (side && json_is_true(jget(cs, "started"))) {
            if (json_is_true(jget(cs, "ready"))) p->ready++;
            continue;
        }
        if (json_is_object(term)) {
            set_reason(p, terminated_reason(term, "Init:"));
        } else if (json_is_object(wait) && *jstr(wait, "reason") &&
                   strcmp(jstr(wait, "reason"), "PodInitializing")) {
            set_reason(p, json_sprintf("Init:%s", jstr(wait, "reason")));
        } else {
            set_reason(p, json_sprintf("Init:%zu/%zu", i, ninit));
        }
        return 1;
    }
    return 0;
}

/* The app containers, last to first as printPod walks them. */
static void pod_main_walk(podsum_t *p, const json_t *status)
{
    const json_t *list = jget(status, "containerStatuses");
    int running = 0;
    p->restarts = p->side_restarts;
    p->last = p->side_last;
    for (size_t i = json_array_size(list); i-- > 0;) {
        const json_t *cs = json_array_get(list, i), *st = jget(cs, "state");
        const json_t *term = jget(st, "terminated"), *wait = jget(st, "waiting");
        int64_t fin = finished_at(cs);
        p->restarts += jint(cs, "restartCount", 0);
        if (fin > p->last) p->last = fin;
        if (json_is_object(wait) && *jstr(wait, "reason")) {
            set_reason(p, json_string(jstr(wait, "reason")));
        } else if (json_is_object(term)) {
            set_reason(p, terminated_reason(term, ""));
        } else if (json_is_true(jget(cs, "ready")) && json_is_object(jget(st, "running"))) {
            running = 1;
            p->ready++;
        }
    }
    const char *r = json_string_value(p->reason);
    if (r && !strcmp(r, "Completed") && running) {
        const json_t *conds = jget(status, "conditions");
        size_t i;
        const json_t *c;
        int ready = 0;
        json_array_foreach(conds, i, c) {
            if (!strcmp(jstr(c, "type"), "Ready") && !strcmp(jstr(c, "status"), "True")) ready = 1;
        }
        set_reason(p, json_string(ready ? "Running" : "NotReady"));
    }
}

static void row_pod(json_t *row, json_t *cells, const json_t *o, int64_t now)
{
    const json_t *spec = jget(o, "spec"), *status = jget(o, "status");
    const json_t *conds = jget(status, "conditions");
    const char *phase = jstr(status, "phase");
    podsum_t p = {NULL, 0, (int)json_array_size(jget(spec, "containers")), 0, 0, NO_TIME, NO_TIME};
    size_t i;
    const json_t *c;

    p.reason = json_string(or_else(jstr(status, "reason"), phase));
    json_array_foreach(conds, i, c) {
        if (!strcmp(jstr(c, "type"), "PodScheduled") &&
            !strcmp(jstr(c, "reason"), "SchedulingGated"))
            set_reason(&p, json_string("SchedulingGated"));
    }
    int lost = 0; /* the row conditions could not be set: no row at all */
    if (!strcmp(phase, "Succeeded") || !strcmp(phase, "Failed")) {
        int ok = !strcmp(phase, "Succeeded");
        lost = json_object_set_new(
            row, "conditions",
            json_pack("[{s:s, s:s, s:s, s:s}]", "type", "Completed", "status", "True", "reason",
                      phase, "message",
                      ok ? "The pod has completed successfully." : "The pod failed."));
    }
    json_array_foreach(jget(spec, "initContainers"), i, c) {
        if (!strcmp(jstr(c, "restartPolicy"), "Always")) p.total++;
    }
    int initializing = pod_init_walk(&p, spec, status);
    if (!initializing || cond_true(conds, "Initialized")) pod_main_walk(&p, status);

    const json_t *meta = jget(o, "metadata");
    if (jget(meta, "deletionTimestamp") && !json_is_null(jget(meta, "deletionTimestamp"))) {
        if (!strcmp(jstr(status, "reason"), "NodeLost"))
            set_reason(&p, json_string("Unknown"));
        else if (strcmp(phase, "Succeeded") && strcmp(phase, "Failed"))
            set_reason(&p, json_string("Terminating"));
    }

    cell_name(cells, o);
    cell(cells, json_sprintf("%d/%d", p.ready, p.total));
    cell(cells, p.reason);
    char age[32];
    if (p.restarts != 0 && p.last != NO_TIME) {
        api_table_age(now - p.last, age, sizeof age);
        cell(cells, json_sprintf("%" JSON_INTEGER_FORMAT " (%s ago)", p.restarts, age));
    } else {
        cell(cells, json_sprintf("%" JSON_INTEGER_FORMAT, p.restarts));
    }
    cell_age(cells, o, now);

    const char *ip = jstr(json_array_get(jget(status, "podIPs"), 0), "ip");
    cell_str(cells, or_else(or_else(ip, jstr(status, "podIP")), "<none>"));
    cell_str(cells, or_else(jstr(spec, "nodeName"), "<none>"));
    cell_str(cells, or_else(jstr(status, "nominatedNodeName"), "<none>"));
    const json_t *gates = jget(spec, "readinessGates");
    size_t ok = 0;
    json_array_foreach(gates, i, c) {
        const char *s = cond_status(conds, jstr(c, "conditionType"));
        if (s && !strcmp(s, "True")) ok++;
    }
    if (!json_array_size(gates))
        cell_str(cells, "<none>");
    else
        cell(cells, json_sprintf("%zu/%zu", ok, json_array_size(gates)));
    if (lost) json_array_clear(cells);
}

static const char *node_address(const json_t *status, const char *type)
{
    size_t i;
    const json_t *a;
    json_array_foreach(jget(status, "addresses"), i, a) {
        if (!strcmp(jstr(a, "type"), type)) return jstr(a, "address");
    }
    return "<none>";
}

static void row_node(json_t *row, json_t *cells, const json_t *o, int64_t now)
{
    (void)row;
    const json_t *status = jget(o, "status"), *info = jget(status, "nodeInfo");
    const json_t *labels = jdig2(o, "metadata", "labels");
    const char *ready = NULL; /* the last Ready condition wins, as in printNode's map */
    size_t i;
    const json_t *c;
    json_array_foreach(jget(status, "conditions"), i, c) {
        if (!strcmp(jstr(c, "type"), "Ready")) ready = jstr(c, "status");
    }
    sb_t s;
    sb_init(&s);
    sb_put(&s, !ready ? "Unknown" : !strcmp(ready, "True") ? "Ready" : "NotReady");
    if (json_is_true(jdig2(o, "spec", "unschedulable"))) sb_put(&s, ",SchedulingDisabled");
    cell_name(cells, o);
    cell_sb(cells, &s);

    size_t n;
    const char **k = sorted_keys(labels, &n);
    const char **roles = n && n != (size_t)-1 ? malloc(n * sizeof *roles) : NULL;
    size_t nr = 0;
    sb_init(&s);
    if (n && !roles) s.err = 1;
    for (i = 0; roles && i < n; i++) {
        static const char prefix[] = "node-role.kubernetes.io/";
        if (!strncmp(k[i], prefix, sizeof prefix - 1) && k[i][sizeof prefix - 1])
            roles[nr++] = k[i] + sizeof prefix - 1;
        else if (!strcmp(k[i], "kubernetes.io/role") && *jstr(labels, k[i]))
            roles[nr++] = jstr(labels, k[i]);
    }
    if (nr) qsort(roles, nr, sizeof *roles, cmp_cstr);
    for (i = 0; i < nr; i++) {
        if (i && !strcmp(roles[i], roles[i - 1])) continue; /* a set */
        if (s.b.len) sb_put(&s, ",");
        sb_put(&s, roles[i]);
    }
    if (!s.b.len) sb_put(&s, "<none>");
    free(roles);
    free(k);
    cell_sb(cells, &s);
    cell_age(cells, o, now);
    cell_str(cells, jstr(info, "kubeletVersion"));
    cell_str(cells, node_address(status, "InternalIP"));
    cell_str(cells, node_address(status, "ExternalIP"));
    cell_str(cells, or_else(jstr(info, "osImage"), "<unknown>"));
    cell_str(cells, or_else(jstr(info, "kernelVersion"), "<unknown>"));
    cell_str(cells, or_else(jstr(info, "containerRuntimeVersion"), "<unknown>"));
}

/* strings.TrimSpace for ASCII whitespace. */
static json_t *trimmed(const char *s)
{
    size_t n = strlen(s);
    while (n && strchr(" \t\n\r\v\f", s[n - 1]))
        n--;
    while (n && strchr(" \t\n\r\v\f", *s))
        s++, n--;
    return json_stringn(s, n);
}

static void row_event(json_t *row, json_t *cells, const json_t *o, int64_t now)
{
    (void)row;
    const json_t *inv = jget(o, "involvedObject"), *series = jget(o, "series");
    int64_t first = ts_or_none(jstr(o, "firstTimestamp"));
    if (first == NO_TIME) first = ts_or_none(jstr(o, "eventTime"));
    int64_t last = ts_or_none(jstr(o, "lastTimestamp"));
    if (last == NO_TIME) last = first;
    json_int_t count = jint(o, "count", 0);
    if (json_is_object(series)) {
        last = ts_or_none(jstr(series, "lastObservedTime"));
        count = jint(series, "count", 0);
    } else if (count == 0) {
        count = 1;
    }
    sb_t target, source;
    sb_init(&target);
    for (const char *k = jstr(inv, "kind"); *k; k++) {
        char ch = (*k >= 'A' && *k <= 'Z') ? (char)(*k - 'A' + 'a') : *k;
        sb_putn(&target, &ch, 1);
    }
    if (*jstr(inv, "name")) {
        sb_put(&target, "/");
        sb_put(&target, jstr(inv, "name"));
    }
    sb_init(&source);
    const json_t *src = jget(o, "source");
    sb_put(&source, or_else(jstr(src, "component"), jstr(o, "reportingController")));
    const char *inst = or_else(jstr(src, "host"), jstr(o, "reportingInstance"));
    if (*inst) {
        sb_put(&source, ", ");
        sb_put(&source, inst);
    }
    cell_since_t(cells, last, now);
    cell_str(cells, jstr(o, "type"));
    cell_str(cells, jstr(o, "reason"));
    cell_sb(cells, &target);
    cell_str(cells, jstr(inv, "fieldPath"));
    cell_sb(cells, &source);
    cell(cells, trimmed(jstr(o, "message")));
    cell_since_t(cells, first, now);
    cell_int(cells, count);
    cell_name(cells, o);
}

static size_t obj_size(const json_t *o)
{
    return json_is_object(o) ? json_object_size(o) : 0;
}

static void row_configmap(json_t *row, json_t *cells, const json_t *o, int64_t now)
{
    (void)row;
    cell_name(cells, o);
    cell_int(cells, (json_int_t)(obj_size(jget(o, "data")) + obj_size(jget(o, "binaryData"))));
    cell_age(cells, o, now);
}

static void row_secret(json_t *row, json_t *cells, const json_t *o, int64_t now)
{
    (void)row;
    cell_name(cells, o);
    cell_str(cells, jstr(o, "type"));
    cell_int(cells, (json_int_t)obj_size(jget(o, "data")));
    cell_age(cells, o, now);
}

/* Append the items of string array `a` to s, separated by ",". */
static void sb_join(sb_t *s, const json_t *a)
{
    for (size_t i = 0; i < json_array_size(a); i++) {
        const char *v = json_string_value(json_array_get(a, i));
        if (s->b.len) sb_put(s, ",");
        sb_put(s, v ? v : "");
    }
}

/* getServiceExternalIP, wide (the server never clips to 16 characters). */
static void cell_service_external(json_t *cells, const json_t *spec, const json_t *status,
                                  const char *type)
{
    const json_t *ext = jget(spec, "externalIPs");
    sb_t s;
    sb_init(&s);
    if (!strcmp(type, "ClusterIP") || !strcmp(type, "NodePort")) {
        sb_join(&s, ext);
        if (!s.b.len && !json_array_size(ext)) sb_put(&s, "<none>");
    } else if (!strcmp(type, "LoadBalancer")) {
        const json_t *ing = jdig2(status, "loadBalancer", "ingress");
        size_t n = json_array_size(ing), m = 0;
        const char **v = n ? malloc(n * sizeof *v) : NULL;
        if (n && !v) s.err = 1;
        for (size_t i = 0; v && i < n; i++) {
            const json_t *e = json_array_get(ing, i);
            const char *x = *jstr(e, "ip") ? jstr(e, "ip") : jstr(e, "hostname");
            if (*x) v[m++] = x;
        }
        if (m) qsort(v, m, sizeof *v, cmp_cstr); /* a sorted set */
        for (size_t i = 0; i < m; i++) {
            if (i && !strcmp(v[i], v[i - 1])) continue;
            if (i) sb_put(&s, ",");
            sb_put(&s, v[i]);
        }
        free(v);
        sb_join(&s, ext);
        if (!s.b.len && !json_array_size(ext)) sb_put(&s, "<pending>");
    } else if (!strcmp(type, "ExternalName")) {
        sb_put(&s, jstr(spec, "externalName"));
    } else {
        sb_put(&s, "<unknown>");
    }
    cell_sb(cells, &s);
}

static void row_service(json_t *row, json_t *cells, const json_t *o, int64_t now)
{
    (void)row;
    const json_t *spec = jget(o, "spec");
    const char *type = or_else(jstr(spec, "type"), "ClusterIP");
    const char *ip = json_string_value(json_array_get(jget(spec, "clusterIPs"), 0));
    cell_name(cells, o);
    cell_str(cells, type);
    cell_str(cells, or_else(ip ? ip : jstr(spec, "clusterIP"), "<none>"));
    cell_service_external(cells, spec, jget(o, "status"), type);
    sb_t s;
    sb_init(&s);
    const json_t *ports = jget(spec, "ports");
    for (size_t i = 0; i < json_array_size(ports); i++) {
        const json_t *p = json_array_get(ports, i);
        json_int_t np = jint(p, "nodePort", 0);
        if (i) sb_put(&s, ",");
        sb_printf(&s, "%" JSON_INTEGER_FORMAT, jint(p, "port", 0));
        if (np > 0) sb_printf(&s, ":%" JSON_INTEGER_FORMAT, np);
        sb_put(&s, "/");
        sb_put(&s, or_else(jstr(p, "protocol"), "TCP"));
    }
    if (!s.b.len) sb_put(&s, "<none>");
    cell_sb(cells, &s);
    cell_age(cells, o, now);
    cell_labels(cells, jget(spec, "selector"));
}

static void row_serviceaccount(json_t *row, json_t *cells, const json_t *o, int64_t now)
{
    (void)row;
    cell_name(cells, o);
    cell_int(cells, (json_int_t)json_array_size(jget(o, "secrets")));
    cell_age(cells, o, now);
}

/* formatEndpoints: "ip:port,..." for the first three, then " + N more...". */
static void row_endpoints(json_t *row, json_t *cells, const json_t *o, int64_t now)
{
    (void)row;
    const json_t *subsets = jget(o, "subsets");
    sb_t s;
    sb_init(&s);
    size_t listed = 0, count = 0;
    if (!json_array_size(subsets)) sb_put(&s, "<none>");
    for (size_t i = 0; i < json_array_size(subsets); i++) {
        const json_t *ss = json_array_get(subsets, i), *addrs = jget(ss, "addresses");
        const json_t *ports = jget(ss, "ports");
        size_t np = json_array_size(ports), na = json_array_size(addrs);
        for (size_t p = 0; p < (np ? np : 1); p++) {
            count += na;
            for (size_t a = 0; a < na && listed < 3; a++, listed++) {
                const char *ip = jstr(json_array_get(addrs, a), "ip");
                if (listed) sb_put(&s, ",");
                if (!np) {
                    sb_put(&s, ip);
                    continue;
                }
                int v6 = strchr(ip, ':') != NULL; /* net.JoinHostPort */
                sb_put(&s, v6 ? "[" : "");
                sb_put(&s, ip);
                sb_put(&s, v6 ? "]" : "");
                sb_printf(&s, ":%" JSON_INTEGER_FORMAT, jint(json_array_get(ports, p), "port", 0));
            }
        }
    }
    if (count > 3) sb_printf(&s, " + %zu more...", count - 3);
    cell_name(cells, o);
    cell_sb(cells, &s);
    cell_age(cells, o, now);
}

static const json_t *template_spec(const json_t *o)
{
    return jget(jdig2(o, "spec", "template"), "spec");
}

static void row_deployment(json_t *row, json_t *cells, const json_t *o, int64_t now)
{
    (void)row;
    const json_t *spec = jget(o, "spec"), *st = jget(o, "status");
    cell_name(cells, o);
    cell(cells, json_sprintf("%" JSON_INTEGER_FORMAT "/%" JSON_INTEGER_FORMAT,
                             jint(st, "readyReplicas", 0), jint(spec, "replicas", 1)));
    cell_int(cells, jint(st, "updatedReplicas", 0));
    cell_int(cells, jint(st, "availableReplicas", 0));
    cell_age(cells, o, now);
    cells_containers(cells, template_spec(o));
    sb_t s; /* LabelSelectorAsSelector(...).String(): "" when empty, unlike the others */
    sb_init(&s);
    if (selector_string(jget(spec, "selector"), &s)) {
        buf_free(&s.b);
        cell_str(cells, "<invalid>");
    } else {
        cell_sb(cells, &s);
    }
}

static void row_replicaset(json_t *row, json_t *cells, const json_t *o, int64_t now)
{
    (void)row;
    const json_t *spec = jget(o, "spec"), *st = jget(o, "status");
    cell_name(cells, o);
    cell_int(cells, jint(spec, "replicas", 1));
    cell_int(cells, jint(st, "replicas", 0));
    cell_int(cells, jint(st, "readyReplicas", 0));
    cell_age(cells, o, now);
    cells_containers(cells, template_spec(o));
    cell_format_selector(cells, jget(spec, "selector"));
}

static void row_statefulset(json_t *row, json_t *cells, const json_t *o, int64_t now)
{
    (void)row;
    cell_name(cells, o);
    cell(cells, json_sprintf("%" JSON_INTEGER_FORMAT "/%" JSON_INTEGER_FORMAT,
                             jint(jget(o, "status"), "readyReplicas", 0),
                             jint(jget(o, "spec"), "replicas", 1)));
    cell_age(cells, o, now);
    cells_containers(cells, template_spec(o));
}

static void row_daemonset(json_t *row, json_t *cells, const json_t *o, int64_t now)
{
    (void)row;
    const json_t *st = jget(o, "status");
    cell_name(cells, o);
    cell_int(cells, jint(st, "desiredNumberScheduled", 0));
    cell_int(cells, jint(st, "currentNumberScheduled", 0));
    cell_int(cells, jint(st, "numberReady", 0));
    cell_int(cells, jint(st, "updatedNumberScheduled", 0));
    cell_int(cells, jint(st, "numberAvailable", 0));
    cell_labels(cells, jget(template_spec(o), "nodeSelector"));
    cell_age(cells, o, now);
    cells_containers(cells, template_spec(o));
    cell_format_selector(cells, jdig2(o, "spec", "selector"));
}

static void row_controllerrevision(json_t *row, json_t *cells, const json_t *o, int64_t now)
{
    (void)row;
    const json_t *ref = NULL, *r;
    size_t i;
    json_array_foreach(jdig2(o, "metadata", "ownerReferences"), i, r) {
        if (json_is_true(jget(r, "controller"))) {
            ref = r;
            break;
        }
    }
    sb_t s;
    sb_init(&s);
    if (!ref) {
        sb_put(&s, "<none>");
    } else { /* strings.ToLower(GroupKind.String()) + "/" + name */
        const char *av = jstr(ref, "apiVersion"), *slash = strchr(av, '/');
        const char *kind = jstr(ref, "kind");
        if (*kind || slash) {
            for (const char *k = kind; *k; k++) {
                char ch = (*k >= 'A' && *k <= 'Z') ? (char)(*k - 'A' + 'a') : *k;
                sb_putn(&s, &ch, 1);
            }
            if (slash) {
                sb_put(&s, ".");
                sb_putn(&s, av, (size_t)(slash - av));
            }
            sb_put(&s, "/");
        }
        sb_put(&s, jstr(ref, "name"));
    }
    cell_name(cells, o);
    cell_sb(cells, &s);
    cell_int(cells, jint(o, "revision", 0));
    cell_age(cells, o, now);
}

static void row_job(json_t *row, json_t *cells, const json_t *o, int64_t now)
{
    (void)row;
    const json_t *spec = jget(o, "spec"), *st = jget(o, "status");
    const json_t *conds = jget(st, "conditions");
    json_int_t ok = jint(st, "succeeded", 0), par = jint(spec, "parallelism", 0);
    const char *status = "Running";
    if (cond_true(conds, "Complete"))
        status = "Complete";
    else if (cond_true(conds, "Failed"))
        status = "Failed";
    else if (jdig2(o, "metadata", "deletionTimestamp") &&
             !json_is_null(jdig2(o, "metadata", "deletionTimestamp")))
        status = "Terminating";
    else if (cond_true(conds, "Suspended"))
        status = "Suspended";
    else if (cond_true(conds, "FailureTarget"))
        status = "FailureTarget";
    cell_name(cells, o);
    cell_str(cells, status);
    if (json_is_integer(jget(spec, "completions")))
        cell(cells, json_sprintf("%" JSON_INTEGER_FORMAT "/%" JSON_INTEGER_FORMAT, ok,
                                 jint(spec, "completions", 0)));
    else if (par > 1)
        cell(cells, json_sprintf("%" JSON_INTEGER_FORMAT "/1 of %" JSON_INTEGER_FORMAT, ok, par));
    else
        cell(cells, json_sprintf("%" JSON_INTEGER_FORMAT "/1", ok));
    int64_t start = ts_or_none(jstr(st, "startTime")), end = ts_or_none(jstr(st, "completionTime"));
    char dur[32] = "";
    if (start != NO_TIME) api_table_age((end != NO_TIME ? end : now) - start, dur, sizeof dur);
    cell_str(cells, dur);
    cell_age(cells, o, now);
    cells_containers(cells, template_spec(o));
    cell_format_selector(cells, jget(spec, "selector"));
}

static void row_lease(json_t *row, json_t *cells, const json_t *o, int64_t now)
{
    (void)row;
    cell_name(cells, o);
    cell_str(cells, jstr(jget(o, "spec"), "holderIdentity"));
    cell_age(cells, o, now);
}

/* The default convertor's "Created At": creationTimestamp in UTC, RFC 3339. */
static void row_crd(json_t *row, json_t *cells, const json_t *o, int64_t now)
{
    (void)row;
    (void)now;
    int64_t t = ts_or_none(jstr(jget(o, "metadata"), "creationTimestamp"));
    int64_t days = t == NO_TIME ? 0 : (t >= 0 ? t / 86400 : -((-t + 86399) / 86400));
    int64_t sec = t == NO_TIME ? 0 : t - days * 86400;
    /* civil_from_days (Howard Hinnant), Go's zero time for a missing one */
    int64_t z = days + 719468, era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097, yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100), mp = (5 * doy + 2) / 153;
    int64_t d = doy - (153 * mp + 2) / 5 + 1, m = mp < 10 ? mp + 3 : mp - 9;
    int64_t y = yoe + era * 400 + (m <= 2);
    if (t == NO_TIME) y = 1, m = 1, d = 1;
    cell_name(cells, o);
    cell(cells, json_sprintf("%04lld-%02lld-%02lldT%02lld:%02lld:%02lldZ", (long long)y,
                             (long long)m, (long long)d, (long long)(sec / 3600),
                             (long long)(sec / 60 % 60), (long long)(sec % 60)));
}

static void row_generic(json_t *row, json_t *cells, const json_t *o, int64_t now)
{
    (void)row;
    cell_name(cells, o);
    cell_age(cells, o, now);
}

typedef struct printer {
    const char *group;
    const char *resource;
    const col_t *cols;
    size_t ncols;
    row_fn row;
} printer_t;

#define P(g, r, c, f)                                                                              \
    {                                                                                              \
        g, r, c, sizeof c / sizeof c[0], f                                                         \
    }
static const printer_t printers[] = {
    P("", "namespaces", namespace_cols, row_namespace),
    P("", "pods", pod_cols, row_pod),
    P("", "nodes", node_cols, row_node),
    P("", "events", event_cols, row_event),
    P("", "configmaps", configmap_cols, row_configmap),
    P("", "secrets", secret_cols, row_secret),
    P("", "services", service_cols, row_service),
    P("", "serviceaccounts", serviceaccount_cols, row_serviceaccount),
    P("", "endpoints", endpoints_cols, row_endpoints),
    P("apps", "deployments", deployment_cols, row_deployment),
    P("apps", "replicasets", replicaset_cols, row_replicaset),
    P("apps", "statefulsets", statefulset_cols, row_statefulset),
    P("apps", "daemonsets", daemonset_cols, row_daemonset),
    P("apps", "controllerrevisions", controllerrevision_cols, row_controllerrevision),
    P("batch", "jobs", job_cols, row_job),
    P("coordination.k8s.io", "leases", lease_cols, row_lease),
    P("apiextensions.k8s.io", "customresourcedefinitions", crd_cols, row_crd),
};
static const printer_t generic_printer = P("", "", generic_cols, row_generic);
static const printer_t custom_generic_printer = P("", "", custom_generic_cols, row_generic);

int api__table_time(const char *s, int64_t *out)
{
    return ts_parse(s, out);
}

/* ---- the public API ----------------------------------------------------- */

/* A CustomResourceDefinition version's printer columns, or NULL for none (an
 * empty list means none too: Kubernetes then serves the default Age). */
static const json_t *custom_columns(const api_resource_t *res)
{
    return res && json_array_size(res->printer_columns) ? res->printer_columns : NULL;
}

static const printer_t *printer_of(const api_resource_t *res)
{
    if (!res) return &generic_printer;
    if (res->crd_schema || res->printer_columns) return &custom_generic_printer;
    for (size_t i = 0; i < sizeof printers / sizeof printers[0]; i++)
        if (!strcmp(printers[i].group, res->group) && !strcmp(printers[i].resource, res->resource))
            return &printers[i];
    return &generic_printer;
}

int api_table_include_parse(const char *s)
{
    if (!s || !*s || !strcmp(s, "Metadata")) return API_TABLE_METADATA;
    if (!strcmp(s, "Object")) return API_TABLE_OBJECT;
    if (!strcmp(s, "None")) return API_TABLE_NONE;
    return -1;
}

static json_t *columns_of(const api_resource_t *res)
{
    const json_t *pc = custom_columns(res);
    if (pc) return api__table_custom_columns(pc);
    const printer_t *p = printer_of(res);
    json_t *cols = json_array();
    for (size_t i = 0; cols && i < p->ncols; i++) {
        const col_t *c = &p->cols[i];
        if (json_array_append_new(cols,
                                  json_pack("{s:s, s:s, s:s, s:s, s:i}", "name", c->name, "type",
                                            c->type, "format", c->format, "description", c->desc,
                                            "priority", c->priority))) {
            json_decref(cols);
            return NULL;
        }
    }
    return cols;
}

json_t *api_table_new(const api_resource_t *res, int with_columns)
{
    json_t *t =
        json_pack("{s:s, s:s, s:{}}", "kind", "Table", "apiVersion", "meta.k8s.io/v1", "metadata");
    json_t *cols = with_columns ? columns_of(res) : json_null();
    if (!t || !cols || json_object_set_new(t, "columnDefinitions", cols) ||
        json_object_set_new(t, "rows", json_array())) {
        if (!t) json_decref(cols);
        json_decref(t);
        return NULL;
    }
    return t;
}

/* row.object for `include`: a new reference, or NULL (ENOMEM). */
static json_t *row_object(const json_t *table, const api_resource_t *res, const json_t *obj,
                          api_table_include_t include)
{
    if (include == API_TABLE_NONE) return json_null(); /* Go: a nil RawExtension is null */
    if (include == API_TABLE_METADATA) {
        const char *av = jstr(table, "apiVersion");
        const json_t *meta = jget(obj, "metadata");
        return json_pack("{s:s, s:s, s:o}", "kind", "PartialObjectMetadata", "apiVersion",
                         strncmp(av, "meta.k8s.io/", 12) ? "meta.k8s.io/v1" : av, "metadata",
                         json_is_object(meta) ? json_incref((json_t *)meta) : json_object());
    }
    /* A shallow copy: children are shared and never modified. Not json_copy(),
     * which drops members silently when an allocation fails. */
    json_t *o = json_object(), *v;
    const char *k;
    json_object_foreach((json_t *)obj, k, v) {
        if (o && json_object_set(o, k, v)) {
            json_decref(o);
            o = NULL;
        }
    }
    if (o && res) {
        char gv[128];
        if (json_object_set_new(o, "kind", json_string(res->kind)) ||
            json_object_set_new(o, "apiVersion",
                                json_string(api_group_version(res, gv, sizeof gv)))) {
            json_decref(o);
            return NULL;
        }
    }
    return o;
}

int api_table_add_row(json_t *table, const api_resource_t *res, const json_t *obj,
                      api_table_include_t include, int64_t now_s)
{
    json_t *rows = json_object_get(table, "rows");
    if (!json_is_array(rows) || !json_is_object(obj) ||
        (include != API_TABLE_METADATA && include != API_TABLE_OBJECT && include != API_TABLE_NONE))
        return KP_EINVAL;
    json_t *row = json_object(), *cells = json_array();
    if (!row || !cells || json_object_set(row, "cells", cells)) goto nomem;
    const json_t *pc = custom_columns(res);
    size_t want;
    if (pc) {
        api__table_custom_cells(cells, pc, obj, now_s);
        want = api__table_custom_ncols(pc);
    } else {
        const printer_t *p = printer_of(res);
        p->row(row, cells, obj, now_s);
        want = p->ncols;
    }
    if (json_array_size(cells) != want) goto nomem;
    if (json_object_set_new(row, "object", row_object(table, res, obj, include)) ||
        json_array_append(rows, row))
        goto nomem;
    json_decref(cells);
    json_decref(row);
    return 0;
nomem:
    json_decref(cells);
    json_decref(row);
    return KP_ENOMEM;
}
