/*
 * test_strategy_cluster.c -- PriorityClasses, RuntimeClasses,
 * HorizontalPodAutoscalers (autoscaling/v2) and CertificateSigningRequests
 * (src/apiserver/kinds/strategy_cluster.c, strategy_csr.c) against Kubernetes'
 * validation and defaults: each rule with a good and a bad object.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "strategy_cases.h"

extern const api_strategy_t api_strategy_priorityclass, api_strategy_runtimeclass,
    api_strategy_horizontalpodautoscaler, api_strategy_certificatesigningrequest;

#define PC(name, extra) "{'metadata':{'name':'" name "'}" extra "}"

static void test_priorityclass(void **state)
{
    (void)state;
    static const strat_case_t cases[] = {
        {PC("high", ",'value':1000000000"), NULL, NULL},
        {PC("system-node-critical", ",'value':2000001000"), NULL, NULL},
        {PC("higher", ",'value':1000000001"), NULL,
         "value: Forbidden: maximum allowed value of a user defined priority is 1000000000"},
        {PC("system-mine", ",'value':10"), NULL,
         "metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for "
         "system use only. error: system-mine is not a known system priority class"},
        {PC("system-cluster-critical", ",'value':5"), NULL,
         "metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for "
         "system use only. error: value of system-cluster-critical PriorityClass must be "
         "2000000000"},
        {PC("high", ",'value':1,'preemptionPolicy':'Sometimes'"), NULL,
         "preemptionPolicy: Unsupported value: \"Sometimes\": supported values: \"Never\", "
         "\"PreemptLowerPriority\""},
        {PC("high", ",'value':2"), PC("high", ",'value':1"),
         "value: Forbidden: may not be changed in an update."},
        {PC("high", ",'value':1,'preemptionPolicy':'Never'"), PC("high", ",'value':1"),
         "preemptionPolicy: Invalid value: \"Never\": field is immutable"},
        {PC("high", ",'value':1,'description':'new'"), PC("high", ",'value':1"), NULL},
    };
    strat_run(&api_strategy_priorityclass, cases, sizeof cases / sizeof cases[0]);
    json_t *pc = strat_created(&api_strategy_priorityclass, PC("p", ",'value':1"));
    strat_expect(pc, "preemptionPolicy", "'PreemptLowerPriority'");
    json_decref(pc);
}

static void test_runtimeclass(void **state)
{
    (void)state;
    static const strat_case_t cases[] = {
        {"{'metadata':{'name':'gvisor'},'handler':'runsc','overhead':{'podFixed':{'cpu':'250m'}}}",
         NULL, NULL},
        {"{'metadata':{'name':'g'},'handler':'Run_SC'}", NULL,
         "handler: Invalid value: \"Run_SC\": a lowercase RFC 1123 label must consist of lower "
         "case alphanumeric characters or '-', and must start and end with an alphanumeric "
         "character (e.g. 'my-name',  or '123-abc', regex used for validation is "
         "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"},
        {"{'metadata':{'name':'g'},'handler':'runsc','overhead':{'podFixed':{'cpu':'lots'}}}",
         NULL, "overhead.podFixed[cpu]: Invalid value: \"lots\": quantities must match the "
               "regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"},
        {"{'metadata':{'name':'g'},'handler':'kata'}", "{'metadata':{'name':'g'},'handler':'runsc'}",
         "handler: Invalid value: \"kata\": field is immutable"},
    };
    strat_run(&api_strategy_runtimeclass, cases, sizeof cases / sizeof cases[0]);
}

#define REF "'scaleTargetRef':{'apiVersion':'apps/v1','kind':'Deployment','name':'web'}"
#define HPA(spec) "{'metadata':{'name':'h','namespace':'ns'},'spec':{" spec "}}"
#define CPU(target) "'metrics':[{'type':'Resource','resource':{'name':'cpu','target':" target "}}]"

static void test_hpa(void **state)
{
    (void)state;
    static const strat_case_t cases[] = {
        {HPA(REF ",'maxReplicas':5"), NULL, NULL},
        {HPA("'maxReplicas':5"), NULL, "spec.scaleTargetRef.kind: Required value"},
        {HPA("'scaleTargetRef':{'kind':'Deployment'},'maxReplicas':5"), NULL,
         "spec.scaleTargetRef.name: Required value"},
        {HPA(REF ",'minReplicas':0,'maxReplicas':5"), NULL,
         "spec.minReplicas: Invalid value: 0: must be greater than or equal to 1"},
        {HPA(REF), NULL, "spec.maxReplicas: Invalid value: 0: must be greater than 0"},
        {HPA(REF ",'minReplicas':5,'maxReplicas':2"), NULL,
         "spec.maxReplicas: Invalid value: 2: must be greater than or equal to `minReplicas`"},
        {HPA(REF ",'maxReplicas':5," CPU("{'type':'Utilization','averageUtilization':50}")), NULL,
         NULL},
        {HPA(REF ",'maxReplicas':5," CPU("{'type':'Percent','averageUtilization':50}")), NULL,
         "spec.metrics[0].resource.target.type: Invalid value: \"Percent\": must be either "
         "Utilization, Value, or AverageValue"},
        {HPA(REF ",'maxReplicas':5," CPU("{'type':'Utilization','averageUtilization':0}")), NULL,
         "spec.metrics[0].resource.target.averageUtilization: Invalid value: 0: must be greater "
         "than 0"},
        {HPA(REF ",'maxReplicas':5,'metrics':[{'type':'Magic'}]"), NULL,
         "spec.metrics[0].type: Unsupported value: \"Magic\": supported values: "
         "\"ContainerResource\", \"External\", \"Object\", \"Pods\", \"Resource\""},
        {HPA(REF ",'maxReplicas':5,'metrics':[{'type':'Pods'}]"), NULL,
         "spec.metrics[0].pods: Required value: must populate information for the given metric "
         "source"},
        {HPA(REF ",'maxReplicas':5,'metrics':[{'type':'Pods','pods':{'metric':{'name':'qps'},"
                 "'target':{'type':'AverageValue'}}}]"),
         NULL, "spec.metrics[0].pods.target.averageValue: Required value: must specify a positive "
               "target averageValue"},
        {HPA(REF ",'maxReplicas':5,'behavior':{'scaleDown':{'stabilizationWindowSeconds':4000}}"),
         NULL, "spec.behavior.scaleDown.stabilizationWindowSeconds: Invalid value: 4000: must be "
               "less than or equal to 3600"},
        {HPA(REF ",'maxReplicas':5,'behavior':{'scaleUp':{'policies':[{'type':'Pods','value':0,"
                 "'periodSeconds':15}]}}"),
         NULL, "spec.behavior.scaleUp.policies[0].value: Invalid value: 0: must be greater than "
               "zero"},
    };
    strat_run(&api_strategy_horizontalpodautoscaler, cases, sizeof cases / sizeof cases[0]);
    json_t *h = strat_created(&api_strategy_horizontalpodautoscaler, HPA(REF ",'maxReplicas':5"));
    strat_expect(h, "spec.minReplicas", "1");
    strat_expect(h, "spec.metrics.0.resource",
                 "{'name':'cpu','target':{'type':'Utilization','averageUtilization':80}}");
    assert_null(json_object_get(json_object_get(h, "spec"), "behavior"));
    json_decref(h);
    h = strat_created(&api_strategy_horizontalpodautoscaler,
                      HPA(REF ",'maxReplicas':5,'behavior':{'scaleDown':{'selectPolicy':'Min'}}"));
    strat_expect(h, "spec.behavior.scaleDown",
                 "{'selectPolicy':'Min','stabilizationWindowSeconds':300,'policies':[{'type':"
                 "'Percent','value':100,'periodSeconds':15}]}");
    strat_expect(h, "spec.behavior.scaleUp.policies.0", "{'type':'Pods','value':4,'periodSeconds':15}");
    json_decref(h);
}

/* base64 of "-----BEGIN CERTIFICATE REQUEST-----\nMIIB\n-----END CERTIFICATE REQUEST-----\n" */
#define PEM                                                                                        \
    "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURSBSRVFVRVNULS0tLS0KTUlJQgotLS0tLUVORCBDRVJUSUZJQ0FURSBSRVFVRV" \
    "NULS0tLS0K"
#define CSR(spec) "{'metadata':{'name':'c'},'spec':{" spec "}}"
#define CSR_OK CSR("'request':'" PEM "','signerName':'example.com/signer','usages':['client auth']")

static void test_csr(void **state)
{
    (void)state;
    static const strat_case_t cases[] = {
        {CSR_OK, NULL, NULL},
        {CSR("'request':'aGVsbG8=','signerName':'example.com/s','usages':['client auth']"), NULL,
         "spec.request: Invalid value: []byte{...}: PEM block type must be CERTIFICATE REQUEST"},
        {CSR("'request':'" PEM "','usages':['client auth']"), NULL, "spec.signerName: Required value"},
        {CSR("'request':'" PEM "','signerName':'signer','usages':['client auth']"), NULL,
         "spec.signerName: Invalid value: \"signer\": must be a fully qualified domain and path "
         "of the form 'example.com/signer-name'"},
        {CSR("'request':'" PEM "','signerName':'example/s','usages':['client auth']"), NULL,
         "spec.signerName: Invalid value: \"example\": should be a domain with at least two "
         "segments separated by dots"},
        {CSR("'request':'" PEM "','signerName':'example.com/s'"), NULL,
         "spec.usages: Required value: usages must be provided"},
        {CSR("'request':'" PEM "','signerName':'example.com/s','usages':['flying']"), NULL,
         "spec.usages[0]: Unsupported value: \"flying\": supported values: \"any\", \"cert "
         "sign\", \"client auth\", \"code signing\", \"content commitment\", \"crl sign\", "
         "\"data encipherment\", \"decipher only\", \"digital signature\", \"email protection\", "
         "\"encipher only\", \"ipsec end system\", \"ipsec tunnel\", \"ipsec user\", \"key "
         "agreement\", \"key encipherment\", \"microsoft sgc\", \"netscape sgc\", \"ocsp "
         "signing\", \"s/mime\", \"server auth\", \"signing\", \"timestamping\""},
        {CSR("'request':'" PEM "','signerName':'example.com/s','usages':['any','any']"), NULL,
         "spec.usages[1]: Duplicate value: \"any\""},
        {CSR("'request':'" PEM "','signerName':'example.com/s','usages':['any'],"
             "'expirationSeconds':60"),
         NULL, "spec.expirationSeconds: Invalid value: 60: may not specify a duration less than "
               "600 seconds (10 minutes)"},
        /* an update keeps the spec */
        {CSR("'request':'eA==','signerName':'x'"), CSR_OK, NULL},
    };
    strat_run(&api_strategy_certificatesigningrequest, cases, sizeof cases / sizeof cases[0]);
    /* Who asks is not the client's to say: prepare_create drops it (the
     * admission hook, which sees the request, writes the requester:
     * e2e_csr). */
    json_t *c = strat_created(&api_strategy_certificatesigningrequest,
                              CSR("'request':'" PEM "','signerName':'example.com/signer',"
                                  "'usages':['client auth'],'username':'mallory',"
                                  "'groups':['system:masters'],'uid':'1'"));
    assert_null(json_object_get(json_object_get(c, "spec"), "username"));
    assert_null(json_object_get(json_object_get(c, "spec"), "groups"));
    assert_null(json_object_get(json_object_get(c, "spec"), "uid"));
    strat_expect(c, "status", "{}");
    json_decref(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_priorityclass),
        cmocka_unit_test(test_runtimeclass),
        cmocka_unit_test(test_hpa),
        cmocka_unit_test(test_csr),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
