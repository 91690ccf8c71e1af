/*
 * test_strategy_cronjob.c -- CronJobs (src/apiserver/strategy_batch_cronjob.c)
 * against Kubernetes' ValidateCronJobCreate/Update, robfig/cron's
 * ParseStandard error texts and the batch/v1 defaults: each rule with a
 * good and a bad object.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "apiserver/kinds/strategy_int.h"
#include "strategy_cases.h"

extern const api_strategy_t api_strategy_cronjob;

#define POD "{'spec':{'restartPolicy':'Never','containers':[{'name':'c','image':'busybox'}]}}"
#define CJ(name, extra)                                                                            \
    "{'metadata':{'name':'" name "','namespace':'ns'},'spec':{" extra                              \
    "'jobTemplate':{'spec':{'template':" POD "}}}}"
#define SCHED(s) CJ("cj", "'schedule':'" s "',")

static void test_schedule(void **state)
{
    (void)state;
    static const strat_case_t cases[] = {
        {SCHED("*/5 * * * *"), NULL, NULL},
        {SCHED("0 0 1 jan,JUL mon-fri"), NULL, NULL},
        {SCHED("@hourly"), NULL, NULL},
        {SCHED("@every 1h30m"), NULL, NULL},
        {CJ("cj", ""), NULL, "spec.schedule: Required value"},
        {SCHED("* * * *"), NULL,
         "spec.schedule: Invalid value: \"* * * *\": expected exactly 5 fields, found 4: "
         "[* * * *]"},
        {SCHED("61 * * * *"), NULL,
         "spec.schedule: Invalid value: \"61 * * * *\": end of range (61) above maximum (59): "
         "61"},
        {SCHED("0 0 0 * *"), NULL,
         "spec.schedule: Invalid value: \"0 0 0 * *\": beginning of range (0) below minimum "
         "(1): 0"},
        {SCHED("5-1 * * * *"), NULL,
         "spec.schedule: Invalid value: \"5-1 * * * *\": beginning of range (5) beyond end of "
         "range (1): 5-1"},
        {SCHED("*/0 * * * *"), NULL,
         "spec.schedule: Invalid value: \"*/0 * * * *\": step of range should be a positive "
         "number: */0"},
        {SCHED("x * * * *"), NULL,
         "spec.schedule: Invalid value: \"x * * * *\": failed to parse int from x: "
         "strconv.Atoi: parsing \"x\": invalid syntax"},
        {SCHED("@fortnightly"), NULL,
         "spec.schedule: Invalid value: \"@fortnightly\": unrecognized descriptor: "
         "@fortnightly"},
        {SCHED("TZ=UTC 0 * * * *"), NULL,
         "spec.schedule: Invalid value: \"TZ=UTC 0 * * * *\": cannot use TZ or CRON_TZ in "
         "schedule, use timeZone field instead"},
        /* an old schedule with TZ= may keep it, but not with timeZone */
        {SCHED("TZ=UTC 5 * * * *"), SCHED("TZ=UTC 0 * * * *"), NULL},
        {CJ("cj", "'schedule':'TZ=UTC 5 * * * *','timeZone':'UTC',"), SCHED("TZ=UTC 0 * * * *"),
         "spec.schedule: Invalid value: \"TZ=UTC 5 * * * *\": cannot use both timeZone field and "
         "TZ or CRON_TZ in schedule"},
    };
    strat_run(&api_strategy_cronjob, cases, sizeof cases / sizeof cases[0]);
}

static void test_time_zone(void **state)
{
    (void)state;
    static const strat_case_t cases[] = {
        {CJ("cj", "'schedule':'@daily','timeZone':'UTC',"), NULL, NULL},
        {CJ("cj", "'schedule':'@daily','timeZone':'',"), NULL,
         "spec.timeZone: Invalid value: \"\": timeZone must be nil or non-empty string"},
        {CJ("cj", "'schedule':'@daily','timeZone':'../etc',"), NULL,
         "spec.timeZone: Invalid value: \"../etc\": unknown time zone ../etc"},
        {CJ("cj", "'schedule':'@daily','timeZone':'Local',"), NULL,
         "spec.timeZone: Invalid value: \"Local\": timeZone must be an explicit time zone as "
         "defined in https://www.iana.org/time-zones"},
    };
    strat_run(&api_strategy_cronjob, cases, sizeof cases / sizeof cases[0]);
}

static void test_spec(void **state)
{
    (void)state;
    static const strat_case_t cases[] = {
        {CJ("cj", "'schedule':'@daily','concurrencyPolicy':'Forbid',"), NULL, NULL},
        {CJ("cj", "'schedule':'@daily','concurrencyPolicy':'Sometimes',"), NULL,
         "spec.concurrencyPolicy: Unsupported value: \"Sometimes\": supported values: "
         "\"Allow\", \"Forbid\", \"Replace\""},
        {CJ("cj", "'schedule':'@daily','successfulJobsHistoryLimit':-1,"), NULL,
         "spec.successfulJobsHistoryLimit: Invalid value: -1: must be greater than or equal to "
         "0"},
        {CJ("cj", "'schedule':'@daily','startingDeadlineSeconds':-5,"), NULL,
         "spec.startingDeadlineSeconds: Invalid value: -5: must be greater than or equal to 0"},
        {CJ("a-name-of-exactly-fifty-three-characters-for-cronjob1", "'schedule':'@daily',"), NULL,
         "metadata.name: Invalid value: \"a-name-of-exactly-fifty-three-characters-for-cronjob1\": "
         "must be no more than 52 characters"},
        /* the jobTemplate is a Job's spec */
        {"{'metadata':{'name':'cj'},'spec':{'schedule':'@daily','jobTemplate':{'spec':{"
         "'template':{'spec':{'containers':[{'name':'c','image':'i'}]}}}}}}",
         NULL, "spec.jobTemplate.spec.template.spec.restartPolicy: Unsupported value: "
               "\"Always\": supported values: \"OnFailure\", \"Never\""},
        {"{'metadata':{'name':'cj'},'spec':{'schedule':'@daily','jobTemplate':{'spec':{"
         "'backoffLimit':-1,'template':" POD "}}}}",
         NULL, "spec.jobTemplate.spec.backoffLimit: Invalid value: -1: must be greater than or "
               "equal to 0"},
        {"{'metadata':{'name':'cj'},'spec':{'schedule':'@daily','jobTemplate':{'spec':{"
         "'selector':{'matchLabels':{'a':'b'}},'template':" POD "}}}}",
         NULL, "spec.jobTemplate.spec.selector: Invalid value: {\"matchLabels\":{\"a\":\"b\"}}: "
               "`selector` will be auto-generated"},
        {"{'metadata':{'name':'cj'},'spec':{'schedule':'@daily','jobTemplate':{'spec':{"
         "'template':{'spec':{'restartPolicy':'Never','containers':[]}}}}}}",
         NULL, "spec.jobTemplate.spec.template.spec.containers: Required value"},
    };
    strat_run(&api_strategy_cronjob, cases, sizeof cases / sizeof cases[0]);
}

static void test_defaults(void **state)
{
    (void)state;
    json_t *cj = strat_created(&api_strategy_cronjob, SCHED("@daily"));
    strat_expect(cj, "spec.concurrencyPolicy", "'Allow'");
    strat_expect(cj, "spec.suspend", "false");
    strat_expect(cj, "spec.successfulJobsHistoryLimit", "3");
    strat_expect(cj, "spec.failedJobsHistoryLimit", "1");
    strat_expect(cj, "spec.jobTemplate.spec.template.spec.dnsPolicy", "'ClusterFirst'");
    strat_expect(cj, "status", "{}");
    json_decref(cj);
    assert_int_equal(api_strategy_cronjob.generation, 1);
}

static void test_cron_parser(void **state)
{
    (void)state;
    char err[256];
    assert_int_equal(api__cron_parse("0 0 * * sun", err, sizeof err), 0);
    assert_int_equal(api__cron_parse("5/15 * ? * *", err, sizeof err), 0);
    assert_int_equal(api__cron_parse("", err, sizeof err), -1);
    assert_string_equal(err, "empty spec string");
    assert_int_equal(api__cron_parse("1-2-3 * * * *", err, sizeof err), -1);
    assert_string_equal(err, "too many hyphens: 1-2-3");
    assert_int_equal(api__cron_parse("1/2/3 * * * *", err, sizeof err), -1);
    assert_string_equal(err, "too many slashes: 1/2/3");
    assert_int_equal(api__cron_parse("* * * * 7", err, sizeof err), -1);
    assert_string_equal(err, "end of range (7) above maximum (6): 7");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_schedule), cmocka_unit_test(test_time_zone),
        cmocka_unit_test(test_spec),     cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_cron_parser),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
