/*
 * deployment_rolling.c -- how a Deployment moves between ReplicaSets: which
 * one is new (pod-template-hash, template equality, revision numbers and
 * the annotations a rollback keeps), the RollingUpdate and Recreate steps,
 * proportional scaling when spec.replicas changes mid-rollout, and the
 * revision history cleanup (see deployment.c for the controller around
 * them, deployment_int.h for the contracts).
 *
 * INVARIANTS (RollingUpdate), with R = spec.replicas, S = maxSurge and
 * U = maxUnavailable as deploy__params resolves them:
 *   1. The ReplicaSets' spec.replicas (plus, by default, their pods still
 *      terminating) add up to at most R + S: the new RS grows only into the
 *      room old ones left (deploy__reconcile_new).
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
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controllers/deployment_int.h"
#include "controllers/history.h"
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
    /* Kubernetes' default for RollingUpdate is TerminationStarted: a pod
     * being terminated no longer counts against maxSurge. */
    p->count_terminating = policy && !strcmp(policy, "TerminationComplete");
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

static int cmp_creation(const void *a, const void *b)
{
    return by_creation(a, b);
}

void deploy__sort(deploy_rs_t *rs, size_t n)
{
    if (n > 1) qsort(rs, n, sizeof *rs, cmp_creation);
}

/* ---- the rolling update ---- */

static int64_t sum_target(const deploy_rs_t *rs, size_t n)
{
    int64_t t = 0;
    for (size_t i = 0; i < n; i++)
        t += rs[i].target;
    return t;
}

int32_t deploy__new_replicas(const deploy_params_t *p, const deploy_rs_t *rs, size_t n, int newi)
{
    if (p->recreate) return p->replicas;
    int32_t cur = newi >= 0 ? rs[newi].target : 0;
    int64_t total = sum_target(rs, n);
    for (size_t i = 0; i < n && p->count_terminating; i++)
        total += rs[i].terminating;
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
    for (size_t i = 0; i < n; i++)
        active[i] = (int)i != newi && rs[i].target > 0;

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

/* ---- templates, hashes, revisions ---- */

int64_t deploy__ann_num(const json_t *ann, const char *key)
{
    const char *s = json_string_value(json_object_get(ann, key));
    if (!s || !*s) return -1;
    char *end;
    long long v = strtoll(s, &end, 10);
    return *end || v < 0 ? -1 : (int64_t)v;
}

static int set_str(json_t *obj, const char *key, const char *v)
{
    const char *have = json_string_value(json_object_get(obj, key));
    if (have && !strcmp(have, v)) return 0;
    json_object_set_new(obj, key, json_string(v));
    return 1;
}

int deploy__set_num(json_t *obj, const char *key, int64_t v)
{
    char buf[24];
    snprintf(buf, sizeof buf, "%" PRId64, v);
    return set_str(obj, key, buf);
}

void deploy__safe_encode(const char *s, char *out, size_t n)
{
    ctrl_safe_encode(s, out, n);
}

int deploy__hash(const json_t *tmpl, int64_t collisions, char out[DEPLOY_HASH_MAX])
{
    out[0] = '\0';
    char *text = json_dumps(tmpl, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
    if (!text) return KP_ENOMEM;
    uint32_t h = ctrl_fnv32a(CTRL_FNV32A_INIT, text, strlen(text));
    free(text);
    if (collisions >= 0) {
        /* As Kubernetes' ComputeHash: the count as 8 little-endian bytes (a
         * uint32 in the low four). */
        unsigned char b[8] = {0};
        for (int i = 0; i < 4; i++)
            b[i] = (unsigned char)((uint32_t)collisions >> (8 * i));
        h = ctrl_fnv32a(h, b, sizeof b);
    }
    ctrl_hash_encode(h, out);
    return 0;
}

/* A copy of template t as compared: no pod-template-hash label, no empty
 * labels/annotations, no null creationTimestamp. NULL if out of memory. */
static json_t *template_norm(const json_t *t)
{
    json_t *c = t ? json_deep_copy(t) : json_object();
    json_t *md = json_object_get(c, "metadata");
    if (!json_is_object(md)) return c;
    json_t *labels = json_object_get(md, "labels");
    if (json_is_object(labels)) json_object_del(labels, DEPLOY_HASH_LABEL);
    if (json_is_object(labels) && !json_object_size(labels)) json_object_del(md, "labels");
    json_t *ann = json_object_get(md, "annotations");
    if (json_is_object(ann) && !json_object_size(ann)) json_object_del(md, "annotations");
    if (json_is_null(json_object_get(md, "creationTimestamp")))
        json_object_del(md, "creationTimestamp");
    if (!json_object_size(md)) json_object_del(c, "metadata");
    return c;
}

int deploy__template_equal(const json_t *a, const json_t *b)
{
    json_t *x = template_norm(a), *y = template_norm(b);
    int eq = x && y && json_equal(x, y);
    json_decref(x);
    json_decref(y);
    return eq;
}

int deploy__find_new(const json_t *tmpl, const deploy_rs_t *rs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const json_t *t = json_object_get(json_object_get(rs[i].obj, "spec"), "template");
        if (rs[i].obj && deploy__template_equal(t, tmpl)) return (int)i;
    }
    return -1;
}

int64_t deploy__max_revision(const deploy_rs_t *rs, size_t n, int skip)
{
    int64_t max = 0;
    for (size_t i = 0; i < n; i++)
        if ((int)i != skip && rs[i].revision > max) max = rs[i].revision;
    return max;
}

/* Append old to the revision-history list, dropping its oldest entries to
 * stay within DEPLOY_HISTORY_CHARS (Kubernetes' rule: if even that is not
 * enough, leave the list as it is). */
static void history_add(json_t *ann, const char *old)
{
    const char *hist = json_string_value(json_object_get(ann, DEPLOY_ANN_HISTORY));
    if (!hist || !*hist) {
        json_object_set_new(ann, DEPLOY_ANN_HISTORY, json_string(old));
        return;
    }
    size_t total = strlen(hist) + strlen(old) + 1;
    const char *start = hist;
    while (total > DEPLOY_HISTORY_CHARS && *start) {
        const char *comma = strchr(start, ',');
        size_t len = comma ? (size_t)(comma - start) : strlen(start);
        total -= len + 1;
        start = comma ? comma + 1 : start + len;
    }
    if (total > DEPLOY_HISTORY_CHARS) return;
    size_t n = strlen(start) + strlen(old) + 2;
    char *v = malloc(n);
    if (!v) return;
    snprintf(v, n, "%s%s%s", start, *start ? "," : "", old);
    json_object_set_new(ann, DEPLOY_ANN_HISTORY, json_string(v));
    free(v);
}

/* Annotations a Deployment does not pass on to its ReplicaSets. */
static int skip_copy(const char *key)
{
    return !strcmp(key, DEPLOY_ANN_APPLIED) ||
           !strncmp(key, DEPLOY_ANN_PREFIX, sizeof DEPLOY_ANN_PREFIX - 1);
}

int deploy__rs_annotations(json_t *ann, const json_t *dann, int64_t revision, int exists,
                           int32_t desired, int32_t max)
{
    int changed = 0;
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)dann, k, v) {
        if (skip_copy(k) || !json_is_string(v)) continue;
        if (json_equal(json_object_get(ann, k), v)) continue;
        json_object_set(ann, k, v);
        changed = 1;
    }
    const char *old = json_string_value(json_object_get(ann, DEPLOY_ANN_REVISION));
    int64_t old_rev = 0;
    if (old && *old) {
        old_rev = deploy__ann_num(ann, DEPLOY_ANN_REVISION);
        if (old_rev < 0) return changed; /* not a number: not ours to repair */
    }
    if (old_rev < revision) {
        /* A re-used RS (a rollback) keeps the numbers it had. */
        if (old && *old) {
            char *copy = strdup(old); /* old dies with the annotation it is in */
            if (copy) history_add(ann, copy);
            free(copy);
        }
        deploy__set_num(ann, DEPLOY_ANN_REVISION, revision);
        changed = 1;
    }
    if (!exists) {
        changed |= deploy__set_num(ann, DEPLOY_ANN_DESIRED, desired);
        changed |= deploy__set_num(ann, DEPLOY_ANN_MAX, max);
    }
    return changed;
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
