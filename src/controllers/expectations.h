/*
 * expectations.h -- what a controller expects its informers to show next
 * (Kubernetes' ControllerExpectations), shared by the controllers that
 * create and delete pods: replicaset.c, job.c, statefulset.c, daemonset.c.
 *
 * The caches lag the API: right after a sync created 3 pods, the pod
 * informer may not show them yet, and a naive second sync would create 3
 * more. So before its calls a sync records, under the owner's key, how many
 * creates and which deletions (pod uids) it expects to see; informer events
 * count them off; until all are seen, or 5 minutes have passed (as
 * Kubernetes allows for lost events), the owner is not "met" and its sync
 * makes no new create/delete decision.
 *
 * Thread-safe: handlers (informer threads) and syncs (workers) call it at
 * once. Keys and uids are copied.
 */
#ifndef KP_CTRL_EXPECTATIONS_H
#define KP_CTRL_EXPECTATIONS_H

#include <jansson.h>

#define CTRL_EXP_TTL_NS (300LL * 1000000000) /* expectations expire after 5 min */

typedef struct ctrl_exp ctrl_exp_t;

/* A new, empty set (the caller's: ctrl_exp_free()), or NULL without memory. */
ctrl_exp_t *ctrl_exp_new(void);
void ctrl_exp_free(ctrl_exp_t *e); /* NULL is a no-op */

/* Expect `adds` creates and the deletion of every uid that is a key of
 * `dels` (a JSON object, stolen; NULL: none) for `key`, replacing what was
 * expected before; the 5 minutes start now. */
void ctrl_exp_set(ctrl_exp_t *e, const char *key, int adds, json_t *dels);
/* `n` creates for key were seen (or will never be: their calls failed). */
void ctrl_exp_add_seen(ctrl_exp_t *e, const char *key, int n);
/* The deletion of uid was seen (or will never be). */
void ctrl_exp_del_seen(ctrl_exp_t *e, const char *key, const char *uid);
/* 1 when nothing is expected for key any more (all seen, none set, or
 * expired), 0 otherwise. */
int ctrl_exp_met(ctrl_exp_t *e, const char *key);
/* Drop key's expectations (its owner is gone). */
void ctrl_exp_forget(ctrl_exp_t *e, const char *key);

#endif
