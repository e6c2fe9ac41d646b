/* Nesting limit for hostile models, checked on the wire before protobuf-c unpacks anything.
 *
 * protobuf_c_message_unpack recurses once per nested message, so a model whose If/Loop subgraphs (or
 * sequence types) nest a few thousand levels deep overflows the stack inside libprotobuf-c. This walk reads
 * the protobuf wire format against the same descriptors protobuf-c uses: a length-delimited field whose
 * descriptor says it is a message is entered, everything else is skipped, and entering more than max_depth
 * messages is an error. It recurses at most max_depth frames itself. Malformed wire data is left for
 * protobuf-c to reject with its own message (the walk stops and reports nothing). */
#include "frontends/onnx/internal.h"

typedef enum { WALK_OK, WALK_MALFORMED, WALK_TOO_DEEP } WalkResult;

static bool read_varint(const uint8_t **p, const uint8_t *end, uint64_t *v) {
  uint64_t r = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (*p >= end) return false;
    uint8_t b = *(*p)++;
    r |= (uint64_t)(b & 0x7F) << shift;
    if (!(b & 0x80)) {
      *v = r;
      return true;
    }
  }
  return false;
}

static WalkResult walk(const uint8_t *p, const uint8_t *end, const ProtobufCMessageDescriptor *desc, int depth,
                       int max_depth) {
  if (depth > max_depth) return WALK_TOO_DEEP;
  while (p < end) {
    uint64_t key, len;
    if (!read_varint(&p, end, &key)) return WALK_MALFORMED;
    switch (key & 7) {
    case 0:
      if (!read_varint(&p, end, &len)) return WALK_MALFORMED;
      break;
    case 1:
      if (end - p < 8) return WALK_MALFORMED;
      p += 8;
      break;
    case 5:
      if (end - p < 4) return WALK_MALFORMED;
      p += 4;
      break;
    case 2: {
      if (!read_varint(&p, end, &len) || len > (uint64_t)(end - p)) return WALK_MALFORMED;
      const ProtobufCFieldDescriptor *f =
          key >> 3 <= UINT32_MAX ? protobuf_c_message_descriptor_get_field(desc, (unsigned)(key >> 3)) : NULL;
      if (f && f->type == PROTOBUF_C_TYPE_MESSAGE && f->descriptor) {
        WalkResult r = walk(p, p + len, f->descriptor, depth + 1, max_depth);
        if (r != WALK_OK) return r;
      }
      p += len;
      break;
    }
    default: return WALK_MALFORMED; /* groups (3, 4) are not used by ONNX */
    }
  }
  return WALK_OK;
}

mlc_status onnx_check_nesting(const void *buf, size_t size, const ProtobufCMessageDescriptor *desc, int max_depth,
                              const char *path, Diag *d) {
  const uint8_t *p = buf;
  if (walk(p, p + size, desc, 0, max_depth) == WALK_TOO_DEEP)
    return diag_set(d, MLC_ERR_INVALID,
                    "%s: messages nest more than %d levels deep (subgraphs or types nested too deeply)", path,
                    max_depth);
  return MLC_OK;
}
