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
 *  6. Built-in kinds whose Kubernetes registry uses the DefaultTableConvertor
 *     (limitranges, roles, clusterroles, csistoragecapacities,
 *     customresourcedefinitions) print NAME and CREATED AT; a Table asked
 *     for without a resource prints NAME and AGE.
 *  7. Printers live here (the kinds served before issue 15), in table_core.c
 *     (core kinds added since) and table_groups.c (the other groups); the
 *     lookup is by group and resource (printer_of()).
 *  8. A version served from another's store (events.k8s.io events,
 *     autoscaling/v1 HPAs) prints as the stored resource does, from the
 *     object converted by its strategy's to_storage: Kubernetes prints the
 *     internal object, the same whichever version was asked for.
 *
 * Row builders append exactly one cell per column; a missing cell can only
 * come from a failed allocation, so api_table_add_row() checks the count and
 * reports KP_ENOMEM instead of checking every append.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apiserver/schema/strategy.h"
#include "apiserver/encode/table_int.h"
#include "lib/buf.h"
#include "lib/err.h"

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

/* ---- column definitions ----------------------------------------------------- */

static const api_table_col_t namespace_cols[] = {
    COL_NAME, C("Status", "string", "Lifecycle phase of the namespace."), COL_AGE};
static const api_table_col_t pod_cols[] = {
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
static const api_table_col_t node_cols[] = {
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
static const api_table_col_t event_cols[] = {
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
static const api_table_col_t configmap_cols[] = {
    COL_NAME, C("Data", "string", "Number of keys in data and binaryData."), COL_AGE};
static const api_table_col_t secret_cols[] = {COL_NAME, C("Type", "string", "Type of the secret."),
                                              C("Data", "string", "Number of keys in data."),
                                              COL_AGE};
static const api_table_col_t service_cols[] = {
    COL_NAME,
    C("Type", "string", "How the service is exposed."),
    C("Cluster-IP", "string", "Virtual IP address of the service inside the cluster."),
    C("External-IP", "string", "Addresses the service is reachable on from outside."),
    C("Port(s)", "string", "Ports the service exposes, with node ports."),
    COL_AGE,
    W("Selector", "string", "Labels of the pods the service sends traffic to."),
};
static const api_table_col_t serviceaccount_cols[] = {
    COL_NAME, C("Secrets", "string", "Number of secrets listed by the account."), COL_AGE};
static const api_table_col_t endpoints_cols[] = {
    COL_NAME, C("Endpoints", "string", "Address:port pairs, the first three of them."), COL_AGE};
static const api_table_col_t deployment_cols[] = {
    COL_NAME,
    C("Ready", "string", "Ready pods out of the desired replicas."),
    C("Up-to-date", "string", "Pods running the current template."),
    C("Available", "string", "Pods available to serve."),
    COL_AGE,
    COL_CONTAINERS,
    COL_IMAGES,
    COL_SELECTOR,
};
static const api_table_col_t replicaset_cols[] = {
    COL_NAME,
    C("Desired", "integer", "Replicas asked for."),
    C("Current", "integer", "Replicas that exist."),
    C("Ready", "integer", "Replicas that are ready."),
    COL_AGE,
    COL_CONTAINERS,
    COL_IMAGES,
    COL_SELECTOR,
};
static const api_table_col_t statefulset_cols[] = {
    COL_NAME, C("Ready", "string", "Ready pods out of the desired replicas."), COL_AGE,
    COL_CONTAINERS, COL_IMAGES};
static const api_table_col_t daemonset_cols[] = {
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
static const api_table_col_t controllerrevision_cols[] = {
    COL_NAME, C("Controller", "string", "The object controlling this revision, as kind/name."),
    C("Revision", "string", "Revision number."), COL_AGE};
static const api_table_col_t job_cols[] = {
    COL_NAME,
    C("Status", "string", "Complete, Failed, Suspended, Running, ..."),
    C("Completions", "string", "Succeeded pods out of the completions asked for."),
    C("Duration", "string", "Time the job ran, or has been running."),
    COL_AGE,
    COL_CONTAINERS,
    COL_IMAGES,
    COL_SELECTOR,
};
static const api_table_col_t lease_cols[] = {
    COL_NAME, C("Holder", "string", "Identity of the current holder of the lease."), COL_AGE};
static const api_table_col_t default_cols[] = {
    COL_NAME, C("Created At", "date", "Creation time of the object.")};
static const api_table_col_t generic_cols[] = {COL_NAME, COL_AGE};
static const api_table_col_t custom_generic_cols[] = {
    COL_NAME, C("Age", "date", "Time since the object was created.")};

/* ---- printers of built-in kinds -------------------------------------------- */

static void row_namespace(json_t *row, json_t *cells, const json_t *o, int64_t now)
{
    (void)row;
    cell_name(cells, o);
    cell_str(cells, jstr(jget(o, "status"), "phase"));
    api__table_age_cell(cells, o, now);
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
    return json_is_object(t) ? api__table_ts(jstr(t, "finishedAt")) : API_TABLE_NO_TIME;
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
    podsum_t p = {NULL,
                  0,
                  (int)json_array_size(jget(spec, "containers")),
                  0,
                  0,
                  API_TABLE_NO_TIME,
                  API_TABLE_NO_TIME};
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
    if (p.restarts != 0 && p.last != API_TABLE_NO_TIME) {
        api_table_age(now - p.last, age, sizeof age);
        cell(cells, json_sprintf("%" JSON_INTEGER_FORMAT " (%s ago)", p.restarts, age));
    } else {
        cell(cells, json_sprintf("%" JSON_INTEGER_FORMAT, p.restarts));
    }
    api__table_age_cell(cells, o, now);

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
    const char **k = api__table_sorted_keys(labels, &n);
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
    if (nr) qsort(roles, nr, sizeof *roles, api__table_cmp_cstr);
    for (i = 0; i < nr; i++) {
        if (i && !strcmp(roles[i], roles[i - 1])) continue; /* a set */
        if (s.b.len) sb_put(&s, ",");
        sb_put(&s, roles[i]);
    }
    if (!s.b.len) sb_put(&s, "<none>");
    free(roles);
    free(k);
    cell_sb(cells, &s);
    api__table_age_cell(cells, o, now);
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
    int64_t first = api__table_ts(jstr(o, "firstTimestamp"));
    if (first == API_TABLE_NO_TIME) first = api__table_ts(jstr(o, "eventTime"));
    int64_t last = api__table_ts(jstr(o, "lastTimestamp"));
    if (last == API_TABLE_NO_TIME) last = first;
    json_int_t count = jint(o, "count", 0);
    if (json_is_object(series)) {
        last = api__table_ts(jstr(series, "lastObservedTime"));
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
    sb_put(&source, or_else(jstr(src, "component"), jstr(o, "reportingComponent")));
    const char *inst = or_else(jstr(src, "host"), jstr(o, "reportingInstance"));
    if (*inst) {
        sb_put(&source, ", ");
        sb_put(&source, inst);
    }
    api__table_since_t(cells, last, now);
    cell_str(cells, jstr(o, "type"));
    cell_str(cells, jstr(o, "reason"));
    cell_sb(cells, &target);
    cell_str(cells, jstr(inv, "fieldPath"));
    cell_sb(cells, &source);
    cell(cells, trimmed(jstr(o, "message")));
    api__table_since_t(cells, first, now);
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
    api__table_age_cell(cells, o, now);
}

static void row_secret(json_t *row, json_t *cells, const json_t *o, int64_t now)
{
    (void)row;
    cell_name(cells, o);
    cell_str(cells, jstr(o, "type"));
    cell_int(cells, (json_int_t)obj_size(jget(o, "data")));
    api__table_age_cell(cells, o, now);
}

/* getServiceExternalIP, wide (the server never clips to 16 characters). */
static void cell_service_external(json_t *cells, const json_t *spec, const json_t *status,
                                  const char *type)
{
    const json_t *ext = jget(spec, "externalIPs");
    sb_t s;
    sb_init(&s);
    if (!strcmp(type, "ClusterIP") || !strcmp(type, "NodePort")) {
        api__table_join(&s, ext, ",");
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
        if (m) qsort(v, m, sizeof *v, api__table_cmp_cstr); /* a sorted set */
        for (size_t i = 0; i < m; i++) {
            if (i && !strcmp(v[i], v[i - 1])) continue;
            if (i) sb_put(&s, ",");
            sb_put(&s, v[i]);
        }
        free(v);
        api__table_join(&s, ext, ",");
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
        api__table_sbf(&s, "%" JSON_INTEGER_FORMAT, jint(p, "port", 0));
        if (np > 0) api__table_sbf(&s, ":%" JSON_INTEGER_FORMAT, np);
        sb_put(&s, "/");
        sb_put(&s, or_else(jstr(p, "protocol"), "TCP"));
    }
    if (!s.b.len) sb_put(&s, "<none>");
    cell_sb(cells, &s);
    api__table_age_cell(cells, o, now);
    api__table_labels(cells, jget(spec, "selector"));
}

static void row_serviceaccount(json_t *row, json_t *cells, const json_t *o, int64_t now)
{
    (void)row;
    cell_name(cells, o);
    cell_int(cells, (json_int_t)json_array_size(jget(o, "secrets")));
    api__table_age_cell(cells, o, now);
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
                api__table_sbf(&s, ":%" JSON_INTEGER_FORMAT,
                               jint(json_array_get(ports, p), "port", 0));
            }
        }
    }
    if (count > 3) api__table_sbf(&s, " + %zu more...", count - 3);
    cell_name(cells, o);
    cell_sb(cells, &s);
    api__table_age_cell(cells, o, now);
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
    api__table_age_cell(cells, o, now);
    api__table_containers(cells, template_spec(o));
    sb_t s; /* LabelSelectorAsSelector(...).String(): "" when empty, unlike the others */
    sb_init(&s);
    if (api__table_selector(jget(spec, "selector"), &s)) {
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
    api__table_age_cell(cells, o, now);
    api__table_containers(cells, template_spec(o));
    api__table_format_selector(cells, jget(spec, "selector"));
}

static void row_statefulset(json_t *row, json_t *cells, const json_t *o, int64_t now)
{
    (void)row;
    cell_name(cells, o);
    cell(cells, json_sprintf("%" JSON_INTEGER_FORMAT "/%" JSON_INTEGER_FORMAT,
                             jint(jget(o, "status"), "readyReplicas", 0),
                             jint(jget(o, "spec"), "replicas", 1)));
    api__table_age_cell(cells, o, now);
    api__table_containers(cells, template_spec(o));
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
    api__table_labels(cells, jget(template_spec(o), "nodeSelector"));
    api__table_age_cell(cells, o, now);
    api__table_containers(cells, template_spec(o));
    api__table_format_selector(cells, jdig2(o, "spec", "selector"));
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
    api__table_age_cell(cells, o, now);
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
    int64_t start = api__table_ts(jstr(st, "startTime")),
            end = api__table_ts(jstr(st, "completionTime"));
    char dur[32] = "";
    if (start != API_TABLE_NO_TIME)
        api_table_age((end != API_TABLE_NO_TIME ? end : now) - start, dur, sizeof dur);
    cell_str(cells, dur);
    api__table_age_cell(cells, o, now);
    api__table_containers(cells, template_spec(o));
    api__table_format_selector(cells, jget(spec, "selector"));
}

static void row_lease(json_t *row, json_t *cells, const json_t *o, int64_t now)
{
    (void)row;
    cell_name(cells, o);
    cell_str(cells, jstr(jget(o, "spec"), "holderIdentity"));
    api__table_age_cell(cells, o, now);
}

/* The default convertor's "Created At": creationTimestamp in UTC, RFC 3339. */
static void row_default(json_t *row, json_t *cells, const json_t *o, int64_t now)
{
    (void)row;
    (void)now;
    int64_t t = api__table_ts(jstr(jget(o, "metadata"), "creationTimestamp"));
    int64_t days = t == API_TABLE_NO_TIME ? 0 : (t >= 0 ? t / 86400 : -((-t + 86399) / 86400));
    int64_t sec = t == API_TABLE_NO_TIME ? 0 : t - days * 86400;
    /* civil_from_days (Howard Hinnant), Go's zero time for a missing one */
    int64_t z = days + 719468, era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097, yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100), mp = (5 * doy + 2) / 153;
    int64_t d = doy - (153 * mp + 2) / 5 + 1, m = mp < 10 ? mp + 3 : mp - 9;
    int64_t y = yoe + era * 400 + (m <= 2);
    if (t == API_TABLE_NO_TIME) y = 1, m = 1, d = 1;
    cell_name(cells, o);
    cell(cells, json_sprintf("%04lld-%02lld-%02lldT%02lld:%02lld:%02lldZ", (long long)y,
                             (long long)m, (long long)d, (long long)(sec / 3600),
                             (long long)(sec / 60 % 60), (long long)(sec % 60)));
}

static void row_generic(json_t *row, json_t *cells, const json_t *o, int64_t now)
{
    (void)row;
    cell_name(cells, o);
    api__table_age_cell(cells, o, now);
}

static const api_table_printer_t printers[] = {
    PRINTER("", "namespaces", namespace_cols, row_namespace),
    PRINTER("", "pods", pod_cols, row_pod),
    PRINTER("", "nodes", node_cols, row_node),
    PRINTER("", "events", event_cols, row_event),
    PRINTER("", "configmaps", configmap_cols, row_configmap),
    PRINTER("", "secrets", secret_cols, row_secret),
    PRINTER("", "services", service_cols, row_service),
    PRINTER("", "serviceaccounts", serviceaccount_cols, row_serviceaccount),
    PRINTER("", "endpoints", endpoints_cols, row_endpoints),
    PRINTER("apps", "deployments", deployment_cols, row_deployment),
    PRINTER("apps", "replicasets", replicaset_cols, row_replicaset),
    PRINTER("apps", "statefulsets", statefulset_cols, row_statefulset),
    PRINTER("apps", "daemonsets", daemonset_cols, row_daemonset),
    PRINTER("apps", "controllerrevisions", controllerrevision_cols, row_controllerrevision),
    PRINTER("batch", "jobs", job_cols, row_job),
    PRINTER("coordination.k8s.io", "leases", lease_cols, row_lease),
};
static const api_table_printer_t generic_printer = PRINTER("", "", generic_cols, row_generic);
static const api_table_printer_t default_printer = PRINTER("", "", default_cols, row_default);
static const api_table_printer_t custom_generic_printer =
    PRINTER("", "", custom_generic_cols, row_generic);

/* ---- the public API ----------------------------------------------------- */

/* A CustomResourceDefinition version's printer columns, or NULL for none (an
 * empty list means none too: Kubernetes then serves the default Age). */
static const json_t *custom_columns(const api_resource_t *res)
{
    return res && json_array_size(res->printer_columns) ? res->printer_columns : NULL;
}

/* Whether `res` serves another version's stored objects: it then prints as
 * the stored resource does, from the object converted to the stored form
 * (Kubernetes' printers work on the internal object, the same whichever
 * version a client asked for). */
static int converts(const api_resource_t *res)
{
    return res && res->storage_resource && res->storage_group && res->strategy &&
           res->strategy->to_storage;
}

static const api_table_printer_t *printer_of(const api_resource_t *res)
{
    if (!res) return &generic_printer;
    if (res->crd_schema || res->printer_columns) return &custom_generic_printer;
    const char *group = converts(res) ? res->storage_group : res->group;
    const char *resource = converts(res) ? res->storage_resource : res->resource;
    const struct {
        const api_table_printer_t *p;
        size_t n;
    } sets[] = {{printers, sizeof printers / sizeof printers[0]},
                {api__table_printers_core, api__table_printers_core_n},
                {api__table_printers_groups, api__table_printers_groups_n}};
    for (size_t k = 0; k < sizeof sets / sizeof sets[0]; k++)
        for (size_t i = 0; i < sets[k].n; i++)
            if (!strcmp(sets[k].p[i].group, group) && !strcmp(sets[k].p[i].resource, resource))
                return &sets[k].p[i];
    return &default_printer; /* kube-apiserver's DefaultTableConvertor */
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
    const api_table_printer_t *p = printer_of(res);
    json_t *cols = json_array();
    for (size_t i = 0; cols && i < p->ncols; i++) {
        const api_table_col_t *c = &p->cols[i];
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
    json_t *o = api_json_shallow_copy(obj); /* children shared, never modified */
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
    json_t *row = json_object(), *cells = json_array(), *stored = NULL;
    if (!row || !cells || json_object_set(row, "cells", cells)) goto nomem;
    const json_t *pc = custom_columns(res);
    size_t want;
    if (pc) {
        api__table_custom_cells(cells, pc, obj, now_s);
        want = api__table_custom_ncols(pc);
    } else {
        const api_table_printer_t *p = printer_of(res);
        if (converts(res)) { /* to_storage consumes the copy */
            json_t *copy = json_deep_copy(obj);
            if (!copy || !(stored = res->strategy->to_storage(copy))) goto nomem;
        }
        p->row(row, cells, stored ? stored : obj, now_s);
        want = p->ncols;
    }
    if (json_array_size(cells) != want) goto nomem;
    if (json_object_set_new(row, "object", row_object(table, res, obj, include)) ||
        json_array_append(rows, row))
        goto nomem;
    json_decref(stored);
    json_decref(cells);
    json_decref(row);
    return 0;
nomem:
    json_decref(stored);
    json_decref(cells);
    json_decref(row);
    return KP_ENOMEM;
}
