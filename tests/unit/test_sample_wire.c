/* Unit tests for the sample record's wire form (sampler/sample_wire.c): a record laid out as
 * eBPF sends it (head, user frames, kernel ips, labels) comes back as the whole struct with
 * everything at its place; a record whose counts do not match its size is refused.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "abi.h"
#include "sampler/sample_wire.h"
#include "test.h"

#define HEAD offsetof(struct sample_record, user)

/* The wire form of a record with u user frames, k kernel ips (k < 0: bpf_get_stack's error)
 * and l labels, built as send_sample() lays it out, at SAMPLE_WIRE_START of the buffer returned
 * (the struct's fields before the head: the head's fields are where a struct at the buffer's
 * start has them); its size in *size.
 */
static unsigned char *wire_of(uint16_t u, int32_t k, uint32_t l, size_t *size)
{
	struct sample_record head = { 0 };
	size_t kn = k > 0 ? (size_t)k : 0, off = SAMPLE_WIRE_HEAD;
	unsigned char *b, *w;
	uint32_t i;

	*size = SAMPLE_WIRE_HEAD + u * sizeof(struct user_frame) + kn * sizeof(__u64) +
		l * sizeof(struct sample_label);
	b = calloc(1, SAMPLE_WIRE_START + *size + 64);
	if (!b)
		return NULL;
	w = b + SAMPLE_WIRE_START;
	head.hdr.kind = RECORD_SAMPLE;
	head.hdr.pid = 42;
	head.hdr.tid = 43;
	memcpy(head.comm, "proc", 5);
	head.kernel_frame_cnt = k;
	head.user_frame_cnt = u;
	head.label_cnt = l;
	head.map_seq = 7;
	memcpy(w, &head.hdr, SAMPLE_WIRE_HEAD);
	for (i = 0; i < u; i++, off += sizeof(struct user_frame)) {
		struct user_frame f = { .addr = 0x1000 + i, .file_id = 0xf00 + i, .flags = i };

		memcpy(w + off, &f, sizeof(f));
	}
	for (i = 0; i < kn; i++, off += sizeof(__u64)) {
		__u64 ip = 0xffffffff81000000ull + i;

		memcpy(w + off, &ip, sizeof(ip));
	}
	for (i = 0; i < l; i++, off += sizeof(struct sample_label)) {
		struct sample_label lab = { { 'k', (char)('0' + i) }, { 'v', (char)('0' + i) } };

		memcpy(w + off, &lab, sizeof(lab));
	}
	return b;
}

TEST(user_kernel_and_labels_land_at_their_places)
{
	struct sample_record *out = calloc(1, sizeof(*out));
	size_t size, out_size = 0;
	unsigned char *w = wire_of(3, 2, 1, &size);

	REQUIRE(out && w);
	CHECK_EQ_INT(sample_wire__expand(w + SAMPLE_WIRE_START, size, out, &out_size), 0);
	CHECK_EQ_U64(out_size, HEAD + 3 * sizeof(struct user_frame));
	CHECK_EQ_INT(out->hdr.pid, 42);
	CHECK_STR(out->comm, "proc");
	CHECK_EQ_U64(out->map_seq, 7);
	CHECK_EQ_INT(out->user_frame_cnt, 3);
	CHECK_EQ_U64(out->user[0].addr, 0x1000);
	CHECK_EQ_U64(out->user[2].file_id, 0xf02);
	CHECK_EQ_INT(out->user[2].flags, 2);
	CHECK_EQ_U64(out->kernel_ips[0], 0xffffffff81000000ull);
	CHECK_EQ_U64(out->kernel_ips[1], 0xffffffff81000001ull);
	CHECK_STR(out->labels[0].key, "k0");
	CHECK_STR(out->labels[0].value, "v0");
	free(w);
	free(out);
}

TEST(user_mode_sample_sends_no_kernel_part)
{
	struct sample_record *out = calloc(1, sizeof(*out));
	size_t size, out_size = 0;
	unsigned char *w = wire_of(8, 0, 0, &size);

	REQUIRE(out && w);
	CHECK_EQ_U64(size, SAMPLE_WIRE_HEAD + 8 * sizeof(struct user_frame));
	CHECK_EQ_INT(sample_wire__expand(w + SAMPLE_WIRE_START, size, out, &out_size), 0);
	CHECK_EQ_U64(out->user[7].addr, 0x1007);
	free(w);
	/* a failed kernel stack (its -errno in the count) sends no ips either */
	w = wire_of(1, -14, 0, &size);
	REQUIRE(w);
	CHECK_EQ_INT(sample_wire__expand(w + SAMPLE_WIRE_START, size, out, &out_size), 0);
	CHECK_EQ_INT(out->kernel_frame_cnt, -14);
	free(w);
	/* a full record: the most frames of each kind */
	w = wire_of(SS_MAX_USER_FRAMES, SS_MAX_KERNEL_FRAMES, SS_MAX_LABELS, &size);
	REQUIRE(w);
	CHECK_EQ_INT(sample_wire__expand(w + SAMPLE_WIRE_START, size, out, &out_size), 0);
	CHECK_EQ_U64(out->user[SS_MAX_USER_FRAMES - 1].addr, 0x1000 + SS_MAX_USER_FRAMES - 1);
	CHECK_EQ_U64(out->kernel_ips[SS_MAX_KERNEL_FRAMES - 1],
		     0xffffffff81000000ull + SS_MAX_KERNEL_FRAMES - 1);
	free(w);
	free(out);
}

TEST(a_trace_follows_the_labels_only_when_counted)
{
	struct sample_record *out = calloc(1, sizeof(*out)), *head;
	struct sample_trace tr = { .flags = 1, .state = 1, .attrs_sz = 3 };
	size_t size, out_size = 0, at;
	unsigned char *w = wire_of(2, 1, 1, &size), *w2;

	REQUIRE(out && w);
	/* none counted: a span left in the struct from before is not the sample's */
	out->trace.state = 2;
	CHECK_EQ_INT(sample_wire__expand(w + SAMPLE_WIRE_START, size, out, &out_size), 0);
	CHECK_EQ_INT(out->trace.state, 0);
	/* counted: the 96 bytes after the labels */
	memset(tr.trace_id, 0xab, sizeof(tr.trace_id));
	memcpy(tr.attrs, "k=v", 3);
	w2 = realloc(w, SAMPLE_WIRE_START + size + sizeof(tr) + 64);
	REQUIRE(w2);
	w = w2;
	at = size;
	memcpy(w + SAMPLE_WIRE_START + at, &tr, sizeof(tr));
	head = (struct sample_record *)w;
	head->trace_cnt = 1;
	CHECK_EQ_INT(sample_wire__expand(w + SAMPLE_WIRE_START, size, out, &out_size), -EINVAL);
	CHECK_EQ_INT(sample_wire__expand(w + SAMPLE_WIRE_START, size + sizeof(tr), out, &out_size),
		     0);
	CHECK_EQ_INT(out->trace.state, 1);
	CHECK_EQ_INT(out->trace.attrs_sz, 3);
	CHECK_EQ_INT(out->trace.trace_id[15], 0xab);
	CHECK_EQ_INT(memcmp(out->trace.attrs, "k=v", 3), 0);
	CHECK_STR(out->labels[0].key, "k0");
	head->trace_cnt = 2;
	CHECK_EQ_INT(sample_wire__expand(w + SAMPLE_WIRE_START, size + 2 * sizeof(tr), out,
					 &out_size),
		     -EINVAL);
	free(w);
	free(out);
}

TEST(counts_that_do_not_match_the_size_are_refused)
{
	struct sample_record *out = calloc(1, sizeof(*out));
	struct sample_record *head;
	size_t size, out_size = 0;
	unsigned char *w = wire_of(3, 2, 1, &size);

	REQUIRE(out && w);
	CHECK_EQ_INT(sample_wire__expand(w + SAMPLE_WIRE_START, size - 1, out, &out_size), -EINVAL);
	CHECK_EQ_INT(sample_wire__expand(w + SAMPLE_WIRE_START, size + 8, out, &out_size), -EINVAL);
	CHECK_EQ_INT(sample_wire__expand(w + SAMPLE_WIRE_START, SAMPLE_WIRE_HEAD - 1, out,
					 &out_size),
		     -EINVAL);
	head = (struct sample_record *)w; /* its head's fields over the wire's */
	head->user_frame_cnt = SS_MAX_USER_FRAMES + 1;
	CHECK_EQ_INT(sample_wire__expand(w + SAMPLE_WIRE_START, size, out, &out_size), -EINVAL);
	head->user_frame_cnt = 3;
	head->label_cnt = SS_MAX_LABELS + 1;
	CHECK_EQ_INT(sample_wire__expand(w + SAMPLE_WIRE_START, size, out, &out_size), -EINVAL);
	head->label_cnt = 1;
	head->kernel_frame_cnt = SS_MAX_KERNEL_FRAMES + 1;
	CHECK_EQ_INT(sample_wire__expand(w + SAMPLE_WIRE_START, size, out, &out_size), -EINVAL);
	free(w);
	free(out);
}

int main(void)
{
	RUN(user_kernel_and_labels_land_at_their_places);
	RUN(user_mode_sample_sends_no_kernel_part);
	RUN(a_trace_follows_the_labels_only_when_counted);
	RUN(counts_that_do_not_match_the_size_are_refused);
	return test_summary();
}
