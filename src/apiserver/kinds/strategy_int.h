/*
 * strategy_int.h -- what the built-in kinds share: helpers of the strategy
 * files (strategy_util.c: defaulting, Kubernetes' cause wordings, the value
 * rules several kinds use: quantities, IP addresses and CIDRs, DNS names),
 * then the strategies others name and the functions one kind lends another
 * (a pod template's rules, the pod subresources' handlers, admission).
 *
 * Everything here reads or changes only the JSON it is given, on the
 * caller's thread; nothing keeps a pointer past the call.
 */
#ifndef KP_STRATEGY_INT_H
#define KP_STRATEGY_INT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "apiserver/schema/strategy.h"

/* obj[key] = value unless obj has key; steals value either way. */
void api__set_default(json_t *obj, const char *key, json_t *value);

/* 1 if s is one of the NULL-terminated list. */
int api__in(const char *s, const char *const *allowed);

/* Kubernetes' rendering of a value in an Invalid message: strings quoted,
 * numbers and booleans bare, "null" for absent; objects and arrays as
 * compact JSON (Go prints its own struct syntax there). Truncated to n. */
void api__value_text(const json_t *v, char *out, size_t n);

/* "Required value" (with ": detail" when detail is non-empty). */
void api__required(json_t *causes, const char *field, const char *detail);
/* "Invalid value: <v>: <detail>". */
void api__invalid(json_t *causes, const char *field, const json_t *v, const char *detail);
/* The same for a string value (Go prints it quoted). */
void api__invalid_str(json_t *causes, const char *field, const char *s, const char *detail);
/* admission.NewForbidden: 403 on the request's resource and `name`, the
 * message `<resource> "<name>" is forbidden: <fmt...>`. Returns -1 (an
 * admission hook's refusal). */
struct api_req;
int api__reply_forbidden(struct api_req *r, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* "Forbidden: <detail>". */
void api__forbidden(json_t *causes, const char *field, const char *detail);
/* "Unsupported value: <v>: supported values: "a", "b"". */
void api__not_supported(json_t *causes, const char *field, const json_t *v,
                        const char *const *allowed);
void api__not_supported_str(json_t *causes, const char *field, const char *s,
                            const char *const *allowed);
/* obj[key], when present and not null, must be a string of `allowed`;
 * the field is path + "." + key. Returns the string or NULL. */
const char *api__enum(json_t *causes, const json_t *obj, const char *key, const char *path,
                      const char *const *allowed);
/* An update may not change the value: "Invalid value: <new>: field is
 * immutable" when a and b differ (absent equals absent). */
void api__immutable(json_t *causes, const char *field, const json_t *now, const json_t *was);
/* obj[key], when present: an integer >= min ("must be greater than or equal
 * to <min>"). Returns 1 and *out when it is an integer. */
int api__int_min(json_t *causes, const json_t *obj, const char *key, const char *path,
                 long long min, long long *out);

/* A quantity (string or JSON number) in whole units rounded up (milli:
 * thousandths). 0, or KP_EINVAL when malformed. Negative values come back
 * negative; too large ones as INT64_MAX. */
int api__quantity(const json_t *v, int milli, int64_t *out);
/* Kubernetes' message for a malformed quantity. */
#define API_QUANTITY_MSG                                                                           \
    "quantities must match the regular expression "                                                \
    "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"

/* IP addresses and CIDRs as netutils reads them: family 4 or 6, the
 * address in network order in addr (16 bytes, IPv4 in the first 4). Return
 * 0 or KP_EINVAL. */
int api__parse_ip(const char *s, unsigned char addr[16], int *family);
int api__parse_cidr(const char *s, unsigned char addr[16], int *family, int *prefix);
#define API_IP_MSG   "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"
#define API_CIDR_MSG "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"

/* An Invalid cause when `name` is not a DNS-1123 subdomain (label: 1) or a
 * DNS-1035 label (label: 2); returns 1 if it was bad. */
int api__dns_name(json_t *causes, const char *field, const char *name, int label);
/* The problem with `name` as a path segment (ValidatePathSegmentName), or
 * NULL. */
const char *api__path_segment_invalid(const char *name);

/* 0 if robfig/cron's ParseStandard (CronJob schedules) accepts spec, else
 * -1 with its error text in err. (strategy_batch_cronjob.c) */
int api__cron_parse(const char *spec, char *err, size_t errlen);

/* Quantity rules of ValidateResourceQuantityValue and friends: the value at
 * `field` parses, and is > 0 (positive) or >= 0. Returns 0 and *out when it
 * parses. */
int api__quantity_check(json_t *causes, const char *field, const json_t *v, int positive,
                        int64_t *out);

/* A label selector (metav1.LabelSelector) at `field`, when present. */
void api__selector_check(json_t *causes, const char *field, const json_t *sel);

/* Kubernetes' IsValidPortNum and IsValidPortName at `field`. */
void api__port_number(json_t *causes, const char *field, const json_t *v);
void api__port_name(json_t *causes, const char *field, const json_t *v);

/* ---- the built-in kinds' strategies and what they share with each other ---- */

extern const api_strategy_t api_strategy_namespace;
extern const api_strategy_t api_strategy_pod;
extern const api_strategy_t api_strategy_deployment;
extern const api_strategy_t api_strategy_replicaset;
extern const api_strategy_t api_strategy_statefulset;
extern const api_strategy_t api_strategy_daemonset;
extern const api_strategy_t api_strategy_job;
extern const api_strategy_t api_strategy_service;
extern const api_strategy_t api_strategy_customresourcedefinition;
extern const api_strategy_t api_strategy_configmap;
extern const api_strategy_t api_strategy_secret;

/* Kubernetes' MaxSecretSize: the bytes of a Secret's data, or of a
 * ConfigMap's data and binaryData together. */
#define API_MAX_SECRET_SIZE (1024 * 1024)

/* Shared by ConfigMaps and Secrets (strategy_configmap.c): IsConfigMapKey
 * on a key of `map` ("data", "binaryData"); the bytes a base64 string of
 * length n decodes to; and the `immutable` rule: once old has immutable
 * true, it stays true and `fields` (NULL-terminated) may not change. */
void api_config_key_validate(const char *map, const char *key, json_t *causes);
/* Every key of `map` (an object of strings, may be NULL) checked as above;
 * returns the bytes its values hold (decoded when `base64`). */
size_t api_config_map_validate(const json_t *map, const char *name, int base64, json_t *causes);
size_t api_base64_decoded_len(const char *s, size_t n);
void api_immutable_validate(const json_t *obj, const json_t *old, const char *const *fields,
                            json_t *causes);

/* Shared by kinds that embed a pod template (strategy_apps.c). */
void api_pod_spec_defaults(json_t *spec);
void api_pod_spec_validate(const json_t *spec, const char *path, json_t *causes);
/* A Job's spec at `path` (counts, pod template, restart policy, completion
 * mode): Jobs and CronJobs' jobTemplate (strategy_apps.c). */
void api_job_spec_validate(const json_t *spec, const char *path, json_t *causes);

/* Admission DefaultTolerationSeconds on a pod being created or updated
 * (strategy_pod.c): the not-ready and unreachable NoExecute tolerations it
 * lacks, with these tolerationSeconds. */
void api_pod_default_tolerations(json_t *pod, int64_t not_ready_s, int64_t unreachable_s);

/* NamespaceLifecycle admission of a create in r's namespace
 * (strategy_namespace.c): 0 if the namespace exists and is not terminating;
 * else -1 after replying (404, or 403 NamespaceTerminating). */
int api_namespace_admit_create(struct api_req *r, const char *name);

/* NodeRestriction (admission_noderestriction.c): what a kubelet writes is
 * about its own node. _write on every create and update (subresources
 * too), _request on a routed request (deletes and evictions of pods),
 * _token by serviceaccounts/token with the request's boundObjectRef. Each
 * returns 0 to go on, or -1 after a 403. Other users always pass. */
int api_node_restrict_write(struct api_req *r, json_t *obj, const json_t *old, const char *name);
int api_node_restrict_request(struct api_req *r);
int api_node_restrict_token(struct api_req *r, const json_t *bound_ref);

/* The ServiceAccount admission plugin for pods (admission_serviceaccount.c):
 * serviceAccountName defaults to "default" and the token volume is added,
 * on create. Never refuses: returns 0. */
int api_serviceaccount_admit_pod(struct api_req *r, json_t *pod, const json_t *old,
                                 const char *name);
/* Kubernetes' Priority admission (admission_priority.c), the strategy's
 * admission hook (strategy.h) of pods and of PriorityClasses: a pod's
 * spec.priority and preemptionPolicy from its priorityClassName or the
 * globalDefault class; at most one globalDefault class. */
int api_priority_admit_pod(struct api_req *r, json_t *pod, const json_t *old, const char *name);
int api_priority_admit_class(struct api_req *r, json_t *pc, const json_t *old, const char *name);

/* The pod subresources' handlers (api_sub_t.handler): POST pods/binding
 * and POST pods/eviction (strategy_pod_sub.c), GET pods/log
 * (strategy_pod_log.c). */
int api_pod_binding(struct api_req *r);
int api_pod_eviction(struct api_req *r);
int api_pod_log(struct api_req *r);

/* A CSR's conditions (strategy_csr.c). merge: dst's status.conditions
 * become old's conditions not of the approval kind (Approved, Denied) when
 * `approval`, else of it, then req's of that kind (req may be dst), with
 * their timestamps filled in. 0 or KP_ENOMEM (dst then unchanged). */
int api_csr_merge_conditions(json_t *dst, const json_t *req, const json_t *old, int approval);
/* Kubernetes' condition rules of a CSR `csr` and, with `old` (NULL on
 * create), of the update from old; appends causes. */
void api_csr_validate_conditions(const json_t *csr, const json_t *old, json_t *causes);

/* Kubernetes' eviction (canIgnorePDB): a pod that ended (Succeeded,
 * Failed), never started (Pending) or is already being deleted is evicted
 * without consulting its PodDisruptionBudgets: 1 if so. */
int api_pod_eviction_skips_budget(const json_t *pod);

/* The PodDisruptionBudget check of an eviction of `pod` (borrowed) in the
 * request's namespace (strategy_poddisruptionbudget.c, Kubernetes'
 * checkAndDecrement): 0 when the pod may go (no budget, an unready pod the
 * budget spares, or a disruption now recorded in the budget's status, not
 * under dryRun); -1 after replying (429 with a DisruptionBudget cause, 500
 * for more than one budget, 403, or a store error). */
struct api_req;
int api_pdb_admit_eviction(struct api_req *r, const json_t *pod);

#endif
