/*
 * lab_exercise.c -- investigation 003's "Investigation Exercise", run.
 *
 * The seed: "Create a Deployment, change its image, then change only its
 * replica count", predicting whether the two changes need the same
 * decision and who converges the Pods; it leaves four rows "Unrevealed":
 * Image decision, Count decision, Initial reconciler, Pod convergence.
 *
 * What it measures, from the API only (never from what kplane's code is
 * known to do): a `kplane server` with 2 simulated nodes; a Deployment
 * "web" of 3 (nginx:1.25), then its image changed (nginx:1.26), then only
 * its replicas (5). After each step converges (the Deployment's status:
 * observed generation, updated = available = total = replicas; time from
 * the write), it reads
 *   - the ReplicaSets: name, pod-template-hash, replicas, ready, the pods
 *     whose controller ownerReference names each, the RS's own controller
 *     ownerReference and its managedFields managers;
 *   - the Events new since the step began (a count bump counts as the
 *     repeats it adds): source.component, reason, the object; their
 *     resourceVersions order them as the history does.
 * and answers the four rows from those figures: a new ReplicaSet or the
 * same one scaled, which component's events come first in each step, and
 * which one created and deleted the pods.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lab/lab.h"
#include "lab/lab_int.h"
#include "lib/err.h"

#define NS          "default"
#define MAX_RS      8
#define MAX_GROUPS  24
#define CONVERGE_MS 90000
#define EVENTS_MS   8000 /* events are written in the background: their wait */

typedef struct rs_view {
    char name[128], hash[64], owner[160], managers[160];
    long long spec, ready;
    int pods; /* pods (not terminating) whose controller is this RS */
} rs_view_t;

/* Events of a step from one component, of one reason, on one object. */
typedef struct ev_group {
    char from[96], reason[64], on[160], first_msg[256];
    long long count, first_rv;
} ev_group_t;

typedef struct step {
    const char *name, *kubectl;
    double ms;
    long long write_rv; /* the resourceVersion of the step's own write */
    rs_view_t rs[MAX_RS];
    int nrs;
    ev_group_t ev[MAX_GROUPS];
    int nev;
    int pods, pods_chained; /* pods; those whose chain ends at Deployment web */
} step_t;

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* ---- observing ---- */

static int read_replicasets(lab_t *lab, kc_client_t *c, step_t *st)
{
    json_t *rsl = NULL, *pl = NULL;
    int rc = kc_list(c, &kc_replicasets, NS, "labelSelector=app%3Dweb", &rsl);
    if (!rc) rc = kc_list(c, &kc_pods, NS, "labelSelector=app%3Dweb", &pl);
    if (rc) {
        lab_say(lab, "listing ReplicaSets and pods: %s", err_str(rc));
        json_decref(rsl);
        return rc;
    }
    size_t i, j;
    const json_t *rs, *pod, *mf;
    st->nrs = 0;
    json_array_foreach(json_object_get(rsl, "items"), i, rs) {
        if (st->nrs == MAX_RS) break;
        rs_view_t *v = &st->rs[st->nrs++];
        memset(v, 0, sizeof *v);
        snprintf(v->name, sizeof v->name, "%s", lab__jstr(rs, "metadata.name"));
        const json_t *labels = json_object_get(json_object_get(rs, "metadata"), "labels");
        snprintf(v->hash, sizeof v->hash, "%s", lab__jstr(labels, "pod-template-hash"));
        v->spec = lab__jint(rs, "spec.replicas", 0);
        v->ready = lab__jint(rs, "status.readyReplicas", 0);
        const json_t *ref = lab__controller_ref(rs);
        snprintf(v->owner, sizeof v->owner, "%s %s", ref ? lab__jstr(ref, "kind") : "none",
                 ref ? lab__jstr(ref, "name") : "");
        json_array_foreach(json_object_get(json_object_get(rs, "metadata"), "managedFields"), j,
                           mf) {
            char one[96];
            snprintf(one, sizeof one, "%s (%s)", lab__jstr(mf, "manager"),
                     lab__jstr(mf, "operation"));
            if (strstr(v->managers, one)) continue;
            size_t len = strlen(v->managers);
            snprintf(v->managers + len, sizeof v->managers - len, "%s%s", len ? ", " : "", one);
        }
    }
    st->pods = st->pods_chained = 0;
    json_array_foreach(json_object_get(pl, "items"), i, pod) {
        if (json_object_get(json_object_get(pod, "metadata"), "deletionTimestamp")) continue;
        st->pods++;
        const json_t *ref = lab__controller_ref(pod);
        if (!ref || strcmp(lab__jstr(ref, "kind"), "ReplicaSet")) continue;
        for (int k = 0; k < st->nrs; k++)
            if (!strcmp(st->rs[k].name, lab__jstr(ref, "name"))) {
                st->rs[k].pods++;
                if (!strcmp(st->rs[k].owner, "Deployment web")) st->pods_chained++;
            }
    }
    json_decref(rsl);
    json_decref(pl);
    return 0;
}

/* Count `delta` events like e (from, on, rv) into st's groups. */
static void add_event(step_t *st, const json_t *e, long long delta, const char *from,
                      const char *on, long long rv)
{
    ev_group_t *g = NULL;
    for (int k = 0; k < st->nev && !g; k++)
        if (!strcmp(st->ev[k].from, from) && !strcmp(st->ev[k].on, on) &&
            !strcmp(st->ev[k].reason, lab__jstr(e, "reason")))
            g = &st->ev[k];
    if (!g && st->nev < MAX_GROUPS) {
        g = &st->ev[st->nev++];
        memset(g, 0, sizeof *g);
        snprintf(g->from, sizeof g->from, "%s", from);
        snprintf(g->on, sizeof g->on, "%s", on);
        snprintf(g->reason, sizeof g->reason, "%s", lab__jstr(e, "reason"));
    }
    if (!g) return;
    g->count += delta;
    if (!g->first_rv || rv < g->first_rv) {
        g->first_rv = rv;
        snprintf(g->first_msg, sizeof g->first_msg, "%s", lab__jstr(e, "message"));
    }
}

/* In history order: the group whose first event came first, first. */
static void sort_groups(step_t *st)
{
    for (int a = 1; a < st->nev; a++)
        for (int b = a; b > 0 && st->ev[b].first_rv < st->ev[b - 1].first_rv; b--) {
            ev_group_t t = st->ev[b];
            st->ev[b] = st->ev[b - 1];
            st->ev[b - 1] = t;
        }
}

/* The events of ns new since `seen` (name -> count) into st's groups,
 * those written after the step's own write (resourceVersion above
 * `since`); with commit, seen learns them, and the ones written before it
 * (a previous step's, late) go to `prev` (may be NULL). */
static int read_events(lab_t *lab, kc_client_t *c, json_t *seen, step_t *st, step_t *prev,
                       long long since, int commit)
{
    json_t *l = NULL;
    int rc = kc_list(c, &kc_events, NS, NULL, &l);
    if (rc) {
        lab_say(lab, "listing Events: %s", err_str(rc));
        return rc;
    }
    st->nev = 0;
    size_t i;
    const json_t *e;
    json_array_foreach(json_object_get(l, "items"), i, e) {
        const char *name = lab__jstr(e, "metadata.name");
        long long count = lab__jint(e, "count", 1);
        long long before = json_integer_value(json_object_get(seen, name));
        if (count <= before) continue;
        if (commit) json_object_set_new(seen, name, json_integer(count));
        /* The workload's objects only (web, web-HASH, web-HASH-xxxxx), not
         * the nodes'; a ReplicaSet's pods as one object, "Pod web-HASH-*". */
        const char *kind = lab__jstr(e, "involvedObject.kind"),
                   *obj = lab__jstr(e, "involvedObject.name");
        if (strncmp(obj, "web", 3) || (obj[3] && obj[3] != '-')) continue;
        char from[96], on[160];
        snprintf(from, sizeof from, "%s", lab__jstr(e, "source.component"));
        if (!*from) snprintf(from, sizeof from, "%s", lab__jstr(e, "reportingController"));
        const char *dash = strrchr(obj, '-');
        if (!strcmp(kind, "Pod") && dash)
            snprintf(on, sizeof on, "Pod %.*s-*", (int)(dash - obj), obj);
        else
            snprintf(on, sizeof on, "%s %s", kind, obj);
        long long rv = lab__jint(e, "metadata.resourceVersion", 0);
        if (rv > since)
            add_event(st, e, count - before, from, on, rv);
        else if (commit && prev)
            add_event(prev, e, count - before, from, on, rv);
    }
    json_decref(l);
    sort_groups(st);
    if (prev) sort_groups(prev);
    return 0;
}

/* Events of reason from components (NULL: any) in st. */
static long long count_events(const step_t *st, const char *reason, const char *from)
{
    long long n = 0;
    for (int k = 0; k < st->nev; k++)
        if (!strcmp(st->ev[k].reason, reason) && (!from || !strcmp(st->ev[k].from, from)))
            n += st->ev[k].count;
    return n;
}

/* The components that wrote `reason` events in st, "a, b". */
static void who(const step_t *st, const char *reason, char *out, size_t size)
{
    out[0] = '\0';
    for (int k = 0; k < st->nev; k++) {
        if (strcmp(st->ev[k].reason, reason) || strstr(out, st->ev[k].from)) continue;
        size_t len = strlen(out);
        snprintf(out + len, size - len, "%s%s", len ? ", " : "", st->ev[k].from);
    }
    if (!out[0]) snprintf(out, size, "nobody");
}

/* After the step converged: its ReplicaSets and (once they are written,
 * at most EVENTS_MS) its events: ScalingReplicaSet, and SuccessfulCreate
 * for the pods it added. */
static int observe(lab_t *lab, kc_client_t *c, json_t *seen, step_t *st, step_t *prev,
                   long long since, long long created)
{
    int rc = read_replicasets(lab, c, st);
    double t0 = lab_elapsed_ms(lab);
    while (!rc) {
        rc = read_events(lab, c, seen, st, prev, since, 0);
        if (rc) break;
        if ((count_events(st, "ScalingReplicaSet", NULL) >= 1 &&
             count_events(st, "SuccessfulCreate", NULL) >= created) ||
            lab_elapsed_ms(lab) - t0 > EVENTS_MS)
            return read_events(lab, c, seen, st, prev, since, 1);
        sleep_ms(100);
    }
    return rc;
}

/* ---- the steps ---- */

/* Each step's write; *rv: the resourceVersion it made (the history's
 * position of the user's change). */
static int create_web(kc_client_t *c, long long *rv)
{
    json_t *d = json_pack("{s:s, s:s, s:{s:s}, s:{s:i, s:{s:{s:s}}, s:{s:{s:{s:s}}, "
                          "s:{s:[{s:s, s:s}]}}}}",
                          "apiVersion", "apps/v1", "kind", "Deployment", "metadata", "name", "web",
                          "spec", "replicas", 3, "selector", "matchLabels", "app", "web",
                          "template", "metadata", "labels", "app", "web", "spec", "containers",
                          "name", "web", "image", "nginx:1.25");
    if (!d) return KP_ENOMEM;
    json_t *out = NULL;
    int rc = kc_create(c, &kc_deployments, NS, d, &out, NULL);
    json_decref(d);
    *rv = lab__jint(out, "metadata.resourceVersion", 0);
    json_decref(out);
    return rc;
}

/* Patch Deployment web; *rv gets the written resourceVersion. */
static int patch_web(kc_client_t *c, kc_patch_type_t type, json_t *p, long long *rv)
{
    if (!p) return KP_ENOMEM;
    int64_t got = 0;
    int rc = kc_patch_rv(c, &kc_deployments, NS, "web", NULL, type, p, &got, NULL);
    json_decref(p);
    *rv = got;
    return rc;
}

static int set_image(kc_client_t *c, long long *rv)
{
    return patch_web(c, KC_PATCH_JSON,
                     json_pack("[{s:s, s:s, s:s}]", "op", "replace", "path",
                               "/spec/template/spec/containers/0/image", "value", "nginx:1.26"),
                     rv);
}

static int scale(kc_client_t *c, long long *rv)
{
    return patch_web(c, KC_PATCH_MERGE, json_pack("{s:{s:i}}", "spec", "replicas", 5), rv);
}

/* ---- the report ---- */

static const rs_view_t *find_rs(const step_t *st, const char *name)
{
    for (int k = 0; k < st->nrs; k++)
        if (!strcmp(st->rs[k].name, name)) return &st->rs[k];
    return NULL;
}

/* The ReplicaSet of st with the most replicas (the active one). */
static const rs_view_t *active_rs(const step_t *st)
{
    const rs_view_t *best = NULL;
    for (int k = 0; k < st->nrs; k++)
        if (!best || st->rs[k].spec > best->spec) best = &st->rs[k];
    return best;
}

/* What the step did to ReplicaSets, compared with the one before. */
static void decision(const step_t *prev, const step_t *st, char *out, size_t size)
{
    const rs_view_t *act = active_rs(st);
    if (!act) {
        snprintf(out, size, "no ReplicaSet");
        return;
    }
    const rs_view_t *before = find_rs(prev, act->name);
    if (!before) {
        const rs_view_t *old = active_rs(prev);
        const rs_view_t *old_now = old ? find_rs(st, old->name) : NULL;
        snprintf(out, size,
                 "a NEW ReplicaSet %s (pod-template-hash %s) scaled 0->%lld; %s (hash %s) "
                 "%lld->%lld",
                 act->name, act->hash, act->spec, old ? old->name : "-", old ? old->hash : "-",
                 old ? old->spec : 0, old_now ? old_now->spec : 0);
    } else {
        snprintf(out, size, "the SAME ReplicaSet %s (hash %s unchanged) scaled %lld->%lld",
                 act->name, act->hash, before->spec, act->spec);
    }
}

static void print_report(lab_t *lab, step_t *steps, int n)
{
    char a[1024], b[1024], c[1024], d[1024], e[1024];

    lab_table(lab, "Steps (each timed from its API write to the Deployment converged)",
              (const char *const[]){"step", "the user's command", "converged in", NULL});
    for (int i = 0; i < n; i++) {
        snprintf(a, sizeof a, "%.0f ms", steps[i].ms);
        lab_row(lab, (const char *const[]){steps[i].name, steps[i].kubectl, a});
    }
    lab_table_end(lab);

    lab_table(lab, "ReplicaSets after each step (read from the API)",
              (const char *const[]){"after", "ReplicaSet", "pod-template-hash", "replicas", "ready",
                                    "pods it owns", "its controller", "managedFields managers",
                                    NULL});
    for (int i = 0; i < n; i++)
        for (int k = 0; k < steps[i].nrs; k++) {
            const rs_view_t *v = &steps[i].rs[k];
            snprintf(a, sizeof a, "%lld", v->spec);
            snprintf(b, sizeof b, "%lld", v->ready);
            snprintf(c, sizeof c, "%d", v->pods);
            lab_row(lab, (const char *const[]){steps[i].name, v->name, v->hash, a, b, c, v->owner,
                                               v->managers});
        }
    lab_table_end(lab);

    lab_table(lab, "Events of each step, in history (resourceVersion) order: who acted",
              (const char *const[]){"step", "source.component", "reason", "on", "count",
                                    "first message", NULL});
    for (int i = 0; i < n; i++)
        for (int k = 0; k < steps[i].nev; k++) {
            const ev_group_t *g = &steps[i].ev[k];
            snprintf(a, sizeof a, "%lld", g->count);
            lab_row(lab, (const char *const[]){steps[i].name, g->from, g->reason, g->on, a,
                                               g->first_msg});
        }
    lab_table_end(lab);

    /* The four rows. */
    const step_t *s1 = &steps[0], *s2 = &steps[1], *s3 = &steps[2];
    char image[1024], count[1024], who_scaled[256], who_created[256], who_deleted[256];
    decision(s1, s2, image, sizeof image);
    decision(s2, s3, count, sizeof count);
    lab_table(lab, "Investigation 003's exercise, revealed",
              (const char *const[]){"Unrevealed", "Revealed (observed)", "Evidence", NULL});

    who(s2, "ScalingReplicaSet", who_scaled, sizeof who_scaled);
    snprintf(a, sizeof a,
             "ReplicaSets %d -> %d; %lld ScalingReplicaSet event(s) by %s, first: \"%s\"", s1->nrs,
             s2->nrs, count_events(s2, "ScalingReplicaSet", NULL), who_scaled,
             s2->nev ? s2->ev[0].first_msg : "-");
    lab_row(lab, (const char *const[]){"Image decision", image, a});

    who(s3, "ScalingReplicaSet", who_scaled, sizeof who_scaled);
    snprintf(b, sizeof b,
             "ReplicaSets %d -> %d; %lld ScalingReplicaSet event(s) by %s, first: \"%s\"", s2->nrs,
             s3->nrs, count_events(s3, "ScalingReplicaSet", NULL), who_scaled,
             s3->nev ? s3->ev[0].first_msg : "-");
    lab_row(lab, (const char *const[]){"Count decision", count, b});

    /* The first event of each change, in history order, and who owns the RSs. */
    const rs_view_t *act = active_rs(s3);
    snprintf(c, sizeof c, "%s",
             s2->nev && s3->nev && !strcmp(s2->ev[0].from, s3->ev[0].from) ? s2->ev[0].from
             : s2->nev                                                     ? "differs by step"
                                                                           : "no events seen");
    snprintf(d, sizeof d,
             "the image change (rv %lld) was first followed by %s %s (rv %lld), the count "
             "change (rv %lld) by %s %s (rv %lld); ReplicaSets' controller: %s; their "
             "managers: %s",
             s2->write_rv, s2->nev ? s2->ev[0].from : "-", s2->nev ? s2->ev[0].reason : "-",
             s2->nev ? s2->ev[0].first_rv : 0, s3->write_rv, s3->nev ? s3->ev[0].from : "-",
             s3->nev ? s3->ev[0].reason : "-", s3->nev ? s3->ev[0].first_rv : 0,
             act ? act->owner : "-", act ? act->managers : "-");
    lab_row(lab, (const char *const[]){"Initial reconciler", c, d});

    step_t all = {0};
    for (int i = 0; i < n; i++)
        for (int k = 0; k < steps[i].nev && all.nev < MAX_GROUPS; k++)
            all.ev[all.nev++] = steps[i].ev[k];
    who(&all, "SuccessfulCreate", who_created, sizeof who_created);
    who(&all, "SuccessfulDelete", who_deleted, sizeof who_deleted);
    snprintf(e, sizeof e, "%s", who_created);
    snprintf(d, sizeof d,
             "pods created (SuccessfulCreate) %lld + %lld + %lld, deleted (SuccessfulDelete) "
             "%lld, by %s / %s; %d of %d pods' controller is a ReplicaSet whose controller is "
             "Deployment web; converged in %.0f / %.0f / %.0f ms",
             count_events(s1, "SuccessfulCreate", NULL), count_events(s2, "SuccessfulCreate", NULL),
             count_events(s3, "SuccessfulCreate", NULL),
             count_events(&all, "SuccessfulDelete", NULL), who_created, who_deleted,
             s3->pods_chained, s3->pods, s1->ms, s2->ms, s3->ms);
    lab_row(lab, (const char *const[]){"Pod convergence", e, d});
    lab_table_end(lab);
}

static int run(lab_t *lab)
{
    lab_server_opts_t o = {.name = "server", .nodes = 2};
    lab_server_t *s;
    int rc = lab_server_start(lab, &o, &s);
    if (rc) return rc;
    kc_client_t *c = s->client;
    if ((rc = lab__wait_nodes(lab, c, 2, 60000)) ||
        (rc = lab__wait_object(lab, c, &kc_serviceaccounts, NS, "default", 60000)))
        return rc;
    lab_say(lab, "2 simulated nodes Ready; the controllers run in the server's process");

    step_t *steps = calloc(3, sizeof *steps);
    json_t *seen = json_object();
    if (!steps || !seen) {
        free(steps);
        json_decref(seen);
        return KP_ENOMEM;
    }
    /* Events before the first step (nodes registering) are not the steps'. */
    step_t pre = {0};
    rc = read_events(lab, c, seen, &pre, NULL, 0, 1);
    static const struct {
        const char *name, *kubectl;
        int (*act)(kc_client_t *, long long *);
        long long created;
    } plan[] = {
        {"create", "kubectl create deployment web --image=nginx:1.25 --replicas=3", create_web, 3},
        {"image", "kubectl set image deployment/web web=nginx:1.26", set_image, 3},
        {"count", "kubectl scale deployment/web --replicas=5", scale, 2},
    };
    for (int i = 0; !rc && i < 3; i++) {
        steps[i].name = plan[i].name;
        steps[i].kubectl = plan[i].kubectl;
        lab_say(lab, "step %d: %s (through the API, as kubectl would)", i + 1, plan[i].kubectl);
        double t0 = lab_elapsed_ms(lab);
        long long rv = 0;
        if ((rc = plan[i].act(c, &rv))) {
            lab_say(lab, "step %s: %s", plan[i].name, err_str(rc));
            break;
        }
        if ((rc = lab__wait_deployment(lab, c, NS, "web", -1, CONVERGE_MS, NULL))) break;
        steps[i].ms = lab_elapsed_ms(lab) - t0;
        steps[i].write_rv = rv;
        if ((rc = observe(lab, c, seen, &steps[i], i ? &steps[i - 1] : NULL, rv, plan[i].created)))
            break;
        lab_say(lab, "step %s converged in %.0f ms: %d ReplicaSet(s), %d pods, %d event group(s)",
                plan[i].name, steps[i].ms, steps[i].nrs, steps[i].pods, steps[i].nev);
    }
    if (!rc) print_report(lab, steps, 3);
    json_decref(seen);
    free(steps);
    return rc;
}

const lab_def_t lab_exercise = {
    .name = "exercise",
    .seed = "003",
    .title = "a Deployment's image change, then its count: who decides, who converges the pods",
    .run = run,
};
