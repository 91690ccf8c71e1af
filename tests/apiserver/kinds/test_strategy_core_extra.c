/*
 * test_strategy_core_extra.c -- ReplicationControllers, PodTemplates,
 * LimitRanges, ResourceQuotas, Endpoints and EndpointSlices
 * (src/apiserver/strategy_core_extra.c) against Kubernetes' validation and
 * defaults: each rule with a good and a bad object.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "strategy_cases.h"

extern const api_strategy_t api_strategy_replicationcontroller, api_strategy_podtemplate,
    api_strategy_limitrange, api_strategy_resourcequota, api_strategy_endpoints,
    api_strategy_endpointslice;

#define CONTAINERS "'containers':[{'name':'c','image':'nginx'}]"
#define RC(spec) "{'metadata':{'name':'rc','namespace':'ns'},'spec':{" spec "}}"
#define TMPL(labels, pod) "'template':{'metadata':{'labels':" labels "},'spec':{" pod "}}"

static void test_rc(void **state)
{
    (void)state;
    static const strat_case_t cases[] = {
        {RC(TMPL("{'app':'web'}", CONTAINERS)), NULL, NULL},
        {RC("'selector':{'app':'db'}," TMPL("{'app':'web'}", CONTAINERS)), NULL,
         "spec.template.metadata.labels: Invalid value: {\"app\":\"web\"}: `selector` does not "
         "match template `labels`"},
        {RC("'replicas':-1," TMPL("{'app':'web'}", CONTAINERS)), NULL,
         "spec.replicas: Invalid value: -1: must be greater than or equal to 0"},
        {RC("'selector':{'app':'web'}"), NULL, "spec.template: Required value"},
        {RC(TMPL("{}", CONTAINERS)), NULL, "spec.selector: Required value"},
        {RC(TMPL("{'app':'web'}", "'restartPolicy':'Never'," CONTAINERS)), NULL,
         "spec.template.spec.restartPolicy: Unsupported value: \"Never\": supported values: "
         "\"Always\""},
        {RC(TMPL("{'app':'web'}", "'activeDeadlineSeconds':5," CONTAINERS)), NULL,
         "spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in "
         "ReplicationController is not Supported"},
        {RC(TMPL("{'app':'web'}", "'containers':[]")), NULL,
         "spec.template.spec.containers: Required value"},
    };
    strat_run(&api_strategy_replicationcontroller, cases, sizeof cases / sizeof cases[0]);
    json_t *rc = strat_created(&api_strategy_replicationcontroller, RC(TMPL("{'app':'web'}", CONTAINERS)));
    strat_expect(rc, "spec.selector", "{'app':'web'}");
    strat_expect(rc, "metadata.labels", "{'app':'web'}");
    strat_expect(rc, "spec.replicas", "1");
    strat_expect(rc, "status", "{'replicas':0}");
    strat_expect(rc, "spec.template.spec.restartPolicy", "'Always'");
    json_decref(rc);
    assert_int_equal(api_strategy_replicationcontroller.generation, 1);
}

static void test_podtemplate(void **state)
{
    (void)state;
    static const strat_case_t cases[] = {
        {"{'metadata':{'name':'p'},'template':{'spec':{" CONTAINERS "}}}", NULL, NULL},
        {"{'metadata':{'name':'p'},'template':{'spec':{'containers':[]}}}", NULL,
         "template.spec.containers: Required value"},
        {"{'metadata':{'name':'p'},'template':{'spec':{'containers':[{'name':'c'}]}}}", NULL,
         "template.spec.containers[0].image: Required value"},
        {"{'metadata':{'name':'p'},'template':{'spec':{'dnsPolicy':'Sometimes'," CONTAINERS "}}}",
         NULL, "template.spec.dnsPolicy: Unsupported value: \"Sometimes\": supported values: "
               "\"ClusterFirstWithHostNet\", \"ClusterFirst\", \"Default\", \"None\""},
    };
    strat_run(&api_strategy_podtemplate, cases, sizeof cases / sizeof cases[0]);
}

#define LR(item) "{'metadata':{'name':'l'},'spec':{'limits':[" item "]}}"

static void test_limitrange(void **state)
{
    (void)state;
    static const strat_case_t cases[] = {
        {LR("{'type':'Container','max':{'cpu':'2'},'min':{'cpu':'100m'}}"), NULL, NULL},
        {LR("{'type':'Node'}"), NULL,
         "spec.limits[0].type: Invalid value: \"Node\": must be a standard limit type or fully "
         "qualified"},
        {LR("{'type':'Container','max':{'cpu':'1'},'min':{'cpu':'2'}}"), NULL,
         "spec.limits[0].min[cpu]: Invalid value: \"2\": min value 2 is greater than max value "
         "1"},
        {LR("{'type':'Pod','default':{'cpu':'1'}}"), NULL,
         "spec.limits[0].default: Forbidden: may not be specified when `type` is 'Pod'"},
        {LR("{'type':'Container','max':{'memory':'many'}}"), NULL,
         "spec.limits[0].max[memory]: Invalid value: \"many\": quantities must match the regular "
         "expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"},
        {LR("{'type':'Pod'},{'type':'Pod'}"), NULL, "spec.limits[1].type: Duplicate value: \"Pod\""},
    };
    strat_run(&api_strategy_limitrange, cases, sizeof cases / sizeof cases[0]);
    json_t *l = strat_created(&api_strategy_limitrange,
                              LR("{'type':'Container','max':{'cpu':'2'},'min':{'memory':'1Mi'}}"));
    strat_expect(l, "spec.limits.0.default", "{'cpu':'2'}");
    strat_expect(l, "spec.limits.0.defaultRequest", "{'cpu':'2','memory':'1Mi'}");
    json_decref(l);
}

#define RQ(spec) "{'metadata':{'name':'q'},'spec':" spec "}"

static void test_resourcequota(void **state)
{
    (void)state;
    static const strat_case_t cases[] = {
        {RQ("{'hard':{'pods':'10','requests.cpu':'4'},'scopes':['NotTerminating']}"), NULL, NULL},
        {RQ("{'hard':{'pods':'-1'}}"), NULL,
         "spec.hard[pods]: Invalid value: \"-1\": must be greater than or equal to 0"},
        {RQ("{'hard':{'pods':'ten'}}"), NULL,
         "spec.hard[pods]: Invalid value: \"ten\": quantities must match the regular expression "
         "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"},
        {RQ("{'scopes':['Sometimes']}"), NULL,
         "spec.scopes: Invalid value: [\"Sometimes\"]: unsupported scope"},
        {RQ("{'scopes':['Terminating','NotTerminating']}"), NULL,
         "spec.scopes: Invalid value: [\"Terminating\",\"NotTerminating\"]: conflicting scopes"},
    };
    strat_run(&api_strategy_resourcequota, cases, sizeof cases / sizeof cases[0]);
    json_t *q = strat_created(&api_strategy_resourcequota, RQ("{}"));
    strat_expect(q, "status", "{}");
    json_decref(q);
}

#define EP(subset) "{'metadata':{'name':'e'},'subsets':[" subset "]}"

static void test_endpoints(void **state)
{
    (void)state;
    static const strat_case_t cases[] = {
        {EP("{'addresses':[{'ip':'10.0.0.1'}],'ports':[{'port':80}]}"), NULL, NULL},
        {EP("{'addresses':[{'ip':'10.0.0.300'}]}"), NULL,
         "subsets[0].addresses[0].ip: Invalid value: \"10.0.0.300\": must be a valid IP "
         "address, (e.g. 10.9.8.7 or 2001:db8::ffff)"},
        {EP("{'addresses':[{'ip':'127.0.0.1'}]}"), NULL,
         "subsets[0].addresses[0].ip: Invalid value: \"127.0.0.1\": may not be in the loopback "
         "range (127.0.0.0/8, ::1/128)"},
        {EP("{'addresses':[{'ip':'10.0.0.1'}],'ports':[{'port':0}]}"), NULL,
         "subsets[0].ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive"},
        {EP("{'addresses':[{'ip':'10.0.0.1'}],'ports':[{'name':'a','port':1},{'port':2}]}"), NULL,
         "subsets[0].ports[1].name: Required value"},
        {EP("{'addresses':[{'ip':'10.0.0.1'}],'ports':[{'port':1,'protocol':'ICMP'}]}"), NULL,
         "subsets[0].ports[0].protocol: Unsupported value: \"ICMP\": supported values: "
         "\"SCTP\", \"TCP\", \"UDP\""},
    };
    strat_run(&api_strategy_endpoints, cases, sizeof cases / sizeof cases[0]);
    json_t *e = strat_created(&api_strategy_endpoints, EP("{'ports':[{'port':80}]}"));
    strat_expect(e, "subsets.0.ports.0.protocol", "'TCP'");
    json_decref(e);
}

#define ES(type, eps) "{'metadata':{'name':'s'},'addressType':'" type "','endpoints':[" eps "]}"

static void test_endpointslice(void **state)
{
    (void)state;
    static const strat_case_t cases[] = {
        {ES("IPv4", "{'addresses':['10.0.0.1']}"), NULL, NULL},
        {ES("IPv6", "{'addresses':['fd00::1']}"), NULL, NULL},
        {ES("IPv5", ""), NULL,
         "addressType: Unsupported value: \"IPv5\": supported values: \"FQDN\", \"IPv4\", "
         "\"IPv6\""},
        {ES("IPv4", "{'addresses':['fd00::1']}"), NULL,
         "endpoints[0].addresses[0]: Invalid value: \"fd00::1\": must be a valid IPv4 address"},
        {ES("IPv4", "{'addresses':[]}"), NULL,
         "endpoints[0].addresses: Required value: must contain at least 1 address"},
        {ES("IPv6", "{'addresses':['fd00::1']}"), ES("IPv4", "{'addresses':['10.0.0.1']}"),
         "addressType: Invalid value: \"IPv6\": field is immutable"},
    };
    strat_run(&api_strategy_endpointslice, cases, sizeof cases / sizeof cases[0]);

    /* at most 1000 endpoints */
    size_t cap = 1001 * 32 + 128, n = 0;
    char *big = malloc(cap);
    assert_non_null(big);
    n += (size_t)snprintf(big + n, cap - n, "{'metadata':{'name':'s'},'addressType':'IPv4',"
                                            "'endpoints':[");
    for (int i = 0; i < 1001; i++)
        n += (size_t)snprintf(big + n, cap - n, "%s{'addresses':['10.0.%d.%d']}", i ? "," : "",
                              i / 250, i % 250 + 1);
    snprintf(big + n, cap - n, "]}");
    strat_case_t too_many = {big, NULL, "endpoints: Too many: 1001: must have at most 1000 items"};
    strat_run(&api_strategy_endpointslice, &too_many, 1);
    free(big);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rc),         cmocka_unit_test(test_podtemplate),
        cmocka_unit_test(test_limitrange), cmocka_unit_test(test_resourcequota),
        cmocka_unit_test(test_endpoints),  cmocka_unit_test(test_endpointslice),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
