#include "sampler/sample_wire.h"

#include <errno.h>
#include <string.h>

#include "abi.h"

int sample_wire__expand(const void *data, size_t size, struct sample_record *out, size_t *out_size)
{
	const unsigned char *p = data;
	size_t u, k, l, t, user_bytes;

	if (size < SAMPLE_WIRE_HEAD)
		return -EINVAL;
	memcpy(&out->hdr, p, SAMPLE_WIRE_HEAD);
	u = out->user_frame_cnt;
	k = out->kernel_frame_cnt > 0 ? (size_t)out->kernel_frame_cnt : 0;
	l = out->label_cnt;
	t = out->trace_cnt;
	if (u > SS_MAX_USER_FRAMES || k > SS_MAX_KERNEL_FRAMES || l > SS_MAX_LABELS || t > 1)
		return -EINVAL;
	user_bytes = u * sizeof(struct user_frame);
	if (size != SAMPLE_WIRE_HEAD + user_bytes + k * sizeof(__u64) +
			    l * sizeof(struct sample_label) + t * sizeof(struct sample_trace))
		return -EINVAL;
	p += SAMPLE_WIRE_HEAD;
	memcpy(out->user, p, user_bytes);
	p += user_bytes;
	memcpy(out->kernel_ips, p, k * sizeof(__u64));
	p += k * sizeof(__u64);
	memcpy(out->labels, p, l * sizeof(struct sample_label));
	p += l * sizeof(struct sample_label);
	if (t)
		memcpy(&out->trace, p, sizeof(out->trace));
	else
		memset(&out->trace, 0, sizeof(out->trace));
	*out_size = offsetof(struct sample_record, user) + user_bytes;
	return 0;
}
