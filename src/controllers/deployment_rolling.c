/*
 * deployment_rolling.c -- how a Deployment moves between ReplicaSets: the
 * RollingUpdate and Recreate steps, proportional scaling when spec.replicas
 * changes mid-rollout, and the revision history cleanup (see deployment.c
 * for the controller around them, deployment_int.h for the contracts).
 *
 * INVARIANTS (RollingUpdate), with R = spec.replicas, S = maxSurge and
 * U = maxUnavailable as deploy__params resolves them:
 *   1. The ReplicaSets' spec.replicas add up to at most R + S: the new RS
 *      grows only into the room old ones left (deploy__reconcile_new).
 *   2. An old RS shrinks only by what keeps R - U replicas available, its
 *      unavailable replicas first (deploy__reconcile_old). Availability comes
 *      from the ReplicaSets' status, so a step never counts pods that are
 *      not up yet.
 *   3. One kind of step per sync: scale the new up, or the old down; the
 *      status those writes cause brings the next sync.
 * Recreate: every old RS goes to 0 and the new one is created only when
 * their pods are gone (deploy__rollout_recreate).
 *
 * The arithmetic works on deploy_rs_t.target (the spec it wants); the sync
 * writes the targets with deploy__apply. Everything above the "sync" section
 * is pure.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "controllers/deployment_int.h"
#include "lib/err.h"

/* ---- spec arithmetic ---- */

int deploy__int_or_percent(const json_t *v, int32_t total, int round_up, int32_t *out)
{
    *out = 0;
    if (!v || json_is_null(v)) return 0;
    if (json_is_integer(v)) {
        json_int_t x = json_integer_value(v);
        if (x < 0 || x > INT32_MAX) return KP_EINVAL;
        *out = (int32_t)x;
        return 0;
    }
    const char *s = json_string_value(v);
    if (!s) return KP_EINVAL;
    size_t len = strlen(s);
    if (len < 2 || s[len - 1] != '%') return KP_EINVAL;
    char *end;
    long pct = strtol(s, &end, 10);
    if (end != s + len - 1 || pct < 0 || pct > INT32_MAX) return KP_EINVAL;
    int64_t scaled = (int64_t)pct * (total > 0 ? total : 0);
    int64_t r = round_up ? (scaled + 99) / 100 : scaled / 100;
    *out = r > INT32_MAX ? INT32_MAX : (int32_t)r;
    return 0;
}

static int32_t spec_int(const json_t *spec, const char *key, int32_t dflt)
{
    const json_t *v = json_object_get(spec, key);
    if (!json_is_integer(v)) return dflt;
    json_int_t x = json_integer_value(v);
    return x < INT32_MIN ? INT32_MIN : x > INT32_MAX ? INT32_MAX : (int32_t)x;
}

int deploy__params(const json_t *d, deploy_params_t *p)
{
    memset(p, 0, sizeof *p);
    const json_t *spec = json_object_get(d, "spec");
    const json_t *strategy = json_object_get(spec, "strategy");
    const char *type = json_string_value(json_object_get(strategy, "type"));
    p->replicas = spec_int(spec, "replicas", 1);
    if (p->replicas < 0) return KP_EINVAL;
    p->recreate = type && !strcmp(type, "Recreate");
    p->paused = json_is_true(json_object_get(spec, "paused"));
    p->status_replicas = spec_int(json_object_get(d, "status"), "replicas", 0);
    /* Kubernetes treats nil and MaxInt32 as "none" for both. */
    p->history_limit = spec_int(spec, "revisionHistoryLimit", -1);
    if (p->history_limit == INT32_MAX) p->history_limit = -1;
    p->deadline_s = spec_int(spec, "progressDeadlineSeconds", -1);
    if (p->deadline_s == INT32_MAX) p->deadline_s = -1;
    p->min_ready_s = spec_int(spec, "minReadySeconds", 0);
    const char *policy = json_string_value(json_object_get(spec, "podReplacementPolicy"));
    p->count_terminating = !policy || strcmp(policy, "TerminationStarted");
    if (p->recreate) return 0;

    const json_t *ru = json_object_get(strategy, "rollingUpdate");
    const json_t *surge_v = json_object_get(ru, "maxSurge");
    const json_t *unav_v = json_object_get(ru, "maxUnavailable");
    json_t *dflt = json_string("25%"); /* the API default, should a field be missing */
    if (!dflt) return KP_ENOMEM;
    int32_t surge, unav;
    int rc = deploy__int_or_percent(surge_v ? surge_v : dflt, p->replicas, 1, &surge);
    if (!rc) rc = deploy__int_or_percent(unav_v ? unav_v : dflt, p->replicas, 0, &unav);
    json_decref(dflt);
    if (rc) return rc;
    if (surge == 0 && unav == 0) unav = 1; /* a rollout must be able to move */
    p->max_surge = surge;
    p->max_unavailable = p->replicas == 0 ? 0 : unav > p->replicas ? p->replicas : unav;
    return 0;
}

/* ---- ordering ---- */

static int by_creation(const deploy_rs_t *a, const deploy_rs_t *b)
{
    if (a->created != b->created) return a->created < b->created ? -1 : 1;
    return strcmp(a->name ? a->name : "", b->name ? b->name : "");
}

static int cmp_creation(const void *a, const void *b) { return by_creation(a, b); }

void deploy__sort(deploy_rs_t *rs, size_t n)
{
    if (n > 1) qsort(rs, n, sizeof *rs, cmp_creation);
}

/* ---- the rolling update ---- */

static int64_t sum_target(const deploy_rs_t *rs, size_t n)
{
    int64_t t = 0;
    for (size_t i = 0; i < n; i++) t += rs[i].target;
    return t;
}

int32_t deploy__new_replicas(const deploy_params_t *p, const deploy_rs_t *rs, size_t n, int newi)
{
    if (p->recreate) return p->replicas;
    int32_t cur = newi >= 0 ? rs[newi].target : 0;
    int64_t total = sum_target(rs, n);
    for (size_t i = 0; i < n && p->count_terminating; i++) total += rs[i].terminating;
    int64_t max_total = (int64_t)p->replicas + p->max_surge;
    if (total >= max_total) return cur;
    int64_t up = max_total - total;
    if (up > (int64_t)p->replicas - cur) up = (int64_t)p->replicas - cur;
    if (up < 0) up = 0;
    return (int32_t)(cur + up);
}

int deploy__reconcile_new(const deploy_params_t *p, deploy_rs_t *rs, size_t n, int newi)
{
    if (newi < 0) return 0;
    deploy_rs_t *r = &rs[newi];
    if (r->target == p->replicas) return 0;
    int32_t want = r->target > p->replicas ? p->replicas : deploy__new_replicas(p, rs, n, newi);
    if (want == r->target) return 0;
    r->target = want;
    return 1;
}

int32_t deploy__reconcile_old(const deploy_params_t *p, deploy_rs_t *rs, size_t n, int newi)
{
    int64_t old = 0;
    for (size_t i = 0; i < n; i++)
        if ((int)i != newi) old += rs[i].target;
    if (old == 0) return 0;

    int64_t min_available = (int64_t)p->replicas - p->max_unavailable;
    int64_t new_unavailable = newi >= 0 ? (int64_t)rs[newi].target - rs[newi].available : 0;
    if (new_unavailable < 0) new_unavailable = 0;
    int64_t max_down = sum_target(rs, n) - min_available - new_unavailable;
    if (max_down <= 0) return 0;

    /* Only RSs active now take part (an old RS at 0 may still have pods on
     * their way out; they count for nothing). Remember which, as the first
     * pass may take some to 0. */
    char stackbuf[64];
    char *active = n <= sizeof stackbuf ? stackbuf : malloc(n);
    if (!active) return 0;
    for (size_t i = 0; i < n; i++) active[i] = (int)i != newi && rs[i].target > 0;

    /* 1: unavailable replicas of old RSs cost nothing to remove. */
    int64_t cleaned = 0;
    for (size_t i = 0; i < n && cleaned < max_down; i++) {
        deploy_rs_t *r = &rs[i];
        if (!active[i] || r->target <= r->available) continue;
        int64_t c = (int64_t)r->target - r->available;
        if (c > max_down - cleaned) c = max_down - cleaned;
        r->target -= (int32_t)c;
        cleaned += c;
    }

    /* 2: available ones, down to minAvailable across old and new. */
    int64_t available = newi >= 0 ? rs[newi].available : 0;
    for (size_t i = 0; i < n; i++)
        if (active[i]) available += rs[i].available;
    int64_t down = 0;
    if (available > min_available) {
        int64_t want = available - min_available;
        for (size_t i = 0; i < n && down < want; i++) {
            deploy_rs_t *r = &rs[i];
            if (!active[i] || r->target == 0) continue;
            int64_t c = want - down < r->target ? want - down : r->target;
            r->target -= (int32_t)c;
            down += c;
        }
    }
    if (active != stackbuf) free(active);
    return (int32_t)(cleaned + down);
}

int deploy__recreate_down(const deploy_params_t *p, deploy_rs_t *rs, size_t n, int newi)
{
    (void)p;
    int changed = 0;
    for (size_t i = 0; i < n; i++) {
        if ((int)i == newi || rs[i].target == 0) continue;
        rs[i].target = 0;
        changed = 1;
    }
    return changed;
}

/* ---- scaling ---- */

int deploy__is_scaling_event(const deploy_params_t *p, const deploy_rs_t *rs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (rs[i].target > 0 && rs[i].desired >= 0 && rs[i].desired != p->replicas) return 1;
    return 0;
}

int deploy__saturated(const deploy_params_t *p, const deploy_rs_t *rs)
{
    return rs && rs->desired == p->replicas && rs->available == p->replicas &&
           rs->target == p->replicas;
}

/* How far r should move so that it keeps its share of the Deployment when
 * the Deployment's size goes from r's max-replicas annotation to R + S. */
static int64_t fraction(const deploy_params_t *p, const deploy_rs_t *r)
{
    if (p->replicas == 0) return -(int64_t)r->target;
    int64_t size = (int64_t)p->replicas + p->max_surge;
    int64_t was = r->max >= 0 ? r->max : p->status_replicas;
    if (was <= 0) return 0;
    int64_t scaled = (2 * (int64_t)r->target * size + was) / (2 * was); /* round half up */
    return scaled - r->target;
}

static int64_t proportion(const deploy_params_t *p, const deploy_rs_t *r, int64_t to_add,
                          int64_t added)
{
    if (r->target == 0 || to_add == 0 || to_add == added) return 0;
    int64_t f = fraction(p, r);
    int64_t allowed = to_add - added;
    if (to_add > 0) return f < allowed ? f : allowed;
    return f > allowed ? f : allowed;
}

/* Order idx[0..m) by size, largest first; ties newest first (grow) or
 * oldest first (shrink). rs is sorted oldest first, so index order is age. */
static void order_by_size(const deploy_rs_t *rs, size_t *idx, size_t m, int newer_first)
{
    for (size_t i = 1; i < m; i++) {
        size_t x = idx[i], j = i;
        while (j > 0) {
            size_t y = idx[j - 1];
            int before = rs[x].target > rs[y].target ||
                         (rs[x].target == rs[y].target && (newer_first ? x > y : x < y));
            if (!before) break;
            idx[j] = y;
            j--;
        }
        idx[j] = x;
    }
}

void deploy__scale(const deploy_params_t *p, deploy_rs_t *rs, size_t n, int newi)
{
    if (n == 0) return;
    size_t nactive = 0, one = 0;
    for (size_t i = 0; i < n; i++)
        if (rs[i].target > 0) {
            nactive++;
            one = i;
        }
    if (nactive <= 1) {
        /* One RS runs (or none: the new one, else the latest old). */
        if (nactive == 0) one = newi >= 0 ? (size_t)newi : n - 1;
        rs[one].target = p->replicas;
        rs[one].touch = 1; /* and its desired-replicas, so this stops being a scaling event */
        return;
    }
    if (newi >= 0 && deploy__saturated(p, &rs[newi])) {
        for (size_t i = 0; i < n; i++)
            if ((int)i != newi && rs[i].target > 0) {
                rs[i].target = 0;
                rs[i].touch = 1;
            }
        return;
    }
    if (p->recreate) return; /* the recreate steps size it */

    size_t *idx = malloc(nactive * sizeof *idx);
    if (!idx) return; /* nothing decided: the next sync tries again */
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (rs[i].target > 0) idx[m++] = i;
    int64_t allowed = p->replicas > 0 ? (int64_t)p->replicas + p->max_surge : 0;
    int64_t to_add = allowed - sum_target(rs, n);
    order_by_size(rs, idx, m, to_add > 0);

    int64_t added = 0;
    int64_t *size = calloc(m, sizeof *size);
    if (!size) {
        free(idx);
        return;
    }
    for (size_t k = 0; k < m; k++) {
        const deploy_rs_t *r = &rs[idx[k]];
        int64_t pr = to_add ? proportion(p, r, to_add, added) : 0;
        size[k] = r->target + pr;
        added += pr;
    }
    /* The rounding remainder goes to the largest. */
    if (to_add) {
        size[0] += to_add - added;
        if (size[0] < 0) size[0] = 0;
    }
    for (size_t k = 0; k < m; k++) {
        deploy_rs_t *r = &rs[idx[k]];
        r->target = size[k] > INT32_MAX ? INT32_MAX : (int32_t)size[k];
        r->touch = 1;
    }
    free(size);
    free(idx);
}

/* ---- history ---- */

size_t deploy__cleanup(const deploy_params_t *p, deploy_rs_t *rs, size_t n, int newi)
{
    if (p->history_limit < 0 || n == 0) return 0;
    size_t *idx = malloc(n * sizeof *idx);
    if (!idx) return 0;
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if ((int)i != newi && !rs[i].deleting) idx[m++] = i;
    size_t marked = 0;
    if (m > (size_t)p->history_limit) {
        size_t diff = m - (size_t)p->history_limit;
        /* Lowest revision first; ties oldest first (idx is in age order). */
        for (size_t i = 1; i < m; i++) {
            size_t x = idx[i], j = i;
            while (j > 0 && rs[idx[j - 1]].revision > rs[x].revision) {
                idx[j] = idx[j - 1];
                j--;
            }
            idx[j] = x;
        }
        for (size_t k = 0; k < diff; k++) {
            deploy_rs_t *r = &rs[idx[k]];
            if (r->replicas != 0 || r->target != 0 || r->spec != 0 || r->stale) continue;
            r->remove = 1;
            marked++;
        }
    }
    free(idx);
    return marked;
}

/* ---- the sync: one strategy step, then the status ---- */

int deploy__rollout_rolling(deploy_sync_t *s)
{
    int rc = deploy__ensure_new(s);
    if (rc) return rc;
    if (deploy__reconcile_new(&s->p, s->rs, s->n, s->newi) ||
        deploy__reconcile_old(&s->p, s->rs, s->n, s->newi) > 0) {
        rc = deploy__apply(s);
        return rc ? rc : deploy__rollout_status(s);
    }
    if (deploy__complete(s->d, json_object_get(s->d, "status")) &&
        deploy__cleanup(&s->p, s->rs, s->n, s->newi) && (rc = deploy__apply(s)))
        return rc;
    return deploy__rollout_status(s);
}

int deploy__rollout_recreate(deploy_sync_t *s)
{
    int rc;
    if (deploy__recreate_down(&s->p, s->rs, s->n, s->newi)) {
        rc = deploy__apply(s);
        return rc ? rc : deploy__rollout_status(s);
    }
    /* Their pod objects must be gone (or finished) first: a pod deletion
     * brings us back (deployment.c's pod handlers). */
    if (deploy__old_pods_running(s)) return deploy__rollout_status(s);
    if ((rc = deploy__ensure_new(s))) return rc;
    deploy_rs_t *r = &s->rs[s->newi];
    if (r->target != s->p.replicas) {
        r->target = s->p.replicas;
        if ((rc = deploy__apply(s))) return rc;
    }
    if (deploy__complete(s->d, json_object_get(s->d, "status")) &&
        deploy__cleanup(&s->p, s->rs, s->n, s->newi) && (rc = deploy__apply(s)))
        return rc;
    return deploy__rollout_status(s);
}
