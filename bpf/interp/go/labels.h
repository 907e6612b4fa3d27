/* A goroutine's pprof labels into the sample record (included by sampler.bpf.c after
 * interp/dispatch.h; interp/go/bpf_abi.h has the layouts).
 *
 * Called once per sample, after the walk, for a process Go's runtime entry is attached to
 * (src/interp/go/go_runtime.c): m.curg (goroutine.h), the goroutine the thread runs for (the user goroutine also while the thread is on g0's stack in systemstack or a
 * signal handler), then its labels. At most SS_MAX_LABELS labels are kept, each cut to the
 * record's sizes; what is left out is counted (enum go_counter), never guessed: a map that is
 * growing is not read.
 *
 * Hooks the includer provides: ss_read_user, ss_interp_proc, ss_interp_count.
 */
#ifndef STACKSCOPE_GO_LABELS_H
#define STACKSCOPE_GO_LABELS_H

#include "interp/common.h"
#include "interp/go/bpf_abi.h"
#include "interp/go/goroutine.h"

/* Copies one label's strings (key and value: pointer, length) into l: 0 copied, 1 copied but
 * cut, -1 unreadable.
 */
static __always_inline int label_copy(struct sample_label *l, __u64 kp, __u64 klen, __u64 vp,
				      __u64 vlen)
{
	int cut = 0;

	if (!l)
		return -1;
	__builtin_memset(l, 0, sizeof(*l));
	if (klen > SS_LABEL_KEY_LEN - 1) {
		klen = SS_LABEL_KEY_LEN - 1;
		cut = 1;
	}
	if (vlen > SS_LABEL_VALUE_LEN - 1) {
		vlen = SS_LABEL_VALUE_LEN - 1;
		cut = 1;
	}
	if (klen && ss_read_user(l->key, (__u32)klen, kp))
		return -1;
	if (vlen && ss_read_user(l->value, (__u32)vlen, vp))
		return -1;
	return cut;
}

/* label_copy() as a global function: the verifier checks it once, not per label. */
__noinline int go_label_copy(struct sample_label *l, __u64 kp, __u64 klen, __u64 vp, __u64 vlen)
{
	return label_copy(l, kp, klen, vp, vlen);
}

/* The same as a static function, for the tail-call walker's programs: 5.10's verifier takes no
 * pointer arguments of global functions (5.12 does); checked at each call.
 */
static __noinline int go_label_copy_static(struct sample_label *l, __u64 kp, __u64 klen, __u64 vp,
					   __u64 vlen)
{
	return label_copy(l, kp, klen, vp, vlen);
}

/* The Go strings of the labels found, before their bytes are copied: key pointer, key length,
 * value pointer, value length. Collecting them first keeps one copy loop for both layouts.
 */
struct go_label_strings {
	__u64 kv[SS_MAX_LABELS][4];
	struct { /* the first bucket of a label map (its overflow pointer is not read) */
		__u8 tophash[GO_MAP_BUCKET_SLOTS];
		__u64 keys[GO_MAP_BUCKET_SLOTS][2];
		__u64 values[GO_MAP_BUCKET_SLOTS][2];
	} bucket;
};

/* Go 1.15-1.23: a map[string]string (hmap). Only the first bucket is read: a map of up to 8
 * labels has one (more are counted as dropped). Returns how many labels the map holds.
 */
static __always_inline __u64 go_labels_hmap(struct go_label_strings *out, __u32 *n, __u64 labels)
{
	__u64 hmap, hdr[4];
	__u32 i, idx = 0;

	/* hdr: count, flags/B/noverflow/hash0, buckets, oldbuckets */
	if (ss_read_user(&hmap, sizeof(hmap), labels) || !hmap ||
	    ss_read_user(hdr, sizeof(hdr), hmap) ||
	    ss_read_user(&out->bucket, sizeof(out->bucket), hdr[2])) {
		ss_interp_count(FRAME_KIND_GO, GO_COUNTER_READ_FAILED);
		return 0;
	}
	if (hdr[3]) {
		ss_interp_count(FRAME_KIND_GO, GO_COUNTER_MAP_GROWING);
		return 0;
	}
	for (i = 0; i < GO_MAP_BUCKET_SLOTS && idx < SS_MAX_LABELS; i++) {
		if (out->bucket.tophash[i] < GO_TOPHASH_MIN)
			continue;
		out->kv[idx][0] = out->bucket.keys[i][0];
		out->kv[idx][1] = out->bucket.keys[i][1];
		out->kv[idx][2] = out->bucket.values[i][0];
		out->kv[idx][3] = out->bucket.values[i][1];
		idx++;
	}
	*n = idx;
	return hdr[0];
}

/* Go 1.24+: a slice of {key, value} strings. Returns how many labels it holds. */
static __always_inline __u64 go_labels_slice(struct go_label_strings *out, __u32 *n, __u64 labels)
{
	__u64 slice[2];

	if (ss_read_user(slice, sizeof(slice), labels)) {
		ss_interp_count(FRAME_KIND_GO, GO_COUNTER_READ_FAILED);
		return 0;
	}
	*n = slice[1] < SS_MAX_LABELS ? (__u32)slice[1] : SS_MAX_LABELS;
	if (*n && ss_read_user(out->kv, *n * sizeof(out->kv[0]), slice[0])) {
		ss_interp_count(FRAME_KIND_GO, GO_COUNTER_READ_FAILED);
		*n = 0;
	}
	return slice[1];
}

/* The labels of the goroutine the sampled thread runs, into rec (label_cnt was 0); tmp is
 * scratch. global: its label copies through the global go_label_copy(), else the static one.
 */
static __always_inline int go_labels(struct sample_record *rec, struct go_label_strings *tmp,
				     __u32 pid, __u64 fsbase, bool global)
{
	struct interp_proc *p = ss_interp_proc(pid, FRAME_KIND_GO);
	struct go_thread t;
	__u64 labels, total;
	__u32 n = 0, i, cnt = 0;
	int r;

	if (!p || !fsbase || !rec || !tmp)
		return 0;
	if (go_thread_read(&p->go, fsbase, &t)) {
		ss_interp_count(FRAME_KIND_GO, GO_COUNTER_NO_G);
		return 0;
	}
	/* no user goroutine (the scheduler), or one without labels */
	if (!t.curg || ss_read_user(&labels, sizeof(labels), t.curg + p->go.g_labels) || !labels)
		return 0;
	if (p->go.labels_layout == GO_LABELS_HMAP)
		total = go_labels_hmap(tmp, &n, labels);
	else if (p->go.labels_layout == GO_LABELS_SLICE)
		total = go_labels_slice(tmp, &n, labels);
	else
		return 0;
	for (i = 0; i < SS_MAX_LABELS; i++) {
		if (i >= n)
			break;
		if (global)
			r = go_label_copy(&rec->labels[cnt & (SS_MAX_LABELS - 1)], tmp->kv[i][0],
					  tmp->kv[i][1], tmp->kv[i][2], tmp->kv[i][3]);
		else
			r = go_label_copy_static(&rec->labels[cnt & (SS_MAX_LABELS - 1)],
						 tmp->kv[i][0], tmp->kv[i][1], tmp->kv[i][2],
						 tmp->kv[i][3]);
		if (r < 0) {
			ss_interp_count(FRAME_KIND_GO, GO_COUNTER_READ_FAILED);
			continue;
		}
		if (r)
			ss_interp_count(FRAME_KIND_GO, GO_COUNTER_TRUNCATED);
		cnt++;
	}
	rec->label_cnt = cnt;
	if (cnt)
		ss_interp_count(FRAME_KIND_GO, GO_COUNTER_LABELED);
	if (total > cnt)
		ss_interp_count(FRAME_KIND_GO, GO_COUNTER_DROPPED);
	return 0;
}

/* go_labels() as a global function: every unwinding outcome reaches it, and inlined it would be
 * verified once per outcome's state (~16k instructions more than this way on 6.18).
 */
__noinline int ss_go_labels(struct sample_record *rec, struct go_label_strings *tmp, __u32 pid,
			    __u64 fsbase)
{
	return go_labels(rec, tmp, pid, fsbase, true);
}

/* The same as a static function, for the tail-call walker's programs (see go_label_copy_static). */
static __noinline int ss_go_labels_static(struct sample_record *rec, struct go_label_strings *tmp,
					  __u32 pid, __u64 fsbase)
{
	return go_labels(rec, tmp, pid, fsbase, false);
}

#endif
