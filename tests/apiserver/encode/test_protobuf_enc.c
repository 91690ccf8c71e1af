/*
 * test_protobuf_enc.c -- src/apiserver/protobuf_enc.c with the generated
 * tables: JSON -> protobuf -> JSON round trips for realistic objects of many
 * kinds (and the options kinds clients send), the kubectl fixtures re-encoded,
 * Lists, watch event framing, Status, Accept negotiation and the errors.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apiserver/encode/protobuf.h"
#include "lib/buf.h"
#include "lib/err.h"

#ifndef PB_FIXTURES
#error "PB_FIXTURES must name the directory of the pb/ fixtures"
#endif

static json_t *js(const char *text)
{
    json_error_t e;
    json_t *j = json_loads(text, 0, &e);
    if (!j) fail_msg("bad test JSON: %s (line %d column %d)", e.text, e.line, e.column);
    return j;
}

static void assert_json_eq(json_t *got, json_t *want)
{
    if (json_equal(got, want)) return;
    char *g = json_dumps(got, JSON_SORT_KEYS | JSON_INDENT(1));
    char *w = json_dumps(want, JSON_SORT_KEYS | JSON_INDENT(1));
    print_error("got:\n%s\nwant:\n%s\n", g, w);
    free(g);
    free(w);
    fail_msg("round trip differs");
}

/* Encode, check the envelope, decode; the result must equal the input. */
static void round_trip(const char *text)
{
    json_t *in = js(text);
    buf_t b;
    buf_init(&b, 1 << 20);
    int rc = api_pb_encode(in, &b);
    if (rc) fail_msg("encode %s: %d", text, rc);
    assert_true(b.len > 4);
    assert_memory_equal(b.p, "k8s", 4);
    json_t *out = NULL;
    char err[512] = "";
    rc = api_pb_decode(b.p, b.len, &out, err, sizeof err);
    if (rc) fail_msg("decode: %s", err);
    assert_json_eq(out, in);
    json_decref(out);
    json_decref(in);
    buf_free(&b);
}

/* Protobuf has no empty list: `[]` and an absent list are the same bytes,
 * so the objects below have none (Kubernetes' decoder gives nil for both). */

static void test_options_kinds(void **state)
{
    (void)state;
    /* client-go sends DeleteOptions with its client's group-version */
    round_trip("{\"kind\":\"DeleteOptions\",\"apiVersion\":\"v1\",\"propagationPolicy\":"
               "\"Foreground\",\"gracePeriodSeconds\":0,\"preconditions\":{\"uid\":\"u-1\","
               "\"resourceVersion\":\"42\"},\"dryRun\":[\"All\"]}");
    round_trip("{\"kind\":\"DeleteOptions\",\"apiVersion\":\"apps/v1\",\"propagationPolicy\":"
               "\"Orphan\",\"orphanDependents\":false}");
    round_trip("{\"kind\":\"DeleteOptions\",\"apiVersion\":\"meta.k8s.io/v1\","
               "\"propagationPolicy\":\"Background\"}");
    round_trip("{\"kind\":\"DeleteOptions\",\"apiVersion\":\"rbac.authorization.k8s.io/v1\","
               "\"gracePeriodSeconds\":30}");
    round_trip("{\"kind\":\"Scale\",\"apiVersion\":\"autoscaling/v1\",\"metadata\":{\"name\":"
               "\"web\",\"namespace\":\"default\",\"resourceVersion\":\"7\"},\"spec\":{\"replicas\":"
               "3},\"status\":{\"replicas\":2,\"selector\":\"app=web\"}}");
    round_trip("{\"kind\":\"Eviction\",\"apiVersion\":\"policy/v1\",\"metadata\":{\"name\":\"p1\","
               "\"namespace\":\"ns\"},\"deleteOptions\":{\"gracePeriodSeconds\":5}}");
    round_trip("{\"kind\":\"Binding\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"p1\"},"
               "\"target\":{\"kind\":\"Node\",\"name\":\"n1\"}}");
}

static void test_workloads(void **state)
{
    (void)state;
    round_trip(
        "{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"web-0\",\"namespace\":"
        "\"default\",\"uid\":\"8e1f\",\"resourceVersion\":\"12\",\"creationTimestamp\":"
        "\"2024-05-01T10:00:00Z\",\"labels\":{\"app\":\"web\",\"tier\":\"fe\"},\"annotations\":{"
        "\"a\":\"\"},\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":\"StatefulSet\","
        "\"name\":\"web\",\"uid\":\"9\",\"controller\":true,\"blockOwnerDeletion\":true}],"
        "\"managedFields\":[{\"manager\":\"kubectl\",\"operation\":\"Apply\",\"apiVersion\":\"v1\","
        "\"time\":\"2024-05-01T10:00:00Z\",\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{\"f:spec\":{}}"
        "}]},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"nginx:1.25\",\"ports\":[{"
        "\"containerPort\":80,\"protocol\":\"TCP\",\"name\":\"http\"}],\"env\":[{\"name\":\"A\","
        "\"value\":\"1\"},{\"name\":\"B\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":"
        "\"metadata.name\"}}}],\"resources\":{\"limits\":{\"cpu\":\"500m\",\"memory\":\"128Mi\"},"
        "\"requests\":{\"cpu\":\"250m\"}},\"livenessProbe\":{\"httpGet\":{\"path\":\"/\",\"port\":"
        "\"http\"},\"periodSeconds\":10},\"readinessProbe\":{\"tcpSocket\":{\"port\":80}},"
        "\"volumeMounts\":[{\"name\":\"data\",\"mountPath\":\"/data\"}],\"securityContext\":{"
        "\"runAsNonRoot\":true,\"runAsUser\":1000,\"allowPrivilegeEscalation\":false,"
        "\"capabilities\":{\"drop\":[\"ALL\"]}}}],\"volumes\":[{\"name\":\"data\","
        "\"persistentVolumeClaim\":{\"claimName\":\"data-web-0\"}},{\"name\":\"cfg\",\"configMap\":"
        "{\"name\":\"cfg\",\"defaultMode\":420}},{\"name\":\"disk\",\"gcePersistentDisk\":{"
        "\"pdName\":\"d1\",\"fsType\":\"ext4\"}}],\"restartPolicy\":\"Always\","
        "\"terminationGracePeriodSeconds\":30,\"nodeSelector\":{\"disk\":\"ssd\"},\"tolerations\":"
        "[{\"key\":\"k\",\"operator\":\"Exists\",\"effect\":\"NoSchedule\"}],\"affinity\":{"
        "\"podAntiAffinity\":{\"preferredDuringSchedulingIgnoredDuringExecution\":[{\"weight\":"
        "100,\"podAffinityTerm\":{\"labelSelector\":{\"matchLabels\":{\"app\":\"web\"}},"
        "\"topologyKey\":\"kubernetes.io/hostname\"}}]}},\"enableServiceLinks\":false},"
        "\"status\":{\"phase\":\"Running\",\"podIP\":\"10.0.0.5\",\"podIPs\":[{\"ip\":"
        "\"10.0.0.5\"}],\"qosClass\":\"Burstable\",\"startTime\":\"2024-05-01T10:00:01Z\","
        "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\",\"lastTransitionTime\":"
        "\"2024-05-01T10:00:05Z\"}],\"containerStatuses\":[{\"name\":\"c\",\"ready\":true,"
        "\"restartCount\":0,\"image\":\"nginx:1.25\",\"imageID\":\"\",\"started\":true,\"state\":{"
        "\"running\":{\"startedAt\":\"2024-05-01T10:00:02Z\"}}}]}}");
    round_trip("{\"kind\":\"CronJob\",\"apiVersion\":\"batch/v1\",\"metadata\":{\"name\":\"cj\","
               "\"namespace\":\"ns\"},\"spec\":{\"schedule\":\"*/5 * * * *\",\"timeZone\":"
               "\"Etc/UTC\",\"concurrencyPolicy\":\"Forbid\",\"suspend\":false,"
               "\"successfulJobsHistoryLimit\":0,\"failedJobsHistoryLimit\":1,\"jobTemplate\":{"
               "\"metadata\":{\"labels\":{\"j\":\"1\"}},\"spec\":{\"backoffLimit\":0,"
               "\"template\":{\"spec\":{\"restartPolicy\":\"OnFailure\",\"containers\":[{\"name\":"
               "\"c\",\"image\":\"busybox\",\"command\":[\"date\"]}]}}}}},\"status\":{"
               "\"lastScheduleTime\":\"2024-05-01T10:05:00Z\",\"active\":[{\"kind\":\"Job\","
               "\"name\":\"cj-1\",\"namespace\":\"ns\"}]}}");
    round_trip("{\"kind\":\"ReplicationController\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":"
               "\"rc\"},\"spec\":{\"replicas\":0,\"selector\":{\"app\":\"x\"},\"template\":{"
               "\"metadata\":{\"labels\":{\"app\":\"x\"}},\"spec\":{\"containers\":[{\"name\":"
               "\"c\",\"image\":\"i\"}]}}},\"status\":{\"replicas\":0}}");
    round_trip("{\"kind\":\"DaemonSet\",\"apiVersion\":\"apps/v1\",\"metadata\":{\"name\":\"ds\"},"
               "\"spec\":{\"selector\":{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"In\","
               "\"values\":[\"b\"]}]},\"updateStrategy\":{\"type\":\"RollingUpdate\","
               "\"rollingUpdate\":{\"maxUnavailable\":\"10%\",\"maxSurge\":0}},\"template\":{"
               "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"i\"}]}}}}");
    round_trip("{\"kind\":\"HorizontalPodAutoscaler\",\"apiVersion\":\"autoscaling/v2\","
               "\"metadata\":{\"name\":\"h\"},\"spec\":{\"scaleTargetRef\":{\"apiVersion\":"
               "\"apps/v1\",\"kind\":\"Deployment\",\"name\":\"web\"},\"minReplicas\":1,"
               "\"maxReplicas\":5,\"metrics\":[{\"type\":\"Resource\",\"resource\":{\"name\":\"cpu\","
               "\"target\":{\"type\":\"Utilization\",\"averageUtilization\":80}}}]}}");
    round_trip("{\"kind\":\"ControllerRevision\",\"apiVersion\":\"apps/v1\",\"metadata\":{"
               "\"name\":\"ds-1\"},\"revision\":1,\"data\":{\"spec\":{\"template\":{\"$patch\":"
               "\"replace\"}}}}");
}

static void test_cluster_kinds(void **state)
{
    (void)state;
    round_trip("{\"kind\":\"Role\",\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"metadata\":{"
               "\"name\":\"r\",\"namespace\":\"ns\"},\"rules\":[{\"apiGroups\":[\"\"],\"resources\":"
               "[\"pods\",\"pods/log\"],\"verbs\":[\"get\",\"list\",\"watch\"]},{\"nonResourceURLs\":"
               "[\"/healthz\"],\"verbs\":[\"get\"]}]}");
    round_trip("{\"kind\":\"ClusterRole\",\"apiVersion\":\"rbac.authorization.k8s.io/v1\","
               "\"metadata\":{\"name\":\"agg\"},\"aggregationRule\":{\"clusterRoleSelectors\":[{"
               "\"matchLabels\":{\"x\":\"true\"}}]}}");
    round_trip("{\"kind\":\"RoleBinding\",\"apiVersion\":\"rbac.authorization.k8s.io/v1\","
               "\"metadata\":{\"name\":\"rb\"},\"roleRef\":{\"apiGroup\":"
               "\"rbac.authorization.k8s.io\",\"kind\":\"Role\",\"name\":\"r\"},\"subjects\":[{"
               "\"kind\":\"ServiceAccount\",\"name\":\"default\",\"namespace\":\"ns\"}]}");
    round_trip("{\"kind\":\"PersistentVolumeClaim\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":"
               "\"data\"},\"spec\":{\"accessModes\":[\"ReadWriteOnce\"],\"resources\":{"
               "\"requests\":{\"storage\":\"1Gi\"}},\"storageClassName\":\"\",\"volumeMode\":"
               "\"Filesystem\"},\"status\":{\"phase\":\"Bound\",\"capacity\":{\"storage\":\"1Gi\"}}}");
    round_trip("{\"kind\":\"PersistentVolume\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":"
               "\"pv\"},\"spec\":{\"capacity\":{\"storage\":\"5Gi\"},\"hostPath\":{\"path\":"
               "\"/tmp/pv\"},\"accessModes\":[\"ReadWriteOnce\"],\"persistentVolumeReclaimPolicy\":"
               "\"Retain\"}}");
    round_trip("{\"kind\":\"Ingress\",\"apiVersion\":\"networking.k8s.io/v1\",\"metadata\":{"
               "\"name\":\"i\"},\"spec\":{\"ingressClassName\":\"nginx\",\"rules\":[{\"host\":"
               "\"a.example.com\",\"http\":{\"paths\":[{\"path\":\"/\",\"pathType\":\"Prefix\","
               "\"backend\":{\"service\":{\"name\":\"web\",\"port\":{\"number\":80}}}}]}}],"
               "\"tls\":[{\"hosts\":[\"a.example.com\"],\"secretName\":\"tls\"}]}}");
    round_trip("{\"kind\":\"IngressClass\",\"apiVersion\":\"networking.k8s.io/v1\",\"metadata\":"
               "{\"name\":\"nginx\"},\"spec\":{\"controller\":\"k8s.io/ingress-nginx\","
               "\"parameters\":{\"apiGroup\":\"k8s.example.com\",\"kind\":\"P\",\"name\":\"p\"}}}");
    round_trip("{\"kind\":\"NetworkPolicy\",\"apiVersion\":\"networking.k8s.io/v1\",\"metadata\":"
               "{\"name\":\"np\"},\"spec\":{\"podSelector\":{},\"policyTypes\":[\"Ingress\"],"
               "\"ingress\":[{\"from\":[{\"ipBlock\":{\"cidr\":\"10.0.0.0/8\",\"except\":["
               "\"10.1.0.0/16\"]}}],\"ports\":[{\"protocol\":\"TCP\",\"port\":8080,\"endPort\":"
               "8090}]}]}}");
    round_trip("{\"kind\":\"EndpointSlice\",\"apiVersion\":\"discovery.k8s.io/v1\",\"metadata\":"
               "{\"name\":\"es\"},\"addressType\":\"IPv4\",\"endpoints\":[{\"addresses\":["
               "\"10.0.0.1\"],\"conditions\":{\"ready\":true,\"serving\":true,\"terminating\":"
               "false},\"nodeName\":\"n1\"}],\"ports\":[{\"name\":\"\",\"port\":80,\"protocol\":"
               "\"TCP\"}]}");
    round_trip("{\"kind\":\"Lease\",\"apiVersion\":\"coordination.k8s.io/v1\",\"metadata\":{"
               "\"name\":\"l\"},\"spec\":{\"holderIdentity\":\"me\",\"leaseDurationSeconds\":15,"
               "\"renewTime\":\"2024-05-01T10:00:00.123456Z\",\"leaseTransitions\":0}}");
    round_trip("{\"kind\":\"CertificateSigningRequest\",\"apiVersion\":"
               "\"certificates.k8s.io/v1\",\"metadata\":{\"name\":\"csr\"},\"spec\":{\"request\":"
               "\"LS0tLS1CRUdJTg==\",\"signerName\":\"kubernetes.io/kube-apiserver-client\","
               "\"usages\":[\"client auth\"],\"extra\":{\"scopes\":[\"a\",\"b\"]},"
               "\"expirationSeconds\":3600}}");
    round_trip("{\"kind\":\"StorageClass\",\"apiVersion\":\"storage.k8s.io/v1\",\"metadata\":{"
               "\"name\":\"fast\"},\"provisioner\":\"csi.example.com\",\"parameters\":{\"t\":"
               "\"ssd\"},\"reclaimPolicy\":\"Delete\",\"allowVolumeExpansion\":false,"
               "\"volumeBindingMode\":\"WaitForFirstConsumer\"}");
    round_trip("{\"kind\":\"PriorityClass\",\"apiVersion\":\"scheduling.k8s.io/v1\",\"metadata\":"
               "{\"name\":\"high\"},\"value\":1000000,\"globalDefault\":true,"
               "\"preemptionPolicy\":\"Never\"}");
    round_trip("{\"kind\":\"RuntimeClass\",\"apiVersion\":\"node.k8s.io/v1\",\"metadata\":{"
               "\"name\":\"gvisor\"},\"handler\":\"runsc\",\"overhead\":{\"podFixed\":{\"cpu\":"
               "\"100m\"}}}");
    round_trip("{\"kind\":\"ComponentStatus\",\"apiVersion\":\"v1\",\"metadata\":{"
               "\"name\":\"etcd-0\"},\"conditions\":[{\"type\":\"Healthy\",\"status\":"
               "\"False\",\"message\":\"no store\",\"error\":\"unreachable\"}]}");
    round_trip("{\"kind\":\"IPAddress\",\"apiVersion\":\"networking.k8s.io/v1\",\"metadata\":{"
               "\"name\":\"10.96.0.1\"},\"spec\":{\"parentRef\":{\"resource\":"
               "\"services\",\"namespace\":\"default\",\"name\":\"kubernetes\"}}}");
    round_trip("{\"kind\":\"Event\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"e\"},"
               "\"involvedObject\":{\"kind\":\"Pod\",\"name\":\"p\"},\"reason\":\"Started\","
               "\"count\":2,\"eventTime\":\"2024-05-01T10:00:00.000001Z\",\"type\":\"Normal\"}");
}

/* The kubectl fixtures: decode, encode, decode gives the same object. */
static void test_fixtures_reencode(void **state)
{
    (void)state;
    static const char *const names[] = {"namespace", "configmap", "secret", "deployment", "job",
                                        "serviceaccount", "service", "cronjob", "quota",
                                        "service-nodeport", "service-externalname",
                                        "secret-docker", "deployment-replicas0"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s.bin", PB_FIXTURES, names[i]);
        buf_t raw;
        buf_init(&raw, 1 << 20);
        assert_int_equal(buf_append_file(&raw, path), 0);
        json_t *a = NULL, *b = NULL;
        char err[512];
        assert_int_equal(api_pb_decode(raw.p, raw.len, &a, err, sizeof err), 0);
        buf_t enc;
        buf_init(&enc, 1 << 20);
        assert_int_equal(api_pb_encode(a, &enc), 0);
        if (api_pb_decode(enc.p, enc.len, &b, err, sizeof err)) fail_msg("%s: %s", names[i], err);
        assert_json_eq(b, a);
        /* what we write is never bigger than what gogo wrote: we leave out
         * the zero values of fields the JSON does not have */
        assert_true(enc.len <= raw.len);
        json_decref(a);
        json_decref(b);
        buf_free(&enc);
        buf_free(&raw);
    }
}

/* A whole body, byte for byte: a DeleteOptions as client-go writes it. */
static void test_delete_options_bytes(void **state)
{
    (void)state;
    json_t *in = js("{\"kind\":\"DeleteOptions\",\"apiVersion\":\"v1\",\"propagationPolicy\":"
                    "\"Foreground\"}");
    buf_t b;
    buf_init(&b, 4096);
    assert_int_equal(api_pb_encode(in, &b), 0);
    static const char want[] = "k8s\0"
                               "\x0a\x13\x0a\x02v1\x12\x0d" "DeleteOptions" /* typeMeta */
                               "\x12\x0c\x22\x0a" "Foreground"         /* raw: field 4 */
                               "\x1a\x00\x22\x00";                      /* encoding, type */
    assert_int_equal(b.len, sizeof want - 1);
    assert_memory_equal(b.p, want, sizeof want - 1);
    json_decref(in);
    buf_free(&b);
}

static void test_list_and_status(void **state)
{
    (void)state;
    round_trip("{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":"
               "\"99\",\"continue\":\"abc\",\"remainingItemCount\":0},\"items\":[{\"metadata\":{"
               "\"name\":\"a\"},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"i\"}]}},{"
               "\"metadata\":{\"name\":\"b\"}}]}");
    round_trip("{\"kind\":\"RoleList\",\"apiVersion\":\"rbac.authorization.k8s.io/v1\","
               "\"metadata\":{\"resourceVersion\":\"5\"}}");
    round_trip("{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
               "\"message\":\"pods \\\"x\\\" not found\",\"reason\":\"NotFound\",\"details\":{"
               "\"name\":\"x\",\"kind\":\"pods\"},\"code\":404}");
}

static uint32_t be32(const char *p)
{
    const uint8_t *u = (const uint8_t *)p;
    return (uint32_t)u[0] << 24 | (uint32_t)u[1] << 16 | (uint32_t)u[2] << 8 | u[3];
}

static void test_watch_frames(void **state)
{
    (void)state;
    json_t *pod = js("{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"p\","
                     "\"resourceVersion\":\"3\"}}");
    buf_t b;
    buf_init(&b, 1 << 20);
    assert_int_equal(api_pb_encode_event("ADDED", pod, &b), 0);
    size_t first = b.len;
    assert_int_equal(api_pb_encode_event("DELETED", pod, &b), 0);
    /* two frames, each a big-endian length and a WatchEvent envelope */
    assert_int_equal(be32(b.p) + 4, first);
    assert_int_equal(be32(b.p + first) + 4, b.len - first);
    json_t *ev = NULL;
    char err[512];
    assert_int_equal(api_pb_decode(b.p + 4, first - 4, &ev, err, sizeof err), 0);
    json_t *want = js("{\"kind\":\"WatchEvent\",\"apiVersion\":\"v1\",\"type\":\"ADDED\","
                      "\"object\":{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":"
                      "\"p\",\"resourceVersion\":\"3\"}}}");
    assert_json_eq(ev, want);
    json_decref(ev);
    json_decref(want);
    /* a BOOKMARK of a kind: the object in its envelope too */
    buf_reset(&b);
    json_t *bm = js("{\"kind\":\"Role\",\"apiVersion\":\"rbac.authorization.k8s.io/v1\","
                    "\"metadata\":{\"resourceVersion\":\"9\"}}");
    assert_int_equal(api_pb_encode_event("BOOKMARK", bm, &b), 0);
    assert_int_equal(be32(b.p) + 4, b.len);
    json_decref(bm);
    json_decref(pod);
    buf_free(&b);
}

static void test_accept(void **state)
{
    (void)state;
    assert_true(api_pb_accepts("application/vnd.kubernetes.protobuf"));
    assert_true(api_pb_accepts("application/vnd.kubernetes.protobuf, application/json"));
    assert_true(api_pb_accepts("application/vnd.kubernetes.protobuf;q=0.9,*/*"));
    assert_false(api_pb_accepts(NULL));
    assert_false(api_pb_accepts(""));
    assert_false(api_pb_accepts("application/json"));
    assert_false(api_pb_accepts("application/json, application/vnd.kubernetes.protobuf"));
    assert_false(api_pb_accepts("*/*"));
    assert_false(api_pb_accepts("application/vnd.kubernetes.protobuf;as=Table;v=v1;"
                                "g=meta.k8s.io,application/json"));
    assert_false(api_pb_accepts("application/vnd.kubernetes.protobuf.x, application/json"));
}

static void test_encode_errors(void **state)
{
    (void)state;
    buf_t b;
    buf_init(&b, 64);
    json_t *o = js("{\"kind\":\"Widget\",\"apiVersion\":\"example.com/v1\"}");
    assert_int_equal(api_pb_encode(o, &b), KP_ENOTFOUND);
    json_decref(o);
    o = js("{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":7}}");
    assert_int_equal(api_pb_encode(o, &b), KP_EINVAL);
    json_decref(o);
    o = js("{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"creationTimestamp\":"
           "\"yesterday\"}}");
    assert_int_equal(api_pb_encode(o, &b), KP_EINVAL);
    json_decref(o);
    o = js("{\"kind\":\"Secret\",\"apiVersion\":\"v1\",\"data\":{\"k\":\"not base64!\"}}");
    assert_int_equal(api_pb_encode(o, &b), KP_EINVAL);
    json_decref(o);
    /* the cap: nothing is left behind */
    o = js("{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",\"data\":{\"k\":"
           "\"0123456789012345678901234567890123456789012345678901234567890123456789\"}}");
    assert_int_equal(api_pb_encode(o, &b), KP_ETOOLARGE);
    assert_int_equal(b.len, 0);
    json_decref(o);
    buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_options_kinds),      cmocka_unit_test(test_workloads),
        cmocka_unit_test(test_cluster_kinds),      cmocka_unit_test(test_fixtures_reencode),
        cmocka_unit_test(test_delete_options_bytes), cmocka_unit_test(test_list_and_status),
        cmocka_unit_test(test_watch_frames),       cmocka_unit_test(test_accept),
        cmocka_unit_test(test_encode_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
