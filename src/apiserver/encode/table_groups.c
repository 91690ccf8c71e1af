/*
 * table_groups.c -- Table printers of the kinds of the named groups served
 * since issue 15: autoscaling, batch cronjobs, certificates, discovery,
 * networking, node, policy, rbac, scheduling and storage. Columns, cell
 * types and texts as kube-apiserver 1.32 prints them (k/k
 * pkg/printers/internalversion/printers.go).
 *
 * APIServices print as kube-aggregator's ConvertToTable does. Roles,
 * ClusterRoles and CSIStorageCapacities are stored with the default table
 * convertor in Kubernetes (their registries say so, whatever printers.go
 * has) and print NAME / CREATED AT.
 *
 * Where printers.go dereferences a nil *Quantity, Go prints "<nil>"; so do
 * we. Differences from Kubernetes, on purpose:
 *   - ipaddresses: printers.go declares two columns (Name, ParentRef) and
 *     appends a third cell (the age); we append two, as the Table's rows
 *     must match its columns (kubectl shows the same).
 *   - quantities print as stored (see table_core.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apiserver/encode/table_int.h"

/* ---- helpers ------------------------------------------------------------------ */

/* The quantity at o.k as Quantity.String() of a pointer: "<nil>" if unset. */
static const char *qptr(const json_t *o, const char *k)
{
    return jset(o, k) ? jstr(o, k) : "<nil>";
}

/* `n` items of a list, then " + N more..." (listWithMoreString: "<unset>"
 * when empty). Items are added with list_add; the first `max` are kept. */
typedef struct more_list {
    sb_t s;
    size_t max, count;
    const char *sep;
} more_list_t;

static void list_init(more_list_t *l, size_t max, const char *sep)
{
    sb_init(&l->s);
    l->max = max;
    l->count = 0;
    l->sep = sep;
}

static void list_add(more_list_t *l, const char *item)
{
    if (l->count < l->max) {
        if (l->count) sb_put(&l->s, l->sep);
        sb_put(&l->s, item);
    }
    l->count++;
}

static void list_cell(json_t *cells, more_list_t *l, const char *empty)
{
    if (l->count > l->max)
        api__table_sbf(&l->s, " + %zu more...", l->count - l->max);
    else if (!l->count)
        sb_put(&l->s, empty);
    cell_sb(cells, &l->s);
}

/* An annotation equal to "true". */
static int annotation_true(const json_t *o, const char *key)
{
    return !strcmp(jstr(jdig2(o, "metadata", "annotations"), key), "true");
}

/* ---- apiregistration.k8s.io: apiservices (kube-aggregator's ConvertToTable) ---- */

static const api_table_col_t apiservice_cols[] = {
    COL_NAME,
    C("Service", "string", "The Service behind the API, as namespace/name, or Local."),
    C("Available", "string", "The Available condition, with its reason when not True."),
    COL_AGE,
};

static void row_apiservice(json_t *row, json_t *cells, const json_t *o, int64_t now)
{
    (void)row;
    const json_t *svc = jdig2(o, "spec", "service"), *c, *avail = NULL;
    size_t i;
    json_array_foreach(jdig2(o, "status", "conditions"), i, c) {
        if (!strcmp(jstr(c, "type"), "Available")) {
            avail = c;
            break;
        }
    }
    cell_name(cells, o);
    if (jset(jget(o, "spec"), "service"))
        cell(cells, json_sprintf("%s/%s", jstr(svc, "namespace"), jstr(svc, "name")));
    else
        cell_str(cells, "Local");
    if (!avail)
        cell_str(cells, "Unknown");
    else if (strcmp(jstr(avail, "status"), "True") && *jstr(avail, "reason"))
        cell(cells, json_sprintf("%s (%s)", jstr(avail, "status"), jstr(avail, "reason")));
    else
        cell_str(cells, jstr(avail, "status"));
    api__table_age_cell(cells, o, now);
}

/* ---- autoscaling: horizontalpodautoscalers (v2) -------------------------------- */

static const api_table_col_t hpa_cols[] = {
    COL_NAME,
    C("Reference", "string", "The object scaled, as Kind/name."),
    C("Targets", "string", "Current and target values of the metrics."),
    C("MinPods", "string", "Lower limit of replicas."),
    C("MaxPods", "string", "Upper limit of replicas."),
    C("Replicas", "string", "Current replicas."),
    COL_AGE,
};

/* One metric of formatHPAMetrics: spec `m` with its status `st` (NULL if
 * the status has fewer entries). */
static void hpa_metric(sb_t *s, const json_t *m, const json_t *st)
{
    const char *type = jstr(m, "type");
    char cur[32], tgt[32];
    const char *key = !strcmp(type, "External")            ? "external"
                      : !strcmp(type, "Object")            ? "object"
                      : !strcmp(type, "Pods")              ? "pods"
                      : !strcmp(type, "Resource")          ? "resource"
                      : !strcmp(type, "ContainerResource") ? "containerResource"
                                                           : NULL;
    if (!key) {
        sb_put(s, "<unknown type>");
        return;
    }
    const json_t *target = jdig2(m, key, "target");
    const json_t *current = jset(st, key) ? jdig2(st, key, "current") : NULL;
    int has_status = jset(st, key);
    int resource = !strcmp(key, "resource") || !strcmp(key, "containerResource");
    if (resource) {
        sb_put(s, jstr(jget(m, key), "name"));
        sb_put(s, ": ");
    }
    if (!strcmp(key, "pods")) {
        sb_put(s, has_status ? qptr(current, "averageValue") : "<unknown>");
        sb_put(s, "/");
        sb_put(s, qptr(target, "averageValue"));
    } else if (jset(target, "averageValue")) {
        /* External and Object need the status's averageValue too */
        int known = has_status && (resource || jset(current, "averageValue"));
        sb_put(s, known ? qptr(current, "averageValue") : "<unknown>");
        sb_put(s, "/");
        sb_put(s, jstr(target, "averageValue"));
        if (!resource) sb_put(s, " (avg)");
    } else if (resource) {
        snprintf(cur, sizeof cur, "<unknown>");
        snprintf(tgt, sizeof tgt, "<auto>");
        if (has_status && json_is_integer(jget(current, "averageUtilization")))
            snprintf(cur, sizeof cur, "%" JSON_INTEGER_FORMAT "%%",
                     json_integer_value(jget(current, "averageUtilization")));
        if (json_is_integer(jget(target, "averageUtilization")))
            snprintf(tgt, sizeof tgt, "%" JSON_INTEGER_FORMAT "%%",
                     json_integer_value(jget(target, "averageUtilization")));
        sb_put(s, cur);
        sb_put(s, "/");
        sb_put(s, tgt);
    } else {
        sb_put(s, has_status ? qptr(current, "value") : "<unknown>");
        sb_put(s, "/");
        sb_put(s, qptr(target, "value"));
    }
}

static void row_hpa(json_t *row, json_t *cells, const json_t *o, int64_t now)
{
    (void)row;
    const json_t *spec = jget(o, "spec"), *st = jget(o, "status");
    const json_t *metrics = jget(spec, "metrics"), *cur = jget(st, "currentMetrics");
    size_t n = json_array_size(metrics);
    sb_t t;
    sb_init(&t);
    if (!n) sb_put(&t, "<none>");
    for (size_t i = 0; i < n && i < 2; i++) { /* the first two, then a count */
        if (i) sb_put(&t, ", ");
        hpa_metric(&t, json_array_get(metrics, i), json_array_get(cur, i));
    }
    if (n > 2) api__table_sbf(&t, " + %zu more...", n - 2);
    cell_name(cells, o);
    cell(cells, json_sprintf("%s/%s", jstr(jget(spec, "scaleTargetRef"), "kind"),
                             jstr(jget(spec, "scaleTargetRef"), "name")));
    cell_sb(cells, &t);
    if (json_is_integer(jget(spec, "minReplicas")))
        cell(cells, json_sprintf("%" JSON_INTEGER_FORMAT, jint(spec, "minReplicas", 0)));
    else
        cell_str(cells, "<unset>");
    cell_int(cells, jint(spec, "maxReplicas", 0));
    cell_int(cells, jint(st, "currentReplicas", 0));
    api__table_age_cell(cells, o, now);
}

/* ---- batch: cronjobs ------------------------------------------------------------- */

static const api_table_col_t cronjob_cols[] = {
    COL_NAME,
    C("Schedule", "string", "Cron schedule of the jobs."),
    C("Timezone", "string", "Time zone of the schedule."),
    C("Suspend", "boolean", "Whether new runs are suspended."),
    C("Active", "integer", "Jobs running now."),
    C("Last Schedule", "string", "Time since a job was last scheduled."),
    COL_AGE,
    COL_CONTAINERS,
    COL_IMAGES,
    COL_SELECTOR,
};

static void row_cronjob(json_t *row, json_t *cells, const json_t *o, int64_t now)
{
    (void)row;
    const json_t *spec = jget(o, "spec"), *st = jget(o, "status");
    const json_t *job = jdig2(spec, "jobTemplate", "spec");
    const json_t *suspend = jget(spec, "suspend");
    cell_name(cells, o);
    cell_str(cells, jstr(spec, "schedule"));
    cell_str(cells, jset(spec, "timeZone") ? jstr(spec, "timeZone") : "<none>");
    /* printBoolPtr: a string, although the column says boolean */
    cell_str(cells,
             json_is_boolean(suspend) ? (json_is_true(suspend) ? "True" : "False") : "<unset>");
    cell_int(cells, (json_int_t)json_array_size(jget(st, "active")));
    if (jset(st, "lastScheduleTime"))
        api__table_since(cells, jstr(st, "lastScheduleTime"), now);
    else
        cell_str(cells, "<none>");
    api__table_age_cell(cells, o, now);
    api__table_containers(cells, jdig2(job, "template", "spec"));
    api__table_format_selector(cells, jget(job, "selector"));
}

/* ---- certificates.k8s.io: certificatesigningrequests ------------------------------ */

static const api_table_col_t csr_cols[] = {
    COL_NAME,
    COL_AGE,
    C("SignerName", "string", "Signer asked to sign the certificate."),
    C("Requestor", "string", "User who created the request."),
    C("RequestedDuration", "string", "Validity asked for the certificate."),
    C("Condition", "string", "Approved or Denied, and Failed or Issued."),
};

static void row_csr(json_t *row, json_t *cells, const json_t *o, int64_t now)
{
    (void)row;
    const json_t *spec = jget(o, "spec"), *st = jget(o, "status"), *c;
    int approved = 0, denied = 0, failed = 0;
    size_t i;
    json_array_foreach(jget(st, "conditions"), i, c) {
        const char *t = jstr(c, "type");
        approved |= !strcmp(t, "Approved");
        denied |= !strcmp(t, "Denied");
        failed |= !strcmp(t, "Failed");
    }
    sb_t s;
    sb_init(&s);
    sb_put(&s, denied ? "Denied" : approved ? "Approved" : "Pending");
    if (failed) sb_put(&s, ",Failed");
    if (*jstr(st, "certificate")) sb_put(&s, ",Issued");
    char dur[32] = "<none>";
    if (json_is_integer(jget(spec, "expirationSeconds")))
        api_table_age(jint(spec, "expirationSeconds", 0), dur, sizeof dur);
    cell_name(cells, o);
    api__table_age_cell(cells, o, now);
    cell_str(cells, or_else(jstr(spec, "signerName"), "<none>"));
    cell_str(cells, jstr(spec, "username"));
    cell_str(cells, dur);
    cell_sb(cells, &s);
}

/* ---- discovery.k8s.io: endpointslices ---------------------------------------------- */

static const api_table_col_t endpointslice_cols[] = {
    COL_NAME,
    C("AddressType", "string", "IPv4, IPv6 or FQDN."),
    C("Ports", "string", "Ports of the slice, the first three of them."),
    C("Endpoints", "string", "Addresses of the endpoints, the first three of them."),
    COL_AGE,
};

static void row_endpointslice(json_t *row, json_t *cells, const json_t *o, int64_t now)
{
    (void)row;
    more_list_t ports, addrs;
    const json_t *p, *e, *a;
    size_t i, k;
    list_init(&ports, 3, ",");
    json_array_foreach(jget(o, "ports"), i, p) {
        char num[24];
        if (json_is_integer(jget(p, "port"))) {
            snprintf(num, sizeof num, "%" JSON_INTEGER_FORMAT, jint(p, "port", 0));
            list_add(&ports, num);
        } else {
            list_add(&ports, jset(p, "name") ? jstr(p, "name") : "*");
        }
    }
    list_init(&addrs, 3, ",");
    json_array_foreach(jget(o, "endpoints"), i, e) {
        json_array_foreach(jget(e, "addresses"), k, a) {
            list_add(&addrs, json_is_string(a) ? json_string_value(a) : "");
        }
    }
    cell_name(cells, o);
    cell_str(cells, jstr(o, "addressType"));
    list_cell(cells, &ports, "<unset>");
    list_cell(cells, &addrs, "<unset>");
    api__table_age_cell(cells, o, now);
}

/* ---- networking.k8s.io ------------------------------------------------------------- */

static const api_table_col_t ingress_cols[] = {
    COL_NAME,
    C("Class", "string", "IngressClass of the ingress."),
    C("Hosts", "string", "Hosts the rules match, the first three of them."),
    C("Address", "string", "Addresses of the load balancer."),
    C("Ports", "string", "Ports the ingress opens."),
    COL_AGE,
};

/* ingressLoadBalancerStatusStringer, wide: the sorted set of IPs (or
 * hostnames) of status.loadBalancer.ingress, joined by ",". */
static void cell_lb_addresses(json_t *cells, const json_t *ing)
{
    size_t n = json_array_size(ing), m = 0;
    const char **v = n ? malloc(n * sizeof *v) : NULL;
    sb_t s;
    sb_init(&s);
    if (n && !v) s.err = 1;
    for (size_t i = 0; v && i < n; i++) {
        const json_t *x = json_array_get(ing, i);
        const char *a = *jstr(x, "ip") ? jstr(x, "ip") : jstr(x, "hostname");
        if (*a) v[m++] = a;
    }
    if (m) qsort(v, m, sizeof *v, api__table_cmp_cstr);
    for (size_t i = 0; i < m; i++) {
        if (i && !strcmp(v[i], v[i - 1])) continue; /* a set */
        if (s.b.len) sb_put(&s, ",");
        sb_put(&s, v[i]);
    }
    free(v);
    cell_sb(cells, &s);
}

static void row_ingress(json_t *row, json_t *cells, const json_t *o, int64_t now)
{
    (void)row;
    const json_t *spec = jget(o, "spec"), *rules = jget(spec, "rules"), *r;
    size_t i, listed = 0;
    int more = 0;
    sb_t hosts;
    sb_init(&hosts);
    json_array_foreach(rules, i, r) { /* formatHosts */
        if (listed == 3) more = 1;
        if (!more && *jstr(r, "host")) {
            if (listed++) sb_put(&hosts, ",");
            sb_put(&hosts, jstr(r, "host"));
        }
    }
    if (!listed)
        sb_put(&hosts, "*");
    else if (more)
        api__table_sbf(&hosts, " + %zu more...", json_array_size(rules) - 3);
    cell_name(cells, o);
    cell_str(cells, jset(spec, "ingressClassName") ? jstr(spec, "ingressClassName") : "<none>");
    cell_sb(cells, &hosts);
    cell_lb_addresses(cells, jdig2(jget(o, "status"), "loadBalancer", "ingress"));
    cell_str(cells, json_array_size(jget(spec, "tls")) ? "80, 443" : "80");
    api__table_age_cell(cells, o, now);
}

static const api_table_col_t ingressclass_cols[] = {
    COL_NAME,
    C("Controller", "string", "Controller that handles the class."),
    C("Parameters", "string", "Resource with more parameters, as Kind.group/name."),
    COL_AGE,
};

static void row_ingressclass(json_t *row, json_t *cells, const json_t *o, int64_t now)
{
    (void)row;
    const json_t *spec = jget(o, "spec"), *p = jget(spec, "parameters");
    sb_t s;
    sb_init(&s);
    if (jset(spec, "parameters")) {
        sb_put(&s, jstr(p, "kind"));
        if (jset(p, "apiGroup")) {
            sb_put(&s, ".");
            sb_put(&s, jstr(p, "apiGroup"));
        }
        sb_put(&s, "/");
        sb_put(&s, jstr(p, "name"));
    } else {
        sb_put(&s, "<none>");
    }
    cell_name(cells, o);
    cell_str(cells, jstr(spec, "controller"));
    cell_sb(cells, &s);
    api__table_age_cell(cells, o, now);
}

static const api_table_col_t ipaddress_cols[] = {
    COL_NAME,
    C("ParentRef", "string", "The object the address belongs to, as resource.group/ns/name."),
};

static void row_ipaddress(json_t *row, json_t *cells, const json_t *o, int64_t now)
{
    (void)row;
    (void)now;
    const json_t *spec = jget(o, "spec"), *p = jget(spec, "parentRef");
    sb_t s;
    sb_init(&s);
    if (jset(spec, "parentRef")) { /* strings.ToLower(GroupResource.String()) */
        sb_put(&s, jstr(p, "resource"));
        if (*jstr(p, "group")) {
            sb_put(&s, ".");
            sb_put(&s, jstr(p, "group"));
        }
        for (size_t i = 0; !s.err && i < s.b.len; i++)
            if (s.b.p[i] >= 'A' && s.b.p[i] <= 'Z') s.b.p[i] = (char)(s.b.p[i] - 'A' + 'a');
        if (*jstr(p, "namespace")) {
            sb_put(&s, "/");
            sb_put(&s, jstr(p, "namespace"));
        }
        sb_put(&s, "/");
        sb_put(&s, jstr(p, "name"));
    } else {
        sb_put(&s, "<none>");
    }
    cell_name(cells, o);
    cell_sb(cells, &s);
}

static const api_table_col_t networkpolicy_cols[] = {
    COL_NAME,
    C("Pod-Selector", "string", "Pods the policy applies to."),
    COL_AGE,
};

static void row_networkpolicy(json_t *row, json_t *cells, const json_t *o, int64_t now)
{
    (void)row;
    cell_name(cells, o);
    api__table_format_selector(cells, jdig2(o, "spec", "podSelector"));
    api__table_age_cell(cells, o, now);
}

static const api_table_col_t servicecidr_cols[] = {
    COL_NAME,
    C("CIDRs", "string", "Ranges service addresses are allocated from."),
    COL_AGE,
};

static void row_servicecidr(json_t *row, json_t *cells, const json_t *o, int64_t now)
{
    (void)row;
    sb_t s;
    sb_init(&s);
    api__table_join(&s, jdig2(o, "spec", "cidrs"), ",");
    cell_name(cells, o);
    cell_sb(cells, &s);
    api__table_age_cell(cells, o, now);
}

/* ---- node.k8s.io, scheduling.k8s.io, policy ------------------------------------------- */

static const api_table_col_t runtimeclass_cols[] = {
    COL_NAME,
    C("Handler", "string", "Container runtime handler that runs the pods."),
    COL_AGE,
};

static void row_runtimeclass(json_t *row, json_t *cells, const json_t *o, int64_t now)
{
    (void)row;
    cell_name(cells, o);
    cell_str(cells, jstr(o, "handler"));
    api__table_age_cell(cells, o, now);
}

static const api_table_col_t priorityclass_cols[] = {
    COL_NAME,
    C("Value", "integer", "Priority of the pods of this class."),
    C("Global-Default", "boolean", "Whether pods without a class get this one."),
    COL_AGE,
    C("PreemptionPolicy", "string", "Whether pods of this class preempt others."),
};

static void row_priorityclass(json_t *row, json_t *cells, const json_t *o, int64_t now)
{
    (void)row;
    cell_name(cells, o);
    cell_int(cells, jint(o, "value", 0));
    cell_bool(cells, json_is_true(jget(o, "globalDefault")));
    api__table_age_cell(cells, o, now);
    cell_str(cells, jstr(o, "preemptionPolicy"));
}

static const api_table_col_t pdb_cols[] = {
    COL_NAME,
    C("Min Available", "string", "Pods that must stay available."),
    C("Max Unavailable", "string", "Pods that may be unavailable."),
    C("Allowed Disruptions", "integer", "Pods that may be disrupted now."),
    COL_AGE,
};

/* IntOrString.String() of o.k, "N/A" when unset. */
static json_t *int_or_string(const json_t *o, const char *k)
{
    const json_t *v = jget(o, k);
    if (json_is_integer(v)) return json_sprintf("%" JSON_INTEGER_FORMAT, json_integer_value(v));
    return json_string(json_is_string(v) ? json_string_value(v) : "N/A");
}

static void row_pdb(json_t *row, json_t *cells, const json_t *o, int64_t now)
{
    (void)row;
    const json_t *spec = jget(o, "spec");
    cell_name(cells, o);
    cell(cells, int_or_string(spec, "minAvailable"));
    cell(cells, int_or_string(spec, "maxUnavailable"));
    cell_int(cells, jint(jget(o, "status"), "disruptionsAllowed", 0));
    api__table_age_cell(cells, o, now);
}

/* ---- rbac.authorization.k8s.io: (cluster)rolebindings ------------------------------- */

static const api_table_col_t binding_cols[] = {
    COL_NAME,
    C("Role", "string", "The role bound, as Kind/name."),
    COL_AGE,
    W("Users", "string", "Users bound."),
    W("Groups", "string", "Groups bound."),
    W("ServiceAccounts", "string", "Service accounts bound, as namespace/name."),
};

/* rbac.SubjectsStrings, each list joined by ", ". */
static void row_binding(json_t *row, json_t *cells, const json_t *o, int64_t now)
{
    (void)row;
    const json_t *ref = jget(o, "roleRef"), *sub;
    sb_t users, groups, sas;
    size_t i;
    sb_init(&users);
    sb_init(&groups);
    sb_init(&sas);
    json_array_foreach(jget(o, "subjects"), i, sub) {
        const char *kind = jstr(sub, "kind");
        sb_t *w = !strcmp(kind, "User")             ? &users
                  : !strcmp(kind, "Group")          ? &groups
                  : !strcmp(kind, "ServiceAccount") ? &sas
                                                    : NULL;
        if (!w) continue; /* "others" are not printed */
        if (w->b.len) sb_put(w, ", ");
        if (w == &sas) {
            sb_put(w, jstr(sub, "namespace"));
            sb_put(w, "/");
        }
        sb_put(w, jstr(sub, "name"));
    }
    cell_name(cells, o);
    cell(cells, json_sprintf("%s/%s", jstr(ref, "kind"), jstr(ref, "name")));
    api__table_age_cell(cells, o, now);
    cell_sb(cells, &users);
    cell_sb(cells, &groups);
    cell_sb(cells, &sas);
}

/* ---- storage.k8s.io ------------------------------------------------------------------ */

static const api_table_col_t storageclass_cols[] = {
    COL_NAME,
    C("Provisioner", "string", "Volume plugin that provisions the volumes."),
    C("ReclaimPolicy", "string", "Reclaim policy of the volumes provisioned."),
    C("VolumeBindingMode", "string", "When volumes are bound and provisioned."),
    C("AllowVolumeExpansion", "string", "Whether volumes may be expanded."),
    COL_AGE,
};

static void row_storageclass(json_t *row, json_t *cells, const json_t *o, int64_t now)
{
    (void)row;
    int dflt = annotation_true(o, "storageclass.kubernetes.io/is-default-class") ||
               annotation_true(o, "storageclass.beta.kubernetes.io/is-default-class");
    const char *name = jstr(jget(o, "metadata"), "name");
    cell(cells, dflt ? json_sprintf("%s (default)", name) : json_string(name));
    cell_str(cells, jstr(o, "provisioner"));
    cell_str(cells, jset(o, "reclaimPolicy") ? jstr(o, "reclaimPolicy") : "Delete");
    cell_str(cells, jset(o, "volumeBindingMode") ? jstr(o, "volumeBindingMode") : "Immediate");
    cell_bool(cells, json_is_true(jget(o, "allowVolumeExpansion")));
    api__table_age_cell(cells, o, now);
}

static const api_table_col_t vac_cols[] = {
    COL_NAME,
    C("DriverName", "string", "CSI driver the attributes are for."),
    COL_AGE,
};

static void row_vac(json_t *row, json_t *cells, const json_t *o, int64_t now)
{
    (void)row;
    const char *name = jstr(jget(o, "metadata"), "name");
    int dflt = annotation_true(o, "volumeattributesclass.alpha.kubernetes.io/is-default-class");
    cell(cells, dflt ? json_sprintf("%s (default)", name) : json_string(name));
    cell_str(cells, jstr(o, "driverName"));
    api__table_age_cell(cells, o, now);
}

static const api_table_col_t csidriver_cols[] = {
    COL_NAME,
    C("AttachRequired", "boolean", "Whether volumes need an attach step."),
    C("PodInfoOnMount", "boolean", "Whether the driver gets pod information on mount."),
    C("StorageCapacity", "boolean", "Whether the driver reports storage capacity."),
    C("TokenRequests", "string", "Audiences of the service account tokens passed."),
    C("RequiresRepublish", "boolean", "Whether volumes are published again periodically."),
    C("Modes", "string", "Volume lifecycle modes supported."),
    COL_AGE,
};

static void row_csidriver(json_t *row, json_t *cells, const json_t *o, int64_t now)
{
    (void)row;
    const json_t *spec = jget(o, "spec"), *t;
    size_t i;
    sb_t tokens, modes;
    sb_init(&tokens);
    sb_init(&modes);
    if (!jset(spec, "tokenRequests")) sb_put(&tokens, "<unset>");
    json_array_foreach(jget(spec, "tokenRequests"), i, t) {
        if (i) sb_put(&tokens, ",");
        sb_put(&tokens, jstr(t, "audience"));
    }
    api__table_join(&modes, jget(spec, "volumeLifecycleModes"), ",");
    if (!modes.b.len) sb_put(&modes, "<none>");
    cell_name(cells, o);
    cell_bool(cells, jset(spec, "attachRequired") ? json_is_true(jget(spec, "attachRequired")) : 1);
    cell_bool(cells, json_is_true(jget(spec, "podInfoOnMount")));
    cell_bool(cells, json_is_true(jget(spec, "storageCapacity")));
    cell_sb(cells, &tokens);
    cell_bool(cells, json_is_true(jget(spec, "requiresRepublish")));
    cell_sb(cells, &modes);
    api__table_age_cell(cells, o, now);
}

static const api_table_col_t csinode_cols[] = {
    COL_NAME,
    C("Drivers", "integer", "CSI drivers registered on the node."),
    COL_AGE,
};

static void row_csinode(json_t *row, json_t *cells, const json_t *o, int64_t now)
{
    (void)row;
    cell_name(cells, o);
    cell_int(cells, (json_int_t)json_array_size(jdig2(o, "spec", "drivers")));
    api__table_age_cell(cells, o, now);
}

static const api_table_col_t volumeattachment_cols[] = {
    COL_NAME,
    {"Attacher", "string", "name", "Volume driver that attaches the volume.", 0},
    C("PV", "string", "PersistentVolume attached."),
    C("Node", "string", "Node the volume is attached to."),
    C("Attached", "boolean", "Whether the attach operation succeeded."),
    COL_AGE,
};

static void row_volumeattachment(json_t *row, json_t *cells, const json_t *o, int64_t now)
{
    (void)row;
    const json_t *spec = jget(o, "spec");
    cell_name(cells, o);
    cell_str(cells, jstr(spec, "attacher"));
    cell_str(cells, jstr(jget(spec, "source"), "persistentVolumeName"));
    cell_str(cells, jstr(spec, "nodeName"));
    cell_bool(cells, json_is_true(jdig2(o, "status", "attached")));
    api__table_age_cell(cells, o, now);
}

const api_table_printer_t api__table_printers_groups[] = {
    PRINTER("apiregistration.k8s.io", "apiservices", apiservice_cols, row_apiservice),
    PRINTER("autoscaling", "horizontalpodautoscalers", hpa_cols, row_hpa),
    PRINTER("batch", "cronjobs", cronjob_cols, row_cronjob),
    PRINTER("certificates.k8s.io", "certificatesigningrequests", csr_cols, row_csr),
    PRINTER("discovery.k8s.io", "endpointslices", endpointslice_cols, row_endpointslice),
    PRINTER("networking.k8s.io", "ingresses", ingress_cols, row_ingress),
    PRINTER("networking.k8s.io", "ingressclasses", ingressclass_cols, row_ingressclass),
    PRINTER("networking.k8s.io", "ipaddresses", ipaddress_cols, row_ipaddress),
    PRINTER("networking.k8s.io", "networkpolicies", networkpolicy_cols, row_networkpolicy),
    PRINTER("networking.k8s.io", "servicecidrs", servicecidr_cols, row_servicecidr),
    PRINTER("node.k8s.io", "runtimeclasses", runtimeclass_cols, row_runtimeclass),
    PRINTER("policy", "poddisruptionbudgets", pdb_cols, row_pdb),
    PRINTER("rbac.authorization.k8s.io", "clusterrolebindings", binding_cols, row_binding),
    PRINTER("rbac.authorization.k8s.io", "rolebindings", binding_cols, row_binding),
    PRINTER("scheduling.k8s.io", "priorityclasses", priorityclass_cols, row_priorityclass),
    PRINTER("storage.k8s.io", "csidrivers", csidriver_cols, row_csidriver),
    PRINTER("storage.k8s.io", "csinodes", csinode_cols, row_csinode),
    PRINTER("storage.k8s.io", "storageclasses", storageclass_cols, row_storageclass),
    PRINTER("storage.k8s.io", "volumeattachments", volumeattachment_cols, row_volumeattachment),
    PRINTER("storage.k8s.io", "volumeattributesclasses", vac_cols, row_vac),
};
const size_t api__table_printers_groups_n =
    sizeof api__table_printers_groups / sizeof api__table_printers_groups[0];
