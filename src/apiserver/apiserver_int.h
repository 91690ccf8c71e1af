/*
 * apiserver_int.h -- the server put together: request metrics. Each room's own header says
 * what it offers (http/http.h, rest/rest.h, crd/crd.h, kinds/kinds.h,
 * docs/docs.h, and the headers of schema/, encode/ and apply/). Not for
 * other components.
 */
#ifndef KP_APISERVER_INT_H
#define KP_APISERVER_INT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "apiserver/apiserver.h"
#include "apiserver/http/http.h"


/* metrics.c: request counters and latency histograms for /metrics. */
enum {
    API_VERB_GET, API_VERB_LIST, API_VERB_WATCH, API_VERB_CREATE, API_VERB_UPDATE,
    API_VERB_PATCH, API_VERB_DELETE, API_VERB_DELETECOLLECTION, API_VERB_OTHER,
    API_VERB_COUNT
};
#define API_RES_SLOTS 96    /* registry entries, the last slot for everything else */
#define API_CODE_COUNT 17   /* the codes metrics.c names, and "other" */
#define API_BUCKET_COUNT 11 /* latency histogram bounds */
typedef struct api_metrics api_metrics_t;
api_metrics_t *api_metrics_new(void);
void api_metrics_free(api_metrics_t *m);
struct api_req;
int api_verb_of(const struct api_req *r);
void api_metrics_record(api_metrics_t *m, const struct api_req *r, int verb, int code,
                        double seconds);
int api_serve_metrics(struct api_req *r);


#endif
