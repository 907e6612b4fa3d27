/* Unit tests for off-CPU joining (sampler/off_cpu_join.c): a thread's stack waits for the
 * stay that claims it; replaced stacks were short stays; stays without their stack, malformed
 * records and expired stacks are counted.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "abi.h"
#include "sampler/off_cpu_join.h"
#include "test.h"

#define HEAD offsetof(struct sample_record, user)

/* A stack record of thread tid, left at out_ns, with frames user frames. */
static struct sample_record *stack_of(uint32_t tid, uint64_t out_ns, uint16_t frames, size_t *size)
{
	struct sample_record *r;
	uint16_t i;

	*size = HEAD + frames * sizeof(struct user_frame);
	r = calloc(1, sizeof(*r)); /* only *size bytes of it are passed on */
	if (!r)
		return NULL;
	r->hdr.kind = RECORD_SAMPLE;
	r->hdr.pid = 100;
	r->hdr.tid = tid;
	r->hdr.time_ns = out_ns;
	r->off_cpu = 1;
	r->user_frame_cnt = frames;
	for (i = 0; i < frames; i++)
		r->user[i].addr = 0x1000 + i;
	return r;
}

static struct off_cpu_record stay(uint32_t tid, uint64_t out_ns, uint64_t off_ns, uint32_t state)
{
	struct off_cpu_record r = { 0 };

	r.hdr.kind = RECORD_OFF_CPU;
	r.hdr.pid = 100;
	r.hdr.tid = tid;
	r.hdr.time_ns = out_ns + off_ns;
	r.out_time_ns = out_ns;
	r.off_ns = off_ns;
	r.state = state;
	return r;
}

TEST(joined_stay_carries_its_stack_and_time)
{
	struct off_cpu_join *j = off_cpu_join__new();
	struct sample_record *rec, *out;
	struct off_cpu_record s;
	size_t size, out_size = 0;

	REQUIRE(j);
	rec = stack_of(7, 1000, 3, &size);
	REQUIRE(rec);
	CHECK_EQ_INT(off_cpu_join__stack(j, rec, size), 0);
	CHECK_EQ_U64(off_cpu_join__stats(j)->pending, 1);
	s = stay(7, 1000, 2500000, OFF_CPU_UNINTERRUPTIBLE);
	out = off_cpu_join__end(j, &s, sizeof(s), &out_size);
	REQUIRE(out);
	CHECK_EQ_U64(out_size, size);
	CHECK_EQ_U64(out->off_cpu_ns, 2500000);
	CHECK_EQ_INT(out->off_cpu_state, OFF_CPU_UNINTERRUPTIBLE);
	CHECK_EQ_INT(out->user_frame_cnt, 3);
	CHECK_EQ_U64(out->user[2].addr, 0x1002);
	CHECK_EQ_U64(off_cpu_join__stats(j)->joined, 1);
	CHECK_EQ_U64(off_cpu_join__stats(j)->pending, 0);
	free(out);
	/* claimed once: the same stay again finds nothing */
	CHECK(!off_cpu_join__end(j, &s, sizeof(s), &out_size));
	CHECK_EQ_U64(off_cpu_join__stats(j)->unmatched, 1);
	CHECK_EQ_U64(off_cpu_join__stats(j)->unmatched_ns, 2500000);
	free(rec);
	off_cpu_join__free(j);
}

TEST(newer_stack_replaces_a_short_stay)
{
	struct off_cpu_join *j = off_cpu_join__new();
	struct sample_record *a, *b, *out;
	struct off_cpu_record s;
	size_t sa, sb, out_size;

	REQUIRE(j);
	a = stack_of(7, 1000, 1, &sa);
	b = stack_of(7, 5000, 2, &sb);
	REQUIRE(a && b);
	CHECK_EQ_INT(off_cpu_join__stack(j, a, sa), 0);
	CHECK_EQ_INT(off_cpu_join__stack(j, b, sb), 0);
	CHECK_EQ_U64(off_cpu_join__stats(j)->short_stays, 1);
	CHECK_EQ_U64(off_cpu_join__stats(j)->pending, 1);
	/* a stay of the first stack: gone, counted with its time */
	s = stay(7, 1000, 4000, OFF_CPU_SLEEP);
	CHECK(!off_cpu_join__end(j, &s, sizeof(s), &out_size));
	CHECK_EQ_U64(off_cpu_join__stats(j)->unmatched_ns, 4000);
	/* the second one is joined */
	s = stay(7, 5000, 3000000, OFF_CPU_SLEEP);
	out = off_cpu_join__end(j, &s, sizeof(s), &out_size);
	REQUIRE(out);
	CHECK_EQ_INT(out->user_frame_cnt, 2);
	free(out);
	free(a);
	free(b);
	off_cpu_join__free(j);
}

TEST(threads_are_apart_and_old_stacks_expire)
{
	struct off_cpu_join *j = off_cpu_join__new();
	struct sample_record *r;
	struct off_cpu_record s;
	size_t size, out_size;
	uint32_t tid;

	REQUIRE(j);
	for (tid = 1; tid <= 200; tid++) { /* more than one expiry batch */
		r = stack_of(tid, tid <= 150 ? 1000 : 9000, 1, &size);
		REQUIRE(r);
		CHECK_EQ_INT(off_cpu_join__stack(j, r, size), 0);
		free(r);
	}
	CHECK_EQ_U64(off_cpu_join__stats(j)->pending, 200);
	off_cpu_join__expire(j, 5000);
	CHECK_EQ_U64(off_cpu_join__stats(j)->expired, 150);
	CHECK_EQ_U64(off_cpu_join__stats(j)->pending, 50);
	s = stay(10, 1000, 2000000, OFF_CPU_SLEEP);
	CHECK(!off_cpu_join__end(j, &s, sizeof(s), &out_size));
	s = stay(170, 9000, 2000000, OFF_CPU_SLEEP);
	r = off_cpu_join__end(j, &s, sizeof(s), &out_size);
	CHECK(r != NULL);
	free(r);
	off_cpu_join__free(j); /* frees the 49 still pending */
}

TEST(malformed_records_are_counted)
{
	struct off_cpu_join *j = off_cpu_join__new();
	struct sample_record *r;
	struct off_cpu_record s;
	size_t size, out_size;

	REQUIRE(j);
	r = stack_of(0, 1000, 1, &size); /* no thread */
	REQUIRE(r);
	CHECK_EQ_INT(off_cpu_join__stack(j, r, size), -EINVAL);
	r->hdr.tid = 3;
	CHECK_EQ_INT(off_cpu_join__stack(j, r, HEAD - 1), -EINVAL); /* cut short */
	s = stay(3, 1000, 0, OFF_CPU_SLEEP);                        /* no time */
	CHECK(!off_cpu_join__end(j, &s, sizeof(s), &out_size));
	s = stay(3, 1000, 5, OFF_CPU_SLEEP);
	CHECK(!off_cpu_join__end(j, &s, sizeof(s) - 1, &out_size));
	CHECK_EQ_U64(off_cpu_join__stats(j)->bad_records, 4);
	CHECK_EQ_U64(off_cpu_join__stats(j)->pending, 0);
	free(r);
	off_cpu_join__free(j);
}

int main(void)
{
	RUN(joined_stay_carries_its_stack_and_time);
	RUN(newer_stack_replaces_a_short_stay);
	RUN(threads_are_apart_and_old_stacks_expire);
	RUN(malformed_records_are_counted);
	return test_summary();
}
