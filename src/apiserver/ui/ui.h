/*
 * ui.h -- the dashboard's server side, at /ui (README, "The dashboard").
 *
 *   /ui                        301 to /ui/
 *   /ui/, /ui/FILE             the page's files (assets.h), compiled in;
 *                              they hold no cluster data, so anyone may load
 *                              them: the page then asks the normal API with
 *                              its user's bearer token, under RBAC as kubectl
 *   /ui/api/labs               GET: the labs `kplane lab list` lists, and
 *                              whether this server may run them
 *   /ui/api/labs/NAME/run      POST: start `kplane lab run NAME` (202; 409
 *                              while one runs; 404 when labs are not enabled
 *                              or NAME is no lab)
 *   /ui/api/labs/run?offset=N  GET: the run's output from byte N (text), its
 *                              state in X-Kplane-Lab-* headers
 *
 * The /ui/api/ paths need an authenticated user (anonymous: 401) whom the
 * authorizers allow the path as a non-resource URL, verb the lower-case
 * method as Kubernetes names it ("get", "post"): system:masters may, a user
 * whose roles have no nonResourceURLs rule covering the path (a trailing
 * star: every path under /ui/api/) gets 403. server.c checks this at
 * intake, on the headers (api_ui_path_kind()).
 *
 * Threads: api_ui_serve() on the request's worker; start and stop with the
 * server.
 */
#ifndef KP_API_UI_H
#define KP_API_UI_H

#include "apiserver/http/http.h"

typedef enum api_ui_path {
    API_UI_NONE = 0, /* not the dashboard's */
    API_UI_ASSET,    /* /ui, /ui/, /ui/FILE: no authorization */
    API_UI_API,      /* /ui/api/...: authenticated and authorized */
} api_ui_path_t;

/* What `path` (decoded, without the query) is to the dashboard. */
api_ui_path_t api_ui_path_kind(const char *path);

/* The dashboard's state on server s (the lab runner when
 * s->cfg.enable_labs), hung on s->ui. Errors: KP_ENOMEM. */
int api_ui_start(apiserver_t *s);
/* End a lab still running (labrun.h) and free; after the last request. */
void api_ui_stop(apiserver_t *s);

/* Answer r, a request api_ui_path_kind() does not call API_UI_NONE. */
int api_ui_serve(api_req_t *r);

#endif
