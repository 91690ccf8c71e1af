/*
 * table_core.c -- Table printers of the core (v1) kinds served since issue
 * 15: podtemplates, replicationcontrollers, persistentvolumes,
 * persistentvolumeclaims, resourcequotas. Columns, cell types and texts as
 * kube-apiserver 1.32 prints them (k/k pkg/printers/internalversion
 * printers.go); limitranges have no printer there and print the default
 * NAME / CREATED AT (table.c).
 *
 * Quantities print as they are stored: Kubernetes re-serialises a quantity
 * in canonical form on write ("1.5Gi" becomes "1536Mi"), and a printer shows
 * that form; kplane stores what the client sent, so a non-canonical
 * quantity prints as written.
 */
#include <stdlib.h>
#include <string.h>

#include "apiserver/encode/table_int.h"

/* ---- helpers (pkg/apis/core/helper) -------------------------------------- */

/* GetAccessModesAsString: RWO, ROX, RWX, RWOP in that order, each once. */
static void cell_access_modes(json_t *cells, const json_t *modes)
{
    static const char *const long_names[] = {"ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany",
                                             "ReadWriteOncePod"};
    static const char *const short_names[] = {"RWO", "ROX", "RWX", "RWOP"};
    sb_t s;
    sb_init(&s);
    for (size_t k = 0; k < sizeof long_names / sizeof long_names[0]; k++) {
        for (size_t i = 0; i < json_array_size(modes); i++) {
            const char *m = json_string_value(json_array_get(modes, i));
            if (m && !strcmp(m, long_names[k])) {
                if (s.b.len) sb_put(&s, ",");
                sb_put(&s, short_names[k]);
                break;
            }
        }
    }
    cell_sb(cells, &s);
}

/* GetPersistentVolume(Claim)Class: the beta annotation first (even empty),
 * then spec.storageClassName. */
static const char *storage_class(const json_t *o)
{
    const json_t *a =
        jget(jdig2(o, "metadata", "annotations"), "volume.beta.kubernetes.io/storage-class");
    if (json_is_string(a)) return json_string_value(a);
    return jstr(jget(o, "spec"), "storageClassName");
}

/* Quantity.String() of `q` (a stored quantity string): "0" for the zero
 * quantity (missing). */
static const char *quantity(const json_t *q)
{
    const char *s = json_string_value(q);
    return s && *s ? s : "0";
}

/* A *string that prints "<unset>" when nil. */
static const char *or_unset(const json_t *o, const char *k)
{
    return jset(o, k) ? jstr(o, k) : "<unset>";
}

/* ---- podtemplates ---------------------------------------------------------- */

static const api_table_col_t podtemplate_cols[] = {
    COL_NAME,
    C("Containers", "string", "Container names of the template."),
    C("Images", "string", "Container images of the template."),
    C("Pod Labels", "string", "Labels of the pod template."),
};

static void row_podtemplate(json_t *row, json_t *cells, const json_t *o, int64_t now)
{
    (void)row;
    (void)now;
    const json_t *t = jget(o, "template");
    cell_name(cells, o);
    api__table_containers(cells, jget(t, "spec"));
    api__table_labels(cells, jdig2(t, "metadata", "labels"));
}

/* ---- replicationcontrollers ----------------------------------------------- */

static const api_table_col_t rc_cols[] = {
    COL_NAME,
    C("Desired", "integer", "Replicas asked for."),
    C("Current", "integer", "Replicas that exist."),
    C("Ready", "integer", "Replicas that are ready."),
    COL_AGE,
    COL_CONTAINERS,
    COL_IMAGES,
    COL_SELECTOR,
};

static void row_rc(json_t *row, json_t *cells, const json_t *o, int64_t now)
{
    (void)row;
    const json_t *spec = jget(o, "spec"), *st = jget(o, "status");
    cell_name(cells, o);
    cell_int(cells, jint(spec, "replicas", 1)); /* defaulted to 1 */
    cell_int(cells, jint(st, "replicas", 0));
    cell_int(cells, jint(st, "readyReplicas", 0));
    api__table_age_cell(cells, o, now);
    api__table_containers(cells, jdig2(spec, "template", "spec"));
    api__table_labels(cells, jget(spec, "selector")); /* a map: FormatLabels */
}

/* ---- persistentvolumes ------------------------------------------------------ */

static const api_table_col_t pv_cols[] = {
    COL_NAME,
    C("Capacity", "string", "Storage capacity of the volume."),
    C("Access Modes", "string", "Ways the volume can be mounted."),
    C("Reclaim Policy", "string", "What happens to the volume when its claim is released."),
    C("Status", "string", "Phase of the volume."),
    C("Claim", "string", "The claim bound to the volume, as namespace/name."),
    C("StorageClass", "string", "StorageClass of the volume."),
    C("VolumeAttributesClass", "string", "VolumeAttributesClass of the volume."),
    C("Reason", "string", "Why the volume is in its phase."),
    COL_AGE,
    W("VolumeMode", "string", "Filesystem or Block."),
};

static void row_pv(json_t *row, json_t *cells, const json_t *o, int64_t now)
{
    (void)row;
    const json_t *spec = jget(o, "spec"), *st = jget(o, "status");
    const json_t *ref = jget(spec, "claimRef");
    sb_t claim;
    sb_init(&claim);
    if (jset(spec, "claimRef")) {
        sb_put(&claim, jstr(ref, "namespace"));
        sb_put(&claim, "/");
        sb_put(&claim, jstr(ref, "name"));
    }
    cell_name(cells, o);
    cell_str(cells, quantity(jdig2(spec, "capacity", "storage")));
    cell_access_modes(cells, jget(spec, "accessModes"));
    cell_str(cells, jstr(spec, "persistentVolumeReclaimPolicy"));
    cell_str(cells,
             jset(jget(o, "metadata"), "deletionTimestamp") ? "Terminating" : jstr(st, "phase"));
    cell_sb(cells, &claim);
    cell_str(cells, storage_class(o));
    cell_str(cells, or_unset(spec, "volumeAttributesClassName"));
    cell_str(cells, jstr(st, "reason"));
    api__table_age_cell(cells, o, now);
    cell_str(cells, or_unset(spec, "volumeMode"));
}

/* ---- persistentvolumeclaims ------------------------------------------------- */

static const api_table_col_t pvc_cols[] = {
    COL_NAME,
    C("Status", "string", "Phase of the claim."),
    C("Volume", "string", "Name of the volume bound to the claim."),
    C("Capacity", "string", "Storage capacity of the bound volume."),
    C("Access Modes", "string", "Ways the bound volume can be mounted."),
    C("StorageClass", "string", "StorageClass of the claim."),
    C("VolumeAttributesClass", "string", "VolumeAttributesClass of the claim."),
    COL_AGE,
    W("VolumeMode", "string", "Filesystem or Block."),
};

static void row_pvc(json_t *row, json_t *cells, const json_t *o, int64_t now)
{
    (void)row;
    const json_t *spec = jget(o, "spec"), *st = jget(o, "status");
    const char *volume = jstr(spec, "volumeName");
    cell_name(cells, o);
    cell_str(cells,
             jset(jget(o, "metadata"), "deletionTimestamp") ? "Terminating" : jstr(st, "phase"));
    cell_str(cells, volume);
    /* capacity and access modes only once bound to a volume */
    cell_str(cells, *volume ? quantity(jdig2(st, "capacity", "storage")) : "");
    if (*volume)
        cell_access_modes(cells, jget(st, "accessModes"));
    else
        cell_str(cells, "");
    cell_str(cells, storage_class(o));
    cell_str(cells, or_unset(spec, "volumeAttributesClassName"));
    api__table_age_cell(cells, o, now);
    cell_str(cells, or_unset(spec, "volumeMode"));
}

/* ---- resourcequotas ----------------------------------------------------------- */

/* Kubernetes 1.32 prints AGE second (1.33 moved it last). */
static const api_table_col_t quota_cols[] = {
    COL_NAME,
    COL_AGE,
    C("Request", "string", "Used and hard amounts of the requests.* and other resources."),
    C("Limit", "string", "Used and hard amounts of the limits.* resources."),
};

/* "name: used/hard, ..." over status.hard sorted by name, limits.* in the
 * Limit column and everything else in Request. */
static void row_quota(json_t *row, json_t *cells, const json_t *o, int64_t now)
{
    (void)row;
    const json_t *hard = jdig2(o, "status", "hard"), *used = jdig2(o, "status", "used");
    size_t n;
    const char **k = api__table_sorted_keys(hard, &n);
    sb_t req, lim;
    sb_init(&req);
    sb_init(&lim);
    if (n == (size_t)-1) req.err = 1, n = 0;
    for (size_t i = 0; i < n; i++) {
        sb_t *w = !strncmp(k[i], "limits.", 7) ? &lim : &req;
        if (w->b.len) sb_put(w, ", ");
        sb_put(w, k[i]);
        sb_put(w, ": ");
        sb_put(w, quantity(jget(used, k[i])));
        sb_put(w, "/");
        sb_put(w, quantity(jget(hard, k[i])));
    }
    free(k);
    cell_name(cells, o);
    api__table_age_cell(cells, o, now);
    cell_sb(cells, &req);
    cell_sb(cells, &lim);
}

/* Kubernetes' printComponentStatus: the Healthy condition as Healthy or
 * Unhealthy (Unknown without one), its message and error. */
static const api_table_col_t cs_cols[] = {
    COL_NAME,
    C("Status", "string", "Status of the component conditions"),
    C("Message", "string", "Message of the component conditions"),
    C("Error", "string", "Error of the component conditions"),
};

static void row_cs(json_t *row, json_t *cells, const json_t *o, int64_t now)
{
    (void)row;
    (void)now;
    const char *status = "Unknown", *msg = "", *err = "";
    const json_t *conds = jget(o, "conditions");
    for (size_t i = 0; i < json_array_size(conds); i++) {
        const json_t *c = json_array_get(conds, i);
        if (strcmp(jstr(c, "type"), "Healthy")) continue;
        status = !strcmp(jstr(c, "status"), "True") ? "Healthy" : "Unhealthy";
        msg = jstr(c, "message");
        err = jstr(c, "error");
        break;
    }
    cell_name(cells, o);
    cell_str(cells, status);
    cell_str(cells, msg);
    cell_str(cells, err);
}

const api_table_printer_t api__table_printers_core[] = {
    PRINTER("", "componentstatuses", cs_cols, row_cs),
    PRINTER("", "podtemplates", podtemplate_cols, row_podtemplate),
    PRINTER("", "replicationcontrollers", rc_cols, row_rc),
    PRINTER("", "persistentvolumes", pv_cols, row_pv),
    PRINTER("", "persistentvolumeclaims", pvc_cols, row_pvc),
    PRINTER("", "resourcequotas", quota_cols, row_quota),
};
const size_t api__table_printers_core_n =
    sizeof api__table_printers_core / sizeof api__table_printers_core[0];
