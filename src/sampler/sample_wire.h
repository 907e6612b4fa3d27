/* A sample record as eBPF sends it (bpf/abi.h, "On the wire": its head, then only the user
 * frames, kernel ips and labels it has) expanded into the whole struct sample_record that the
 * rest of userspace reads: kernel_ips[] and labels[] at their places, and a size that covers
 * the struct up to its user_frame_cnt frames (offsetof(struct sample_record, user) + frames).
 */
#ifndef STACKSCOPE_SAMPLE_WIRE_H
#define STACKSCOPE_SAMPLE_WIRE_H

#include <stddef.h>

struct sample_record;

/* data, size: one RECORD_SAMPLE from the ring buffer. 0, with *out filled and *out_size its
 * size; -EINVAL when the counts in its head do not match size (nothing written but the head).
 */
int sample_wire__expand(const void *data, size_t size, struct sample_record *out, size_t *out_size);

#endif
