/*
 * openapi.h -- the OpenAPI documents: /openapi/v2 and /openapi/v3.
 *
 * Generated on request from the type facts (schema.h) and the served
 * resources (the request's view: built-ins and CustomResourceDefinitions'),
 * so that `kubectl explain` and kubectl's validation (client-side with 1.20,
 * server-side fieldValidation detection with 1.32) work:
 *   /openapi/v2             JSON, or protobuf (gnostic openapi_v2.Document) for
 *                           Accept application/com.github.proto-openapi.spec.v2
 *                           [@.]v1.0+protobuf
 *   /openapi/v3             {"paths": {"api/v1": {"serverRelativeURL": ...}, ...}}
 *   /openapi/v3/<gv path>   the group-version's document: paths for each kind
 *                           (get/put/patch/delete/post with
 *                           x-kubernetes-group-version-kind and the
 *                           fieldValidation parameter), components.schemas.
 *
 * Nothing is cached: every request builds its document from the immutable
 * facts and the view the request holds, so CRDs show up at once.
 */
#ifndef KP_OPENAPI_H
#define KP_OPENAPI_H

#include <jansson.h>

#include "apiserver/http/http.h"
#include "apiserver/rest/rest.h"
#include "apiserver/schema/schema.h"
#include "lib/buf.h"

/* Serve r->route (API_ROUTE_OPENAPI): replies exactly once, returns as the
 * api_reply_*() calls do. */
int api_serve_openapi(api_req_t *r);

/* The /openapi/v2 document (JSON form) for every resource of `view`, types
 * from `schema`. Both are only read; *out is the caller's (json_decref).
 * Errors: KP_ENOMEM. */
int api_openapi_v2(const api_schema_t *schema, const api_view_t *view, json_t **out);

/* openapi_pb.c: encode a v2 document as built by api_openapi_v2() into the
 * protobuf gnostic openapi_v2.Document, appended to `out` (which keeps
 * ownership of its bytes). Keys a Swagger 2.0 document does not define, and
 * keys whose value has the wrong JSON type, are skipped; vendor extensions
 * (x-*) become NamedAny entries whose Any.yaml holds the value as YAML (JSON
 * flow style). `doc` is only read. Errors: KP_ENOMEM, KP_ETOOLARGE (out's
 * cap), KP_EINVAL (doc not an object, or schemas nested deeper than the
 * encoder's cap). On error `out` holds a partial encoding: reset or free it. */
int api_openapi_v2_protobuf(const json_t *doc, buf_t *out);

#endif
