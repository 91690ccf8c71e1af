/*
 * protobuf.h -- Kubernetes protobuf request bodies, turned into JSON objects.
 *
 * kubectl's typed clients (`kubectl create namespace|configmap|secret|
 * deployment|job|cronjob|quota|service|serviceaccount ...`, kubectl drain's
 * evictions) and client-go programs send their bodies as Content-Type
 * application/vnd.kubernetes.protobuf and do not fall back to JSON. Such a
 * body is the 4 bytes "k8s\0" and then a runtime.Unknown message {1: typeMeta
 * {1: apiVersion, 2: kind}, 2: raw, 3: contentEncoding, 4: contentType},
 * where raw is the object's own protobuf encoding (the messages of
 * k8s.io/api's generated.proto files).
 *
 * api_pb_decode() gives the JSON object that Kubernetes' JSON encoder prints
 * for the same object (what `kubectl create ... --dry-run=client -o json`
 * shows), with two differences, both meaning the same to an API server:
 *   - a zero metav1.Time (creationTimestamp of a new object) is left out
 *     instead of printed as null;
 *   - a pointer or slice field whose JSON tag lacks omitempty (rare, e.g.
 *     podFailurePolicy rules' onExitCodes) is left out when absent instead of
 *     printed as null.
 * The walk is driven by a table (protobuf_gen*.c, written by
 * scripts/gen-protobuf-facts) and is strict: a field
 * number the table does not know, or a kind it does not cover, is an error,
 * never dropped.
 *
 * The decoder only reads `body` during the call; it keeps nothing and is
 * safe to call from any number of threads at once.
 */
#ifndef KP_APISERVER_PROTOBUF_H
#define KP_APISERVER_PROTOBUF_H

#include <jansson.h>
#include <stddef.h>

#include "lib/buf.h"

/* The media type these bodies come with. */
#define API_PB_MEDIA_TYPE "application/vnd.kubernetes.protobuf"
/* A protobuf watch stream's Content-Type. */
#define API_PB_WATCH_MEDIA_TYPE "application/vnd.kubernetes.protobuf;stream=watch"
/* The cap on one protobuf reply (a whole List): the JSON it is encoded from
 * is already in memory, and protobuf is smaller. */
#define API_PB_REPLY_MAX ((size_t)1 << 31)

/* Decode a protobuf request body of `len` bytes.
 *
 * On success returns 0 and *out is a new JSON object, owned by the caller
 * (json_decref): "kind" and "apiVersion" from the TypeMeta, then the object's
 * members in wire order.
 *
 * Errors (*out is then NULL):
 *   KP_EINVAL  the body is not what Kubernetes would accept: no "k8s\0"
 *              prefix, malformed protobuf (truncated varint, a length past
 *              the end, a bad wire type), a kind the table does not cover, a
 *              field number the table does not know, a string that is not
 *              UTF-8, an impossible IntOrString type, ... The message, written
 *              to err (NUL-terminated, truncated to errlen; err may be NULL
 *              when errlen is 0), names the place, e.g. `Deployment.spec.
 *              template.spec.containers[0]: unknown field 99 (wire type 2)`.
 *   KP_ENOMEM  out of memory ("out of memory" in err). */
int api_pb_decode(const void *body, size_t len, json_t **out, char *err, size_t errlen);

/* Encode obj, a JSON object with "apiVersion" and "kind", as Kubernetes
 * answers Accept: application/vnd.kubernetes.protobuf: "k8s\0" and a
 * runtime.Unknown whose raw is the object's message, appended to out. Members
 * the message does not have are left out (they have no protobuf field).
 * Errors (out is then as before):
 *   KP_ENOTFOUND  no message for that apiVersion and kind (a CRD, a Table):
 *                 answer in JSON;
 *   KP_EINVAL     a member of the wrong JSON type, a time that is not RFC
 *                 3339, bytes that are not base64;
 *   KP_ETOOLARGE  out's cap; KP_ENOMEM.
 * obj is only read. Thread-safe. */
int api_pb_encode(const json_t *obj, buf_t *out);

/* One watch event in the protobuf stream framing: a 4-byte big-endian
 * length, then a metav1.WatchEvent {type, object} encoded as api_pb_encode
 * does, its object in its own envelope. Errors as api_pb_encode. */
int api_pb_encode_event(const char *type, const json_t *obj, buf_t *out);

/* 1 if objects of apiVersion and kind have a protobuf message. */
int api_pb_has_kind(const char *api_version, const char *kind);

/* 1 if an Accept header prefers protobuf: its first media range that is
 * JSON, protobuf or a wildcard (ranges asking for a Table or other
 * variants passed over) is protobuf. 0 otherwise, also for NULL. */
int api_pb_accepts(const char *accept);

#endif
