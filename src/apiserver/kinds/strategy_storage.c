/*
 * strategy_storage.c -- volumes: core PersistentVolumeClaims and
 * PersistentVolumes, and storage.k8s.io/v1 StorageClasses, CSIDrivers,
 * CSINodes, CSIStorageCapacities, VolumeAttachments and
 * VolumeAttributesClasses. Kubernetes' defaults (core/v1 and storage/v1
 * defaults.go), status reset on create for the kinds with a status, and
 * the checks of pkg/apis/core/validation (claims and volumes) and
 * pkg/apis/storage/validation, with their field paths and messages;
 * immutable fields on update.
 *
 * Pure functions of their arguments (a volume's create reads the clock):
 * safe from any thread.
 */
#include <stdio.h>
#include <string.h>

#include "apiserver/http/http.h"
#include "apiserver/schema/selector.h"
#include "apiserver/schema/strategy.h"
#include "apiserver/kinds/strategy_int.h"

static const char *const access_modes[] = {"ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce",
                                           "ReadWriteOncePod", NULL};
static const char *const volume_modes[] = {"Block", "Filesystem", NULL};

/* spec.accessModes of a claim or a volume. */
static void check_access_modes(const json_t *spec, json_t *causes)
{
    const json_t *modes = json_object_get(spec, "accessModes");
    if (!json_array_size(modes)) {
        api__required(causes, "spec.accessModes", "at least 1 access mode is required");
        return;
    }
    size_t i;
    json_t *m;
    int rwop = 0;
    json_array_foreach(modes, i, m) {
        if (!api__in(json_string_value(m), access_modes))
            api__not_supported(causes, "spec.accessModes", m, access_modes);
        else if (!strcmp(json_string_value(m), "ReadWriteOncePod")) rwop = 1;
    }
    if (rwop && json_array_size(modes) > 1)
        api__forbidden(causes, "spec.accessModes",
                       "may not use ReadWriteOncePod with other access modes");
}

static void check_class_name(const json_t *spec, const char *key, const char *field,
                             json_t *causes)
{
    const char *name = api_json_str(spec, key);
    if (*name) api__dns_name(causes, field, name, 0);
}

/* ---- PersistentVolumeClaim ---- */

static void pvc_prepare_create(json_t *pvc)
{
    json_object_set_new(pvc, "status", json_object());
}

static void pvc_defaults(json_t *pvc)
{
    api__set_default(api_json_child(pvc, "spec"), "volumeMode", json_string("Filesystem"));
    api__set_default(api_json_child(pvc, "status"), "phase", json_string("Pending"));
}

static const json_t *pvc_storage(const json_t *pvc)
{
    return json_object_get(
        json_object_get(json_object_get(json_object_get(pvc, "spec"), "resources"), "requests"),
        "storage");
}

static void pvc_validate(const json_t *pvc, const json_t *old, json_t *causes)
{
    const json_t *spec = json_object_get(pvc, "spec");
    check_access_modes(spec, causes);
    api__selector_check(causes, "spec.selector", json_object_get(spec, "selector"));
    const json_t *storage = pvc_storage(pvc);
    if (!storage) api__required(causes, "spec.resources[storage]", "");
    else api__quantity_check(causes, "spec.resources[storage]", storage, 1, NULL);
    api__enum(causes, spec, "volumeMode", "spec", volume_modes);
    check_class_name(spec, "storageClassName", "spec.storageClassName", causes);
    if (!old) return;

    /* Immutable but for a bound claim's requested size (which may grow) and
     * the volumeName set once by the binder. */
    const json_t *ospec = json_object_get(old, "spec");
    json_t *a = json_deep_copy(spec), *b = json_deep_copy(ospec);
    int bound = !strcmp(api_json_str(json_object_get(old, "status"), "phase"), "Bound");
    if (!*api_json_str(ospec, "volumeName") && json_is_object(a) && json_is_object(b)) {
        json_object_del(a, "volumeName");
        json_object_del(b, "volumeName");
    }
    json_t *sides[2] = {a, b};
    for (int i = 0; i < 2; i++) {
        json_object_del(sides[i], "volumeAttributesClassName");
        if (!bound) continue;
        json_t *req = json_object_get(json_object_get(sides[i], "resources"), "requests");
        json_object_del(req, "storage");
        if (json_is_object(req) && !json_object_size(req))
            json_object_del(json_object_get(sides[i], "resources"), "requests");
        json_t *res = json_object_get(sides[i], "resources");
        if (json_is_object(res) && !json_object_size(res)) json_object_del(sides[i], "resources");
    }
    if (!api_json_same(a, b))
        api__forbidden(causes, "spec",
                       "spec is immutable after creation except resources.requests and "
                       "volumeAttributesClassName for bound claims");
    json_decref(a);
    json_decref(b);
    int64_t now = 0, was = 0;
    const json_t *ostorage = pvc_storage(old);
    if (storage && ostorage && !api__quantity(storage, 1, &now) &&
        !api__quantity(ostorage, 1, &was) && now < was)
        api__forbidden(causes, "spec.resources.requests.storage",
                       "field can not be less than previous value");
}

const api_strategy_t api_strategy_persistentvolumeclaim = {
    .prepare_create = pvc_prepare_create,
    .defaults = pvc_defaults,
    .validate = pvc_validate,
};

/* ---- PersistentVolume ---- */

/* The volume sources a PersistentVolumeSpec may carry, exactly one. */
static const char *const pv_sources[] = {
    "gcePersistentDisk", "awsElasticBlockStore", "hostPath",   "glusterfs", "nfs",
    "rbd",               "iscsi",                "cinder",     "cephfs",    "fc",
    "flocker",           "flexVolume",           "azureFile",  "vsphereVolume",
    "quobyte",           "azureDisk",            "photonPersistentDisk",    "portworxVolume",
    "scaleIO",           "local",                "storageos",  "csi",       NULL};

static void pv_prepare_create(json_t *pv)
{
    char now[32];
    api_now_rfc3339(now);
    json_object_set_new(pv, "status", json_pack("{s:s, s:s}", "phase", "Pending",
                                                 "lastPhaseTransitionTime", now));
}

static void pv_defaults(json_t *pv)
{
    json_t *spec = api_json_child(pv, "spec");
    api__set_default(spec, "persistentVolumeReclaimPolicy", json_string("Retain"));
    api__set_default(spec, "volumeMode", json_string("Filesystem"));
    api__set_default(api_json_child(pv, "status"), "phase", json_string("Pending"));
}

static json_t *pv_source(const json_t *spec)
{
    json_t *src = json_object();
    for (const char *const *k = pv_sources; src && *k; k++) {
        json_t *v = json_object_get(spec, *k);
        if (v && !json_is_null(v)) json_object_set(src, *k, v);
    }
    return src;
}

static void pv_validate(const json_t *pv, const json_t *old, json_t *causes)
{
    static const char *const policies[] = {"Delete", "Recycle", "Retain", NULL};
    static const char *const storage_only[] = {"storage", NULL};
    const json_t *spec = json_object_get(pv, "spec");
    check_access_modes(spec, causes);
    const json_t *cap = json_object_get(spec, "capacity");
    if (!json_object_size(cap)) {
        api__required(causes, "spec.capacity", "");
    } else {
        if (!json_object_get(cap, "storage") || json_object_size(cap) > 1)
            api__not_supported(causes, "spec.capacity", cap, storage_only);
        const char *k;
        json_t *q;
        json_object_foreach((json_t *)cap, k, q) {
            char f[128];
            snprintf(f, sizeof f, "spec.capacity[%s]", k);
            api__quantity_check(causes, f, q, 1, NULL);
        }
    }
    api__enum(causes, spec, "persistentVolumeReclaimPolicy", "spec", policies);
    api__enum(causes, spec, "volumeMode", "spec", volume_modes);
    check_class_name(spec, "storageClassName", "spec.storageClassName", causes);
    int n = 0;
    for (const char *const *k = pv_sources; *k; k++) {
        const json_t *v = json_object_get(spec, *k);
        if (!v || json_is_null(v)) continue;
        if (++n > 1) {
            char f[96];
            snprintf(f, sizeof f, "spec.%s", *k);
            api__forbidden(causes, f, "may not specify more than 1 volume type");
        }
    }
    if (!n) api__required(causes, "spec", "must specify a volume type");
    const json_t *hp = json_object_get(spec, "hostPath");
    if (hp && !json_is_null(hp) && !*api_json_str(hp, "path"))
        api__required(causes, "spec.hostPath.path", "");
    const json_t *local = json_object_get(spec, "local");
    if (local && !json_is_null(local) && !json_object_get(spec, "nodeAffinity"))
        api__required(causes, "spec.nodeAffinity", "Local volume requires node affinity");
    if (!old) return;
    const json_t *ospec = json_object_get(old, "spec");
    json_t *a = pv_source(spec), *b = pv_source(ospec);
    if (!api_json_same(a, b))
        api__forbidden(causes, "spec.persistentvolumesource",
                       "spec.persistentvolumesource is immutable after creation");
    json_decref(a);
    json_decref(b);
    api__immutable(causes, "volumeMode", json_object_get(spec, "volumeMode"),
                   json_object_get(ospec, "volumeMode"));
    const json_t *aff = json_object_get(ospec, "nodeAffinity");
    if (aff && !json_is_null(aff))
        api__immutable(causes, "nodeAffinity", json_object_get(spec, "nodeAffinity"), aff);
}

const api_strategy_t api_strategy_persistentvolume = {
    .prepare_create = pv_prepare_create,
    .defaults = pv_defaults,
    .validate = pv_validate,
};

/* ---- provisioner names and parameters (StorageClass, VolumeAttributesClass) ---- */

static void check_provisioner(const json_t *obj, const char *key, json_t *causes)
{
    const json_t *v = json_object_get(obj, key);
    const char *p = json_string_value(v);
    char err[512], low[320];
    if (!p || !*p) {
        api__required(causes, key, "");
        return;
    }
    size_t n = strlen(p);
    if (n >= sizeof low) n = sizeof low - 1;
    for (size_t i = 0; i < n; i++)
        low[i] = (char)(p[i] >= 'A' && p[i] <= 'Z' ? p[i] - 'A' + 'a' : p[i]);
    low[n] = '\0';
    if (sel_label_key_check(low, err, sizeof err)) api__invalid(causes, key, v, err);
}

static void check_parameters(const json_t *obj, json_t *causes)
{
    const json_t *params = json_object_get(obj, "parameters");
    if (!json_is_object(params)) return;
    if (json_object_size(params) > 512) {
        api_cause(causes, "FieldValueTooLong", "parameters",
                  "Too long: may not have more than 512 items");
        return;
    }
    size_t total = 0;
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)params, k, v) {
        if (!*k) {
            api__invalid_str(causes, "parameters", "", "field can not be empty.");
        }
        total += strlen(k) + (json_is_string(v) ? json_string_length(v) : 0);
    }
    if (total > 256 * 1024)
        api_cause(causes, "FieldValueTooLong", "parameters",
                  "Too long: may not be more than 262144 bytes");
}

/* ---- StorageClass ---- */

static void storageclass_defaults(json_t *sc)
{
    api__set_default(sc, "reclaimPolicy", json_string("Delete"));
    api__set_default(sc, "volumeBindingMode", json_string("Immediate"));
}

static void storageclass_validate(const json_t *sc, const json_t *old, json_t *causes)
{
    static const char *const policies[] = {"Delete", "Retain", NULL};
    static const char *const modes[] = {"Immediate", "WaitForFirstConsumer", NULL};
    check_provisioner(sc, "provisioner", causes);
    check_parameters(sc, causes);
    api__enum(causes, sc, "reclaimPolicy", "", policies);
    api__enum(causes, sc, "volumeBindingMode", "", modes);
    if (!old) return;
    const json_t *p = json_object_get(sc, "parameters"), *op = json_object_get(old, "parameters");
    if (!api_json_same(json_object_size(p) ? p : NULL, json_object_size(op) ? op : NULL))
        api__forbidden(causes, "parameters", "updates to parameters are forbidden.");
    if (strcmp(api_json_str(sc, "provisioner"), api_json_str(old, "provisioner")))
        api__forbidden(causes, "provisioner", "updates to provisioner are forbidden.");
    if (strcmp(api_json_str(sc, "reclaimPolicy"), api_json_str(old, "reclaimPolicy")))
        api__forbidden(causes, "reclaimPolicy", "updates to reclaimPolicy are forbidden.");
    api__immutable(causes, "volumeBindingMode", json_object_get(sc, "volumeBindingMode"),
                   json_object_get(old, "volumeBindingMode"));
}

const api_strategy_t api_strategy_storageclass = {
    .defaults = storageclass_defaults,
    .validate = storageclass_validate,
};

/* ---- VolumeAttributesClass ---- */

static void vac_validate(const json_t *vac, const json_t *old, json_t *causes)
{
    check_provisioner(vac, "driverName", causes);
    check_parameters(vac, causes);
    if (!old) return;
    if (strcmp(api_json_str(vac, "driverName"), api_json_str(old, "driverName")))
        api__forbidden(causes, "driverName", "updates to driverName are forbidden.");
    if (!api_json_same(json_object_get(vac, "parameters"), json_object_get(old, "parameters")))
        api__forbidden(causes, "parameters", "updates to parameters are forbidden.");
}

const api_strategy_t api_strategy_volumeattributesclass = {
    .validate = vac_validate,
};

/* ---- CSIDriver ---- */

static void csidriver_defaults(json_t *d)
{
    json_t *spec = api_json_child(d, "spec");
    api__set_default(spec, "attachRequired", json_true());
    api__set_default(spec, "podInfoOnMount", json_false());
    api__set_default(spec, "storageCapacity", json_false());
    api__set_default(spec, "fsGroupPolicy", json_string("ReadWriteOnceWithFSType"));
    api__set_default(spec, "requiresRepublish", json_false());
    api__set_default(spec, "seLinuxMount", json_false());
    if (!json_array_size(json_object_get(spec, "volumeLifecycleModes")))
        json_object_set_new(spec, "volumeLifecycleModes", json_pack("[s]", "Persistent"));
}

static void csidriver_validate(const json_t *d, const json_t *old, json_t *causes)
{
    static const char *const policies[] = {"File", "None", "ReadWriteOnceWithFSType", NULL};
    static const char *const modes[] = {"Ephemeral", "Persistent", NULL};
    const json_t *spec = json_object_get(d, "spec");
    if (!json_is_boolean(json_object_get(spec, "attachRequired")))
        api__required(causes, "spec.attachedRequired", "");
    if (!json_is_boolean(json_object_get(spec, "podInfoOnMount")))
        api__required(causes, "spec.podInfoOnMount", "");
    api__enum(causes, spec, "fsGroupPolicy", "spec", policies);
    size_t i;
    json_t *m;
    json_array_foreach(json_object_get(spec, "volumeLifecycleModes"), i, m) {
        if (!api__in(json_string_value(m), modes))
            api__not_supported(causes, "spec.volumeLifecycleModes", m, modes);
    }
    json_t *t;
    json_array_foreach(json_object_get(spec, "tokenRequests"), i, t) {
        char f[96];
        snprintf(f, sizeof f, "spec.tokenRequests[%zu].expirationSeconds", i);
        const json_t *exp = json_object_get(t, "expirationSeconds");
        if (json_is_integer(exp) && json_integer_value(exp) < 600)
            api__invalid(causes, f, exp, "may not specify a duration less than 10 minutes");
    }
    if (!old) return;
    const json_t *ospec = json_object_get(old, "spec");
    api__immutable(causes, "spec.attachedRequired", json_object_get(spec, "attachRequired"),
                   json_object_get(ospec, "attachRequired"));
    api__immutable(causes, "spec.fsGroupPolicy", json_object_get(spec, "fsGroupPolicy"),
                   json_object_get(ospec, "fsGroupPolicy"));
    api__immutable(causes, "spec.volumeLifecycleModes",
                   json_object_get(spec, "volumeLifecycleModes"),
                   json_object_get(ospec, "volumeLifecycleModes"));
}

const api_strategy_t api_strategy_csidriver = {
    .defaults = csidriver_defaults,
    .validate = csidriver_validate,
};

/* ---- CSINode ---- */

static void csinode_validate(const json_t *n, const json_t *old, json_t *causes)
{
    json_t *seen = json_object();
    size_t i;
    json_t *d;
    json_array_foreach(json_object_get(json_object_get(n, "spec"), "drivers"), i, d) {
        char f[96];
        const char *name = api_json_str(d, "name");
        snprintf(f, sizeof f, "spec.drivers[%zu].name", i);
        if (!*name) api__required(causes, f, "");
        else if (seen && json_object_get(seen, name))
            api_cause(causes, "FieldValueDuplicate", f, "Duplicate value: \"%s\"", name);
        else if (seen) json_object_set_new(seen, name, json_true());
        snprintf(f, sizeof f, "spec.drivers[%zu].nodeID", i);
        const char *id = api_json_str(d, "nodeID");
        if (!*id) api__required(causes, f, "");
        else if (strlen(id) > 192)
            api__invalid(causes, f, json_object_get(d, "nodeID"),
                         "must be 192 characters or less");
        snprintf(f, sizeof f, "spec.drivers[%zu].allocatable", i);
        api__int_min(causes, json_object_get(d, "allocatable"), "count", f, 0, NULL);
        if (!old) continue;
        size_t j;
        json_t *od;
        json_array_foreach(json_object_get(json_object_get(old, "spec"), "drivers"), j, od) {
            if (!strcmp(api_json_str(od, "name"), name) && !api_json_same(od, d))
                api__invalid(causes, "CSINodeDriver", d, "field is immutable");
        }
    }
    json_decref(seen);
}

const api_strategy_t api_strategy_csinode = {
    .validate = csinode_validate,
};

/* ---- CSIStorageCapacity ---- */

static void csc_validate(const json_t *c, const json_t *old, json_t *causes)
{
    const char *sc = api_json_str(c, "storageClassName");
    if (!*sc) api__required(causes, "storageClassName", "");
    else api__dns_name(causes, "storageClassName", sc, 0);
    api__selector_check(causes, "nodeTopology", json_object_get(c, "nodeTopology"));
    static const char *const qs[] = {"capacity", "maximumVolumeSize", NULL};
    for (const char *const *k = qs; *k; k++) {
        const json_t *q = json_object_get(c, *k);
        if (q && !json_is_null(q)) api__quantity_check(causes, *k, q, 0, NULL);
    }
    if (!old) return;
    api__immutable(causes, "storageClassName", json_object_get(c, "storageClassName"),
                   json_object_get(old, "storageClassName"));
    api__immutable(causes, "nodeTopology", json_object_get(c, "nodeTopology"),
                   json_object_get(old, "nodeTopology"));
}

const api_strategy_t api_strategy_csistoragecapacity = {
    .validate = csc_validate,
};

/* ---- VolumeAttachment ---- */

static void va_prepare_create(json_t *va)
{
    json_object_set_new(va, "status", json_pack("{s:b}", "attached", 0));
}

static void va_validate(const json_t *va, const json_t *old, json_t *causes)
{
    const json_t *spec = json_object_get(va, "spec");
    if (!*api_json_str(spec, "attacher")) api__required(causes, "spec.attacher", "");
    const json_t *src = json_object_get(spec, "source");
    const json_t *pv = json_object_get(src, "persistentVolumeName");
    const json_t *inl = json_object_get(src, "inlineVolumeSpec");
    int has_pv = pv && !json_is_null(pv), has_inl = inl && !json_is_null(inl);
    if (!has_pv && !has_inl)
        api__required(causes, "spec.source",
                      "must specify exactly one of inlineVolumeSpec and persistentVolumeName");
    else if (has_pv && has_inl)
        api__forbidden(causes, "spec.source",
                       "must specify exactly one of inlineVolumeSpec and persistentVolumeName");
    else if (has_pv && !*api_json_str(src, "persistentVolumeName"))
        api__required(causes, "spec.source.persistentVolumeName",
                      "must specify non empty persistentVolumeName");
    api__dns_name(causes, "spec.nodeName", api_json_str(spec, "nodeName"), 0);
    if (old && !api_json_same(spec, json_object_get(old, "spec")))
        api__invalid(causes, "spec", spec, "field is immutable");
}

const api_strategy_t api_strategy_volumeattachment = {
    .prepare_create = va_prepare_create,
    .validate = va_validate,
};
