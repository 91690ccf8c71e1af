/*
 * test_strategy_networking.c -- Ingresses, IngressClasses, NetworkPolicies,
 * IPAddresses and ServiceCIDRs (src/apiserver/strategy_networking.c)
 * against Kubernetes' networking validation and defaults: each rule with a
 * good and a bad object.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "strategy_cases.h"

extern const api_strategy_t api_strategy_ingress, api_strategy_ingressclass,
    api_strategy_networkpolicy, api_strategy_ipaddress, api_strategy_servicecidr;

#define SVC "{'service':{'name':'web','port':{'number':80}}}"
#define ING_PATH(path) "{'metadata':{'name':'i'},'spec':{'rules':[{'host':'a.example.com','http':{'paths':[" path "]}}]}}"
#define P(extra) "{" extra "}"

static void test_ingress(void **state)
{
    (void)state;
    static const strat_case_t cases[] = {
        {ING_PATH(P("'path':'/','pathType':'Prefix','backend':" SVC)), NULL, NULL},
        {ING_PATH(P("'pathType':'ImplementationSpecific','backend':" SVC)), NULL, NULL},
        {ING_PATH(P("'path':'/','backend':" SVC)), NULL,
         "spec.rules[0].http.paths[0].pathType: Required value: pathType must be specified"},
        {ING_PATH(P("'path':'/','pathType':'Regex','backend':" SVC)), NULL,
         "spec.rules[0].http.paths[0].pathType: Unsupported value: \"Regex\": supported values: "
         "\"Exact\", \"ImplementationSpecific\", \"Prefix\""},
        {ING_PATH(P("'path':'api','pathType':'Exact','backend':" SVC)), NULL,
         "spec.rules[0].http.paths[0].path: Invalid value: \"api\": must be an absolute path"},
        {ING_PATH(P("'path':'/a//b','pathType':'Prefix','backend':" SVC)), NULL,
         "spec.rules[0].http.paths[0].path: Invalid value: \"/a//b\": must not contain '//'"},
        {ING_PATH(P("'path':'/','pathType':'Prefix','backend':{}")), NULL,
         "spec.rules[0].http.paths[0].backend: Invalid value: \"\": resource or service backend "
         "is required"},
        {ING_PATH(P("'path':'/','pathType':'Prefix','backend':{'service':{'name':'web'}}")), NULL,
         "spec.rules[0].http.paths[0].backend: Required value: port name or number is required"},
        {ING_PATH(P("'path':'/','pathType':'Prefix','backend':{'service':{'name':'web','port':{"
                    "'name':'http','number':80}}}")),
         NULL, "spec.rules[0].http.paths[0].backend: Invalid value: \"\": cannot set both port "
               "name & port number"},
        {ING_PATH(P("'path':'/','pathType':'Prefix','backend':{'service':{'name':'web','port':{"
                    "'number':70000}}}")),
         NULL, "spec.rules[0].http.paths[0].backend.service.port.number: Invalid value: 70000: "
               "must be between 1 and 65535, inclusive"},
        {ING_PATH(P("'path':'/','pathType':'Prefix','backend':{'resource':{'kind':'Bucket',"
                    "'name':'b'},'service':{'name':'web','port':{'number':80}}}")),
         NULL, "spec.rules[0].http.paths[0].backend: Invalid value: \"\": cannot set both "
               "resource and service backends"},
        {"{'metadata':{'name':'i'},'spec':{'rules':[{'host':'10.0.0.1','http':{'paths':[{'path':"
         "'/','pathType':'Prefix','backend':" SVC "}]}}]}}",
         NULL, "spec.rules[0].host: Invalid value: \"10.0.0.1\": must be a DNS name, not an IP "
               "address"},
        {"{'metadata':{'name':'i'},'spec':{'rules':[{'host':'*.example.com','http':{'paths':[{"
         "'path':'/','pathType':'Prefix','backend':" SVC "}]}}]}}",
         NULL, NULL},
        {"{'metadata':{'name':'i'},'spec':{'rules':[{'host':'a.example.com','http':{'paths':[]}}"
         "]}}",
         NULL, "spec.rules[0].http.paths: Required value"},
        {"{'metadata':{'name':'i'},'spec':{}}", NULL,
         "spec: Invalid value: []networking.IngressRule(nil): either `defaultBackend` or `rules` "
         "must be specified"},
        {"{'metadata':{'name':'i'},'spec':{'defaultBackend':" SVC "}}", NULL, NULL},
        {"{'metadata':{'name':'i','annotations':{'kubernetes.io/ingress.class':'nginx'}},'spec':"
         "{'ingressClassName':'nginx','defaultBackend':" SVC "}}",
         NULL, "annotations.kubernetes.io/ingress.class: Invalid value: \"nginx\": can not be set "
               "when the class field is also set"},
    };
    strat_run(&api_strategy_ingress, cases, sizeof cases / sizeof cases[0]);
    json_t *i = strat_created(&api_strategy_ingress, "{'metadata':{'name':'i'},'status':{'x':1}}");
    strat_expect(i, "status", "{'loadBalancer':{}}");
    json_decref(i);
    assert_int_equal(api_strategy_ingress.generation, 1);
}

static void test_ingressclass(void **state)
{
    (void)state;
    static const strat_case_t cases[] = {
        {"{'metadata':{'name':'c'},'spec':{'controller':'example.com/ingress'}}", NULL, NULL},
        {"{'metadata':{'name':'c'},'spec':{'controller':'nginx'}}", NULL,
         "spec.controller: Invalid value: \"nginx\": must be a domain-prefixed path (such as "
         "\"acme.io/foo\")"},
        {"{'metadata':{'name':'c'},'spec':{'controller':'example.com/x','parameters':{'kind':"
         "'P','name':'p','scope':'Namespace'}}}",
         NULL, "spec.parameters.namespace: Required value: `parameters.scope` is set to "
               "'Namespace'"},
        {"{'metadata':{'name':'c'},'spec':{'controller':'example.com/y'}}",
         "{'metadata':{'name':'c'},'spec':{'controller':'example.com/x'}}",
         "spec.controller: Invalid value: \"example.com/y\": field is immutable"},
    };
    strat_run(&api_strategy_ingressclass, cases, sizeof cases / sizeof cases[0]);
    json_t *c = strat_created(&api_strategy_ingressclass,
                              "{'spec':{'controller':'a.io/b','parameters':{'kind':'K','name':'n'}}}");
    strat_expect(c, "spec.parameters.scope", "'Cluster'");
    json_decref(c);
    assert_int_equal(api_strategy_ingressclass.generation, 1);
}

#define NP(spec) "{'metadata':{'name':'n','namespace':'ns'},'spec':" spec "}"
#define FROM(peer) NP("{'podSelector':{},'ingress':[{'from':[" peer "]}]}")
#define PORT(port) NP("{'podSelector':{},'ingress':[{'ports':[" port "]}]}")

static void test_networkpolicy(void **state)
{
    (void)state;
    static const strat_case_t cases[] = {
        {NP("{'podSelector':{'matchLabels':{'app':'web'}}}"), NULL, NULL},
        {PORT("{'port':80,'endPort':90}"), NULL, NULL},
        {PORT("{'port':'http'}"), NULL, NULL},
        {PORT("{'port':0}"), NULL,
         "spec.ingress[0].ports[0].port: Invalid value: 0: must be between 1 and 65535, "
         "inclusive"},
        {PORT("{'port':90,'endPort':80}"), NULL,
         "spec.ingress[0].ports[0].endPort: Invalid value: 90: must be greater than or equal to "
         "`port`"},
        {PORT("{'port':'http','endPort':80}"), NULL,
         "spec.ingress[0].ports[0].endPort: Invalid value: 80: may not be specified when `port` "
         "is non-numeric"},
        {PORT("{'port':80,'protocol':'ICMP'}"), NULL,
         "spec.ingress[0].ports[0].protocol: Unsupported value: \"ICMP\": supported values: "
         "\"TCP\", \"UDP\", \"SCTP\""},
        {FROM("{'ipBlock':{'cidr':'10.0.0.0/8','except':['10.1.0.0/16']}}"), NULL, NULL},
        {FROM("{'ipBlock':{'cidr':'10.0.0.0/33'}}"), NULL,
         "spec.ingress[0].from[0].ipBlock.cidr: Invalid value: \"10.0.0.0/33\": must be a valid "
         "CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"},
        {FROM("{'ipBlock':{'cidr':'10.0.0.0/8','except':['192.168.0.0/16']}}"), NULL,
         "spec.ingress[0].from[0].ipBlock.except[0]: Invalid value: \"192.168.0.0/16\": must be "
         "a strict subset of `cidr`"},
        {FROM("{'ipBlock':{}}"), NULL, "spec.ingress[0].from[0].ipBlock.cidr: Required value"},
        {FROM("{}"), NULL, "spec.ingress[0].from[0]: Required value: must specify a peer"},
        {FROM("{'ipBlock':{'cidr':'10.0.0.0/8'},'podSelector':{}}"), NULL,
         "spec.ingress[0].from[0]: Forbidden: may not specify both ipBlock and another peer"},
        {NP("{'podSelector':{},'policyTypes':['Sideways']}"), NULL,
         "spec.policyTypes[0]: Unsupported value: \"Sideways\": supported values: \"Ingress\", "
         "\"Egress\""},
        {NP("{'podSelector':{},'policyTypes':['Ingress','Egress','Ingress']}"), NULL,
         "spec.policyTypes: Invalid value: [\"Ingress\",\"Egress\",\"Ingress\"]: may not "
         "specify more than two policyTypes"},
    };
    strat_run(&api_strategy_networkpolicy, cases, sizeof cases / sizeof cases[0]);
    json_t *n = strat_created(&api_strategy_networkpolicy, PORT("{'port':80}"));
    strat_expect(n, "spec.policyTypes", "['Ingress']");
    strat_expect(n, "spec.ingress.0.ports.0.protocol", "'TCP'");
    json_decref(n);
    n = strat_created(&api_strategy_networkpolicy, NP("{'podSelector':{},'egress':[{}]}"));
    strat_expect(n, "spec.policyTypes", "['Ingress','Egress']");
    json_decref(n);
    assert_int_equal(api_strategy_networkpolicy.generation, 1);
}

static void test_ip_kinds(void **state)
{
    (void)state;
    static const strat_case_t ips[] = {
        {"{'metadata':{'name':'10.96.0.10'},'spec':{'parentRef':{'resource':'services','name':"
         "'s','namespace':'default'}}}",
         NULL, NULL},
        {"{'metadata':{'name':'10.96.0.300'},'spec':{'parentRef':{'resource':'services','name':"
         "'s'}}}",
         NULL, "metadata.name: Invalid value: \"10.96.0.300\": must be a valid IP address, (e.g. "
               "10.9.8.7 or 2001:db8::ffff)"},
        {"{'metadata':{'name':'10.96.0.10'},'spec':{}}", NULL, "spec.parentRef: Required value"},
        {"{'metadata':{'name':'10.96.0.10'},'spec':{'parentRef':{'resource':'services','name':"
         "'t'}}}",
         "{'metadata':{'name':'10.96.0.10'},'spec':{'parentRef':{'resource':'services','name':"
         "'s'}}}",
         "spec.parentRef: Invalid value: {\"resource\":\"services\",\"name\":\"t\"}: field is "
         "immutable"},
    };
    strat_run(&api_strategy_ipaddress, ips, sizeof ips / sizeof ips[0]);
    static const strat_case_t cidrs[] = {
        {"{'metadata':{'name':'c'},'spec':{'cidrs':['10.96.0.0/12','fd00::/108']}}", NULL, NULL},
        {"{'metadata':{'name':'c'},'spec':{'cidrs':[]}}", NULL,
         "spec.cidrs: Required value: at least one CIDR required"},
        {"{'metadata':{'name':'c'},'spec':{'cidrs':['10.96.0.0']}}", NULL,
         "spec.cidrs[0]: Invalid value: \"10.96.0.0\": must be a valid CIDR value, (e.g. "
         "10.9.8.0/24 or 2001:db8::/64)"},
        {"{'metadata':{'name':'c'},'spec':{'cidrs':['10.0.0.0/8','11.0.0.0/8']}}", NULL,
         "spec.cidrs: Invalid value: [\"10.0.0.0/8\",\"11.0.0.0/8\"]: may specify no more than "
         "one IP for each IP family, i.e 192.168.0.0/24 and 2001:db8::/64"},
        {"{'metadata':{'name':'c'},'spec':{'cidrs':['10.0.0.0/8']}}",
         "{'metadata':{'name':'c'},'spec':{'cidrs':['10.96.0.0/12']}}",
         "spec.cidrs: Invalid value: [\"10.0.0.0/8\"]: field is immutable"},
    };
    strat_run(&api_strategy_servicecidr, cidrs, sizeof cidrs / sizeof cidrs[0]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ingress),
        cmocka_unit_test(test_ingressclass),
        cmocka_unit_test(test_networkpolicy),
        cmocka_unit_test(test_ip_kinds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
