/*
 * test_strategy_storage.c -- claims, volumes and the storage.k8s.io kinds
 * (src/apiserver/strategy_storage.c) against Kubernetes' validation and
 * defaults: each rule with a good and a bad object.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "strategy_cases.h"

extern const api_strategy_t api_strategy_persistentvolumeclaim, api_strategy_persistentvolume,
    api_strategy_storageclass, api_strategy_csidriver, api_strategy_csinode,
    api_strategy_csistoragecapacity, api_strategy_volumeattachment,
    api_strategy_volumeattributesclass;

#define PVC(spec) "{'metadata':{'name':'c','namespace':'ns'},'spec':" spec "}"
#define PVC_OK PVC("{'accessModes':['ReadWriteOnce'],'resources':{'requests':{'storage':'1Gi'}}}")
#define BOUND(spec) "{'metadata':{'name':'c'},'spec':" spec ",'status':{'phase':'Bound'}}"

static void test_pvc(void **state)
{
    (void)state;
    static const strat_case_t cases[] = {
        {PVC_OK, NULL, NULL},
        {PVC("{'resources':{'requests':{'storage':'1Gi'}}}"), NULL,
         "spec.accessModes: Required value: at least 1 access mode is required"},
        {PVC("{'accessModes':['ReadWriteSometimes'],'resources':{'requests':{'storage':'1Gi'}}}"),
         NULL, "spec.accessModes: Unsupported value: \"ReadWriteSometimes\": supported values: "
               "\"ReadOnlyMany\", \"ReadWriteMany\", \"ReadWriteOnce\", \"ReadWriteOncePod\""},
        {PVC("{'accessModes':['ReadWriteOncePod','ReadOnlyMany'],'resources':{'requests':{"
             "'storage':'1Gi'}}}"),
         NULL, "spec.accessModes: Forbidden: may not use ReadWriteOncePod with other access "
               "modes"},
        {PVC("{'accessModes':['ReadWriteOnce']}"), NULL, "spec.resources[storage]: Required value"},
        {PVC("{'accessModes':['ReadWriteOnce'],'resources':{'requests':{'storage':'0'}}}"), NULL,
         "spec.resources[storage]: Invalid value: \"0\": must be greater than zero"},
        {PVC("{'accessModes':['ReadWriteOnce'],'resources':{'requests':{'storage':'lots'}}}"),
         NULL, "spec.resources[storage]: Invalid value: \"lots\": quantities must match the "
               "regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"},
        {PVC("{'accessModes':['ReadWriteOnce'],'volumeMode':'Raw','resources':{'requests':{"
             "'storage':'1Gi'}}}"),
         NULL, "spec.volumeMode: Unsupported value: \"Raw\": supported values: \"Block\", "
               "\"Filesystem\""},
        {PVC("{'accessModes':['ReadWriteOnce'],'storageClassName':'Fast_SSD','resources':{"
             "'requests':{'storage':'1Gi'}}}"),
         NULL, "spec.storageClassName: Invalid value: \"Fast_SSD\": a lowercase RFC 1123 "
               "subdomain must consist of lower case alphanumeric characters, '-' or '.', and "
               "must start and end with an alphanumeric character (e.g. 'example.com', regex "
               "used for validation is "
               "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"},
        /* update: immutable but for a bound claim's growing request */
        {PVC_OK, PVC_OK, NULL},
        {PVC("{'accessModes':['ReadWriteMany'],'resources':{'requests':{'storage':'1Gi'}}}"),
         PVC_OK, "spec: Forbidden: spec is immutable after creation except resources.requests "
                 "and volumeAttributesClassName for bound claims"},
        {PVC("{'accessModes':['ReadWriteOnce'],'resources':{'requests':{'storage':'2Gi'}}}"),
         PVC_OK, "spec: Forbidden: spec is immutable after creation except resources.requests "
                 "and volumeAttributesClassName for bound claims"},
        {PVC("{'accessModes':['ReadWriteOnce'],'resources':{'requests':{'storage':'2Gi'}}}"),
         BOUND("{'accessModes':['ReadWriteOnce'],'resources':{'requests':{'storage':'1Gi'}}}"),
         NULL},
        {PVC("{'accessModes':['ReadWriteOnce'],'resources':{'requests':{'storage':'512Mi'}}}"),
         BOUND("{'accessModes':['ReadWriteOnce'],'resources':{'requests':{'storage':'1Gi'}}}"),
         "spec.resources.requests.storage: Forbidden: field can not be less than previous "
         "value"},
        {PVC("{'accessModes':['ReadWriteOnce'],'volumeName':'pv1','resources':{'requests':{"
             "'storage':'1Gi'}}}"),
         PVC_OK, NULL},
    };
    strat_run(&api_strategy_persistentvolumeclaim, cases, sizeof cases / sizeof cases[0]);
    json_t *c = strat_created(&api_strategy_persistentvolumeclaim,
                              "{'metadata':{'name':'c'},'spec':{},'status':{'phase':'Bound'}}");
    strat_expect(c, "spec.volumeMode", "'Filesystem'");
    strat_expect(c, "status", "{'phase':'Pending'}");
    json_decref(c);
}

#define PV(spec) "{'metadata':{'name':'v'},'spec':" spec "}"
#define PV_OK                                                                                      \
    PV("{'capacity':{'storage':'1Gi'},'accessModes':['ReadWriteOnce'],'hostPath':{'path':'/d'}}")

static void test_pv(void **state)
{
    (void)state;
    static const strat_case_t cases[] = {
        {PV_OK, NULL, NULL},
        {PV("{'accessModes':['ReadWriteOnce'],'hostPath':{'path':'/d'}}"), NULL,
         "spec.capacity: Required value"},
        {PV("{'capacity':{'storage':'-1Gi'},'accessModes':['ReadWriteOnce'],'hostPath':{'path':"
            "'/d'}}"),
         NULL, "spec.capacity[storage]: Invalid value: \"-1Gi\": must be greater than zero"},
        {PV("{'capacity':{'storage':'1Gi'},'hostPath':{'path':'/d'}}"), NULL,
         "spec.accessModes: Required value: at least 1 access mode is required"},
        {PV("{'capacity':{'storage':'1Gi'},'accessModes':['ReadWriteOnce']}"), NULL,
         "spec: Required value: must specify a volume type"},
        {PV("{'capacity':{'storage':'1Gi'},'accessModes':['ReadWriteOnce'],'hostPath':{'path':"
            "'/d'},'nfs':{'server':'s','path':'/'}}"),
         NULL, "spec.nfs: Forbidden: may not specify more than 1 volume type"},
        {PV("{'capacity':{'storage':'1Gi'},'accessModes':['ReadWriteOnce'],'hostPath':{'path':"
            "'/d'},'persistentVolumeReclaimPolicy':'Keep'}"),
         NULL, "spec.persistentVolumeReclaimPolicy: Unsupported value: \"Keep\": supported "
               "values: \"Delete\", \"Recycle\", \"Retain\""},
        {PV("{'capacity':{'storage':'1Gi'},'accessModes':['ReadWriteOnce'],'local':{'path':'/d'}"
            "}"),
         NULL, "spec.nodeAffinity: Required value: Local volume requires node affinity"},
        {PV("{'capacity':{'storage':'1Gi'},'accessModes':['ReadWriteOnce'],'hostPath':{'path':"
            "'/e'}}"),
         PV_OK, "spec.persistentvolumesource: Forbidden: spec.persistentvolumesource is "
                "immutable after creation"},
        {PV("{'capacity':{'storage':'2Gi'},'accessModes':['ReadWriteOnce'],'hostPath':{'path':"
            "'/d'}}"),
         PV_OK, NULL},
    };
    strat_run(&api_strategy_persistentvolume, cases, sizeof cases / sizeof cases[0]);
    json_t *v = strat_created(&api_strategy_persistentvolume, PV_OK);
    strat_expect(v, "spec.persistentVolumeReclaimPolicy", "'Retain'");
    strat_expect(v, "spec.volumeMode", "'Filesystem'");
    strat_expect(v, "status.phase", "'Pending'");
    json_decref(v);
}

#define SC(extra) "{'metadata':{'name':'fast'},'provisioner':'example.com/disk'" extra "}"

static void test_storageclass(void **state)
{
    (void)state;
    static const strat_case_t cases[] = {
        {SC(",'parameters':{'type':'ssd'}"), NULL, NULL},
        {"{'metadata':{'name':'fast'}}", NULL, "provisioner: Required value"},
        {SC(",'reclaimPolicy':'Recycle'"), NULL,
         "reclaimPolicy: Unsupported value: \"Recycle\": supported values: \"Delete\", "
         "\"Retain\""},
        {SC(",'volumeBindingMode':'Later'"), NULL,
         "volumeBindingMode: Unsupported value: \"Later\": supported values: \"Immediate\", "
         "\"WaitForFirstConsumer\""},
        {SC(",'parameters':{'':'x'}"), NULL,
         "parameters: Invalid value: \"\": field can not be empty."},
        {SC(",'parameters':{'type':'hdd'}"), SC(",'parameters':{'type':'ssd'}"),
         "parameters: Forbidden: updates to parameters are forbidden."},
        {"{'metadata':{'name':'fast'},'provisioner':'other.io/disk'}", SC(""),
         "provisioner: Forbidden: updates to provisioner are forbidden."},
        {SC(",'reclaimPolicy':'Retain'"), SC(""),
         "reclaimPolicy: Forbidden: updates to reclaimPolicy are forbidden."},
        {SC(",'volumeBindingMode':'WaitForFirstConsumer'"), SC(""),
         "volumeBindingMode: Invalid value: \"WaitForFirstConsumer\": field is immutable"},
        {SC(",'allowVolumeExpansion':true"), SC(""), NULL},
    };
    strat_run(&api_strategy_storageclass, cases, sizeof cases / sizeof cases[0]);
    json_t *sc = strat_created(&api_strategy_storageclass, SC(""));
    strat_expect(sc, "reclaimPolicy", "'Delete'");
    strat_expect(sc, "volumeBindingMode", "'Immediate'");
    json_decref(sc);
}

static void test_csi(void **state)
{
    (void)state;
    static const strat_case_t drivers[] = {
        {"{'metadata':{'name':'d.example.com'},'spec':{}}", NULL, NULL},
        {"{'metadata':{'name':'d'},'spec':{'fsGroupPolicy':'Some'}}", NULL,
         "spec.fsGroupPolicy: Unsupported value: \"Some\": supported values: \"File\", \"None\", "
         "\"ReadWriteOnceWithFSType\""},
        {"{'metadata':{'name':'d'},'spec':{'volumeLifecycleModes':['Forever']}}", NULL,
         "spec.volumeLifecycleModes: Unsupported value: \"Forever\": supported values: "
         "\"Ephemeral\", \"Persistent\""},
        {"{'metadata':{'name':'d'},'spec':{'attachRequired':false}}",
         "{'metadata':{'name':'d'},'spec':{}}",
         "spec.attachedRequired: Invalid value: false: field is immutable"},
    };
    strat_run(&api_strategy_csidriver, drivers, sizeof drivers / sizeof drivers[0]);
    json_t *d = strat_created(&api_strategy_csidriver, "{'metadata':{'name':'d'}}");
    strat_expect(d, "spec.attachRequired", "true");
    strat_expect(d, "spec.volumeLifecycleModes", "['Persistent']");
    json_decref(d);

    static const strat_case_t nodes[] = {
        {"{'metadata':{'name':'n'},'spec':{'drivers':[{'name':'d','nodeID':'n1'}]}}", NULL, NULL},
        {"{'metadata':{'name':'n'},'spec':{'drivers':[{'name':'d'}]}}", NULL,
         "spec.drivers[0].nodeID: Required value"},
        {"{'metadata':{'name':'n'},'spec':{'drivers':[{'name':'d','nodeID':'a'},{'name':'d',"
         "'nodeID':'b'}]}}",
         NULL, "spec.drivers[1].name: Duplicate value: \"d\""},
        {"{'metadata':{'name':'n'},'spec':{'drivers':[{'name':'d','nodeID':'n2'}]}}",
         "{'metadata':{'name':'n'},'spec':{'drivers':[{'name':'d','nodeID':'n1'}]}}",
         "CSINodeDriver: Invalid value: {\"name\":\"d\",\"nodeID\":\"n2\"}: field is immutable"},
    };
    strat_run(&api_strategy_csinode, nodes, sizeof nodes / sizeof nodes[0]);

    static const strat_case_t caps[] = {
        {"{'metadata':{'name':'c'},'storageClassName':'fast','capacity':'10Gi'}", NULL, NULL},
        {"{'metadata':{'name':'c'},'capacity':'10Gi'}", NULL, "storageClassName: Required value"},
        {"{'metadata':{'name':'c'},'storageClassName':'fast','capacity':'-1'}", NULL,
         "capacity: Invalid value: \"-1\": must be greater than or equal to 0"},
        {"{'metadata':{'name':'c'},'storageClassName':'slow'}",
         "{'metadata':{'name':'c'},'storageClassName':'fast'}",
         "storageClassName: Invalid value: \"slow\": field is immutable"},
    };
    strat_run(&api_strategy_csistoragecapacity, caps, sizeof caps / sizeof caps[0]);

    static const strat_case_t vas[] = {
        {"{'metadata':{'name':'a'},'spec':{'attacher':'d','nodeName':'n','source':{"
         "'persistentVolumeName':'pv'}}}",
         NULL, NULL},
        {"{'metadata':{'name':'a'},'spec':{'nodeName':'n','source':{'persistentVolumeName':'pv'"
         "}}}",
         NULL, "spec.attacher: Required value"},
        {"{'metadata':{'name':'a'},'spec':{'attacher':'d','nodeName':'n','source':{}}}", NULL,
         "spec.source: Required value: must specify exactly one of inlineVolumeSpec and "
         "persistentVolumeName"},
        {"{'metadata':{'name':'a'},'spec':{'attacher':'d','nodeName':'m','source':{"
         "'persistentVolumeName':'pv'}}}",
         "{'metadata':{'name':'a'},'spec':{'attacher':'d','nodeName':'n','source':{"
         "'persistentVolumeName':'pv'}}}",
         "spec: Invalid value: {\"attacher\":\"d\",\"nodeName\":\"m\",\"source\":{"
         "\"persistentVolumeName\":\"pv\"}}: field is immutable"},
    };
    strat_run(&api_strategy_volumeattachment, vas, sizeof vas / sizeof vas[0]);

    static const strat_case_t vacs[] = {
        {"{'metadata':{'name':'v'},'driverName':'d.example.com','parameters':{'iops':'10'}}",
         NULL, NULL},
        {"{'metadata':{'name':'v'}}", NULL, "driverName: Required value"},
        {"{'metadata':{'name':'v'},'driverName':'other.example.com'}",
         "{'metadata':{'name':'v'},'driverName':'d.example.com'}",
         "driverName: Forbidden: updates to driverName are forbidden."},
        {"{'metadata':{'name':'v'},'driverName':'d','parameters':{'iops':'20'}}",
         "{'metadata':{'name':'v'},'driverName':'d','parameters':{'iops':'10'}}",
         "parameters: Forbidden: updates to parameters are forbidden."},
    };
    strat_run(&api_strategy_volumeattributesclass, vacs, sizeof vacs / sizeof vacs[0]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pvc),
        cmocka_unit_test(test_pv),
        cmocka_unit_test(test_storageclass),
        cmocka_unit_test(test_csi),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
