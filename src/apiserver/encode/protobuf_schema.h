/*
 * protobuf_schema.h -- the message tables that protobuf.c and
 * protobuf_enc.c walk. Only they and the generated protobuf_gen*.c (written
 * by scripts/gen-protobuf-facts) include this.
 *
 * A message is a list of fields; a field says where it sits on the wire (its
 * number), what JSON member it becomes (the proto field name, which in
 * Kubernetes is the JSON name), how its bytes are read (kind) and how the
 * Go JSON encoder would print it (flags). Everything here is static,
 * read-only data.
 */
#ifndef KP_APISERVER_PROTOBUF_SCHEMA_H
#define KP_APISERVER_PROTOBUF_SCHEMA_H

#include <stddef.h>
#include <stdint.h>

/* How a field's bytes are read and printed. */
typedef enum api_pb_kind {
    API_PB_STRING = 1, /* length-delimited UTF-8 -> JSON string */
    API_PB_BYTES,      /* length-delimited -> base64 JSON string */
    API_PB_BOOL,       /* varint -> true/false */
    API_PB_INT32,      /* varint, low 32 bits, signed -> JSON number */
    API_PB_INT64,      /* varint, signed -> JSON number */
    API_PB_MESSAGE,    /* embedded message `msg` -> JSON object */
    API_PB_MAP,        /* repeated entry message `msg` {1: key, 2: value} -> JSON object */
    API_PB_TIME,       /* meta/v1 Time {1: seconds, 2: nanos} -> "2006-01-02T15:04:05Z" */
    API_PB_INTORSTR,   /* intstr IntOrString {1: type, 2: intVal, 3: strVal} -> number|string */
    API_PB_QUANTITY,   /* resource Quantity {1: string} -> string */
    API_PB_FIELDSV1,   /* meta/v1 FieldsV1 {1: raw JSON bytes} -> that JSON value */
    API_PB_MICROTIME,  /* meta/v1 MicroTime {1: seconds, 2: nanos} -> "...05.000000Z" */
    API_PB_RAWEXT,     /* runtime RawExtension {1: raw}: JSON bytes, or an object
                          in its own "k8s\0" envelope (watch events, List) */
    API_PB_DOUBLE,     /* fixed 64-bit IEEE double -> JSON number */
    API_PB_STRLIST,    /* a message {1: repeated string} printed as its list
                          (certificates/v1 ExtraValue) */
} api_pb_kind_t;

/* Field flags. */
enum {
    API_PB_REP = 1u << 0,    /* repeated: a JSON array (varints packed or not) */
    API_PB_KEEP = 1u << 1,   /* print zero values too: the Go field is a pointer
                                (present on the wire only when set) or its JSON
                                tag has no omitempty. Without it a scalar that is
                                "", 0, false or empty bytes is left out, as Go's
                                omitempty does; gogo-protobuf writes every
                                non-pointer scalar, zero or not. */
    API_PB_INLINE = 1u << 2, /* embedded with json:",inline": the message's
                                members go into the enclosing JSON object */
};

struct api_pb_msg;

typedef struct api_pb_field {
    uint32_t num;                 /* protobuf field number */
    const char *json;             /* JSON member name */
    uint8_t kind;                 /* api_pb_kind_t */
    uint8_t flags;                /* API_PB_* flags */
    const struct api_pb_msg *msg; /* API_PB_MESSAGE: its type; API_PB_MAP: the entry */
} api_pb_field_t;

typedef struct api_pb_msg {
    const char *name; /* for error messages */
    const api_pb_field_t *fields;
    size_t nfields;
} api_pb_msg_t;

#define API_PB_MSG(name, fields)                                                                   \
    {                                                                                              \
        (name), (fields), sizeof(fields) / sizeof((fields)[0])                                     \
    }

/* A top-level object: apiVersion ("v1", "apps/v1", ...) and kind as
 * runtime.Unknown's TypeMeta names them, and its message. */
typedef struct api_pb_root {
    const char *api_version;
    const char *kind;
    const api_pb_msg_t *msg;
} api_pb_root_t;

/* The roots, generated (protobuf_gen.c; the messages are in
 * protobuf_gen_<part>.c): every served kind and its List, the options and
 * subresource kinds clients send (DeleteOptions in every group-version,
 * Scale, Eviction, Binding), Status and WatchEvent. */
extern const api_pb_root_t api__pb_roots[];
extern const size_t api__pb_nroots;

/* The root for apiVersion and kind; NULL for a kind the table does not cover.
 * The result is static. */
const api_pb_root_t *api__pb_root_find(const char *api_version, const char *kind);

/* All roots, for messages and tests: the i-th, NULL past the end. */
const api_pb_root_t *api__pb_root_at(size_t i);

#endif
